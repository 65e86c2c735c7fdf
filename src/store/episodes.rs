//! The working memory of open episodes (each one's running summary and open loops, which are
//! due a refresh) and the final details of closed ones (which are due) with their search keys
//! (fact-augmented keys: the details' words as BM25 postings of the episode), each
//! written only while every message it was made from is still there (a forget meanwhile
//! wins).

use super::search::{Episode, EpisodeRow, episode_columns, episode_of};
use super::{StoreResult, document_terms};
use crate::domain::{MessageId, PersonId, Scope, SpaceId, StoredMessage};
use async_trait::async_trait;

/// The running summary of an open episode and its open loops (questions not answered yet,
/// things people said they would do).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct WorkingMemory {
    /// What the episode is about so far, in a few sentences.
    pub summary: String,
    /// Questions not answered and things people said they would do, one line each.
    pub open_loops: Vec<String>,
}

impl WorkingMemory {
    /// Whether it says nothing.
    pub fn is_empty(&self) -> bool {
        self.summary.trim().is_empty() && self.open_loops.is_empty()
    }
}

/// What `Episodes::save_episode_details` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailsSaved {
    /// They are the episode's details now.
    Kept,
    /// The episode had details already (another run kept theirs first).
    AlreadyKept,
    /// The episode changed meanwhile (reopened by a forget, a message gone or moved).
    Changed,
}

/// When an open episode is due a refresh of its working memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefreshDue {
    /// This many messages since the last refresh.
    pub messages: i64,
    /// Or this many search words since the last refresh (token pressure).
    pub words: i64,
}

/// Working memory of open episodes.
#[async_trait]
pub trait Episodes: Send + Sync {
    /// Open episodes due a refresh of their working memory, oldest first, at most `limit`.
    async fn episodes_to_refresh(&self, due: RefreshDue, limit: usize)
    -> StoreResult<Vec<Episode>>;
    /// The working memory of the open episode of a channel in one scope, if it has one.
    async fn working_memory(
        &self,
        space: SpaceId,
        channel: &str,
        scope: &Scope,
    ) -> StoreResult<Option<WorkingMemory>>;
    /// The working memory episode `episode` keeps now (empty when none).
    async fn episode_working_memory(&self, episode: i64) -> StoreResult<WorkingMemory>;
    /// Keeps `memory` as episode `episode`'s working memory, made from `from` (its messages
    /// then) and the summary it had, `was` (its text and `summarized_through`, as read before);
    /// false, and nothing written, when the episode closed, any of those messages left it
    /// meanwhile (forgotten, or moved to a newer episode) or changed (a file described since
    /// it was read: it is read again at the next refresh), or its working memory is no longer
    /// `was` (a forget cleared it: what it said may be what was forgotten). It then covers
    /// every message and word the episode counts (pieces of attachments and memory commands
    /// included, which it does not read), so it is due again only after new ones, and the
    /// newest of `from` is its `summarized_through`.
    async fn save_working_memory(
        &self,
        episode: i64,
        from: &[StoredMessage],
        was: (&str, Option<MessageId>),
        memory: &WorkingMemory,
    ) -> StoreResult<bool>;
    /// Closed episodes without their final details, oldest first, at most `limit`.
    async fn episodes_to_finish(&self, limit: usize) -> StoreResult<Vec<Episode>>;
    /// The last message stored into episode `episode` (the highest id, whatever its time):
    /// with its size, it tells one close of the episode from the next after a change (an edit
    /// is stored anew, a forget shrinks it).
    async fn episode_last_stored(&self, episode: i64) -> StoreResult<Option<MessageId>>;
    /// Keeps `details` (JSON) as closed episode `episode`'s final details, made from `from`,
    /// and the words of `keys` (what the details say, as text) as search keys of the episode
    /// in its scope. Nothing is written when it has details already (another run kept
    /// theirs), was reopened (a forget), or any of those messages left it or changed.
    async fn save_episode_details(
        &self,
        episode: i64,
        from: &[StoredMessage],
        details: &str,
        keys: &str,
    ) -> StoreResult<DetailsSaved>;
    /// What closing episode `episode` came to so far, part by part (JSON), if anything.
    async fn closing_parts(&self, episode: i64) -> StoreResult<Option<String>>;
    /// Drops what closing episode `episode` came to so far, if it is still `was` (a part of it
    /// can no longer be used).
    async fn drop_stale_closing_parts(&self, episode: i64, was: &str) -> StoreResult<()>;
    /// Keeps `parts` (JSON) as what closing episode `episode` came to so far, made from `from`
    /// (the messages of the parts done) with the memory entries `shown` in its prompts; false,
    /// and nothing written, when the episode has details or was reopened, any of those
    /// messages left it or changed, or any of those entries is gone (a forget meanwhile).
    async fn save_closing_parts(
        &self,
        episode: i64,
        from: &[StoredMessage],
        shown: &[i64],
        parts: &str,
    ) -> StoreResult<bool>;
    /// Episodes whose details were kept without search keys (finished before keys were
    /// written), with their details (JSON), oldest first, at most `limit`.
    async fn episodes_without_keys(&self, limit: usize) -> StoreResult<Vec<(i64, String)>>;
    /// Episodes of `scopes` (every scope when `None`) in which `author` wrote, with details
    /// whose search keys hold any of `terms` or that have no keys yet, with their details
    /// (JSON): where a forget of `author`'s looks for what it removes (the model saw their
    /// entries only when it summarized an episode they wrote in).
    async fn episodes_with_key_terms(
        &self,
        scopes: Option<&[Scope]>,
        author: PersonId,
        terms: &[String],
    ) -> StoreResult<Vec<(i64, String)>>;
    /// Episode `episode`'s details become `details`, and its search keys the words of
    /// `keys` in place of any it had, when its details are still `was` (false, and nothing
    /// written, otherwise): details changed by a forget, or keys written for old details.
    async fn replace_episode_details(
        &self,
        episode: i64,
        was: &str,
        details: &str,
        keys: &str,
    ) -> StoreResult<bool>;
}

