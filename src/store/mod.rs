//! The store: the only place that knows about SQL. Each concern (identities, messages, search,
//! entries, facts, summaries, jobs, admin, oversight) is a small trait in its own file, written once for
//! both backends with `on_both_backends!`; `sqlite` and `postgres` open their database and keep
//! what really differs. Everything above talks to `dyn Store`, the sum of the concerns.

/// Which SQL dialect a backend speaks, for the few statements written per backend
/// (`per_dialect!`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// Writes the items once for both backends. Inside, `Backend` is the store type, `DIALECT` its
/// dialect, and `db_err` its error mapping (each backend's `shared` module says what else).
/// Statements use `$1`-style parameters, which both drivers bind by number; a statement
/// that differs between the databases is written with `per_dialect!`.
macro_rules! on_both_backends {
    ($($item:item)*) => {
        pub(in crate::store) mod on_sqlite {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use $crate::store::sqlite::shared::*;
            $($item)*
        }
        pub(in crate::store) mod on_postgres {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use $crate::store::postgres::shared::*;
            $($item)*
        }
    };
}

/// The columns `message_from_row` reads: a message `m` joined with its author `p`.
/// How many columns `message_columns!` reads (a score read with them comes next).
pub(crate) const MESSAGE_COLUMNS: usize = 12;

macro_rules! message_columns {
    () => {
        "m.id, m.space_id, m.channel, m.scope, m.author_id, p.display_name, m.is_bot, m.text, m.sent_at, m.episode_id, m.attachment_of, m.language"
    };
}

/// The text for this backend's dialect, inside `on_both_backends!`.
#[allow(unused_macros)]
macro_rules! per_dialect {
    (sqlite: $sqlite:expr, postgres: $postgres:expr $(,)?) => {
        match DIALECT {
            $crate::store::Dialect::Sqlite => $sqlite,
            $crate::store::Dialect::Postgres => $postgres,
        }
    };
}

pub mod admin;
pub mod attachments;
pub mod copy;
pub mod entries;
pub mod episodes;
pub mod facts;
pub mod identities;
pub mod jobs;
pub mod messages;
pub mod oversight;
pub mod postgres;
mod rows;
pub mod search;
pub mod sqlite;
pub mod summaries;
pub mod terms;
pub mod url;
pub mod vectors;

use crate::domain::{MessageId, PersonId, Scope, SpaceId, StoredMessage};

pub use admin::{Admin, Readiness, TableCount};
pub use attachments::{AttachmentRecord, Attachments, NewAttachment, Rewrite};
pub use copy::{Table, Value};
pub use entries::{Entries, ExtractionApplied, ExtractionCounts, Hearsay, NewHearsay};
pub use episodes::{DetailsSaved, Episodes, RefreshDue, WorkingMemory};
pub use facts::{FactChange, FactVersion, Facts, FactsRecord};
pub use identities::{Account, Among, ForgetCounts, Identities, LinkRedeem, PersonMatch, Resolved};
pub use jobs::{
    Finish, JobClaim, JobRun, JobSummary, Jobs, LeaseRow, holder_is_gone, process_holder,
};
pub use messages::{
    BotMessage, BotMessageFilter, ChannelCursor, MessageFile, Messages, NewMessage, RangeStats,
    Stored,
};
pub use oversight::{
    AuditLine, JobRunRow, NewAudit, Oversight, PersonRow, SpaceRow, SummaryAbout, UsageDay,
};
pub use postgres::PostgresStore;
pub use search::{
    Adjacent, Episode, EpisodeClose, EpisodeEnd, EpisodeHit, EpisodeStart, EpisodeVector,
    IndexedMessage, MessageVector, Nearby, Neighbours, SearchHit, SearchIndex,
};
pub use sqlite::SqliteStore;
pub use summaries::{DaySummaryRecord, Summaries};
pub use terms::{
    Bm25, DocumentTerms, WordPairs, document_terms, document_terms_in, is_stop_word, plain_words,
    query_terms, query_terms_in, rank_documents,
};
pub use url::{DbUrl, DbUrlError};
pub use vectors::{SpaceCoverage, VectorCoverage, Vectors};

