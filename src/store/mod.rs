//! The store contract: the only place that knows about SQL. Everything above it (ingest,
//! memory) talks to `dyn Store`; `sqlite` is the embedded backend, PostgreSQL comes behind the
//! same trait.

pub mod copy;
pub mod postgres;
mod rows;
pub mod sqlite;

use crate::domain::{
    MessageId, Person, PersonId, Platform, Privacy, Scope, SpaceId, SpaceKind, StoredMessage,
};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::BTreeMap;

pub use copy::{Table, Value};
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open database {url}: {reason}")]
    Open { url: String, reason: String },
    #[error("database migration failed: {0}")]
    Migrate(String),
    /// The database was busy or the connection dropped; the same call may succeed later.
    #[error("database temporarily unavailable ({0}); retry")]
    Unavailable(String),
    #[error("database error: {0}")]
    Query(String),
    /// Someone else changed the row since it was read (optimistic concurrency).
    #[error("concurrent update of {what}; re-read and retry")]
    Conflict { what: String },
    #[error("stored data is malformed: {0}")]
    Corrupt(String),
}

/// Migration failures, with the one an operator can act on spelled out.
pub(crate) fn migrate_error(e: sqlx::migrate::MigrateError) -> StoreError {
    match e {
        sqlx::migrate::MigrateError::VersionMissing(v) => StoreError::Migrate(format!(
            "the database has migration {v}, which this engram does not know: it was upgraded by a newer engram; run that version or newer"
        )),
        other => StoreError::Migrate(other.to_string()),
    }
}

impl StoreError {
    /// Whether repeating the same operation may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable(_) | StoreError::Conflict { .. }
        )
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A message to store, already resolved to internal ids by the ingestor.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub space: SpaceId,
    pub channel: String,
    pub scope: Scope,
    pub privacy: Privacy,
    pub author: PersonId,
    pub is_bot: bool,
    /// A memory command addressed to the bot, not chatter: summaries skip it.
    pub is_command: bool,
    pub external_id: String,
    pub reply_to: Option<String>,
    pub text: String,
    pub sent_at: DateTime<Utc>,
}

/// The current facts text of one person in one scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactsRecord {
    pub text: String,
    /// 0 when nothing was ever stored.
    pub version: i64,
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
    pub changed_by: Option<PersonId>,
    pub source_message: Option<MessageId>,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactVersion {
    pub version: i64,
    pub op: String,
    pub request: String,
    pub text: String,
    pub method: String,
    pub changed_by: Option<PersonId>,
    pub source_message: Option<MessageId>,
    pub at: DateTime<Utc>,
}

/// A stored day summary: one short text per active person of a scope and day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaySummaryRecord {
    pub summaries: BTreeMap<PersonId, String>,
    /// Highest message id the summary saw; newer messages make it stale.
    pub through_message: i64,
    pub message_count: i64,
    /// Computed after the day ended: never recomputed.
    pub is_final: bool,
    pub computed_at: DateTime<Utc>,
}

/// Last message id and count of the chatter of a scope within a time range: cheap change
/// detection for summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RangeStats {
    pub last_message: i64,
    pub count: i64,
}

/// The outcome of claiming one run of a scheduled job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobClaim {
    /// This holder runs it now (first claim, a retry after failure, or a takeover after the
    /// previous holder's lease expired).
    Acquired { attempt: i64 },
    /// It ran to completion already.
    AlreadyDone,
    /// Another live holder is running it.
    HeldByOther {
        holder: String,
        until: DateTime<Utc>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRun {
    pub job: String,
    pub run_key: String,
    pub holder: String,
    pub status: String,
    pub attempts: i64,
    pub detail: String,
}

/// A change another process made that per-process caches must forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Facts {
        person: PersonId,
        scope: Scope,
    },
    /// The change feed was interrupted: anything may have changed meanwhile.
    Unknown,
}

impl Change {
    pub fn payload(&self) -> String {
        match self {
            Change::Facts { person, scope } => format!("facts|{}|{}", person.0, scope.key()),
            Change::Unknown => "unknown".to_string(),
        }
    }

    pub fn parse(payload: &str) -> Change {
        let mut parts = payload.splitn(3, '|');
        match (
            parts.next(),
            parts.next().and_then(|p| p.parse().ok()),
            parts.next().and_then(Scope::parse),
        ) {
            (Some("facts"), Some(person), Some(scope)) => Change::Facts {
                person: PersonId(person),
                scope,
            },
            _ => Change::Unknown,
        }
    }
}

/// A full-text hit: the message and its backend's relevance score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub message: StoredMessage,
    pub score: f64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCount {
    pub table: &'static str,
    pub rows: i64,
}

