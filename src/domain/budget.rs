//! What answers may cost: per-person and per-space limits on answers that may use the language
//! model or the embedder (per minute), a daily language-model token budget per space, and the
//! task-local `Payer` through which the model and embedder wrappers know whose answer they work
//! on. Jobs (summaries, extraction, indexing) run with no payer and are not limited here.

use crate::domain::{Clock, PersonId, SpaceId};
use chrono::NaiveDate;
use governor::clock::{Clock as RateClock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};
use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Whose answer the current task is making, and whether it may spend on the model and embedder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payer {
    pub person: PersonId,
    pub space: SpaceId,
    pub may_spend: bool,
}

tokio::task_local! {
    static PAYER: Payer;
}

/// Runs `work` as `payer`'s: every model and embedding call in it counts for them.
pub async fn paid_by<F: Future>(payer: Payer, work: F) -> F::Output {
    PAYER.scope(payer, work).await
}

/// The payer of the current task, if it works on someone's answer.
pub fn current_payer() -> Option<Payer> {
    PAYER.try_with(|p| *p).ok()
}

/// The limits, as configured (0 = none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSettings {
    pub answers_per_person_per_minute: u32,
    pub answers_per_space_per_minute: u32,
    /// Model tokens (prompt and completion) one space may spend on answers per UTC day.
    pub space_daily_budget: u64,
}

/// Whether an answer may spend now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Allowed,
    /// Too many answers in the last minute (by this person, or in this space).
    TooFast {
        retry_in: Duration,
    },
    /// The space has spent today's token budget.
    BudgetSpent,
}

/// An instant of the bot's `Clock`, in nanoseconds since 1970, for the rate limiters.
#[derive(Debug, Copy, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct At(u64);

impl std::ops::Add<Nanos> for At {
    type Output = At;
    fn add(self, other: Nanos) -> At {
        At(self.0.saturating_add(other.as_u64()))
    }
}

impl Reference for At {
    fn duration_since(&self, earlier: Self) -> Nanos {
        self.0.saturating_sub(earlier.0).into()
    }

    fn saturating_sub(&self, duration: Nanos) -> Self {
        At(self.0.saturating_sub(duration.as_u64()))
    }
}

/// The bot's clock as the rate limiters' time source (tests move it by hand).
#[derive(Clone)]
pub struct LimiterClock(Arc<dyn Clock>);

impl RateClock for LimiterClock {
    type Instant = At;
    fn now(&self) -> At {
        At(self.0.now().timestamp_nanos_opt().unwrap_or(0).max(0) as u64)
    }
}

type Keyed<K> = RateLimiter<K, DashMapStateStore<K>, LimiterClock, NoOpMiddleware<At>>;

/// A limiter of `per_minute` per key; None for 0 (no limit).
fn keyed<K: std::hash::Hash + Eq + Clone>(
    per_minute: u32,
    clock: &Arc<dyn Clock>,
) -> Option<Keyed<K>> {
    NonZeroU32::new(per_minute)
        .map(|n| Keyed::dashmap_with_clock(Quota::per_minute(n), LimiterClock(clock.clone())))
}

pub struct Limits {
    person: Option<Keyed<PersonId>>,
    space: Option<Keyed<SpaceId>>,
    daily_budget: u64,
    /// Tokens spent per space on its current day.
    spent: Mutex<HashMap<SpaceId, (NaiveDate, u64)>>,
    clock: Arc<dyn Clock>,
    admitted: AtomicU64,
}

impl Limits {
    pub fn new(settings: LimitSettings, clock: Arc<dyn Clock>) -> Limits {
        Limits {
            person: keyed(settings.answers_per_person_per_minute, &clock),
            space: keyed(settings.answers_per_space_per_minute, &clock),
            daily_budget: settings.space_daily_budget,
            spent: Mutex::new(HashMap::new()),
            clock,
            admitted: AtomicU64::new(0),
        }
    }

