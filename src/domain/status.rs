//! What each running platform adapter last said about its connection: written by the adapters,
//! read by `/readyz` and `engram status`. Errors are kept as the adapters log them (secrets
//! already removed).

use super::Platform;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
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

/// The gateway shards a platform runs in this process (Discord): which, of how many, and
/// which of them are connected now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Shards {
    /// Shards of the whole bot.
    pub total: u32,
    /// The ones this process runs.
    pub runs: BTreeSet<u32>,
    /// The ones connected now.
    pub connected: BTreeSet<u32>,
}

#[derive(Debug, Default)]
struct Table {
    connections: BTreeMap<&'static str, Connection>,
    shards: BTreeMap<&'static str, Shards>,
}

/// The connections of this process's platforms; clones share one table.
#[derive(Debug, Clone, Default)]
pub struct PlatformStatus {
    inner: Arc<Mutex<Table>>,
}

impl PlatformStatus {
    /// Records `platform`'s connection now.
    pub fn set(&self, platform: Platform, connection: Connection) {
        let mut t = self.inner.lock().expect("status lock");
        // Failed or stopped: none of its shards is connected any more.
        if matches!(
            connection,
            Connection::Failed { .. } | Connection::Stopped | Connection::Standby
        ) && let Some(s) = t.shards.get_mut(platform.as_str())
        {
            s.connected.clear();
        }
        t.connections.insert(platform.as_str(), connection);
    }

    /// `platform` runs these shards of `total` here: it is connected once every one of them
    /// is (`shard_connected`), and not while one is away (`shard_disconnected`).
    pub fn runs_shards(&self, platform: Platform, runs: impl IntoIterator<Item = u32>, total: u32) {
        let shards = Shards {
            total,
            runs: runs.into_iter().collect(),
            connected: BTreeSet::new(),
        };
        self.inner
            .lock()
            .expect("status lock")
            .shards
            .insert(platform.as_str(), shards);
    }

    /// Shard `id` of `platform` is connected: the platform is, once all its shards here are
    /// (a platform without shards declared, at once).
    pub fn shard_connected(&self, platform: Platform, id: u32) {
        let mut t = self.inner.lock().expect("status lock");
        let all = match t.shards.get_mut(platform.as_str()) {
            Some(s) => {
                s.connected.insert(id);
                s.runs.is_subset(&s.connected)
            }
            None => true,
        };
        let connection = if all {
            Connection::Connected { since: Utc::now() }
        } else {
            Connection::Connecting
        };
        let current = t.connections.get(platform.as_str());
        if !(all && matches!(current, Some(Connection::Connected { .. }))) {
            t.connections.insert(platform.as_str(), connection);
        }
    }

    /// Shard `id` of `platform` lost its connection (it reconnects by itself): the platform
    /// is connecting again until it is back.
    pub fn shard_disconnected(&self, platform: Platform, id: u32) {
        let mut t = self.inner.lock().expect("status lock");
        if let Some(s) = t.shards.get_mut(platform.as_str()) {
            s.connected.remove(&id);
        }
        if matches!(
            t.connections.get(platform.as_str()),
            Some(Connection::Connected { .. })
        ) {
            t.connections
                .insert(platform.as_str(), Connection::Connecting);
        }
    }

    /// The shards of each platform that declared them.
    pub fn shards(&self) -> BTreeMap<&'static str, Shards> {
        self.inner.lock().expect("status lock").shards.clone()
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
        self.inner.lock().expect("status lock").connections.clone()
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

    #[test]
    fn a_platform_with_shards_is_connected_when_all_of_them_are() {
        let s = PlatformStatus::default();
        s.runs_shards(Platform::Discord, [2, 3], 4);
        s.set(Platform::Discord, Connection::Connecting);
        s.shard_connected(Platform::Discord, 2);
        assert!(!s.all_connected(), "shard 3 is not there yet");
        s.shard_connected(Platform::Discord, 3);
        assert!(s.all_connected());
        let since = s.all()[Platform::Discord.as_str()].clone();
        s.shard_connected(Platform::Discord, 3);
        assert_eq!(
            s.all()[Platform::Discord.as_str()],
            since,
            "connected since the first time"
        );
        assert_eq!(
            s.shards()[Platform::Discord.as_str()],
            Shards {
                total: 4,
                runs: [2, 3].into(),
                connected: [2, 3].into()
            }
        );
        s.shard_disconnected(Platform::Discord, 2);
        assert!(!s.all_connected());
        assert_eq!(s.shards()[Platform::Discord.as_str()].connected, [3].into());
        s.shard_connected(Platform::Discord, 2);
        assert!(s.all_connected(), "back");
        s.failed(Platform::Discord, "gone".into());
        assert!(s.shards()[Platform::Discord.as_str()].connected.is_empty());
        // A platform without shards is connected by its first one.
        s.shard_connected(Platform::Telegram, 0);
        assert!(matches!(
            s.all()[Platform::Telegram.as_str()],
            Connection::Connected { .. }
        ));
    }
}
