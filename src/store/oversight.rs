//! What operators read (the admin page): the audit log of memory changes, LLM use per day,
//! people and spaces found by name, counts per day for the charts, the latest job runs and
//! the summaries that mention a person. The audit log keeps no memory text, only who, what
//! kind, about whom, where and the asking message's id: a forget that deletes the message
//! leaves nothing of what was said.

use super::rows::{from_ms, ms, parse_scope};
use super::{StoreError, StoreResult};
use crate::domain::{MessageId, PersonId, Scope, SpaceId};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};

/// A change to memory, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAudit {
    /// When.
    pub at: DateTime<Utc>,
    /// The person who did it, when a person did.
    pub actor: Option<PersonId>,
    /// Who did it otherwise, or the person's name then ("admin:ops", "job:extract").
    pub actor_label: String,
    /// What kind of change ("remember", "forget", "clear", "pause", …).
    pub action: String,
    /// Whose memory.
    pub subject: Option<PersonId>,
    /// Where it was asked (what may surface there).
    pub scope: Option<Scope>,
    /// The message that asked for it.
    pub message: Option<MessageId>,
    /// How many items it changed.
    pub count: i64,
}

/// An audit line as the admin page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditLine {
    /// Its id, newest highest.
    pub id: i64,
    /// The change.
    pub change: NewAudit,
    /// The subject's name now.
    pub subject_name: Option<String>,
    /// What the asking message said, while it exists and is still the actor's.
    pub message_text: Option<String>,
}

/// LLM use of one UTC day, over every process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageDay {
    /// Calls made.
    pub calls: i64,
    /// Calls that failed.
    pub failures: i64,
    /// Prompt tokens.
    pub prompt_tokens: i64,
    /// Answer tokens.
    pub completion_tokens: i64,
}

/// A person found by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonRow {
    /// Who.
    pub id: PersonId,
    /// Their name now.
    pub display_name: String,
    /// Messages they wrote.
    pub messages: i64,
}

/// A space found by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceRow {
    /// Which.
    pub id: SpaceId,
    /// Its platform ("discord").
    pub platform: String,
    /// The platform's id of it.
    pub external_id: String,
    /// "guild", "group" or "private".
    pub kind: String,
    /// Its title.
    pub title: String,
    /// Messages stored in it.
    pub messages: i64,
}

/// A job run with its lease, for the jobs table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRunRow {
    /// The job.
    pub job: String,
    /// Which run.
    pub run_key: String,
    /// The process holding or last holding it.
    pub holder: String,
    /// "running", "done" or "failed".
    pub status: String,
    /// Claims so far.
    pub attempts: i64,
    /// Until when the holder's claim lasts (a failed run: when it may be retried).
    pub lease_until: DateTime<Utc>,
    /// When the last claim started.
    pub started_at: DateTime<Utc>,
    /// When it finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// What it reported, or why it failed.
    pub detail: String,
}

/// A day or history summary that mentions a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryAbout {
    /// Where it may surface.
    pub scope: Scope,
    /// The day (a history summary: the last day it covers).
    pub day: NaiveDate,
    /// The summary.
    pub text: String,
}

/// Per-day counts for the charts: days since the Unix epoch, with a count.
pub type DayCounts = Vec<(i64, i64)>;

/// Days since the Unix epoch of `t`.
pub fn day_index(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis().div_euclid(86_400_000)
}

