//! The embedded SQLite backend of `Store` (sqlx, WAL, numbered migrations in
//! `migrations/sqlite`). Default for one machine: `sqlite://data/engram.db`.

use super::rows::{from_ms, ms, parse_scope};
use super::*;
use crate::domain::language::Language;
use crate::domain::vector;
use crate::domain::{Embedding, VectorSpaceId};
use crate::store::messages::{Indexable, QueuedRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};
use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

/// The embedded SQLite store.
pub struct SqliteStore {
    pool: SqlitePool,
    /// This store's id in the change feed (`change_log.origin`): random, one per open.
    origin: String,
}

pub(super) fn db_err(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => {
            StoreError::Unavailable(e)
        }
        sqlx::Error::Database(d)
            if matches!(d.code().as_deref(), Some("5") | Some("6") | Some("517")) =>
        {
            StoreError::Unavailable(e)
        }
        _ => StoreError::Query(e),
    }
}

/// Tells the other processes on the file about `change`, at commit: a row of `change_log`
/// in the same transaction, which their `watch_changes` reads.
pub(super) async fn changed(conn: &mut sqlx::SqliteConnection, change: &Change) -> StoreResult<()> {
    // The connection knows whose it is (`temp.engram_origin`, written when it was opened).
    sqlx::query(
        "INSERT INTO change_log (origin, change, at) SELECT id, $1, $2 FROM temp.engram_origin",
    )
    .bind(change.payload())
    .bind(chrono::Utc::now().timestamp_millis())
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

/// What the statements shared by both backends (`on_both_backends!`) need of this one.
pub(super) mod shared {
    pub(in crate::store) use super::{
        MIGRATOR, SqliteStore as Backend, changed, db_err, drop_space_index, insert_rows,
        lock_indexer, maintain, message_from_row, message_vectors, move_sequences,
        nearest_messages, ready_nearest, search_messages, settle_log, space_index, watch_changes,
        write_postings,
    };
    pub(in crate::store) use crate::store::episodes::on_sqlite::{
        drop_closing_parts, still_as_read,
    };
    pub(in crate::store) use crate::store::identities::on_sqlite::count_forget;
    pub(in crate::store) use crate::store::messages::on_sqlite::{
        delete_in, drop_entry_history, insert_chunk, rewrite_text, set_languages,
    };
    pub(in crate::store) use crate::store::messages::queued_postings;
    pub(in crate::store) use crate::store::search::on_sqlite::{
        add_episode_length, drop_episode, drop_episode_keys,
    };
    pub(in crate::store) use crate::store::vectors::on_sqlite::{
        forget_context_vectors, forget_vectors, keep_vector, vectors_as_read,
    };
    pub(in crate::store) const DIALECT: crate::store::Dialect = crate::store::Dialect::Sqlite;

    /// A connection (a transaction derefs to one).
    pub(in crate::store) type Conn = sqlx::SqliteConnection;

    /// A list bound as one parameter (for `in_list!`): a JSON array.
    pub(in crate::store) fn list<T: serde::Serialize>(items: &[T]) -> String {
        serde_json::Value::from_iter(items.iter().map(|i| serde_json::json!(i))).to_string()
    }

    /// `IN` the list bound as parameter `$n` (made with `list`).
    macro_rules! in_list {
        ($n:literal) => {
            concat!("IN (SELECT value FROM json_each($", $n, "))")
        };
    }
    pub(in crate::store) use in_list;

    /// The list bound as parameter `$n` (made with `list`) as rows `$alias.value`.
    macro_rules! list_rows {
        ($n:literal, $alias:literal) => {
            concat!("json_each($", $n, ") ", $alias)
        };
    }
    pub(in crate::store) use list_rows;

    /// Postings `$alias` of the terms in list `$t` and the scopes in list `$s`, as (term, scope)
    /// pairs, which SQLite seeks in the postings' key. (Two `IN` lists made it seek by term
    /// only and read the term's postings in every scope of the database.)
    macro_rules! terms_in_scopes {
        ($alias:literal, $t:literal, $s:literal) => {
            concat!(
                "(",
                $alias,
                ".term, ",
                $alias,
                ".scope) IN (SELECT qt.value, qs.value FROM json_each($",
                $t,
                ") qt, json_each($",
                $s,
                ") qs)"
            )
        };
    }
    pub(in crate::store) use terms_in_scopes;

    /// `column` equals parameter `$n` ignoring ASCII case, as the column's index is built.
    macro_rules! same_name {
        ($column:literal, $n:literal) => {
            concat!($column, " = $", $n, " COLLATE NOCASE")
        };
    }
    pub(in crate::store) use same_name;

    /// `column` in the list bound as `$n`, or any value when `$n` is NULL (no list).
    macro_rules! in_list_or_all {
        ($column:literal, $n:literal) => {
            concat!(
                "($",
                $n,
                " IS NULL OR ",
                $column,
                " IN (SELECT value FROM json_each($",
                $n,
                ")))"
            )
        };
    }
    pub(in crate::store) use in_list_or_all;

    /// The length in characters of the text of the message `$m`: counted as it is read
    /// (SQLite keeps texts uncompressed).
    macro_rules! chars_of {
        ($m:literal) => {
            concat!("LENGTH(", $m, ".text)")
        };
    }
    pub(in crate::store) use chars_of;

    /// Locks the rows a SELECT read until the transaction ends: nothing on SQLite, where a
    /// write transaction holds the whole database from its BEGIN.
    macro_rules! for_update {
        () => {
            ""
        };
    }
    pub(in crate::store) use for_update;

    /// `for_update!`: nothing here either.
    macro_rules! for_no_key_update {
        () => {
            ""
        };
    }
    pub(in crate::store) use for_no_key_update;

    /// Messages per INSERT statement (12 parameters each; SQLite allows 32,766).
    pub(in crate::store) const MESSAGE_CHUNK: usize = 500;

    /// Names the index a statement must use: SQLite's planner otherwise picks one that avoids a
    /// sort and scans a whole range.
    macro_rules! indexed_by {
        ($index:literal) => {
            concat!(" INDEXED BY ", $index)
        };
    }
    pub(in crate::store) use indexed_by;

    /// The message id a bot reply of message `m` answers (its reply_to, as text): SQLite
    /// compares it with an integer id by number.
    macro_rules! reply_to_id {
        ($m:literal) => {
            concat!($m, ".reply_to")
        };
    }
    pub(in crate::store) use reply_to_id;

    /// A vector parameter `$n` (made with `vector_param`).
    macro_rules! vector {
        ($n:literal) => {
            concat!("$", $n)
        };
    }
    pub(in crate::store) use vector;

    /// Cosine similarity of `column` and the vector parameter `$n`; computed by sqlite-vec.
    macro_rules! similarity {
        ($column:literal, $n:literal) => {
            concat!("1.0 - vec_distance_cosine(", $column, ", $", $n, ")")
        };
    }
    pub(in crate::store) use similarity;

    /// ORDER BY nearest to the vector parameter `$n` first (`sim` is the `similarity!`).
    macro_rules! nearest_first {
        ($column:literal, $n:literal) => {
            "sim DESC"
        };
    }
    pub(in crate::store) use nearest_first;

    /// The smaller of two values.
    macro_rules! least {
        ($a:literal, $b:literal) => {
            concat!("MIN(", $a, ", ", $b, ")")
        };
    }
    pub(in crate::store) use least;

    /// The larger of two values.
    macro_rules! greatest {
        ($a:literal, $b:literal) => {
            concat!("MAX(", $a, ", ", $b, ")")
        };
    }
    pub(in crate::store) use greatest;

    /// Message `m` is not indexed yet, in the form of the partial index on it.
    macro_rules! unindexed {
        ($m:literal) => {
            concat!($m, ".indexed = 0")
        };
    }
    pub(in crate::store) use unindexed;

    /// Boolean `column` is true, in the form its index compares (SQLite's `(scope, closed)`
    /// index is used whole only for `closed = 1`).
    macro_rules! is_true {
        ($column:literal) => {
            concat!($column, " = 1")
        };
    }
    pub(in crate::store) use is_true;

    /// A vector as bound: little-endian f32 bytes.
    pub(in crate::store) fn vector_param(v: &[f32]) -> Vec<u8> {
        crate::domain::vector::to_bytes(v)
    }
}

/// The migrations this build applies (`migrations/sqlite`).
pub(super) static MIGRATOR: std::sync::LazyLock<sqlx::migrate::Migrator> =
    std::sync::LazyLock::new(|| super::migrator(super::embedded::SQLITE));

impl SqliteStore {
    /// Opens (creating if missing) the database at `url` and applies pending migrations.
    pub async fn open(
        url: &str,
        max_connections: u32,
        busy_timeout: Duration,
    ) -> StoreResult<SqliteStore> {
        let store = Self::connect(url, max_connections, busy_timeout, true).await?;
        MIGRATOR
            .run(&store.pool)
            .await
            .map_err(super::migrate_error)?;
        store.drain_terms_backlog().await?;
        Ok(store)
    }

    /// Opens the database as it is: no migration, nothing written (`engram status` reports
    /// a schema older or newer than this build's instead of changing it).
    pub async fn open_as_is(
        url: &str,
        max_connections: u32,
        busy_timeout: Duration,
    ) -> StoreResult<SqliteStore> {
        Self::connect(url, max_connections, busy_timeout, false).await
    }

    /// Connects to the database at `url`; `to_write` creates it if missing and turns on
    /// write-ahead logging (written into the file), else the file is read as it is.
    async fn connect(
        url: &str,
        max_connections: u32,
        busy_timeout: Duration,
        to_write: bool,
    ) -> StoreResult<SqliteStore> {
        let open_err = |cause: Cause| StoreError::Open {
            url: crate::config::redact_url(url),
            cause,
        };
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| open_err(e.into()))?
            .create_if_missing(to_write)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(busy_timeout)
            .foreign_keys(true)
            // 64 MB of page cache per connection: the postings B-tree takes inserts at random
            // terms, and the default 2 MB cache turns that into constant page misses.
            .pragma("cache_size", "-65536")
            // The file read through a memory map (up to 1 GB of it) in each connection: its
            // pages are the kernel's page cache, so a page another connection read costs a
            // page fault at most, not a read() and a copy into this connection's cache. (Pages
            // still in the WAL are read as before. dev60, each part of a question's search
            // alone, p50: BM25 over episodes 2.7 → 2.1 ms, nearest messages 2.4 → 2.0 ms.)
            .pragma("mmap_size", "1073741824")
            // A statement's rows wait for the runtime in a queue this long before the
            // connection's thread stops to wait for room (sqlx's default: 50). A question's
            // searches return up to a few hundred rows each, and each stop was a round of
            // futex wake-ups between the two threads (dev60, a question's searches: 128 -> 89
            // futex calls; groupchat_dev2 median question -0.45 ms). Rows are held only while
            // the reader is behind, at most this many per statement in flight.
            .row_buffer_size(ROW_BUFFER);
        let options = if to_write {
            options.journal_mode(SqliteJournalMode::Wal)
        } else {
            options
        };
        register_extensions();
        let path = options.get_filename().to_path_buf();
        if let Some(dir) = path
            .parent()
            .filter(|d| to_write && !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_err(format!("cannot create {}: {e}", dir.display()).into()))?;
        }
        let origin = format!("{:016x}", rand::random::<u64>());
        let mine = origin.clone();
        let pool = super::kept_open(
            SqlitePoolOptions::new(),
            max_connections,
            super::OPEN_FOR_A_QUESTION,
        )
        // No ping before use: a SQLite connection is the file opened in this process, which
        // nothing outside can end, and sqlx pings it when taking it back (its worker thread
        // is alive). The ping was a round trip to that thread per statement (dev60, three
        // runs in turn: a median question 8.7-10.4 ms with it, 8.1-9.9 without).
        .test_before_acquire(false)
        // Each connection knows its store's id, for the change feed (`changed`).
        .after_connect(move |conn, _| {
            let mine = mine.clone();
            Box::pin(async move {
                sqlx::query("CREATE TEMP TABLE engram_origin (id TEXT NOT NULL)")
                    .execute(&mut *conn)
                    .await?;
                sqlx::query("INSERT INTO temp.engram_origin (id) VALUES ($1)")
                    .bind(mine)
                    .execute(&mut *conn)
                    .await?;
                Ok(())
            })
        })
        .connect_with(options)
        .await
        .map_err(|e| open_err(e.into()))?;
        Ok(SqliteStore { pool, origin })
    }

    /// Writes the postings of messages queued in `message_terms_backlog` (stored before the
    /// retrieval migration, or copied in by `engram migrate`).
    pub(super) async fn drain_terms_backlog(&self) -> StoreResult<()> {
        loop {
            let mut tx = self.write_tx().await?;
            // LEFT JOIN: an id whose message is gone leaves the queue all the same.
            let queued: Vec<QueuedRow> = sqlx::query_as(
                "SELECT b.message_id, m.scope, m.text, m.withheld, m.language FROM message_terms_backlog b LEFT JOIN messages m ON m.id = b.message_id ORDER BY b.message_id LIMIT 1000",
            )
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            let Some(&(last, ..)) = queued.last() else {
                return Ok(());
            };
            let (rows, detected) = shared::queued_postings(queued);
            shared::set_languages(&mut tx, &detected).await?;
            write_postings(&mut tx, &rows).await?;
            sqlx::query("DELETE FROM message_terms_backlog WHERE message_id <= ?")
                .bind(last)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
        }
    }

    /// A private in-memory database (tests, benchmarks).
    pub async fn in_memory() -> StoreResult<SqliteStore> {
        // One connection is enough for tests and benchmarks.
        SqliteStore::open("sqlite::memory:", 1, Duration::from_secs(5)).await
    }

    /// A write transaction that takes the write lock at BEGIN: SQLite then waits its busy
    /// timeout for other writers instead of failing with "database is locked" when a deferred
    /// transaction cannot be upgraded.
    pub(super) async fn write_tx(&self) -> StoreResult<sqlx::Transaction<'static, sqlx::Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_err)
    }

    /// The connection pool (benchmarks and tests).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The lexical searches' pool: the one pool (SQLite plans each statement once per
    /// connection already).
    pub(super) fn searches(&self) -> &SqlitePool {
        &self.pool
    }
}

