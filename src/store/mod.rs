//! The store contract: the only place that knows about SQL. Everything above it (ingest,
//! memory) talks to `dyn Store`; `sqlite` is the embedded backend, PostgreSQL comes behind the
//! same trait.

pub mod sqlite;

use crate::domain::{
    MessageId, Person, PersonId, Platform, Privacy, Scope, SpaceId, SpaceKind, StoredMessage,
};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::BTreeMap;

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
}
