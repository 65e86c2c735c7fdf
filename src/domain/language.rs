//! Which language a text is written in: detection over the languages Engram can stem (the
//! Snowball set): a line with clearly one language's function words is that language (cheap:
//! most chat turns), the rest goes to `lingua` (chosen over `whatlang` by accuracy on short chat
//! lines: 0.87 with English's tie-break, 0.90 without, against 0.51; notes of issue 21); and the
//! language each script falls back to when a text has no letters or a word is in another
//! script. Pure; used for BM25's analysis, the stored language of each message and the bot's
//! own texts.

use lingua::{Language as L, LanguageDetector, LanguageDetectorBuilder};
use std::collections::HashMap;
use std::sync::LazyLock;

/// A language Engram analyses (stems, drops stop words of) and may answer in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    /// English.
    English,
    /// Russian.
    Russian,
    /// German.
    German,
    /// Spanish.
    Spanish,
    /// French.
    French,
    /// Portuguese.
    Portuguese,
    /// Italian.
    Italian,
    /// Dutch.
    Dutch,
    /// Swedish.
    Swedish,
    /// Danish.
    Danish,
    /// Norwegian (Bokmål).
    Norwegian,
    /// Finnish.
    Finnish,
    /// Hungarian.
    Hungarian,
    /// Romanian.
    Romanian,
    /// Turkish.
    Turkish,
    /// Polish.
    Polish,
    /// Czech.
    Czech,
    /// Greek.
    Greek,
    /// Arabic.
    Arabic,
    /// Tamil.
    Tamil,
}

/// The writing system of a word, as far as analysis cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Latin letters (with any accents).
    Latin,
    /// Cyrillic.
    Cyrillic,
    /// Greek.
    Greek,
    /// Arabic.
    Arabic,
    /// Tamil.
    Tamil,
    /// Anything else (digits only, CJK, …): not stemmed.
    Other,
}

/// The languages and their ISO 639-1 codes, lingua's names and scripts.
const TABLE: [(Language, &str, L, Script); 20] = [
    (Language::English, "en", L::English, Script::Latin),
    (Language::Russian, "ru", L::Russian, Script::Cyrillic),
    (Language::German, "de", L::German, Script::Latin),
    (Language::Spanish, "es", L::Spanish, Script::Latin),
    (Language::French, "fr", L::French, Script::Latin),
    (Language::Portuguese, "pt", L::Portuguese, Script::Latin),
    (Language::Italian, "it", L::Italian, Script::Latin),
    (Language::Dutch, "nl", L::Dutch, Script::Latin),
    (Language::Swedish, "sv", L::Swedish, Script::Latin),
    (Language::Danish, "da", L::Danish, Script::Latin),
    (Language::Norwegian, "no", L::Bokmal, Script::Latin),
    (Language::Finnish, "fi", L::Finnish, Script::Latin),
    (Language::Hungarian, "hu", L::Hungarian, Script::Latin),
    (Language::Romanian, "ro", L::Romanian, Script::Latin),
    (Language::Turkish, "tr", L::Turkish, Script::Latin),
    (Language::Polish, "pl", L::Polish, Script::Latin),
    (Language::Czech, "cs", L::Czech, Script::Latin),
    (Language::Greek, "el", L::Greek, Script::Greek),
    (Language::Arabic, "ar", L::Arabic, Script::Arabic),
    (Language::Tamil, "ta", L::Tamil, Script::Tamil),
];

/// How much of a long text detection reads: its start says enough (the same answers on the
/// dev sets' turns as 1,000 bytes), and detection's cost grows with the text.
const DETECT_BYTES: usize = 400;

/// English wins when its confidence is at least this share of the best language's: chat lines
/// in English are short and full of loanwords, names and "ok", and a wrong guess there would
/// cost the stems of the language most people write in (short English lines right: 0.85 →
/// 0.93; other languages: 0.90 → 0.87).
const ENGLISH_SHARE: f64 = 0.5;

static DETECTOR: LazyLock<LanguageDetector> = LazyLock::new(|| {
    let languages: Vec<L> = TABLE.iter().map(|t| t.2).collect();
    LanguageDetectorBuilder::from_languages(&languages).build()
});

/// A text is taken to be in a language, without `lingua`, when at least this many of its words
/// are that language's function words ("the", "und", "que")…
const FUNCTION_WORDS_NEEDED: usize = 3;

