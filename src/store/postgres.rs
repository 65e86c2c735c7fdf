//! The PostgreSQL + pgvector backend of `Store`, chosen by a `postgres://` URL: shared by any
//! number of bot processes. Same rows as SQLite (times in Unix ms), with vector/HNSW columns; numbered migrations in `migrations/postgres`.

use super::rows::{from_ms, ms, parse_scope};
use super::*;
use crate::domain::language::Language;
use crate::domain::{Embedding, VectorSpaceId};
use crate::store::messages::{Indexable, QueuedRow};
use shared::{nearest_first, similarity};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{PgPool, Row};
use std::str::FromStr;
use std::time::Duration;

/// The scope the lexical searches are planned with (`warm_searches`): no message has it.
const WARMING_SCOPE: &str = "engram:warming";

/// NOTIFY channel on which writers announce changes that other processes' caches hold.
const CHANGES_CHANNEL: &str = "engram_changes";

/// The PostgreSQL + pgvector store.
pub struct PostgresStore {
    pool: PgPool,
    /// The lexical searches' connections (`searches`): the same server and settings, with
    /// each statement's plan made once per connection (and again after ANALYZE).
    searches: PgPool,
    /// Whether a set of scopes (by their keys) is small enough for an exact vector scan, for
    /// a while (`nearest_messages`).
    exact_scan: moka::sync::Cache<Vec<String>, bool>,
    /// The limits BM25 over messages was asked with (`warm_searches`).
    searched_limits: SearchedLimits,
    /// Set once `open` has brought the schema to this build's: only then are new search
    /// connections planned as they open (`connect`).
    migrated: Migrated,
}

/// Whether the tables the searches read are there yet (`PostgresStore::migrated`).
type Migrated = std::sync::Arc<std::sync::atomic::AtomicBool>;

/// The limits BM25 over messages was asked with, the first few (the settings give one): each
/// is a statement of its own, planned on every search connection as it opens and again after
/// ANALYZE (`warm_searches_on`).
type SearchedLimits = std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<usize>>>;

/// How many limits `SearchedLimits` keeps.
const LIMITS_KEPT: usize = 8;

/// The limits to plan BM25 over messages at: those asked so far, or, before any question, 1
/// (its statement reads the same catalogs as the one a question will run).
fn limits_to_plan(limits: &SearchedLimits) -> Vec<usize> {
    let asked = limits
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if asked.is_empty() {
        vec![1]
    } else {
        asked.iter().copied().collect()
    }
}

/// Runs the lexical searches (BM25 over messages at each of `limits`, over episodes) on
/// `conn`, with a scope no message is in, so that a question does not wait while a connection
/// reads the catalogs and plans them: on a new connection, and after ANALYZE made the plans
/// stale (groupchat_dev2 on PostgreSQL: a question's BM25 statements took 1.4-5.2 ms to parse
/// and 0.8-1.4 ms to plan on a new connection, about 0.1 and 0.05 ms after).
async fn warm_searches_on(conn: &mut sqlx::PgConnection, limits: &[usize]) -> StoreResult<()> {
    let (terms, keys) = (vec!["engram".to_string()], vec![WARMING_SCOPE.to_string()]);
    for &limit in limits {
        messages_bm25(conn, &terms, &keys, Bm25::default(), limit).await?;
    }
    crate::store::search::on_postgres::episode_postings(conn, &terms, &keys).await?;
    Ok(())
}

/// Pool and timeout settings of the PostgreSQL backend.
#[derive(Debug, Clone)]
pub struct PgSettings {
    /// Connections in the pool.
    pub max_connections: u32,
    /// How long to wait for a free connection.
    pub acquire_timeout: Duration,
    /// The longest a statement may run.
    pub statement_timeout: Duration,
    /// A connection idle this long is pinged before use (`needs_ping`); zero pings every one.
    pub ping_after_idle: Duration,
}

pub(super) fn db_err(e: sqlx::Error) -> StoreError {
    if super::lost_connection(&e) {
        loss_seen();
        return StoreError::Unavailable(e);
    }
    match &e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => StoreError::Unavailable(e),
        // serialization_failure and deadlock_detected, too_many_connections
        sqlx::Error::Database(d)
            if d.code().is_some_and(|c| {
                super::ABORTED_BY_CONFLICT.contains(&c.as_ref()) || c.as_ref() == "53300"
            }) =>
        {
            StoreError::Unavailable(e)
        }
        _ => StoreError::Query(e),
    }
}

/// Moments of this process for atomics: milliseconds since its first, rounded up (so never
/// before the event by the rounding; 0 stands for never).
mod moments {
    use std::sync::LazyLock;
    use std::time::{Duration, Instant};

    static START: LazyLock<Instant> = LazyLock::new(Instant::now);