/// Rows a connection's thread may send ahead of the statement's reader (`connect`).
const ROW_BUFFER: usize = 2048;

/// SQLite hands out max(rowid) + 1: there is no sequence to move after a load.
pub(super) async fn move_sequences(_: &SqliteStore) -> StoreResult<()> {
    Ok(())
}

/// How often the change feed is read.
const CHANGE_POLL: Duration = Duration::from_secs(1);

/// The changes other processes on the file commit (`engram mcp` beside the bot, an
/// operator's command), read from `change_log` every `CHANGE_POLL`: what came after the
/// newest row at the start, in order, but this store's own.
pub(super) async fn watch_changes(
    store: &SqliteStore,
) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
    let mut last: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM change_log")
        .fetch_one(&store.pool)
        .await
        .map_err(db_err)?;
    let (pool, mine) = (store.pool.clone(), store.origin.clone());
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(CHANGE_POLL);
        loop {
            tick.tick().await;
            let rows: Result<Vec<(i64, String, String)>, _> = sqlx::query_as(
                "SELECT seq, origin, change FROM change_log WHERE seq > $1 ORDER BY seq",
            )
            .bind(last)
            .fetch_all(&pool)
            .await;
            let changes = match rows {
                Ok(rows) => rows
                    .into_iter()
                    .filter_map(|(seq, origin, change)| {
                        last = seq;
                        (origin != mine).then(|| Change::parse(&change))
                    })
                    .collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "change feed unreadable; retrying");
                    vec![Change::Unknown]
                }
            };
            for change in changes {
                if tx.send(change).await.is_err() {
                    return;
                }
            }
        }
    });
    Ok(Some(rx))
}

