//! Token counting with a real BPE tokenizer (tiktoken's embedded cl100k_base / o200k_base,
//! offline) for context budgets.

use std::sync::{Arc, OnceLock};
use tiktoken_rs::CoreBPE;

#[derive(Clone)]
/// Counts and cuts text in model tokens.
pub struct TokenCounter {
    bpe: Arc<CoreBPE>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter")
    }
}

/// A tokenizer name that is neither "cl100k_base" nor "o200k_base".
#[derive(Debug, thiserror::Error)]
#[error("unknown tokenizer {0:?}")]
pub struct UnknownTokenizer(pub String);

static CL100K: OnceLock<Arc<CoreBPE>> = OnceLock::new();
static O200K: OnceLock<Arc<CoreBPE>> = OnceLock::new();

impl TokenCounter {
    /// `name` is "cl100k_base" or "o200k_base"; the tables are built once per process.
    pub fn new(name: &str) -> Result<TokenCounter, UnknownTokenizer> {
        let bpe = match name {
            "cl100k_base" => CL100K.get_or_init(|| {
                Arc::new(tiktoken_rs::cl100k_base().expect("embedded cl100k_base"))
            }),
            "o200k_base" => O200K
                .get_or_init(|| Arc::new(tiktoken_rs::o200k_base().expect("embedded o200k_base"))),
            other => return Err(UnknownTokenizer(other.to_string())),
        };
        Ok(TokenCounter { bpe: bpe.clone() })
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }

    /// The longest prefix of `text` within `max_tokens`, cut at a sentence end or else a word
    /// boundary, with "…" when something was cut. Never splits a character.
    pub fn truncate(&self, text: &str, max_tokens: usize) -> String {
        if self.count(text) <= max_tokens {
            return text.to_string();
        }
        if max_tokens < 2 {
            return String::new();
        }
        // Binary search over char boundaries for the longest prefix that fits (leaving one
        // token for the ellipsis).
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        let (mut lo, mut hi) = (0usize, bounds.len() - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if self.count(&text[..bounds[mid]]) < max_tokens {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let prefix = &text[..bounds[lo]];
        let cut = prefix
            .rfind(['.', '!', '?', '\n'])
            .filter(|&i| i >= prefix.len() / 2)
            .map(|i| i + 1)
            .or_else(|| prefix.rfind(char::is_whitespace))
            .unwrap_or(prefix.len());
        let kept = prefix[..cut].trim_end();
        if kept.is_empty() {
            String::new()
        } else {
            format!("{kept}…")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reply prompt's packer (`responder::prompt`) charges each note and recalled message one token for the newline
    /// that joins it to the next (a margin, see `.cargo/mutants.toml`): the newline between two
    /// elements costs nothing when the prompt is counted whole.
    #[test]
    fn a_newline_between_elements_is_free() {
        for name in ["cl100k_base", "o200k_base"] {
            let t = TokenCounter::new(name).unwrap();
            let a = "<note category=\"preference\">likes tea</note>";
            let b = "<message author=\"bob\" time=\"2026-11-01 10:00\">the lake trip</message>";
            for (x, y) in [(a, b), (b, a), (a, a), (b, b)] {
                let joined = t.count(&format!("{x}\n{y}"));
                assert!(
                    joined <= t.count(x) + t.count(y),
                    "{name}: {x:?} + {y:?}: {joined}"
                );
            }
        }
    }

    #[test]
    fn counts_and_truncates_within_budget() {
        let t = TokenCounter::new("cl100k_base").unwrap();
        assert_eq!(t.count(""), 0);
        assert!(t.count("hello world") >= 2);
        let long = "Alice loves Rust. She lives in Berlin. She plays chess on Sundays. ".repeat(20);
        let cut = t.truncate(&long, 30);
        assert!(t.count(&cut) <= 30, "{}", t.count(&cut));
        assert!(cut.ends_with('…') && cut.contains("Alice loves Rust."));
        let emoji = "🦀🧠🎉".repeat(50);
        let cut = t.truncate(&emoji, 10);
        assert!(t.count(&cut) <= 10);
        assert!(TokenCounter::new("gpt2").is_err());
    }

    /// The smallest budgets: two tokens still keep a piece and the ellipsis; one keeps nothing.
    #[test]
    fn the_smallest_budgets() {
        let t = TokenCounter::new("cl100k_base").unwrap();
        let long = "Alice loves Rust. She lives in Berlin.";
        let two = t.truncate(long, 2);
        assert!(
            two.ends_with('…') && two.len() > '…'.len_utf8() && t.count(&two) <= 2,
            "{two:?}"
        );
        assert_eq!(t.truncate(long, 1), "");
        assert_eq!(t.truncate(long, 0), "");
        assert_eq!(t.truncate("Hi", 1), "Hi", "what fits is kept whole");
    }

    /// A sentence end in the second half of what fits is where the cut goes; one in the first
    /// half is too early, and the cut goes at the last space instead.
    #[test]
    fn cuts_at_a_late_sentence_end_else_at_a_space() {
        let t = TokenCounter::new("cl100k_base").unwrap();
        let late = "One two three four five six. Seven eight nine ten eleven twelve thirteen";
        let budget = t.count("One two three four five six. Seven eight") + 1;
        assert_eq!(t.truncate(late, budget), "One two three four five six.…");
        let early = "Hi. one two three four five six seven eight nine ten eleven";
        let budget = t.count("Hi. one two three four five six") + 1;
        // (The last word may be cut short, so it goes too.)
        assert_eq!(t.truncate(early, budget), "Hi. one two three four five…");
    }

    /// Whatever the text and the budget, the cut (with its ellipsis) stays within it.
    #[test]
    fn every_cut_fits_its_budget() {
        let t = TokenCounter::new("cl100k_base").unwrap();
        let texts = [
            "alpha beta gamma delta epsilon zeta eta theta iota kappa ".repeat(8),
            "🦀🧠🎉".repeat(40),
            "東京都の天気は晴れです".repeat(10),
            "x".repeat(300),
        ];
        for text in &texts {
            for budget in 2..60 {
                let cut = t.truncate(text, budget);
                assert!(
                    t.count(&cut) <= budget,
                    "{budget}: {} tokens in {cut:?}",
                    t.count(&cut)
                );
            }
        }
    }
}