fn loops_json(loops: &[String]) -> String {
    serde_json::Value::from_iter(loops.iter().map(|l| serde_json::json!(l))).to_string()
}

/// The open loops as stored (a JSON array of strings). A damaged value reads as none, said
/// in the log: the loops are made again at the next refresh, which reads these first (an
/// error here would stop every refresh, and every answer, in that channel).
fn loops_of(json: Option<&str>) -> Vec<String> {
    let Some(json) = json else {
        return Vec::new();
    };
    serde_json::from_str(json).unwrap_or_else(|e| {
        // Where, not what: the value may quote what people said.
        tracing::warn!(kind = ?e.classify(), line = e.line(), column = e.column(),
            "stored open loops are damaged: read as none");
        Vec::new()
    })
}

on_both_backends! {
    /// Whether every message of `from` is still in episode `episode` with the text it was
    /// read with, the episode's row locked until commit first (SQLite: writes are serialized
    /// already): a forget, a move to a newer episode or a rewrite (a file described after the
    /// read) that committed meanwhile is seen here (PostgreSQL takes a new snapshot per
    /// statement); one that comes later waits, then clears or marks what is written. What a
    /// write made from those messages checks.
    pub(in crate::store) async fn still_as_read(
        conn: &mut Conn,
        episode: i64,
        from: &[StoredMessage],
    ) -> StoreResult<bool> {
        sqlx::query(concat!("SELECT id FROM episodes WHERE id = $1", for_update!()))
            .bind(episode)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_err)?;
        let ids: Vec<i64> = from.iter().map(|m| m.id.0).collect();
        let now: std::collections::HashMap<i64, String> = sqlx::query_as::<_, (i64, String)>(
            concat!(
                "SELECT id, text FROM messages WHERE episode_id = $1 AND id ",
                in_list!(2)
            ),
        )
        .bind(episode)
        .bind(list(&ids))
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?
        .into_iter()
        .collect();
        Ok(from.iter().all(|m| now.get(&m.id.0) == Some(&m.text)))
    }

    /// Drops what the unfinished closes of the episodes `person` wrote in came to (their
    /// prompts showed `person`'s entries, one of which is about to be deleted: called before
    /// the entries go, so episode rows are always locked before entry rows). Only rows with
    /// parts kept are touched. A close saving its first parts at this very moment on
    /// PostgreSQL may still keep them: the next run of the close finds the entry gone, drops
    /// them and asks again (`parts_done`).
    pub(in crate::store) async fn drop_closing_parts(
        conn: &mut Conn,
        person: i64,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE episodes SET closing_parts = NULL WHERE closing_parts IS NOT NULL AND EXISTS \
             (SELECT 1 FROM messages m WHERE m.episode_id = episodes.id AND m.author_id = $1 AND NOT m.is_bot)",
        )
        .bind(person)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    /// The words of `keys` become episode `episode`'s search keys in its scope (analysed in
    /// their language like a message), in place of any it had, and their count its `keys_len`
    /// (and part of the scope's total length).
    async fn write_keys(conn: &mut Conn, episode: i64, keys: &str) -> StoreResult<()> {
        let (scope, was): (String, Option<i64>) =
            sqlx::query_as("SELECT scope, keys_len FROM episodes WHERE id = $1")
                .bind(episode)
                .fetch_one(&mut *conn)
                .await
                .map_err(db_err)?;
        drop_episode_keys(&mut *conn, episode).await?;
        let terms = document_terms(keys);
        for (term, tf) in &terms.terms {
            sqlx::query(
                "INSERT INTO episode_terms (term, scope, episode_id, tf) VALUES ($1, $2, $3, $4)",
            )
            .bind(term)
            .bind(&scope)
            .bind(episode)
            .bind(*tf as i32)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        }
        let len = if terms.terms.is_empty() { 0 } else { i64::from(terms.len) };
        sqlx::query("UPDATE episodes SET keys_len = $1 WHERE id = $2")
            .bind(len)
            .bind(episode)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        // Keys count in the scope's total length too, for BM25's average episode length.
        add_episode_length(&mut *conn, &scope, len - was.unwrap_or(0)).await?;
        Ok(())
    }

    #[async_trait]
    impl Episodes for Backend {
        async fn episodes_to_refresh(
            &self,
            due: RefreshDue,
            limit: usize,
        ) -> StoreResult<Vec<Episode>> {
            let rows: Vec<EpisodeRow> = sqlx::query_as(concat!(
                "SELECT ",
                episode_columns!(),
                " FROM episodes WHERE NOT closed AND NOT superseded \
                 AND (messages - summarized_messages >= $1 OR total_len - summarized_len >= $2) \
                 ORDER BY ended_at, id LIMIT $3"
            ))
            .bind(due.messages.max(1))
            .bind(due.words.max(1))
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.into_iter().map(episode_of).collect()
        }

        async fn working_memory(
            &self,
            space: SpaceId,
            channel: &str,
            scope: &Scope,
        ) -> StoreResult<Option<WorkingMemory>> {
            let row: Option<(Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT running_summary, open_loops FROM episodes WHERE space_id = $1 AND channel = $2 AND scope = $3 \
                 AND NOT closed AND NOT superseded ORDER BY ended_at DESC LIMIT 1",
            )
            .bind(space.0)
            .bind(channel)
            .bind(scope.key())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            Ok(row.and_then(|(summary, loops)| {
                let memory = WorkingMemory {
                    summary: summary.unwrap_or_default(),
                    open_loops: loops_of(loops.as_deref()),
                };
                (!memory.is_empty()).then_some(memory)
            }))
        }

        async fn episode_working_memory(&self, episode: i64) -> StoreResult<WorkingMemory> {
            let row: Option<(Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT running_summary, open_loops FROM episodes WHERE id = $1",
            )
            .bind(episode)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            Ok(row
                .map(|(summary, loops)| WorkingMemory {
                    summary: summary.unwrap_or_default(),
                    open_loops: loops_of(loops.as_deref()),
                })
                .unwrap_or_default())
        }

        async fn save_working_memory(
            &self,
            episode: i64,
            from: &[StoredMessage],
            (was_summary, was_through): (&str, Option<MessageId>),
            memory: &WorkingMemory,
        ) -> StoreResult<bool> {
            let ids: Vec<i64> = from.iter().map(|m| m.id.0).collect();
            let mut tx = self.write_tx().await?;
            if !still_as_read(&mut tx, episode, from).await? {
                return Ok(false);
            }
            let written = sqlx::query(
                "UPDATE episodes SET running_summary = $1, open_loops = $2, \
                 summarized_messages = messages, summarized_len = total_len, \
                 summarized_through = COALESCE($4, summarized_through) \
                 WHERE id = $3 AND NOT closed AND NOT superseded \
                 AND COALESCE(running_summary, '') = $5 AND summarized_through IS NOT DISTINCT FROM $6",
            )
            .bind(&memory.summary)
            .bind(loops_json(&memory.open_loops))
            .bind(episode)
            .bind(ids.iter().max().copied())
            .bind(was_summary)
            .bind(was_through.map(|t| t.0))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            tx.commit().await.map_err(db_err)?;
            Ok(written > 0)
        }

        async fn episodes_to_finish(&self, limit: usize) -> StoreResult<Vec<Episode>> {
            let rows: Vec<EpisodeRow> = sqlx::query_as(concat!(
                "SELECT ",
                episode_columns!(),
                " FROM episodes WHERE closed AND details IS NULL ORDER BY ended_at, id LIMIT $1"
            ))
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.into_iter().map(episode_of).collect()
        }

        async fn episode_last_stored(&self, episode: i64) -> StoreResult<Option<MessageId>> {
            let id: Option<i64> =
                sqlx::query_scalar("SELECT MAX(id) FROM messages WHERE episode_id = $1")
                    .bind(episode)
                    .fetch_one(self.pool())
                    .await
                    .map_err(db_err)?;
            Ok(id.map(MessageId))
        }

        async fn save_episode_details(
            &self,
            episode: i64,
            from: &[StoredMessage],
            details: &str,
            keys: &str,
        ) -> StoreResult<DetailsSaved> {
            let mut tx = self.write_tx().await?;
            if !still_as_read(&mut tx, episode, from).await? {
                return Ok(DetailsSaved::Changed);
            }
            let written = sqlx::query(concat!(
                "UPDATE episodes SET details = $1, closing_parts = NULL WHERE id = $2 AND ",
                is_true!("closed"),
                " AND details IS NULL"
            ))
            .bind(details)
            .bind(episode)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            let saved = if written > 0 {
                write_keys(&mut tx, episode, keys).await?;
                DetailsSaved::Kept
            } else {
                let had: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM episodes WHERE id = $1 AND details IS NOT NULL",
                )
                .bind(episode)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
                if had > 0 {
                    DetailsSaved::AlreadyKept
                } else {
                    DetailsSaved::Changed
                }
            };
            tx.commit().await.map_err(db_err)?;
            Ok(saved)
        }

        async fn closing_parts(&self, episode: i64) -> StoreResult<Option<String>> {
            let parts: Option<Option<String>> =
                sqlx::query_scalar("SELECT closing_parts FROM episodes WHERE id = $1")
                    .bind(episode)
                    .fetch_optional(self.pool())
                    .await
                    .map_err(db_err)?;
            Ok(parts.flatten())
        }

        async fn drop_stale_closing_parts(&self, episode: i64, was: &str) -> StoreResult<()> {
            sqlx::query("UPDATE episodes SET closing_parts = NULL WHERE id = $1 AND closing_parts = $2")
                .bind(episode)
                .bind(was)
                .execute(self.pool())
                .await
                .map_err(db_err)?;
            Ok(())
        }

        async fn save_closing_parts(
            &self,
            episode: i64,
            from: &[StoredMessage],
            shown: &[i64],
            parts: &str,
        ) -> StoreResult<bool> {
            let mut tx = self.write_tx().await?;
            // The episode's row is locked first. A forget that removes a shown entry and
            // committed before is seen here; one under way may miss what this writes (it
            // clears only parts kept before it), and the next run of the close drops them.
            if !still_as_read(&mut tx, episode, from).await? {
                return Ok(false);
            }
            let mut shown = shown.to_vec();
            shown.sort_unstable();
            shown.dedup();
            let there: i64 = sqlx::query_scalar(concat!(
                "SELECT COUNT(*) FROM memory_entries WHERE id ",
                in_list!(1)
            ))
            .bind(list(&shown))
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            if there != shown.len() as i64 {
                return Ok(false);
            }
            let written = sqlx::query(concat!(
                "UPDATE episodes SET closing_parts = $1 WHERE id = $2 AND ",
                is_true!("closed"),
                " AND details IS NULL"
            ))
            .bind(parts)
            .bind(episode)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            tx.commit().await.map_err(db_err)?;
            Ok(written > 0)
        }

        async fn episodes_without_keys(&self, limit: usize) -> StoreResult<Vec<(i64, String)>> {
            sqlx::query_as(
                "SELECT id, details FROM episodes WHERE details IS NOT NULL AND keys_len IS NULL \
                 ORDER BY ended_at, id LIMIT $1",
            )
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
        }

        async fn episodes_with_key_terms(
            &self,
            scopes: Option<&[Scope]>,
            author: PersonId,
            terms: &[String],
        ) -> StoreResult<Vec<(i64, String)>> {
            let keys: Option<Vec<String>> = scopes.map(|s| s.iter().map(Scope::key).collect());
            sqlx::query_as(concat!(
                "SELECT e.id, e.details FROM episodes e WHERE e.details IS NOT NULL AND ",
                in_list_or_all!("e.scope", 1),
                " AND (e.keys_len IS NULL OR e.id IN (SELECT episode_id FROM episode_terms WHERE term ",
                in_list!(2),
                ")) AND EXISTS (SELECT 1 FROM messages m WHERE m.episode_id = e.id AND m.author_id = $3 \
                 AND NOT m.is_bot) ORDER BY e.id"
            ))
            .bind(keys.as_deref().map(list))
            .bind(list(terms))
            .bind(author.0)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
        }

        async fn replace_episode_details(
            &self,
            episode: i64,
            was: &str,
            details: &str,
            keys: &str,
        ) -> StoreResult<bool> {
            let mut tx = self.write_tx().await?;
            let written = sqlx::query("UPDATE episodes SET details = $1 WHERE id = $2 AND details = $3")
                .bind(details)
                .bind(episode)
                .bind(was)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?
                .rows_affected();
            if written > 0 {
                write_keys(&mut tx, episode, keys).await?;
            }
            tx.commit().await.map_err(db_err)?;
            Ok(written > 0)
        }
    }
}
