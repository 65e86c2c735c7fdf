//! The search index over messages: BM25 over postings and nearest vectors, both inside the
//! scopes the asker may read; and episodes, the runs of conversation the indexer cuts
//! messages into, which become episodic memories when they close.

use super::rows::{from_ms, ms, parse_scope};
use super::{Bm25, StoreError, StoreResult, document_terms_in, terms};
use crate::domain::language::Language;
use crate::domain::{Embedding, MessageId, PersonId, Scope, SpaceId, StoredMessage, VectorSpaceId};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Searching messages and episodes, and building episodes.
#[async_trait]
pub trait SearchIndex: Send + Sync {
    /// BM25 search over messages in the given scopes: the privacy filter is part of the
    /// query, and N, average length and document frequencies are those of these scopes.
    /// `terms` come from `query_terms`; they are never interpreted as query syntax.
    async fn search_messages(
        &self,
        scopes: &[Scope],
        terms: &[String],
        bm25: Bm25,
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>>;
    /// BM25 over whole episodes (an episode's messages and the search keys of its details as
    /// one document), same rules.
    async fn search_episodes(
        &self,
        scopes: &[Scope],
        terms: &[String],
        bm25: Bm25,
        limit: usize,
    ) -> StoreResult<Vec<EpisodeHit>>;
    /// Messages of the given scopes nearest to `vector` (cosine similarity), best first:
    /// only vectors of its space are compared.
    async fn nearest_messages(
        &self,
        scopes: &[Scope],
        vector: &Embedding,
        limit: usize,
    ) -> StoreResult<Vec<SearchHit>>;
    /// Reads ahead what `nearest_messages` must know of the scopes (how large they are, where
    /// that picks the way to search), so it is read while the question is being embedded.
    async fn ready_nearest(&self, scopes: &[Scope]) -> StoreResult<()>;
    /// Closed episodes of the given scopes nearest to `vector` (in its space), best first.
    async fn nearest_episodes(
        &self,
        scopes: &[Scope],
        vector: &Embedding,
        limit: usize,
    ) -> StoreResult<Vec<EpisodeHit>>;
    /// The message just before and just after each of `ids` in its channel, of the same scope
    /// and at most `within` apart: its conversational context. Withheld messages are skipped
    /// over (nothing is derived from them); a message not found has no entry.
    async fn neighbours(
        &self,
        ids: &[MessageId],
        within: chrono::Duration,
    ) -> StoreResult<Vec<Neighbours>>;
    /// The messages up to two places before and after each of `ids` in its channel, of the
    /// same scope and at most `within` from it, withheld ones, commands and files' pieces
    /// skipped over: who answered whom around it.
    async fn nearby(&self, ids: &[MessageId], within: chrono::Duration)
    -> StoreResult<Vec<Nearby>>;
    /// These messages (those that exist and are not withheld), by id.
    async fn messages_by_id(&self, ids: &[MessageId]) -> StoreResult<Vec<StoredMessage>>;
    /// The people who wrote in the given scopes (the bot and withheld messages aside), with
    /// their display names, by id: who a question may name.
    async fn authors_in(&self, scopes: &[Scope]) -> StoreResult<Vec<(PersonId, String)>>;
    /// Messages of the given scopes sent in [from, to), newest first, at most `limit`
    /// (withheld ones aside): the time a question names.
    async fn messages_between(
        &self,
        scopes: &[Scope],
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    /// Messages the background indexer has not handled yet, oldest first.
    async fn unindexed_messages(&self, limit: usize) -> StoreResult<Vec<StoredMessage>>;
    /// Indexed messages whose vector must be made again (the message it was made with as
    /// context was forgotten), oldest first.
    async fn vectors_to_redo(&self, limit: usize) -> StoreResult<Vec<StoredMessage>>;
    /// Stores the vectors made again for `vectors_to_redo`'s messages and takes them off that
    /// list (a message deleted meanwhile stays deleted). Returns how many were stored.
    async fn redo_vectors(&self, items: &[IndexedMessage]) -> StoreResult<usize>;
    /// Puts each message in its channel's episode (a new episode after a pause longer than
    /// `gap`), stores its vector, and marks it indexed. Messages another process indexed
    /// meanwhile are skipped. Returns how many this call indexed.
    async fn index_messages(
        &self,
        items: &[IndexedMessage],
        gap: chrono::Duration,
    ) -> StoreResult<usize>;
    /// Open episodes whose last message is older than `ended_before`, oldest first.
    async fn episodes_to_close(
        &self,
        ended_before: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<Episode>>;
    /// These episodes (those that exist), by id.
    async fn episodes(&self, ids: &[i64]) -> StoreResult<Vec<Episode>>;
    /// The messages of an episode in time order (at most `limit`: the first ones, or the last
    /// ones with `EpisodeEnd::Newest`), the memory commands ("remember …", "/memory …") only with
    /// `commands`; never withheld ones or the pieces of attachments.
    async fn episode_messages(
        &self,
        episode: i64,
        commands: bool,
        end: EpisodeEnd,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    /// The open episode of a channel in one scope (the one new messages there join), with its
    /// last `limit` messages, oldest first; None when the channel has none open.
    async fn open_episode(
        &self,
        space: SpaceId,
        channel: &str,
        scope: &Scope,
        limit: usize,
    ) -> StoreResult<Option<(Episode, Vec<StoredMessage>)>>;
    /// Stored vectors of messages in `space` (those without one there are left out).
    async fn message_vectors(
        &self,
        space: VectorSpaceId,
        ids: &[MessageId],
    ) -> StoreResult<Vec<MessageVector>>;
    /// Closed episodes of `scope` not finished yet (no final details) nearest to `vector` (in
    /// its space) with similarity at least `min`: an episode merges only into one whose final
    /// details will be made with its messages.
    async fn similar_episode(
        &self,
        scope: &Scope,
        vector: &Embedding,
        min: f32,
        except: i64,
    ) -> StoreResult<Option<(i64, f32)>>;
    /// Closes an episode as an episodic memory (ADD), or merges it into an older one (MERGE:
    /// its messages move over and it is deleted), made from its messages `from` as read.
    /// Closing twice changes nothing; nor does a close whose messages changed since they were
    /// read (a forget: its summary and vector may hold what is gone; the next pass closes it
    /// again from what is left).
    async fn close_episode(
        &self,
        episode: i64,
        from: &[StoredMessage],
        close: &EpisodeClose,
    ) -> StoreResult<()>;
}

/// A search hit: the message and its relevance (higher is better): BM25 for full-text
/// search, cosine similarity for vector search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The message.
    pub message: StoredMessage,
    /// Its relevance.
    pub score: f64,
}

/// An episode found by search, with its relevance (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeHit {
    /// The episode's id.
    pub episode: i64,
    /// Its relevance.
    pub score: f64,
}

/// Which end of an episode longer than asked for is read (`SearchIndex::episode_messages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpisodeEnd {
    /// Its first messages.
    Oldest,
    /// Its last messages (still given oldest first).
    Newest,
}

/// An episode: a run of conversation in one channel. Once closed it is an episodic memory:
/// a topic summary, its supporting dialogue (the episode's messages) and an embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    /// Its id.
    pub id: i64,
    /// The scope of its messages (one channel, so one scope).
    pub scope: Scope,
    /// The space.
    pub space: SpaceId,
    /// The channel.
    pub channel: String,
    /// Its first message's time.
    pub started_at: DateTime<Utc>,
    /// Its last message's time.
    pub ended_at: DateTime<Utc>,
    /// How many messages it has.
    pub messages: i64,
    /// The topic summary, once closed.
    pub summary: Option<String>,
    /// Closed: an episodic memory, no longer growing.
    pub closed: bool,
    /// What started it: "gap" (a pause, or the channel's first), "topic" or "marker".
    pub started_by: String,
    /// The newest message its working memory was made from (None: none yet).
    pub summarized_through: Option<MessageId>,
}