/// What made a store call fail. Each variant keeps its cause typed (the driver's error, not a
/// copy of its text) and shows it in its message, so a log line or the command line tells the
/// whole story in one line. The text is for logs and the command line, never for a chat: the
/// chat layer words its own answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened, reached or prepared at start-up.
    #[error("cannot open database {url}: {cause}")]
    Open {
        /// The database URL, password removed.
        url: String,
        /// Why: the driver's error, or what is missing on the server.
        cause: Cause,
    },
    /// The URL names no backend this build knows, or is malformed.
    #[error(transparent)]
    Url(#[from] DbUrlError),
    /// A command that only reads was pointed at a SQLite file that is not there.
    #[error(
        "there is no database at {0}: run this where the bot runs, or point store.url (ENGRAM__STORE__URL or --config) at its database"
    )]
    Missing(String),
    /// The database has a migration this build does not know: a newer engram upgraded it.
    #[error(
        "database migration failed: the database has migration {0}, which this engram does not know: it was upgraded by a newer engram; run that version or newer"
    )]
    FromNewer(i64),
    /// Applying the migrations failed.
    #[error("database migration failed: {0}")]
    Migrate(sqlx::migrate::MigrateError),
    /// The database was busy or the connection dropped; the same call may succeed later.
    #[error("database temporarily unavailable ({0}); retry")]
    Unavailable(sqlx::Error),
    /// A statement failed.
    #[error("database error: {0}")]
    Query(sqlx::Error),
    /// A value could not be encoded for storage.
    #[error("cannot encode {what} for the database: {cause}")]
    Encode {
        /// What was being stored.
        what: &'static str,
        /// The encoder's error.
        cause: serde_json::Error,
    },
    /// A message came under the key (space, channel, platform id) of one stored from someone
    /// else: it is not that message (an id chosen through the API, a forged one), and
    /// nothing was stored or changed.
    #[error("message id {external_id:?} is another author's")]
    TakenId {
        /// The platform id it came under.
        external_id: String,
    },
    /// Someone else changed the row since it was read (optimistic concurrency).
    #[error("concurrent update of {what}; re-read and retry")]
    Conflict {
        /// The row that changed.
        what: String,
    },
    /// A stored column could not be read as its type.
    #[error("stored data is malformed: {0}")]
    Column(sqlx::Error),
    /// A stored value is not one this build can read (an unknown scope key, a bad date).
    #[error("stored data is malformed: {0}")]
    Corrupt(String),
}

/// The underlying error behind a `StoreError::Open`.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Each backend's migrations, embedded by `build.rs`: (version, description, SQL).
mod embedded {
    include!(concat!(env!("OUT_DIR"), "/migrations.rs"));
}

/// The migrator of a backend's embedded migrations (`embedded::SQLITE` or `POSTGRES`), as
/// `sqlx::migrate!` would build it: each checksummed, in a transaction unless its SQL starts
/// with `-- no-transaction`.
fn migrator(files: &'static [(i64, &'static str, &'static str)]) -> sqlx::migrate::Migrator {
    use sqlx::migrate::{Migration, MigrationType, Migrator};
    Migrator::with_migrations(
        files
            .iter()
            .map(|&(version, what, sql)| {
                Migration::new(
                    version,
                    std::borrow::Cow::Borrowed(what),
                    MigrationType::Simple,
                    sqlx::SqlStr::from_static(sql),
                    sql.starts_with("-- no-transaction"),
                )
            })
            .collect(),
    )
}

/// Migration failures, with the one an operator can act on spelled out.
pub(crate) fn migrate_error(e: sqlx::migrate::MigrateError) -> StoreError {
    match e {
        sqlx::migrate::MigrateError::VersionMissing(v) => StoreError::FromNewer(v),
        other => StoreError::Migrate(other),
    }
}

/// Runs `attempt` (one transaction) again, up to three times in all, while PostgreSQL aborts
/// it to break a deadlock or a serialization conflict with another writer (forgets, clears
/// and closes of one person's episodes can meet their rows in different orders): rolled back,
/// it is safe to repeat, and one of the two has gone through meanwhile.
pub(crate) async fn again_if_aborted<T, F, Fut>(attempt: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    again_while(
        StoreError::aborted_by_conflict,
        "transaction aborted by a conflict: run again",
        attempt,
    )
    .await
}

/// Runs `attempt` up to three times in all while its error is one `again` says to retry.
async fn again_while<T, F, Fut>(
    again: fn(&StoreError) -> bool,
    what: &'static str,
    mut attempt: F,
) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(e) if again(&e) && tries < 3 => {
                tracing::info!(error = %e, tries, "{what}");
                tries += 1;
            }
            done => return done,
        }
    }
}

/// The connections of a store's pool that one question's statements use at once (beside
/// PostgreSQL's change listener), opened at start-up (`kept_open`).
pub(crate) const OPEN_FOR_A_QUESTION: u32 = 4;

/// A pool of at most `size` connections that opens `open` of them at once and keeps that many
/// open from then on (both stores' pools).
///
/// sqlx's defaults open connections only when asked for: the first question after start-up
/// waited for the searches' new connections (PostgreSQL dev60: the first question took 16 to
/// 27 ms, the median one 11). sqlx still closes a connection idle for 10 minutes or older
/// than 30 (a NAT or proxy may drop a quiet one unseen), but a closed one is replaced at once,
/// off any question's path. sqlx pings each connection it takes back; whether it pings one
/// again before handing it out is each backend's choice (`test_before_acquire`).
pub(crate) fn kept_open<DB: sqlx::Database>(
    options: sqlx::pool::PoolOptions<DB>,
    size: u32,
    open: u32,
) -> sqlx::pool::PoolOptions<DB> {
    options
        .max_connections(size)
        .min_connections(open.min(size))
}