/// …and at least this many times as many as any other language's: on the dev sets' English
/// turns this decides 96% of dev60's and 88% of groupchat_dev2's (lingua's answer on all but
/// two, German lines lingua called English) at about 1% of lingua's cost; short lines with
/// fewer go to lingua.
const FUNCTION_WORDS_LEAD: usize = 2;

/// Each function word (NLTK's stop-word lists, through `stop-words`; Stopwords ISO's for Polish
/// and Czech, which NLTK lacks) and the languages it is one of, as a bit per row of `TABLE`.
static FUNCTION_WORDS: LazyLock<HashMap<&'static str, u32>> = LazyLock::new(|| {
    let mut words: HashMap<&'static str, u32> = HashMap::new();
    for (i, row) in TABLE.iter().enumerate() {
        for w in stop_words::lookup(row.1).unwrap_or_default() {
            *words.entry(w).or_default() |= 1 << i;
        }
    }
    words
});

/// The language most of `text`'s function words are of, when they say so clearly enough (see
/// `FUNCTION_WORDS_NEEDED` and `FUNCTION_WORDS_LEAD`).
fn by_function_words(text: &str) -> Option<Language> {
    let mut counts = [0usize; TABLE.len()];
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while chars.peek().is_some() {
        word.clear();
        for c in chars.by_ref() {
            match c {
                c if c.is_alphabetic() => word.extend(c.to_lowercase()),
                '\'' | '’' if !word.is_empty() => word.push('\''),
                _ => break,
            }
        }
        if let Some(&bits) = FUNCTION_WORDS.get(word.trim_end_matches('\'')) {
            for (i, n) in counts.iter_mut().enumerate() {
                *n += (bits >> i & 1) as usize;
            }
        }
    }
    let (best, &top) = counts.iter().enumerate().max_by_key(|&(_, n)| *n)?;
    let runner_up = counts
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != best)
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0);
    (top >= FUNCTION_WORDS_NEEDED && top >= FUNCTION_WORDS_LEAD * runner_up).then(|| TABLE[best].0)
}

impl Language {
    /// Every language, English first.
    pub fn all() -> impl Iterator<Item = Language> {
        TABLE.iter().map(|t| t.0)
    }

