//! The embedded SQLite backend of `Store` (sqlx, WAL, numbered migrations in
//! `migrations/sqlite`). Default for one machine: `sqlite://data/engram.db`.

use super::copy::{Float, Kind};
use super::rows::{from_ms, ms, parse_scope};
use super::*;
use crate::embed;
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

/// Other processes' caches hear of changes through PostgreSQL's feed only: a SQLite database
/// has no feed (`watch_changes` is None), so there is no one to tell.
pub(super) async fn changed(_: &mut sqlx::SqliteConnection, _: &Change) -> StoreResult<()> {
    Ok(())
}

/// What the statements shared by both backends (`on_both_backends!`) need of this one.
pub(super) mod shared {
    pub(in crate::store) use super::{
        SqliteStore as Backend, changed, db_err, drop_episode, forget_vectors, insert_rows,
        message_from_row, write_postings,
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

    /// Locks the rows a SELECT read until the transaction ends: nothing on SQLite, where a
    /// write transaction holds the whole database from its BEGIN.
    macro_rules! for_update {
        () => {
            ""
        };
    }
    pub(in crate::store) use for_update;

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
}

const MESSAGE_COLUMNS: &str = message_columns!();

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
    })
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url` and applies pending migrations.
    pub async fn open(
        url: &str,
        max_connections: u32,
        busy_timeout: Duration,
    ) -> StoreResult<SqliteStore> {
        let open_err = |cause: Cause| StoreError::Open {
            url: crate::config::redact_url(url),
            cause,
        };
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| open_err(e.into()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(busy_timeout)
            .foreign_keys(true)
            // 64 MB of page cache per connection: the postings B-tree takes inserts at random
            // terms, and the default 2 MB cache turns that into constant page misses.
            .pragma("cache_size", "-65536");
        register_sqlite_vec();
        let path = options.get_filename().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_err(format!("cannot create {}: {e}", dir.display()).into()))?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections)
            .connect_with(options)
            .await
            .map_err(|e| open_err(e.into()))?;
        sqlx::migrate!("./migrations/sqlite")
            .run(&pool)
            .await
            .map_err(super::migrate_error)?;
        let store = SqliteStore { pool };
        store.drain_terms_backlog().await?;
        Ok(store)
    }

    /// Writes the postings of messages queued in `message_terms_backlog` (stored before the
    /// retrieval migration, or copied in by `engram migrate`).
    async fn drain_terms_backlog(&self) -> StoreResult<()> {
        loop {
            let mut tx = self.write_tx().await?;
            // LEFT JOIN: an id whose message is gone leaves the queue all the same.
            let queued: Vec<(i64, Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT b.message_id, m.scope, m.text FROM message_terms_backlog b LEFT JOIN messages m ON m.id = b.message_id AND m.withheld = 0 ORDER BY b.message_id LIMIT 1000",
            )
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            let Some(&(last, _, _)) = queued.last() else {
                return Ok(());
            };
            let rows: Vec<(i64, String, String)> = queued
                .into_iter()
                .filter_map(|(id, scope, text)| Some((id, scope?, text?)))
                .collect();
            write_postings(&mut tx, &rows).await?;
            sqlx::query("DELETE FROM message_terms_backlog WHERE message_id <= ?")
                .bind(last)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
        }
    }

    /// Documents and their total length over `keys`, for BM25's N and average length.
    async fn scope_totals(&self, table: StatsTable, keys: &[String]) -> StoreResult<(i64, i64)> {
        let sql = format!(
            "SELECT COALESCE(SUM({}), 0), COALESCE(SUM(total_len), 0) FROM {} WHERE scope IN ({})",
            table.count_column(),
            table.name(),
            marks(keys.len())
        );
        let mut q = sqlx::query_as::<_, (i64, i64)>(sqlx::AssertSqlSafe(sql));
        for k in keys {
            q = q.bind(k);
        }
        q.fetch_one(&self.pool).await.map_err(db_err)
    }

    /// A private in-memory database (tests, benchmarks).
    pub async fn in_memory() -> StoreResult<SqliteStore> {
        // One connection: every connection to ":memory:" would be its own database.
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
}

#[async_trait]
impl Store for SqliteStore {
    async fn table_counts(&self) -> StoreResult<Vec<TableCount>> {
        let mut out = Vec::with_capacity(Table::ALL.len());
        for table in Table::ALL {
            let sql = format!("SELECT COUNT(*) FROM {}", table.name());
            let rows: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)?;
            out.push(TableCount {
                table: table.name(),
                rows,
            });
        }
        Ok(out)
    }

    async fn search_messages(
        &self,
        scopes: &[Scope],
        terms: &[String],
        bm25: Bm25,
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        if scopes.is_empty() || terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
        let scope_marks = marks(keys.len());
        let term_marks = marks(terms.len());
        // N and average length of the scopes the asker may see, then each term's document
        // frequency there: idf follows the searched scopes, not the whole database.
        let (n, total_len) = self.scope_totals(StatsTable::Messages, &keys).await?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT term, COUNT(*) FROM message_terms WHERE term IN ({term_marks}) AND scope IN ({scope_marks}) GROUP BY term"
        );
        let mut q = sqlx::query_as::<_, (String, i64)>(sqlx::AssertSqlSafe(sql));
        for t in terms {
            q = q.bind(t);
        }
        for k in &keys {
            q = q.bind(k);
        }
        let dfs = q.fetch_all(&self.pool).await.map_err(db_err)?;
        if dfs.is_empty() {
            return Ok(Vec::new());
        }
        let idfs = terms::idfs(n, &dfs);
        let avg_len = total_len as f64 / n as f64;
        // The scope filter sits in the postings scan, before ORDER BY/LIMIT: a top-k cut
        // never drops an allowed hit, and nothing outside the scopes is ever scored.
        let sql = format!(
            "WITH q(term, idf) AS (VALUES {}), \
             scored AS (SELECT t.message_id AS id, SUM(q.idf * t.tf * (?1 + 1.0) / (t.tf + ?1 * (1.0 - ?2 + ?2 * t.doc_len / ?3))) AS score \
                FROM q JOIN message_terms t ON t.term = q.term WHERE t.scope IN ({}) \
                GROUP BY t.message_id ORDER BY score DESC, t.message_id DESC LIMIT ?4) \
             SELECT {MESSAGE_COLUMNS}, scored.score FROM scored JOIN messages m ON m.id = scored.id \
             JOIN people p ON p.id = m.author_id ORDER BY scored.score DESC, m.id DESC",
            numbered_pairs(5, idfs.len()),
            numbered(5 + 2 * idfs.len(), keys.len()),
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(bm25.k1)
            .bind(bm25.b)
            .bind(avg_len)
            .bind(limit as i64);
        for (t, idf) in &idfs {
            q = q.bind(t).bind(idf);
        }
        for k in &keys {
            q = q.bind(k);
        }
        let rows = q.fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(|row| hit_from_row(row, 10)).collect()
    }

    async fn search_episodes(
        &self,
        scopes: &[Scope],
        terms: &[String],
        bm25: Bm25,
        limit: usize,
    ) -> StoreResult<Vec<EpisodeHit>> {
        if scopes.is_empty() || terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
        let scope_marks = marks(keys.len());
        let (n, total_len) = self.scope_totals(StatsTable::Episodes, &keys).await?;
        if n == 0 {
            return Ok(Vec::new());
        }
        // Each term's frequency per episode; idf and scores are computed from these below.
        let sql = format!(
            "SELECT t.term, m.episode_id, SUM(t.tf), MAX(e.total_len) FROM message_terms t \
             JOIN messages m ON m.id = t.message_id JOIN episodes e ON e.id = m.episode_id \
             WHERE t.term IN ({}) AND t.scope IN ({scope_marks}) GROUP BY t.term, m.episode_id",
            marks(terms.len())
        );
        let mut q = sqlx::query_as::<_, (String, i64, i64, i64)>(sqlx::AssertSqlSafe(sql));
        for t in terms {
            q = q.bind(t);
        }
        for k in &keys {
            q = q.bind(k);
        }
        let rows = q.fetch_all(&self.pool).await.map_err(db_err)?;
        Ok(rank_episode_postings(bm25, rows, n, total_len, limit))
    }

    async fn nearest_messages(
        &self,
        scopes: &[Scope],
        vector: &[f32],
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        if scopes.is_empty() || vector.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
        // Exact scan of the scopes' vectors (sqlite-vec computes the distances in C): the
        // privacy filter comes first, so the top k are always k allowed messages.
        let sql = format!(
            "WITH near AS (SELECT message_id AS id, 1.0 - vec_distance_cosine(embedding, ?) AS sim \
                FROM message_vectors WHERE scope IN ({}) ORDER BY sim DESC, message_id DESC LIMIT ?) \
             SELECT {MESSAGE_COLUMNS}, near.sim FROM near JOIN messages m ON m.id = near.id \
             JOIN people p ON p.id = m.author_id ORDER BY near.sim DESC, m.id DESC",
            marks(keys.len())
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(embed::to_bytes(vector));
        for k in &keys {
            q = q.bind(k);
        }
        let rows = q
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(|row| hit_from_row(row, 10)).collect()
    }

    async fn nearest_episodes(
        &self,
        scopes: &[Scope],
        vector: &[f32],
        limit: usize,
    ) -> StoreResult<Vec<EpisodeHit>> {
        if scopes.is_empty() || vector.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
        let sql = format!(
            "SELECT id, 1.0 - vec_distance_cosine(embedding, ?) AS sim FROM episodes \
             WHERE scope IN ({}) AND closed = 1 AND embedding IS NOT NULL ORDER BY sim DESC, id DESC LIMIT ?",
            marks(keys.len())
        );
        let mut q =
            sqlx::query_as::<_, (i64, f64)>(sqlx::AssertSqlSafe(sql)).bind(embed::to_bytes(vector));
        for k in &keys {
            q = q.bind(k);
        }
        let rows = q
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .map(|(episode, score)| EpisodeHit { episode, score })
            .collect())
    }

    async fn unindexed_messages(&self, limit: usize) -> StoreResult<Vec<StoredMessage>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages m INDEXED BY messages_unindexed JOIN people p ON p.id = m.author_id \
             WHERE m.indexed = 0 ORDER BY m.id LIMIT ?"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(message_from_row).collect()
    }

    async fn index_messages(
        &self,
        items: &[IndexedMessage],
        gap: chrono::Duration,
    ) -> StoreResult<usize> {
        let mut tx = self.write_tx().await?;
        let mut done = 0;
        let mut open: HashMap<(i64, String), OpenEpisode> = HashMap::new();
        for item in sorted_for_episodes(items) {
            let m = &item.message;
            let claimed =
                sqlx::query("UPDATE messages SET indexed = 1 WHERE id = ? AND indexed = 0")
                    .bind(m.id.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?
                    .rows_affected();
            if claimed == 0 {
                continue;
            }
            let key = (m.space.0, m.channel.clone());
            if !open.contains_key(&key) {
                let row: Option<(i64, i64, i64)> = sqlx::query_as(
                    "SELECT id, started_at, ended_at FROM episodes WHERE space_id = ? AND channel = ? AND closed = 0 ORDER BY ended_at DESC LIMIT 1",
                )
                .bind(m.space.0)
                .bind(&m.channel)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
                if let Some((id, started, ended)) = row {
                    open.insert(key.clone(), OpenEpisode { id, started, ended });
                }
            }
            let len = document_terms(&m.text).len as i64;
            let at = ms(m.sent_at);
            let episode = match open.get_mut(&key).filter(|e| e.takes(at, gap)) {
                Some(e) => {
                    e.started = e.started.min(at);
                    e.ended = e.ended.max(at);
                    sqlx::query("UPDATE episodes SET started_at = MIN(started_at, ?1), ended_at = MAX(ended_at, ?1), messages = messages + 1, total_len = total_len + ?2, updated_at = ?1 WHERE id = ?3")
                        .bind(at)
                        .bind(len)
                        .bind(e.id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    e.id
                }
                None => {
                    let id: i64 = sqlx::query_scalar(
                        "INSERT INTO episodes (scope, space_id, channel, started_at, ended_at, messages, total_len, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?) RETURNING id",
                    )
                    .bind(m.scope.key())
                    .bind(m.space.0)
                    .bind(&m.channel)
                    .bind(at)
                    .bind(at)
                    .bind(len)
                    .bind(at)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    sqlx::query("INSERT INTO scope_episode_stats (scope, episodes, total_len) VALUES (?, 1, 0) ON CONFLICT (scope) DO UPDATE SET episodes = episodes + 1")
                        .bind(m.scope.key())
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    open.insert(
                        key,
                        OpenEpisode {
                            id,
                            started: at,
                            ended: at,
                        },
                    );
                    id
                }
            };
            sqlx::query("UPDATE scope_episode_stats SET total_len = total_len + ? WHERE scope = ?")
                .bind(len)
                .bind(m.scope.key())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            sqlx::query("UPDATE messages SET episode_id = ? WHERE id = ?")
                .bind(episode)
                .bind(m.id.0)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            if let Some(v) = &item.embedding {
                sqlx::query("INSERT OR REPLACE INTO message_vectors (message_id, scope, embedding) SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM messages WHERE id = ?1 AND withheld = 1)")
                    .bind(m.id.0)
                    .bind(m.scope.key())
                    .bind(embed::to_bytes(v))
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            done += 1;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(done)
    }

    async fn episodes_to_close(
        &self,
        ended_before: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<Episode>> {
        let sql = format!(
            "SELECT {EPISODE_COLUMNS} FROM episodes WHERE closed = 0 AND ended_at < ? ORDER BY ended_at, id LIMIT ?"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ms(ended_before))
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(episode_from_row).collect()
    }

    async fn episodes(&self, ids: &[i64]) -> StoreResult<Vec<Episode>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {EPISODE_COLUMNS} FROM episodes WHERE id IN ({}) ORDER BY id",
            marks(ids.len())
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for id in ids {
            q = q.bind(id);
        }
        let rows = q.fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(episode_from_row).collect()
    }

    async fn episode_messages(
        &self,
        episode: i64,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>> {
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages m INDEXED BY messages_by_episode JOIN people p ON p.id = m.author_id \
             WHERE m.episode_id = ? AND m.withheld = 0 ORDER BY m.sent_at, m.id LIMIT ?"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(episode)
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(message_from_row).collect()
    }

    async fn message_vectors(&self, ids: &[MessageId]) -> StoreResult<Vec<(MessageId, Vec<f32>)>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(500) {
            let sql = format!(
                "SELECT message_id, embedding FROM message_vectors WHERE message_id IN ({}) ORDER BY message_id",
                marks(chunk.len())
            );
            let mut q = sqlx::query_as::<_, (i64, Vec<u8>)>(sqlx::AssertSqlSafe(sql));
            for id in chunk {
                q = q.bind(id.0);
            }
            for (id, blob) in q.fetch_all(&self.pool).await.map_err(db_err)? {
                out.push((MessageId(id), embed::from_bytes(&blob)));
            }
        }
        Ok(out)
    }

    async fn similar_episode(
        &self,
        scope: &Scope,
        vector: &[f32],
        min: f32,
        except: i64,
    ) -> StoreResult<Option<(i64, f32)>> {
        let row: Option<(i64, f64)> = sqlx::query_as(
            "SELECT id, 1.0 - vec_distance_cosine(embedding, ?) AS sim FROM episodes \
             WHERE scope = ? AND closed = 1 AND id <> ? AND embedding IS NOT NULL ORDER BY sim DESC, id LIMIT 1",
        )
        .bind(embed::to_bytes(vector))
        .bind(scope.key())
        .bind(except)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(row
            .map(|(id, sim)| (id, sim as f32))
            .filter(|(_, sim)| *sim >= min))
    }

    async fn close_episode(&self, episode: i64, close: &EpisodeClose) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
        let row: Option<(String, i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT scope, started_at, ended_at, messages, total_len FROM episodes WHERE id = ? AND closed = 0",
        )
        .bind(episode)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err)?;
        // Closed (or merged away) already: closing again changes nothing.
        let Some((scope, started, ended, count, total_len)) = row else {
            return Ok(());
        };
        match close {
            EpisodeClose::Add { summary, embedding } => {
                sqlx::query("UPDATE episodes SET summary = ?, embedding = ?, closed = 1, updated_at = ? WHERE id = ?")
                    .bind(summary)
                    .bind(embedding.as_deref().map(embed::to_bytes))
                    .bind(ended)
                    .bind(episode)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            EpisodeClose::Merge {
                into,
                summary,
                embedding,
            } => {
                let target_scope: Option<String> =
                    sqlx::query_scalar("SELECT scope FROM episodes WHERE id = ? AND closed = 1")
                        .bind(into)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_err)?;
                // Only within one scope, and so one privacy level.
                if target_scope.as_deref() != Some(scope.as_str()) {
                    return Err(StoreError::Conflict {
                        what: format!(
                            "episode {episode} cannot merge into {into}: not a closed episode of the same scope"
                        ),
                    });
                }
                sqlx::query("UPDATE messages SET episode_id = ? WHERE episode_id = ?")
                    .bind(into)
                    .bind(episode)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                sqlx::query("UPDATE episodes SET started_at = MIN(started_at, ?), ended_at = MAX(ended_at, ?), messages = messages + ?, total_len = total_len + ?, summary = ?, embedding = COALESCE(?, embedding), updated_at = ? WHERE id = ?")
                    .bind(started)
                    .bind(ended)
                    .bind(count)
                    .bind(total_len)
                    .bind(summary)
                    .bind(embedding.as_deref().map(embed::to_bytes))
                    .bind(ended)
                    .bind(into)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                drop_episode(&mut tx, episode, &scope).await?;
            }
        }
        tx.commit().await.map_err(db_err)?;
        Ok(())
    }

    async fn dump_rows(
        &self,
        table: Table,
        offset: i64,
        limit: i64,
    ) -> StoreResult<Vec<Vec<Value>>> {
        let spec = table.spec();
        let cols: Vec<&str> = spec.columns.iter().map(|(c, _)| *c).collect();
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {} LIMIT ? OFFSET ?",
            cols.join(", "),
            spec.name,
            spec.order_by
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        let bad = |e: sqlx::Error| StoreError::Corrupt(format!("{}: {e}", spec.name));
        rows.iter()
            .map(|row| {
                spec.columns
                    .iter()
                    .enumerate()
                    .map(|(i, (_, kind))| {
                        Ok(match kind {
                            Kind::Int | Kind::Bool => Value::Int(row.try_get(i).map_err(bad)?),
                            Kind::Text => Value::Text(row.try_get(i).map_err(bad)?),
                            Kind::NullInt => row
                                .try_get::<Option<i64>, _>(i)
                                .map_err(bad)?
                                .map_or(Value::Null, Value::Int),
                            Kind::NullText => row
                                .try_get::<Option<String>, _>(i)
                                .map_err(bad)?
                                .map_or(Value::Null, Value::Text),
                            Kind::Real => Value::Real(Float(row.try_get(i).map_err(bad)?)),
                        })
                    })
                    .collect()
            })
            .collect()
    }

    async fn load_rows(&self, table: Table, rows: &[Vec<Value>]) -> StoreResult<u64> {
        let spec = table.spec();
        let cols: Vec<&str> = spec.columns.iter().map(|(c, _)| *c).collect();
        let per_statement = (30_000 / cols.len()).min(500);
        let mut tx = self.write_tx().await?;
        let mut added = 0;
        for chunk in rows.chunks(per_statement) {
            let one = format!("({})", vec!["?"; cols.len()].join(", "));
            // Copied messages need postings: the ones actually added join the backlog.
            let returning = if spec.name == "messages" {
                " RETURNING id"
            } else {
                ""
            };
            let sql = format!(
                "INSERT INTO {} ({}) VALUES {} ON CONFLICT DO NOTHING{returning}",
                spec.name,
                cols.join(", "),
                vec![one; chunk.len()].join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for row in chunk {
                for value in row {
                    query = match value {
                        Value::Null => query.bind(None::<i64>),
                        Value::Int(v) => query.bind(*v),
                        Value::Text(t) => query.bind(t.as_str()),
                        Value::Real(r) => query.bind(r.0),
                    };
                }
            }
            let inserted = if returning.is_empty() {
                added += query
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?
                    .rows_affected();
                Vec::new()
            } else {
                let rows = query.fetch_all(&mut *tx).await.map_err(db_err)?;
                added += rows.len() as u64;
                rows
            };
            if spec.name == "messages" && !inserted.is_empty() {
                let sql = format!(
                    "INSERT OR IGNORE INTO message_terms_backlog (message_id) VALUES {}",
                    vec!["(?)"; inserted.len()].join(", ")
                );
                let mut backlog = sqlx::query(sqlx::AssertSqlSafe(sql));
                for row in &inserted {
                    backlog = backlog.bind(row.try_get::<i64, _>(0).map_err(db_err)?);
                }
                backlog.execute(&mut *tx).await.map_err(db_err)?;
            }
        }
        tx.commit().await.map_err(db_err)?;
        Ok(added)
    }

    async fn watch_changes(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
        Ok(None)
    }

    async fn maintain(&self) -> StoreResult<()> {
        for sql in ["PRAGMA optimize=0x10002"] {
            sqlx::query(sql).execute(&self.pool).await.map_err(db_err)?;
        }
        Ok(())
    }

    async fn finish_load(&self) -> StoreResult<()> {
        // SQLite hands out max(rowid) + 1: no sequence to move. Copied messages get postings.
        self.drain_terms_backlog().await
    }
}

/// Registers sqlite-vec (vec_distance_cosine, vec0) for every connection opened afterwards.
fn register_sqlite_vec() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: sqlite3_vec_init has the signature SQLite expects of an extension entry
        // point; sqlite3_auto_extension only stores the pointer.
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
        }
    });
}

fn marks(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// `?first, ?first+1, ...` for `n` parameters.
fn numbered(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `(?first, ?first+1), ...` for `n` pairs.
fn numbered_pairs(first: usize, n: usize) -> String {
    (0..n)
        .map(|i| format!("(?{}, ?{})", first + 2 * i, first + 2 * i + 1))
        .collect::<Vec<_>>()
        .join(", ")
}

fn hit_from_row(row: &SqliteRow, score_column: usize) -> StoreResult<SearchHit> {
    let score: f64 = row.try_get(score_column).map_err(StoreError::Column)?;
    Ok(SearchHit {
        message: message_from_row(row)?,
        score,
    })
}

const EPISODE_COLUMNS: &str =
    "id, scope, space_id, channel, started_at, ended_at, messages, summary, closed";

fn episode_from_row(row: &SqliteRow) -> StoreResult<Episode> {
    let get = StoreError::Column;
    Ok(Episode {
        id: row.try_get(0).map_err(get)?,
        scope: parse_scope(row.try_get::<&str, _>(1).map_err(get)?)?,
        space: SpaceId(row.try_get(2).map_err(get)?),
        channel: row.try_get(3).map_err(get)?,
        started_at: from_ms(row.try_get(4).map_err(get)?)?,
        ended_at: from_ms(row.try_get(5).map_err(get)?)?,
        messages: row.try_get(6).map_err(get)?,
        summary: row.try_get(7).map_err(get)?,
        closed: row.try_get::<i64, _>(8).map_err(get)? != 0,
    })
}

/// Postings and scope statistics of freshly stored messages (id, scope, text).
/// Inserts a chunk of messages in one statement (a redelivered one is skipped); returns the
/// new rows' id, space, channel and external id.
pub(super) async fn insert_rows(
    conn: &mut sqlx::SqliteConnection,
    chunk: &[NewMessage],
) -> StoreResult<Vec<(i64, i64, String, String)>> {
    let sql = format!(
        "INSERT INTO messages (space_id, channel, scope, privacy, author_id, is_bot, is_command, external_id, reply_to, text, sent_at, withheld) \
             VALUES {} ON CONFLICT (space_id, channel, external_id) DO NOTHING RETURNING id, space_id, channel, external_id",
        vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
    );
    let mut query = sqlx::query_as::<_, (i64, i64, String, String)>(sqlx::AssertSqlSafe(sql));
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
            .bind(m.withheld);
    }
    query.fetch_all(&mut *conn).await.map_err(db_err)
}

/// A deleted message's vector goes with it.
pub(super) async fn forget_vectors(
    conn: &mut sqlx::SqliteConnection,
    ids: &[i64],
) -> StoreResult<()> {
    sqlx::query(
        "DELETE FROM message_vectors WHERE message_id IN (SELECT value FROM json_each($1))",
    )
    .bind(shared::list(ids))
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(())
}

pub(super) async fn write_postings(
    conn: &mut sqlx::SqliteConnection,
    messages: &[(i64, String, String)],
) -> StoreResult<()> {
    let mut rows: Vec<(String, &str, i64, i64, i64)> = Vec::new();
    let mut stats: HashMap<&str, (i64, i64)> = HashMap::new();
    for (id, scope, text) in messages {
        let doc = document_terms(text);
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
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
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

/// Deletes an episode (emptied, or merged into another) and counts it out of its scope.
pub(super) async fn drop_episode(
    conn: &mut sqlx::SqliteConnection,
    episode: i64,
    scope: &str,
) -> StoreResult<()> {
    sqlx::query("DELETE FROM episodes WHERE id = ?")
        .bind(episode)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    sqlx::query("UPDATE scope_episode_stats SET episodes = episodes - 1 WHERE scope = ?")
        .bind(scope)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A transaction begun anywhere but `write_tx` would be deferred (or forget IMMEDIATE) and
    /// could fail with "database is locked" under concurrent writers: there is one.
    #[test]
    fn every_transaction_is_begun_by_write_tx() {
        let source = include_str!("sqlite.rs");
        let begun = [concat!(".beg", "in("), concat!(".beg", "in_with(")]
            .iter()
            .map(|needle| source.matches(needle).count())
            .sum::<usize>();
        assert_eq!(begun, 1, "transactions must be begun by write_tx only");
        assert!(source.contains(concat!("begin_with(\"BEGIN ", "IMMEDIATE\")")));
    }
}