/// What the background indexer learned about one stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedMessage {
    /// The message.
    pub message: StoredMessage,
    /// Unit vector from the configured embedder, in its space; None when embeddings are off.
    pub embedding: Option<Embedding>,
    /// The message whose text went into the vector as context (the one before a short
    /// message): forgetting it makes the vector again.
    pub context: Option<MessageId>,
    /// Whether it starts a new episode of its channel (beyond the time gap, which the store
    /// applies itself).
    pub start: EpisodeStart,
}

/// Whether a message starts a new episode in its channel, as the topic rules found
/// (`retrieval::topics`). The store starts one after a pause longer than the gap in any case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EpisodeStart {
    /// It continues the channel's open episode (unless the time gap says otherwise).
    #[default]
    Continue,
    /// It opens with a marker ("by the way"): a new episode starts with it.
    Marker,
    /// The topic shifted: a new episode starts at `from` (an earlier message of the open
    /// episode, which moves over with every message after it) and takes this one.
    Topic {
        /// The first message of the new episode.
        from: MessageId,
    },
}

impl EpisodeStart {
    /// What `episodes.started_by` says: "marker" or "topic" (the gap's is "gap").
    fn label(self) -> &'static str {
        match self {
            EpisodeStart::Continue => "gap",
            EpisodeStart::Marker => "marker",
            EpisodeStart::Topic { .. } => "topic",
        }
    }
}

/// A message's neighbours in its channel (`SearchIndex::neighbours`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Neighbours {
    /// The message.
    pub id: MessageId,
    /// The message before it.
    pub before: Option<Adjacent>,
    /// The message after it.
    pub after: Option<Adjacent>,
}

/// The messages near one in its channel (`SearchIndex::nearby`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nearby {
    /// The message.
    pub of: MessageId,
    /// The messages at places −2, −1, 1 and 2 from it, where there are.
    pub around: [Option<MessageId>; 4],
}

/// A neighbouring message: its id and its length in characters (its text is read only when
/// needed, `SearchIndex::messages_by_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adjacent {
    /// The message.
    pub id: MessageId,
    /// Its text's length in characters.
    pub chars: i64,
}

/// A message's vector in one space, with the message it was embedded with as context (a
/// short turn takes the one before it).
#[derive(Debug, Clone, PartialEq)]
pub struct MessageVector {
    /// The message.
    pub message: MessageId,
    /// The message before it whose text went into the vector, if any.
    pub context: Option<MessageId>,
    /// The vector.
    pub vector: Vec<f32>,
}

/// An episode's vector (the centroid of its messages') and the message vectors it was made
/// from: it is kept only while each of those is still stored with the same context (a
/// forgotten context takes its vectors, and so what they gave the centroid).
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeVector {
    /// The centroid.
    pub embedding: Embedding,
    /// Each vector read for it: its message and context.
    pub made_from: Vec<(MessageId, Option<MessageId>)>,
}

/// How a closed episode is written: on its own (ADD) or folded into an older, near-identical
/// episodic memory of the same scope (MERGE).
#[derive(Debug, Clone, PartialEq)]
pub enum EpisodeClose {
    /// A new episodic memory.
    Add {
        /// Its topic summary.
        summary: String,
        /// Its vector (the centroid of its messages').
        embedding: Option<EpisodeVector>,
    },
    /// Folded into an older episodic memory.
    Merge {
        /// The older episode.
        into: i64,
        /// The summary the merged memory keeps.
        summary: String,
        /// Its new vector, if any.
        embedding: Option<EpisodeVector>,
    },
}

/// The columns `episode_of` reads.
macro_rules! episode_columns {
    () => {
        "id, scope, space_id, channel, started_at, ended_at, CAST(messages AS BIGINT), summary, closed, started_by, summarized_through"
    };
}
pub(in crate::store) use episode_columns;

