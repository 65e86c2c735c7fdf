//! What answers may cost: per-person and per-space limits on answers that may use the language
//! model or the embedder (per minute), a daily language-model token budget per space, and the
//! task-local `Payer` through which the model and embedder wrappers know whose answer they work
//! on. Jobs (summaries, extraction, indexing) run with no payer and are not limited here.

use crate::domain::{Clock, PersonId, SpaceId};
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Whose answer the current task is making, and whether it may spend on the model and embedder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payer {
    /// The person the answer is for.
    pub person: PersonId,
    /// The space it is given in.
    pub space: SpaceId,
    /// Whether the answer was admitted under the limits.
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
    /// Answers one person may get per minute.
    pub answers_per_person_per_minute: u32,
    /// Answers one space may get per minute.
    pub answers_per_space_per_minute: u32,
    /// Model tokens (prompt and completion) one space may spend on answers per UTC day.
    pub space_daily_budget: u64,
}

/// Whether an answer may spend now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The answer may use the model and the embedder.
    Allowed,
    /// Too many answers in the last minute (by this person, or in this space).
    TooFast {
        /// When the oldest answer in the window leaves it.
        retry_in: Duration,
    },
    /// The space has spent today's token budget.
    BudgetSpent,
}

/// The answers admitted in the last minute, per person and per space (a sliding window).
/// An answer is admitted only when both have room, and then counts in both: a refusal by one
/// never uses up the other. (`governor`'s limiters cannot check two limits before taking from
/// either, so the window is kept here.)
#[derive(Default)]
struct Windows {
    person: HashMap<PersonId, VecDeque<DateTime<Utc>>>,
    space: HashMap<SpaceId, VecDeque<DateTime<Utc>>>,
}

/// Drops what is a minute old; the wait until there is room for one more (None: room now).
fn room<K: std::hash::Hash + Eq>(
    windows: &mut HashMap<K, VecDeque<DateTime<Utc>>>,
    key: K,
    limit: u32,
    now: DateTime<Utc>,
) -> Option<Duration> {
    if limit == 0 {
        return None;
    }
    let window = windows.entry(key).or_default();
    while window.front().is_some_and(|t| now - *t >= MINUTE) {
        window.pop_front();
    }
    if window.len() < limit as usize {
        return None;
    }
    let oldest = *window.front()?;
    Some((oldest + MINUTE - now).to_std().unwrap_or_default())
}

const MINUTE: chrono::Duration = chrono::Duration::minutes(1);

/// The answer limits, shared by every task of one process.
pub struct Limits {
    settings: LimitSettings,
    windows: Mutex<Windows>,
    /// Tokens spent per space on its current day.
    spent: Mutex<HashMap<SpaceId, (NaiveDate, u64)>>,
    clock: Arc<dyn Clock>,
    admitted: AtomicU64,
}

impl Limits {
    /// Limits as `settings` say, on `clock`'s time.
    pub fn new(settings: LimitSettings, clock: Arc<dyn Clock>) -> Limits {
        Limits {
            settings,
            windows: Mutex::new(Windows::default()),
            spent: Mutex::new(HashMap::new()),
            clock,
            admitted: AtomicU64::new(0),
        }
    }

    /// Whether `person` may have an answer in `space` that spends now; an allowed answer
    /// counts towards both per-minute limits, a refused one towards neither.
    pub fn admit(&self, person: PersonId, space: SpaceId) -> Admission {
        self.admit_in(person, space, true)
    }

    /// Whether `person` may spend in `space` now on work nobody asked the bot for (what a
    /// model makes of the files they post in passing): the space's budget applies and it
    /// counts towards their own per-minute limit only, so one member posting files cannot
    /// use up the answers of everyone else in the space.
    pub fn admit_person(&self, person: PersonId, space: SpaceId) -> Admission {
        self.admit_in(person, space, false)
    }

    fn admit_in(&self, person: PersonId, space: SpaceId, in_space: bool) -> Admission {
        let budget = self.settings.space_daily_budget;
        if budget > 0 && self.spent_today(space) >= budget {
            return Admission::BudgetSpent;
        }
        if self.admitted.fetch_add(1, Ordering::Relaxed) % 4096 == 4095 {
            self.forget_idle();
        }
        let now = self.clock.now();
        let mut w = self.windows.lock().expect("limits lock");
        let person_wait = room(
            &mut w.person,
            person,
            self.settings.answers_per_person_per_minute,
            now,
        );
        let space_wait = if in_space {
            room(
                &mut w.space,
                space,
                self.settings.answers_per_space_per_minute,
                now,
            )
        } else {
            None
        };
        if let Some(retry_in) = person_wait.max(space_wait) {
            return Admission::TooFast { retry_in };
        }
        if self.settings.answers_per_person_per_minute > 0 {
            w.person.entry(person).or_default().push_back(now);
        }
        if in_space && self.settings.answers_per_space_per_minute > 0 {
            w.space.entry(space).or_default().push_back(now);
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

    /// Drops the windows of people and spaces quiet for a minute, and past days' spending
    /// (bounded memory).
    fn forget_idle(&self) {
        let now = self.clock.now();
        let fresh = |w: &mut VecDeque<DateTime<Utc>>| w.back().is_some_and(|t| now - *t < MINUTE);
        let mut w = self.windows.lock().expect("limits lock");
        w.person.retain(|_, window| fresh(window));
        w.space.retain(|_, window| fresh(window));
        drop(w);
        let today = now.date_naive();
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
        assert_eq!(
            retry_in,
            Duration::from_secs(60),
            "until the oldest leaves the window"
        );
        // Bob is not held up by Alice, until the space's own limit.
        assert_eq!(l.admit(bob, lab), Admission::Allowed);
        assert_eq!(l.admit(bob, lab), Admission::Allowed);
        assert!(matches!(l.admit(bob, lab), Admission::TooFast { .. }));
        // Elsewhere, Bob is fine: the space's refusal did not use up his own limit.
        assert_eq!(l.admit(bob, SpaceId(8)), Admission::Allowed);
        assert!(matches!(
            l.admit(bob, SpaceId(8)),
            Admission::TooFast { .. }
        ));
        clock.advance(chrono::Duration::seconds(61));
        assert_eq!(l.admit(alice, lab), Admission::Allowed);
    }

    #[test]
    fn work_nobody_asked_for_counts_for_its_person_only() {
        let (l, _) = limits(3, 3, 0);
        let (mallory, alice, lab) = (PersonId(1), PersonId(2), SpaceId(7));
        for _ in 0..3 {
            assert_eq!(l.admit_person(mallory, lab), Admission::Allowed);
        }
        // Mallory is stopped at her own limit...
        assert!(matches!(
            l.admit_person(mallory, lab),
            Admission::TooFast { .. }
        ));
        // ...and the space's answers are all still there for Alice.
        for _ in 0..3 {
            assert_eq!(l.admit(alice, lab), Admission::Allowed);
        }
        // Positive control: answers do use up the space.
        assert!(matches!(
            l.admit(PersonId(3), lab),
            Admission::TooFast { .. }
        ));
        // The space's budget holds for both.
        let (l, _) = limits(0, 0, 100);
        l.spend(lab, 100);
        assert_eq!(l.admit_person(mallory, lab), Admission::BudgetSpent);
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
