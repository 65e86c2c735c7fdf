//! One-time `/memory link` codes, as pure functions: making one, the hash that is all the store
//! keeps, finding code-shaped words in any text (a code seen where others can read it is
//! revoked), and taking codes out of text before it is stored.

use sha2::{Digest, Sha256};

/// The letters of a code: no 0/O or 1/I to misread.
const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// What stored text shows instead of a code.
pub const REDACTED: &str = "[link code]";

/// A new code like "K7QM-X2PD".
pub fn new_code() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let c: String = (0..8)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{}-{}", &c[..4], &c[4..])
}

/// The code's SHA-256, whatever its case and dashes: the only form that is stored.
pub fn code_hash(code: &str) -> String {
    let normal: String = code
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    hex::encode(Sha256::digest(normal.as_bytes()))
}

fn in_alphabet(c: char) -> bool {
    ALPHABET.contains(&(c.to_ascii_uppercase() as u8)) && c.is_ascii_alphanumeric()
}

/// Whether `word` has a code's shape, in any case: "K7QM-X2PD" or "k7qmx2pd".
pub fn is_code_shaped(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    match chars.len() {
        9 => {
            chars[4] == '-'
                && chars
                    .iter()
                    .enumerate()
                    .all(|(i, c)| i == 4 || in_alphabet(*c))
        }
        8 => chars.iter().all(|c| in_alphabet(*c)) && chars.iter().any(char::is_ascii_digit),
        _ => false,
    }
}

/// The words of `text` that could be codes (edges' punctuation aside).
pub fn code_words(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .map(|w| w.trim_matches('-'))
        .filter(|w| is_code_shaped(w))
        .collect()
}

/// `text` without codes: every code as the bot writes them (upper case, with the dash), and
/// any code-shaped word at all after a "link" command word.
pub fn redact(text: &str) -> String {
    let lower = text.to_lowercase();
    let link_command = lower.contains("/memory link") || lower.contains("/link");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        let core = word
            .trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            .trim_matches('-');
        let as_written = core.len() == 9 && core == core.to_ascii_uppercase();
        if is_code_shaped(core) && (as_written || link_command) {
            out.push_str(&word.replacen(core, REDACTED, 1));
        } else {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_hash_the_same_however_typed() {
        let code = new_code();
        assert!(is_code_shaped(&code), "{code}");
        assert_eq!(code_hash(&code), code_hash(&code.to_lowercase()));
        assert_eq!(code_hash(&code), code_hash(&code.replace('-', "")));
        assert_ne!(code_hash("AAAA-BBBB"), code_hash("AAAA-BBBC"));
    }

    #[test]
    fn codes_are_found_and_taken_out() {
        assert_eq!(code_words("use K7QM-X2PD, quick!"), ["K7QM-X2PD"]);
        assert_eq!(code_words("k7qm-x2pd"), ["k7qm-x2pd"]);
        assert!(code_words("a secret, 12345678 or abcdefgh").is_empty());
        // Looks like one: only its hash is compared with live codes.
        assert_eq!(code_words("well-kept"), ["well-kept"]);
        assert_eq!(
            redact("Your link code is K7QM-X2PD. Within 10 minutes"),
            "Your link code is [link code]. Within 10 minutes"
        );
        assert_eq!(redact("/memory link k7qm-x2pd"), "/memory link [link code]");
        // Ordinary hyphenated words stay.
        assert_eq!(
            redact("a test-case and well-kept"),
            "a test-case and well-kept"
        );
        assert_eq!(redact("  spaced   out  "), "  spaced   out  ");
    }
}
