//! Scheduled job runs: one claim per (job, run key) among all processes, leases, the take-over
//! of a run whose process is gone, and the record of every run; and named leases that elect
//! one process for a task only one may do.

use super::StoreResult;
use super::rows::{from_ms, ms};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Claims and records of scheduled job runs.
#[async_trait]
pub trait Jobs: Send + Sync {
    /// Claims one run of a scheduled job for `holder` until `now + lease`. Several processes
    /// may race: exactly one gets `Acquired`; a crashed holder's claim expires with its lease.
    async fn claim_job(
        &self,
        job: &str,
        run_key: &str,
        holder: &str,
        now: DateTime<Utc>,
        lease: chrono::Duration,
    ) -> StoreResult<JobClaim>;
    /// Marks a claimed run done, or failed (claimable again from `Finish::Failed`'s time on).
    /// False if `holder` lost the claim.
    async fn finish_job(
        &self,
        job: &str,
        run_key: &str,
        holder: &str,
        now: DateTime<Utc>,
        finish: Finish,
        detail: &str,
    ) -> StoreResult<bool>;
    /// Extends `holder`'s claim on a run it still holds to `until` (a run of several model
    /// calls, between them): false if it lost the claim (taken over, finished).
    async fn renew_job(
        &self,
        job: &str,
        run_key: &str,
        holder: &str,
        until: DateTime<Utc>,
    ) -> StoreResult<bool>;
    /// Every recorded run of `job`, by run key.
    async fn job_runs(&self, job: &str) -> StoreResult<Vec<JobRun>>;
    /// How many runs of `job` are in each status, and the one started (or taken over) last,
    /// without reading every run (a job with a run per episode has many).
    async fn job_summary(&self, job: &str) -> StoreResult<JobSummary>;
    /// Takes over a run `from` holds (a holder known to be gone): false if it no longer does.
    async fn take_over_job(
        &self,
        job: &str,
        run_key: &str,
        from: &str,
        holder: &str,
        now: DateTime<Utc>,
        lease: chrono::Duration,
    ) -> StoreResult<Option<i64>>;

    /// Takes or renews the lease `name` for `holder` until `until`: true when `holder` has it
    /// now (it was free, expired at `now`, held by `gone` (a process known to be dead), or
    /// already theirs), false while another holds it.
    async fn hold_lease(
        &self,
        name: &str,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        gone: Option<&str>,
    ) -> StoreResult<bool>;
    /// Who holds the lease `name`, and until when.
    async fn lease_holder(&self, name: &str) -> StoreResult<Option<(String, DateTime<Utc>)>>;
    /// Gives up `holder`'s lease `name` (others may take it at once).
    async fn release_lease(&self, name: &str, holder: &str) -> StoreResult<()>;
    /// Every lease recorded, by name, held or expired (for operators).
    async fn leases(&self) -> StoreResult<Vec<LeaseRow>>;

    /// `claim_job`, except that a run held by a process of this machine that is no longer
    /// running (killed, crashed) is taken over at once instead of after its lease: a restarted
    /// bot finishes the work its killed predecessor left.
    async fn claim_job_or_take_over(
        &self,
        job: &str,
        run_key: &str,
        holder: &str,
        now: DateTime<Utc>,
        lease: chrono::Duration,
    ) -> StoreResult<JobClaim> {
        let claim = self.claim_job(job, run_key, holder, now, lease).await?;
        if let JobClaim::HeldByOther { holder: gone, .. } = &claim
            && holder_is_gone(gone)
            && let Some(attempt) = self
                .take_over_job(job, run_key, gone, holder, now, lease)
                .await?
        {
            tracing::warn!(job, run_key, from = %gone, "took over a run whose process is gone");
            return Ok(JobClaim::Acquired { attempt });
        }
        Ok(claim)
    }
}

/// The outcome of claiming one run of a scheduled job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobClaim {
    /// This holder runs it now (first claim, a retry after failure, or a takeover after the
    /// previous holder's lease expired).
    Acquired {
        /// 1 for the first claim, one more for each retry or takeover.
        attempt: i64,
    },
    /// It ran to completion already.
    AlreadyDone,
    /// Another live holder is running it.
    HeldByOther {
        /// Who holds it.
        holder: String,
        /// When their lease ends.
        until: DateTime<Utc>,
    },
    /// It failed, and may be tried again from `at` on (a failing run backs off).
    RetryLater {
        /// From when on.
        at: DateTime<Utc>,
    },
}

