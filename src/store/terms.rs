//! The one tokenizer behind BM25, on both backends and for both sides of a search: lowercase
//! letters-and-digits words, each analysed in its text's language (detected per text; a word in
//! another script, or a text without letters, in its script's fallback: English for Latin
//! letters): its Snowball 3 stem kept, English stop words in Latin letters dropped. A query is analysed
//! in its own language and meets documents analysed in theirs. Messages are indexed with
//! `document_terms`; queries go through `query_terms`, so no user text ever reaches a query
//! language.

use crate::domain::language::{self, Language};
pub use crate::domain::plain_words;
use snowstem::{Algorithm, Stemmer};
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// Longest word kept (characters); longer runs are cut, so a pasted blob cannot bloat the index.
const MAX_WORD_CHARS: usize = 40;

/// Snowball's algorithm for a language.
fn algorithm(l: Language) -> Algorithm {
    match l {
        Language::English => Algorithm::English,
        Language::Russian => Algorithm::Russian,
        Language::German => Algorithm::German,
        Language::Spanish => Algorithm::Spanish,
        Language::French => Algorithm::French,
        Language::Portuguese => Algorithm::Portuguese,
        Language::Italian => Algorithm::Italian,
        Language::Dutch => Algorithm::Dutch,
        Language::Swedish => Algorithm::Swedish,
        Language::Danish => Algorithm::Danish,
        Language::Norwegian => Algorithm::Norwegian,
        Language::Finnish => Algorithm::Finnish,
        Language::Hungarian => Algorithm::Hungarian,
        Language::Romanian => Algorithm::Romanian,
        Language::Turkish => Algorithm::Turkish,
        Language::Polish => Algorithm::Polish,
        Language::Czech => Algorithm::Czech,
        Language::Greek => Algorithm::Greek,
        Language::Arabic => Algorithm::Arabic,
        Language::Tamil => Algorithm::Tamil,
    }
}

/// Every language's stemmer, built once.
static STEMMERS: LazyLock<Vec<Stemmer>> = LazyLock::new(|| {
    let mut stemmers: Vec<(usize, Stemmer)> = Language::all()
        .map(|l| (l as usize, Stemmer::create(algorithm(l))))
        .collect();
    stemmers.sort_by_key(|(i, _)| *i);
    stemmers.into_iter().map(|(_, s)| s).collect()
});

/// English stop words: too common to say anything about a message.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "s",
    "t",
    "d",
    "ll",
    "m",
    "re",
    "ve",
    "don",
    "didn",
    "doesn",
    "isn",
    "wasn",
    "aren",
    "weren",
    "won",
    "wouldn",
    "couldn",
    "shouldn",
    "haven",
    "hasn",
    "hadn",
    "let",
    "also",
    "get",
    "got",
    "ok",
    "okay",
];

static STOP_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| STOP_WORDS.iter().copied().collect());

/// Whether `w` (lowercase) is one of the English stop words BM25 leaves out.
pub fn is_stop_word(w: &str) -> bool {
    STOP_SET.contains(w)
}

/// The analysed form of one lowercase word of a text in `text_language`: `None` for an English
/// stop word in Latin letters (whatever the text's language: a short English line such as
/// "ok" may be taken for another language, and the list's words are function words in the
/// others too), else its stem (the word itself in a script no stemmer knows). Other languages
/// keep their own function words: BM25's idf weighs them down, and dropping them (NLTK's
/// lists) lost more than it gained on the multilingual dev set (turn R@10 0.901 kept, 0.849
/// dropped).
fn analyse(text_language: Option<Language>, lower: &str) -> Option<String> {
    analyse_as(language::of_word(text_language, lower), lower)
}

/// `analyse` of a word whose own language (`language::of_word`) is known.
fn analyse_as(word_language: Option<Language>, lower: &str) -> Option<String> {
    let Some(l) = word_language else {
        return Some(lower.to_string());
    };
    if l.script() == language::Script::Latin && is_stop_word(lower) {
        return None;
    }
    Some(STEMMERS[l as usize].stem(lower).into_owned())
}