/// Moves what the write-ahead log holds into the database file, after the indexer's batch:
/// a passive checkpoint, which waits for no reader or writer. A chat's pages still in the log
/// are read with a `read()` and a copy into each connection's cache, and every page a search
/// reads is looked up in the log's index first; in the file, they are read through the memory
/// map. The log is otherwise moved only every 1,000 pages, so a chat's first question right
/// after its history was indexed read most of it from the log. dev60, local model, release
/// builds in turn, four runs each: the slowest of 60 questions 22.6–24.7 ms before, 19.6–23.5
/// ms after; the median and 90th percentile the same within the machine's noise, and so is
/// the indexing time.
/// A checkpoint that fails costs only that speed (the batch is committed): it is logged, and
/// the next one, or SQLite's own, moves the log.
pub(super) async fn settle_log(store: &SqliteStore) {
    if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
        .execute(&store.pool)
        .await
    {
        tracing::warn!(error = %db_err(e), "write-ahead log not checkpointed after indexing");
    }
}

/// Planner statistics for the tables whose shape changed; the change feed's rows of more
/// than a day ago go (every process has read them long since).
pub(super) async fn maintain(store: &SqliteStore) -> StoreResult<()> {
    sqlx::query("DELETE FROM change_log WHERE at < $1")
        .bind((chrono::Utc::now() - chrono::Duration::days(1)).timestamp_millis())
        .execute(&store.pool)
        .await
        .map_err(db_err)?;
    sqlx::query("PRAGMA optimize=0x10002")
        .execute(&store.pool)
        .await
        .map_err(db_err)?;
    Ok(())
}