/// How a claimed run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// Ran to completion.
    Done,
    /// Failed; it may be claimed again from `retry_at` on.
    Failed {
        /// When it may run again.
        retry_at: DateTime<Utc>,
    },
}

impl Finish {
    fn status(self) -> &'static str {
        match self {
            Finish::Done => "done",
            Finish::Failed { .. } => "failed",
        }
    }

    /// What `lease_until` holds once finished: for a failed run, when it may be retried.
    fn until(self, now: DateTime<Utc>) -> DateTime<Utc> {
        match self {
            Finish::Done => now,
            Finish::Failed { retry_at } => retry_at,
        }
    }
}

/// One run of a job as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRun {
    /// The job ("extract", "daily_summary", ...).
    pub job: String,
    /// Which run (a day, a person and day).
    pub run_key: String,
    /// The process that claimed it last.
    pub holder: String,
    /// "running", "done" or "failed".
    pub status: String,
    /// Claims so far.
    pub attempts: i64,
    /// What the run reported (JSON), or why it failed.
    pub detail: String,
}

/// The runs of one job, counted by status, and its latest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSummary {
    /// Runs done.
    pub done: i64,
    /// Runs failed (waiting for their retry).
    pub failed: i64,
    /// Runs claimed and not finished.
    pub running: i64,
    /// The run started, or taken over, last.
    pub last: Option<JobRun>,
}

/// A holder name unique to this process: host, this boot and process namespace, process id,
/// and a random part ("host-m1a2b3c4d-4242-0badcafe").
pub fn process_holder() -> String {
    format!(
        "{}-{}-{}-{:08x}",
        host_name(),
        this_machine().unwrap_or_else(|| "unknown".into()),
        std::process::id(),
        rand::random::<u32>()
    )
}

fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// This boot of this machine and this process-id namespace: processes that share it see the
/// same process ids (a restarted container, or another machine with the same host name, has
/// another). None where it cannot be told.
fn this_machine() -> Option<String> {
    use sha2::Digest;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let digest = sha2::Sha256::digest(format!("{}|{}", boot.trim(), namespace.display()));
    Some(format!("m{}", &hex::encode(digest)[..9]))
}

/// Whether process `pid` of this machine is running (or exists but belongs to someone else).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Whether `holder` (a `process_holder` name) was a process of this machine (same boot, same
/// process namespace) that no longer runs. A holder of anywhere else, of this process, of an
/// unknown machine, or of another form is taken as alive: its run is then taken over only when
/// its lease ends.
pub fn holder_is_gone(holder: &str) -> bool {
    let mut parts = holder.rsplitn(4, '-');
    let (Some(_), Some(pid), Some(machine), Some(host)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Ok(pid), Some(ours)) = (pid.parse::<u32>(), this_machine()) else {
        return false;
    };
    !host.is_empty()
        && host == host_name()
        && machine == ours
        && pid != std::process::id()
        && !process_alive(pid)
}

