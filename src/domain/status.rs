//! What each running platform adapter last said about its connection: written by the adapters,
//! read by `/readyz` and `engram status`. Errors are kept as the adapters log them (secrets
//! already removed).

use super::Platform;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
/// One platform's connection.
pub enum Connection {
    /// Started, not connected yet.
    Connecting,
    /// Connected and receiving.
    Connected {
        /// Since when.
        since: DateTime<Utc>,
    },
    /// Not connected: the last error (retrying, or stopped for good).
    Failed {
        /// What went wrong, as logged.
        error: String,
        /// When.
        at: DateTime<Utc>,
    },
    /// Stopped on request (shutdown).
    Stopped,
    /// Ready to take over: another process does this platform's work now (Telegram's one
    /// poller, elected by a lease).
    Standby,
}

/// The connections of this process's platforms; clones share one table.
#[derive(Debug, Clone, Default)]
pub struct PlatformStatus {
    inner: Arc<Mutex<BTreeMap<&'static str, Connection>>>,
}

impl PlatformStatus {
    /// Records `platform`'s connection now.
    pub fn set(&self, platform: Platform, connection: Connection) {
        self.inner
            .lock()
            .expect("status lock")
            .insert(platform.as_str(), connection);
    }

    /// `platform` is connected from now on.
    pub fn connected(&self, platform: Platform) {
        self.set(platform, Connection::Connected { since: Utc::now() });
    }

    /// `platform` is not connected: `error` says why (as logged, secrets removed).
    pub fn failed(&self, platform: Platform, error: String) {
        self.set(
            platform,
            Connection::Failed {
                error,
                at: Utc::now(),
            },
        );
    }

    /// Every platform started in this process and its connection.
    pub fn all(&self) -> BTreeMap<&'static str, Connection> {
        self.inner.lock().expect("status lock").clone()
    }

    /// True when at least one platform runs and every one is connected.
    pub fn all_connected(&self) -> bool {
        let all = self.all();
        !all.is_empty()
            && all
                .values()
                .all(|c| matches!(c, Connection::Connected { .. } | Connection::Standby))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_every_platform_is_connected() {
        let s = PlatformStatus::default();
        assert!(!s.all_connected(), "nothing started is not ready");
        s.set(
            Platform::Telegram,
            Connection::Connected { since: Utc::now() },
        );
        assert!(s.all_connected());
        s.set(Platform::Discord, Connection::Connecting);
        assert!(!s.all_connected());
        s.clone().set(
            Platform::Discord,
            Connection::Connected { since: Utc::now() },
        );
        assert!(s.all_connected(), "clones share the table");
        s.set(Platform::Telegram, Connection::Standby);
        assert!(s.all_connected(), "a process standing by is ready");
        s.set(
            Platform::Telegram,
            Connection::Failed {
                error: "x".into(),
                at: Utc::now(),
            },
        );
        assert!(!s.all_connected());
    }
}