    /// Now.
    pub(super) fn now() -> u64 {
        u64::try_from(START.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// How long ago `at` (a `now()`) was, at most; None for 0.
    pub(super) fn since(at: u64) -> Option<Duration> {
        (at > 0).then(|| START.elapsed().saturating_sub(Duration::from_millis(at)))
    }
}

/// When this process last saw PostgreSQL end one of its connections (`db_err`, the change
/// feed, a failed ping). The server ends them together (a restart, an administrator), so a
/// connection released before then may be gone too and is pinged before use (`needs_ping`).
/// One for the process: its stores share the server, and one's loss only costs another a
/// ping.
static LAST_LOSS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A lost connection was seen now.
fn loss_seen() {
    LAST_LOSS.fetch_max(moments::now(), std::sync::atomic::Ordering::Relaxed);
}

/// How long ago the last lost connection was seen (None: never).
fn since_last_loss() -> Option<Duration> {
    moments::since(LAST_LOSS.load(std::sync::atomic::Ordering::Relaxed))
}

/// Whether a connection idle for `idle_for` is pinged before use. Not when it came back from
/// a use less than `after_idle` ago, while its pool is in use (one of its connections came
/// back `pool_used` ago, under `after_idle`), and after the last lost connection was seen
/// (`since_loss` ago): sqlx pinged it as it came back, so it is known alive, and pinging it
/// again cost a round trip per statement, up to ten a question (groupchat_dev2 on
/// PostgreSQL, three runs in turn: a median question 5.7-7.9 ms with, 5.4-6.9 without).
/// The pool's use is asked too because sqlx's upkeep (every 10 minutes) puts idle
/// connections back as if just used.
/// A connection the server ends within `after_idle` of its use fails the statement given it,
/// which ran nothing: storing a message and searching run again (`again_if_lost`), and every
/// connection of that time is pinged from then on.
pub(crate) fn needs_ping(
    idle_for: Duration,
    after_idle: Duration,
    pool_used: Option<Duration>,
    since_loss: Option<Duration>,
) -> bool {
    idle_for >= after_idle
        || pool_used.is_none_or(|since| since >= after_idle)
        || since_loss.is_some_and(|since| idle_for >= since)
}

/// `options` pinging a connection before use only when `needs_ping` says so. A failed ping
/// counts as a lost connection; the connection is closed and another given.
fn ping_when_unsure(options: PgPoolOptions, after_idle: Duration) -> PgPoolOptions {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    // When a connection of this pool last came back from a use (not from sqlx's upkeep).
    let used = Arc::new(AtomicU64::new(0));
    let back = used.clone();
    options
        .test_before_acquire(false)
        .after_release(move |_, _| {
            back.fetch_max(moments::now(), Ordering::Relaxed);
            Box::pin(std::future::ready(Ok(true)))
        })
        .before_acquire(move |conn, meta| {
            let pool_used = moments::since(used.load(Ordering::Relaxed));
            Box::pin(async move {
                if needs_ping(meta.idle_for, after_idle, pool_used, since_last_loss()) {
                    use sqlx::Connection;
                    if let Err(e) = conn.ping().await {
                        loss_seen();
                        tracing::info!(error = %e, "a pooled connection was gone: replaced");
                        return Ok(false);
                    }
                }
                Ok(true)
            })
        })
}

/// What the statements shared by both backends (`on_both_backends!`) need of this one.
pub(super) mod shared {
    pub(in crate::store) use super::{
        MIGRATOR, PostgresStore as Backend, db_err, drop_space_index, insert_rows, lock_indexer,
        maintain, message_from_row, message_vectors, move_sequences, nearest_messages,
        notify as changed, ready_nearest, search_messages, settle_log, space_index, watch_changes,
        write_postings,
    };
    pub(in crate::store) use crate::store::episodes::on_postgres::{
        drop_closing_parts, still_as_read,
    };
    pub(in crate::store) use crate::store::identities::on_postgres::count_forget;
    pub(in crate::store) use crate::store::messages::on_postgres::{
        delete_in, drop_entry_history, insert_chunk, rewrite_text, set_languages,
    };
    pub(in crate::store) use crate::store::messages::queued_postings;
    pub(in crate::store) use crate::store::search::on_postgres::{
        add_episode_length, drop_episode, drop_episode_keys,
    };
    pub(in crate::store) use crate::store::vectors::on_postgres::{
        forget_context_vectors, forget_vectors, keep_vector, vectors_as_read,
    };
    pub(in crate::store) const DIALECT: crate::store::Dialect = crate::store::Dialect::Postgres;

    /// A connection (a transaction derefs to one).
    pub(in crate::store) type Conn = sqlx::PgConnection;

    /// A list bound as one parameter (for `in_list!`): an array.
    pub(in crate::store) fn list<T>(items: &[T]) -> &[T] {
        items
    }

    /// `IN` the list bound as parameter `$n` (made with `list`).
    macro_rules! in_list {
        ($n:literal) => {
            concat!("= ANY($", $n, ")")
        };
    }
    pub(in crate::store) use in_list;

    /// The list bound as parameter `$n` (made with `list`) as rows `$alias.value`.
    macro_rules! list_rows {
        ($n:literal, $alias:literal) => {
            concat!("unnest($", $n, "::TEXT[]) AS ", $alias, "(value)")
        };
    }
    pub(in crate::store) use list_rows;

    /// Postings `$alias` of the terms in list `$t` and the scopes in list `$s` (the postings'
    /// key on both columns).
    macro_rules! terms_in_scopes {
        ($alias:literal, $t:literal, $s:literal) => {
            concat!(
                $alias,
                ".term = ANY($",
                $t,
                ") AND ",
                $alias,
                ".scope = ANY($",
                $s,
                ")"
            )
        };
    }
    pub(in crate::store) use terms_in_scopes;

    /// `column` equals parameter `$n` ignoring ASCII case, as the column's index is built.
    macro_rules! same_name {
        ($column:literal, $n:literal) => {
            concat!("lower(", $column, ") = lower($", $n, ")")
        };
    }
    pub(in crate::store) use same_name;

    /// `column` in the list bound as `$n`, or any value when `$n` is NULL (no list).
    macro_rules! in_list_or_all {
        ($column:literal, $n:literal) => {
            concat!(
                "($",
                $n,
                "::TEXT[] IS NULL OR ",
                $column,
                " = ANY($",
                $n,
                "))"
            )
        };
    }
    pub(in crate::store) use in_list_or_all;

    /// The length in characters of the text of the message `$m`: the stored `chars`
    /// (migration 0031), since counting a long text, which the server keeps compressed,
    /// decompresses it.
    macro_rules! chars_of {
        ($m:literal) => {
            concat!($m, ".chars")
        };
    }
    pub(in crate::store) use chars_of;

    /// Locks the rows a SELECT read until the transaction ends.
    macro_rules! for_update {
        () => {
            " FOR UPDATE"
        };
    }
    pub(in crate::store) use for_update;

    /// Locks the rows a SELECT read until the transaction ends, as an UPDATE of columns no
    /// foreign key names does (others may still insert rows that refer to them).
    macro_rules! for_no_key_update {
        () => {
            " FOR NO KEY UPDATE"
        };
    }
    pub(in crate::store) use for_no_key_update;

    /// Messages per INSERT statement (one array parameter per column).
    pub(in crate::store) const MESSAGE_CHUNK: usize = 2000;

    /// Names the index a statement must use: PostgreSQL's planner needs no such help.
    macro_rules! indexed_by {
        ($index:literal) => {
            ""
        };
    }
    pub(in crate::store) use indexed_by;

    /// The message id a bot reply of message `m` answers (its reply_to, as text), or NULL
    /// where reply_to is not a number (a user's reply holds a platform id).
    macro_rules! reply_to_id {
        ($m:literal) => {
            concat!(
                "(CASE WHEN ",
                $m,
                ".reply_to ~ '^[0-9]{1,18}$' THEN ",
                $m,
                ".reply_to::BIGINT END)"
            )
        };
    }
    pub(in crate::store) use reply_to_id;

    /// A vector parameter `$n` (made with `vector_param`).
    macro_rules! vector {
        ($n:literal) => {
            concat!("CAST($", $n, " AS vector)")
        };
    }
    pub(in crate::store) use vector;

    /// Cosine similarity of `column` and the vector parameter `$n` (cast once, `vector_param`).
    macro_rules! similarity {
        ($column:literal, $n:literal) => {
            concat!(
                "1.0 - (",
                $column,
                " <=> (SELECT CAST($",
                $n,
                " AS vector)))"
            )
        };
    }
    pub(in crate::store) use similarity;

    /// ORDER BY nearest to the vector parameter `$n` first, as the HNSW index serves it.
    macro_rules! nearest_first {
        ($column:literal, $n:literal) => {
            concat!($column, " <=> (SELECT CAST($", $n, " AS vector))")
        };
    }
    pub(in crate::store) use nearest_first;

    /// The smaller of two values.
    macro_rules! least {
        ($a:literal, $b:literal) => {
            concat!("LEAST(", $a, ", ", $b, ")")
        };
    }
    pub(in crate::store) use least;

    /// The larger of two values.
    macro_rules! greatest {
        ($a:literal, $b:literal) => {
            concat!("GREATEST(", $a, ", ", $b, ")")
        };
    }
    pub(in crate::store) use greatest;

    /// Message `m` is not indexed yet, in the form of the partial index on it.
    macro_rules! unindexed {
        ($m:literal) => {
            concat!("NOT ", $m, ".indexed")
        };
    }
    pub(in crate::store) use unindexed;

    /// Boolean `column` is true, in the form its index compares (SQLite's `(scope, closed)`
    /// index is used whole only for `closed = 1`).
    macro_rules! is_true {
        ($column:literal) => {
            $column
        };
    }
    pub(in crate::store) use is_true;

    /// A vector as bound: `real[]` in the binary protocol, cast to `vector` by the statement
    /// (pgvector's cast). Bound as pgvector's own type, each new connection first looked the
    /// type up in `pg_type` (a round trip of 1-5 ms on the first question it served). Bound as
    /// text, the cast was parsed again for every row it was compared with once PostgreSQL
    /// switched to its generic plan (30-55 ms for 700 rows): the searches cast in a subquery
    /// (`similarity!`, `nearest_first!`), an init plan run once whatever the plan.
    pub(in crate::store) fn vector_param(v: &[f32]) -> Vec<f32> {
        v.to_vec()
    }
}

/// The migrations this build applies (`migrations/postgres`).
pub(super) static MIGRATOR: std::sync::LazyLock<sqlx::migrate::Migrator> =
    std::sync::LazyLock::new(|| super::migrator(super::embedded::POSTGRES));

impl PostgresStore {
    /// The store over `pool`.
    fn with_pool(
        pool: PgPool,
        searches: PgPool,
        searched_limits: SearchedLimits,
        migrated: Migrated,
    ) -> PostgresStore {
        PostgresStore {
            pool,
            searches,
            exact_scan: moka::sync::Cache::builder()
                .max_capacity(1024)
                .time_to_live(SCAN_CHOICE_TTL)
                .build(),
            searched_limits,
            migrated,
        }
    }

    /// Plans the lexical searches on every idle connection of `searches`
    /// (`warm_searches_on`): after ANALYZE made their plans stale, and at start-up, after the
    /// migrations (the connections `connect` opened were not planned: on a new database they
    /// came before its tables). Best effort: a connection that fails it is closed, and sqlx
    /// opens another in its place (planned as it opens).
    pub(super) async fn warm_searches(&self) {
        let limits = limits_to_plan(&self.searched_limits);
        // All taken before any is used, so that each is a different connection; each goes
        // back as soon as it is planned.
        let mut idle = Vec::new();
        while let Some(conn) = self.searches.try_acquire() {
            idle.push(conn);
        }
        for mut conn in idle {
            if let Err(e) = warm_searches_on(&mut conn, &limits).await {
                tracing::warn!(error = %e, "planning the searches on a connection failed: closed");
                conn.close_on_drop();
            }
        }
    }

    /// Writes the postings of messages queued in `message_terms_backlog` (stored before the
    /// retrieval migration, or copied in by `engram migrate`). Processes opening at once
    /// share the work: each takes rows the others have not locked.
    pub(super) async fn drain_terms_backlog(&self) -> StoreResult<()> {
        loop {
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            // The messages first, as a forget or a rewrite takes them (then their queue
            // rows): one that a writer holds waits for a later round, and a forget that comes
            // after this took one waits, then takes out the postings written here.
            // (The limit counts only the rows taken: another process's, or a writer's, are
            // passed over, not waited for.)
            let ids: Vec<i64> = sqlx::query_scalar(
                "SELECT m.id FROM message_terms_backlog b JOIN messages m ON m.id = b.message_id \
                 ORDER BY b.message_id LIMIT 1000 FOR UPDATE OF m SKIP LOCKED",
            )
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            // An id whose message is gone leaves the queue.
            let gone = sqlx::query(
                "DELETE FROM message_terms_backlog b WHERE b.message_id IN \
                 (SELECT message_id FROM message_terms_backlog ORDER BY message_id LIMIT 1000) \
                 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = b.message_id)",
            )
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            if ids.is_empty() && gone == 0 {
                let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM message_terms_backlog")
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_err)?;
                tx.commit().await.map_err(db_err)?;
                if left == 0 {
                    return Ok(());
                }
                // Another process, or a writer, holds the rest; its commit frees them.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            let queued: Vec<QueuedRow> = sqlx::query_as(
                "WITH taken AS (DELETE FROM message_terms_backlog WHERE message_id = ANY($1) RETURNING message_id) \
                 SELECT taken.message_id, m.scope, m.text, m.withheld, m.language FROM taken JOIN messages m ON m.id = taken.message_id",
            )
            .bind(&ids)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            let (rows, detected) = shared::queued_postings(queued);
            shared::set_languages(&mut tx, &detected).await?;
            write_postings(&mut tx, &rows).await?;
            tx.commit().await.map_err(db_err)?;
        }
    }

    /// Connects, checks that pgvector is available, and applies pending migrations (under
    /// sqlx's advisory lock, so several processes may start at once).
    pub async fn open(url: &str, settings: &PgSettings) -> StoreResult<PostgresStore> {
        let store = Self::connect(url, settings, true).await?;
        MIGRATOR
            .run(&store.pool)
            .await
            .map_err(super::migrate_error)?;
        store.drain_terms_backlog().await?;
        store
            .migrated
            .store(true, std::sync::atomic::Ordering::Release);
        store.warm_searches().await;
        Ok(store)
    }

    /// Opens the database as it is: no migration, no extension enabled, nothing written
    /// (`engram status` reports a schema older or newer than this build's instead of
    /// changing it).
    pub async fn open_as_is(url: &str, settings: &PgSettings) -> StoreResult<PostgresStore> {
        Self::connect(url, settings, false).await
    }

    /// Connects; with `prepare`, checks pgvector and enables it in the database.
    async fn connect(
        url: &str,
        settings: &PgSettings,
        prepare: bool,
    ) -> StoreResult<PostgresStore> {
        let open_err = |cause: Cause| StoreError::Open {
            url: crate::config::redact_url(url),
            cause,
        };
        let statement_timeout = format!("{}ms", settings.statement_timeout.as_millis());
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| open_err(format!("not a valid PostgreSQL URL: {e}").into()))?
            .options([
                ("statement_timeout", statement_timeout.as_str()),
                // Filtered vector searches keep walking the HNSW graph until they have
                // `limit` allowed rows, so a privacy filter never starves the top k.
                ("hnsw.iterative_scan", "relaxed_order"),
            ]);
        // One direct connection first: a wrong host, port, database or password fails now with
        // the server's own words, instead of after the pool's acquire timeout.
        {
            use sqlx::Connection;
            let conn = sqlx::PgConnection::connect_with(&options)
                .await
                .map_err(|e| open_err(e.into()))?;
            let _ = conn.close().await;
        }
        // Both pools: `size` connections, `open` of them kept open, pinged when unsure.
        let pool_of = |base: PgPoolOptions, size: u32, open: u32, options: PgConnectOptions| {
            super::kept_open(ping_when_unsure(base, settings.ping_after_idle), size, open)
                .acquire_timeout(settings.acquire_timeout)
                .connect_with(options)
        };
        let pool = pool_of(
            PgPoolOptions::new(),
            settings.max_connections,
            super::OPEN_FOR_A_QUESTION,
            options.clone(),
        )
        .await
        .map_err(|e| open_err(e.into()))?;
        // BM25 over messages and over episodes, the hits' neighbours and the best results'
        // (`nearby`), on connections of their own whose statements are planned once (a
        // generic plan, kept until ANALYZE changes the statistics) instead of for each
        // question's terms and ids: their shape is fixed by the statements themselves
        // (materialized postings, then primary-key reads and seeks of the channel's time
        // index), so each question's own plan only cost time (0.5 ms of planning each,
        // beside the question's embedding on the same cores). Not the vector searches: all of
        // them on generic plans took dev60 1.2 -> 5.8 ms, and the exact scan of a small scope
        // alone, whose generic plan reads the scope index then the messages by id, was no
        // faster end to end (README, Benchmarks). Half
        // the pool's size (at least 2, the two BM25 searches of one question; the neighbours
        // follow the messages'). Each is planned as it opens (`warm_searches_on`), once
        // `open` has migrated the schema (the first ones then, by `warm_searches`).
        let searched_limits = SearchedLimits::default();
        let migrated = Migrated::default();
        let (asked, ready) = (searched_limits.clone(), migrated.clone());
        let planned_as_opened = PgPoolOptions::new().after_connect(move |conn, _| {
            let limits = limits_to_plan(&asked);
            // Not before the migrations: on a new database the tables come after the
            // connections (`open` plans those then), and each statement that found no table
            // was an error in the server's log at every first start. Nor on a database opened
            // as it is (reports only; its schema may be another build's).
            let migrated = ready.load(std::sync::atomic::Ordering::Acquire);
            Box::pin(async move {
                // Best effort: a connection lost here is replaced when next handed out (the
                // loss is recorded: `needs_ping`).
                if migrated && let Err(e) = warm_searches_on(conn, &limits).await {
                    tracing::debug!(error = %e, "a new search connection was not planned");
                }
                Ok(())
            })
        });
        let searches = pool_of(
            planned_as_opened,
            (settings.max_connections / 2).max(2),
            2,
            options.options([("plan_cache_mode", "force_generic_plan")]),
        )
        .await
        .map_err(|e| open_err(e.into()))?;
        if !prepare {
            return Ok(PostgresStore::with_pool(
                pool,
                searches,
                searched_limits,
                migrated,
            ));
        }
        let has_vector: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
        )
        .fetch_one(&pool)
        .await
        .map_err(|e| open_err(e.into()))?;
        if !has_vector {
            return Err(open_err(
                "the pgvector extension is not installed on this PostgreSQL server; install pgvector (or use the pgvector/pgvector image)".into(),
            ));
        }
        if let Err(e) = sqlx::query("CREATE EXTENSION IF NOT EXISTS vector")
            .execute(&pool)
            .await
            // Processes started together on a new database (docker compose --scale) race to
            // create it: the loser's unique violation means another one just did.
            .or_else(|e| match &e {
                sqlx::Error::Database(d) if d.code().as_deref() == Some("23505") => {
                    Ok(Default::default())
                }
                _ => Err(e),
            })
        {
            let denied =
                matches!(&e, sqlx::Error::Database(d) if d.code().as_deref() == Some("42501"));
            return Err(open_err(if denied {
                "pgvector is on the server but not enabled in this database, and this user may not enable it: \
                 run `CREATE EXTENSION vector;` in the database as a superuser, then start again"
                    .into()
            } else {
                format!("cannot enable pgvector: {e}").into()
            }));
        }
        Ok(PostgresStore::with_pool(
            pool,
            searches,
            searched_limits,
            migrated,
        ))
    }

    /// A write transaction (PostgreSQL's row locks need nothing more at BEGIN).
    pub(super) async fn write_tx(&self) -> StoreResult<sqlx::Transaction<'static, sqlx::Postgres>> {
        self.pool.begin().await.map_err(db_err)
    }

    /// The connection pool (benchmarks and tests).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The lexical searches' pool: statements planned once per connection (see `connect`;
    /// public for tests).
    pub fn searches(&self) -> &PgPool {
        &self.searches
    }
}

