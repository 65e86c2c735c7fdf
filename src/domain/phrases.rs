//! Memory phrases per language, read from the files of `phrases/` (one TOML file per language:
//! what opens a "remember", a "forget", a yes or a no; the words that file a stated fact under
//! a MEMORY.md section, and how a fact names the attribute it sets): data, so a community adds
//! its own language or lines without touching code. Pure: the caller reads the files.

use super::command::{Command, Subject};
use super::entry::Category;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One language's phrases (a `phrases/*.toml` file).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LanguagePhrases {
    /// Its code ("ru", "de", …).
    pub language: String,
    /// Phrases that open a fact to keep where it is said ("запомни, что").
    #[serde(default)]
    pub remember: Vec<String>,
    /// Phrases that open a fact to be known everywhere.
    #[serde(default)]
    pub remember_everywhere: Vec<String>,
    /// Phrases that open a fact taken back ("забудь, что").
    #[serde(default)]
    pub forget: Vec<String>,
    /// Whole requests to forget everything about the speaker ("забудь всё обо мне").
    #[serde(default)]
    pub forget_everything: Vec<String>,
    /// Whole answers that say yes to the bot's question.
    #[serde(default)]
    pub yes: Vec<String>,
    /// Whole answers that say no.
    #[serde(default)]
    pub no: Vec<String>,
    /// Phrases that open a message on a new topic ("кстати"): it starts a new episode.
    #[serde(default)]
    pub markers: Vec<String>,
    /// Courtesies before a request ("bitte", "por favor"): the request is the same without.
    #[serde(default)]
    pub courtesies: Vec<String>,
    /// Word beginnings that file a stated fact under a section of MEMORY.md.
    #[serde(default)]
    pub sections: Sections,
    /// How a stated fact names the attribute it gives a value to.
    #[serde(default)]
    pub attributes: Attributes,
}

/// Word beginnings (lowercase) that file a stated fact under a MEMORY.md section, tried in
/// this order; a fact none of them starts a word of is personal context.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sections {
    /// Work Context ("work", "проект", "arbeit").
    #[serde(default)]
    pub work: Vec<String>,
    /// User Preferences ("prefer", "люб", "mag").
    #[serde(default)]
    pub preference: Vec<String>,
    /// Reading History ("book", "книг", "lese").
    #[serde(default)]
    pub reading: Vec<String>,
}

/// How a stated fact names the attribute it gives a value to, so that a new value replaces
/// the old one ("I live in Lisbon", then "I live in Porto"): by an opening that names it, or
/// as "my X is Y".
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Attributes {
    /// Openings per attribute: `home = ["i live in", "i moved to"]`.
    #[serde(default)]
    pub named: BTreeMap<String, Vec<String>>,
    /// The openings of "my X is Y" ("my", "мой", "meine").
    #[serde(default)]
    pub possessive: Vec<String>,
    /// The words between X and Y ("is", "—", "ist"); ":" also counts at the end of X.
    #[serde(default)]
    pub linking: Vec<String>,
}

/// Longest attribute of "my X is Y", in words: longer is a clause ("my dog that I adopted").
const ATTRIBUTE_WORDS: usize = 3;

/// Why a phrases file was refused.
#[derive(Debug, thiserror::Error)]
#[error("phrases file {file}: {reason}")]
pub struct PhrasesError {
    /// The file.
    pub file: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The phrases of every language, merged (a language named by two files gets both's lines).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Phrases {
    languages: Vec<LanguagePhrases>,
}

/// The built-in files (the repository's `phrases/`), by name.
pub const BUILT_IN: [(&str, &str); 6] = [
    ("en.toml", include_str!("../../phrases/en.toml")),
    ("ru.toml", include_str!("../../phrases/ru.toml")),
    ("de.toml", include_str!("../../phrases/de.toml")),
    ("es.toml", include_str!("../../phrases/es.toml")),
    ("fr.toml", include_str!("../../phrases/fr.toml")),
    ("pt.toml", include_str!("../../phrases/pt.toml")),
];

/// The built-in English file's lists (lowercase, longest first), which the English grammar
/// reads at its own places (`router::parse_command`).
pub fn english() -> &'static LanguagePhrases {
    static ENGLISH: std::sync::LazyLock<LanguagePhrases> = std::sync::LazyLock::new(|| {
        let mut one = Phrases::default();
        one.add("en.toml", BUILT_IN[0].1)
            .expect("the built-in English file is valid");
        one.languages.remove(0)
    });
    &ENGLISH
}