/// The operators' reads and the audit log.
#[async_trait]
pub trait Oversight: Send + Sync {
    /// Adds a line to the audit log.
    async fn record_audit(&self, line: &NewAudit) -> StoreResult<()>;
    /// The newest `limit` lines, only those about `subject` when given.
    async fn audit_log(&self, subject: Option<PersonId>, limit: i64)
    -> StoreResult<Vec<AuditLine>>;
    /// Adds LLM use to `day`'s totals.
    async fn add_llm_usage(&self, day: NaiveDate, usage: &UsageDay) -> StoreResult<()>;
    /// LLM use per day from `since` on.
    async fn llm_usage(&self, since: NaiveDate) -> StoreResult<Vec<(NaiveDate, UsageDay)>>;
    /// People whose name, an account's name, @username or platform id matches `query`
    /// (a part of it, any case); every person for an empty query. By id.
    async fn search_people(&self, query: &str, limit: i64) -> StoreResult<Vec<PersonRow>>;
    /// Spaces whose title or platform id matches `query`; all for an empty one.
    async fn search_spaces(&self, query: &str, limit: i64) -> StoreResult<Vec<SpaceRow>>;
    /// The titles of these spaces (those that exist).
    async fn space_titles(&self, ids: &[SpaceId]) -> StoreResult<Vec<(SpaceId, String)>>;
    /// The people who wrote in `space`, most messages first.
    async fn space_people(&self, space: SpaceId, limit: i64) -> StoreResult<Vec<PersonRow>>;
    /// Messages per space and day from `since` on: (space, day index, count).
    async fn messages_per_day(&self, since: DateTime<Utc>)
    -> StoreResult<Vec<(SpaceId, i64, i64)>>;
    /// Memory entries and messages kept now, by the day they were written.
    async fn memory_per_day(&self) -> StoreResult<(DayCounts, DayCounts)>;
    /// The latest job runs, newest first.
    async fn recent_job_runs(&self, limit: i64) -> StoreResult<Vec<JobRunRow>>;
    /// Day summaries with a part about `person`, and their history summaries.
    async fn summaries_about(
        &self,
        person: PersonId,
    ) -> StoreResult<(Vec<SummaryAbout>, Vec<SummaryAbout>)>;
}

/// `query` as a LIKE pattern matching any text that contains it, lower-cased.
fn contains_pattern(query: &str) -> String {
    let escaped = query
        .trim()
        .to_lowercase()
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

fn person_rows(rows: Vec<(i64, String, i64)>) -> Vec<PersonRow> {
    rows.into_iter()
        .map(|(id, display_name, messages)| PersonRow {
            id: PersonId(id),
            display_name,
            messages,
        })
        .collect()
}

fn day_of(text: &str) -> StoreResult<NaiveDate> {
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("bad day {text:?}")))
}

type AuditRow = (
    i64,
    i64,
    Option<i64>,
    String,
    String,
    Option<i64>,
    Option<String>,
    Option<i64>,
    i64,
    Option<String>,
    Option<String>,
);