/// Moves the id sequences past the ids a load copied.
pub(super) async fn move_sequences(store: &PostgresStore) -> StoreResult<()> {
    for table in Table::ALL.iter().filter(|t| t.spec().has_identity) {
        let name = table.name();
        let sql = format!(
            "SELECT setval(pg_get_serial_sequence('{name}', 'id'), COALESCE((SELECT MAX(id) FROM {name}), 0) + 1, false)"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&store.pool)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

/// The changes other processes commit, as they commit them (LISTEN/NOTIFY).
pub(super) async fn watch_changes(
    store: &PostgresStore,
) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
    let mut listener = sqlx::postgres::PgListener::connect_with(&store.pool)
        .await
        .map_err(db_err)?;
    listener.listen(CHANGES_CHANNEL).await.map_err(db_err)?;
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    tokio::spawn(async move {
        loop {
            let change = match listener.try_recv().await {
                Ok(Some(note)) => Change::parse(note.payload()),
                // Reconnecting: notifications sent meanwhile are lost. Always reading, the
                // feed is often first to see the server end its connections.
                Ok(None) => {
                    loss_seen();
                    Change::Unknown
                }
                Err(e) => {
                    if super::lost_connection(&e) {
                        loss_seen();
                    }
                    tracing::warn!(error = %e, "change feed interrupted; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Change::Unknown
                }
            };
            if tx.send(change).await.is_err() {
                break;
            }
        }
    });
    Ok(Some(rx))
}

/// Nothing to move after the indexer's batch: the server writes its own log back.
pub(super) async fn settle_log(_: &PostgresStore) {}

/// Fresh statistics and visibility maps for the busiest tables.
pub(super) async fn maintain(store: &PostgresStore) -> StoreResult<()> {
    // Fresh statistics keep the planner on the full-text index instead of ANDing it with
    // a whole-scope bitmap; VACUUM sets hint bits and the visibility map after bulk loads.
    for table in [
        "messages",
        "message_terms",
        "message_vectors",
        "episodes",
        "episode_terms",
        "memory_entries",
        "facts",
        "fact_versions",
        "identities",
        "people",
    ] {
        let sql = format!("VACUUM (ANALYZE) {table}");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&store.pool)
            .await
            .map_err(db_err)?;
    }
    // The new statistics made the searches' plans stale on every connection.
    store.warm_searches().await;
    Ok(())
}

/// One indexer writes at a time across processes: episodes are built in time order per
/// channel, and two processes must not open two episodes for one conversation.
pub(super) async fn lock_indexer(conn: &mut sqlx::PgConnection) -> StoreResult<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(7311)")
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// The HNSW index of vector space `space` (vectors of `dimensions`): a partial index on the
/// sized expression, which searches of that space name. Larger vectors than HNSW takes are
/// searched exactly.
pub(super) async fn space_index(
    conn: &mut sqlx::PgConnection,
    space: VectorSpaceId,
    dimensions: usize,
) -> StoreResult<()> {
    if dimensions == 0 || dimensions > crate::store::vectors::HNSW_MAX_DIMENSIONS {
        return Ok(());
    }
    // Both numbers are integers from the store, not text from outside.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE INDEX IF NOT EXISTS message_vectors_hnsw_{id} ON message_vectors \
         USING hnsw ((embedding::vector({dimensions})) vector_cosine_ops) WHERE space_id = {id}",
        id = space.0
    )))
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Drops the HNSW index of a vector space that is gone.
pub(super) async fn drop_space_index(
    conn: &mut sqlx::PgConnection,
    space: VectorSpaceId,
) -> StoreResult<()> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP INDEX IF EXISTS message_vectors_hnsw_{}",
        space.0
    )))
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// BM25 over the postings of scopes `scopes`, in one statement: N and the average length of
/// the scopes the asker may see (idf follows the searched scopes, not the whole database),
/// each term's document frequency there, and the scores, from the terms' postings read once
/// (one index scan with both lists as arrays). Each statement is a round trip that waits for
/// a core while the question is being embedded (dev60, 2 cores: three statements took 1-5 ms
/// each before the scoring started).
pub(super) async fn search_messages(
    store: &PostgresStore,
    scopes: &[Scope],
    terms: &[String],
    bm25: Bm25,
    limit: usize,
) -> StoreResult<Vec<SearchHit>> {
    if scopes.is_empty() || terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
    {
        let mut asked = store
            .searched_limits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if asked.len() < LIMITS_KEPT {
            asked.insert(limit);
        }
    }
    let rows = {
        let mut conn = store.searches().acquire().await.map_err(db_err)?;
        messages_bm25(&mut conn, terms, &keys, bm25, limit).await?
    };
    rows.iter()
        .map(|row| hit_from_row(row, crate::store::MESSAGE_COLUMNS))
        .collect()
}