/// Runs `attempt` again, up to three times in all, while it fails on a lost connection
/// (`StoreError::connection_lost`): most often the server had ended the connection it was
/// given before it ran anything there, and the next try takes another (PostgreSQL pings,
/// before use, every connection back before that loss was seen: `postgres::needs_ping`).
/// Only for work that may run twice: reads, and writes that are the same when repeated
/// (storing a message under its platform id).
pub(crate) async fn again_if_lost<T, F, Fut>(attempt: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    again_while(
        StoreError::connection_lost,
        "connection lost: run again",
        attempt,
    )
    .await
}

/// The SQLSTATEs of a connection PostgreSQL ended (admin_shutdown, crash_shutdown,
/// cannot_connect_now, idle_session_timeout, idle_in_transaction_session_timeout); class 08
/// (connection exceptions) counts too, but for 08P01 (protocol_violation), which another try
/// would meet again.
pub(crate) const CONNECTION_ENDED: [&str; 5] = ["57P01", "57P02", "57P03", "57P05", "25P03"];

/// Whether `e` says the connection was lost or could not be made.
pub(crate) fn lost_connection(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|c| {
            CONNECTION_ENDED.contains(&c.as_ref()) || (c.starts_with("08") && c != "08P01")
        }),
        _ => false,
    }
}

/// The SQLSTATEs of a transaction PostgreSQL aborted to break a serialization conflict
/// (40001) or a deadlock (40P01): safe to run again.
pub(crate) const ABORTED_BY_CONFLICT: [&str; 2] = ["40001", "40P01"];

impl StoreError {
    /// PostgreSQL aborted the transaction to break a deadlock or a serialization conflict.
    pub fn aborted_by_conflict(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable(sqlx::Error::Database(d))
                if d.code().is_some_and(|c| ABORTED_BY_CONFLICT.contains(&c.as_ref()))
        )
    }

    /// The connection the call ran on was lost, or none could be opened: the server ended it
    /// (a restart, an administrator, a proxy), cannot be reached, or (SQLite) the file could
    /// not be read. A statement that met an already ended connection ran nothing; one whose
    /// connection was lost while it ran may have committed.
    pub fn connection_lost(&self) -> bool {
        matches!(self, StoreError::Unavailable(e) if lost_connection(e))
    }

    /// Whether repeating the same operation may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable(_) | StoreError::Conflict { .. }
        )
    }
}

/// What a store call returns.
pub type StoreResult<T> = Result<T, StoreError>;

/// A change another process made that per-process caches must forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A person's facts text of a scope changed.
    Facts {
        /// Whose.
        person: PersonId,
        /// Of which scope.
        scope: Scope,
    },
    /// `/memory clear`: everything derived about the person is gone.
    Cleared {
        /// Whose.
        person: PersonId,
    },
    /// Messages or memory were forgotten (a forget, a deleted or edited platform message):
    /// anything cached may hold them.
    Forgotten,
    /// What others said about the person changed.
    Hearsay {
        /// About whom.
        person: PersonId,
    },
    /// The change feed was interrupted: anything may have changed meanwhile.
    Unknown,
    /// Nothing changed: sent last, it tells the sender when a process has applied every
    /// change before it (the feed is in order).
    Marker,
}

impl Change {
    /// The change as sent on the feed (`parse` reads it back).
    pub fn payload(&self) -> String {
        match self {
            Change::Facts { person, scope } => format!("facts|{}|{}", person.0, scope.key()),
            Change::Cleared { person } => format!("cleared|{}", person.0),
            Change::Forgotten => "forgotten".to_string(),
            Change::Hearsay { person } => format!("hearsay|{}", person.0),
            Change::Unknown => "unknown".to_string(),
            Change::Marker => "marker".to_string(),
        }
    }

    /// A change read from the feed; `Unknown` for anything this build cannot read.
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
            (Some("cleared"), Some(person), None) => Change::Cleared {
                person: PersonId(person),
            },
            (Some("forgotten"), None, None) => Change::Forgotten,
            (Some("marker"), None, None) => Change::Marker,
            (Some("hearsay"), Some(person), None) => Change::Hearsay {
                person: PersonId(person),
            },
            _ => Change::Unknown,
        }
    }
}

/// The whole store: every concern, as the rest of the bot holds it (`Arc<dyn Store>`). Each
/// part's methods come from its concern's trait; a store is whatever implements them all.
pub trait Store:
    Identities
    + Messages
    + Attachments
    + SearchIndex
    + Vectors
    + Episodes
    + Entries
    + Facts
    + Summaries
    + Jobs
    + Admin
    + Oversight
    + Send
    + Sync
{
}

impl<T> Store for T where
    T: Identities
        + Messages
        + Attachments
        + SearchIndex
        + Vectors
        + Episodes
        + Entries
        + Facts
        + Summaries
        + Jobs
        + Admin
        + Oversight
        + Send
        + Sync
{
}
