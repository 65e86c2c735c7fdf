//! Operations on the whole database: row counts, dumping and loading rows to copy a deployment
//! between backends (`copy` says what a row is), the change feed other processes' caches
//! follow, and routine upkeep.

use super::copy::{Float, Kind, Table, Value};
use super::{Change, StoreError, StoreResult};
use async_trait::async_trait;
use sqlx::Row;

/// Whole-database operations.
#[async_trait]
pub trait Admin: Send + Sync {
    /// Row counts per table (operations, migration checks).
    async fn table_counts(&self) -> StoreResult<Vec<TableCount>>;

    /// Searchable messages per detected language (ISO 639-1 code; `None`: no letters to tell
    /// by, or not indexed yet), most first.
    async fn message_languages(&self) -> StoreResult<Vec<(Option<String>, i64)>>;

    /// The languages searchable messages were detected in (ISO 639-1 codes), each once, in
    /// code order: a step through an index per language, however many messages there are
    /// (read on every edit and delete, where `message_languages`' count of each is not needed).
    async fn languages_in_use(&self) -> StoreResult<Vec<String>>;

    /// Rows of `table` in primary-key order, as canonical values (copying between backends).
    async fn dump_rows(
        &self,
        table: Table,
        offset: i64,
        limit: i64,
    ) -> StoreResult<Vec<Vec<Value>>>;
    /// Inserts rows from `dump_rows`; rows already present are left alone. Returns rows added.
    async fn load_rows(&self, table: Table, rows: &[Vec<Value>]) -> StoreResult<u64>;
    /// After loading rows: copied messages get their postings, and id sequences move past the
    /// ids loaded.
    async fn finish_load(&self) -> StoreResult<()>;

    /// Changes written by other processes sharing this database, for cache invalidation.
    /// None when the store is not shared between processes (SQLite: one bot process).
    async fn watch_changes(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>>;

    /// Routine upkeep that keeps query plans and indexes good after much writing: planner
    /// statistics, index merges, dead rows. Safe to run any time; the daily job runs it.
    async fn maintain(&self) -> StoreResult<()>;

    /// The database answers: which of this build's migrations it has (`/readyz`).
    async fn readiness(&self) -> StoreResult<Readiness>;

    /// Messages waiting for the indexer: not indexed yet, or their vector to make again.
    async fn index_backlog(&self) -> StoreResult<i64>;

    /// Opens an admin session: `key` (a hash of its cookie) is `operator`'s until `until`
    /// (Unix seconds). Sessions ended before `now` are removed.
    async fn open_admin_session(
        &self,
        key: &str,
        operator: &str,
        until: i64,
        now: i64,
    ) -> StoreResult<()>;
    /// The operator of the open session `key` at `now`, if it is open.
    async fn admin_session(&self, key: &str, now: i64) -> StoreResult<Option<String>>;
    /// Ends session `key` (signing out): every copy of its cookie stops working.
    async fn close_admin_session(&self, key: &str) -> StoreResult<()>;
}

/// The database's schema against this build's migrations.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Readiness {
    /// The newest migration applied.
    pub applied: i64,
    /// Migrations of this build not applied (the database is older).
    pub pending: Vec<i64>,
    /// Migrations applied that this build does not know (the database is newer).
    pub unknown: Vec<i64>,
}

impl Readiness {
    /// The schema is exactly this build's.
    pub fn current(&self) -> bool {
        self.pending.is_empty() && self.unknown.is_empty()
    }
}

/// How many rows a table holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCount {
    /// The table.
    pub table: &'static str,
    /// Its rows.
    pub rows: i64,
}

