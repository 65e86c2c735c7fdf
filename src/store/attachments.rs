//! Attachments: each file kept once per scope by the SHA-256 of its bytes (metadata, not bytes), the
//! message that carried it stored with the pieces of its text in one transaction, and which
//! attachments a message carried.

use super::StoreResult;
use super::messages::{NewMessage, Stored};
use crate::domain::{MessageId, StoredMessage};
use async_trait::async_trait;

/// An attachment to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAttachment {
    /// The scope of the message that carries it. A file is kept once per scope: the same
    /// bytes in another scope are another attachment (another id, described again), so
    /// nothing shows one scope that the file was sent in another.
    pub scope: crate::domain::Scope,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
    /// "image", "file", "voice" or "audio".
    pub kind: String,
    /// Its file name.
    pub name: String,
    /// Its MIME type.
    pub mime: String,
    /// Its size in bytes.
    pub size: i64,
    /// When it was first seen.
    pub at: chrono::DateTime<chrono::Utc>,
}

/// A kept attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentRecord {
    /// Its id ("[file#12 …]").
    pub id: i64,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
    /// "image", "file", "voice" or "audio".
    pub kind: String,
    /// Its file name when first kept.
    pub name: String,
    /// Its MIME type.
    pub mime: String,
    /// Its size in bytes.
    pub size: i64,
    /// What a vision or speech-to-text model made of it (JSON, as `describe_attachment`
    /// kept it), if one did.
    pub surrogate: Option<String>,
}

/// Makes the carrying message and the pieces of its attachments' text from the attachments'
/// ids (in the order given).
pub type Compose<'a> = &'a (dyn Fn(&[i64]) -> (NewMessage, Vec<NewMessage>) + Send + Sync);

/// Makes a message's new text, and its language, from its text as stored (None: it stays as
/// it is).
pub type Rewrite<'a> =
    &'a (dyn Fn(&str) -> Option<(String, Option<crate::domain::language::Language>)> + Send + Sync);

/// Attachments and the messages that carried them.
#[async_trait]
pub trait Attachments: Send + Sync {
    /// In one transaction: keeps each attachment once by its hash (an id), then stores the
    /// message and the pieces `compose` makes with those ids, the pieces pointing at it. A
    /// redelivered message keeps its id and nothing is added twice. The messages `replaced`
    /// go first, in the same transaction (`Messages::replace_messages`).
    async fn insert_with_attachments(
        &self,
        attachments: &[NewAttachment],
        compose: Compose<'_>,
        replaced: &[MessageId],
    ) -> StoreResult<Stored>;
    /// The attachments a message carried, by id.
    async fn message_attachments(&self, message: MessageId) -> StoreResult<Vec<AttachmentRecord>>;
    /// The pieces of attachment text stored for a message, in order.
    async fn attachment_parts(&self, message: MessageId) -> StoreResult<Vec<StoredMessage>>;
    /// In one transaction, when message `message` is still there: its text becomes what
    /// `rewrite` makes of it (its postings, vector, episode and day summaries follow),
    /// `pieces` are stored pointing at it (a redelivery adds nothing twice), and attachment
    /// `attachment` keeps `surrogate` (what a model made of the file, reused when the same
    /// file comes again). The text now stored; None when the message is gone (forgotten or
    /// deleted meanwhile): then nothing is added.
    async fn describe_attachment(
        &self,
        message: MessageId,
        attachment: i64,
        surrogate: &str,
        rewrite: Rewrite<'_>,
        pieces: &[NewMessage],
    ) -> StoreResult<Option<String>>;
}