/// Registers sqlite-vec (vec_distance_cosine, vec0) and `ln` for every connection opened
/// afterwards.
fn register_extensions() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // No memory statistics: with them every allocation and free inside SQLite takes one
        // process-wide mutex, and a search's rows are copied on a connection's thread while
        // the rows before them are freed on the runtime's, so the two threads queued on it
        // (dev60, a question's searches on 2 cores: 150 -> 128 futex calls; with the row
        // queue of `connect`, each question a median 0.4 ms faster on dev60 and 0.9 ms on
        // groupchat_dev2, two pairs in turn). Only sqlite3_memory_used,
        // sqlite3_memory_highwater, sqlite3_status64 and the heap limits (their pragmas are
        // no longer enforced) read them; nothing here uses any. It must come before SQLite
        // initializes (`sqlite3_auto_extension` below initializes it); after that SQLite
        // answers SQLITE_MISUSE and nothing changes.
        // SAFETY: a configuration call with the one int argument this option takes, made
        // once. sqlite3_config is not thread-safe: the program's every SQLite connection is
        // opened by the store, after this `Once` (the integration tests also open some
        // directly, where this may come too late and only leaves the statistics on).
        let memstatus =
            unsafe { libsqlite3_sys::sqlite3_config(libsqlite3_sys::SQLITE_CONFIG_MEMSTATUS, 0) };
        if memstatus != libsqlite3_sys::SQLITE_OK {
            tracing::debug!(code = memstatus, "SQLite kept its memory statistics");
        }
        // SAFETY: both are extension entry points with the signature SQLite expects;
        // sqlite3_auto_extension only stores the pointers.
        unsafe {
            libsqlite3_sys::sqlite3_auto_extension(Some(std::mem::transmute::<
                *const (),
                unsafe extern "C" fn(
                    *mut libsqlite3_sys::sqlite3,
                    *mut *mut std::os::raw::c_char,
                    *const libsqlite3_sys::sqlite3_api_routines,
                ) -> std::os::raw::c_int,
            >(
                sqlite_vec::sqlite3_vec_init as *const (),
            )));
            libsqlite3_sys::sqlite3_auto_extension(Some(register_ln));
        }
    });
}