impl Phrases {
    /// The built-in phrases.
    pub fn built_in() -> Phrases {
        Phrases::with_files(&[]).expect("the built-in phrase files are valid")
    }

    /// The built-in files, where a file of the same name in `files` (name, text) replaces
    /// one, and the other `files` added.
    pub fn with_files(files: &[(String, String)]) -> Result<Phrases, PhrasesError> {
        let mut phrases = Phrases::default();
        for (name, text) in BUILT_IN {
            if !files.iter().any(|(f, _)| f == name) {
                phrases.add(name, text)?;
            }
        }
        for (name, text) in files {
            phrases.add(name, text)?;
        }
        Ok(phrases)
    }

    /// Adds the phrases of one file (`name` for errors): checked whole, or nothing is added.
    pub fn add(&mut self, name: &str, text: &str) -> Result<(), PhrasesError> {
        let refuse = |reason: String| PhrasesError {
            file: name.to_string(),
            reason,
        };
        let mut file: LanguagePhrases = toml::from_str(text).map_err(|e| refuse(e.to_string()))?;
        if file.language.trim().is_empty() {
            return Err(refuse("no language".into()));
        }
        let tidy = |list: &mut Vec<String>| {
            for phrase in list.iter_mut() {
                *phrase = phrase.trim().to_lowercase();
                if phrase.is_empty() {
                    return Err(refuse("an empty phrase".into()));
                }
            }
            // Longest first: "запомни, что" before "запомни".
            list.sort_by_key(|p| std::cmp::Reverse(p.chars().count()));
            Ok(())
        };
        for list in file.lists_mut() {
            tidy(list)?;
        }
        for list in file.attributes.named.values_mut() {
            tidy(list)?;
        }
        if let Some(key) = file.attributes.named.keys().find(|k| !is_attribute_key(k)) {
            return Err(refuse(format!(
                "attribute {key:?} is not a name of lowercase letters, digits and _"
            )));
        }
        match self
            .languages
            .iter_mut()
            .find(|l| l.language == file.language)
        {
            Some(known) => {
                for (into, from) in known.lists_mut().into_iter().zip(file.lists_mut()) {
                    merge(into, from);
                }
                for (key, mut from) in std::mem::take(&mut file.attributes.named) {
                    merge(known.attributes.named.entry(key).or_default(), &mut from);
                }
            }
            None => self.languages.push(file),
        }
        Ok(())
    }

    /// The phrases a stated fact is filed by, in tiers tried in order: a fact read as English
    /// (the detector's choice when English is close) by English's alone; one read as another
    /// language with a file by that language's, then by the others' but English's (short
    /// lines of neighbouring languages are often taken for each other); any other by every
    /// language's. (A word of one language is often the start of another's: German "mag" of
    /// "magnesium".)
    fn tiers(&self, fact: &str) -> Vec<Vec<&LanguagePhrases>> {
        let code = super::language::detect(fact).map(|l| l.code());
        let (own, others): (Vec<&LanguagePhrases>, Vec<&LanguagePhrases>) = self
            .languages
            .iter()
            .partition(|l| Some(l.language.as_str()) == code);
        if own.is_empty() {
            vec![others]
        } else if code == Some("en") {
            vec![own]
        } else {
            vec![
                own,
                others.into_iter().filter(|l| l.language != "en").collect(),
            ]
        }
    }