on_both_backends! {
    #[async_trait]
    impl Oversight for Backend {
        async fn record_audit(&self, line: &NewAudit) -> StoreResult<()> {
            sqlx::query(
                "INSERT INTO audit_log (at, actor_id, actor, action, subject_id, scope, message_id, count) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(ms(line.at))
            .bind(line.actor.map(|p| p.0))
            .bind(&line.actor_label)
            .bind(&line.action)
            .bind(line.subject.map(|p| p.0))
            .bind(line.scope.as_ref().map(Scope::key))
            .bind(line.message.map(|m| m.0))
            .bind(line.count)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            Ok(())
        }

        async fn audit_log(
            &self,
            subject: Option<PersonId>,
            limit: i64,
        ) -> StoreResult<Vec<AuditLine>> {
            // The asking message is shown only while it is still the actor's and older than the
            // line: an id a deleted message left may be given again (SQLite) to a later one.
            let rows: Vec<AuditRow> = sqlx::query_as(
                "SELECT a.id, a.at, a.actor_id, a.actor, a.action, a.subject_id, a.scope, a.message_id, a.count, \
                        p.display_name, m.text \
                 FROM audit_log a \
                 LEFT JOIN people p ON p.id = a.subject_id \
                 LEFT JOIN messages m ON m.id = a.message_id AND m.author_id = a.actor_id AND m.sent_at <= a.at \
                 WHERE ($1 IS NULL OR a.subject_id = $1) ORDER BY a.id DESC LIMIT $2",
            )
            .bind(subject.map(|p| p.0))
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.into_iter()
                .map(|(id, at, actor, label, action, subj, scope, message, count, name, text)| {
                    Ok(AuditLine {
                        id,
                        change: NewAudit {
                            at: from_ms(at)?,
                            actor: actor.map(PersonId),
                            actor_label: label,
                            action,
                            subject: subj.map(PersonId),
                            scope: scope.as_deref().map(parse_scope).transpose()?,
                            message: message.map(MessageId),
                            count,
                        },
                        subject_name: name,
                        message_text: text,
                    })
                })
                .collect()
        }

        async fn add_llm_usage(&self, day: NaiveDate, usage: &UsageDay) -> StoreResult<()> {
            sqlx::query(
                "INSERT INTO llm_usage_days (day, calls, failures, prompt_tokens, completion_tokens) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (day) DO UPDATE SET \
                 calls = llm_usage_days.calls + excluded.calls, \
                 failures = llm_usage_days.failures + excluded.failures, \
                 prompt_tokens = llm_usage_days.prompt_tokens + excluded.prompt_tokens, \
                 completion_tokens = llm_usage_days.completion_tokens + excluded.completion_tokens",
            )
            .bind(day.to_string())
            .bind(usage.calls)
            .bind(usage.failures)
            .bind(usage.prompt_tokens)
            .bind(usage.completion_tokens)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            Ok(())
        }

        async fn llm_usage(&self, since: NaiveDate) -> StoreResult<Vec<(NaiveDate, UsageDay)>> {
            let rows: Vec<(String, i64, i64, i64, i64)> = sqlx::query_as(
                "SELECT day, calls, failures, prompt_tokens, completion_tokens FROM llm_usage_days \
                 WHERE day >= $1 ORDER BY day",
            )
            .bind(since.to_string())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.into_iter()
                .map(|(day, calls, failures, prompt_tokens, completion_tokens)| {
                    Ok((
                        day_of(&day)?,
                        UsageDay {
                            calls,
                            failures,
                            prompt_tokens,
                            completion_tokens,
                        },
                    ))
                })
                .collect()
        }

        async fn search_people(&self, query: &str, limit: i64) -> StoreResult<Vec<PersonRow>> {
            // "@name" is a username, stored without its "@".
            let query = query.trim().trim_start_matches('@');
            let rows: Vec<(i64, String, i64)> = sqlx::query_as(
                "SELECT p.id, p.display_name, (SELECT COUNT(*) FROM messages m WHERE m.author_id = p.id) \
                 FROM people p WHERE lower(p.display_name) LIKE $1 ESCAPE '\\' OR EXISTS ( \
                     SELECT 1 FROM identities i WHERE i.person_id = p.id AND ( \
                         lower(i.display_name) LIKE $1 ESCAPE '\\' \
                         OR lower(COALESCE(i.username, '')) LIKE $1 ESCAPE '\\' \
                         OR i.external_id = $2)) \
                 ORDER BY p.id LIMIT $3",
            )
            .bind(contains_pattern(query))
            .bind(query)
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(person_rows(rows))
        }

        async fn search_spaces(&self, query: &str, limit: i64) -> StoreResult<Vec<SpaceRow>> {
            let rows: Vec<(i64, String, String, String, String, i64)> = sqlx::query_as(
                "SELECT s.id, s.platform, s.external_id, s.kind, s.title, \
                        (SELECT COUNT(*) FROM messages m WHERE m.space_id = s.id) \
                 FROM spaces s WHERE lower(s.title) LIKE $1 ESCAPE '\\' OR s.external_id = $2 \
                 ORDER BY s.id LIMIT $3",
            )
            .bind(contains_pattern(query))
            .bind(query.trim())
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(id, platform, external_id, kind, title, messages)| SpaceRow {
                    id: SpaceId(id),
                    platform,
                    external_id,
                    kind,
                    title,
                    messages,
                })
                .collect())
        }

        async fn space_titles(&self, ids: &[SpaceId]) -> StoreResult<Vec<(SpaceId, String)>> {
            let ids: Vec<i64> = ids.iter().map(|s| s.0).collect();
            let rows: Vec<(i64, String)> =
                sqlx::query_as(concat!("SELECT id, title FROM spaces WHERE id ", in_list!(1)))
                    .bind(list(&ids))
                    .fetch_all(self.pool())
                    .await
                    .map_err(db_err)?;
            Ok(rows.into_iter().map(|(id, t)| (SpaceId(id), t)).collect())
        }

        async fn space_people(&self, space: SpaceId, limit: i64) -> StoreResult<Vec<PersonRow>> {
            let rows: Vec<(i64, String, i64)> = sqlx::query_as(
                "SELECT p.id, p.display_name, COUNT(*) FROM messages m JOIN people p ON p.id = m.author_id \
                 WHERE m.space_id = $1 GROUP BY p.id, p.display_name ORDER BY COUNT(*) DESC, p.id LIMIT $2",
            )
            .bind(space.0)
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(person_rows(rows))
        }

        async fn messages_per_day(
            &self,
            since: DateTime<Utc>,
        ) -> StoreResult<Vec<(SpaceId, i64, i64)>> {
            let rows: Vec<(i64, i64, i64)> = sqlx::query_as(
                "SELECT space_id, sent_at / 86400000 AS day, COUNT(*) FROM messages WHERE sent_at >= $1 \
                 GROUP BY space_id, sent_at / 86400000 ORDER BY day, space_id",
            )
            .bind(ms(since))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(space, day, n)| (SpaceId(space), day, n))
                .collect())
        }

        async fn memory_per_day(&self) -> StoreResult<(DayCounts, DayCounts)> {
            let entries: DayCounts = sqlx::query_as(
                "SELECT created_at / 86400000 AS day, COUNT(*) FROM memory_entries \
                 GROUP BY created_at / 86400000 ORDER BY day",
            )
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            let messages: DayCounts = sqlx::query_as(
                "SELECT sent_at / 86400000 AS day, COUNT(*) FROM messages \
                 GROUP BY sent_at / 86400000 ORDER BY day",
            )
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok((entries, messages))
        }

        async fn recent_job_runs(&self, limit: i64) -> StoreResult<Vec<JobRunRow>> {
            type Row = (String, String, String, String, i64, i64, i64, Option<i64>, String);
            let rows: Vec<Row> = sqlx::query_as(
                "SELECT job, run_key, holder, status, attempts, lease_until, started_at, finished_at, detail \
                 FROM job_runs ORDER BY started_at DESC, job, run_key LIMIT $1",
            )
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.into_iter()
                .map(|(job, run_key, holder, status, attempts, lease, started, finished, detail)| {
                    Ok(JobRunRow {
                        job,
                        run_key,
                        holder,
                        status,
                        attempts,
                        lease_until: from_ms(lease)?,
                        started_at: from_ms(started)?,
                        finished_at: finished.map(from_ms).transpose()?,
                        detail,
                    })
                })
                .collect()
        }

        async fn summaries_about(
            &self,
            person: PersonId,
        ) -> StoreResult<(Vec<SummaryAbout>, Vec<SummaryAbout>)> {
            // A day summary is a JSON map from person id to text: the rows naming the id as a
            // key are read, and only that person's part is kept.
            let key = format!("\"{}\"", person.0);
            let rows: Vec<(String, String, String)> = sqlx::query_as(
                "SELECT scope, day, summaries FROM day_summaries WHERE summaries LIKE $1 ORDER BY day DESC, scope",
            )
            .bind(format!("%{key}:%"))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            let mut days = Vec::new();
            for (scope, day, summaries) in rows {
                let parts: std::collections::HashMap<String, String> =
                    serde_json::from_str(&summaries).map_err(|e| {
                        StoreError::Corrupt(format!("day summary of {scope} {day}: {e}"))
                    })?;
                if let Some(text) = parts.get(&person.0.to_string()) {
                    days.push(SummaryAbout {
                        scope: parse_scope(&scope)?,
                        day: day_of(&day)?,
                        text: text.clone(),
                    });
                }
            }
            let rows: Vec<(String, String, String)> = sqlx::query_as(
                "SELECT scope, end_day, summary FROM history_summaries WHERE person_id = $1 ORDER BY end_day DESC, scope",
            )
            .bind(person.0)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            let history = rows
                .into_iter()
                .map(|(scope, day, text)| {
                    Ok(SummaryAbout {
                        scope: parse_scope(&scope)?,
                        day: day_of(&day)?,
                        text,
                    })
                })
                .collect::<StoreResult<_>>()?;
            Ok((days, history))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_matches_itself_and_nothing_wider() {
        assert_eq!(contains_pattern(" Al "), "%al%");
        assert_eq!(contains_pattern("100%_x\\"), "%100\\%\\_x\\\\%");
    }
}
