//! In-process moka caches of the memory tier, keyed by what they depend on: today's day summaries
//! by (scope, date, hour) with a 1-hour TTL, past days by (scope, date) in a permanent LRU,
//! history summaries by (scope, person, end date), merged contexts by content hash, and facts
//! by (person, scope), invalidated on write here and, on PostgreSQL, on writes by any other
//! process (`MemoryManager::follow_changes`). Degraded (offline-fallback) results live at most an
//! hour so the LLM gets another chance.
//!
//! Fills are race-free against invalidation: a filler takes an epoch (`begin_fill`) before it
//! reads the store and inserts with `fill`, which drops its own insert when an invalidation
//! (`clear`, `invalidate_facts`) happened meanwhile. An invalidation bumps the epoch after the
//! store write and before it clears, so a value read before a forget can never outlive it.

use crate::domain::PersonId;
pub use crate::domain::fills::FillEpoch;
use crate::domain::fills::Invalidations;
use crate::store::FactsRecord;
use chrono::NaiveDate;
use moka::sync::Cache;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One scope's summaries of one day, person → text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DaySummaries {
    /// Each active person's summary.
    pub by_person: BTreeMap<PersonId, String>,
    /// Produced by the offline fallback rather than the LLM.
    pub degraded: bool,
}

/// A SHA-256 digest of a cached value's inputs.
pub type Hash = [u8; 32];

pub use crate::domain::hash_parts;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
/// Hits and misses of the summary and context caches.
pub struct CacheStats {
    /// Lookups answered from a cache.
    pub hits: u64,
    /// Lookups that had to build the value.
    pub misses: u64,
}