    /// The MEMORY.md section a stated fact belongs in: the first of work, preference and
    /// reading that a word of it starts with one of the beginnings of (or is, for one written
    /// "=word"), by the first tier of phrases (`tiers`) where any does, else personal
    /// context. No model call: explicit capture is instant and free.
    pub fn section(&self, fact: &str) -> Category {
        Self::section_in(&self.tiers(fact), fact)
    }

    /// A stated fact's section and attribute (`section`, `attribute`), its language read once.
    pub fn file(&self, fact: &str) -> (Category, Option<String>) {
        let fact = normalized(fact);
        let tiers = self.tiers(&fact);
        (
            Self::section_in(&tiers, &fact),
            Self::attribute_in(&tiers, &fact),
        )
    }

    fn section_in(tiers: &[Vec<&LanguagePhrases>], fact: &str) -> Category {
        let words = super::plain_words(fact);
        let has = |list: &[String]| {
            words.iter().any(|w| {
                list.iter().any(|l| match l.strip_prefix('=') {
                    Some(whole) => w == whole,
                    None => w.starts_with(l.as_str()),
                })
            })
        };
        tiers
            .iter()
            .find_map(|tier| {
                let any = |pick: fn(&Sections) -> &Vec<String>| {
                    tier.iter().any(|l| has(pick(&l.sections)))
                };
                if any(|s| &s.work) {
                    Some(Category::WorkContext)
                } else if any(|s| &s.preference) {
                    Some(Category::Preference)
                } else if any(|s| &s.reading) {
                    Some(Category::ReadingHistory)
                } else {
                    None
                }
            })
            .unwrap_or(Category::PersonalContext)
    }

    /// The attribute a stated fact gives a value to, if it names one (by the first tier of
    /// phrases, `tiers`, that tells): by an opening ("i live in …": `home`), else as "my X is
    /// Y" (X's words joined by "_", as said: "my favourite colour is green" →
    /// `favourite_colour`), X at most three words.
    pub fn attribute(&self, fact: &str) -> Option<String> {
        let fact = normalized(fact);
        Self::attribute_in(&self.tiers(&fact), &fact)
    }

    fn attribute_in(tiers: &[Vec<&LanguagePhrases>], fact: &str) -> Option<String> {
        tiers.iter().find_map(|tier| {
            let named = tier.iter().find_map(|l| {
                l.attributes
                    .named
                    .iter()
                    .find(|(_, openings)| opened_by(fact, openings).is_some())
                    .map(|(key, _)| key.clone())
            });
            named.or_else(|| tier.iter().find_map(|l| l.attributes.possessed(fact)))
        })
    }

    /// The topic-shift markers of every language.
    pub fn markers(&self) -> Vec<String> {
        self.languages
            .iter()
            .flat_map(|l| l.markers.iter().cloned())
            .collect()
    }

    /// The languages it has phrases for.
    pub fn languages(&self) -> Vec<&str> {
        self.languages.iter().map(|l| l.language.as_str()).collect()
    }