/// The rows of `search_messages`, read on `conn` (a connection of `searches`).
async fn messages_bm25(
    conn: &mut sqlx::PgConnection,
    terms: &[String],
    keys: &[String],
    bm25: Bm25,
    limit: usize,
) -> StoreResult<Vec<PgRow>> {
    // `Bm25::idf` and `Bm25::term_score` in SQL; with no document in the scopes there is no
    // posting either, so N is at least 1 wherever it divides.
    //
    // The limit is written into the statement (one statement per limit the settings give):
    // the plan is made once for every question (`searches`), and an unknown limit is guessed
    // as a tenth of the postings' groups, which at millions of postings in one scope could
    // read the messages by hashing the whole table instead of by id.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "{}{limit}{}",
        "WITH tot AS (SELECT GREATEST(CAST(COALESCE(SUM(docs), 0) AS FLOAT8), 1.0) AS n, \
                             CAST(COALESCE(SUM(total_len), 0) AS FLOAT8) AS len \
                      FROM scope_term_stats WHERE scope = ANY($2)), \
         posting AS MATERIALIZED (SELECT term, message_id, tf, doc_len FROM message_terms \
                            WHERE term = ANY($1) AND scope = ANY($2)), \
         q AS (SELECT term, LN(1.0 + (n - df + 0.5) / (df + 0.5)) AS idf FROM \
               (SELECT o.term, tot.n, CAST(COUNT(*) AS FLOAT8) AS df FROM posting o CROSS JOIN tot \
                GROUP BY o.term, tot.n) d), \
         scored AS (SELECT o.message_id AS id, \
                      SUM(q.idf * o.tf * ($3 + 1.0) / (o.tf + $3 * (1.0 - $4 + $4 * o.doc_len / GREATEST(tot.len / tot.n, 1e-9)))) AS score \
            FROM posting o JOIN q ON q.term = o.term CROSS JOIN tot \
            GROUP BY o.message_id ORDER BY score DESC, o.message_id DESC LIMIT ",
        concat!(
            ") SELECT ",
            message_columns!(),
            ", scored.score FROM scored JOIN messages m ON m.id = scored.id \
             JOIN people p ON p.id = m.author_id ORDER BY scored.score DESC, m.id DESC"
        )
    )))
    .bind(terms)
    .bind(keys)
    .bind(bm25.k1)
    .bind(bm25.b)
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)
}