/// The words of `text`, a text in `text_language` (as `language::detect` found it).
/// Accents are composed first (`domain::composed`): a decomposed "é" is the word's letter,
/// not a break in it.
fn words_in(text: &str, text_language: Option<Language>) -> Vec<String> {
    crate::domain::composed(text)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .filter_map(|w| {
            let lower: String = w.to_lowercase().chars().take(MAX_WORD_CHARS).collect();
            analyse(text_language, &lower)
        })
        .collect()
}

/// The adjacent word pairs of a question once stop words are dropped: "high school" in a
/// question matches "high school" in a message, which the two loose words do not say.
#[derive(Debug, Clone, Default)]
pub struct WordPairs {
    pairs: HashSet<(String, String)>,
    /// The first three characters of each stem: an English word that starts otherwise is taken
    /// to stem to none of the question's terms, so most words of a message are never stemmed.
    /// (Stemming keeps them but for a few words, "dying" → "die", "using" → "use", "skies" →
    /// "sky", which then meet no pair.)
    /// (A question has a few dozen at most: a list is read faster than a hash is made.)
    prefixes: Vec<Prefix>,
}

type Prefix = (char, Option<char>, Option<char>);

fn prefix3(w: &str) -> Prefix {
    let mut chars = w.chars();
    (chars.next().unwrap_or(' '), chars.next(), chars.next())
}

impl WordPairs {
    /// The adjacent word pairs of `text`.
    pub fn of(text: &str) -> WordPairs {
        WordPairs::of_in(text, language::detect(text))
    }

    /// The adjacent word pairs of `text`, a text in `text_language`.
    pub fn of_in(text: &str, text_language: Option<Language>) -> WordPairs {
        let mut pairs = HashSet::new();
        let mut prefixes = Vec::new();
        let mut previous: Option<String> = None;
        for w in words_in(text, text_language) {
            let prefix = prefix3(&w);
            if !prefixes.contains(&prefix) {
                prefixes.push(prefix);
            }
            if let Some(p) = previous.replace(w.clone())
                && p != w
            {
                pairs.insert((p, w));
            }
        }
        WordPairs { pairs, prefixes }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// How many of the question's pairs stand side by side in `text`, a text in
    /// `text_language` (its stored language).
    pub fn shared_with(&self, text: &str, text_language: Option<Language>) -> usize {
        if self.pairs.is_empty() {
            return 0;
        }
        let mut found: Vec<(&str, &str)> = Vec::new();
        let mut previous: Option<String> = None;
        // One buffer for every word: a long message is mostly words that match nothing.
        let mut lower = String::new();
        for raw in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            // Most words of a message are in no pair: passed over on their first letters,
            // never stemmed. One closes the pair open before it, unless it is a stop word,
            // which pairs skip.
            if self.in_no_pair(raw, text_language) {
                if previous.is_some() {
                    lowercase_into(&mut lower, raw);
                    if !is_stop_word(&lower) {
                        previous = None;
                    }
                }
                continue;
            }
            lowercase_into(&mut lower, raw);
            let word_language = language::of_word(text_language, &lower);
            let Some(stem) = analyse_as(word_language, &lower) else {
                continue;
            };
            if let Some(p) = previous.take()
                && let Some((a, b)) = self.pairs.get(&(p, stem.clone()))
                && !found.contains(&(a.as_str(), b.as_str()))
            {
                found.push((a.as_str(), b.as_str()));
            }
            previous = Some(stem);
        }
        found.len()
    }

    /// Whether `raw`, a word of a text in `text_language`, is in none of the pairs: its
    /// lowercase starts with none of the stems' first three characters (`prefixes`) and it is
    /// English (`language::of_word`), whose stems keep them. (Other languages' stems may
    /// fold accents, as German's umlauts.)
    fn in_no_pair(&self, raw: &str, text_language: Option<Language>) -> bool {
        // Most words are ASCII: lowercase and script read from the bytes (dev60: the search's
        // word pairs took a ninth of a question's CPU, most of it here).
        if raw.is_ascii() {
            let bytes = raw.as_bytes();
            let at = |i: usize| bytes.get(i).map(|b| char::from(b.to_ascii_lowercase()));
            if self
                .prefixes
                .contains(&(at(0).unwrap_or(' '), at(1), at(2)))
            {
                return false;
            }
            // Any ASCII letter has the script of "a".
            return language::of_word(text_language, "a") == Some(Language::English)
                && bytes
                    .iter()
                    .take(MAX_WORD_CHARS)
                    .any(u8::is_ascii_alphabetic);
        }
        self.in_no_pair_by_chars(raw, text_language)
    }