on_both_backends! {
    #[async_trait]
    impl Jobs for Backend {
        async fn claim_job(
            &self,
            job: &str,
            run_key: &str,
            holder: &str,
            now: DateTime<Utc>,
            lease: chrono::Duration,
        ) -> StoreResult<JobClaim> {
            let until = ms(now + lease);
            let inserted = sqlx::query(
                "INSERT INTO job_runs (job, run_key, holder, status, lease_until, attempts, started_at) \
                 VALUES ($1, $2, $3, 'running', $4, 1, $5) ON CONFLICT (job, run_key) DO NOTHING",
            )
            .bind(job)
            .bind(run_key)
            .bind(holder)
            .bind(until)
            .bind(ms(now))
            .execute(self.pool())
            .await
            .map_err(db_err)?
            .rows_affected();
            if inserted == 1 {
                return Ok(JobClaim::Acquired { attempt: 1 });
            }
            let taken: Option<i64> = sqlx::query_scalar(
                "UPDATE job_runs SET holder = $1, status = 'running', lease_until = $2, attempts = attempts + 1, started_at = $3 \
                 WHERE job = $4 AND run_key = $5 AND status IN ('failed', 'running') AND lease_until <= $3 RETURNING attempts",
            )
            .bind(holder)
            .bind(until)
            .bind(ms(now))
            .bind(job)
            .bind(run_key)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            if let Some(attempt) = taken {
                return Ok(JobClaim::Acquired { attempt });
            }
            let (status, owner, lease_until): (String, String, i64) = sqlx::query_as(
                "SELECT status, holder, lease_until FROM job_runs WHERE job = $1 AND run_key = $2",
            )
            .bind(job)
            .bind(run_key)
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
            claim_refused(&status, owner, lease_until)
        }

        async fn finish_job(
            &self,
            job: &str,
            run_key: &str,
            holder: &str,
            now: DateTime<Utc>,
            finish: Finish,
            detail: &str,
        ) -> StoreResult<bool> {
            let updated = sqlx::query(
                "UPDATE job_runs SET status = $1, finished_at = $2, detail = $3, lease_until = $4 \
                 WHERE job = $5 AND run_key = $6 AND holder = $7 AND status = 'running'",
            )
            .bind(finish.status())
            .bind(ms(now))
            .bind(detail)
            .bind(ms(finish.until(now)))
            .bind(job)
            .bind(run_key)
            .bind(holder)
            .execute(self.pool())
            .await
            .map_err(db_err)?
            .rows_affected();
            // Counted where every run ends, by the process that still held it (a run taken
            // over is the other's to count).
            if updated == 1 {
                crate::telemetry::job_run(job, finish.status());
            }
            Ok(updated == 1)
        }

        async fn renew_job(
            &self,
            job: &str,
            run_key: &str,
            holder: &str,
            until: DateTime<Utc>,
        ) -> StoreResult<bool> {
            let updated = sqlx::query(
                "UPDATE job_runs SET lease_until = $1 \
                 WHERE job = $2 AND run_key = $3 AND holder = $4 AND status = 'running'",
            )
            .bind(ms(until))
            .bind(job)
            .bind(run_key)
            .bind(holder)
            .execute(self.pool())
            .await
            .map_err(db_err)?
            .rows_affected();
            Ok(updated == 1)
        }

        async fn take_over_job(
            &self,
            job: &str,
            run_key: &str,
            from: &str,
            holder: &str,
            now: DateTime<Utc>,
            lease: chrono::Duration,
        ) -> StoreResult<Option<i64>> {
            sqlx::query_scalar(
                "UPDATE job_runs SET holder = $1, lease_until = $2, attempts = attempts + 1, started_at = $3 \
                 WHERE job = $4 AND run_key = $5 AND holder = $6 AND status = 'running' RETURNING attempts",
            )
            .bind(holder)
            .bind(ms(now + lease))
            .bind(ms(now))
            .bind(job)
            .bind(run_key)
            .bind(from)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)
        }

        /// Every recorded run of `job`, by run key.
    async fn hold_lease(
        &self,
        name: &str,
        holder: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        gone: Option<&str>,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "INSERT INTO leases (name, holder, until_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms \
             WHERE leases.holder = excluded.holder OR leases.until_ms <= $4 OR leases.holder = $5",
        )
        .bind(name)
        .bind(holder)
        .bind(ms(until))
        .bind(ms(now))
        .bind(gone)
        .execute(self.pool())
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() == 1)
    }

    async fn lease_holder(&self, name: &str) -> StoreResult<Option<(String, DateTime<Utc>)>> {
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT holder, until_ms FROM leases WHERE name = $1")
                .bind(name)
                .fetch_optional(self.pool())
                .await
                .map_err(db_err)?;
        row.map(|(holder, until)| Ok((holder, from_ms(until)?)))
            .transpose()
    }

    async fn release_lease(&self, name: &str, holder: &str) -> StoreResult<()> {
        sqlx::query("DELETE FROM leases WHERE name = $1 AND holder = $2")
            .bind(name)
            .bind(holder)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn leases(&self) -> StoreResult<Vec<LeaseRow>> {
        let rows: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT name, holder, until_ms FROM leases ORDER BY name")
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
        rows.into_iter()
            .map(|(name, holder, until)| {
                Ok(LeaseRow {
                    name,
                    holder,
                    until: from_ms(until)?,
                })
            })
            .collect()
    }

    async fn job_summary(&self, job: &str) -> StoreResult<JobSummary> {
        let counts: Vec<(String, i64)> = sqlx::query_as(
            "SELECT status, COUNT(*) FROM job_runs WHERE job = $1 GROUP BY status",
        )
        .bind(job)
        .fetch_all(self.pool())
        .await
        .map_err(db_err)?;
        let last: Option<RunColumns> = sqlx::query_as(
            "SELECT job, run_key, holder, status, attempts, detail FROM job_runs WHERE job = $1 \
             ORDER BY started_at DESC, run_key DESC LIMIT 1",
        )
        .bind(job)
        .fetch_optional(self.pool())
        .await
        .map_err(db_err)?;
        let count = |status: &str| {
            counts
                .iter()
                .find(|(s, _)| s == status)
                .map_or(0, |(_, n)| *n)
        };
        Ok(JobSummary {
            done: count("done"),
            failed: count("failed"),
            running: count("running"),
            last: last.map(job_run),
        })
    }

    async fn job_runs(&self, job: &str) -> StoreResult<Vec<JobRun>> {
            let rows: Vec<RunColumns> = sqlx::query_as(
                "SELECT job, run_key, holder, status, attempts, detail FROM job_runs WHERE job = $1 ORDER BY run_key",
            )
            .bind(job)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows.into_iter().map(job_run).collect())
        }
    }
}