/// Registers `ln(x)` (natural logarithm; NULL for x <= 0 or NULL, as SQLite's own math
/// functions and PostgreSQL's error-free cases have it) on a new connection: the bundled
/// SQLite is built without its math functions, and BM25's idf needs one.
unsafe extern "C" fn register_ln(
    db: *mut libsqlite3_sys::sqlite3,
    _error: *mut *mut std::os::raw::c_char,
    _api: *const libsqlite3_sys::sqlite3_api_routines,
) -> std::os::raw::c_int {
    // SAFETY: `db` is the connection SQLite is opening; the name is a NUL-terminated static.
    unsafe {
        libsqlite3_sys::sqlite3_create_function_v2(
            db,
            c"ln".as_ptr(),
            1,
            libsqlite3_sys::SQLITE_UTF8 | libsqlite3_sys::SQLITE_DETERMINISTIC,
            std::ptr::null_mut(),
            Some(ln),
            None,
            None,
            None,
        )
    }
}

/// `ln(x)` for SQL (`register_ln`).
unsafe extern "C" fn ln(
    context: *mut libsqlite3_sys::sqlite3_context,
    _argc: std::os::raw::c_int,
    argv: *mut *mut libsqlite3_sys::sqlite3_value,
) {
    // SAFETY: SQLite calls this with the one argument the function was registered with.
    unsafe {
        let x = *argv;
        if libsqlite3_sys::sqlite3_value_type(x) == libsqlite3_sys::SQLITE_NULL {
            libsqlite3_sys::sqlite3_result_null(context);
            return;
        }
        let x = libsqlite3_sys::sqlite3_value_double(x);
        if x > 0.0 {
            libsqlite3_sys::sqlite3_result_double(context, x.ln());
        } else {
            libsqlite3_sys::sqlite3_result_null(context);
        }
    }
}

/// One indexer writes at a time: a SQLite write transaction holds the whole database already.
pub(super) async fn lock_indexer(_: &mut sqlx::SqliteConnection) -> StoreResult<()> {
    Ok(())
}

/// A vector space needs no index of its own here: searches scan a scope's vectors exactly.
pub(super) async fn space_index(
    _conn: &mut sqlx::SqliteConnection,
    _space: VectorSpaceId,
    _dimensions: usize,
) -> StoreResult<()> {
    Ok(())
}