/// Scopes holding at most this many messages (as BM25 counts them: those with a word) are
/// searched exactly: every vector of the scope, read through the scope index. Measured on the dev sets' scopes (hundreds to a few thousand
/// messages): an exact scan takes about 1 ms where the filtered HNSW walk took 3-50 ms for
/// 100 rows, depending on how many of the graph's nodes the filter turned away.
const EXACT_SCAN_MESSAGES: i64 = 20_000;

/// Documents over `keys`, for the choice of an exact vector scan.
async fn messages_in(store: &PostgresStore, keys: &[String]) -> StoreResult<i64> {
    sqlx::query_scalar(
        "SELECT COALESCE(SUM(docs), 0)::BIGINT FROM scope_term_stats WHERE scope = ANY($1)",
    )
    .bind(keys)
    .fetch_one(&store.pool)
    .await
    .map_err(db_err)
}

/// How long a set of scopes stays known as small or large for vector search: the choice only
/// picks a plan, and a scope grows past `EXACT_SCAN_MESSAGES` over days.
const SCAN_CHOICE_TTL: Duration = Duration::from_secs(60);

/// Whether scopes `keys` are small enough for an exact vector scan, as last read within
/// `SCAN_CHOICE_TTL` (the same scopes in any order are one entry).
async fn scans_exactly(store: &PostgresStore, keys: &[String]) -> StoreResult<bool> {
    let mut set = keys.to_vec();
    set.sort_unstable();
    if let Some(exact) = store.exact_scan.get(&set) {
        return Ok(exact);
    }
    let exact = messages_in(store, keys).await? <= EXACT_SCAN_MESSAGES;
    store.exact_scan.insert(set, exact);
    Ok(exact)
}