/// The id of the message before message `m` in its channel (same scope, at most `$2` ms
/// earlier, withheld ones and those the condition `$and` leaves out skipped over), nearest
/// first, without the closing parenthesis: add `)` for the one right before it, ` OFFSET 1)`
/// for the one before that.
macro_rules! before_of_m {
    ($and:literal) => {
        concat!(
            "(SELECT q.id FROM messages q",
            indexed_by!("messages_by_channel_time"),
            " WHERE q.space_id = m.space_id AND q.channel = m.channel AND q.scope = m.scope \
               AND q.sent_at >= m.sent_at - $2 AND q.sent_at <= m.sent_at \
               AND (q.sent_at < m.sent_at OR q.id < m.id) AND NOT q.withheld",
            $and,
            " ORDER BY q.sent_at DESC, q.id DESC LIMIT 1"
        )
    };
}

/// `before_of_m!`, after it.
macro_rules! after_of_m {
    ($and:literal) => {
        concat!(
            "(SELECT q.id FROM messages q",
            indexed_by!("messages_by_channel_time"),
            " WHERE q.space_id = m.space_id AND q.channel = m.channel AND q.scope = m.scope \
               AND q.sent_at >= m.sent_at AND q.sent_at <= m.sent_at + $2 \
               AND (q.sent_at > m.sent_at OR q.id > m.id) AND NOT q.withheld",
            $and,
            " ORDER BY q.sent_at, q.id LIMIT 1"
        )
    };
}

