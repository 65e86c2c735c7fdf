//! Stored summaries: one per scope and day (each active person's part), and each person's
//! summary of the weeks before.

use super::rows::{from_ms, ms};
use super::{StoreError, StoreResult};
use crate::domain::{PersonId, Scope};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::BTreeMap;

/// Day summaries and history summaries.
#[async_trait]
pub trait Summaries: Send + Sync {
    /// The summary of `scope` on `day`, if one was computed.
    async fn day_summary(
        &self,
        scope: &Scope,
        day: NaiveDate,
    ) -> StoreResult<Option<DaySummaryRecord>>;
    /// How many times messages of `scope` were forgotten or deleted: read before reading
    /// what a summary is made of (`put_day_summary`, `put_history_summary`).
    async fn summary_epoch(&self, scope: &Scope) -> StoreResult<i64>;
    /// Keeps the summary of `scope` on `day`, replacing a non-final one; a final one is never
    /// replaced. Not when `read_epoch` is given and messages of the scope were forgotten
    /// since (`summary_epoch`): then false, and nothing is written.
    async fn put_day_summary(
        &self,
        scope: &Scope,
        day: NaiveDate,
        record: &DaySummaryRecord,
        read_epoch: Option<i64>,
    ) -> StoreResult<bool>;
    /// The summary of what `person` did in `scope` in the weeks up to `end_day`, if one was
    /// computed.
    async fn history_summary(
        &self,
        scope: &Scope,
        person: PersonId,
        end_day: NaiveDate,
    ) -> StoreResult<Option<String>>;
    /// Keeps a history summary; the first one computed for (scope, person, end day) stays.
    /// Not when `read_epoch` is given and messages of the scope were forgotten since
    /// (`summary_epoch`): then false, and nothing is written.
    async fn put_history_summary(
        &self,
        scope: &Scope,
        person: PersonId,
        end_day: NaiveDate,
        summary: &str,
        at: DateTime<Utc>,
        read_epoch: Option<i64>,
    ) -> StoreResult<bool>;
}

/// A stored day summary: one short text per active person of a scope and day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaySummaryRecord {
    /// Each active person's part.
    pub summaries: BTreeMap<PersonId, String>,
    /// Highest message id the summary saw; newer messages make it stale.
    pub through_message: i64,
    /// Messages the summary saw.
    pub message_count: i64,
    /// Computed after the day ended: never recomputed.
    pub is_final: bool,
    /// When it was computed.
    pub computed_at: DateTime<Utc>,
}