on_both_backends! {
    #[async_trait]
    impl Attachments for Backend {
        async fn insert_with_attachments(
            &self,
            attachments: &[NewAttachment],
            compose: Compose<'_>,
            replaced: &[MessageId],
        ) -> StoreResult<Stored> {
            // Deleting takes the locks an episode close takes too: a PostgreSQL deadlock
            // is run again (all of it rolled back; `compose` may be called again).
            crate::store::again_if_aborted(|| {
                self.insert_with_attachments_once(attachments, compose, replaced)
            })
            .await
        }

        async fn describe_attachment(
            &self,
            message: MessageId,
            attachment: i64,
            surrogate: &str,
            rewrite: Rewrite<'_>,
            pieces: &[NewMessage],
        ) -> StoreResult<Option<String>> {
            let mut tx = self.write_tx().await?;
            let Some(text) = rewrite_text(&mut tx, message, rewrite).await? else {
                return Ok(None);
            };
            insert_parts(&mut tx, message, pieces).await?;
            sqlx::query("UPDATE attachments SET surrogate = $1 WHERE id = $2")
                .bind(surrogate)
                .bind(attachment)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(Some(text))
        }

        async fn attachment_parts(&self, message: MessageId) -> StoreResult<Vec<StoredMessage>> {
            let rows = sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages m",
                indexed_by!("messages_by_attachment_of"),
                " JOIN people p ON p.id = m.author_id WHERE m.attachment_of = $1 ORDER BY m.id"
            ))
            .bind(message.0)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            rows.iter().map(message_from_row).collect()
        }

        async fn message_attachments(&self, message: MessageId) -> StoreResult<Vec<AttachmentRecord>> {
            let rows: Vec<(i64, String, String, String, String, i64, Option<String>)> = sqlx::query_as(
                "SELECT a.id, a.sha256, a.kind, a.name, a.mime, a.size, a.surrogate FROM attachments a \
                 JOIN message_attachments ma ON ma.attachment_id = a.id WHERE ma.message_id = $1 ORDER BY a.id",
            )
            .bind(message.0)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(id, sha256, kind, name, mime, size, surrogate)| AttachmentRecord {
                    id,
                    sha256,
                    kind,
                    name,
                    mime,
                    size,
                    surrogate,
                })
                .collect())
        }
    }

    impl Backend {
        /// `insert_with_attachments`, tried once.
        async fn insert_with_attachments_once(
            &self,
            attachments: &[NewAttachment],
            compose: Compose<'_>,
            replaced: &[MessageId],
        ) -> StoreResult<Stored> {
            let mut tx = self.write_tx().await?;
            delete_in(&mut tx, replaced).await?;
            let mut ids = Vec::with_capacity(attachments.len());
            for a in attachments {
                // A no-op update on a known hash, so its id is returned too.
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO attachments (scope, sha256, kind, name, mime, size, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                     ON CONFLICT (scope, sha256) DO UPDATE SET sha256 = excluded.sha256 RETURNING id",
                )
                .bind(a.scope.key())
                .bind(&a.sha256)
                .bind(&a.kind)
                .bind(&a.name)
                .bind(&a.mime)
                .bind(a.size)
                .bind(a.at.timestamp_millis())
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
                ids.push(id);
            }
            let (message, parts) = compose(&ids);
            let stored = insert_chunk(&mut tx, std::slice::from_ref(&message)).await?[0];
            let id = stored.id;
            insert_parts(&mut tx, id, &parts).await?;
            for a in &ids {
                sqlx::query(
                    "INSERT INTO message_attachments (message_id, attachment_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                )
                .bind(id.0)
                .bind(a)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            tx.commit().await.map_err(db_err)?;
            Ok(stored)
        }
    }

    /// Stores `parts` (pieces of attachment text) pointing at message `of`.
    async fn insert_parts(conn: &mut Conn, of: MessageId, parts: &[NewMessage]) -> StoreResult<()> {
        if parts.is_empty() {
            return Ok(());
        }
        let mut part_ids: Vec<i64> = Vec::with_capacity(parts.len());
        for chunk in parts.chunks(MESSAGE_CHUNK) {
            part_ids.extend(insert_chunk(&mut *conn, chunk).await?.into_iter().map(|m| m.id.0));
        }
        sqlx::query(concat!("UPDATE messages SET attachment_of = $1 WHERE id ", in_list!(2)))
            .bind(of.0)
            .bind(list(&part_ids))
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}
