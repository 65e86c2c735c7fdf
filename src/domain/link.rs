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

/// Every run of eight code characters in `text`, whatever separates them ("K7QM-X2PD",
/// "K7QM X2PD", "code:K7QMX2PD"), as the normal form `code_hash` hashes, with the byte range
/// of `text` it spans. Only the first 4,000 letters and digits are looked at.
pub fn code_spans(text: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let stream: Vec<(usize, char)> = text
        .char_indices()
        .filter(|(_, c)| c.is_ascii_alphanumeric())
        .take(4000)
        .collect();
    stream
        .windows(8)
        .filter(|w| w.iter().all(|(_, c)| in_alphabet(*c)))
        .map(|w| {
            let normal: String = w.iter().map(|(_, c)| c.to_ascii_uppercase()).collect();
            (normal, w[0].0..w[7].0 + 1)
        })
        .collect()
}

/// `text` with these byte ranges (overlapping ones merged) shown as `REDACTED`.
pub fn redact_spans(text: &str, spans: &[std::ops::Range<usize>]) -> String {
    replace_spans(text, spans, REDACTED)
}

/// `text` with these byte ranges (on character boundaries; overlapping or adjacent ones
/// merged) each replaced by `marker`.
pub fn replace_spans(text: &str, spans: &[std::ops::Range<usize>], marker: &str) -> String {
    let mut spans: Vec<std::ops::Range<usize>> = spans.to_vec();
    spans.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in spans {
        if r.end <= at {
            continue;
        }
        let start = r.start.max(at);
        out.push_str(&text[at..start]);
        if start == r.start || !out.ends_with(marker) {
            out.push_str(marker);
        }
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

/// `text` without codes: every code as the bot writes them (upper case, with the dash), and
/// the argument of a link command ("/memory link k7qm x2pd", also after "@Engram").
pub fn redact(text: &str) -> String {
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
        if is_code_shaped(core) && as_written {
            out.push_str(&word.replacen(core, REDACTED, 1));
        } else {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    // A link command: whatever follows it is a code, however it is typed.
    let words: Vec<&str> = out.split_whitespace().collect();
    let first = words
        .iter()
        .position(|w| !w.starts_with('@'))
        .unwrap_or(words.len());
    // A platform command may name its bot ("/link@engram_bot", Telegram's form).
    let command_word = |w: &str, name: &str| {
        let bare = w.split_once('@').map_or(w, |(c, _)| c);
        bare.eq_ignore_ascii_case(name)
    };
    let command = match words.get(first..) {
        Some([w, ..]) if command_word(w, "/link") => Some(first + 1),
        Some([w, l, ..]) if command_word(w, "/memory") && l.eq_ignore_ascii_case("link") => {
            Some(first + 2)
        }
        _ => None,
    };
    match command {
        Some(n) if words.len() > n => format!("{} {REDACTED}", words[..n].join(" ")),
        _ => out,
    }
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
        let found: Vec<String> = code_spans("use K7QM-X2PD, quick!")
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert!(found.contains(&"K7QMX2PD".to_string()), "{found:?}");
        assert_eq!(
            redact("Your link code is K7QM-X2PD. Within 10 minutes"),
            "Your link code is [link code]. Within 10 minutes"
        );
        assert_eq!(redact("/memory link k7qm-x2pd"), "/memory link [link code]");
        assert_eq!(
            redact("@Engram /memory link K7QM X2PD"),
            "@Engram /memory link [link code]"
        );
        assert_eq!(redact("/link"), "/link");
        assert_eq!(redact("/LINK k7qm x2pd"), "/LINK [link code]");
        // Telegram's commands name their bot; a mistyped or used code is still taken out.
        assert_eq!(
            redact("/link@engram_bot k7qm-x2pz"),
            "/link@engram_bot [link code]"
        );
        assert_eq!(
            redact("/memory@Engram_Bot link K7QM"),
            "/memory@Engram_Bot link [link code]"
        );
        // Positive control: another command keeps its words.
        assert_eq!(redact("/linked@engram_bot k7qm"), "/linked@engram_bot k7qm");
        assert_eq!(
            redact("Your code is K7QM-X2PD. Send \"/memory link K7QM-X2PD\" there."),
            "Your code is [link code]. Send \"/memory link [link code]\" there."
        );
        // Any separators: every run of eight code characters is a candidate.
        let text = "code:k7qm x2pd, thanks";
        let spans = code_spans(text);
        let hit = spans
            .iter()
            .find(|(n, _)| n == "K7QMX2PD")
            .expect("found across separators");
        assert_eq!(code_hash(&hit.0), code_hash("K7QM-X2PD"));
        assert_eq!(
            redact_spans(text, std::slice::from_ref(&hit.1)),
            "code:[link code], thanks"
        );
        assert!(code_spans("short words only 1010").is_empty());
        // Ordinary hyphenated words stay.
        assert_eq!(
            redact("a test-case and well-kept"),
            "a test-case and well-kept"
        );
        assert_eq!(redact("  spaced   out  "), "  spaced   out  ");
    }
}
