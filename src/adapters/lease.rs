//! Electing the one process that may do a task only one may do (Telegram allows one
//! `getUpdates` consumer per token; Discord sends a shard's events to each connection that runs
//! it): a lease in the database, held while renewed, taken over when its holder stops renewing
//! it (or at once when the holder is a dead process on this machine), given up at shutdown.

use crate::domain::status::{Connection, PlatformStatus};
use crate::domain::{Clock, Platform};
use crate::store::{Store, StoreError, holder_is_gone};
use async_trait::async_trait;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::{info, warn};

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

/// Several leases held as one (a Discord process's shards): held only when every one is, in
/// order; when one is not, those taken by the same call are given up again, so a process
/// never keeps shards it does not run, and two processes whose ranges overlap never wait on
/// each other for good.
pub struct AllOf(pub Vec<Arc<dyn Lease>>);

#[async_trait]
impl Lease for AllOf {
    async fn hold(&self) -> Result<bool, StoreError> {
        for lease in &self.0 {
            match lease.hold().await {
                Ok(true) => {}
                // Another process holds one: every one of ours is given up (a release only
                // removes this process's own), so it never keeps shards it does not run.
                Ok(false) => {
                    if let Err(e) = self.release().await {
                        warn!(error = %e, "leases were not given up: they expire");
                    }
                    return Ok(false);
                }
                // A store error says nothing about who holds what: nothing is given up (a
                // renewal keeps what it renewed), and the keeper's deadline decides.
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    async fn release(&self) -> Result<(), StoreError> {
        let mut first = Ok(());
        for lease in &self.0 {
            if let Err(e) = lease.release().await
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }

    fn ttl(&self) -> Duration {
        self.0
            .iter()
            .map(|l| l.ttl())
            .min()
            .unwrap_or(Duration::from_secs(30))
    }
}

/// Runs `work` on `platform` in one process of several at a time, the one holding `lease`.
/// The others stand by (`Connection::Standby`), trying for the lease every third of its time;
/// the one working renews it as often, and its work is told to stop (through the receiver it
/// is given) when another process holds the lease or no renewal worked for two thirds of its
/// time (before another may take it). At shutdown the lease is given up, so another process
/// takes over at once; a killed process's lease expires (or is taken at once by a process of
/// its machine).
pub async fn run_elected<E, Fut>(
    platform: Platform,
    status: PlatformStatus,
    lease: Arc<dyn Lease>,
    mut shutdown: watch::Receiver<bool>,
    mut work: impl FnMut(watch::Receiver<bool>) -> Fut,
) -> Result<(), E>
where
    Fut: Future<Output = Result<(), E>>,
{
    let tick = lease.ttl() / 3;
    loop {
        status.set(platform, Connection::Standby);
        loop {
            match lease.hold().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    warn!(platform = platform.as_str(), error = %e, "the lease could not be read")
                }
            }
            tokio::select! {
                _ = shutdown.changed() => return Ok(()),
                _ = tokio::time::sleep(tick) => {}
            }
        }
        info!(
            platform = platform.as_str(),
            "this process holds the lease: working"
        );
        let (stop, stopped) = watch::channel(false);
        let keeper = tokio::spawn(keep(lease.clone(), shutdown.clone(), stop));
        let result = work(stopped).await;
        keeper.abort();
        // Whatever ended the work, what this process still holds is given up (a release only
        // removes its own): another process takes over at once.
        if let Err(e) = lease.release().await {
            warn!(platform = platform.as_str(), error = %e, "the lease was not given up: it expires");
        }
        if *shutdown.borrow() || result.is_err() {
            return result;
        }
        warn!(
            platform = platform.as_str(),
            "another process holds the lease now; standing by"
        );
    }
}

/// Renews `lease` every third of its time; turns `stop` true at shutdown, when another
/// process holds the lease, or when no renewal worked for two thirds of its time.
pub async fn keep(
    lease: Arc<dyn Lease>,
    mut shutdown: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
) {
    let tick = lease.ttl() / 3;
    let mut held = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            _ = tokio::time::sleep(tick) => {}
        }
        // The lease runs from the moment it was asked for. A renewal that does not come back
        // (a database cut off: no error, no answer) stops the work at two thirds of the lease
        // all the same, before another process may take it.
        let asked = tokio::time::Instant::now();
        match tokio::time::timeout_at(held + tick * 2, lease.hold()).await {
            Ok(Ok(true)) => held = asked,
            Ok(Ok(false)) => break,
            Ok(Err(e)) => {
                warn!(error = %e, "the lease could not be renewed");
                if held.elapsed() >= tick * 2 {
                    break;
                }
            }
            Err(_) => {
                warn!("the lease renewal did not answer in time: the work stops");
                break;
            }
        }
    }
    let _ = stop.send(true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A lease that answers each hold as told (then true), counting releases.
    struct Scripted {
        answers: std::sync::Mutex<Vec<Result<bool, ()>>>,
        released: AtomicUsize,
    }

    impl Scripted {
        fn new(answers: Vec<Result<bool, ()>>) -> Arc<Scripted> {
            Arc::new(Scripted {
                answers: std::sync::Mutex::new(answers),
                released: AtomicUsize::new(0),
            })
        }
    }

    #[async_trait]
    impl Lease for Scripted {
        async fn hold(&self) -> Result<bool, StoreError> {
            let mut answers = self.answers.lock().unwrap();
            match if answers.is_empty() {
                Ok(true)
            } else {
                answers.remove(0)
            } {
                Ok(held) => Ok(held),
                Err(()) => Err(StoreError::Conflict {
                    what: "the database did not answer".into(),
                }),
            }
        }
        async fn release(&self) -> Result<(), StoreError> {
            self.released.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
        fn ttl(&self) -> Duration {
            Duration::from_secs(30)
        }
    }

    #[tokio::test]
    async fn shards_are_held_all_or_none_and_an_error_gives_nothing_up() {
        // Another process holds the second shard: the first is given up again.
        let (a, b) = (Scripted::new(vec![]), Scripted::new(vec![Ok(false)]));
        let all = AllOf(vec![a.clone(), b.clone()]);
        assert!(!all.hold().await.unwrap());
        assert_eq!(a.released.load(Ordering::SeqCst), 1, "none kept");
        // Positive control: both free, both held, nothing given up.
        let (a, b) = (Scripted::new(vec![]), Scripted::new(vec![]));
        let all = AllOf(vec![a.clone(), b.clone()]);
        assert!(all.hold().await.unwrap());
        assert_eq!(a.released.load(Ordering::SeqCst), 0);
        // A store error on a renewal gives nothing up (what was renewed stays renewed).
        let (a, b) = (Scripted::new(vec![]), Scripted::new(vec![Err(())]));
        let all = AllOf(vec![a.clone(), b.clone()]);
        assert!(all.hold().await.is_err());
        assert_eq!(a.released.load(Ordering::SeqCst), 0);
    }

    /// A lease whose first hold is granted and whose renewals never answer (a database cut
    /// off), or answer at once when `answers`.
    struct Unanswered {
        holds: AtomicUsize,
        answers: bool,
    }

    #[async_trait::async_trait]
    impl Lease for Unanswered {
        async fn hold(&self) -> Result<bool, StoreError> {
            if self.holds.fetch_add(1, Ordering::SeqCst) > 0 && !self.answers {
                std::future::pending::<()>().await;
            }
            Ok(true)
        }
        async fn release(&self) -> Result<(), StoreError> {
            Ok(())
        }
        fn ttl(&self) -> Duration {
            Duration::from_millis(300)
        }
    }

    #[tokio::test]
    async fn a_renewal_that_never_answers_stops_polling_before_the_lease_ends() {
        let lease = Arc::new(Unanswered {
            holds: AtomicUsize::new(0),
            answers: false,
        });
        assert!(lease.hold().await.unwrap(), "held when polling starts");
        let (stop, mut stopped) = watch::channel(false);
        let (_shutdown, running) = watch::channel(false);
        let started = tokio::time::Instant::now();
        // A guard, not a wait: without the deadline the keeper never returns.
        tokio::time::timeout(Duration::from_secs(30), keep(lease.clone(), running, stop))
            .await
            .expect("the keeper gives up");
        assert!(*stopped.borrow_and_update(), "polling told to stop");
        assert!(
            started.elapsed() < lease.ttl(),
            "stopped before the lease ends: {:?}",
            started.elapsed()
        );
        // Positive control: renewals that answer keep polling until the shutdown.
        let lease = Arc::new(Unanswered {
            holds: AtomicUsize::new(0),
            answers: true,
        });
        let (stop, stopped) = watch::channel(false);
        let (shutdown, running) = watch::channel(false);
        let keeper = tokio::spawn(keep(lease.clone(), running, stop));
        while lease.holds.load(Ordering::SeqCst) < 4 {
            tokio::task::yield_now().await;
        }
        assert!(!*stopped.borrow(), "renewed: still polling");
        shutdown.send(true).unwrap();
        keeper.await.unwrap();
    }
}
