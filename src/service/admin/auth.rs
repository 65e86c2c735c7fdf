//! Who may use the admin page: whoever shows the admin token (`ENGRAM_ADMIN_TOKEN`), as an
//! `Authorization: Bearer` header (scripts) or through the login form, which gives a session
//! cookie: the operator's name, when it ends, and a SHA-256 over both and the token. The store
//! keeps a hash of each open session's cookie (`Store::open_admin_session`): signing out ends
//! that session for every copy of the cookie, and changing the token ends every session.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::fmt;

/// The session cookie's name.
pub const COOKIE: &str = "engram_admin";
/// How long a login lasts.
pub const SESSION_HOURS: i64 = 12;
/// The fewest characters an admin token may have (`domain::secret::guessable`).
pub const MIN_TOKEN_CHARS: usize = 16;

/// Why the admin token was refused at start.
#[derive(Debug, thiserror::Error)]
#[error(
    "ENGRAM_ADMIN_TOKEN is too easy to guess: use {MIN_TOKEN_CHARS} characters or more, 8 of them different (e.g. `openssl rand -hex 24`)"
)]
pub struct WeakToken;

/// The admin token, kept to check logins and sign sessions.
#[derive(Clone)]
pub struct AdminAuth {
    token: String,
    hash: [u8; 32],
}

impl fmt::Debug for AdminAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminAuth(<token>)")
    }
}

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

/// Whether `name` may be an operator's name: 1 to 32 letters, digits, `-`, `_` or `.`.
pub fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.chars().count())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl AdminAuth {
    /// The admin page's login with `token`.
    pub fn new(token: &str) -> Result<AdminAuth, WeakToken> {
        let token = token.trim();
        if crate::domain::secret::guessable(token) {
            return Err(WeakToken);
        }
        Ok(AdminAuth {
            token: token.to_string(),
            hash: digest(&[token]),
        })
    }

    /// Whether `given` is the token. Hashes are compared, so the time taken says nothing
    /// about how close a guess was.
    pub fn token_matches(&self, given: &str) -> bool {
        digest(&[given.trim()]) == self.hash
    }

    fn signature(&self, name: &str, until: i64) -> String {
        let mac = digest(&[
            "engram-admin-session",
            &self.token,
            name,
            &until.to_string(),
        ]);
        mac.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A session cookie's value for `name`, from `now` for `SESSION_HOURS`.
    pub fn session(&self, name: &str, now: DateTime<Utc>) -> String {
        let until = Self::until(now);
        format!("{name}.{until}.{}", self.signature(name, until))
    }

    /// What the store keeps of a session cookie's value: a SHA-256 of it, hex.
    pub fn key(value: &str) -> String {
        digest(&["engram-admin-session-key", value])
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// When a session made at `now` ends (Unix seconds).
    pub fn until(now: DateTime<Utc>) -> i64 {
        (now + chrono::TimeDelta::hours(SESSION_HOURS)).timestamp()
    }

    /// The operator of a session cookie's value, while it lasts and is signed by this token.
    pub fn operator(&self, value: &str, now: DateTime<Utc>) -> Option<String> {
        let mut parts = value.rsplitn(3, '.');
        let (signature, until, name) = (parts.next()?, parts.next()?, parts.next()?);
        let until: i64 = until.parse().ok()?;
        let valid = valid_name(name)
            && now.timestamp() < until
            && digest(&[signature]) == digest(&[&self.signature(name, until)]);
        valid.then(|| name.to_string())
    }
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header
        .split(';')
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap()
    }

    #[test]
    fn a_session_is_the_operators_until_it_ends_and_only_under_its_token() {
        let auth = AdminAuth::new("correct horse battery staple").unwrap();
        let s = auth.session("ops", at(1_000));
        assert_eq!(auth.operator(&s, at(1_001)), Some("ops".into()));
        let end = 1_000 + SESSION_HOURS * 3600;
        assert_eq!(auth.operator(&s, at(end - 1)), Some("ops".into()));
        assert_eq!(auth.operator(&s, at(end)), None, "expired");
        let other = AdminAuth::new("another token of enough length").unwrap();
        assert_eq!(other.operator(&s, at(1_001)), None, "a new token ends it");
        // Another name or a later end under the same signature is refused.
        let sig = s.rsplit('.').next().unwrap();
        let forged = format!("root.{}.{sig}", end);
        assert_eq!(auth.operator(&forged, at(1_001)), None);
        let longer = format!("ops.{}.{sig}", end + 3600);
        assert_eq!(auth.operator(&longer, at(1_001)), None);
        for junk in ["", "ops", "ops.1", "a.b.c", "ops.x.y", "..", "ops..abc"] {
            assert_eq!(auth.operator(junk, at(1_001)), None, "{junk}");
        }
    }

    #[test]
    fn tokens_and_names() {
        assert!(AdminAuth::new("short").is_err());
        assert!(AdminAuth::new("   fifteen chars  ").is_err());
        assert!(AdminAuth::new(&"x".repeat(40)).is_err());
        let auth = AdminAuth::new("sixteen chars ok").unwrap();
        assert!(auth.token_matches("sixteen chars ok"));
        assert!(auth.token_matches(" sixteen chars ok\n"));
        assert!(!auth.token_matches("sixteen chars oK"));
        assert!(!auth.token_matches(""));
        assert!(valid_name("ops.team-1_a"));
        for bad in ["", "a b", "<x>", "é", &"x".repeat(33), "a;b"] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert_eq!(
            cookie("a=1; engram_admin=v.2.x; b=3", COOKIE),
            Some("v.2.x")
        );
        assert_eq!(cookie("xengram_admin=v", COOKIE), None);
    }
}