    /// What `text` (the bot's name already taken off) asks for by one of these phrases, if it
    /// opens with one: a fact to keep or take back, forget everything, yes or no. A question
    /// (ending with "?") keeps nothing.
    pub fn read(&self, text: &str) -> Option<Command> {
        let mut text = text.trim().trim_start_matches(OPENING_MARKS);
        while let Some(rest) = self
            .languages
            .iter()
            .find_map(|l| opened_by(text, &l.courtesies))
        {
            text = rest.trim_start_matches(OPENING_MARKS);
        }
        let whole = text
            .trim_end_matches(['.', '!', ' ', ')', '»', '"', '”'])
            .to_lowercase();
        for l in &self.languages {
            if answers(&whole, &l.yes, &l.courtesies) {
                return Some(Command::Confirm(true));
            }
            if answers(&whole, &l.no, &l.courtesies) {
                return Some(Command::Confirm(false));
            }
            if l.forget_everything.contains(&whole) {
                return Some(Command::ForgetEverything {
                    subject: Subject::Speaker,
                });
            }
        }
        if text.trim_end().ends_with('?') {
            return None;
        }
        for l in &self.languages {
            if let Some(fact) = opened_by(text, &l.remember_everywhere) {
                return Some(Command::RememberEverywhere {
                    subject: l.subject_of(fact),
                    fact: fact.to_string(),
                });
            }
        }
        // Every language's "remember" before any "forget": "oublie pas que …" (French for
        // "don't forget that …") is a remember, though "oublie" opens it.
        for l in &self.languages {
            if let Some(fact) = opened_by(text, &l.remember) {
                return Some(Command::Remember {
                    subject: l.subject_of(fact),
                    fact: fact.to_string(),
                });
            }
        }
        for l in &self.languages {
            if let Some(fact) = opened_by(text, &l.forget) {
                return Some(Command::Forget {
                    subject: l.subject_of(fact),
                    fact: fact.to_string(),
                });
            }
        }
        None
    }
}

/// A stated fact as its attribute is read: trimmed, a typographic apostrophe made plain.
fn normalized(fact: &str) -> String {
    fact.trim().replace('’', "'")
}

/// `from`'s phrases added to `into` (each once), longest first.
fn merge(into: &mut Vec<String>, from: &mut Vec<String>) {
    for phrase in from.drain(..) {
        if !into.contains(&phrase) {
            into.push(phrase);
        }
    }
    into.sort_by_key(|p| std::cmp::Reverse(p.chars().count()));
}

/// Whether `key` may name an attribute (it becomes an entry's key).
fn is_attribute_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c == '_' || c.is_ascii_digit() || c.is_lowercase())
}

impl Attributes {
    /// X of "my X is Y" in `fact`, by these openings and linking words.
    fn possessed(&self, fact: &str) -> Option<String> {
        let rest = opened_by(fact, &self.possessive)?;
        let tokens: Vec<&str> = rest.split_whitespace().collect();
        let links = |t: &str| self.linking.iter().any(|l| l.as_str() == t.to_lowercase());
        let colon = self.linking.iter().any(|l| l == ":");
        let what: Vec<&str> = tokens.iter().enumerate().find_map(|(i, t)| {
            if links(t) {
                Some(tokens[..i].to_vec())
            } else if colon && t.len() > 1 && t.ends_with(':') {
                let mut w = tokens[..i].to_vec();
                w.push(t.trim_end_matches(':'));
                Some(w)
            } else {
                None
            }
        })?;
        if what.is_empty() || what.len() > ATTRIBUTE_WORDS {
            return None;
        }
        let words = super::plain_words(&what.join(" "));
        (!words.is_empty()).then(|| words.join("_"))
    }
}

impl LanguagePhrases {
    /// Every list of phrases but the openings of attributes by name (`named`, merged by
    /// attribute), for checking and merging.
    fn lists_mut(&mut self) -> [&mut Vec<String>; 13] {
        [
            &mut self.markers,
            &mut self.courtesies,
            &mut self.remember,
            &mut self.remember_everywhere,
            &mut self.forget,
            &mut self.forget_everything,
            &mut self.yes,
            &mut self.no,
            &mut self.sections.work,
            &mut self.sections.preference,
            &mut self.sections.reading,
            &mut self.attributes.possessive,
            &mut self.attributes.linking,
        ]
    }

    /// Who a fact is about: someone it names with @, else the speaker (in these languages a
    /// fact without a name is the speaker's own).
    fn subject_of(&self, fact: &str) -> Subject {
        let first = fact.split_whitespace().next().unwrap_or("");
        match first.strip_prefix('@') {
            Some(name) if !name.is_empty() => {
                Subject::Named(name.trim_end_matches([',', ':', '\'', '’']).to_string())
            }
            _ => Subject::Speaker,
        }
    }
}