    /// `in_no_pair` for any word, read char by char.
    fn in_no_pair_by_chars(&self, raw: &str, text_language: Option<Language>) -> bool {
        let lower = || {
            raw.chars()
                .flat_map(char::to_lowercase)
                .take(MAX_WORD_CHARS)
        };
        let mut head = lower();
        let prefix = (head.next().unwrap_or(' '), head.next(), head.next());
        if self.prefixes.contains(&prefix) {
            return false;
        }
        // A word's script is its first letter's.
        lower().find(|c| c.is_alphabetic()).is_some_and(|letter| {
            language::of_word(text_language, letter.encode_utf8(&mut [0; 4]))
                == Some(Language::English)
        })
    }
}

/// `raw` lowercased into `buffer`, cut at `MAX_WORD_CHARS`.
fn lowercase_into(buffer: &mut String, raw: &str) {
    buffer.clear();
    buffer.extend(
        raw.chars()
            .flat_map(char::to_lowercase)
            .take(MAX_WORD_CHARS),
    );
}

/// A message as BM25 sees it: each distinct term with its frequency, and the document length
/// (terms counted with repeats).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocumentTerms {
    /// Each term with its count.
    pub terms: Vec<(String, u32)>,
    /// The document's length in terms.
    pub len: u32,
}

/// The BM25 terms of a document, with counts and length, in its detected language.
pub fn document_terms(text: &str) -> DocumentTerms {
    document_terms_in(text, language::detect(text))
}

/// The BM25 terms of a document whose language is known (`language::detect` of its text).
pub fn document_terms_in(text: &str, text_language: Option<Language>) -> DocumentTerms {
    let mut counts: HashMap<String, u32> = HashMap::new();
    let mut len = 0u32;
    for w in words_in(text, text_language) {
        len += 1;
        *counts.entry(w).or_insert(0) += 1;
    }
    let mut terms: Vec<(String, u32)> = counts.into_iter().collect();
    terms.sort();
    DocumentTerms {
        terms,
        len: len.max(1),
    }
}

/// Search terms of a query: distinct, in order of first use, at most `max`. Quotes,
/// operators, NEAR, parentheses and SQL never survive this; only words do.
pub fn query_terms(text: &str, max: usize) -> Vec<String> {
    query_terms_in(text, max, language::detect(text))
}

/// `query_terms` of `text` read as a text in `text_language`: to compare words with a stored
/// text, read both in that text's language (the same word then always meets itself, which two
/// texts each read in its own detected language do not promise).
pub fn query_terms_in(text: &str, max: usize, text_language: Option<Language>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words_in(text, text_language) {
        if out.len() == max {
            break;
        }
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// BM25's parameters: term-frequency saturation `k1` and length normalisation `b`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation (0: none, 1: full).
    pub b: f64,
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 { k1: 1.2, b: 0.75 }
    }
}