/// Reads how scopes `keys` will be searched by vector (`scans_exactly`) ahead of the search,
/// while the question is being embedded.
pub(super) async fn ready_nearest(store: &PostgresStore, keys: &[String]) -> StoreResult<()> {
    scans_exactly(store, keys).await.map(|_| ())
}

/// The messages of scopes `keys` nearest to `vector`, best first, among the vectors of its
/// space. Small scopes are scanned exactly (`EXACT_SCAN_MESSAGES`); larger ones through the
/// space's HNSW index (the sized expression and the space id are written into the statement, so
/// the planner matches the partial index) with the scope filter in the same query, and every
/// connection runs iterative scans (see `open`), so the filter never starves the top k. Which
/// one a set of scopes takes is kept a while (`SCAN_CHOICE_TTL`): one statement a question, not
/// two in a row (a second round trip waits for a core again while the question is embedded;
/// choosing in the statement itself made PostgreSQL plan both ways every time, 2 ms).
pub(super) async fn nearest_messages(
    store: &PostgresStore,
    keys: &[String],
    vector: &Embedding,
    limit: usize,
) -> StoreResult<Vec<SearchHit>> {
    let exact = scans_exactly(store, keys).await?;
    let dims = vector.vector.len();
    let order = if exact {
        // "+ 0": an order the index cannot serve, so the planner reads the scope's rows.
        concat!("(", nearest_first!("embedding", 1), ") + 0").to_string()
    } else {
        format!("embedding::vector({dims}) <=> (SELECT CAST($1 AS vector({dims})))")
    };
    // The space id and the size are integers, not text from outside.
    let sql = format!(
        concat!(
            "WITH near AS (SELECT message_id AS id, ",
            similarity!("embedding", 1),
            " AS sim FROM message_vectors \
               WHERE space_id = {space} AND scope = ANY($2) ORDER BY {order} LIMIT $3) SELECT {columns}, \
             near.sim FROM near JOIN messages m ON m.id = near.id \
             JOIN people p ON p.id = m.author_id ORDER BY near.sim DESC, m.id DESC"
        ),
        space = vector.space.0,
        order = order,
        columns = message_columns!(),
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(shared::vector_param(&vector.vector))
        .bind(keys)
        .bind(limit as i64)
        .fetch_all(&store.pool)
        .await
        .map_err(db_err)?;
    rows.iter()
        .map(|row| hit_from_row(row, crate::store::MESSAGE_COLUMNS))
        .collect()
}

/// The vectors of these messages (those that have one), by id. (Read as pgvector's type, whose
/// id a connection looks up once: the indexer's work, not a question's.)
pub(super) async fn message_vectors(
    store: &PostgresStore,
    space: VectorSpaceId,
    ids: &[MessageId],
) -> StoreResult<Vec<MessageVector>> {
    let rows: Vec<(i64, Option<i64>, pgvector::Vector)> = sqlx::query_as(
        "SELECT message_id, context_id, embedding FROM message_vectors WHERE message_id = ANY($1) AND space_id = $2 ORDER BY message_id",
    )
    .bind(ids.iter().map(|i| i.0).collect::<Vec<_>>())
    .bind(space.0)
    .fetch_all(&store.pool)
    .await
    .map_err(db_err)?;
    Ok(rows
        .into_iter()
        .map(|(id, context, v)| MessageVector {
            message: MessageId(id),
            context: context.map(MessageId),
            vector: v.to_vec(),
        })
        .collect())
}

/// A message read with `message_columns!()`.
pub(super) fn message_from_row(row: &PgRow) -> StoreResult<StoredMessage> {
    let get = StoreError::Column;
    Ok(StoredMessage {
        id: MessageId(row.try_get(0).map_err(get)?),
        space: SpaceId(row.try_get(1).map_err(get)?),
        channel: row.try_get(2).map_err(get)?,
        scope: parse_scope(row.try_get::<&str, _>(3).map_err(get)?)?,
        author: PersonId(row.try_get(4).map_err(get)?),
        author_name: row.try_get(5).map_err(get)?,
        is_bot: row.try_get(6).map_err(get)?,
        text: row.try_get(7).map_err(get)?,
        sent_at: from_ms(row.try_get(8).map_err(get)?)?,
        episode: row.try_get(9).map_err(get)?,
        attachment_of: row
            .try_get::<Option<i64>, _>(10)
            .map_err(get)?
            .map(MessageId),
        language: row
            .try_get::<Option<&str>, _>(11)
            .map_err(get)?
            .and_then(Language::from_code),
    })
}

/// A message read with `message_columns!()` and its score in column `score_column`.
fn hit_from_row(row: &PgRow, score_column: usize) -> StoreResult<SearchHit> {
    let score: f64 = row.try_get(score_column).map_err(StoreError::Column)?;
    Ok(SearchHit {
        message: message_from_row(row)?,
        score,
    })
}

/// Inserts a chunk of messages in one statement (a redelivered one is skipped); returns the
/// new rows' id, space, channel and external id.
pub(super) async fn insert_rows(
    conn: &mut sqlx::PgConnection,
    chunk: &[NewMessage],
) -> StoreResult<Vec<(i64, i64, String, String)>> {
    sqlx::query_as(
        // A withheld message is born indexed: the indexer never reads it (no episode, no
        // vector, no say in where a topic changes).
        "INSERT INTO messages (space_id, channel, scope, privacy, author_id, is_bot, is_command, external_id, reply_to, text, sent_at, withheld, indexed, language) \
         SELECT s, c, sc, p, a, b, cmd, e, r, t, at, w, w, l FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::BIGINT[], $6::BOOLEAN[], $7::BOOLEAN[], \
                              $8::TEXT[], $9::TEXT[], $10::TEXT[], $11::BIGINT[], $12::BOOLEAN[], $13::TEXT[]) AS u(s, c, sc, p, a, b, cmd, e, r, t, at, w, l) \
         ON CONFLICT (space_id, channel, external_id) DO NOTHING RETURNING id, space_id, channel, external_id",
    )
    .bind(chunk.iter().map(|m| m.space.0).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.channel.as_str()).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.scope.key()).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.privacy.as_str()).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.author.0).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.is_bot).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.is_command).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.external_id.as_str()).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.reply_to.as_deref()).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.text.as_str()).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| ms(m.sent_at)).collect::<Vec<_>>())
    .bind(chunk.iter().map(|m| m.withheld).collect::<Vec<_>>())
    .bind(
        chunk
            .iter()
            .map(|m| m.language.map(Language::code))
            .collect::<Vec<_>>(),
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(db_err)
}