on_both_backends! {
    #[async_trait]
    impl Admin for Backend {
        async fn table_counts(&self) -> StoreResult<Vec<TableCount>> {
            let mut out = Vec::with_capacity(Table::ALL.len());
            for table in Table::ALL {
                let sql = format!("SELECT COUNT(*) FROM {}", table.name());
                let rows: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .fetch_one(self.pool())
                    .await
                    .map_err(db_err)?;
                out.push(TableCount {
                    table: table.name(),
                    rows,
                });
            }
            Ok(out)
        }

        async fn message_languages(&self) -> StoreResult<Vec<(Option<String>, i64)>> {
            sqlx::query_as(
                "SELECT language, COUNT(*) AS n FROM messages WHERE NOT withheld GROUP BY language ORDER BY n DESC, language",
            )
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
        }

        async fn languages_in_use(&self) -> StoreResult<Vec<String>> {
            sqlx::query_scalar(concat!(
                "WITH RECURSIVE l(code) AS (SELECT MIN(language) FROM messages",
                indexed_by!("messages_by_language"),
                " WHERE language IS NOT NULL AND NOT withheld \
                 UNION ALL SELECT (SELECT MIN(m.language) FROM messages m",
                indexed_by!("messages_by_language"),
                " WHERE m.language IS NOT NULL AND NOT m.withheld AND m.language > l.code) \
                 FROM l WHERE l.code IS NOT NULL) \
                 SELECT code FROM l WHERE code IS NOT NULL"
            ))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
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
                "SELECT {} FROM {} ORDER BY {} LIMIT $1 OFFSET $2",
                cols.join(", "),
                spec.name,
                spec.order_by
            );
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(limit)
                .bind(offset)
                .fetch_all(self.pool())
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
                                Kind::Int => Value::Int(row.try_get(i).map_err(bad)?),
                                Kind::Bool => {
                                    Value::Int(row.try_get::<bool, _>(i).map_err(bad)? as i64)
                                }
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

        // Over 80 lines: one bulk INSERT per chunk (its placeholders, PostgreSQL's identity
        // override, each column bound as its database wants it), and copied messages joining
        // the postings backlog, all in one transaction written once for both databases.
        async fn load_rows(&self, table: Table, rows: &[Vec<Value>]) -> StoreResult<u64> {
            let spec = table.spec();
            let cols: Vec<&str> = spec.columns.iter().map(|(c, _)| *c).collect();
            // Within each database's limit of bound parameters per statement.
            let per_statement = per_dialect!(
                sqlite: (30_000 / cols.len()).min(500),
                postgres: (60_000 / cols.len()).min(1000),
            );
            let mut tx = self.write_tx().await?;
            let mut added = 0;
            for chunk in rows.chunks(per_statement) {
                let mut n = 0;
                let tuples: Vec<String> = chunk
                    .iter()
                    .map(|_| {
                        let marks: Vec<String> = cols
                            .iter()
                            .map(|_| {
                                n += 1;
                                format!("${n}")
                            })
                            .collect();
                        format!("({})", marks.join(", "))
                    })
                    .collect();
                // Ids are copied as they are: PostgreSQL's identity columns must be told.
                let overriding = match spec.has_identity {
                    true => per_dialect!(sqlite: "", postgres: " OVERRIDING SYSTEM VALUE"),
                    false => "",
                };
                // Copied messages need postings: the ones actually added join the backlog.
                let returning = if spec.name == "messages" {
                    " RETURNING id"
                } else {
                    ""
                };
                let sql = format!(
                    "INSERT INTO {} ({}){overriding} VALUES {} ON CONFLICT DO NOTHING{returning}",
                    spec.name,
                    cols.join(", "),
                    tuples.join(", ")
                );
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
                for row in chunk {
                    for ((_, kind), value) in spec.columns.iter().zip(row) {
                        query = match (kind, value) {
                            (Kind::Bool, Value::Int(v)) => query.bind(*v != 0),
                            (Kind::NullText | Kind::Text, Value::Null) => query.bind(None::<String>),
                            (_, Value::Null) => query.bind(None::<i64>),
                            (_, Value::Int(v)) => query.bind(*v),
                            (_, Value::Text(t)) => query.bind(t.as_str()),
                            (_, Value::Real(r)) => query.bind(r.0),
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
                    let ids = inserted
                        .iter()
                        .map(|row| row.try_get::<i64, _>(0))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(db_err)?;
                    sqlx::query(concat!(
                        "INSERT INTO message_terms_backlog (message_id) SELECT id FROM messages WHERE id ",
                        in_list!(1),
                        " ON CONFLICT DO NOTHING"
                    ))
                    .bind(list(&ids))
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                }
            }
            tx.commit().await.map_err(db_err)?;
            Ok(added)
        }

        async fn finish_load(&self) -> StoreResult<()> {
            self.drain_terms_backlog().await?;
            move_sequences(self).await
        }

        async fn watch_changes(&self) -> StoreResult<Option<tokio::sync::mpsc::Receiver<Change>>> {
            watch_changes(self).await
        }

        async fn readiness(&self) -> StoreResult<Readiness> {
            // A database never migrated (empty, or made by something else) has no ledger:
            // every migration is pending.
            let ledger: bool = sqlx::query_scalar(per_dialect!(
                sqlite: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations')",
                postgres: "SELECT to_regclass('_sqlx_migrations') IS NOT NULL",
            ))
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
            let applied: Vec<i64> = if ledger {
                sqlx::query_scalar(
                    "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
                )
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?
            } else {
                Vec::new()
            };
            let known: Vec<i64> = MIGRATOR.iter().map(|m| m.version).collect();
            Ok(Readiness {
                applied: applied.last().copied().unwrap_or(0),
                pending: known.iter().filter(|v| !applied.contains(v)).copied().collect(),
                unknown: applied.iter().filter(|v| !known.contains(v)).copied().collect(),
            })
        }

        async fn open_admin_session(
            &self,
            key: &str,
            operator: &str,
            until: i64,
            now: i64,
        ) -> StoreResult<()> {
            let mut tx = self.write_tx().await?;
            sqlx::query("DELETE FROM admin_sessions WHERE until <= $1")
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            sqlx::query("INSERT INTO admin_sessions (key, operator, until) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET operator = excluded.operator, until = excluded.until")
                .bind(key)
                .bind(operator)
                .bind(until)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)
        }

        async fn admin_session(&self, key: &str, now: i64) -> StoreResult<Option<String>> {
            sqlx::query_scalar("SELECT operator FROM admin_sessions WHERE key = $1 AND until > $2")
                .bind(key)
                .bind(now)
                .fetch_optional(self.pool())
                .await
                .map_err(db_err)
        }

        async fn close_admin_session(&self, key: &str) -> StoreResult<()> {
            sqlx::query("DELETE FROM admin_sessions WHERE key = $1")
                .bind(key)
                .execute(self.pool())
                .await
                .map_err(db_err)?;
            Ok(())
        }

        async fn index_backlog(&self) -> StoreResult<i64> {
            sqlx::query_scalar(concat!(
                "SELECT (SELECT COUNT(*) FROM messages m WHERE ",
                unindexed!("m"),
                ") + (SELECT COUNT(*) FROM vector_backlog)"
            ))
            .fetch_one(self.pool())
            .await
            .map_err(db_err)
        }

        async fn maintain(&self) -> StoreResult<()> {
            maintain(self).await
        }
    }
}