    /// Whether `person` may have an answer in `space` that spends now; an allowed answer
    /// counts towards both per-minute limits.
    pub fn admit(&self, person: PersonId, space: SpaceId) -> Admission {
        if self.daily_budget > 0 && self.spent_today(space) >= self.daily_budget {
            return Admission::BudgetSpent;
        }
        if self.admitted.fetch_add(1, Ordering::Relaxed) % 4096 == 4095 {
            self.forget_idle();
        }
        let now = LimiterClock(self.clock.clone()).now();
        if let Some(limiter) = &self.person
            && let Err(wait) = limiter.check_key(&person)
        {
            return Admission::TooFast {
                retry_in: wait.wait_time_from(now),
            };
        }
        if let Some(limiter) = &self.space
            && let Err(wait) = limiter.check_key(&space)
        {
            return Admission::TooFast {
                retry_in: wait.wait_time_from(now),
            };
        }
        Admission::Allowed
    }

    /// Records `tokens` spent by an answer in `space`.
    pub fn spend(&self, space: SpaceId, tokens: u64) {
        let today = self.clock.now().date_naive();
        let mut spent = self.spent.lock().expect("limits lock");
        let entry = spent.entry(space).or_insert((today, 0));
        if entry.0 != today {
            *entry = (today, 0);
        }
        entry.1 = entry.1.saturating_add(tokens);
    }

    /// Tokens `space` spent today (UTC).
    pub fn spent_today(&self, space: SpaceId) -> u64 {
        let today = self.clock.now().date_naive();
        let spent = self.spent.lock().expect("limits lock");
        spent
            .get(&space)
            .filter(|(day, _)| *day == today)
            .map_or(0, |(_, n)| *n)
    }

    /// Drops the state of people and spaces that have been quiet (bounded memory).
    fn forget_idle(&self) {
        if let Some(l) = &self.person {
            l.retain_recent();
        }
        if let Some(l) = &self.space {
            l.retain_recent();
        }
        let today = self.clock.now().date_naive();
        self.spent
            .lock()
            .expect("limits lock")
            .retain(|_, (day, _)| *day == today);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ManualClock;
    use chrono::TimeZone;

    fn limits(person: u32, space: u32, budget: u64) -> (Limits, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(
            chrono::Utc
                .with_ymd_and_hms(2026, 11, 20, 9, 0, 0)
                .single()
                .unwrap(),
        ));
        let settings = LimitSettings {
            answers_per_person_per_minute: person,
            answers_per_space_per_minute: space,
            space_daily_budget: budget,
        };
        (Limits::new(settings, clock.clone()), clock)
    }

    #[test]
    fn per_person_and_per_space_limits_refill_with_time() {
        let (l, clock) = limits(3, 5, 0);
        let (alice, bob, lab) = (PersonId(1), PersonId(2), SpaceId(7));
        for _ in 0..3 {
            assert_eq!(l.admit(alice, lab), Admission::Allowed);
        }
        let Admission::TooFast { retry_in } = l.admit(alice, lab) else {
            panic!("a fourth answer within the minute")
        };
        assert!(retry_in > Duration::ZERO && retry_in <= Duration::from_secs(20));
        // Bob is not held up by Alice, until the space's own limit.
        assert_eq!(l.admit(bob, lab), Admission::Allowed);
        assert_eq!(l.admit(bob, lab), Admission::Allowed);
        assert!(matches!(l.admit(bob, lab), Admission::TooFast { .. }));
        // Elsewhere, Bob is fine.
        assert_eq!(l.admit(bob, SpaceId(8)), Admission::Allowed);
        clock.advance(chrono::Duration::seconds(61));
        assert_eq!(l.admit(alice, lab), Admission::Allowed);
    }

    #[test]
    fn a_space_over_its_daily_budget_waits_for_the_next_day() {
        let (l, clock) = limits(0, 0, 1000);
        let lab = SpaceId(7);
        assert_eq!(l.admit(PersonId(1), lab), Admission::Allowed);
        l.spend(lab, 600);
        assert_eq!(l.admit(PersonId(1), lab), Admission::Allowed);
        l.spend(lab, 600);
        assert_eq!(l.admit(PersonId(2), lab), Admission::BudgetSpent);
        assert_eq!(l.admit(PersonId(2), SpaceId(8)), Admission::Allowed);
        clock.advance(chrono::Duration::hours(15));
        assert_eq!(l.spent_today(lab), 0);
        assert_eq!(l.admit(PersonId(2), lab), Admission::Allowed);
    }

    #[test]
    fn no_limits_when_unset() {
        let (l, _) = limits(0, 0, 0);
        for _ in 0..1000 {
            assert_eq!(l.admit(PersonId(1), SpaceId(1)), Admission::Allowed);
        }
    }
}
