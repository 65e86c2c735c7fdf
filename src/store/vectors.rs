//! Vector spaces and the vectors in them: which model made each stored vector, the one the
//! configuration uses, what a new model still has to embed (newest first), and dropping the
//! spaces no longer needed. Search itself (`search`) reads only the vectors of one space.

use super::rows::ms;
use super::search::{EpisodeRow, EpisodeVector, IndexedMessage, episode_columns, episode_of};
use super::{Episode, StoreError, StoreResult};
use crate::domain::{Embedding, MessageId, ModelIdentity, StoredMessage, VectorSpaceId};
use async_trait::async_trait;
use serde::Serialize;

/// The vector spaces of a database.
#[async_trait]
pub trait Vectors: Send + Sync {
    /// The id of `model`'s space, registered on first use (on PostgreSQL with its own HNSW
    /// index).
    async fn vector_space(&self, model: &ModelIdentity) -> StoreResult<VectorSpaceId>;
    /// Makes `model`'s space the one in use, and returns the one in use before when it was
    /// another.
    async fn activate_vector_space(
        &self,
        model: &ModelIdentity,
    ) -> StoreResult<(VectorSpaceId, Option<ModelIdentity>)>;
    /// Indexed messages with ids below `below` that have no vector in `space` (withheld ones
    /// never have one) and that its model did not refuse, newest first: what a new model
    /// still has to embed.
    async fn vectors_missing(
        &self,
        space: VectorSpaceId,
        below: MessageId,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    /// Stores vectors made for `vectors_missing`'s messages (a message deleted or withheld
    /// meanwhile gets none, nor one whose context went). Returns how many were stored.
    async fn add_vectors(&self, items: &[IndexedMessage]) -> StoreResult<usize>;
    /// Records that `space`'s model refused to embed these messages (those still there):
    /// they count as done for its pass and its coverage, and stay BM25-only.
    async fn refuse_vectors(&self, space: VectorSpaceId, ids: &[MessageId]) -> StoreResult<()>;
    /// Closed episodes whose vector is not of `space` (or that have none yet), oldest first.
    async fn episodes_outside(
        &self,
        space: VectorSpaceId,
        limit: usize,
    ) -> StoreResult<Vec<Episode>>;
    /// Gives a closed episode its vector in `space` (None: its messages have none), unless it
    /// or one of the message vectors the vector was made from changed since they were read.
    async fn set_episode_vector(
        &self,
        episode: &Episode,
        space: VectorSpaceId,
        vector: Option<&EpisodeVector>,
    ) -> StoreResult<()>;
    /// Deletes the vectors of every space but `keep` and the one in use, and those spaces, once
    /// `keep` covers every message (a vector, or its model's refusal; else nothing). Returns
    /// how many message vectors went.
    async fn drop_other_vector_spaces(&self, keep: VectorSpaceId) -> StoreResult<u64>;
    /// Each space with how many messages have a vector in it, and how many should.
    async fn vector_coverage(&self) -> StoreResult<VectorCoverage>;
}

/// How far each vector space covers the messages (`Vectors::vector_coverage`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VectorCoverage {
    /// Messages that should have a vector: indexed, not withheld.
    pub messages: i64,
    /// Every space, oldest first.
    pub spaces: Vec<SpaceCoverage>,
}

/// One vector space and its vectors.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpaceCoverage {
    /// Its id.
    pub id: VectorSpaceId,
    /// The model that makes it.
    pub model: ModelIdentity,
    /// The space the configuration uses.
    pub active: bool,
    /// Messages with a vector in it.
    pub vectors: i64,
    /// Messages its model refused to embed (BM25 only).
    pub refused: i64,
}

impl VectorCoverage {
    /// The share of messages done in `space`: with a vector in it, or refused by its model
    /// (1 when there are none to embed).
    pub fn share(&self, space: VectorSpaceId) -> f64 {
        if self.messages == 0 {
            1.0
        } else {
            (self.done(space) as f64 / self.messages as f64).min(1.0)
        }
    }

    /// The messages done in `space`: with a vector in it, or refused by its model.
    pub fn done(&self, space: VectorSpaceId) -> i64 {
        self.spaces
            .iter()
            .find(|s| s.id == space)
            .map_or(0, |s| s.vectors + s.refused)
    }
}

/// A `vector_spaces` row: id, provider, model, dimensions, revision, active.
type SpaceRow = (i64, String, String, i64, String, bool);

fn space_of(row: SpaceRow) -> (VectorSpaceId, ModelIdentity, bool) {
    let (id, provider, model, dimensions, revision, active) = row;
    (
        VectorSpaceId(id),
        ModelIdentity {
            provider,
            model,
            dimensions: dimensions.max(0) as usize,
            revision,
        },
        active,
    )
}

