//! Fills of in-process caches that an invalidation always wins against: a filler takes the
//! epoch (`begin_fill`) before it reads what it will cache and inserts with `fill`, which
//! drops its own insert when an invalidation happened meanwhile. An invalidation counts
//! (`invalidated`) after its change is stored and before it clears the caches, so a value
//! read before a forget never outlives it.

use moka::sync::Cache;
use std::sync::atomic::{AtomicU64, Ordering};

/// The count of invalidations of some caches.
#[derive(Debug, Default)]
pub struct Invalidations(AtomicU64);

/// The epoch a fill started in (from `Invalidations::begin_fill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillEpoch(u64);

impl Invalidations {
    /// Call before reading what will be cached.
    pub fn begin_fill(&self) -> FillEpoch {
        FillEpoch(self.0.load(Ordering::SeqCst))
    }

    /// One more invalidation: call after the change is stored and before the caches clear.
    pub fn invalidated(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// Caches `value` under `key` unless an invalidation happened since `since`; then the
    /// value may be stale, and it is not kept (the next lookup reads it again).
    pub fn fill<K, V>(&self, cache: &Cache<K, V>, since: FillEpoch, key: K, value: V)
    where
        K: std::hash::Hash + Eq + Send + Sync + Clone + 'static,
        V: Clone + Send + Sync + 'static,
    {
        self.fill_racing(cache, since, key, value, || {});
    }

    /// `fill`, running `between` after its first epoch check and before the insert: where an
    /// invalidation from another task can land (tests force it there).
    pub fn fill_racing<K, V>(
        &self,
        cache: &Cache<K, V>,
        since: FillEpoch,
        key: K,
        value: V,
        between: impl FnOnce(),
    ) where
        K: std::hash::Hash + Eq + Send + Sync + Clone + 'static,
        V: Clone + Send + Sync + 'static,
    {
        if self.0.load(Ordering::SeqCst) != since.0 {
            return;
        }
        between();
        cache.insert(key.clone(), value);
        // An invalidation that began between the check and the insert may have cleared
        // before the insert landed: take the insert back.
        if self.0.load(Ordering::SeqCst) != since.0 {
            cache.invalidate(&key);
        }
    }
}
