//! The MEMORY.md facts text of each person and scope: the current text (optimistic
//! concurrency by version) and every version before it.

use super::rows::{from_ms, ms, parse_scope};
use super::{Change, StoreError, StoreResult};
use crate::domain::{MessageId, PersonId, Scope};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// The facts text of a person in a scope, and its versions.
#[async_trait]
pub trait Facts: Send + Sync {
    /// The current facts text of `person` in `scope` (empty, version 0, when none).
    async fn facts(&self, person: PersonId, scope: &Scope) -> StoreResult<FactsRecord>;
    /// Replaces the facts text if its version is still `expected_version`, and appends the
    /// change to the history, atomically. `Conflict` when someone else wrote first.
    async fn update_facts(
        &self,
        person: PersonId,
        scope: &Scope,
        expected_version: i64,
        text: &str,
        change: &FactChange,
    ) -> StoreResult<i64>;
    /// Every version of the facts text of `person` in `scope`, oldest first.
    async fn fact_history(&self, person: PersonId, scope: &Scope) -> StoreResult<Vec<FactVersion>>;
    /// Scopes in which `person` has a facts text (possibly empty).
    async fn fact_scopes(&self, person: PersonId) -> StoreResult<Vec<Scope>>;
}

/// The current facts text of one person in one scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactsRecord {
    /// The MEMORY.md text.
    pub text: String,
    /// 0 when nothing was ever stored.
    pub version: i64,
    /// When it was last written (None when never).
    pub updated_at: Option<DateTime<Utc>>,
}

/// What a facts change was and where it came from, for the version history.
#[derive(Debug, Clone)]
pub struct FactChange {
    /// "remember", "forget", ...
    pub op: String,
    /// The fact as the person stated it.
    pub request: String,
    /// "llm" or "offline": how the new text was produced.
    pub method: String,
    /// Who asked for the change (None: the bot itself).
    pub changed_by: Option<PersonId>,
    /// The message that asked for it.
    pub source_message: Option<MessageId>,
    /// When.
    pub at: DateTime<Utc>,
    /// A forget: the earlier versions held what is being forgotten, so they are deleted in
    /// the same transaction (the history then starts with this version).
    pub drop_history: bool,
}

/// One version of a facts text, as kept in its history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactVersion {
    /// 1 for the first text, one more for each change.
    pub version: i64,
    /// What the change was (`FactChange::op`).
    pub op: String,
    /// The fact as the person stated it.
    pub request: String,
    /// The whole facts text after the change.
    pub text: String,
    /// "llm" or "offline".
    pub method: String,
    /// Who asked for the change.
    pub changed_by: Option<PersonId>,
    /// The message that asked for it.
    pub source_message: Option<MessageId>,
    /// When.
    pub at: DateTime<Utc>,
}

on_both_backends! {
    #[async_trait]
    impl Facts for Backend {
        async fn facts(&self, person: PersonId, scope: &Scope) -> StoreResult<FactsRecord> {
            let row: Option<(String, i64, i64)> = sqlx::query_as(
                "SELECT text, version, updated_at FROM facts WHERE person_id = $1 AND scope = $2",
            )
            .bind(person.0)
            .bind(scope.key())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            match row {
                None => Ok(FactsRecord {
                    text: String::new(),
                    version: 0,
                    updated_at: None,
                }),
                Some((text, version, at)) => Ok(FactsRecord {
                    text,
                    version,
                    updated_at: Some(from_ms(at)?),
                }),
            }
        }

        async fn update_facts(
            &self,
            person: PersonId,
            scope: &Scope,
            expected_version: i64,
            text: &str,
            change: &FactChange,
        ) -> StoreResult<i64> {
            let new_version = expected_version + 1;
            let key = scope.key();
            let at = ms(change.at);
            let mut tx = self.write_tx().await?;
            let written = if expected_version == 0 {
                sqlx::query(
                    "INSERT INTO facts (person_id, scope, text, version, updated_at) VALUES ($1, $2, $3, 1, $4) \
                     ON CONFLICT (person_id, scope) DO NOTHING",
                )
                .bind(person.0)
                .bind(&key)
                .bind(text)
                .bind(at)
                .execute(&mut *tx)
                .await
            } else {
                sqlx::query(
                    "UPDATE facts SET text = $1, version = $2, updated_at = $3 WHERE person_id = $4 AND scope = $5 AND version = $6",
                )
                .bind(text)
                .bind(new_version)
                .bind(at)
                .bind(person.0)
                .bind(&key)
                .bind(expected_version)
                .execute(&mut *tx)
                .await
            }
            .map_err(db_err)?
            .rows_affected();
            if written == 0 {
                tx.rollback().await.map_err(db_err)?;
                return Err(StoreError::Conflict {
                    what: format!("facts of person {person} in {key}"),
                });
            }
            if change.drop_history {
                sqlx::query("DELETE FROM fact_versions WHERE person_id = $1 AND scope = $2")
                    .bind(person.0)
                    .bind(&key)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            sqlx::query(
                "INSERT INTO fact_versions (person_id, scope, version, op, request, text, method, changed_by, source_message_id, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(person.0)
            .bind(&key)
            .bind(new_version)
            .bind(&change.op)
            .bind(&change.request)
            .bind(text)
            .bind(&change.method)
            .bind(change.changed_by.map(|p| p.0))
            .bind(change.source_message.map(|m| m.0))
            .bind(at)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            // Delivered at commit, to every process listening (see `watch_changes`).
            changed(
                &mut tx,
                &Change::Facts {
                    person,
                    scope: scope.clone(),
                },
            )
            .await?;
            tx.commit().await.map_err(db_err)?;
            Ok(new_version)
        }

        async fn fact_history(&self, person: PersonId, scope: &Scope) -> StoreResult<Vec<FactVersion>> {
            let rows: Vec<FactVersionRow> = sqlx::query_as(
                "SELECT version, op, request, text, method, changed_by, source_message_id, created_at FROM fact_versions \
                 WHERE person_id = $1 AND scope = $2 ORDER BY version",
            )
            .bind(person.0)
            .bind(scope.key())
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            fact_versions(rows)
        }

        async fn fact_scopes(&self, person: PersonId) -> StoreResult<Vec<Scope>> {
            let keys: Vec<String> =
                sqlx::query_scalar("SELECT scope FROM facts WHERE person_id = $1 ORDER BY scope")
                    .bind(person.0)
                    .fetch_all(self.pool())
                    .await
                    .map_err(db_err)?;
            keys.iter().map(|k| parse_scope(k)).collect()
        }
    }
}

/// version, op, request, text, method, changed_by, source_message_id, created_at
type FactVersionRow = (
    i64,
    String,
    String,
    String,
    String,
    Option<i64>,
    Option<i64>,
    i64,
);

fn fact_versions(rows: Vec<FactVersionRow>) -> StoreResult<Vec<FactVersion>> {
    rows.into_iter()
        .map(|(version, op, request, text, method, by, src, at)| {
            Ok(FactVersion {
                version,
                op,
                request,
                text,
                method,
                changed_by: by.map(PersonId),
                source_message: src.map(MessageId),
                at: from_ms(at)?,
            })
        })
        .collect()
}