    fn row(self) -> &'static (Language, &'static str, L, Script) {
        TABLE
            .iter()
            .find(|t| t.0 == self)
            .expect("every language has a row")
    }

    /// Its ISO 639-1 code ("en", "ru", …).
    pub fn code(self) -> &'static str {
        self.row().1
    }

    /// The language of an ISO 639-1 code (any case; a region such as "pt-BR" is ignored).
    pub fn from_code(code: &str) -> Option<Language> {
        let base = code
            .split(['-', '_'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        TABLE.iter().find(|t| t.1 == base).map(|t| t.0)
    }

    /// The script it is written in.
    pub fn script(self) -> Script {
        self.row().3
    }
}

impl Script {
    /// The script of a word: that of its first letter.
    pub fn of(word: &str) -> Script {
        let Some(c) = word.chars().find(|c| c.is_alphabetic()) else {
            return Script::Other;
        };
        match c as u32 {
            0x0041..=0x024F | 0x1E00..=0x1EFF => Script::Latin,
            0x0400..=0x052F => Script::Cyrillic,
            0x0370..=0x03FF | 0x1F00..=0x1FFF => Script::Greek,
            0x0600..=0x06FF | 0x0750..=0x077F => Script::Arabic,
            0x0B80..=0x0BFF => Script::Tamil,
            _ => Script::Other,
        }
    }

    /// The language a word of this script is analysed in when its text's language is not
    /// known or is written in another script: English for Latin letters (as before languages
    /// were told apart), Russian for Cyrillic, and each one-language script's own.
    pub fn fallback(self) -> Option<Language> {
        match self {
            Script::Latin => Some(Language::English),
            Script::Cyrillic => Some(Language::Russian),
            Script::Greek => Some(Language::Greek),
            Script::Arabic => Some(Language::Arabic),
            Script::Tamil => Some(Language::Tamil),
            Script::Other => None,
        }
    }
}

/// The language of `text` (its accents composed, `domain::composed`), or `None` when it has
/// no letters to tell by.
pub fn detect(text: &str) -> Option<Language> {
    match detect_quickly(text) {
        Quickly::Told(language) => language,
        Quickly::ByNgrams(start) => start.detect(),
    }
}

/// What [`detect_quickly`] found.
pub enum Quickly {
    /// The script or the function words told (`None`: no letters to tell by).
    Told(Option<Language>),
    /// Only lingua's n-grams can tell (a millisecond or more).
    ByNgrams(NgramsToRead),
}

/// The start of a text that lingua's n-grams must read to tell its language
/// ([`Quickly::ByNgrams`]).
pub struct NgramsToRead(String);

impl NgramsToRead {
    /// lingua's choice, English when it comes close (`ENGLISH_SHARE`).
    pub fn detect(&self) -> Option<Language> {
        by_ngrams(&self.0)
    }

    /// What work can start in before `detect` has answered: English, the fallback of the
    /// Latin letters such a start has more of than of any other script the languages use, and
    /// lingua's answer whenever it comes close (`ENGLISH_SHARE`).
    pub fn likely(&self) -> Option<Language> {
        Script::Latin.fallback()
    }
}

/// [`detect`] as far as the script and the function words go, in microseconds: most chat
/// lines and questions end here, and only the rest need the n-grams.
pub fn detect_quickly(text: &str) -> Quickly {
    let text = super::composed(text);
    let text = text.as_ref();
    let mut end = text.len().min(DETECT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let start = &text[..end];
    // A text mostly in a script only one of the languages uses is in that language (Latin
    // names, loanwords and the bot's own name in a Russian line do not make it Portuguese).
    let mut latin = 0usize;
    let mut other: Vec<(Script, usize)> = Vec::new();
    for c in start.chars().filter(|c| c.is_alphabetic()) {
        match Script::of(c.encode_utf8(&mut [0; 4])) {
            Script::Latin => latin += 1,
            Script::Other => {}
            script => match other.iter_mut().find(|(s, _)| *s == script) {
                Some((_, n)) => *n += 1,
                None => other.push((script, 1)),
            },
        }
    }
    if let Some(&(script, n)) = other.iter().max_by_key(|(_, n)| *n)
        && n >= latin
    {
        return Quickly::Told(script.fallback());
    }
    if latin == 0 {
        return Quickly::Told(None);
    }
    match by_function_words(start) {
        Some(language) => Quickly::Told(Some(language)),
        None => Quickly::ByNgrams(NgramsToRead(start.to_string())),
    }
}

/// lingua's choice for `start`, English when it comes close (`ENGLISH_SHARE`).
fn by_ngrams(start: &str) -> Option<Language> {
    let confidences = DETECTOR.compute_language_confidence_values(start);
    let &(best, top) = confidences.first()?;
    if top <= 0.0 {
        return None;
    }
    let english = confidences
        .iter()
        .find(|c| c.0 == L::English)
        .map_or(0.0, |c| c.1);
    let chosen = if english >= ENGLISH_SHARE * top {
        L::English
    } else {
        best
    };
    TABLE.iter().find(|t| t.2 == chosen).map(|t| t.0)
}

/// The language of each of `texts` (as [`detect`]), the work spread over the machine's cores:
/// for a batch of messages, where detection is most of the cost of storing them.
pub fn detect_all<T: AsRef<str> + Sync>(texts: &[T]) -> Vec<Option<Language>> {
    use rayon::prelude::*;
    texts.par_iter().map(|t| detect(t.as_ref())).collect()
}

/// Whether a whitespace-separated piece of text reads as a word of some language: letters
/// (with apostrophes, hyphens and punctuation around them), no digits, no link or code marks,
/// not a run of 30 letters or more.
fn is_wordlike(w: &str) -> bool {
    w.chars().any(char::is_alphabetic)
        && w.chars().count() < 30
        && !w.chars().any(|c| {
            c.is_ascii_digit()
                || matches!(
                    c,
                    '/' | '@'
                        | '_'
                        | '='
                        | '#'
                        | '\\'
                        | '<'
                        | '>'
                        | '{'
                        | '}'
                        | '['
                        | ']'
                        | '|'
                        | '~'
                        | '`'
                        | '$'
                        | '%'
                        | '&'
                        | '+'
                        | '*'
                )
        })
}

/// The language of `text` when it says enough to tell: written in a script only one language
/// uses, or three words or more ("no", "ok", "Anna" alone could be many languages).
/// Words that are no language's (keys, codes, links, numbers, handles) are left out: a random
/// token can outweigh a short sentence ("remember that my key is sk-proj-…" is English).
pub fn tells(text: &str) -> Option<Language> {
    let words: Vec<&str> = text.split_whitespace().filter(|w| is_wordlike(w)).collect();
    let language = detect(&words.join(" "))?;
    (language.script() != Script::Latin || words.len() >= 3).then_some(language)
}

/// Words that name nothing but are missing from the stop-word lists: chat fillers, and
/// pronouns and "everything" words of the phrase files' languages that NLTK's lists lack.
const NAMES_NOTHING: [&str; 23] = [
    "ok",
    "okay",
    "okey",
    "lol",
    "pls",
    "plz",
    "please",
    "thanks",
    "thx",
    "ty",
    "everything",
    "anything",
    "something",
    "stuff",
    "ça",
    "ca",
    "cela",
    "ceci",
    "tout",
    "это",
    "оно",
    "tudo",
    "mim",
];

/// The rows of `TABLE` with phrase files (English, Russian, German, Spanish, French,
/// Portuguese): the languages a forget is asked in. (All twenty lists together make short
/// words of one language another's function words: "cat" is Romanian's.)
const PHRASE_LANGUAGES: u32 = 0b11_1111;

/// Whether `text` names something: it has a word that is no function word of a language a
/// forget is asked in and not one of `NAMES_NOTHING`, or a number. "it", "es", "ça", "это",
/// "that, ok" name nothing: a forget of them would match every text with such a word in it.
pub fn names_something(text: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .any(|w| {
            let lower = w.to_lowercase().replace('ё', "е");
            let function = FUNCTION_WORDS
                .get(lower.as_str())
                .is_some_and(|bits| bits & PHRASE_LANGUAGES != 0);
            !function && !NAMES_NOTHING.contains(&lower.as_str())
        })
}

/// The language a word is analysed in, within a text detected as `text_language`: the text's
/// own when the word is in its script, else the word's script's fallback.
pub fn of_word(text_language: Option<Language>, word: &str) -> Option<Language> {
    let script = Script::of(word);
    match text_language {
        Some(l) if l.script() == script => Some(l),
        _ => script.fallback(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_names_something() {
        for nothing in [
            "it", "Es", "ça", "это", "eso", "isso", "that, ok", "it!", "", "   ",
        ] {
            assert!(!names_something(nothing), "{nothing:?}");
        }
        for something in [
            "my cat",
            "4471",
            "Paris",
            "зелёный чай",
            "que j'aime le thé",
            "it is 4471",
        ] {
            assert!(names_something(something), "{something:?}");
        }
    }

    #[test]
    fn codes_round_trip() {
        for l in Language::all() {
            assert_eq!(Language::from_code(l.code()), Some(l));
        }
        assert_eq!(Language::from_code("pt-BR"), Some(Language::Portuguese));
        assert_eq!(Language::from_code("RU"), Some(Language::Russian));
        assert_eq!(Language::from_code("xx"), None);
        assert_eq!(Language::from_code(""), None);
    }

    #[test]
    fn scripts_and_their_fallbacks() {
        assert_eq!(Script::of("Москве"), Script::Cyrillic);
        assert_eq!(Script::of("Zoë"), Script::Latin);
        assert_eq!(Script::of("ελληνικά"), Script::Greek);
        assert_eq!(Script::of("42"), Script::Other);
        assert_eq!(Script::of("中文"), Script::Other);
        // A Latin word in a Russian line is English; a Cyrillic word in a German line Russian.
        assert_eq!(
            of_word(Some(Language::Russian), "deadline"),
            Some(Language::English)
        );
        assert_eq!(
            of_word(Some(Language::German), "Москва"),
            Some(Language::Russian)
        );
        assert_eq!(
            of_word(Some(Language::German), "Wohnung"),
            Some(Language::German)
        );
        assert_eq!(of_word(None, "Wohnung"), Some(Language::English));
        assert_eq!(of_word(Some(Language::German), "2024"), None);
    }

    #[test]
    fn detects_clear_sentences_and_declines_noise() {
        let cases = [
            ("I moved to Berlin last spring and I love my new flat", "en"),
            (
                "Я переехала в Москву прошлой весной, квартира отличная",
                "ru",
            ),
            (
                "Wir haben letzte Woche eine neue Wohnung in Hamburg gekauft",
                "de",
            ),
            (
                "Mi hermana trabaja en un hospital de Valencia desde enero",
                "es",
            ),
            (
                "Nous avons voyagé en Bretagne avec les enfants cet été",
                "fr",
            ),
            (
                "Eu estou cozinhando feijoada para a família no domingo",
                "pt",
            ),
        ];
        for (text, code) in cases {
            assert_eq!(detect(text).map(Language::code), Some(code), "{text}");
        }
        // Short chat lines: the English tie-break keeps "ok" and names English.
        assert_eq!(detect("ok see you at 5").map(Language::code), Some("en"));
        assert_eq!(
            detect("sounds good, thanks!").map(Language::code),
            Some("en")
        );
        assert_eq!(detect("да, в пятницу").map(Language::code), Some("ru"));
        // The script most of the letters are in decides between Latin and another; a tie
        // goes to the other (a name or a loanword in Latin letters).
        assert_eq!(detect("Engram, помощь?").map(Language::code), Some("ru"));
        assert_eq!(
            detect("мой дедлайн в пятницу, ok?").map(Language::code),
            Some("ru")
        );
        assert_eq!(detect("Σ ευχαριστώ πολύ").map(Language::code), Some("el"));
        assert_eq!(
            detect("the word for thanks is спасибо").map(Language::code),
            Some("en")
        );
        for noise in ["", "🦀🦀", "12:30", "?!"] {
            assert_eq!(detect(noise), None, "{noise:?}");
        }
        // To tell the language of an answer, a key, a link or a number says nothing.
        assert_eq!(
            tells("remember that my openai key is sk-proj-AbCdEfGhIjKlMnOpQrStUv12"),
            Some(Language::English)
        );
        assert_eq!(
            tells("regarde https://example.com/wiki/Grüße_aus_Köln, c'est vraiment drôle"),
            Some(Language::French)
        );
        assert_eq!(
            tells("sk-proj-AbCdEfGhIjKlMnOpQrStUv12 4111 https://x.io"),
            None
        );
        // Enough to tell: another script, or three words.
        assert_eq!(tells("no"), None);
        assert_eq!(tells("vale, mañana"), None);
        assert_eq!(tells("да"), Some(Language::Russian));
        assert_eq!(tells("vale, nos vemos mañana"), Some(Language::Spanish));
        // A long text is read from its start only, at a character boundary.
        let long = format!("{}{}", "Москва ".repeat(400), "é".repeat(2000));
        assert_eq!(detect(&long), Some(Language::Russian));
        // The cut falls inside a two-byte letter here (byte 400 of "xy" and then "éé "s).
        let odd = format!("xy{}", "éé ".repeat(300));
        assert!(!odd.is_char_boundary(DETECT_BYTES));
        assert!(detect(&odd).is_some());
    }

    #[test]
    fn function_words_decide_clear_lines_and_leave_the_rest_to_lingua() {
        // Three or more of one language's function words, twice any other's: decided here.
        for (text, code) in [
            ("I think that we should go there again with the kids", "en"),
            ("I don't know if it's open on Sunday", "en"),
            (
                "Ich habe gestern mit meiner Schwester über die Wohnung gesprochen",
                "de",
            ),
            ("Mi hermana dice que no puede venir con nosotros", "es"),
            ("Je ne sais pas si elle vient avec nous", "fr"),
            ("Ele disse que não vai poder vir com a gente", "pt"),
        ] {
            assert_eq!(
                by_function_words(text).map(Language::code),
                Some(code),
                "{text}"
            );
            // …and it is what detection says.
            assert_eq!(detect(text).map(Language::code), Some(code), "{text}");
        }
        // Every Latin-letter language has its list: Polish and Czech share "a", "i", "to",
        // "on", "do" with English, and without theirs these lines were English.
        for row in TABLE.iter().filter(|r| r.3 == Script::Latin) {
            assert!(
                stop_words::lookup(row.1).is_some_and(|w| !w.is_empty()),
                "{}",
                row.1
            );
        }
        for text in [
            "A to jest to, co on ma na myśli",
            "No i co, a on to zrobił",
            "I to, a on na to: no to do domu",
            "Je to tak, a on to ví",
        ] {
            assert_ne!(by_function_words(text), Some(Language::English), "{text}");
        }
        // Too few, or no clear lead (Spanish and Portuguese share "que", "de", "a"): lingua's.
        for text in [
            "ok see you at 5",
            "Wohnung gekauft",
            "que de a",
            "kalomi nesa tovi rubade",
            "",
        ] {
            assert_eq!(by_function_words(text), None, "{text}");
        }
        // Case, curly apostrophes and punctuation do not hide a word.
        assert_eq!(
            by_function_words("DON’T, THE, AND… it"),
            Some(Language::English)
        );
    }
}