/// Marks a request may open with before its words: "¡Recuerda …", "«Запомни …", "— merk dir …".
pub const OPENING_MARKS: [char; 16] = [
    ',', ':', '!', ' ', '¡', '«', '»', '"', '“', '”', '„', '—', '–', '-', '(', '*',
];

/// Whether `whole` (a whole message, lowercase) is one of `answers`, alone or followed by
/// another of them or a courtesy ("ja, bitte", "да, давай", "sí, claro"); any other tail
/// ("mach das nicht") makes it something else.
fn answers(whole: &str, answers: &[String], courtesies: &[String]) -> bool {
    answers.iter().any(|a| {
        whole == a
            || whole.strip_prefix(a.as_str()).is_some_and(|tail| {
                let rest = tail.trim_start_matches([',', ' ', '!', '-', '—']);
                rest.len() < tail.len()
                    && (answers.iter().any(|b| b == rest) || courtesies.iter().any(|c| c == rest))
            })
    })
}

/// The rest of `text` after the first of `phrases` that opens it (case aside, ending at a word
/// boundary unless the phrase ends elided, "qu'"), without the punctuation between; None when
/// none does or no word follows.
fn opened_by<'a>(text: &'a str, phrases: &[String]) -> Option<&'a str> {
    for phrase in phrases {
        let Some(len) = super::prefix_len_ignore_case(text, phrase) else {
            continue;
        };
        let rest = &text[len..];
        // A word ends the phrase; an elided one ("qu'") runs on into the next.
        if rest.chars().next().is_some_and(char::is_alphanumeric)
            && phrase.chars().last().is_some_and(char::is_alphanumeric)
        {
            continue;
        }
        let rest = rest
            .trim_start_matches([' ', ':', ',', '\t', '\n', '—', '-'])
            .trim();
        if rest.chars().any(char::is_alphanumeric) {
            return Some(rest);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeps(text: &str) -> Option<String> {
        match Phrases::built_in().read(text) {
            Some(Command::Remember {
                subject: Subject::Speaker,
                fact,
            }) => Some(fact),
            _ => None,
        }
    }

    fn takes_back(text: &str) -> Option<String> {
        match Phrases::built_in().read(text) {
            Some(Command::Forget {
                subject: Subject::Speaker,
                fact,
            }) => Some(fact),
            _ => None,
        }
    }

    #[test]
    fn capture_in_each_language() {
        for (said, fact) in [
            ("запомни, что я люблю зелёный чай", "я люблю зелёный чай"),
            ("Запомни: мой кот Мурзик", "мой кот Мурзик"),
            ("Merk dir, dass ich grünen Tee mag", "ich grünen Tee mag"),
            ("recuerda que me gusta el té verde", "me gusta el té verde"),
            ("Souviens-toi que j'aime le thé vert", "j'aime le thé vert"),
            ("lembre que eu gosto de chá verde", "eu gosto de chá verde"),
        ] {
            assert_eq!(keeps(said).as_deref(), Some(fact), "{said}");
        }
    }

    #[test]
    fn forget_in_each_language() {
        for (said, fact) in [
            ("забудь, что я люблю зелёный чай", "я люблю зелёный чай"),
            ("Vergiss, dass ich grünen Tee mag", "ich grünen Tee mag"),
            ("olvida que me gusta el té verde", "me gusta el té verde"),
            ("oublie que j'aime le thé vert", "j'aime le thé vert"),
            ("esqueça que eu gosto de chá verde", "eu gosto de chá verde"),
        ] {
            assert_eq!(takes_back(said).as_deref(), Some(fact), "{said}");
        }
    }

    /// "Don't forget that …" keeps, in every language, though the word for "forget" opens
    /// it colloquially ("oublie pas que", "vergiss nicht"); courtesies and opening marks go;
    /// an elided phrase ("qu'") runs on into its word.
    #[test]
    fn dont_forget_keeps_and_the_ways_people_write_it() {
        for (said, fact) in [
            ("Oublie pas que je pars demain", "je pars demain"),
            (
                "n'oublie pas qu'Alice est allergique",
                "Alice est allergique",
            ),
            (
                "Souviens-toi qu’Alice est allergique",
                "Alice est allergique",
            ),
            (
                "Vergiss nicht dass ich morgen Geburtstag habe",
                "ich morgen Geburtstag habe",
            ),
            ("Vergiss nicht: Montag Zahnarzt", "Montag Zahnarzt"),
            ("Не забудь что завтра собрание", "завтра собрание"),
            ("no olvides que cierro el viernes", "cierro el viernes"),
            ("¡Recuerda que el viernes cierro!", "el viernes cierro!"),
            ("«Запомни, что я люблю чай»", "я люблю чай»"),
            ("— merk dir, dass ich Tee mag", "ich Tee mag"),
            ("Bitte merk dir, dass ich Tee mag", "ich Tee mag"),
            ("Por favor, recuerda que me gusta el té", "me gusta el té"),
            ("S'il te plaît, retiens que j'aime le thé", "j'aime le thé"),
            ("Запомни, пожалуйста, что я люблю чай", "я люблю чай"),
        ] {
            assert_eq!(keeps(said).as_deref(), Some(fact), "{said}");
        }
        // Nothing kept, and nothing named to forget, by a "don't forget" with no word after it
        // (the router takes a forget that names nothing as conversation).
        for said in ["Oublie pas !", "Vergiss nicht!", "не забудь"] {
            assert_eq!(keeps(said), None, "{said}");
            assert!(
                takes_back(said).is_none_or(|f| !super::super::language::names_something(&f)),
                "{said}"
            );
        }
        for (said, fact) in [
            ("esqueca que eu gosto de chá", "eu gosto de chá"),
            ("olvidate de que me gusta el té", "me gusta el té"),
            ("oublie qu'Alice vient", "Alice vient"),
        ] {
            assert_eq!(takes_back(said).as_deref(), Some(fact), "{said}");
        }
        let p = Phrases::built_in();
        for everything in ["olvida todo sobre mi", "esqueca tudo sobre mim"] {
            assert!(
                matches!(p.read(everything), Some(Command::ForgetEverything { .. })),
                "{everything}"
            );
        }
    }

    /// A yes or a no with another of its kind or a courtesy after it is still the answer;
    /// with anything else after it, it is not ("mach das nicht" says no yes).
    #[test]
    fn answers_with_a_tail() {
        let p = Phrases::built_in();
        for yes in [
            "ja, bitte",
            "да, давай",
            "sí, claro",
            "oui, vas-y",
            "sim, pode",
            "да)",
        ] {
            assert_eq!(p.read(yes), Some(Command::Confirm(true)), "{yes}");
        }
        for no in ["nein, danke", "нет, не надо", "non, annule"] {
            assert_eq!(p.read(no), Some(Command::Confirm(false)), "{no}");
        }
        for neither in [
            "mach das nicht",
            "sí pero no",
            "ja ich war in Paris",
            "no sé",
        ] {
            assert!(
                !matches!(p.read(neither), Some(Command::Confirm(_))),
                "{neither}"
            );
        }
    }

    #[test]
    fn answers_questions_and_chatter() {
        let p = Phrases::built_in();
        for yes in ["да", "Ja", "sí", "oui!", "sim"] {
            assert_eq!(p.read(yes), Some(Command::Confirm(true)), "{yes}");
        }
        for no in ["нет", "nein", "non", "não"] {
            assert_eq!(p.read(no), Some(Command::Confirm(false)), "{no}");
        }
        assert_eq!(
            p.read("забудь всё обо мне"),
            Some(Command::ForgetEverything {
                subject: Subject::Speaker
            })
        );
        // Positive controls above; these keep nothing: questions, chatter, a word that only
        // starts like a phrase, a phrase with nothing after it.
        for chatter in [
            "запомни, когда мы встречались?",
            "я люблю зелёный чай",
            "забудьте",
            "recuerdas el viaje",
            "da capo",
        ] {
            assert_eq!(p.read(chatter), None, "{chatter}");
        }
        assert!(matches!(
            p.read("запомни, что @bob играет в шахматы"),
            Some(Command::Remember {
                subject: Subject::Named(n),
                ..
            }) if n == "bob"
        ));
    }

    #[test]
    fn a_community_file_adds_lines_and_bad_files_are_refused() {
        let mut p = Phrases::built_in();
        assert_eq!(p.read("zapamatuj si, že mám rád čaj"), None);
        p.add(
            "cs.toml",
            "language = \"cs\"\nremember = [\"zapamatuj si, že\"]\n",
        )
        .unwrap();
        p.add(
            "ru-extra.toml",
            "language = \"ru\"\nremember = [\"зафиксируй\"]\n",
        )
        .unwrap();
        assert!(matches!(
            p.read("zapamatuj si, že mám rád čaj"),
            Some(Command::Remember { .. })
        ));
        assert!(matches!(
            p.read("зафиксируй: мой день рождения 5 мая"),
            Some(Command::Remember { .. })
        ));
        assert!(matches!(
            p.read("запомни, что я здесь"),
            Some(Command::Remember { .. })
        ));
        assert!(
            p.add("x.toml", "language = \"xx\"\nremmeber = [\"a\"]\n")
                .is_err()
        );
        assert!(p.add("y.toml", "remember = [\"a\"]\n").is_err());
        assert!(
            p.add("z.toml", "language = \"zz\"\nforget = [\" \"]\n")
                .is_err()
        );
    }

    #[test]
    fn a_community_file_files_facts_in_its_language() {
        let mut p = Phrases::built_in();
        // Before: Czech words file nothing, and an attribute is not recognised.
        assert_eq!(p.section("mám rád čaj"), Category::PersonalContext);
        assert_eq!(p.attribute("bydlím v Brně"), None);
        p.add(
            "cs.toml",
            "language = \"cs\"\n[sections]\npreference = [\"rád\", \"ráda\"]\n\
             [attributes]\npossessive = [\"moje\", \"můj\"]\nlinking = [\"je\"]\n\
             [attributes.named]\nhome = [\"bydlím v\"]\n",
        )
        .unwrap();
        assert_eq!(p.section("mám rád čaj"), Category::Preference);
        assert_eq!(p.attribute("Bydlím v Brně").as_deref(), Some("home"));
        assert_eq!(
            p.attribute("můj oblíbený sport je tenis").as_deref(),
            Some("oblíbený_sport")
        );
        // A second file of a language adds openings to an attribute it names, and new ones.
        p.add(
            "ru-extra.toml",
            "language = \"ru\"\n[attributes.named]\nhome = [\"я обитаю в\"]\nteam = [\"я болею за\"]\n",
        )
        .unwrap();
        assert_eq!(p.attribute("я обитаю в Казани").as_deref(), Some("home"));
        assert_eq!(p.attribute("я живу в Казани").as_deref(), Some("home"));
        assert_eq!(p.attribute("я болею за Зенит").as_deref(), Some("team"));
        // An attribute's name becomes an entry's key: plain lowercase words only.
        for bad in ["Home", "my home", ""] {
            let file = format!("language = \"xx\"\n[attributes.named]\n\"{bad}\" = [\"a\"]\n");
            assert!(p.add("x.toml", &file).is_err(), "{bad:?}");
        }
        assert!(
            p.add("y.toml", "language = \"yy\"\n[sections]\nwrok = [\"a\"]\n")
                .is_err()
        );
    }
}
