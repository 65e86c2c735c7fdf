//! Scheduled jobs, coordinated through the store so that any number of bot processes run each
//! job once: a run is claimed with a lease (`Store::claim_job`), finished or failed, and taken
//! over by another process if its holder dies. `day_summaries` finalizes yesterday's day
//! summaries of every active scope shortly after midnight UTC, so the first reply of the day
//! does not wait for them; `extract_all` runs the daily extraction of structured memory
//! (default 23:00 UTC).

use crate::domain::{Clock, day_of};
use crate::memory::extraction::episodes::EPISODE_JOB;
use crate::memory::summaries::day_bounds;
use crate::memory::{MemoryError, MemoryManager};
use crate::store::{Finish, JobClaim, Store, StoreError};
use chrono::{Duration, NaiveTime};
use serde::Serialize;
use std::sync::Arc;
use tracing::{info, warn};

/// The job that finalizes yesterday's day summaries.
pub const DAY_SUMMARIES: &str = "day_summaries";
/// The job that prunes old memory and runs the store's upkeep.
pub const MAINTENANCE: &str = "maintenance";
/// The daily extraction pass over everyone (each person's runs are claimed on their own too).
pub const EXTRACT_ALL: &str = "extract_all";
/// The attempt of a day's extraction at which the runs whose answers stayed unusable are
/// given up (each attempt asks twice): the day is done without them. With the default backoff
/// that is after more than an hour (0, 5, 15, 35 and 75 minutes): a provider answering
/// garbage for a short while is waited out.
const GIVE_UP_AFTER: i64 = 5;
/// Every scheduled job's name, as operators see them (`engram status`).
pub const SCHEDULED: [&str; 5] = [
    DAY_SUMMARIES,
    MAINTENANCE,
    EXTRACT_ALL,
    crate::memory::extraction::EXTRACT_JOB,
    EPISODE_JOB,
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
/// What one job pass did.
pub enum JobOutcome {
    /// Not time yet today.
    NotDue,
    /// Nothing to do without an LLM: offline summaries are computed on the fly.
    NoLlm,
    /// It ran now.
    Ran {
        /// The run's key (job and day).
        run_key: String,
        /// Scopes it worked on.
        scopes: usize,
        /// Of those, how many got the offline fallback.
        degraded: usize,
    },
    /// Another process (or an earlier pass) already did it.
    AlreadyDone {
        /// The run's key.
        run_key: String,
    },
    /// Another live process is doing it now.
    HeldByOther {
        /// The run's key.
        run_key: String,
        /// Who holds it.
        holder: String,
    },
    /// It failed, and is tried again from `at` on.
    RetryLater {
        /// The run's key.
        run_key: String,
        /// When it may be tried again.
        at: chrono::DateTime<chrono::Utc>,
    },
}

/// Runs the scheduled jobs on a tick, each once across every process sharing the store.
pub struct Scheduler {
    memory: Arc<MemoryManager>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// How many days of daily notes are kept.
    notes_days: u32,
    holder: String,
    lease: Duration,
    day_summaries_after: NaiveTime,
    extractor: Option<crate::memory::extraction::Extractor>,
    retry_backoff: Duration,
    /// Earlier days whose extraction is settled (done, or nobody wrote in their window, which
    /// has ended): not looked at again on every tick.
    settled: std::sync::Mutex<std::collections::HashSet<chrono::NaiveDate>>,
    usage: Option<UsageRecorder>,
}

/// Adds what this process's model spent since the last write to the day's totals in the
/// store (`llm_usage_days`: the admin page's chart, summed over every process).
pub struct UsageRecorder {
    llm: Arc<dyn crate::llm::ChatModel>,
    written: std::sync::Mutex<crate::llm::UsageSnapshot>,
}

impl UsageRecorder {
    /// Records the use of `llm` from now on.
    pub fn new(llm: Arc<dyn crate::llm::ChatModel>) -> UsageRecorder {
        let written = std::sync::Mutex::new(llm.usage());
        UsageRecorder { llm, written }
    }

    /// Writes the calls and tokens since the last write to today's row; nothing when none.
    /// A failed write is tried again, with what came since, on the next call.
    pub async fn write(&self, store: &dyn Store, clock: &dyn Clock) -> Result<(), StoreError> {
        let now = self.llm.usage();
        let delta = {
            let written = self.written.lock().expect("usage lock");
            let n = |a: u64, b: u64| i64::try_from(a.saturating_sub(b)).unwrap_or(i64::MAX);
            crate::store::UsageDay {
                calls: n(now.calls, written.calls),
                failures: n(now.failures, written.failures),
                prompt_tokens: n(now.prompt_tokens, written.prompt_tokens),
                completion_tokens: n(now.completion_tokens, written.completion_tokens),
            }
        };
        if delta == crate::store::UsageDay::default() {
            return Ok(());
        }
        store
            .add_llm_usage(clock.now().date_naive(), &delta)
            .await?;
        *self.written.lock().expect("usage lock") = now;
        Ok(())
    }
}

impl Scheduler {
    /// Writes the model's use per day on every tick and at the end (None: no model).
    pub fn with_usage(mut self, usage: Option<UsageRecorder>) -> Scheduler {
        self.usage = usage;
        self
    }

    /// Runs the daily extraction too (none without an LLM).
    pub fn with_extractor(
        mut self,
        extractor: Option<crate::memory::extraction::Extractor>,
    ) -> Scheduler {
        self.extractor = extractor;
        self
    }

    /// The daily extraction of structured memory, once its time has come today; a day within
    /// `memory.extraction_catch_up_days` whose run was missed or failed is made up (once: a
    /// finished day is never run again, a failed one waits out its backoff).
    pub async fn run_extraction(&self) -> Result<JobOutcome, MemoryError> {
        let Some(extractor) = &self.extractor else {
            return Ok(JobOutcome::NoLlm);
        };
        let days = extractor.due_days(self.clock.now());
        let Some(&today) = days.last() else {
            return Ok(JobOutcome::NotDue);
        };
        let mut outcome = None;
        let settled = |day| self.settled.lock().expect("settled lock").insert(day);
        for day in days {
            if day != today {
                if self.settled.lock().expect("settled lock").contains(&day) {
                    continue;
                }
                // An earlier day nobody wrote in has nothing to make up: no claim is kept.
                if !extractor.has_chatter(day).await? {
                    settled(day);
                    continue;
                }
            }
            let run_key = day.to_string();
            // The clock is read again for every day: an earlier day's run may have taken long.
            let now = self.clock.now();
            let attempt = match self.claim(EXTRACT_ALL, &run_key, now).await? {
                Ok(attempt) => attempt,
                Err(JobOutcome::AlreadyDone { .. }) if day != today => {
                    settled(day);
                    continue;
                }
                Err(refused) => {
                    // An earlier day still waiting (failed, or running elsewhere) goes first:
                    // a later day is not extracted before it, so older news never overwrites
                    // newer entries.
                    outcome.get_or_insert(refused);
                    break;
                }
            };
            let result = extractor.extract_all(day, false, |_, _| {}).await;
            let (ok, detail) = match &result {
                Ok(runs) => {
                    let failed = runs.iter().filter(|r| r.error.is_some()).count();
                    // Runs the model keeps answering unusably (each asked twice per attempt)
                    // are given up after a few attempts: they would otherwise hold back every
                    // later day of everyone until they fall out of the catch-up window. A
                    // model that cannot be reached is waited for, and so is one that fails
                    // every run (a setting it refuses, not one person's words).
                    let given_up = failed > 0
                        && failed < runs.len()
                        && attempt >= GIVE_UP_AFTER
                        && runs
                            .iter()
                            .filter(|r| r.error.is_some())
                            .all(|r| r.unusable_answer);
                    if given_up {
                        warn!(job = EXTRACT_ALL, %run_key, attempt, failed,
                            "the model's answers for some people stayed unusable: their day is skipped");
                    }
                    (
                        failed == 0 || given_up,
                        if given_up {
                            format!(
                                "{} runs, {failed} given up after {attempt} attempts",
                                runs.len()
                            )
                        } else {
                            format!("{} runs, {failed} failed", runs.len())
                        },
                    )
                }
                Err(e) => (false, e.to_string()),
            };
            self.finish(EXTRACT_ALL, &run_key, ok, &detail, attempt)
                .await?;
            let runs = result?;
            let stop = !ok;
            info!(job = EXTRACT_ALL, %run_key, runs = runs.len(), "job finished");
            let (scopes, degraded) = (
                runs.len(),
                runs.iter().filter(|r| r.error.is_some()).count(),
            );
            outcome = Some(match outcome {
                Some(JobOutcome::Ran {
                    run_key: earlier,
                    scopes: s,
                    degraded: d,
                }) => JobOutcome::Ran {
                    run_key: format!("{earlier},{run_key}"),
                    scopes: s + scopes,
                    degraded: d + degraded,
                },
                _ => JobOutcome::Ran {
                    run_key,
                    scopes,
                    degraded,
                },
            });
            if stop {
                // Failed: later days wait until this one is done (see above).
                break;
            }
        }
        Ok(outcome.unwrap_or(JobOutcome::NotDue))
    }

    /// `holder` names this process in the job table (host, pid, random suffix); daily notes
    /// older than `notes_days` go with the daily upkeep.
    pub fn new(
        memory: Arc<MemoryManager>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        holder: String,
        lease: Duration,
        day_summaries_after: NaiveTime,
        notes_days: u32,
    ) -> Scheduler {
        Scheduler {
            memory,
            store,
            clock,
            notes_days,
            holder,
            lease,
            day_summaries_after,
            extractor: None,
            retry_backoff: Duration::minutes(5),
            settled: Default::default(),
            usage: None,
        }
    }

    /// How long a failed run waits before it is tried again (doubling with each failure).
    pub fn with_retry_backoff(mut self, backoff: Duration) -> Scheduler {
        self.retry_backoff = backoff;
        self
    }

    /// The wait before attempt `attempt + 1`: the backoff doubled for every failure, at most
    /// six hours.
    pub fn backoff(&self, attempt: i64) -> Duration {
        let cap = Duration::hours(6);
        let doublings = attempt.clamp(1, 12) - 1;
        self.retry_backoff
            .checked_mul(1i32 << doublings)
            .map_or(cap, |d| d.min(cap))
    }

    /// Marks this process's run of `job` finished now; a failed one (its `attempt`th) may be
    /// tried again after its backoff.
    async fn finish(
        &self,
        job: &'static str,
        run_key: &str,
        ok: bool,
        detail: &str,
        attempt: i64,
    ) -> Result<(), MemoryError> {
        let now = self.clock.now();
        let finish = if ok {
            Finish::Done
        } else {
            let retry_at = now + self.backoff(attempt);
            warn!(job, %run_key, attempt, %retry_at, detail, "job failed; it will be tried again");
            Finish::Failed { retry_at }
        };
        self.store
            .finish_job(job, run_key, &self.holder, now, finish, detail)
            .await?;
        Ok(())
    }

    /// Claims a run for this process: its attempt number when it is ours to run, else why not.
    async fn claim(
        &self,
        job: &'static str,
        run_key: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Result<i64, JobOutcome>, MemoryError> {
        let run_key = run_key.to_string();
        Ok(
            match self
                .store
                .claim_job_or_take_over(job, &run_key, &self.holder, now, self.lease)
                .await?
            {
                JobClaim::AlreadyDone => Err(JobOutcome::AlreadyDone { run_key }),
                JobClaim::HeldByOther { holder, .. } => {
                    Err(JobOutcome::HeldByOther { run_key, holder })
                }
                JobClaim::RetryLater { at } => Err(JobOutcome::RetryLater { run_key, at }),
                JobClaim::Acquired { attempt } => {
                    info!(job, %run_key, attempt, holder = %self.holder, "job started");
                    Ok(attempt)
                }
            },
        )
    }

    /// Database upkeep (`Store::maintain`), once a day by one process.
    pub async fn run_maintenance(&self) -> Result<JobOutcome, MemoryError> {
        let now = self.clock.now();
        if now.time() < self.day_summaries_after {
            return Ok(JobOutcome::NotDue);
        }
        let run_key = day_of(now).to_string();
        let store = &self.store;
        let attempt = match self.claim(MAINTENANCE, &run_key, now).await? {
            Ok(attempt) => attempt,
            Err(refused) => return Ok(refused),
        };
        // Expired entries and old daily notes go first; then the database's own upkeep.
        let keep = Duration::days(i64::from(self.notes_days));
        let result = match store.prune_memory(now, day_of(now) - keep).await {
            Ok(pruned) => {
                info!(job = MAINTENANCE, pruned, "expired memory removed");
                store.maintain().await
            }
            Err(e) => Err(e),
        };
        let ok = result.is_ok();
        let detail = result
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default();
        self.finish(MAINTENANCE, &run_key, ok, &detail, attempt)
            .await?;
        result?;
        info!(job = MAINTENANCE, %run_key, "job finished");
        Ok(JobOutcome::Ran {
            run_key,
            scopes: 0,
            degraded: 0,
        })
    }

    /// Runs what is due now. Safe to call from every process at once, and again after a crash:
    /// a finished run is never repeated, an abandoned one is taken over after its lease.
    pub async fn run_due(&self) -> Result<JobOutcome, MemoryError> {
        let now = self.clock.now();
        if now.time() < self.day_summaries_after {
            return Ok(JobOutcome::NotDue);
        }
        if !self.memory.has_llm() {
            return Ok(JobOutcome::NoLlm);
        }
        let yesterday = day_of(now) - Duration::days(1);
        let run_key = yesterday.to_string();
        let attempt = match self.claim(DAY_SUMMARIES, &run_key, now).await? {
            Ok(attempt) => attempt,
            Err(refused) => return Ok(refused),
        };
        let result = self.finalize_day(yesterday, now).await;
        // Degraded summaries (LLM down) are not final: the run fails and is retried.
        let (ok, detail) = match &result {
            Ok((scopes, degraded)) => (
                *degraded == 0,
                format!("{scopes} scopes, {degraded} degraded"),
            ),
            Err(e) => (false, e.to_string()),
        };
        self.finish(DAY_SUMMARIES, &run_key, ok, &detail, attempt)
            .await?;
        let (scopes, degraded) = result?;
        info!(job = DAY_SUMMARIES, %run_key, scopes, degraded, "job finished");
        Ok(JobOutcome::Ran {
            run_key,
            scopes,
            degraded,
        })
    }

    async fn finalize_day(
        &self,
        day: chrono::NaiveDate,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(usize, usize), MemoryError> {
        let (from, to) = day_bounds(day);
        let scopes = self.store.active_scopes(from, to).await?;
        let mut degraded = 0;
        for scope in &scopes {
            if self.memory.day_summaries(scope, day, now).await?.degraded {
                degraded += 1;
            }
        }
        Ok((scopes.len(), degraded))
    }

    /// Closed episodes get their final details: with the model through the extractor (facts
    /// learned), else extractive ones; how many.
    pub async fn finish_episodes(&self) -> Result<usize, MemoryError> {
        match &self.extractor {
            Some(extractor) => extractor.finish_episodes().await,
            None => self.memory.finish_episodes_offline().await,
        }
    }

    /// Calls `run_due` every `every` until `shutdown` fires.
    pub async fn run_until(
        self: Arc<Self>,
        every: std::time::Duration,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut ticks = tokio::time::interval(every);
        loop {
            tokio::select! {
                _ = ticks.tick() => {
                    if let Err(e) = self.run_due().await {
                        warn!(job = DAY_SUMMARIES, error = %e, "scheduled job failed");
                    }
                    if let Err(e) = self.run_maintenance().await {
                        warn!(job = MAINTENANCE, error = %e, "scheduled job failed");
                    }
                    if let Err(e) = self.run_extraction().await {
                        warn!(job = EXTRACT_ALL, error = %e, "scheduled job failed");
                    }
                    if let Err(e) = self.memory.refresh_working_memory().await {
                        warn!(job = "working_memory", error = %e, "scheduled job failed");
                    }
                    if let Err(e) = self.finish_episodes().await {
                        warn!(job = EPISODE_JOB, error = %e, "scheduled job failed");
                    }
                    self.write_usage().await;
                }
                _ = shutdown.changed() => break,
            }
        }
        self.write_usage().await;
    }

    async fn write_usage(&self) {
        if let Some(usage) = &self.usage
            && let Err(e) = usage.write(&*self.store, &*self.clock).await
        {
            warn!(error = %e, "LLM use was not recorded; tried again on the next tick");
        }
    }
}