on_both_backends! {
    /// The postings of `terms` in the scopes `keys` by episode, with each episode's length and
    /// the scopes' episode count and length on every row (`search_episodes`), read on `conn`
    /// (a connection of `searches`: the statement's plan is made once there).
    pub(in crate::store) async fn episode_postings(
        conn: &mut Conn,
        terms: &[String],
        keys: &[String],
    ) -> StoreResult<Vec<EpisodePosting>> {
        // An episode is its messages' words and its details' (fact-augmented keys). The
        // postings are read once, before the episodes: planned as one join, a scope the
        // statistics do not know yet (a new chat) was estimated at one posting, and the
        // postings were read again for each of its episodes (30 ms instead of 2). Postings
        // are sought by (term, scope): by term alone, every scope's were read. Their
        // messages' episodes are read by id only: sought by scope as well, a chat the
        // statistics do not know yet was estimated at one message, and the scope's messages
        // were read again for each posting (dev60 on PostgreSQL: p50 14 -> 41 ms). And as a
        // subquery, one primary-key probe per posting: as a join, PostgreSQL's custom plans
        // hashed the whole messages table instead (a sequential scan of every chat's
        // messages for each question: 14 ms against 3 at 30,000 messages, growing with the
        // database). The episodes' lengths are read by id (and scope) too, once for each
        // term's episode: joined, PostgreSQL's plan (made once for every question, see
        // `searches`) could hash every episode of the table when the postings' estimate is
        // large. Materialized, so the probe is not made again for the filter below. A
        // posting of a message in no episode, or of another scope's, has no length and drops.
        // The scopes' episode count and length (BM25's N and average length) come on every
        // row: one statement, one round trip.
        sqlx::query_as(
            concat!(
                "WITH k AS MATERIALIZED \
                 (SELECT t.term, (SELECT m.episode_id FROM messages m WHERE m.id = t.message_id) AS episode_id, \
                         t.tf FROM message_terms t WHERE ",
                terms_in_scopes!("t", 1, 2),
                " UNION ALL SELECT x.term, x.episode_id, x.tf FROM episode_terms x WHERE ",
                terms_in_scopes!("x", 1, 2),
                "), tot AS MATERIALIZED (SELECT CAST(COALESCE(SUM(episodes), 0) AS BIGINT) AS n, \
                                   CAST(COALESCE(SUM(total_len), 0) AS BIGINT) AS len \
                            FROM scope_episode_stats WHERE scope ",
                in_list!(2),
                "), g AS MATERIALIZED (SELECT k.term, k.episode_id, CAST(SUM(k.tf) AS BIGINT) AS tf, \
                         (SELECT CAST(e.total_len + COALESCE(e.keys_len, 0) AS BIGINT) FROM episodes e \
                          WHERE e.id = k.episode_id AND e.scope ",
                in_list!(2),
                ") AS len FROM k GROUP BY k.term, k.episode_id) \
                 SELECT g.term, g.episode_id, g.tf, g.len, tot.n, tot.len FROM g CROSS JOIN tot WHERE g.len IS NOT NULL"
            ),
        )
        .bind(list(terms))
        .bind(list(keys))
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)
    }

    #[async_trait]
    impl SearchIndex for Backend {
        async fn search_messages(
            &self,
            scopes: &[Scope],
            terms: &[String],
            bm25: Bm25,
            limit: usize,
        ) -> StoreResult<Vec<SearchHit>> {
            crate::telemetry::timed(
                "search_messages",
                search_messages(self, scopes, terms, bm25, limit),
            )
            .await
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
            let rows = {
                let mut conn = self.searches().acquire().await.map_err(db_err)?;
                episode_postings(&mut conn, terms, &keys).await?
            };
            Ok(rank_episode_postings(bm25, rows, limit))
        }

        async fn nearest_messages(
            &self,
            scopes: &[Scope],
            vector: &Embedding,
            limit: usize,
        ) -> StoreResult<Vec<SearchHit>> {
            if scopes.is_empty() || vector.vector.is_empty() || limit == 0 {
                return Ok(Vec::new());
            }
            let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
            crate::telemetry::timed("nearest_messages", nearest_messages(self, &keys, vector, limit))
                .await
        }

        async fn ready_nearest(&self, scopes: &[Scope]) -> StoreResult<()> {
            if scopes.is_empty() {
                return Ok(());
            }
            let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
            ready_nearest(self, &keys).await
        }

        async fn nearest_episodes(
            &self,
            scopes: &[Scope],
            vector: &Embedding,
            limit: usize,
        ) -> StoreResult<Vec<EpisodeHit>> {
            if scopes.is_empty() || vector.vector.is_empty() || limit == 0 {
                return Ok(Vec::new());
            }
            let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
            let rows: Vec<(i64, f64)> = sqlx::query_as(
                concat!(
                    "SELECT id, ",
                    similarity!("embedding", 1),
                    " AS sim FROM episodes WHERE scope ",
                    in_list!(2),
                    " AND ",
                    is_true!("closed"),
                    " AND embedding_space = $4 AND embedding IS NOT NULL ORDER BY ",
                    nearest_first!("embedding", 1),
                    ", id DESC LIMIT $3"
                ),
            )
            .bind(vector_param(&vector.vector))
            .bind(list(&keys))
            .bind(limit as i64)
            .bind(vector.space.0)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(episode, score)| EpisodeHit { episode, score })
                .collect())
        }

        async fn unindexed_messages(&self, limit: usize) -> StoreResult<Vec<StoredMessage>> {
            let rows = sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages m",
                indexed_by!("messages_unindexed"),
                " JOIN people p ON p.id = m.author_id WHERE ",
                unindexed!("m"),
                " ORDER BY m.id LIMIT $1"
            ))
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.iter().map(message_from_row).collect()
        }

        async fn neighbours(
            &self,
            ids: &[MessageId],
            within: chrono::Duration,
        ) -> StoreResult<Vec<Neighbours>> {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let asked: Vec<i64> = ids.iter().map(|i| i.0).collect();
            // Each side is one seek of the channel's time index, made once (MATERIALIZED: an
            // inlined CTE runs them again for the lengths); one round trip in all. The lengths
            // are `chars_of!`: stored on PostgreSQL, counted on SQLite. On the searches'
            // connections: planned once there, not for each question's ids.
            let rows: Vec<(i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>)> =
                sqlx::query_as(concat!(
                    "WITH adjacent AS MATERIALIZED (SELECT m.id, ",
                    before_of_m!(""),
                    ") AS before_id, ",
                    after_of_m!(""),
                    ") AS after_id \
                     FROM messages m WHERE m.id ",
                    in_list!(1),
                    ") SELECT a.id, \
                         a.before_id, (SELECT CAST(",
                    chars_of!("b"),
                    " AS BIGINT) FROM messages b WHERE b.id = a.before_id), \
                         a.after_id, (SELECT CAST(",
                    chars_of!("n"),
                    " AS BIGINT) FROM messages n WHERE n.id = a.after_id) \
                       FROM adjacent a"
                ))
                .bind(list(&asked))
                .bind(within.num_milliseconds())
                .fetch_all(self.searches())
                .await
                .map_err(db_err)?;
            let adjacent = |id: Option<i64>, chars: Option<i64>| {
                Some(Adjacent {
                    id: MessageId(id?),
                    chars: chars?,
                })
            };
            Ok(rows
                .into_iter()
                .map(|(id, before, before_chars, after, after_chars)| Neighbours {
                    id: MessageId(id),
                    before: adjacent(before, before_chars),
                    after: adjacent(after, after_chars),
                })
                .collect())
        }

        async fn nearby(
            &self,
            ids: &[MessageId],
            within: chrono::Duration,
        ) -> StoreResult<Vec<Nearby>> {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let asked: Vec<i64> = ids.iter().map(|i| i.0).collect();
            // Four seeks of the channel's time index per message, ids only: the messages are
            // read by id (`messages_by_id`), whose plan is a primary-key probe. Joined here,
            // SQLite's planner read them 10 to 30 times slower on 30,000 messages. On the
            // searches' connections, planned once: planned for each question's ids, its
            // planning (0.5 ms) took longer than the statement (PostgreSQL, dev60).
            type Row = (i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>);
            let rows: Vec<Row> = sqlx::query_as(concat!(
                "SELECT m.id, ",
                before_of_m!(" AND NOT q.is_command"),
                " OFFSET 1), ",
                before_of_m!(" AND NOT q.is_command"),
                "), ",
                after_of_m!(" AND NOT q.is_command"),
                "), ",
                after_of_m!(" AND NOT q.is_command"),
                " OFFSET 1) FROM messages m WHERE m.id ",
                in_list!(1),
                " ORDER BY m.id"
            ))
            .bind(list(&asked))
            .bind(within.num_milliseconds())
            .fetch_all(self.searches())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(id, b2, b1, a1, a2)| Nearby {
                    of: MessageId(id),
                    around: [b2, b1, a1, a2].map(|i| i.map(MessageId)),
                })
                .collect())
        }

        async fn messages_by_id(&self, ids: &[MessageId]) -> StoreResult<Vec<StoredMessage>> {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let ids: Vec<i64> = ids.iter().map(|i| i.0).collect();
            let rows = sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages m JOIN people p ON p.id = m.author_id WHERE m.id ",
                in_list!(1),
                " AND NOT m.withheld ORDER BY m.id"
            ))
            .bind(list(&ids))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.iter().map(message_from_row).collect()
        }

        async fn authors_in(&self, scopes: &[Scope]) -> StoreResult<Vec<(PersonId, String)>> {
            if scopes.is_empty() {
                return Ok(Vec::new());
            }
            let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
            // From each scope's first author to its next, a seek each in the index of people's
            // own messages: as many steps as there are authors, however many messages or
            // people the database holds. (A check of every person in the database took 29 ms
            // with 100,000 people on SQLite, for a chat of two and 300 messages.) Planned
            // for each question's scopes (not on the searches' connections): a generic plan
            // cannot tell a chat of two from a server of thousands, and could read every
            // person to join them.
            let rows: Vec<(i64, String)> = sqlx::query_as(concat!(
                "WITH RECURSIVE a(scope, id) AS (SELECT s.value, (SELECT MIN(m.author_id) FROM messages m",
                indexed_by!("messages_said_by_scope"),
                " WHERE m.scope = s.value AND NOT m.is_bot AND NOT m.withheld) FROM ",
                list_rows!(1, "s"),
                " UNION ALL SELECT a.scope, (SELECT MIN(m.author_id) FROM messages m",
                indexed_by!("messages_said_by_scope"),
                " WHERE m.scope = a.scope AND NOT m.is_bot AND NOT m.withheld AND m.author_id > a.id) \
                 FROM a WHERE a.id IS NOT NULL) \
                 SELECT DISTINCT p.id, p.display_name FROM a CROSS JOIN people p WHERE p.id = a.id ORDER BY p.id"
            ))
            .bind(list(&keys))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(id, name)| (PersonId(id), name))
                .collect())
        }

        async fn messages_between(
            &self,
            scopes: &[Scope],
            from: DateTime<Utc>,
            to: DateTime<Utc>,
            limit: usize,
        ) -> StoreResult<Vec<StoredMessage>> {
            if scopes.is_empty() || limit == 0 || from >= to {
                return Ok(Vec::new());
            }
            let keys: Vec<String> = scopes.iter().map(Scope::key).collect();
            let rows = sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages m",
                indexed_by!("messages_by_scope_time"),
                " JOIN people p ON p.id = m.author_id WHERE m.scope ",
                in_list!(1),
                " AND m.sent_at >= $2 AND m.sent_at < $3 AND NOT m.withheld \
                 ORDER BY m.sent_at DESC, m.id DESC LIMIT $4"
            ))
            .bind(list(&keys))
            .bind(ms(from))
            .bind(ms(to))
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.iter().map(message_from_row).collect()
        }

        async fn vectors_to_redo(&self, limit: usize) -> StoreResult<Vec<StoredMessage>> {
            let rows = sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM vector_backlog b JOIN messages m ON m.id = b.message_id \
                 JOIN people p ON p.id = m.author_id WHERE NOT m.withheld ORDER BY m.id LIMIT $1"
            ))
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.iter().map(message_from_row).collect()
        }

        async fn redo_vectors(&self, items: &[IndexedMessage]) -> StoreResult<usize> {
            let mut tx = self.write_tx().await?;
            let mut done = 0;
            for item in items {
                // Still waiting (not deleted, not made again by another process meanwhile).
                let taken = sqlx::query("DELETE FROM vector_backlog WHERE message_id = $1")
                    .bind(item.message.id.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?
                    .rows_affected();
                if taken == 0 {
                    continue;
                }
                if let Some(v) = &item.embedding {
                    keep_vector(&mut tx, &item.message, v, item.context).await?;
                    done += 1;
                }
            }
            tx.commit().await.map_err(db_err)?;
            Ok(done)
        }

        async fn index_messages(
            &self,
            items: &[IndexedMessage],
            gap: chrono::Duration,
        ) -> StoreResult<usize> {
            let mut tx = self.write_tx().await?;
            // One indexer writes at a time across processes: episodes are built in time order
            // per channel, and two processes must not open two episodes for one conversation.
            lock_indexer(&mut tx).await?;
            let mut done = 0;
            let mut open: HashMap<(i64, String, String), OpenEpisode> = HashMap::new();
            for item in sorted_for_episodes(items) {
                let m = &item.message;
                // Read (and locked) before any episode is touched: a message another process
                // indexed meanwhile must not open an empty episode. It is marked indexed as it
                // is put in its episode, in one write (below): a second UPDATE of
                // the row left one more dead version of it, and of its entries in every index
                // of messages, for the searches to step over until a vacuum.
                // The row must still be the message that was read, in the place it was read
                // in: where the store had ever given a deleted message's id to the next one
                // (SQLite before migration 31), a private chat's message was put into the
                // deleted one's public conversation by that id alone.
                let claimed: Option<(String, Option<String>)> = sqlx::query_as(concat!(
                    "SELECT text, language FROM messages WHERE id = $1 AND NOT indexed \
                     AND space_id = $2 AND channel = $3 AND scope = $4 AND author_id = $5",
                    for_no_key_update!()
                ))
                .bind(m.id.0)
                .bind(m.space.0)
                .bind(&m.channel)
                .bind(m.scope.key())
                .bind(m.author.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
                let Some((text, language)) = claimed else { continue };
                // Its text as it is now (an attachment's description may have joined it since
                // it was read): the episode grows by that; the vector of the old text is not
                // kept (`keep_vector`).
                let now;
                let grown = if text == m.text {
                    m
                } else {
                    now = StoredMessage {
                        text,
                        language: language.as_deref().and_then(Language::from_code),
                        ..m.clone()
                    };
                    &now
                };
                let at = ms(m.sent_at);
                let episode = episode_for(&mut tx, &mut open, m, at, gap, item.start).await?;
                sqlx::query("UPDATE messages SET indexed = true, episode_id = $1 WHERE id = $2")
                    .bind(episode)
                    .bind(m.id.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                if let Some(v) = &item.embedding {
                    keep_vector(&mut tx, m, v, item.context).await?;
                }
                grow_episode(&mut tx, grown, episode, at).await?;
                done += 1;
            }
            tx.commit().await.map_err(db_err)?;
            settle_log(self).await;
            Ok(done)
        }

        async fn episodes_to_close(
            &self,
            ended_before: DateTime<Utc>,
            limit: usize,
        ) -> StoreResult<Vec<Episode>> {
            let rows: Vec<EpisodeRow> = sqlx::query_as(concat!(
                "SELECT ",
                episode_columns!(),
                " FROM episodes WHERE NOT closed AND (ended_at < $1 OR superseded) ORDER BY ended_at, id LIMIT $2"
            ))
            .bind(ms(ended_before))
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.into_iter().map(episode_of).collect()
        }

        async fn episodes(&self, ids: &[i64]) -> StoreResult<Vec<Episode>> {
            let rows: Vec<EpisodeRow> = sqlx::query_as(concat!(
                "SELECT ",
                episode_columns!(),
                " FROM episodes WHERE id ",
                in_list!(1),
                " ORDER BY id"
            ))
            .bind(list(ids))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.into_iter().map(episode_of).collect()
        }

        async fn episode_messages(
            &self,
            episode: i64,
            commands: bool,
            end: EpisodeEnd,
            limit: usize,
        ) -> StoreResult<Vec<StoredMessage>> {
            macro_rules! read_in {
                ($order:literal) => {
                    concat!(
                        "SELECT ",
                        message_columns!(),
                        " FROM messages m",
                        indexed_by!("messages_by_episode"),
                        " JOIN people p ON p.id = m.author_id \
                         WHERE m.episode_id = $1 AND NOT m.withheld AND m.attachment_of IS NULL AND ($3 OR NOT m.is_command) \
                           AND m.scope = (SELECT e.scope FROM episodes e WHERE e.id = $1) \
                         ORDER BY ",
                        $order,
                        " LIMIT $2"
                    )
                };
            }
            let sql = match end {
                EpisodeEnd::Oldest => read_in!("m.sent_at, m.id"),
                EpisodeEnd::Newest => read_in!("m.sent_at DESC, m.id DESC"),
            };
            let rows = sqlx::query(sql)
                .bind(episode)
                .bind(limit as i64)
                .bind(commands)
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
            let mut messages = rows
                .iter()
                .map(message_from_row)
                .collect::<StoreResult<Vec<_>>>()?;
            if end == EpisodeEnd::Newest {
                messages.reverse();
            }
            Ok(messages)
        }

        async fn message_vectors(
            &self,
            space: VectorSpaceId,
            ids: &[MessageId],
        ) -> StoreResult<Vec<MessageVector>> {
            message_vectors(self, space, ids).await
        }

        async fn open_episode(
            &self,
            space: SpaceId,
            channel: &str,
            scope: &Scope,
            limit: usize,
        ) -> StoreResult<Option<(Episode, Vec<StoredMessage>)>> {
            let row: Option<EpisodeRow> = sqlx::query_as(concat!(
                "SELECT ",
                episode_columns!(),
                " FROM episodes WHERE space_id = $1 AND channel = $2 AND scope = $3 AND NOT closed AND NOT superseded ORDER BY ended_at DESC LIMIT 1"
            ))
            .bind(space.0)
            .bind(channel)
            .bind(scope.key())
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            let Some(episode) = row.map(episode_of).transpose()? else {
                return Ok(None);
            };
            let messages = self
                .episode_messages(episode.id, true, EpisodeEnd::Newest, limit)
                .await?;
            Ok(Some((episode, messages)))
        }

        async fn similar_episode(
            &self,
            scope: &Scope,
            vector: &Embedding,
            min: f32,
            except: i64,
        ) -> StoreResult<Option<(i64, f32)>> {
            let row: Option<(i64, f64)> = sqlx::query_as(
                concat!(
                    "SELECT id, ",
                    similarity!("embedding", 1),
                    " AS sim FROM episodes WHERE scope = $2 AND ",
                    is_true!("closed"),
                    " AND id <> $3 AND embedding_space = $4 AND embedding IS NOT NULL AND details IS NULL ORDER BY ",
                    nearest_first!("embedding", 1),
                    ", id LIMIT 1"
                ),
            )
            .bind(vector_param(&vector.vector))
            .bind(scope.key())
            .bind(except)
            .bind(vector.space.0)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            Ok(row
                .map(|(id, sim)| (id, sim as f32))
                .filter(|(_, sim)| *sim >= min))
        }

        async fn close_episode(
            &self,
            episode: i64,
            from: &[StoredMessage],
            close: &EpisodeClose,
        ) -> StoreResult<()> {
            let mut tx = self.write_tx().await?;
            if !still_as_read(&mut tx, episode, from).await? {
                return Ok(());
            }
            let (EpisodeClose::Add { embedding, .. } | EpisodeClose::Merge { embedding, .. }) = close;
            if let Some(v) = embedding
                && !vectors_as_read(&mut tx, v).await?
            {
                return Ok(());
            }
            let row: Option<(String, i64, i64, i32, i64)> = sqlx::query_as(
                concat!(
                    "SELECT scope, started_at, ended_at, messages, total_len FROM episodes WHERE id = $1 AND NOT closed",
                    for_update!()
                ),
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
                    sqlx::query(concat!(
                        "UPDATE episodes SET summary = $1, embedding = ",
                        vector!(2),
                        ", embedding_space = $5, closed = true, updated_at = $3 WHERE id = $4"
                    ))
                        .bind(summary)
                        .bind(embedding.as_ref().map(|e| vector_param(&e.embedding.vector)))
                        .bind(ended)
                        .bind(episode)
                        .bind(embedding.as_ref().map(|e| e.embedding.space.0))
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                }
                EpisodeClose::Merge {
                    into,
                    summary,
                    embedding,
                } => {
                    let target: Option<(String, bool)> = sqlx::query_as(concat!(
                        "SELECT scope, details IS NOT NULL FROM episodes WHERE id = $1 AND closed",
                        for_update!()
                    ))
                    .bind(into)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    // Finished meanwhile (its final details made from its own messages): the
                    // messages moved in would never be in them. Nothing is written; the next
                    // pass closes this episode on its own.
                    if target.as_ref().is_some_and(|(_, finished)| *finished) {
                        return Ok(());
                    }
                    let target_scope = target.map(|(scope, _)| scope);
                    // Only within one scope, and so one privacy level.
                    if target_scope.as_deref() != Some(scope.as_str()) {
                        return Err(StoreError::Conflict {
                            what: format!(
                                "episode {episode} cannot merge into {into}: not a closed episode of the same scope"
                            ),
                        });
                    }
                    sqlx::query("UPDATE messages SET episode_id = $1 WHERE episode_id = $2")
                        .bind(into)
                        .bind(episode)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    sqlx::query(concat!(
                        "UPDATE episodes SET started_at = ",
                        least!("started_at", "$1"),
                        ", ended_at = ",
                        greatest!("ended_at", "$2"),
                        ", messages = messages + $3, total_len = total_len + $4, summary = $5, embedding = COALESCE(",
                        vector!(6),
                        ", embedding), embedding_space = COALESCE($8, embedding_space), updated_at = $2 WHERE id = $7"
                    ))
                        .bind(started)
                        .bind(ended)
                        .bind(count)
                        .bind(total_len)
                        .bind(summary)
                        .bind(embedding.as_ref().map(|e| vector_param(&e.embedding.vector)))
                        .bind(into)
                        .bind(embedding.as_ref().map(|e| e.embedding.space.0))
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    drop_episode(&mut tx, episode, &scope).await?;
                }
            }
            tx.commit().await.map_err(db_err)?;
            Ok(())
        }
    }

    /// The episode message `m` (sent at `at`) belongs to: the channel's open one when no pause
    /// longer than `gap` separates them and the topic rules did not start another (`start`),
    /// else a new one (`open` keeps each channel's, so a batch reads it once). An episode a
    /// newer one replaced by topic or marker is marked superseded, so it closes now.
    async fn episode_for(
        conn: &mut Conn,
        open: &mut HashMap<(i64, String, String), OpenEpisode>,
        m: &StoredMessage,
        at: i64,
        gap: chrono::Duration,
        start: EpisodeStart,
    ) -> StoreResult<i64> {
        // By scope too: a channel id names no privacy boundary (a private chat's space can be
        // named as a group's by a caller), and an episode's summary and vector are one scope's.
        let key = (m.space.0, m.channel.clone(), m.scope.key());
        if !open.contains_key(&key) {
            let row: Option<(i64, i64, i64)> = sqlx::query_as(
                "SELECT id, started_at, ended_at FROM episodes WHERE space_id = $1 AND channel = $2 AND scope = $3 AND NOT closed AND NOT superseded ORDER BY ended_at DESC LIMIT 1",
            )
            .bind(m.space.0)
            .bind(&m.channel)
            .bind(m.scope.key())
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_err)?;
            if let Some((id, started, ended)) = row {
                open.insert(key.clone(), OpenEpisode { id, started, ended });
            }
        }
        let current = open.get(&key).filter(|e| e.takes(at, gap)).map(|e| e.id);
        if let (Some(id), EpisodeStart::Continue) = (current, start) {
            let e = open.get_mut(&key).expect("read above");
            e.started = e.started.min(at);
            e.ended = e.ended.max(at);
            return Ok(id);
        }
        let label = if current.is_some() { start.label() } else { "gap" };
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO episodes (scope, space_id, channel, started_at, ended_at, messages, total_len, updated_at, started_by) VALUES ($1, $2, $3, $4, $4, 0, 0, $4, $5) RETURNING id",
        )
        .bind(m.scope.key())
        .bind(m.space.0)
        .bind(&m.channel)
        .bind(at)
        .bind(label)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_err)?;
        sqlx::query("INSERT INTO scope_episode_stats AS s (scope, episodes, total_len) VALUES ($1, 1, 0) ON CONFLICT (scope) DO UPDATE SET episodes = s.episodes + 1")
            .bind(m.scope.key())
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        let mut started = at;
        if let Some(old) = current {
            // Its working memory is of no use now, and may cover messages that move over.
            sqlx::query("UPDATE episodes SET superseded = true, running_summary = NULL, open_loops = NULL WHERE id = $1")
                .bind(old)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
            if let EpisodeStart::Topic { from } = start {
                started = move_tail(conn, old, id, from, &m.scope.key()).await?.unwrap_or(at);
            }
        }
        open.insert(
            key,
            OpenEpisode {
                id,
                started,
                ended: at,
            },
        );
        Ok(id)
    }

    /// Moves message `from` and every later message of episode `old` to episode `new` (a topic
    /// shift confirmed one message late); the moved messages' earliest time, None when `from`
    /// is not in `old`. An emptied `old` is dropped.
    async fn move_tail(
        conn: &mut Conn,
        old: i64,
        new: i64,
        from: MessageId,
        scope: &str,
    ) -> StoreResult<Option<i64>> {
        let first: Option<i64> =
            sqlx::query_scalar("SELECT sent_at FROM messages WHERE id = $1 AND episode_id = $2")
                .bind(from.0)
                .bind(old)
                .fetch_optional(&mut *conn)
                .await
                .map_err(db_err)?;
        let Some(first) = first else {
            return Ok(None);
        };
        let moved: Vec<(i64, String, Option<String>)> = sqlx::query_as(
            "SELECT id, text, language FROM messages WHERE episode_id = $1 AND (sent_at > $2 OR (sent_at = $2 AND id >= $3))",
        )
        .bind(old)
        .bind(first)
        .bind(from.0)
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
        let count = moved.len() as i64;
        let len: i64 = moved
            .iter()
            .map(|(_, text, language)| {
                let language = language.as_deref().and_then(Language::from_code);
                document_terms_in(text, language).len as i64
            })
            .sum();
        sqlx::query(
            "UPDATE messages SET episode_id = $1 WHERE episode_id = $2 AND (sent_at > $3 OR (sent_at = $3 AND id >= $4))",
        )
        .bind(new)
        .bind(old)
        .bind(first)
        .bind(from.0)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        sqlx::query(concat!(
            "UPDATE episodes SET started_at = ",
            least!("started_at", "$1"),
            ", messages = messages + $2, total_len = total_len + $3 WHERE id = $4"
        ))
        .bind(first)
        .bind(count)
        .bind(len)
        .bind(new)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        let left: i64 = sqlx::query_scalar(
            "UPDATE episodes SET messages = messages - $1, total_len = total_len - $2, \
             ended_at = COALESCE((SELECT MAX(sent_at) FROM messages WHERE episode_id = $3), ended_at) \
             WHERE id = $3 RETURNING CAST(messages AS BIGINT)",
        )
        .bind(count)
        .bind(len)
        .bind(old)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_err)?;
        if left <= 0 {
            drop_episode(&mut *conn, old, scope).await?;
        }
        Ok(Some(first))
    }

    /// Episode `episode` takes message `m`: its time span, size and the scope's total length.
    async fn grow_episode(
        conn: &mut Conn,
        m: &StoredMessage,
        episode: i64,
        at: i64,
    ) -> StoreResult<()> {
        let len = document_terms_in(&m.text, m.language).len as i64;
        sqlx::query(concat!(
            "UPDATE episodes SET started_at = ",
            least!("started_at", "$1"),
            ", ended_at = ",
            greatest!("ended_at", "$1"),
            ", messages = messages + 1, total_len = total_len + $2, updated_at = $1 WHERE id = $3"
        ))
            .bind(at)
            .bind(len)
            .bind(episode)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        add_episode_length(&mut *conn, &m.scope.key(), len).await?;
        Ok(())
    }

    /// Adds `delta` (may be negative) to the total length of the episodes of `scope`, for
    /// BM25's average episode length.
    pub(in crate::store) async fn add_episode_length(
        conn: &mut Conn,
        scope: &str,
        delta: i64,
    ) -> StoreResult<()> {
        sqlx::query("UPDATE scope_episode_stats SET total_len = total_len + $1 WHERE scope = $2")
            .bind(delta)
            .bind(scope)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    /// Deletes an episode's search keys' postings (its details' words).
    pub(in crate::store) async fn drop_episode_keys(conn: &mut Conn, episode: i64) -> StoreResult<()> {
        sqlx::query("DELETE FROM episode_terms WHERE episode_id = $1")
            .bind(episode)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    /// Deletes an episode (emptied, or merged into another) and counts it out of its scope.
    pub(in crate::store) async fn drop_episode(
        conn: &mut Conn,
        episode: i64,
        scope: &str,
    ) -> StoreResult<()> {
        // Its search keys go with it (a foreign key), and out of the scope's length.
        let keys_len: Option<i64> =
            sqlx::query_scalar("DELETE FROM episodes WHERE id = $1 RETURNING COALESCE(keys_len, 0)")
                .bind(episode)
                .fetch_optional(&mut *conn)
                .await
                .map_err(db_err)?;
        sqlx::query(
            "UPDATE scope_episode_stats SET episodes = episodes - 1, total_len = total_len - $2 WHERE scope = $1",
        )
        .bind(scope)
        .bind(keys_len.unwrap_or(0))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(())
    }
}

/// The open episode of a channel while the indexer walks new messages (times in Unix ms).
struct OpenEpisode {
    id: i64,
    started: i64,
    ended: i64,
}

impl OpenEpisode {
    /// A message at `at` continues this episode when no pause longer than `gap` separates them.
    fn takes(&self, at: i64, gap: chrono::Duration) -> bool {
        let gap = gap.num_milliseconds();
        at >= self.started - gap && at <= self.ended + gap
    }
}

/// Messages in the order episodes are built: by channel time, then id.
fn sorted_for_episodes(items: &[IndexedMessage]) -> Vec<&IndexedMessage> {
    let mut sorted: Vec<&IndexedMessage> = items.iter().collect();
    sorted.sort_by_key(|i| (i.message.sent_at, i.message.id));
    sorted
}

/// One row of an episode search: term, episode, tf, the episode's length, and the searched
/// scopes' episode count and total length.
type EpisodePosting = (String, i64, i64, i64, i64, i64);

/// Episode-level BM25 from the rows of the searched scopes (`EpisodePosting`).
fn rank_episode_postings(bm25: Bm25, rows: Vec<EpisodePosting>, limit: usize) -> Vec<EpisodeHit> {
    let Some(&(_, _, _, _, episodes, total_len)) = rows.first() else {
        return Vec::new();
    };
    let lens: HashMap<i64, f64> = rows.iter().map(|r| (r.1, r.3 as f64)).collect();
    let postings: Vec<(String, i64, i64)> = rows.into_iter().map(|r| (r.0, r.1, r.2)).collect();
    let n = episodes.max(1) as f64;
    terms::rank_documents(
        bm25,
        &postings,
        &lens,
        n,
        total_len.max(1) as f64 / n,
        limit,
    )
    .into_iter()
    .map(|(episode, score)| EpisodeHit { episode, score })
    .collect()
}

/// id, scope, space_id, channel, started_at, ended_at, messages, summary, closed, started_by,
/// summarized_through
pub(in crate::store) type EpisodeRow = (
    i64,
    String,
    i64,
    String,
    i64,
    i64,
    i64,
    Option<String>,
    bool,
    String,
    Option<i64>,
);

pub(in crate::store) fn episode_of(
    (id, scope, space, channel, started, ended, messages, summary, closed, started_by, through): EpisodeRow,
) -> StoreResult<Episode> {
    Ok(Episode {
        id,
        scope: parse_scope(&scope)?,
        space: SpaceId(space),
        channel,
        started_at: from_ms(started)?,
        ended_at: from_ms(ended)?,
        messages,
        summary,
        closed,
        started_by,
        summarized_through: through.map(MessageId),
    })
}