/// A `job_runs` row as `job_run` reads it: job, run key, holder, status, attempts, detail.
type RunColumns = (String, String, String, String, i64, String);

fn job_run((job, run_key, holder, status, attempts, detail): RunColumns) -> JobRun {
    JobRun {
        job,
        run_key,
        holder,
        status,
        attempts,
        detail,
    }
}

/// A named lease: who holds it and until when (past `until`, anyone may take it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LeaseRow {
    /// The lease's name (the Telegram poller's names a hash of its token, never the token).
    pub name: String,
    /// The process that took it last.
    pub holder: String,
    /// When it ends unless renewed.
    pub until: DateTime<Utc>,
}

/// A claim that neither inserted nor took over: done, failed and backing off, or held by
/// someone alive.
fn claim_refused(status: &str, holder: String, lease_until: i64) -> StoreResult<JobClaim> {
    Ok(match status {
        "done" => JobClaim::AlreadyDone,
        "failed" => JobClaim::RetryLater {
            at: from_ms(lease_until)?,
        },
        _ => JobClaim::HeldByOther {
            holder,
            until: from_ms(lease_until)?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_finished_process_of_this_machine_is_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let (host, machine) = (host_name(), this_machine().unwrap());
        assert!(holder_is_gone(&format!("{host}-{machine}-{dead}-0000abcd")));
        // Positive controls: this process, a running one, another machine (host, or boot and
        // namespace), an unknown machine, a name of another form.
        let me = std::process::id();
        assert!(!holder_is_gone(&format!("{host}-{machine}-{me}-0000abcd")));
        let running = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(!holder_is_gone(&format!(
            "{host}-{machine}-{}-0000abcd",
            running.id()
        )));
        assert!(!holder_is_gone(&format!(
            "{host}x-{machine}-{dead}-0000abcd"
        )));
        assert!(!holder_is_gone(&format!(
            "{host}-m000000000-{dead}-0000abcd"
        )));
        assert!(!holder_is_gone(&format!("{host}-unknown-{dead}-0000abcd")));
        assert!(!holder_is_gone(&format!("-{machine}-{dead}-0000abcd")));
        assert!(!holder_is_gone("p1"));
        assert!(!holder_is_gone("a-b-c-d"));
        assert!(process_holder().starts_with(&format!("{host}-{machine}-{me}-")));
        let mut running = running;
        running.kill().unwrap();
        running.wait().unwrap();
    }
}
