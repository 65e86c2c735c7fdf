//! Secrets in text (passwords, keys and tokens, card numbers): found by shape, so they are
//! never kept as memory and are taken out of the stored history.

use std::ops::Range;

/// What kind of secret a span holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// A password (after words like "password" or "pw").
    Password,
    /// An API key or token: after words like "token" or "apikey", or by its shape.
    Key,
    /// A payment card number (Luhn-checked).
    CardNumber,
}

/// Whether `secret` (an admin token, an API key) is too easy to guess to guard anything: fewer
/// than 16 characters, or fewer than 8 different ones ("aaaaaaaaaaaaaaaa", "1212…"). Outer
/// spaces do not count.
pub fn guessable(secret: &str) -> bool {
    let secret = secret.trim();
    let distinct: std::collections::HashSet<char> = secret.chars().collect();
    secret.chars().count() < 16 || distinct.len() < 8
}

/// What a secret is replaced with in stored text.
pub const REDACTED: &str = "[secret removed]";

/// Words that announce a secret value ("my password is …", "PIN: …").
const ANNOUNCING: [(&str, SecretKind); 21] = [
    ("password", SecretKind::Password),
    ("passwords", SecretKind::Password),
    ("pw", SecretKind::Password),
    ("pword", SecretKind::Password),
    ("pincode", SecretKind::Password),
    ("passcodes", SecretKind::Password),
    ("passwort", SecretKind::Password),
    ("passwd", SecretKind::Password),
    ("pwd", SecretKind::Password),
    ("passphrase", SecretKind::Password),
    ("passcode", SecretKind::Password),
    ("pin", SecretKind::Password),
    ("cvv", SecretKind::CardNumber),
    ("cvc", SecretKind::CardNumber),
    ("otp", SecretKind::Password),
    ("2fa", SecretKind::Password),
    ("apikey", SecretKind::Key),
    ("api_key", SecretKind::Key),
    ("api-key", SecretKind::Key),
    ("token", SecretKind::Key),
    ("access_token", SecretKind::Key),
];

/// Words that announce a secret only after a qualifier: "API key", "secret key", "recovery
/// code" (but "the key is to start early").
const QUALIFIED: [&str; 4] = ["key", "secret", "code", "codes"];
const QUALIFIERS: [&str; 19] = [
    "api", "secret", "private", "access", "auth", "ssh", "recovery", "security", "client",
    "backup", "license", "wifi", "wi-fi", "door", "alarm", "gate", "safe", "lock", "garage",
];

/// Words that may follow an announcing word as part of its name ("PIN code", "pin number").
const NAME_GOES_ON: [&str; 5] = ["code", "number", "no", "phrase", "word"];

/// Words that may start what a secret is for, between the announcing word and "is" ("the
/// password for the wifi is …", "PIN of my card is …"); any other word there ("password
/// manager is …") means the sentence is about something else.
const FOR_WHAT: [&str; 8] = ["for", "to", "of", "on", "at", "from", "in", "with"];

/// Words between the announcing word and "is" that keep it a secret ("password for the
/// wifi is …"); any other word means the sentence is about something else.
const LINKING: [&str; 7] = ["is", "was", "are", "=", ":", "-", "equals"];

/// Words after "is" that say where a secret is, not what it is ("my PIN is in my wallet").
const NOT_A_VALUE: [&str; 50] = [
    "in",
    "on",
    "at",
    "the",
    "a",
    "an",
    "my",
    "stored",
    "saved",
    "written",
    "kept",
    "somewhere",
    "secret",
    "safe",
    "too",
    "not",
    "still",
    "wrong",
    "right",
    "incorrect",
    "expired",
    "changed",
    "weak",
    "strong",
    "annoying",
    "required",
    "needed",
    "missing",
    "invalid",
    "valid",
    "new",
    "old",
    "same",
    "different",
    "easy",
    "hard",
    "long",
    "short",
    "reset",
    "so",
    "very",
    "really",
    "just",
    "also",
    "now",
    "what",
    "the",
    "it",
    "that",
    "this",
];

/// Known token shapes: the prefixes providers put on their keys.
const TOKEN_PREFIXES: [&str; 10] = [
    "sk-",
    "sk_live_",
    "rk_live_",
    "ghp_",
    "gho_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "glpat-",
    "AKIA",
];

/// Every secret in `text`: byte ranges on character boundaries, in order, with their kind.
pub fn secret_spans(text: &str) -> Vec<(Range<usize>, SecretKind)> {
    let mut found = Vec::new();
    found.extend(private_key_block(text).map(|r| (r, SecretKind::Key)));
    let words = words(text);
    for (i, (range, core)) in words.iter().enumerate() {
        // "password=hunter2", "pin:4921": the announcing word and the value in one.
        let raw = &text[range.clone()];
        if let Some(at) = raw.find(['=', ':'])
            && at + 1 < raw.len()
            && ANNOUNCING
                .iter()
                .any(|(w, _)| raw[..at].eq_ignore_ascii_case(w))
        {
            found.push((range.start + at + 1..range.end, SecretKind::Password));
            continue;
        }
        if let Some(announced) = announced_value(text, &words, i) {
            found.push(announced);
        }
        if looks_like_token(core) {
            found.push((range.clone(), SecretKind::Key));
        }
    }
    found.extend(
        card_numbers(text)
            .into_iter()
            .map(|r| (r, SecretKind::CardNumber)),
    );
    found.sort_by_key(|(r, _)| (r.start, r.end));
    found
}