/// Postings and scope statistics of freshly stored messages (id, scope, text, language).
pub(super) async fn write_postings(
    conn: &mut sqlx::PgConnection,
    messages: &[Indexable],
) -> StoreResult<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let (mut terms, mut scopes, mut ids, mut tfs, mut lens) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut stats: std::collections::BTreeMap<&str, (i64, i64)> = Default::default();
    for (id, scope, text, language) in messages {
        let doc = document_terms_in(text, *language);
        let s = stats.entry(scope.as_str()).or_insert((0, 0));
        s.0 += 1;
        s.1 += doc.len as i64;
        for (term, tf) in doc.terms {
            terms.push(term);
            scopes.push(scope.as_str());
            ids.push(*id);
            tfs.push(tf as i32);
            lens.push(doc.len as i32);
        }
    }
    sqlx::query(
        "INSERT INTO message_terms (term, scope, message_id, tf, doc_len) \
         SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::INT[], $5::INT[]) ON CONFLICT DO NOTHING",
    )
    .bind(&terms)
    .bind(&scopes)
    .bind(&ids)
    .bind(&tfs)
    .bind(&lens)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    // Sorted scopes: concurrent writers take the stats rows' locks in one order.
    let (keys, docs, totals): (Vec<&str>, Vec<i64>, Vec<i64>) = stats.into_iter().fold(
        (Vec::new(), Vec::new(), Vec::new()),
        |mut acc, (k, (d, l))| {
            acc.0.push(k);
            acc.1.push(d);
            acc.2.push(l);
            acc
        },
    );
    sqlx::query(
        "INSERT INTO scope_term_stats AS s (scope, docs, total_len) SELECT * FROM UNNEST($1::TEXT[], $2::BIGINT[], $3::BIGINT[]) \
         ON CONFLICT (scope) DO UPDATE SET docs = s.docs + excluded.docs, total_len = s.total_len + excluded.total_len",
    )
    .bind(&keys)
    .bind(&docs)
    .bind(&totals)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// Tells every process listening (see `watch_changes`) about `change`, at commit.