impl CacheStats {
    /// Hits over all lookups (0 when there were none).
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

/// Every cache of the memory tier.
pub struct MemoryCaches {
    /// Key: (scope, summarized day, absolute hour bucket of "now" = Unix hours).
    pub today: Cache<(String, NaiveDate, i64), Arc<DaySummaries>>,
    /// Past days' summaries, by (scope, day): they never change once final.
    pub past_days: Cache<(String, NaiveDate), Arc<DaySummaries>>,
    /// History summaries, by (scope, person, end day).
    pub history: Cache<(String, PersonId, NaiveDate), Arc<str>>,
    /// Merged contexts, by person and the hash of their inputs.
    pub merged: Cache<(PersonId, Hash), Arc<str>>,
    /// Facts, by (person, scope key).
    pub facts: Cache<(PersonId, String), Arc<FactsRecord>>,
    /// What others said about a person, every scope (filtered where it is shown).
    pub hearsay: Cache<PersonId, Arc<Vec<crate::store::Hearsay>>>,
    /// Offline-fallback results by a descriptive key, for at most an hour.
    pub degraded: Cache<String, Arc<str>>,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Counts every invalidation; a fill that saw an older epoch is not kept.
    epoch: Invalidations,
    /// Bumped by every `forgot` (a forget, a clear, a deleted message, here or in another
    /// process).
    purges: AtomicU64,
}

impl MemoryCaches {
    /// Caches holding at most `capacity` entries each.
    pub fn new(capacity: u64) -> MemoryCaches {
        let hour = Duration::from_secs(3600);
        MemoryCaches {
            today: Cache::builder()
                .max_capacity(capacity)
                .time_to_live(hour)
                .build(),
            past_days: Cache::builder().max_capacity(capacity).build(),
            history: Cache::builder().max_capacity(capacity).build(),
            merged: Cache::builder().max_capacity(capacity).build(),
            facts: Cache::builder().max_capacity(capacity).build(),
            hearsay: Cache::builder().max_capacity(capacity).build(),
            degraded: Cache::builder()
                .max_capacity(capacity)
                .time_to_live(hour)
                .build(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            epoch: Invalidations::default(),
            purges: AtomicU64::new(0),
        }
    }

    /// How many times something was forgotten (`forgot`): what was read before a change of
    /// it may show what is gone now.
    pub fn purges(&self) -> u64 {
        self.purges.load(Ordering::SeqCst)
    }

    /// Call before reading what will be cached.
    pub fn begin_fill(&self) -> FillEpoch {
        self.epoch.begin_fill()
    }

    /// Caches `value` under `key` unless an invalidation happened since `since`
    /// (`Invalidations::fill`).
    pub fn fill<K, V>(&self, cache: &Cache<K, V>, since: FillEpoch, key: K, value: V)
    where
        K: std::hash::Hash + Eq + Send + Sync + Clone + 'static,
        V: Clone + Send + Sync + 'static,
    {
        self.epoch.fill(cache, since, key, value);
    }

    /// Forgets what others said about one person (after a change to it).
    pub fn invalidate_hearsay(&self, person: PersonId) {
        self.epoch.invalidated();
        self.hearsay.invalidate(&person);
    }

    /// Forgets the cached facts of one person and scope (after a write to them).
    pub fn invalidate_facts(&self, person: PersonId, scope_key: String) {
        self.epoch.invalidated();
        self.facts.invalidate(&(person, scope_key));
    }

    /// Looks `key` up in `cache` (called `name` in the metrics), counting the hit or miss.
    pub fn get<K, V>(&self, name: &'static str, cache: &Cache<K, V>, key: &K) -> Option<V>
    where
        K: std::hash::Hash + Eq + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
    {
        let found = cache.get(key);
        crate::telemetry::cache_lookup(name, found.is_some());
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Hits and misses since the last reset.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// Starts counting hits and misses again.
    pub fn reset_stats(&self) {
        self.hits.store(0, Ordering::Relaxed);
        self.misses.store(0, Ordering::Relaxed);
    }

    /// Something was forgotten (here or in another process): counted (`purges`), and
    /// everything cached goes (`clear`).
    pub fn forgot(&self) {
        self.forgetting();
        self.clear();
    }

    /// A forget begins here: counted (`purges`) before it removes anything, so an answer
    /// made meanwhile knows.
    pub fn forgetting(&self) {
        self.purges.fetch_add(1, Ordering::SeqCst);
    }

    /// Drops everything: after a change that forgets nothing (a share, a link), and for
    /// benchmarks that measure cold paths.
    pub fn clear(&self) {
        self.epoch.invalidated();
        self.today.invalidate_all();
        self.past_days.invalidate_all();
        self.history.invalidate_all();
        self.merged.invalidate_all();
        self.facts.invalidate_all();
        self.hearsay.invalidate_all();
        self.degraded.invalidate_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_hashes_are_unambiguous() {
        assert_ne!(hash_parts(&["ab", "c"]), hash_parts(&["a", "bc"]));
        assert_eq!(hash_parts(&["x", ""]), hash_parts(&["x", ""]));
    }

    /// The two orders of a fill racing a forget, forced: the value read before the forget
    /// never stays cached.
    #[test]
    fn a_fill_that_raced_an_invalidation_is_not_kept() {
        let c = MemoryCaches::new(10);
        let key = (PersonId(1), "dm:1".to_string());
        let stale = Arc::new(FactsRecord {
            text: "my salary is 90k".into(),
            version: 1,
            updated_at: None,
        });
        // Fill started, then the forget (store write + invalidation), then the fill lands.
        let since = c.begin_fill();
        c.invalidate_facts(PersonId(1), "dm:1".into());
        c.fill(&c.facts, since, key.clone(), stale.clone());
        assert!(
            c.facts.get(&key).is_none(),
            "a fill older than the forget was kept"
        );
        // The fill lands first, then the forget: the forget removes it.
        let since = c.begin_fill();
        c.fill(&c.facts, since, key.clone(), stale.clone());
        assert!(
            c.facts.get(&key).is_some(),
            "positive control: an undisturbed fill is kept"
        );
        c.clear();
        assert!(c.facts.get(&key).is_none());
        // Any invalidation counts, whatever it named.
        let since = c.begin_fill();
        c.invalidate_facts(PersonId(2), "dm:2".into());
        c.fill(&c.facts, since, key.clone(), stale.clone());
        assert!(c.facts.get(&key).is_none());
        // The inner window: the fill's check passed, then the forget cleared, then the
        // insert landed. The check after the insert takes it back.
        let since = c.begin_fill();
        c.epoch
            .fill_racing(&c.facts, since, key.clone(), stale, || c.clear());
        assert!(
            c.facts.get(&key).is_none(),
            "an insert that raced a clear was kept"
        );
    }

    #[test]
    fn lookups_are_counted() {
        let c = MemoryCaches::new(10);
        c.merged.insert((PersonId(1), [0; 32]), Arc::from("m"));
        assert!(
            c.get("merged", &c.merged, &(PersonId(1), [0; 32]))
                .is_some()
        );
        assert!(
            c.get("merged", &c.merged, &(PersonId(2), [0; 32]))
                .is_none()
        );
        assert_eq!(c.stats(), CacheStats { hits: 1, misses: 1 });
        assert_eq!(c.stats().hit_ratio(), 0.5);
        c.reset_stats();
        assert_eq!(c.stats(), CacheStats::default());
    }

    /// What others said about one person is dropped for that person only, and a fill that
    /// began before the drop is not kept.
    #[test]
    fn hearsay_is_invalidated_per_person() {
        let c = MemoryCaches::new(10);
        c.hearsay.insert(PersonId(1), Arc::new(Vec::new()));
        c.hearsay.insert(PersonId(2), Arc::new(Vec::new()));
        let since = c.begin_fill();
        c.invalidate_hearsay(PersonId(1));
        assert!(c.hearsay.get(&PersonId(1)).is_none());
        assert!(
            c.hearsay.get(&PersonId(2)).is_some(),
            "another person's stays"
        );
        c.fill(&c.hearsay, since, PersonId(1), Arc::new(Vec::new()));
        assert!(
            c.hearsay.get(&PersonId(1)).is_none(),
            "the older fill is dropped"
        );
    }
}
