//! The embedded SQLite backend of `Store` (sqlx, WAL, numbered migrations in
//! `migrations/sqlite`). Default for one machine: `sqlite://data/engram.db`.

use super::copy::Kind;
use super::rows::{self, from_ms, ms, parse_scope};
use super::*;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};
use std::str::FromStr;
use std::time::Duration;

pub struct SqliteStore {
    pool: SqlitePool,
}

fn db_err(e: sqlx::Error) -> StoreError {
    match &e {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => {
            StoreError::Unavailable(e.to_string())
        }
        sqlx::Error::Database(d)
            if matches!(d.code().as_deref(), Some("5") | Some("6") | Some("517")) =>
        {
            StoreError::Unavailable(e.to_string())
        }
        _ => StoreError::Query(e.to_string()),
    }
}

const MESSAGE_COLUMNS: &str = "m.id, m.space_id, m.channel, m.scope, m.author_id, p.display_name, m.is_bot, m.text, m.sent_at";

fn message_from_row(row: &SqliteRow) -> StoreResult<StoredMessage> {
    let get = |e: sqlx::Error| StoreError::Corrupt(e.to_string());
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
    })
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url` and applies pending migrations.
    pub async fn open(
        url: &str,
        max_connections: u32,
        busy_timeout: Duration,
    ) -> StoreResult<SqliteStore> {
        let open_err = |reason: String| StoreError::Open {
            url: crate::config::redact_url(url),
            reason,
        };
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| open_err(e.to_string()))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(busy_timeout)
            .foreign_keys(true);
        let path = options.get_filename().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_err(format!("cannot create {}: {e}", dir.display())))?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(max_connections)
            .connect_with(options)
            .await
            .map_err(|e| open_err(e.to_string()))?;
        sqlx::migrate!("./migrations/sqlite")
            .run(&pool)
            .await
            .map_err(super::migrate_error)?;
        Ok(SqliteStore { pool })
    }

    /// A private in-memory database (tests, benchmarks).
    pub async fn in_memory() -> StoreResult<SqliteStore> {
        // One connection: every connection to ":memory:" would be its own database.
        SqliteStore::open("sqlite::memory:", 1, Duration::from_secs(5)).await
    }

    /// A write transaction that takes the write lock at BEGIN: SQLite then waits its busy
    /// timeout for other writers instead of failing with "database is locked" when a deferred
    /// transaction cannot be upgraded.
    async fn write_tx(&self) -> StoreResult<sqlx::Transaction<'static, sqlx::Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_err)
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Chatter of a scope (optionally of one author) in [from, to): the latest `limit`, oldest first.
    async fn chatter(
        &self,
        scope: &Scope,
        author: Option<PersonId>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>> {
        // SQLite's planner likes any index that avoids the sort (time only, or scope only for a
        // quiet author) and then scans a whole range; pin the index that matches the filter.
        let (index, author_clause) = match author {
            Some(_) => (
                "INDEXED BY messages_by_scope_author_time",
                "AND m.author_id = ?",
            ),
            None => ("INDEXED BY messages_by_scope_time", ""),
        };
        let sql = format!(
            "SELECT * FROM (SELECT {MESSAGE_COLUMNS} FROM messages m {index} JOIN people p ON p.id = m.author_id \
             WHERE m.scope = ? {author_clause} AND m.sent_at >= ? AND m.sent_at < ? AND m.is_bot = 0 AND m.is_command = 0 \
             ORDER BY m.sent_at DESC, m.id DESC LIMIT ?) ORDER BY 9, 1"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(scope.key());
        if let Some(author) = author {
            query = query.bind(author.0);
        }
        let rows = query
            .bind(ms(from))
            .bind(ms(to))
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(message_from_row).collect()
    }

    async fn person_for_identity(
        &self,
        platform: Platform,
        external_id: &str,
    ) -> StoreResult<Option<(PersonId, String)>> {
        let row: Option<(i64, String)> = sqlx::query_as(
            "SELECT person_id, display_name FROM identities WHERE platform = ? AND external_id = ?",
        )
        .bind(platform.as_str())
        .bind(external_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(row.map(|(id, name)| (PersonId(id), name)))
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn resolve_person(
        &self,
        platform: Platform,
        external_id: &str,
        display_name: &str,
    ) -> StoreResult<PersonId> {
        let now = ms(Utc::now());
        if let Some((id, name)) = self.person_for_identity(platform, external_id).await? {
            if name != display_name {
                let mut tx = self.write_tx().await?;
                sqlx::query(
                    "UPDATE identities SET display_name = ? WHERE platform = ? AND external_id = ?",
                )
                .bind(display_name)
                .bind(platform.as_str())
                .bind(external_id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                sqlx::query("UPDATE people SET display_name = ? WHERE id = ?")
                    .bind(display_name)
                    .bind(id.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                tx.commit().await.map_err(db_err)?;
            }
            return Ok(id);
        }
        let mut tx = self.write_tx().await?;
        let person: i64 = sqlx::query_scalar(
            "INSERT INTO people (display_name, created_at) VALUES (?, ?) RETURNING id",
        )
        .bind(display_name)
        .bind(now)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        let inserted = sqlx::query(
            "INSERT INTO identities (platform, external_id, person_id, display_name, created_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (platform, external_id) DO NOTHING",
        )
        .bind(platform.as_str())
        .bind(external_id)
        .bind(person)
        .bind(display_name)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?
        .rows_affected();
        if inserted == 0 {
            // Another writer created this identity first: use theirs, drop our person row.
            tx.rollback().await.map_err(db_err)?;
            return self
                .person_for_identity(platform, external_id)
                .await?
                .map(|(id, _)| id)
                .ok_or_else(|| StoreError::Conflict {
                    what: "identity".into(),
                });
        }
        tx.commit().await.map_err(db_err)?;
        Ok(PersonId(person))
    }

    async fn find_identity(
        &self,
        platform: Platform,
        external_id: &str,
    ) -> StoreResult<Option<PersonId>> {
        Ok(self
            .person_for_identity(platform, external_id)
            .await?
            .map(|(id, _)| id))
    }

    async fn find_person_by_name(
        &self,
        platform: Platform,
        name: &str,
    ) -> StoreResult<Option<PersonId>> {
        let id: Option<i64> = sqlx::query_scalar(
            "SELECT person_id FROM identities WHERE platform = ? AND display_name = ? COLLATE NOCASE ORDER BY created_at LIMIT 1",
        )
        .bind(platform.as_str())
        .bind(name)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(id.map(PersonId))
    }

    async fn person(&self, id: PersonId) -> StoreResult<Option<Person>> {
        let name: Option<String> =
            sqlx::query_scalar("SELECT display_name FROM people WHERE id = ?")
                .bind(id.0)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
        Ok(name.map(|display_name| Person { id, display_name }))
    }

    async fn resolve_space(
        &self,
        platform: Platform,
        external_id: &str,
        kind: SpaceKind,
        title: &str,
    ) -> StoreResult<SpaceId> {
        let existing: Option<i64> =
            sqlx::query_scalar("SELECT id FROM spaces WHERE platform = ? AND external_id = ?")
                .bind(platform.as_str())
                .bind(external_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
        if let Some(id) = existing {
            return Ok(SpaceId(id));
        }
        sqlx::query(
            "INSERT INTO spaces (platform, external_id, kind, title, created_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (platform, external_id) DO NOTHING",
        )
        .bind(platform.as_str())
        .bind(external_id)
        .bind(kind.as_str())
        .bind(title)
        .bind(ms(Utc::now()))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        let id: i64 =
            sqlx::query_scalar("SELECT id FROM spaces WHERE platform = ? AND external_id = ?")
                .bind(platform.as_str())
                .bind(external_id)
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)?;
        Ok(SpaceId(id))
    }

    async fn insert_message(&self, msg: &NewMessage) -> StoreResult<MessageId> {
        // Autocommit on a plain connection: the hot path, one round trip per message.
        let mut conn = self.pool.acquire().await.map_err(db_err)?;
        Ok(insert_chunk(&mut conn, std::slice::from_ref(msg)).await?[0])
    }

    async fn insert_messages(&self, msgs: &[NewMessage]) -> StoreResult<Vec<MessageId>> {
        let mut tx = self.write_tx().await?;
        let mut ids = Vec::with_capacity(msgs.len());
        for chunk in msgs.chunks(500) {
            ids.extend(insert_chunk(&mut tx, chunk).await?);
        }
        tx.commit().await.map_err(db_err)?;
        Ok(ids)
    }

    async fn recent_messages(
        &self,
        space: SpaceId,
        channel: &str,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>> {
        let sql = format!(
            "SELECT * FROM (SELECT {MESSAGE_COLUMNS} FROM messages m INDEXED BY messages_by_channel_time JOIN people p ON p.id = m.author_id \
             WHERE m.space_id = ? AND m.channel = ? ORDER BY m.sent_at DESC, m.id DESC LIMIT ?) ORDER BY 9, 1"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(space.0)
            .bind(channel)
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(message_from_row).collect()
    }

    async fn chatter_in_range(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>> {
        self.chatter(scope, None, from, to, limit).await
    }

    async fn author_chatter_in_range(
        &self,
        scope: &Scope,
        author: PersonId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>> {
        self.chatter(scope, Some(author), from, to, limit).await
    }

    async fn chatter_stats(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<RangeStats> {
        let (last, count): (Option<i64>, i64) =
            sqlx::query_as("SELECT MAX(id), COUNT(*) FROM messages INDEXED BY messages_by_scope_time WHERE scope = ? AND sent_at >= ? AND sent_at < ? AND is_bot = 0 AND is_command = 0")
                .bind(scope.key())
                .bind(ms(from))
                .bind(ms(to))
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)?;
        Ok(RangeStats {
            last_message: last.unwrap_or(0),
            count,
        })
    }

    async fn facts(&self, person: PersonId, scope: &Scope) -> StoreResult<FactsRecord> {
        let row: Option<(String, i64, i64)> = sqlx::query_as(
            "SELECT text, version, updated_at FROM facts WHERE person_id = ? AND scope = ?",
        )
        .bind(person.0)
        .bind(scope.key())
        .fetch_optional(&self.pool)
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
                "INSERT INTO facts (person_id, scope, text, version, updated_at) VALUES (?, ?, ?, 1, ?) \
                 ON CONFLICT (person_id, scope) DO NOTHING",
            )
            .bind(person.0)
            .bind(&key)
            .bind(text)
            .bind(at)
            .execute(&mut *tx)
            .await
        } else {
            sqlx::query("UPDATE facts SET text = ?, version = ?, updated_at = ? WHERE person_id = ? AND scope = ? AND version = ?")
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
        sqlx::query(
            "INSERT INTO fact_versions (person_id, scope, version, op, request, text, method, changed_by, source_message_id, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        tx.commit().await.map_err(db_err)?;
        Ok(new_version)
    }

    async fn fact_history(&self, person: PersonId, scope: &Scope) -> StoreResult<Vec<FactVersion>> {
        let rows: Vec<rows::FactVersionRow> = sqlx::query_as(
            "SELECT version, op, request, text, method, changed_by, source_message_id, created_at FROM fact_versions \
             WHERE person_id = ? AND scope = ? ORDER BY version",
        )
        .bind(person.0)
        .bind(scope.key())
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows::fact_versions(rows)
    }

    async fn day_summary(
        &self,
        scope: &Scope,
        day: NaiveDate,
    ) -> StoreResult<Option<DaySummaryRecord>> {
        let row: Option<(String, i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT summaries, through_message_id, message_count, is_final, computed_at FROM day_summaries WHERE scope = ? AND day = ?",
        )
        .bind(scope.key())
        .bind(day.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        let Some((json, through, count, is_final, at)) = row else {
            return Ok(None);
        };
        rows::day_summary(scope, day, &json, through, count, is_final != 0, at).map(Some)
    }

    async fn put_day_summary(
        &self,
        scope: &Scope,
        day: NaiveDate,
        record: &DaySummaryRecord,
    ) -> StoreResult<()> {
        let json = rows::summaries_json(record)?;
        // A final summary is never replaced by a non-final one (two processes racing).
        sqlx::query(
            "INSERT INTO day_summaries (scope, day, summaries, through_message_id, message_count, is_final, computed_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (scope, day) DO UPDATE SET summaries = excluded.summaries, \
               through_message_id = excluded.through_message_id, message_count = excluded.message_count, \
               is_final = excluded.is_final, computed_at = excluded.computed_at \
             WHERE day_summaries.is_final = 0",
        )
        .bind(scope.key())
        .bind(day.to_string())
        .bind(json)
        .bind(record.through_message)
        .bind(record.message_count)
        .bind(record.is_final as i64)
        .bind(ms(record.computed_at))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn history_summary(
        &self,
        scope: &Scope,
        person: PersonId,
        end_day: NaiveDate,
    ) -> StoreResult<Option<String>> {
        sqlx::query_scalar("SELECT summary FROM history_summaries WHERE scope = ? AND person_id = ? AND end_day = ?")
            .bind(scope.key())
            .bind(person.0)
            .bind(end_day.to_string())
            .fetch_optional(&self.pool)
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
    ) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO history_summaries (scope, person_id, end_day, summary, computed_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (scope, person_id, end_day) DO NOTHING",
        )
        .bind(scope.key())
        .bind(person.0)
        .bind(end_day.to_string())
        .bind(summary)
        .bind(ms(at))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

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

    async fn active_scopes(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<Scope>> {
        let keys: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT scope FROM messages WHERE sent_at >= ? AND sent_at < ? AND is_bot = 0 AND is_command = 0 ORDER BY scope",
        )
        .bind(ms(from))
        .bind(ms(to))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        keys.iter().map(|k| parse_scope(k)).collect()
    }

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
            "INSERT INTO job_runs (job, run_key, holder, status, lease_until, attempts, started_at) VALUES (?, ?, ?, 'running', ?, 1, ?) \
             ON CONFLICT (job, run_key) DO NOTHING",
        )
        .bind(job)
        .bind(run_key)
        .bind(holder)
        .bind(until)
        .bind(ms(now))
        .execute(&self.pool)
        .await
        .map_err(db_err)?
        .rows_affected();
        if inserted == 1 {
            return Ok(JobClaim::Acquired { attempt: 1 });
        }
        let taken: Option<i64> = sqlx::query_scalar(
            "UPDATE job_runs SET holder = ?, status = 'running', lease_until = ?, attempts = attempts + 1, started_at = ? \
             WHERE job = ? AND run_key = ? AND (status = 'failed' OR (status = 'running' AND lease_until < ?)) RETURNING attempts",
        )
        .bind(holder)
        .bind(until)
        .bind(ms(now))
        .bind(job)
        .bind(run_key)
        .bind(ms(now))
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        if let Some(attempt) = taken {
            return Ok(JobClaim::Acquired { attempt });
        }
        let (status, owner, lease_until): (String, String, i64) = sqlx::query_as(
            "SELECT status, holder, lease_until FROM job_runs WHERE job = ? AND run_key = ?",
        )
        .bind(job)
        .bind(run_key)
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        rows::claim_refused(&status, owner, lease_until)
    }

    async fn finish_job(
        &self,
        job: &str,
        run_key: &str,
        holder: &str,
        now: DateTime<Utc>,
        ok: bool,
        detail: &str,
    ) -> StoreResult<bool> {
        let updated = sqlx::query(
            "UPDATE job_runs SET status = ?, finished_at = ?, detail = ? WHERE job = ? AND run_key = ? AND holder = ? AND status = 'running'",
        )
        .bind(if ok { "done" } else { "failed" })
        .bind(ms(now))
        .bind(detail)
        .bind(job)
        .bind(run_key)
        .bind(holder)
        .execute(&self.pool)
        .await
        .map_err(db_err)?
        .rows_affected();
        Ok(updated == 1)
    }

    async fn job_runs(&self, job: &str) -> StoreResult<Vec<JobRun>> {
        let rows: Vec<rows::JobRunRow> = sqlx::query_as(
            "SELECT job, run_key, holder, status, attempts, detail FROM job_runs WHERE job = ? ORDER BY run_key",
        )
        .bind(job)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(rows::job_runs(rows))
    }

    async fn search_messages(
        &self,
        scopes: &[Scope],
        terms: &[String],
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>> {
        if scopes.is_empty() || terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        // Every term becomes a quoted FTS5 string: no operator, column filter or NEAR survives.
        // CROSS JOIN makes SQLite walk the (few) full-text matches and look their rows up,
        // rather than probe the index once per message of the scope; the scope filter still
        // runs before ORDER BY/LIMIT, so a top-k cut never drops an allowed hit.
        let expr = terms
            .iter()
            .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" OR ");
        let marks = vec!["?"; scopes.len()].join(", ");
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, bm25(messages_fts) AS rank FROM messages_fts \
             CROSS JOIN messages m ON m.id = messages_fts.rowid JOIN people p ON p.id = m.author_id \
             WHERE messages_fts MATCH ? AND m.scope IN ({marks}) ORDER BY rank LIMIT ?"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(expr);
        for scope in scopes {
            query = query.bind(scope.key());
        }
        let rows = query
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|row| {
                let rank: f64 = row
                    .try_get(9)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                Ok(SearchHit {
                    message: message_from_row(row)?,
                    score: -rank,
                })
            })
            .collect()
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
            let sql = format!(
                "INSERT INTO {} ({}) VALUES {} ON CONFLICT DO NOTHING",
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
                    };
                }
            }
            added += query
                .execute(&mut *tx)
                .await
                .map_err(db_err)?
                .rows_affected();
        }
        tx.commit().await.map_err(db_err)?;
        Ok(added)
    }

    async fn watch_changes(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
        Ok(None)
    }

    async fn maintain(&self) -> StoreResult<()> {
        for sql in [
            "INSERT INTO messages_fts (messages_fts) VALUES ('optimize')",
            "PRAGMA optimize=0x10002",
        ] {
            sqlx::query(sql).execute(&self.pool).await.map_err(db_err)?;
        }
        Ok(())
    }

    async fn finish_load(&self) -> StoreResult<()> {
        // SQLite hands out max(rowid) + 1: nothing to move.
        Ok(())
    }
}

/// Stores `chunk` with one multi-row INSERT; ids are matched back by each row's unique key,
/// and a message stored before (a redelivery) keeps its id.
async fn insert_chunk(
    conn: &mut sqlx::SqliteConnection,
    chunk: &[NewMessage],
) -> StoreResult<Vec<MessageId>> {
    let mut ids = Vec::with_capacity(chunk.len());
    let sql = format!(
        "INSERT INTO messages (space_id, channel, scope, privacy, author_id, is_bot, is_command, external_id, reply_to, text, sent_at) \
             VALUES {} ON CONFLICT (space_id, channel, external_id) DO NOTHING RETURNING id, space_id, channel, external_id",
        vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; chunk.len()].join(", ")
    );
    let mut query = sqlx::query_as::<_, (i64, i64, String, String)>(sqlx::AssertSqlSafe(sql));
    for m in chunk {
        query = query
            .bind(m.space.0)
            .bind(&m.channel)
            .bind(m.scope.key())
            .bind(m.privacy.as_str())
            .bind(m.author.0)
            .bind(m.is_bot as i64)
            .bind(m.is_command as i64)
            .bind(&m.external_id)
            .bind(&m.reply_to)
            .bind(&m.text)
            .bind(ms(m.sent_at));
    }
    let inserted: std::collections::HashMap<(i64, String, String), i64> = query
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?
        .into_iter()
        .map(|(id, s, c, e)| ((s, c, e), id))
        .collect();
    for m in chunk {
        match inserted.get(&(m.space.0, m.channel.clone(), m.external_id.clone())) {
            Some(id) => ids.push(MessageId(*id)),
            // Already stored (a redelivered message): its existing id.
            None => ids.push(existing_message(conn, m).await?),
        }
    }
    Ok(ids)
}

/// The id of a message already stored under `msg`'s key (a redelivery).
async fn existing_message(
    conn: &mut sqlx::SqliteConnection,
    msg: &NewMessage,
) -> StoreResult<MessageId> {
    let id: i64 = sqlx::query_scalar(
        "SELECT id FROM messages WHERE space_id = ? AND channel = ? AND external_id = ?",
    )
    .bind(msg.space.0)
    .bind(&msg.channel)
    .bind(&msg.external_id)
    .fetch_one(&mut *conn)
    .await
    .map_err(db_err)?;
    Ok(MessageId(id))
}