#[async_trait]
pub trait Store: Send + Sync {
    /// Maps a platform account to a person, creating both on first sight; keeps the display
    /// name current.
    async fn resolve_person(
        &self,
        platform: Platform,
        external_id: &str,
        display_name: &str,
    ) -> StoreResult<PersonId>;
    /// A platform account by id, without creating it.
    async fn find_identity(
        &self,
        platform: Platform,
        external_id: &str,
    ) -> StoreResult<Option<PersonId>>;
    /// A platform account by display name (case-insensitive).
    async fn find_person_by_name(
        &self,
        platform: Platform,
        name: &str,
    ) -> StoreResult<Option<PersonId>>;
    async fn person(&self, id: PersonId) -> StoreResult<Option<Person>>;
    async fn resolve_space(
        &self,
        platform: Platform,
        external_id: &str,
        kind: SpaceKind,
        title: &str,
    ) -> StoreResult<SpaceId>;

    /// Stores a message; storing the same (space, channel, external id) twice returns the first id.
    async fn insert_message(&self, msg: &NewMessage) -> StoreResult<MessageId>;
    /// Stores many messages in one transaction (bulk import, benchmarks).
    async fn insert_messages(&self, msgs: &[NewMessage]) -> StoreResult<Vec<MessageId>>;
    /// The latest `limit` messages of a channel, oldest first.
    async fn recent_messages(
        &self,
        space: SpaceId,
        channel: &str,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    /// Chatter (people's messages, not the bot's, not memory commands) of a scope in
    /// [from, to), oldest first, at most `limit` (the latest ones).
    async fn chatter_in_range(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    /// One author's chatter in a scope in [from, to), oldest first, at most `limit` (the latest).
    async fn author_chatter_in_range(
        &self,
        scope: &Scope,
        author: PersonId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    async fn chatter_stats(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<RangeStats>;

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
    async fn fact_history(&self, person: PersonId, scope: &Scope) -> StoreResult<Vec<FactVersion>>;

    async fn day_summary(
        &self,
        scope: &Scope,
        day: NaiveDate,
    ) -> StoreResult<Option<DaySummaryRecord>>;
    async fn put_day_summary(
        &self,
        scope: &Scope,
        day: NaiveDate,
        record: &DaySummaryRecord,
    ) -> StoreResult<()>;
    async fn history_summary(
        &self,
        scope: &Scope,
        person: PersonId,
        end_day: NaiveDate,
    ) -> StoreResult<Option<String>>;
    async fn put_history_summary(
        &self,
        scope: &Scope,
        person: PersonId,
        end_day: NaiveDate,
        summary: &str,
        at: DateTime<Utc>,
    ) -> StoreResult<()>;

    /// Row counts per table (operations, migration checks).
    async fn table_counts(&self) -> StoreResult<Vec<TableCount>>;

    /// Scopes with chatter in [from, to) (what a scheduled summary job has to cover).
    async fn active_scopes(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<Scope>>;

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
    /// Marks a claimed run done (or failed, to be retried). False if `holder` lost the claim.
    async fn finish_job(
        &self,
        job: &str,
        run_key: &str,
        holder: &str,
        now: DateTime<Utc>,
        ok: bool,
        detail: &str,
    ) -> StoreResult<bool>;
    async fn job_runs(&self, job: &str) -> StoreResult<Vec<JobRun>>;

    /// Full-text search over messages in the given scopes (the privacy filter is part of the
    /// query). `terms` are plain words; they are never interpreted as query syntax.
    async fn search_messages(
        &self,
        scopes: &[Scope],
        terms: &[String],
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>>;

    /// Rows of `table` in primary-key order, as canonical values (copying between backends).
    async fn dump_rows(
        &self,
        table: Table,
        offset: i64,
        limit: i64,
    ) -> StoreResult<Vec<Vec<Value>>>;
    /// Inserts rows from `dump_rows`; rows already present are left alone. Returns rows added.
    async fn load_rows(&self, table: Table, rows: &[Vec<Value>]) -> StoreResult<u64>;
    /// After loading rows with explicit ids: move id sequences past them.
    async fn finish_load(&self) -> StoreResult<()>;

    /// Changes written by other processes sharing this database, for cache invalidation.
    /// None when the store is not shared between processes (SQLite: one bot process).
    async fn watch_changes(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>>;

    /// Routine upkeep that keeps query plans and indexes good after much writing: planner
    /// statistics, index merges, dead rows. Safe to run any time; the daily job runs it.
    async fn maintain(&self) -> StoreResult<()>;
}

/// Splits user text into plain search terms: letters and digits only, lowercased, deduplicated,
/// at most `max` of them. Quotes, operators, NEAR, parentheses and SQL never survive this.
pub fn search_terms(text: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let w: String = word.to_lowercase().chars().take(64).collect();
        if !out.contains(&w) {
            out.push(w);
        }
        if out.len() == max {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::search_terms;

    #[test]
    fn search_terms_strip_all_syntax() {
        assert_eq!(
            search_terms("\"rust\" AND (NEAR kube*) OR -x; DROP TABLE", 10),
            ["rust", "and", "near", "kube", "or", "x", "drop", "table"]
        );
        assert!(search_terms("🦀 … ()\"", 10).is_empty());
        assert_eq!(search_terms("a a a b", 10), ["a", "b"]);
        assert_eq!(search_terms(&"word ".repeat(5000), 32), ["word"]);
        assert_eq!(search_terms("Zoë 中文", 10), ["zoë", "中文"]);
    }
}