pub(super) async fn notify(conn: &mut sqlx::PgConnection, change: &Change) -> StoreResult<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANGES_CHANNEL)
        .bind(change.payload())
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::needs_ping;
    use std::time::Duration;

    /// Pinged when idle long, when its pool was not in use (sqlx's upkeep makes a long idle
    /// connection look just used), or when it came back before the last lost connection was
    /// seen; not when it came back a moment ago from a use, in a pool in use, with no loss
    /// since.
    #[test]
    fn a_connection_is_pinged_unless_known_alive() {
        let ms = Duration::from_millis;
        let after = ms(1000);
        let used = Some(ms(2));
        assert!(!needs_ping(ms(5), after, used, None), "used a moment ago");
        assert!(needs_ping(ms(1000), after, used, None), "idle that long");
        assert!(
            needs_ping(ms(5), Duration::ZERO, used, None),
            "0: every one"
        );
        assert!(needs_ping(ms(5), after, None, None), "its pool never used");
        assert!(
            needs_ping(ms(5), after, Some(ms(1000)), None),
            "its pool quiet"
        );
        assert!(
            needs_ping(ms(5), after, used, Some(ms(3))),
            "back before the loss"
        );
        assert!(needs_ping(ms(5), after, used, Some(ms(5))), "back with it");
        assert!(
            !needs_ping(ms(5), after, used, Some(ms(8))),
            "back after it"
        );
    }

    /// A moment is never dated before the event, so a connection back just before a loss
    /// counts as back before it.
    #[test]
    fn a_moment_is_dated_no_earlier_than_it_happened() {
        let before = std::time::Instant::now();
        let at = super::moments::now();
        let since = super::moments::since(at).expect("a moment");
        assert!(since <= before.elapsed(), "{since:?}");
        assert_eq!(super::moments::since(0), None);
    }
}