/// A PEM private key block, from `-----BEGIN` to the end of its `-----END …-----` line (or
/// of the text, when it is cut off).
fn private_key_block(text: &str) -> Option<Range<usize>> {
    let start = text.find("-----BEGIN")?;
    if !text[start..].contains("PRIVATE KEY") {
        return None;
    }
    let end = text[start..]
        .find("-----END")
        .and_then(|e| {
            let after = start + e + "-----END".len();
            text[after..].find("-----").map(|x| after + x + 5)
        })
        .unwrap_or(text.len());
    Some(start..end)
}

/// When word `i` announces a secret ("my password is X", "password: X", "the wifi password
/// for guests is X", "my pin 1234"), the value it announces and its kind.
fn announced_value(
    text: &str,
    words: &[(Range<usize>, &str)],
    i: usize,
) -> Option<(Range<usize>, SecretKind)> {
    let (range, core) = &words[i];
    let lower = core.to_lowercase().replace('’', "'");
    let bare = lower.trim_end_matches([':', '=']);
    // "my password's X": the verb in the word.
    let (bare, inline_is) = match bare.strip_suffix("'s") {
        Some(b) => (b, true),
        None => (bare, false),
    };
    let qualified = QUALIFIED.contains(&bare)
        && i > 0
        && QUALIFIERS.contains(&words[i - 1].1.to_lowercase().as_str());
    let kind = *ANNOUNCING
        .iter()
        .find(|(w, _)| bare == *w)
        .map(|(_, k)| k)
        .or(qualified.then_some(&SecretKind::Key))?;
    let mut inline = inline_is || text[range.clone()].ends_with([':', '=']);
    let mut j = i + 1;
    // "PIN code is", "pin number:", "pass phrase is": still its name.
    while !inline
        && let Some((r, w)) = words.get(j)
        && NAME_GOES_ON.contains(&w.to_lowercase().as_str())
    {
        inline = text[r.clone()].ends_with([':', '=']);
        j += 1;
    }
    let (mut linked, mut j) = linking_verb(text, words, inline, j);
    // "my pin 1234", "password hunter2": no verb, but a value that has digits.
    let bare_value = !linked
        && words
            .get(i + 1)
            .is_some_and(|(_, v)| v.len() >= 4 && v.chars().any(|c| c.is_ascii_digit()));
    if bare_value {
        linked = true;
        j = i + 1;
    }
    let (value, core) = words.get(j).filter(|_| linked)?;
    if NOT_A_VALUE.contains(&core.to_lowercase().as_str()) || core.is_empty() {
        return None;
    }
    // A password runs to the end of its clause ("correct horse battery staple"); a key or
    // code is one word. Either keeps its punctuation ("tr0ub4dor!").
    let rest = &text[value.start..];
    let end = if kind == SecretKind::Password && !bare_value {
        [". ", ", ", "; ", "\n", " and ", " but "]
            .iter()
            .filter_map(|b| rest.find(b))
            .min()
            .map_or(text.len(), |e| value.start + e)
    } else {
        rest.find(char::is_whitespace)
            .map_or(text.len(), |e| value.start + e)
    };
    Some((value.start..end, kind))
}

/// From word `j` after a secret's name: whether a linking verb or a colon ties the name to a
/// value (it already is when `inline`), passing up to four words of what it is for ("for the
/// wifi", "to my bank"), and the index of the value's word.
fn linking_verb(
    text: &str,
    words: &[(Range<usize>, &str)],
    inline: bool,
    mut j: usize,
) -> (bool, usize) {
    let mut linked = inline;
    let mut skipped = 0;
    while !linked && j < words.len() && skipped <= 4 {
        let w = words[j].1.to_lowercase();
        let raw = &text[words[j].0.clone()];
        if LINKING.contains(&w.as_str()) || LINKING.contains(&raw) {
            linked = true;
        } else if skipped == 0 && !FOR_WHAT.contains(&w.as_str()) {
            break;
        } else if raw.ends_with([':', '=']) {
            linked = true;
            j += 1;
            break;
        } else {
            skipped += 1;
        }
        j += 1;
    }
    (linked, j)
}

/// `text` with every secret replaced by `REDACTED`.
pub fn redact_secrets(text: &str) -> String {
    let spans: Vec<Range<usize>> = secret_spans(text).into_iter().map(|(r, _)| r).collect();
    if spans.is_empty() {
        return text.to_string();
    }
    super::link::replace_spans(text, &spans, REDACTED)
}

/// Whitespace-separated words: their byte range (trailing punctuation other than ':' and
/// '=' left out) and their core (punctuation trimmed both sides).
fn words(text: &str) -> Vec<(Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                let word = &text[s..i];
                let kept = word.trim_end_matches(['.', ',', '!', '?', ';', ')', '"', '\'']);
                let core =
                    kept.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '-');
                if !kept.is_empty() {
                    out.push((s..s + kept.len(), core));
                }
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

