//! Electing the one process that may do a task only one may do (Telegram allows one
//! `getUpdates` consumer per token): a lease in the database, held while renewed, taken over
//! when its holder stops renewing it (or at once when the holder is a dead process on this
//! machine), given up at shutdown.

use crate::domain::Clock;
use crate::store::{Store, StoreError, holder_is_gone};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// The seam: a lease the adapter holds while it works.
#[async_trait]
pub trait Lease: Send + Sync {
    /// Takes or renews the lease for this process: true while it is ours.
    async fn hold(&self) -> Result<bool, StoreError>;
    /// Gives it up, so another process takes over at once.
    async fn release(&self) -> Result<(), StoreError>;
    /// How long a hold lasts without renewal.
    fn ttl(&self) -> Duration;
}

/// A lease in the store's `leases` table.
pub struct StoreLease {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    name: String,
    holder: String,
    ttl: Duration,
}

impl StoreLease {
    /// The lease `name`, held as `holder` for `ttl` at a time.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        name: String,
        holder: String,
        ttl: Duration,
    ) -> StoreLease {
        StoreLease {
            store,
            clock,
            name,
            holder,
            ttl,
        }
    }
}

#[async_trait]
impl Lease for StoreLease {
    async fn hold(&self) -> Result<bool, StoreError> {
        let now = self.clock.now();
        let ttl = chrono::TimeDelta::from_std(self.ttl).unwrap_or(chrono::TimeDelta::MAX);
        let (name, holder, until) = (&self.name, &self.holder, now + ttl);
        if self
            .store
            .hold_lease(name, holder, now, until, None)
            .await?
        {
            return Ok(true);
        }
        // Held by another: one that is a dead process of this machine is taken over without
        // waiting for its lease to end.
        match self.store.lease_holder(name).await? {
            Some((other, _)) if other != *holder && holder_is_gone(&other) => {
                let gone = Some(other.as_str());
                self.store.hold_lease(name, holder, now, until, gone).await
            }
            _ => Ok(false),
        }
    }

    async fn release(&self) -> Result<(), StoreError> {
        self.store.release_lease(&self.name, &self.holder).await
    }

    fn ttl(&self) -> Duration {
        self.ttl
    }
}