impl Bm25 {
    /// Inverse document frequency of a term found in `df` of `n` documents (never negative).
    pub fn idf(n: f64, df: f64) -> f64 {
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// One term's contribution to a document's score.
    pub fn term_score(&self, idf: f64, tf: f64, doc_len: f64, avg_len: f64) -> f64 {
        let norm = 1.0 - self.b + self.b * doc_len / avg_len.max(1e-9);
        idf * tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
    }
}

/// BM25 over groups of postings: `postings` are (term, document, tf); a document's length and
/// the collection size come from the caller. Returns the top `limit` documents, best first
/// (ties: higher id first, the newer).
pub fn rank_documents(
    bm25: Bm25,
    postings: &[(String, i64, i64)],
    doc_len: &HashMap<i64, f64>,
    n: f64,
    avg_len: f64,
    limit: usize,
) -> Vec<(i64, f64)> {
    let mut df: HashMap<&str, f64> = HashMap::new();
    for (term, _, _) in postings {
        *df.entry(term.as_str()).or_insert(0.0) += 1.0;
    }
    let mut scores: HashMap<i64, f64> = HashMap::new();
    for (term, doc, tf) in postings {
        let idf = Bm25::idf(n.max(1.0), df[term.as_str()]);
        let len = doc_len.get(doc).copied().unwrap_or(avg_len);
        *scores.entry(*doc).or_insert(0.0) += bm25.term_score(idf, *tf as f64, len, avg_len);
    }
    let mut ranked: Vec<(i64, f64)> = scores.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    ranked.truncate(limit);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    /// A decomposed accent ("e" and U+0301) is the letter a keyboard gives: the word stays
    /// one word, the same as its composed form, on both sides of a search.
    #[test]
    fn decomposed_accents_are_the_same_word() {
        assert_eq!(
            query_terms("Mu\u{308}ller cafe\u{301}", 8),
            query_terms("Müller café", 8)
        );
        assert_eq!(
            document_terms("Mu\u{308}ller").terms,
            document_terms("Müller").terms
        );
    }

    #[test]
    fn query_syntax_never_survives() {
        assert_eq!(
            query_terms("\"rust\" AND (NEAR kube*) OR -x; DROP TABLE", 10),
            ["rust", "near", "kube", "x", "drop", "tabl"]
        );
        assert!(query_terms("🦀 … ()\"", 10).is_empty());
        assert!(query_terms("", 10).is_empty());
        assert!(query_terms("what is it that you do", 10).is_empty());
        assert_eq!(query_terms(&"word ".repeat(5000), 32), ["word"]);
        assert_eq!(query_terms("Zoë 中文", 10), ["zoë", "中文"]);
        assert_eq!(query_terms("a b c d e f g", 3), ["b", "c", "e"]);
    }

    /// Words for `shared_pairs_are_the_adjacent_words_in_common`: stop words, words whose
    /// stems share their first letters or not, other cases, numbers, another script.
    const VOCABULARY: &[&str] = &[
        "the",
        "a",
        "my",
        "is",
        "and",
        "I",
        "of",
        "high",
        "High",
        "HIGHER",
        "school",
        "Schools",
        "scholar",
        "reunion",
        "reunions",
        "attend",
        "attended",
        "attending",
        "3d",
        "42",
        "printer",
        "print",
        "running",
        "runner",
        "школа",
        "Школы",
        "äpfel",
        "Apfel",
        "kaufen",
    ];

    proptest::proptest! {
        /// The pairs a message shares with a question are the question's pairs among the
        /// message's words side by side, stop words left out (as `words_in` reads both), for
        /// words whose stems keep their first three letters (all of these): the quick pass
        /// over words that start no stem counts no pair more or less.
        #[test]
        fn shared_pairs_are_the_adjacent_words_in_common(
            question in proptest::collection::vec(proptest::sample::select(VOCABULARY), 0..8),
            message in proptest::collection::vec(
                (
                    proptest::sample::select(VOCABULARY),
                    proptest::sample::select(&[" ", ", ", ". ", "-", "'s ", "? "][..]),
                ),
                0..40,
            ),
            language in proptest::sample::select(
                &[Some(Language::English), Some(Language::German), None][..],
            ),
        ) {
            let pairs = WordPairs::of_in(&question.join(" "), language);
            let message: String = message.iter().map(|(w, s)| format!("{w}{s}")).collect();
            let words = words_in(&message, language);
            let expected: HashSet<(String, String)> = words
                .windows(2)
                .map(|w| (w[0].clone(), w[1].clone()))
                .filter(|p| pairs.pairs.contains(p))
                .collect();
            proptest::prop_assert_eq!(pairs.shared_with(&message, language), expected.len());
        }

        /// A word in ASCII is passed over (or not) on its bytes exactly as on its chars.
        #[test]
        fn ascii_words_are_read_as_their_chars_are(
            question in proptest::collection::vec(proptest::sample::select(VOCABULARY), 0..8),
            word in proptest::prop_oneof![
                "[a-zA-Z0-9_]{0,45}",
                // Letters only past the first `MAX_WORD_CHARS`, or just within them.
                "[0-9_]{38,42}[a-zA-Z]{0,3}",
                proptest::sample::select(VOCABULARY).prop_map(|w| w.to_uppercase()),
                proptest::sample::select(VOCABULARY).prop_map(|w| format!("{w}s")),
            ],
            language in proptest::sample::select(
                &[Some(Language::English), Some(Language::German), Some(Language::Russian), None][..],
            ),
        ) {
            let pairs = WordPairs::of_in(&question.join(" "), language);
            proptest::prop_assert_eq!(
                pairs.in_no_pair(&word, language),
                pairs.in_no_pair_by_chars(&word, language)
            );
        }
    }

    #[test]
    fn word_pairs_are_found_side_by_side_only() {
        let q = WordPairs::of("Should I attend my high school reunion?");
        let en = Some(Language::English);
        // Stop words between the words do not break a pair; stems match other forms.
        assert_eq!(
            q.shared_with("Happy HIGH-school memories, and the reunions.", en),
            1
        );
        assert_eq!(q.shared_with("high school reunion", en), 2);
        assert_eq!(q.shared_with("I attended the high school", en), 2);
        // Both words, apart: no pair. A pair counts once however often it appears.
        assert_eq!(q.shared_with("school is high on my list", en), 0);
        assert_eq!(
            q.shared_with("high school, high school, high school", en),
            1
        );
        assert_eq!(q.shared_with("", en), 0);
        // One word (or none) makes no pair; odd input is just text.
        assert!(WordPairs::of("reunion").is_empty());
        assert!(WordPairs::of("🦀 \"AND\" (NEAR)").is_empty());
        assert_eq!(WordPairs::of("high high").shared_with("high high", en), 0);
    }

    #[test]
    fn bm25_matches_the_reference_formula() {
        // idf = ln(1 + (N - df + 0.5) / (df + 0.5)); tf part with k1 = 1.2, b = 0.75.
        let idf = Bm25::idf(10.0, 2.0);
        assert!((idf - (1.0f64 + 8.5 / 2.5).ln()).abs() < 1e-12);
        let s = Bm25::default().term_score(idf, 3.0, 20.0, 10.0);
        let expected = idf * 3.0 * 2.2 / (3.0 + 1.2 * (0.25 + 0.75 * 2.0));
        assert!((s - expected).abs() < 1e-12);
        // b = 0: no length normalisation; k1 = 0: term presence only.
        let flat = Bm25 { k1: 1.2, b: 0.0 };
        assert_eq!(
            flat.term_score(1.0, 2.0, 5.0, 50.0),
            flat.term_score(1.0, 2.0, 500.0, 50.0)
        );
        let presence = Bm25 { k1: 0.0, b: 0.75 };
        assert_eq!(
            presence.term_score(1.0, 1.0, 9.0, 3.0),
            presence.term_score(1.0, 7.0, 9.0, 3.0)
        );
    }

    #[test]
    fn rank_documents_prefers_rare_terms_and_short_documents() {
        let postings = vec![
            ("common".to_string(), 1, 1),
            ("common".to_string(), 2, 1),
            ("common".to_string(), 3, 1),
            ("rare".to_string(), 3, 1),
        ];
        let lens: HashMap<i64, f64> = [(1, 10.0), (2, 2.0), (3, 10.0)].into();
        let ranked = rank_documents(Bm25::default(), &postings, &lens, 10.0, 6.0, 10);
        assert_eq!(ranked.iter().map(|r| r.0).collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(
            rank_documents(Bm25::default(), &postings, &lens, 10.0, 6.0, 1).len(),
            1
        );
    }

    #[test]
    fn stems_keep_apart_words_that_only_look_alike() {
        // The older Porter2 rules folded these into unrelated words.
        let stems = |t: &str| query_terms(t, 10);
        assert_ne!(stems("evening"), stems("even"));
        assert_ne!(stems("adding"), stems("ad"));
        assert_ne!(stems("organization"), stems("organ"));
        assert_ne!(stems("university"), stems("universal"));
        assert_eq!(stems("evenings"), stems("evening"));
        assert_eq!(stems("organizing"), stems("organized"));
    }

    #[test]
    fn documents_and_queries_meet_on_stems() {
        let doc = document_terms("I recommended two recommendations; Recommending is fun!");
        assert_eq!(
            doc.terms,
            [
                ("fun".to_string(), 1),
                ("recommend".to_string(), 3),
                ("two".to_string(), 1)
            ]
        );
        assert_eq!(doc.len, 5);
        assert_eq!(
            query_terms("can you recommend something", 10),
            ["recommend", "someth"]
        );
        assert_eq!(document_terms("").len, 1);

        let long = "x".repeat(10_000);
        assert_eq!(
            document_terms(&long).terms[0].0.chars().count(),
            MAX_WORD_CHARS
        );
    }

    #[test]
    fn each_language_meets_its_own_inflected_forms() {
        // A question and a message in the same language meet on stems the exact forms miss.
        let meets = |question: &str, message: &str| {
            let doc: HashSet<String> = document_terms(message)
                .terms
                .into_iter()
                .map(|t| t.0)
                .collect();
            query_terms(question, 16)
                .iter()
                .filter(|t| doc.contains(*t))
                .count()
        };
        // No word of a question appears as such in its message: only stems can meet.
        let exact = |t: &str| plain_words(t).into_iter().collect::<HashSet<_>>();
        let cases = [
            ("Кто переехал Москву?", "живём теперь в Москве"),
            ("Wer sucht Wohnungen?", "Lena hat eine Wohnung in Plagwitz"),
            ("¿Dónde trabajaban?", "Mi hermana trabaja en Valencia"),
            ("Où ont-ils voyagé ?", "Nous allons voyager en Bretagne"),
            ("Quem estava cozinhando?", "Eu vou cozinhar feijoada"),
        ];
        for (question, message) in cases {
            assert!(exact(question).is_disjoint(&exact(message)), "{question}");
            assert_eq!(meets(question, message), 1, "{question} / {message}");
        }
        // Only English's stop words go (in any Latin-letter text); other languages' function
        // words stay, weighed by idf.
        assert_eq!(query_terms("и в на", 8), ["и", "в", "на"]);
        assert_eq!(
            query_terms("der die Wohnungen und Häuser in Köln", 8),
            ["der", "die", "wohnung", "und", "haus", "koln"]
        );
        // "ok" says nothing, whatever language a short line is taken for.
        assert!(query_terms("ok", 8).is_empty());
        assert!(document_terms("ok ok").terms.is_empty());
        // A Latin word in a Russian line is stemmed as English; a Cyrillic word in an English one
        // as Russian.
        assert_eq!(
            query_terms("мой дедлайн meetings в пятницу", 8),
            ["мо", "дедлайн", "meet", "в", "пятниц"]
        );
        assert_eq!(
            query_terms("We met in Москве yesterday", 8),
            ["met", "москв", "yesterday"]
        );
    }

    #[test]
    fn a_quote_meets_itself_read_in_the_quoting_texts_language() {
        // A Spanish fact quoted in an English reply: each read in its own language, the words
        // part (English keeps "trabaja", Spanish stems it); read in the reply's, they meet.
        let fact = "Lena trabaja en el hospital de Valencia";
        let reply = "Shared: I'll know \"Lena trabaja en el hospital de Valencia\" everywhere.";
        let in_reply = crate::domain::language::detect(reply);
        let doc: HashSet<String> = document_terms_in(reply, in_reply)
            .terms
            .into_iter()
            .map(|t| t.0)
            .collect();
        let own = query_terms(fact, 16);
        assert!(!own.iter().all(|t| doc.contains(t)), "{own:?} / {doc:?}");
        let read_alike = query_terms_in(fact, 16, in_reply);
        assert!(read_alike.iter().all(|t| doc.contains(t)), "{read_alike:?}");
    }

    #[test]
    fn word_pairs_in_other_languages() {
        let q = WordPairs::of("Wo hat Lena die neue Wohnung gekauft?");
        let de = crate::domain::language::detect("Lena hat eine neue Wohnung gekauft");
        assert_eq!(de, Some(Language::German));
        assert_eq!(q.shared_with("Lena hat eine neue Wohnung gekauft", de), 2);
        assert_eq!(
            q.shared_with("Lena hat eine Wohnung, neue Schuhe gekauft", de),
            0
        );
        // German stems fold umlauts, so the first letters of a word are not its stem's: "Äpfel"
        // stems to "apfel" and still meets "Apfel".
        let q = WordPairs::of("Wie viele Äpfel kaufen wir heute?");
        assert_eq!(q.shared_with("wir wollten die Apfel kaufen", de), 1);
        // And the other way round: the message's "Äpfel" is not passed over on its letters.
        let q = WordPairs::of_in("Wo kann ich Apfel kaufen?", de);
        assert_eq!(q.shared_with("Wir wollten Äpfel kaufen", de), 1);
    }
}