/// An API key or token: a provider's prefix, a JWT, or a long mix of upper and lower case
/// letters and digits (a commit hash, all lower case, is not one).
fn looks_like_token(core: &str) -> bool {
    if core.len() < 16 || core.contains("://") {
        return false;
    }
    if TOKEN_PREFIXES.iter().any(|p| core.starts_with(p)) && core.len() >= 20 {
        return true;
    }
    if core.starts_with("eyJ") && core.matches('.').count() == 2 {
        return true;
    }
    let upper = core.chars().filter(char::is_ascii_uppercase).count();
    let lower = core.chars().filter(char::is_ascii_lowercase).count();
    let digits = core.chars().filter(char::is_ascii_digit).count();
    let plain = core
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    plain && core.len() >= 24 && upper >= 2 && lower >= 2 && digits >= 2
}

/// Runs of 13 to 19 digits (spaces and dashes between groups allowed) that pass the Luhn
/// check, as card numbers do.
fn card_numbers(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() || (i > 0 && bytes[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        let mut digits = Vec::new();
        let mut end = i;
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii_digit() {
                digits.push(b - b'0');
                end = i + 1;
            } else if !((b == b' ' || b == b'-')
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
            {
                break;
            }
            i += 1;
        }
        let alone = !bytes.get(end).is_some_and(u8::is_ascii_alphanumeric);
        if (13..=19).contains(&digits.len()) && alone && luhn(&digits) {
            out.push(start..end);
        }
        i = i.max(start + 1);
    }
    out
}

fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guessable_secrets() {
        assert!(guessable("aaaaaaaaaaaaaaaaaaaaaaaa"));
        assert!(guessable("12121212121212121212"));
        assert!(guessable(" short-token-1 "));
        assert!(!guessable("admin-token-0123456789abcdef"));
        assert!(!guessable("9f86d081884c7d659a2feaa0c55ad015"));
        // Outer spaces do not count.
        assert!(guessable("   abcdefg        "));
    }

    fn secrets(text: &str) -> Vec<&str> {
        secret_spans(text)
            .into_iter()
            .map(|(r, _)| &text[r])
            .collect()
    }

    #[test]
    fn announced_values_keys_and_cards_are_found() {
        assert_eq!(secrets("my password is hunter2"), ["hunter2"]);
        assert_eq!(secrets("My Password: hunter2."), ["hunter2."]);
        assert_eq!(secrets("password=hunter2"), ["hunter2"]);
        assert_eq!(
            secrets("the wifi password for guests is tr0ub4dor!"),
            ["tr0ub4dor!"]
        );
        assert_eq!(secrets("my PIN is 4921"), ["4921"]);
        assert_eq!(secrets("api key: abc123"), ["abc123"]);
        assert_eq!(
            secrets("use sk-proj-AbCdEfGhIjKlMnOpQrStUv12 for the bot"),
            ["sk-proj-AbCdEfGhIjKlMnOpQrStUv12"]
        );
        assert_eq!(
            secrets("my card is 4111 1111 1111 1111, expires 12/29"),
            ["4111 1111 1111 1111"]
        );
        assert_eq!(secrets("card 4111-1111-1111-1111"), ["4111-1111-1111-1111"]);
        assert_eq!(
            secrets("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- ok"),
            ["-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"]
        );
        assert_eq!(
            redact_secrets("my password is hunter2, ok?"),
            "my password is [secret removed], ok?"
        );
        assert_eq!(
            secrets("my password is correct horse battery staple"),
            ["correct horse battery staple"]
        );
        assert_eq!(secrets("pw is hunter2"), ["hunter2"]);
        assert_eq!(secrets("my password's hunter2"), ["hunter2"]);
        assert_eq!(secrets("my pin 1234"), ["1234"]);
        assert_eq!(secrets("the wifi key is Zebra77"), ["Zebra77"]);
        assert_eq!(secrets("the door code is 4821"), ["4821"]);
        assert_eq!(secrets("my PIN code is 1234"), ["1234"]);
        assert_eq!(secrets("my pin number is 5555"), ["5555"]);
        assert_eq!(secrets("pin number: 5555"), ["5555"]);
    }

    #[test]
    fn ordinary_sentences_are_not_secrets() {
        for text in [
            "I need to change my password on Friday",
            "my PIN is in my wallet",
            "the key is to start early",
            "I love Rust",
            "my timezone is UTC+1",
            "the release commit is 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
            "call me at 555 123 4567",
            "order 1234567890123 shipped",
            "see https://example.com/AbCdEfGhIjKlMnOpQrStUv12XyZ99",
            "my favourite number is 42",
            "my password manager is Bitwarden",
            "2FA is annoying",
            "the password was wrong",
            "the pin on the map is wrong",
            "what is the wifi password?",
            "I forgot the password again",
            "I changed my password 3 times",
        ] {
            assert_eq!(secrets(text), Vec::<&str>::new(), "{text}");
        }
    }
}