/// Nothing to drop with a vector space here (see `space_index`).
pub(super) async fn drop_space_index(
    _conn: &mut sqlx::SqliteConnection,
    _space: VectorSpaceId,
) -> StoreResult<()> {
    Ok(())
}

/// BM25 over the postings of scopes `scopes` in one statement, every list bound value by value
/// (measured: JSON lists made `bench retrieval` 4% slower).
pub(super) async fn search_messages(
    store: &SqliteStore,
    scopes: &[Scope],
    terms: &[String],
    bm25: Bm25,
    limit: usize,
) -> StoreResult<Vec<SearchHit>> {
    if scopes.is_empty() || terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
    // One statement, as on PostgreSQL: N and the average length of the scopes the asker may
    // see, each term's document frequency there (idf follows the searched scopes, not the
    // whole database), and the scores, `Bm25::idf` and `Bm25::term_score` in SQL (`ln` is
    // registered beside sqlite-vec, see `register_extensions`). Each statement more in a row
    // waited for a core while the question was embedded (dev60, the three statements it
    // replaces: 2.0, 1.3 and 2.6 ms at p50, where SQLite alone needs well under 1 ms for all).
    // The scope filter sits in the postings scan, before ORDER BY/LIMIT: a top-k cut never
    // drops an allowed hit, and nothing outside the scopes is ever scored. With no document
    // in the scopes there is no posting either, so N is at least 1 wherever it divides.
    let scope_marks = numbered(4 + terms.len(), keys.len());
    let sql = format!(
        "WITH tot AS (SELECT MAX(CAST(COALESCE(SUM(docs), 0) AS REAL), 1.0) AS n, \
                             CAST(COALESCE(SUM(total_len), 0) AS REAL) AS len \
                      FROM scope_term_stats WHERE scope IN ({scope_marks})), \
         posting AS MATERIALIZED (SELECT term, message_id, tf, doc_len FROM message_terms \
                            WHERE term IN ({}) AND scope IN ({scope_marks})), \
         q AS (SELECT d.term, ln(1.0 + (tot.n - d.df + 0.5) / (d.df + 0.5)) AS idf FROM \
               (SELECT term, CAST(COUNT(*) AS REAL) AS df FROM posting GROUP BY term) d CROSS JOIN tot), \
         scored AS (SELECT o.message_id AS id, \
                      SUM(q.idf * o.tf * (?1 + 1.0) / (o.tf + ?1 * (1.0 - ?2 + ?2 * o.doc_len / MAX(tot.len / tot.n, 1e-9)))) AS score \
            FROM posting o JOIN q ON q.term = o.term CROSS JOIN tot \
            GROUP BY o.message_id ORDER BY score DESC, o.message_id DESC LIMIT ?3) \
         SELECT {}, scored.score FROM scored JOIN messages m ON m.id = scored.id \
         JOIN people p ON p.id = m.author_id ORDER BY scored.score DESC, m.id DESC",
        numbered(4, terms.len()),
        message_columns!(),
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(bm25.k1)
        .bind(bm25.b)
        .bind(limit as i64);
    for t in terms {
        q = q.bind(t);
    }
    for k in &keys {
        q = q.bind(k);
    }
    let rows = q.fetch_all(&store.pool).await.map_err(db_err)?;
    rows.iter()
        .map(|row| hit_from_row(row, crate::store::MESSAGE_COLUMNS))
        .collect()
}

/// `?first, ?first+1, ...` for `n` parameters.
fn numbered(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Nothing to read ahead of a vector search: every scope is scanned exactly.
pub(super) async fn ready_nearest(_store: &SqliteStore, _keys: &[String]) -> StoreResult<()> {
    Ok(())
}

/// The messages of scopes `keys` nearest to `vector`, best first: an exact scan of the scopes'
/// vectors (sqlite-vec computes the distances in C), so the privacy filter comes first and the
/// top k are always k allowed messages.
pub(super) async fn nearest_messages(
    store: &SqliteStore,
    keys: &[String],
    vector: &Embedding,
    limit: usize,
) -> StoreResult<Vec<SearchHit>> {
    // The scopes as plain parameters, not a JSON list: the planner seeks the scope index
    // with them, and this scan runs for every question (measured: p50 +0.4 ms, p99 +2 ms on
    // dev60 with a JSON list).
    let marks: Vec<String> = (0..keys.len()).map(|i| format!("${}", i + 3)).collect();
    let sql = format!(
        "WITH near AS (SELECT message_id AS id, 1.0 - vec_distance_cosine(embedding, $1) AS sim \
            FROM message_vectors WHERE space_id = $2 AND scope IN ({}) ORDER BY sim DESC, message_id DESC LIMIT ${}) \
         SELECT {}, near.sim FROM near JOIN messages m ON m.id = near.id \
         JOIN people p ON p.id = m.author_id ORDER BY near.sim DESC, m.id DESC",
        marks.join(", "),
        keys.len() + 3,
        message_columns!(),
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(vector::to_bytes(&vector.vector))
        .bind(vector.space.0);
    for key in keys {
        query = query.bind(key);
    }
    let rows = query
        .bind(limit as i64)
        .fetch_all(&store.pool)
        .await
        .map_err(db_err)?;
    rows.iter()
        .map(|row| hit_from_row(row, crate::store::MESSAGE_COLUMNS))
        .collect()
}

/// The vectors of these messages (those that have one), by id.
pub(super) async fn message_vectors(
    store: &SqliteStore,
    space: VectorSpaceId,
    ids: &[MessageId],
) -> StoreResult<Vec<MessageVector>> {
    let ids: Vec<i64> = ids.iter().map(|i| i.0).collect();
    let rows: Vec<(i64, Option<i64>, Vec<u8>)> = sqlx::query_as(
        "SELECT message_id, context_id, embedding FROM message_vectors \
         WHERE message_id IN (SELECT value FROM json_each($1)) AND space_id = $2 ORDER BY message_id",
    )
    .bind(shared::list(&ids))
    .bind(space.0)
    .fetch_all(&store.pool)
    .await
    .map_err(db_err)?;
    Ok(rows
        .into_iter()
        .map(|(id, context, blob)| MessageVector {
            message: MessageId(id),
            context: context.map(MessageId),
            vector: vector::from_bytes(&blob),
        })
        .collect())
}

/// A message read with `message_columns!()`.
pub(super) fn message_from_row(row: &SqliteRow) -> StoreResult<StoredMessage> {
    let get = StoreError::Column;
    Ok(StoredMessage {
        id: MessageId(row.try_get(0).map_err(get)?),
        space: SpaceId(row.try_get(1).map_err(get)?),
        channel: row.try_get(2).map_err(get)?,
        scope: parse_scope(row.try_get::<&str, _>(3).map_err(get)?)?,
        author: PersonId(row.try_get(4).map_err(get)?),
        author_name: row.try_get(5).map_err(get)?,
        is_bot: row.try_get::<i64, _>(6).map_err(get)? != 0,
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
fn hit_from_row(row: &SqliteRow, score_column: usize) -> StoreResult<SearchHit> {
    let score: f64 = row.try_get(score_column).map_err(StoreError::Column)?;
    Ok(SearchHit {
        message: message_from_row(row)?,
        score,
    })
}

/// Inserts a chunk of messages in one statement (a redelivered one is skipped); returns the
/// new rows' id, space, channel and external id.
pub(super) async fn insert_rows(
    conn: &mut sqlx::SqliteConnection,
    chunk: &[NewMessage],
) -> StoreResult<Vec<(i64, i64, String, String)>> {
    let sql = format!(
        // A withheld message is born indexed: the indexer never reads it (no episode, no
        // vector, no say in where a topic changes).
        "INSERT INTO messages (space_id, channel, scope, privacy, author_id, is_bot, is_command, external_id, reply_to, text, sent_at, withheld, indexed, language) \
             VALUES {} ON CONFLICT (space_id, channel, external_id) DO NOTHING RETURNING id, space_id, channel, external_id",
        vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
    );
    // Not kept prepared (its shape follows the chunk's size): kept, statements like it filled
    // each connection's cache and pushed the searches' statements out of it, to be prepared
    // again for each question.
    let mut query =
        sqlx::query_as::<_, (i64, i64, String, String)>(sqlx::AssertSqlSafe(sql)).persistent(false);
    for m in chunk {
        query = query
            .bind(m.space.0)
            .bind(&m.channel)
            .bind(m.scope.key())
            .bind(m.privacy.as_str())
            .bind(m.author.0)
            .bind(m.is_bot)
            .bind(m.is_command)
            .bind(&m.external_id)
            .bind(&m.reply_to)
            .bind(&m.text)
            .bind(ms(m.sent_at))
            .bind(m.withheld)
            .bind(m.withheld)
            .bind(m.language.map(Language::code));
    }
    query.fetch_all(&mut *conn).await.map_err(db_err)
}

/// Postings and scope statistics of freshly stored messages (id, scope, text, language).
pub(super) async fn write_postings(
    conn: &mut sqlx::SqliteConnection,
    messages: &[Indexable],
) -> StoreResult<()> {
    let mut rows: Vec<(String, &str, i64, i64, i64)> = Vec::new();
    let mut stats: HashMap<&str, (i64, i64)> = HashMap::new();
    for (id, scope, text, language) in messages {
        let doc = document_terms_in(text, *language);
        let s = stats.entry(scope.as_str()).or_insert((0, 0));
        s.0 += 1;
        s.1 += doc.len as i64;
        for (term, tf) in doc.terms {
            rows.push((term, scope.as_str(), *id, tf as i64, doc.len as i64));
        }
    }
    for chunk in rows.chunks(6000) {
        let sql = format!(
            "INSERT OR IGNORE INTO message_terms (term, scope, message_id, tf, doc_len) VALUES {}",
            vec!["(?, ?, ?, ?, ?)"; chunk.len()].join(", ")
        );
        // Not kept prepared, as `insert_rows`.
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).persistent(false);
        for (term, scope, id, tf, len) in chunk {
            q = q.bind(term).bind(*scope).bind(*id).bind(*tf).bind(*len);
        }
        q.execute(&mut *conn).await.map_err(db_err)?;
    }
    for (scope, (docs, len)) in stats {
        sqlx::query("INSERT INTO scope_term_stats (scope, docs, total_len) VALUES (?, ?, ?) ON CONFLICT (scope) DO UPDATE SET docs = docs + excluded.docs, total_len = total_len + excluded.total_len")
            .bind(scope)
            .bind(docs)
            .bind(len)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The connections a question uses at once are open once the store is (`kept_open`):
    /// none is opened on a question's path.
    #[tokio::test]
    async fn every_connection_is_open_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("engram.db").display());
        let s = super::SqliteStore::open(&url, 3, std::time::Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(s.pool().size(), 3);
    }

    /// SQLite runs without its memory statistics (`register_extensions`): with them, every
    /// row a search copies on a connection's thread and frees on the runtime's takes one
    /// process-wide mutex on both. (Every SQLite connection of this test binary is opened by
    /// the store, so none started SQLite before the store configured it.)
    #[tokio::test]
    async fn sqlite_keeps_no_memory_statistics() {
        let s = super::SqliteStore::in_memory().await.unwrap();
        // SQLite is in use: the statement ran and allocated.
        let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM messages")
            .fetch_one(s.pool())
            .await
            .unwrap();
        assert_eq!(n, 0);
        // SAFETY: reads a counter, with no argument.
        let counted = unsafe { libsqlite3_sys::sqlite3_memory_used() };
        assert_eq!(counted, 0, "SQLite counts its memory (and locks to do so)");
    }

    /// A transaction begun anywhere but `write_tx` would be deferred (or forget IMMEDIATE) and
    /// could fail with "database is locked" under concurrent writers: there is one.
    #[test]
    fn every_transaction_is_begun_by_write_tx() {
        // This file and every concern's file, whose statements run on SQLite too.
        let sources = [
            include_str!("sqlite.rs"),
            include_str!("admin.rs"),
            include_str!("attachments.rs"),
            include_str!("entries.rs"),
            include_str!("episodes.rs"),
            include_str!("facts.rs"),
            include_str!("identities.rs"),
            include_str!("jobs.rs"),
            include_str!("messages.rs"),
            include_str!("oversight.rs"),
            include_str!("search.rs"),
            include_str!("summaries.rs"),
            include_str!("vectors.rs"),
        ];
        let begun = [concat!(".beg", "in("), concat!(".beg", "in_with(")]
            .iter()
            .map(|needle| {
                sources
                    .iter()
                    .map(|s| s.matches(needle).count())
                    .sum::<usize>()
            })
            .sum::<usize>();
        assert_eq!(begun, 1, "transactions must be begun by write_tx only");
        assert!(sources[0].contains(concat!("begin_with(\"BEGIN ", "IMMEDIATE\")")));
        // Every concern file of the store is read above.
        let listed = sources.len() - 1;
        let concerns = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/store"))
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                let text = std::fs::read_to_string(e.as_ref().unwrap().path()).unwrap();
                name != "sqlite.rs" && text.contains("on_both_backends! {")
            })
            .count();
        assert_eq!(listed, concerns, "a concern file is missing from the list");
    }
}