on_both_backends! {
    #[async_trait]
    impl Summaries for Backend {
        async fn day_summary(
            &self,
            scope: &Scope,
            day: NaiveDate,
        ) -> StoreResult<Option<DaySummaryRecord>> {
            let row: Option<(String, i64, i64, bool, i64)> = sqlx::query_as(
                "SELECT summaries, through_message_id, message_count, is_final, computed_at FROM day_summaries WHERE scope = $1 AND day = $2",
            )
            .bind(scope.key())
            .bind(day.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            let Some((json, through, count, is_final, at)) = row else {
                return Ok(None);
            };
            day_summary_record(scope, day, &json, through, count, is_final, at).map(Some)
        }

        async fn summary_epoch(&self, scope: &Scope) -> StoreResult<i64> {
            let epoch: Option<i64> =
                sqlx::query_scalar("SELECT epoch FROM summary_epochs WHERE scope = $1")
                    .bind(scope.key())
                    .fetch_optional(self.pool())
                    .await
                    .map_err(db_err)?;
            Ok(epoch.unwrap_or(0))
        }

        async fn put_day_summary(
            &self,
            scope: &Scope,
            day: NaiveDate,
            record: &DaySummaryRecord,
            read_epoch: Option<i64>,
        ) -> StoreResult<bool> {
            let json = summaries_json(record)?;
            let mut tx = self.write_tx().await?;
            if !epoch_holds(&mut tx, scope, read_epoch).await? {
                return Ok(false);
            }
            // A final summary is never replaced by a non-final one (two processes racing).
            sqlx::query(
                "INSERT INTO day_summaries (scope, day, summaries, through_message_id, message_count, is_final, computed_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (scope, day) DO UPDATE SET summaries = excluded.summaries, \
                   through_message_id = excluded.through_message_id, message_count = excluded.message_count, \
                   is_final = excluded.is_final, computed_at = excluded.computed_at \
                 WHERE NOT day_summaries.is_final",
            )
            .bind(scope.key())
            .bind(day.to_string())
            .bind(json)
            .bind(record.through_message)
            .bind(record.message_count)
            .bind(record.is_final)
            .bind(ms(record.computed_at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(true)
        }

        async fn history_summary(
            &self,
            scope: &Scope,
            person: PersonId,
            end_day: NaiveDate,
        ) -> StoreResult<Option<String>> {
            sqlx::query_scalar("SELECT summary FROM history_summaries WHERE scope = $1 AND person_id = $2 AND end_day = $3")
                .bind(scope.key())
                .bind(person.0)
                .bind(end_day.to_string())
                .fetch_optional(self.pool())
                .await
                .map_err(db_err)
        }

        async fn put_history_summary(
            &self,
            scope: &Scope,
            person: PersonId,
            end_day: NaiveDate,
            summary: &str,
            at: DateTime<Utc>,
            read_epoch: Option<i64>,
        ) -> StoreResult<bool> {
            let mut tx = self.write_tx().await?;
            if !epoch_holds(&mut tx, scope, read_epoch).await? {
                return Ok(false);
            }
            sqlx::query(
                "INSERT INTO history_summaries (scope, person_id, end_day, summary, computed_at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (scope, person_id, end_day) DO NOTHING",
            )
            .bind(scope.key())
            .bind(person.0)
            .bind(end_day.to_string())
            .bind(summary)
            .bind(ms(at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(true)
        }
    }

    /// Whether no message of `scope` was forgotten since `read_epoch` was read (always, with
    /// none). The scope's row is locked: a forget counted after this waits until the write
    /// is committed, then drops what it wrote.
    async fn epoch_holds(
        conn: &mut Conn,
        scope: &Scope,
        read_epoch: Option<i64>,
    ) -> StoreResult<bool> {
        let Some(read) = read_epoch else {
            return Ok(true);
        };
        sqlx::query("INSERT INTO summary_epochs (scope) VALUES ($1) ON CONFLICT (scope) DO NOTHING")
            .bind(scope.key())
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        let now: i64 = sqlx::query_scalar(concat!(
            "SELECT epoch FROM summary_epochs WHERE scope = $1",
            for_update!()
        ))
        .bind(scope.key())
        .fetch_one(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(now == read)
    }
}

/// The person → summary map as stored (JSON keyed by person id).
fn summaries_json(record: &DaySummaryRecord) -> StoreResult<String> {
    let raw: BTreeMap<i64, &String> = record.summaries.iter().map(|(k, v)| (k.0, v)).collect();
    serde_json::to_string(&raw).map_err(|cause| StoreError::Encode {
        what: "a day summary",
        cause,
    })
}

/// A stored day summary row as a record.
fn day_summary_record(
    scope: &Scope,
    day: NaiveDate,
    json: &str,
    through: i64,
    count: i64,
    is_final: bool,
    at: i64,
) -> StoreResult<DaySummaryRecord> {
    let raw: BTreeMap<i64, String> = serde_json::from_str(json)
        .map_err(|e| StoreError::Corrupt(format!("day summary {}/{day}: {e}", scope.key())))?;
    Ok(DaySummaryRecord {
        summaries: raw.into_iter().map(|(k, v)| (PersonId(k), v)).collect(),
        through_message: through,
        message_count: count,
        is_final,
        computed_at: from_ms(at)?,
    })
}