/// pgvector's HNSW index takes vectors of at most this many dimensions; a larger model's
/// space is searched exactly.
pub const HNSW_MAX_DIMENSIONS: usize = 2000;

on_both_backends! {
    #[async_trait]
    impl Vectors for Backend {
        async fn vector_space(&self, model: &ModelIdentity) -> StoreResult<VectorSpaceId> {
            let mut conn = self.pool().acquire().await.map_err(db_err)?;
            if let Some(known) = find_space(&mut conn, model).await? {
                return Ok(known);
            }
            drop(conn);
            let mut tx = self.write_tx().await?;
            // One process registers a space (and builds its index) at a time.
            lock_indexer(&mut tx).await?;
            sqlx::query(
                "INSERT INTO vector_spaces (provider, model, dimensions, revision) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (provider, model, dimensions, revision) DO NOTHING",
            )
            .bind(&model.provider)
            .bind(&model.model)
            .bind(model.dimensions as i64)
            .bind(&model.revision)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            let space = find_space(&mut tx, model).await?.ok_or_else(|| StoreError::Conflict {
                what: format!("the vector space of {model} was not registered"),
            })?;
            space_index(&mut tx, space, model.dimensions).await?;
            tx.commit().await.map_err(db_err)?;
            Ok(space)
        }

        async fn activate_vector_space(
            &self,
            model: &ModelIdentity,
        ) -> StoreResult<(VectorSpaceId, Option<ModelIdentity>)> {
            let space = self.vector_space(model).await?;
            let mut tx = self.write_tx().await?;
            let before: Option<SpaceRow> = sqlx::query_as(concat!(
                "SELECT id, provider, model, CAST(dimensions AS BIGINT), revision, active FROM vector_spaces WHERE ",
                is_true!("active"),
                " AND id <> $1",
                for_update!()
            ))
            .bind(space.0)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            sqlx::query("UPDATE vector_spaces SET active = (id = $1)")
                .bind(space.0)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok((space, before.map(|row| space_of(row).1)))
        }

        async fn vectors_missing(
            &self,
            space: VectorSpaceId,
            below: MessageId,
            limit: usize,
        ) -> StoreResult<Vec<StoredMessage>> {
            let rows = sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages m JOIN people p ON p.id = m.author_id \
                 WHERE m.id < $2 AND m.indexed AND NOT m.withheld \
                 AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.space_id = $1) \
                 AND NOT EXISTS (SELECT 1 FROM vector_refusals r WHERE r.message_id = m.id AND r.space_id = $1) \
                 ORDER BY m.id DESC LIMIT $3"
            ))
            .bind(space.0)
            .bind(below.0)
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.iter().map(message_from_row).collect()
        }

        async fn add_vectors(&self, items: &[IndexedMessage]) -> StoreResult<usize> {
            let mut tx = self.write_tx().await?;
            let mut done = 0;
            for item in items {
                if let Some(v) = &item.embedding {
                    keep_vector(&mut tx, &item.message, v, item.context).await?;
                    done += 1;
                }
            }
            tx.commit().await.map_err(db_err)?;
            Ok(done)
        }

        async fn refuse_vectors(&self, space: VectorSpaceId, ids: &[MessageId]) -> StoreResult<()> {
            if ids.is_empty() {
                return Ok(());
            }
            let ids: Vec<i64> = ids.iter().map(|m| m.0).collect();
            // Only messages still there: a forget deletes the rows of what it takes.
            sqlx::query(concat!(
                "INSERT INTO vector_refusals (space_id, message_id) SELECT $1, id FROM messages WHERE id ",
                in_list!(2),
                " ON CONFLICT DO NOTHING"
            ))
            .bind(space.0)
            .bind(list(&ids))
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            Ok(())
        }

        async fn episodes_outside(
            &self,
            space: VectorSpaceId,
            limit: usize,
        ) -> StoreResult<Vec<Episode>> {
            let rows: Vec<EpisodeRow> = sqlx::query_as(concat!(
                "SELECT ",
                episode_columns!(),
                " FROM episodes WHERE ",
                is_true!("closed"),
                " AND (embedding_space IS NULL OR embedding_space <> $1) ORDER BY id LIMIT $2"
            ))
            .bind(space.0)
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.into_iter().map(episode_of).collect()
        }

        async fn set_episode_vector(
            &self,
            episode: &Episode,
            space: VectorSpaceId,
            vector: Option<&EpisodeVector>,
        ) -> StoreResult<()> {
            let mut tx = self.write_tx().await?;
            // Locked first, as a forget's reopening takes it.
            sqlx::query(concat!("SELECT id FROM episodes WHERE id = $1", for_update!()))
                .bind(episode.id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
            if let Some(v) = vector
                && !vectors_as_read(&mut tx, v).await?
            {
                return Ok(());
            }
            // Still the episode the vector was made from: closed, and no message has left or
            // joined it since (a forget reopens it, and its next close makes the vector).
            sqlx::query(concat!(
                "UPDATE episodes SET embedding = ",
                vector!(1),
                ", embedding_space = $2 WHERE id = $3 AND ",
                is_true!("closed"),
                " AND messages = $4 AND ended_at = $5"
            ))
            .bind(vector.map(|v| vector_param(&v.embedding.vector)))
            .bind(space.0)
            .bind(episode.id)
            .bind(episode.messages as i32)
            .bind(ms(episode.ended_at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(())
        }

        async fn drop_other_vector_spaces(&self, keep: VectorSpaceId) -> StoreResult<u64> {
            let mut tx = self.write_tx().await?;
            lock_indexer(&mut tx).await?;
            // Only when `keep` really covers every message (another process may have indexed
            // some in its own model meanwhile), and never the space another process made the
            // one in use since.
            let uncovered: Option<i64> = sqlx::query_scalar(
                "SELECT m.id FROM messages m WHERE m.indexed AND NOT m.withheld \
                 AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.space_id = $1) \
                 AND NOT EXISTS (SELECT 1 FROM vector_refusals r WHERE r.message_id = m.id AND r.space_id = $1) LIMIT 1",
            )
            .bind(keep.0)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            if uncovered.is_some() {
                return Ok(0);
            }
            let gone: Vec<i64> = sqlx::query_scalar(concat!(
                "SELECT id FROM vector_spaces WHERE id <> $1 AND NOT ",
                is_true!("active")
            ))
            .bind(keep.0)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            let mut vectors = 0;
            for id in &gone {
                vectors += sqlx::query("DELETE FROM message_vectors WHERE space_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?
                    .rows_affected();
                sqlx::query("DELETE FROM vector_refusals WHERE space_id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                sqlx::query(
                    "UPDATE episodes SET embedding = NULL, embedding_space = NULL WHERE embedding_space = $1",
                )
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                sqlx::query("DELETE FROM vector_spaces WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            for id in gone {
                drop_space_index(&mut tx, VectorSpaceId(id)).await?;
            }
            // Vectors of a space already gone (written late by a process still using it).
            vectors += sqlx::query(
                "DELETE FROM message_vectors WHERE NOT EXISTS (SELECT 1 FROM vector_spaces s WHERE s.id = message_vectors.space_id)",
            )
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            tx.commit().await.map_err(db_err)?;
            Ok(vectors)
        }

        async fn vector_coverage(&self) -> StoreResult<VectorCoverage> {
            let messages: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM messages WHERE indexed AND NOT withheld",
            )
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
            #[allow(clippy::type_complexity)]
            let rows: Vec<(i64, String, String, i64, String, bool, i64, i64)> = sqlx::query_as(
                "SELECT s.id, s.provider, s.model, CAST(s.dimensions AS BIGINT), s.revision, s.active, \
                 (SELECT COUNT(*) FROM message_vectors v WHERE v.space_id = s.id), \
                 (SELECT COUNT(*) FROM vector_refusals r WHERE r.space_id = s.id) FROM vector_spaces s ORDER BY s.id",
            )
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            let spaces = rows
                .into_iter()
                .map(|(id, provider, model, dims, revision, active, vectors, refused)| {
                    let (id, model, active) = space_of((id, provider, model, dims, revision, active));
                    SpaceCoverage { id, model, active, vectors, refused }
                })
                .collect();
            Ok(VectorCoverage { messages, spaces })
        }
    }

    /// The id of `model`'s space, if it is registered.
    async fn find_space(conn: &mut Conn, model: &ModelIdentity) -> StoreResult<Option<VectorSpaceId>> {
        let id: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM vector_spaces WHERE provider = $1 AND model = $2 AND dimensions = $3 AND revision = $4",
        )
        .bind(&model.provider)
        .bind(&model.model)
        .bind(model.dimensions as i64)
        .bind(&model.revision)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(id.map(VectorSpaceId))
    }

    /// Keeps message `m`'s vector made with `context` (the message before it) as context. When
    /// the context was forgotten while the vector was being made, the vector is not kept and
    /// `m` waits in `vector_backlog` to be embedded again without it. The context row stays
    /// locked until commit (SQLite: writes are serialized): a forget that comes later waits,
    /// then finds this vector and drops it; one that came first has deleted the row.
    pub(in crate::store) async fn keep_vector(
        conn: &mut Conn,
        m: &StoredMessage,
        embedding: &Embedding,
        context: Option<MessageId>,
    ) -> StoreResult<()> {
        if let Some(c) = context
            && !locked_alive(conn, c).await?
        {
            return wait_for_vector(conn, m.id).await;
        }
        // A withheld (or deleted) message keeps no vector. Its row stays locked until commit,
        // as the context's above: a forget of it waits, then finds this vector and drops it.
        // A message whose text changed since it was read (an attachment's description joined
        // it) waits to be embedded again from its new text.
        let current: Option<String> = sqlx::query_scalar(concat!(
            "SELECT text FROM messages WHERE id = $1 AND NOT withheld",
            for_update!()
        ))
        .bind(m.id.0)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        match current {
            None => return Ok(()),
            Some(text) if text != m.text => return wait_for_vector(conn, m.id).await,
            Some(_) => {}
        }
        sqlx::query(concat!(
            "INSERT INTO message_vectors (message_id, space_id, scope, embedding, context_id) SELECT $1, $2, $3, ",
            vector!(4),
            ", $5 WHERE EXISTS (SELECT 1 FROM vector_spaces WHERE id = $2) \
             ON CONFLICT (message_id, space_id) DO UPDATE SET scope = excluded.scope, embedding = excluded.embedding, context_id = excluded.context_id"
        ))
        .bind(m.id.0)
        .bind(embedding.space.0)
        .bind(m.scope.key())
        .bind(vector_param(&embedding.vector))
        .bind(context.map(|c| c.0))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    /// Message `id` (when it is there and not withheld) waits in `vector_backlog` to be
    /// embedded again.
    async fn wait_for_vector(conn: &mut Conn, id: MessageId) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO vector_backlog (message_id) SELECT id FROM messages \
             WHERE id = $1 AND NOT withheld ON CONFLICT DO NOTHING",
        )
        .bind(id.0)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    /// Whether each message vector an episode's vector was made from is still stored with the
    /// context it was read with. Called with the episode's row locked: a forget of a context
    /// reopens the episodes holding its vectors (`forget_context_vectors`) and so waits for
    /// the caller's commit, then clears what it wrote; one that committed first is seen here
    /// (PostgreSQL takes a new snapshot per statement).
    pub(in crate::store) async fn vectors_as_read(
        conn: &mut Conn,
        vector: &EpisodeVector,
    ) -> StoreResult<bool> {
        let ids: Vec<i64> = vector.made_from.iter().map(|(m, _)| m.0).collect();
        let now: std::collections::HashMap<i64, Option<i64>> = sqlx::query_as::<_, (i64, Option<i64>)>(
            concat!(
                "SELECT message_id, context_id FROM message_vectors WHERE space_id = $1 AND message_id ",
                in_list!(2)
            ),
        )
        .bind(vector.embedding.space.0)
        .bind(list(&ids))
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?
        .into_iter()
        .collect();
        Ok(vector
            .made_from
            .iter()
            .all(|(m, context)| now.get(&m.0) == Some(&context.map(|c| c.0))))
    }

    /// Whether message `id` is there and not withheld, its row locked until commit (SQLite:
    /// writes are serialized anyway).
    async fn locked_alive(conn: &mut Conn, id: MessageId) -> StoreResult<bool> {
        let alive: Option<i64> = sqlx::query_scalar(concat!(
            "SELECT id FROM messages WHERE id = $1 AND NOT withheld",
            for_update!()
        ))
        .bind(id.0)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(alive.is_some())
    }

    /// A deleted message's vectors (in every space) go with it, and any model's refusal of it.
    pub(in crate::store) async fn forget_vectors(conn: &mut Conn, ids: &[i64]) -> StoreResult<()> {
        for sql in [
            concat!("DELETE FROM message_vectors WHERE message_id ", in_list!(1)),
            concat!("DELETE FROM vector_refusals WHERE message_id ", in_list!(1)),
        ] {
            sqlx::query(sql)
                .bind(list(ids))
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Vectors made with any of `ids` as context go, in every space (those messages wait in
    /// `vector_backlog` to be embedded again), and the episodes holding them reopen, so their
    /// summaries and vectors are made again too.
    pub(in crate::store) async fn forget_context_vectors(
        conn: &mut Conn,
        ids: &[i64],
    ) -> StoreResult<()> {
        sqlx::query(concat!(
            "INSERT INTO vector_backlog (message_id) SELECT DISTINCT message_id FROM message_vectors WHERE context_id ",
            in_list!(1),
            " AND NOT message_id ",
            in_list!(1),
            " ON CONFLICT DO NOTHING"
        ))
        .bind(list(ids))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        sqlx::query(concat!(
            "UPDATE episodes SET closed = false, summary = NULL, embedding = NULL, embedding_space = NULL WHERE id IN \
             (SELECT m.episode_id FROM message_vectors v JOIN messages m ON m.id = v.message_id \
              WHERE v.context_id ",
            in_list!(1),
            " AND m.episode_id IS NOT NULL)"
        ))
        .bind(list(ids))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        sqlx::query(concat!("DELETE FROM message_vectors WHERE context_id ", in_list!(1)))
            .bind(list(ids))
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}
