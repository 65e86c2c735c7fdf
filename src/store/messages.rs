//! The messages themselves: storing them (with their search postings, in the same
//! transaction), reading a channel's recent history or a scope's chatter of a day, who spoke
//! where, and deleting messages with everything derived from them.

use super::rows::{from_ms, ms, parse_scope};
use super::{Change, StoreResult, document_terms_in};
use crate::domain::language::Language;
use crate::domain::{MessageId, PersonId, Platform, Privacy, Scope, SpaceId, StoredMessage};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::{BTreeMap, BTreeSet};

/// Storing, reading and deleting messages.
#[async_trait]
pub trait Messages: Send + Sync {
    /// Stores a message; storing the same (space, channel, external id) twice returns the first id.
    async fn insert_message(&self, msg: &NewMessage) -> StoreResult<Stored>;
    /// Stores the bot's reply `reply`, or `instead` when a forget was counted since `forgets`
    /// was read (`Identities::forgets_counted`, before the answer was made): the reply may
    /// show what is gone, and that forget may have looked for the bot's quotes of it before
    /// the reply was there. A forget counted later waits for this to commit (PostgreSQL: the
    /// count's row is held; SQLite writes one at a time), then finds the reply.
    async fn insert_reply(
        &self,
        reply: &NewMessage,
        instead: &NewMessage,
        forgets: i64,
    ) -> StoreResult<Stored>;
    /// In one transaction, the messages `replaced` go as `delete_messages` removes them and
    /// `msg` is stored: an edit is never lost between the old text going and the new one
    /// coming, and a failure keeps the old one.
    async fn replace_messages(
        &self,
        replaced: &[MessageId],
        msg: &NewMessage,
    ) -> StoreResult<Stored>;
    /// Stores many messages in one transaction (bulk import, benchmarks).
    async fn insert_messages(&self, msgs: &[NewMessage]) -> StoreResult<Vec<MessageId>>;
    /// The latest `limit` messages of a channel, oldest first; with `scope`, only those kept
    /// in it (a place's working memory: a channel id names no privacy boundary, its scope
    /// does).
    async fn recent_messages(
        &self,
        space: SpaceId,
        channel: &str,
        scope: Option<&Scope>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    /// Chatter (people's messages, not the bot's, not memory commands) of a scope in
    /// [from, to), oldest first, at most `limit` (the latest ones).
    async fn chatter_in_range(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    /// One author's chatter in a scope in [from, to), oldest first, at most `limit` (the latest).
    async fn author_chatter_in_range(
        &self,
        scope: &Scope,
        author: PersonId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreResult<Vec<StoredMessage>>;
    /// Last message id and count of the chatter of `scope` in [from, to).
    async fn chatter_stats(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<RangeStats>;
    /// A stored message by its platform id, in a space known by its platform id.
    /// Whether the bot has answered `message` (a reply to it is stored): a message the
    /// platform delivers again is then not answered twice.
    async fn answered(&self, message: &StoredMessage) -> StoreResult<bool>;

    /// `author`'s latest messages in `space` before `before` that have a language and are not
    /// withheld: (text, ISO 639-1 code), newest first, at most `limit` (what a "/memory …"
    /// of theirs is answered in; another space's, a private chat's, say nothing here).
    async fn recent_languages(
        &self,
        author: PersonId,
        space: SpaceId,
        before: MessageId,
        limit: usize,
    ) -> StoreResult<Vec<(String, String)>>;
    /// The message with this platform id in (platform, space, channel), for a platform's edit
    /// or delete event.
    async fn message_by_external(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel: &str,
        external_id: &str,
    ) -> StoreResult<Option<StoredMessage>>;
    /// The platform ids of every message kept from (platform, space, channel) but the pieces
    /// of files, oldest first: what a channel deleted on its platform took with it.
    async fn channel_message_ids(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel: &str,
    ) -> StoreResult<Vec<String>>;
    /// The channels of (platform, space) that kept messages were said in, in no order:
    /// those a platform may have deleted without a word (a Discord channel's threads).
    async fn channels_with_messages(
        &self,
        platform: Platform,
        space_external_id: &str,
    ) -> StoreResult<Vec<String>>;
    /// Forgets the cursor of (platform, space, channel) (`saw_message`): a channel deleted
    /// on its platform is not read again.
    async fn drop_cursor(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel: &str,
    ) -> StoreResult<()>;
    /// Keeps a tombstone for each of these platform messages in (platform, space, channel),
    /// deleted by the platform at `at`, so the same message stored afterwards (its creation
    /// or an edit on its way meanwhile) is known to be gone (`was_deleted`); tombstones
    /// older than `keep` go. Ids only: no text is kept.
    async fn mark_deleted(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel: &str,
        external_ids: &[String],
        at: DateTime<Utc>,
        keep: chrono::Duration,
    ) -> StoreResult<()>;
    /// Keeps a key of the platform ids of each of these stored messages (a SHA-256: nothing
    /// in it leads back to the message), forgotten on request at `at`, so the same message
    /// brought again by its platform (a delivery again, a catch-up after a restart) stays out
    /// (`was_forgotten`). Keys older than `keep` go.
    async fn keep_out(
        &self,
        ids: &[MessageId],
        at: DateTime<Utc>,
        keep: chrono::Duration,
    ) -> StoreResult<()>;
    /// Whether this message was forgotten on request since `since` (`keep_out`).
    async fn was_forgotten(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel: &str,
        external_id: &str,
        since: DateTime<Utc>,
    ) -> StoreResult<bool>;
    /// Whether the platform deleted this message (a tombstone of `mark_deleted` is kept).
    async fn was_deleted(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel: &str,
        external_id: &str,
    ) -> StoreResult<bool>;
    /// Notes that the platform message `external_id` (a number that grows with time, as
    /// Discord's ids do) of (platform, space, channel) was seen at `at`: the channel's cursor
    /// moves to it unless it is already past. Kept when messages are forgotten.
    async fn saw_message(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel: &str,
        external_id: i64,
        at: DateTime<Utc>,
    ) -> StoreResult<()>;
    /// The channels of `platform` with a message seen since `since`, each with the newest
    /// message seen there (`saw_message`).
    async fn channels_seen_since(
        &self,
        platform: Platform,
        since: DateTime<Utc>,
    ) -> StoreResult<Vec<ChannelCursor>>;
    /// People's messages of `platform` sent since `since`, not withheld, that carry a kept
    /// file of one of `kinds` (`image`, `voice`, `audio`): each with its text and the file's
    /// id, newest first (what a restart looks at for descriptions a stop cut off).
    async fn files_since(
        &self,
        platform: Platform,
        since: DateTime<Utc>,
        kinds: &[&str],
    ) -> StoreResult<Vec<MessageFile>>;
    /// Forgets the channels of `platform` not seen since `before` (`saw_message`).
    async fn drop_cursors_before(
        &self,
        platform: Platform,
        before: DateTime<Utc>,
    ) -> StoreResult<u64>;
    /// Id and text of every message `author` wrote, in `scopes` (every scope when `None`).
    async fn author_messages(
        &self,
        author: PersonId,
        scopes: Option<&[Scope]>,
    ) -> StoreResult<Vec<(MessageId, String)>>;
    /// The bot's messages that pass `filter` whose postings hold every one of `terms`, and
    /// those withheld (they have no postings): the candidates for a text the bot may have
    /// quoted. Each with the author of the message it answered.
    async fn bot_messages_with_terms(
        &self,
        filter: BotMessageFilter<'_>,
        terms: &[String],
    ) -> StoreResult<Vec<BotMessage>>;
    /// Deletes the earlier values of these entries of `person`, and the earlier versions of
    /// their facts in `fact_scopes` (the current text stays): what a forget found only in the
    /// history. Returns rows removed.
    async fn drop_history(
        &self,
        person: PersonId,
        entry_ids: &[i64],
        fact_scopes: &[Scope],
    ) -> StoreResult<u64>;
    /// Deletes messages, the bot's replies to them, and everything derived from them: their
    /// postings and scope statistics, vectors, their place in episodes (a closed episode is
    /// reopened, so its summary, vector, details and search keys are made again without
    /// them), the day summaries of their scopes and days and the history summaries that read
    /// those days, and the entries, daily notes and statements about others written from
    /// them. Other processes are told. Returns the messages deleted.
    async fn delete_messages(&self, ids: &[MessageId]) -> StoreResult<u64>;
    /// People (not bots) who wrote in [from, to), by id.
    async fn authors_in_range(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<PersonId>>;
    /// Scopes `author` wrote in during [from, to).
    async fn author_scopes(
        &self,
        author: PersonId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<Scope>>;
    /// Scopes with chatter in [from, to) (what a scheduled summary job has to cover).
    async fn active_scopes(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<Scope>>;
}

/// Where a message was stored, and whether it was new: a redelivered one (the same platform
/// id in the same channel) keeps the id it had and nothing is added again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Its id.
    pub id: MessageId,
    /// Stored now; false for a redelivery.
    pub new: bool,
}

/// A message to store, already resolved to internal ids by the ingestor.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// The space it was said in.
    pub space: SpaceId,
    /// The channel (or thread) within the space.
    pub channel: String,
    /// Who may read it (from the channel's privacy).
    pub scope: Scope,
    /// The channel's privacy level.
    pub privacy: Privacy,
    /// Who said it.
    pub author: PersonId,
    /// Said by the bot.
    pub is_bot: bool,
    /// A memory command addressed to the bot, not chatter: summaries skip it.
    pub is_command: bool,
    /// The platform's id of the message (unique per space and channel).
    pub external_id: String,
    /// What it replies to: a platform id, or a stored id for the bot's replies.
    pub reply_to: Option<String>,
    /// The text.
    pub text: String,
    /// The language of `text` (`language::detect` of it, or `detect_all` for a batch): the
    /// caller knows it or needs it too, so the store does not read the text a second time.
    pub language: Option<Language>,
    /// When it was sent.
    pub sent_at: DateTime<Utc>,
    /// Said while the author's memory was paused: kept in the history, but nothing is derived
    /// from it (no summaries, extraction, postings or vectors).
    pub withheld: bool,
}

/// A message of a platform channel by its ids: the newest seen there (`channels_seen_since`)
/// or one to fetch again (`files_since`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelCursor {
    /// The space's platform id (a guild, or "dm:<channel>").
    pub space_external_id: String,
    /// The channel's platform id.
    pub channel: String,
    /// The message's platform id.
    pub external_id: i64,
}

/// The key a message forgotten on request is kept out by: a SHA-256 of its platform ids.
pub fn forgotten_key(platform: &str, space: &str, channel: &str, external_id: &str) -> String {
    hex::encode(crate::domain::hash_parts(&[
        platform,
        space,
        channel,
        external_id,
    ]))
}

/// A message that carries a kept file (`files_since`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageFile {
    /// Where the message is, by its platform ids.
    pub at: ChannelCursor,
    /// Its stored text (with the file's line).
    pub text: String,
    /// The kept file's id.
    pub attachment: i64,
}

/// Last message id and count of the chatter of a scope within a time range: cheap change
/// detection for summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RangeStats {
    /// The highest message id (0 when none).
    pub last_message: i64,
    /// How many.
    pub count: i64,
}

/// Which of the bot's messages `Store::bot_messages_with_terms` looks at.
#[derive(Debug, Clone, Copy, Default)]
pub struct BotMessageFilter<'a> {
    /// Only in these scopes (every scope when None).
    pub scopes: Option<&'a [Scope]>,
    /// Only in this space.
    pub space: Option<SpaceId>,
    /// Only sent after this message (the bot cannot have quoted what did not exist yet).
    pub after: Option<MessageId>,
}

impl<'a> BotMessageFilter<'a> {
    /// Every bot message in `scopes` (all scopes when None).
    pub fn in_scopes(scopes: Option<&'a [Scope]>) -> BotMessageFilter<'a> {
        BotMessageFilter {
            scopes,
            ..BotMessageFilter::default()
        }
    }
}

/// A message of the bot's, with the author of the message it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotMessage {
    /// The bot's message.
    pub id: MessageId,
    /// Its text.
    pub text: String,
    /// Who wrote the message it answered.
    pub answered: Option<PersonId>,
}

on_both_backends! {
    #[async_trait]
    impl Messages for Backend {
        async fn insert_message(&self, msg: &NewMessage) -> StoreResult<Stored> {
            // The message and its postings commit together, so it is searchable once stored.
            crate::telemetry::timed("insert_message", async {
                let mut tx = self.write_tx().await?;
                let id = insert_chunk(&mut tx, std::slice::from_ref(msg)).await?[0];
                tx.commit().await.map_err(db_err)?;
                Ok(id)
            })
            .await
        }

        async fn insert_reply(
            &self,
            reply: &NewMessage,
            instead: &NewMessage,
            forgets: i64,
        ) -> StoreResult<Stored> {
            // A message stored, as `insert_message` (one name for the two in the metrics).
            crate::telemetry::timed("insert_message", async {
                let mut tx = self.write_tx().await?;
                let now: i64 = sqlx::query_scalar(per_dialect!(
                    sqlite: "SELECT n FROM forget_count WHERE id = 1",
                    postgres: "SELECT n FROM forget_count WHERE id = 1 FOR SHARE",
                ))
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
                let kept = if now == forgets { reply } else { instead };
                let id = insert_chunk(&mut tx, std::slice::from_ref(kept)).await?[0];
                tx.commit().await.map_err(db_err)?;
                Ok(id)
            })
            .await
        }

        async fn replace_messages(
            &self,
            replaced: &[MessageId],
            msg: &NewMessage,
        ) -> StoreResult<Stored> {
            crate::store::again_if_aborted(|| async {
                let mut tx = self.write_tx().await?;
                delete_in(&mut tx, replaced).await?;
                let id = insert_chunk(&mut tx, std::slice::from_ref(msg)).await?[0];
                tx.commit().await.map_err(db_err)?;
                Ok(id)
            })
            .await
        }

        async fn insert_messages(&self, msgs: &[NewMessage]) -> StoreResult<Vec<MessageId>> {
            let mut tx = self.write_tx().await?;
            let mut ids = Vec::with_capacity(msgs.len());
            for chunk in msgs.chunks(MESSAGE_CHUNK) {
                ids.extend(insert_chunk(&mut tx, chunk).await?.into_iter().map(|s| s.id));
            }
            tx.commit().await.map_err(db_err)?;
            Ok(ids)
        }

        async fn recent_messages(
            &self,
            space: SpaceId,
            channel: &str,
            scope: Option<&Scope>,
            limit: usize,
        ) -> StoreResult<Vec<StoredMessage>> {
            let rows = sqlx::query(concat!(
                "SELECT * FROM (SELECT ",
                message_columns!(),
                " FROM messages m",
                indexed_by!("messages_by_channel_time"),
                " JOIN people p ON p.id = m.author_id \
                 WHERE m.space_id = $1 AND m.channel = $2 AND (CAST($4 AS TEXT) IS NULL OR m.scope = $4) \
                 AND m.attachment_of IS NULL ORDER BY m.sent_at DESC, m.id DESC LIMIT $3) t ORDER BY sent_at, id"
            ))
                .bind(space.0)
                .bind(channel)
                .bind(limit as i64)
                .bind(scope.map(Scope::key))
                .fetch_all(self.pool())
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
            let (last, count): (Option<i64>, i64) = sqlx::query_as(
                concat!("SELECT MAX(id), COUNT(*) FROM messages", indexed_by!("messages_by_scope_time"), " WHERE scope = $1 AND sent_at >= $2 AND sent_at < $3 AND NOT is_bot AND NOT is_command AND NOT withheld"),
            )
            .bind(scope.key())
            .bind(ms(from))
            .bind(ms(to))
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
            Ok(RangeStats {
                last_message: last.unwrap_or(0),
                count,
            })
        }

        async fn recent_languages(
            &self,
            author: PersonId,
            space: SpaceId,
            before: MessageId,
            limit: usize,
        ) -> StoreResult<Vec<(String, String)>> {
            sqlx::query_as(
                "SELECT text, language FROM messages WHERE author_id = $1 AND space_id = $2 AND id < $3 AND language IS NOT NULL AND NOT withheld ORDER BY id DESC LIMIT $4",
            )
            .bind(author.0)
            .bind(space.0)
            .bind(before.0)
            .bind(limit as i64)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
        }

        async fn answered(&self, message: &StoredMessage) -> StoreResult<bool> {
            sqlx::query_scalar::<_, bool>(
                concat!(
                    "SELECT EXISTS (SELECT 1 FROM messages",
                    indexed_by!("messages_by_reply_to"),
                    " WHERE space_id = $1 AND channel = $2 AND sent_at >= $3 AND is_bot AND reply_to = $4 AND id > $5)"
                ),
            )
            .bind(message.space.0)
            .bind(&message.channel)
            .bind(ms(message.sent_at))
            .bind(message.id.0.to_string())
            .bind(message.id.0)
            .fetch_one(self.pool())
            .await
            .map_err(db_err)
        }

        async fn message_by_external(
            &self,
            platform: Platform,
            space_external_id: &str,
            channel: &str,
            external_id: &str,
        ) -> StoreResult<Option<StoredMessage>> {
            let row = sqlx::query(concat!(
                "SELECT ",
                message_columns!(),
                " FROM messages m JOIN people p ON p.id = m.author_id JOIN spaces s ON s.id = m.space_id \
                 WHERE s.platform = $1 AND s.external_id = $2 AND m.channel = $3 AND m.external_id = $4"
            ))
                .bind(platform.as_str())
                .bind(space_external_id)
                .bind(channel)
                .bind(external_id)
                .fetch_optional(self.pool())
                .await
                .map_err(db_err)?;
            row.as_ref().map(message_from_row).transpose()
        }

        async fn channel_message_ids(
            &self,
            platform: Platform,
            space_external_id: &str,
            channel: &str,
        ) -> StoreResult<Vec<String>> {
            sqlx::query_scalar(
                "SELECT m.external_id FROM messages m JOIN spaces s ON s.id = m.space_id \
                 WHERE s.platform = $1 AND s.external_id = $2 AND m.channel = $3 AND m.attachment_of IS NULL \
                 ORDER BY m.id",
            )
            .bind(platform.as_str())
            .bind(space_external_id)
            .bind(channel)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
        }

        async fn channels_with_messages(
            &self,
            platform: Platform,
            space_external_id: &str,
        ) -> StoreResult<Vec<String>> {
            sqlx::query_scalar(concat!(
                "SELECT DISTINCT m.channel FROM messages m",
                indexed_by!("messages_by_channel_time"),
                " JOIN spaces s ON s.id = m.space_id WHERE s.platform = $1 AND s.external_id = $2"
            ))
            .bind(platform.as_str())
            .bind(space_external_id)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
        }

        async fn drop_cursor(
            &self,
            platform: Platform,
            space_external_id: &str,
            channel: &str,
        ) -> StoreResult<()> {
            sqlx::query(
                "DELETE FROM channel_cursors WHERE platform = $1 AND space_external_id = $2 AND channel = $3",
            )
            .bind(platform.as_str())
            .bind(space_external_id)
            .bind(channel)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            Ok(())
        }

        async fn mark_deleted(
            &self,
            platform: Platform,
            space_external_id: &str,
            channel: &str,
            external_ids: &[String],
            at: DateTime<Utc>,
            keep: chrono::Duration,
        ) -> StoreResult<()> {
            // In one order, so two overlapping bulk deletes never wait on each other.
            let ids: BTreeSet<&String> = external_ids.iter().collect();
            let mut tx = self.write_tx().await?;
            for id in ids {
                sqlx::query(
                    "INSERT INTO deleted_messages (platform, space_external_id, channel, external_id, deleted_at) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (platform, space_external_id, channel, external_id) \
                     DO UPDATE SET deleted_at = excluded.deleted_at",
                )
                .bind(platform.as_str())
                .bind(space_external_id)
                .bind(channel)
                .bind(id)
                .bind(ms(at))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            sqlx::query("DELETE FROM deleted_messages WHERE deleted_at < $1")
                .bind(ms(at - keep))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)
        }

        async fn keep_out(
            &self,
            ids: &[MessageId],
            at: DateTime<Utc>,
            keep: chrono::Duration,
        ) -> StoreResult<()> {
            if ids.is_empty() {
                return Ok(());
            }
            let asked: Vec<i64> = ids.iter().map(|m| m.0).collect();
            let rows: Vec<(String, String, String, String)> = sqlx::query_as(concat!(
                "SELECT s.platform, s.external_id, m.channel, m.external_id FROM messages m \
                 JOIN spaces s ON s.id = m.space_id WHERE m.id ",
                in_list!(1)
            ))
            .bind(list(&asked))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            // In one order, so two overlapping forgets never wait on each other.
            let keys: BTreeSet<String> = rows
                .iter()
                .map(|(p, s, c, e)| forgotten_key(p, s, c, e))
                .collect();
            let mut tx = self.write_tx().await?;
            for key in keys {
                sqlx::query(
                    "INSERT INTO forgotten_messages (key, forgotten_at) VALUES ($1, $2) \
                     ON CONFLICT (key) DO UPDATE SET forgotten_at = excluded.forgotten_at",
                )
                .bind(key)
                .bind(ms(at))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            sqlx::query("DELETE FROM forgotten_messages WHERE forgotten_at < $1")
                .bind(ms(at - keep))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)
        }

        async fn was_forgotten(
            &self,
            platform: Platform,
            space_external_id: &str,
            channel: &str,
            external_id: &str,
            since: DateTime<Utc>,
        ) -> StoreResult<bool> {
            let key = forgotten_key(platform.as_str(), space_external_id, channel, external_id);
            let found: Option<i64> = sqlx::query_scalar(
                "SELECT forgotten_at FROM forgotten_messages WHERE key = $1 AND forgotten_at >= $2",
            )
            .bind(key)
            .bind(ms(since))
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            Ok(found.is_some())
        }

        async fn was_deleted(
            &self,
            platform: Platform,
            space_external_id: &str,
            channel: &str,
            external_id: &str,
        ) -> StoreResult<bool> {
            let found: Option<i64> = sqlx::query_scalar(
                "SELECT deleted_at FROM deleted_messages WHERE platform = $1 AND space_external_id = $2 \
                 AND channel = $3 AND external_id = $4",
            )
            .bind(platform.as_str())
            .bind(space_external_id)
            .bind(channel)
            .bind(external_id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            Ok(found.is_some())
        }

        async fn saw_message(
            &self,
            platform: Platform,
            space_external_id: &str,
            channel: &str,
            external_id: i64,
            at: DateTime<Utc>,
        ) -> StoreResult<()> {
            sqlx::query(
                "INSERT INTO channel_cursors (platform, space_external_id, channel, seen_through, seen_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (platform, space_external_id, channel) DO UPDATE SET \
                 seen_through = CASE WHEN excluded.seen_through > channel_cursors.seen_through \
                 THEN excluded.seen_through ELSE channel_cursors.seen_through END, \
                 seen_at = CASE WHEN excluded.seen_at > channel_cursors.seen_at \
                 THEN excluded.seen_at ELSE channel_cursors.seen_at END",
            )
            .bind(platform.as_str())
            .bind(space_external_id)
            .bind(channel)
            .bind(external_id)
            .bind(ms(at))
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            Ok(())
        }

        async fn channels_seen_since(
            &self,
            platform: Platform,
            since: DateTime<Utc>,
        ) -> StoreResult<Vec<ChannelCursor>> {
            let rows: Vec<(String, String, i64)> = sqlx::query_as(
                "SELECT space_external_id, channel, seen_through FROM channel_cursors \
                 WHERE platform = $1 AND seen_at >= $2 ORDER BY space_external_id, channel",
            )
            .bind(platform.as_str())
            .bind(ms(since))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(space_external_id, channel, external_id)| ChannelCursor {
                    space_external_id,
                    channel,
                    external_id,
                })
                .collect())
        }

        async fn files_since(
            &self,
            platform: Platform,
            since: DateTime<Utc>,
            kinds: &[&str],
        ) -> StoreResult<Vec<MessageFile>> {
            let rows: Vec<(String, String, String, String, i64, String)> = sqlx::query_as(
                "SELECT s.external_id, m.channel, m.external_id, m.text, a.id, a.kind FROM messages m \
                 JOIN spaces s ON s.id = m.space_id \
                 JOIN message_attachments ma ON ma.message_id = m.id \
                 JOIN attachments a ON a.id = ma.attachment_id \
                 WHERE s.platform = $1 AND m.sent_at >= $2 AND NOT m.withheld AND NOT m.is_bot \
                 ORDER BY m.id DESC, a.id",
            )
            .bind(platform.as_str())
            .bind(ms(since))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .filter(|r| kinds.contains(&r.5.as_str()))
                .filter_map(|(space_external_id, channel, id, text, attachment, _)| {
                    Some(MessageFile {
                        at: ChannelCursor {
                            space_external_id,
                            channel,
                            external_id: id.parse().ok()?,
                        },
                        text,
                        attachment,
                    })
                })
                .collect())
        }

        async fn drop_cursors_before(
            &self,
            platform: Platform,
            before: DateTime<Utc>,
        ) -> StoreResult<u64> {
            let done = sqlx::query("DELETE FROM channel_cursors WHERE platform = $1 AND seen_at < $2")
                .bind(platform.as_str())
                .bind(ms(before))
                .execute(self.pool())
                .await
                .map_err(db_err)?;
            Ok(done.rows_affected())
        }

        async fn author_messages(
            &self,
            author: PersonId,
            scopes: Option<&[Scope]>,
        ) -> StoreResult<Vec<(MessageId, String)>> {
            let keys: Option<Vec<String>> = scopes.map(|s| s.iter().map(Scope::key).collect());
            let rows: Vec<(i64, String)> = sqlx::query_as(
                concat!("SELECT id, text FROM messages WHERE author_id = $1 AND ", in_list_or_all!("scope", 2), " ORDER BY id"),
            )
            .bind(author.0)
            .bind(keys.as_deref().map(list))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(id, text)| (MessageId(id), text))
                .collect())
        }

        async fn bot_messages_with_terms(
            &self,
            bots: BotMessageFilter<'_>,
            terms: &[String],
        ) -> StoreResult<Vec<BotMessage>> {
            if terms.is_empty() {
                return Ok(Vec::new());
            }
            let keys: Option<Vec<String>> = bots.scopes.map(|s| s.iter().map(Scope::key).collect());
            // A bot reply's reply_to is the id of the message it answers, as text. The messages
            // are read from the postings of the terms and the index of the bot's withheld ones
            // (which have none): an OR of the two read every message of the database.
            macro_rules! bot_messages {
                ($postings:expr, $withheld:expr) => {
                    concat!(
                        "SELECT m.id, m.text, r.author_id FROM messages m LEFT JOIN messages r ON r.id = ",
                        reply_to_id!("m"),
                        " WHERE m.id IN (SELECT t.message_id FROM message_terms t WHERE ",
                        $postings,
                        " GROUP BY t.message_id HAVING COUNT(DISTINCT t.term) = $3 \
                          UNION SELECT w.id FROM messages w WHERE w.is_bot AND w.withheld AND ",
                        $withheld,
                        ") AND m.is_bot AND (CAST($4 AS BIGINT) IS NULL OR m.space_id = $4) AND m.id > $5 ORDER BY m.id"
                    )
                };
            }
            let sql = match keys {
                Some(_) => bot_messages!(terms_in_scopes!("t", 1, 2), concat!("w.scope ", in_list!(2))),
                None => bot_messages!(
                    concat!("t.term ", in_list!(1), " AND ", in_list_or_all!("t.scope", 2)),
                    in_list_or_all!("w.scope", 2)
                ),
            };
            let rows: Vec<(i64, String, Option<i64>)> = sqlx::query_as(sql)
            .bind(list(terms))
            .bind(keys.as_deref().map(list))
            .bind(terms.len() as i64)
            .bind(bots.space.map(|s| s.0))
            .bind(bots.after.map_or(0, |m| m.0))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(id, text, answered)| BotMessage {
                    id: MessageId(id),
                    text,
                    answered: answered.map(PersonId),
                })
                .collect())
        }

        async fn drop_history(
            &self,
            person: PersonId,
            entry_ids: &[i64],
            fact_scopes: &[Scope],
        ) -> StoreResult<u64> {
            let mut tx = self.write_tx().await?;
            let mut removed = drop_entry_history(&mut tx, person, entry_ids).await?;
            let keys: Vec<String> = fact_scopes.iter().map(Scope::key).collect();
            removed += sqlx::query(
                concat!(
                    "DELETE FROM fact_versions AS v WHERE v.person_id = $1 AND v.scope ",
                    in_list!(2),
                    " AND v.version < COALESCE((SELECT f.version FROM facts f WHERE f.person_id = v.person_id AND f.scope = v.scope), 0)"
                ),
            )
            .bind(person.0)
            .bind(list(&keys))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            tx.commit().await.map_err(db_err)?;
            Ok(removed)
        }

        async fn delete_messages(&self, ids: &[MessageId]) -> StoreResult<u64> {
            crate::store::again_if_aborted(|| self.delete_messages_once(ids)).await
        }

        async fn authors_in_range(
            &self,
            from: DateTime<Utc>,
            to: DateTime<Utc>,
        ) -> StoreResult<Vec<PersonId>> {
            let ids: Vec<i64> = sqlx::query_scalar(
                "SELECT DISTINCT author_id FROM messages WHERE sent_at >= $1 AND sent_at < $2 AND NOT is_bot AND NOT is_command AND NOT withheld ORDER BY author_id",
            )
            .bind(ms(from))
            .bind(ms(to))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(ids.into_iter().map(PersonId).collect())
        }

        async fn author_scopes(
            &self,
            author: PersonId,
            from: DateTime<Utc>,
            to: DateTime<Utc>,
        ) -> StoreResult<Vec<Scope>> {
            let keys: Vec<String> = sqlx::query_scalar(
                "SELECT DISTINCT scope FROM messages WHERE author_id = $1 AND sent_at >= $2 AND sent_at < $3 AND NOT is_bot AND NOT is_command AND NOT withheld ORDER BY scope",
            )
            .bind(author.0)
            .bind(ms(from))
            .bind(ms(to))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            keys.iter().map(|k| parse_scope(k)).collect()
        }

        async fn active_scopes(
            &self,
            from: DateTime<Utc>,
            to: DateTime<Utc>,
        ) -> StoreResult<Vec<Scope>> {
            let keys: Vec<String> = sqlx::query_scalar(
                "SELECT DISTINCT scope FROM messages WHERE sent_at >= $1 AND sent_at < $2 AND NOT is_bot AND NOT is_command AND NOT withheld ORDER BY scope",
            )
            .bind(ms(from))
            .bind(ms(to))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            keys.iter().map(|k| parse_scope(k)).collect()
        }
    }

    /// The postings of forgotten messages, and their part of the scopes' statistics.
    async fn unpost(conn: &mut Conn, plan: &ForgetPlan) -> StoreResult<()> {
        // Per scope, the documents and length that leave: the statistics rows are updated
        // after, in scope order, as `write_postings` takes them (so a forget across scopes
        // and a batch of postings across scopes never wait for each other in a ring).
        let mut leaving: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        for (id, scope, terms, len) in &plan.postings {
            let removed = sqlx::query(
                concat!("DELETE FROM message_terms WHERE term ", in_list!(1), " AND scope = $2 AND message_id = $3"),
            )
            .bind(list(terms))
            .bind(scope)
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?
            .rows_affected();
            if removed > 0 {
                let e = leaving.entry(scope.as_str()).or_default();
                e.0 += 1;
                e.1 += len;
            }
        }
        for (scope, (docs, len)) in leaving {
            sqlx::query("UPDATE scope_term_stats SET docs = docs - $1, total_len = total_len - $2 WHERE scope = $3")
                .bind(docs)
                .bind(len)
                .bind(scope)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Forgotten messages leave their episodes: a closed one reopens (its summary, vector,
    /// details and their search keys are made again without them), an open one loses its
    /// working memory (made again at the next refresh), an emptied one goes.
    async fn shrink_episodes(conn: &mut Conn, plan: &ForgetPlan) -> StoreResult<()> {
        for (episode, (count, len)) in &plan.episodes {
            // The details' search keys were made from them too: they go, out of the length.
            // Locked: keys written meanwhile (PostgreSQL) are counted out as they are.
            let keys_len: Option<i64> = sqlx::query_scalar(concat!(
                "SELECT COALESCE(keys_len, 0) FROM episodes WHERE id = $1",
                for_update!()
            ))
            .bind(episode)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_err)?;
            let out_of_scope = len + keys_len.unwrap_or(0);
            let left: Option<(String, i32)> = sqlx::query_as(
                "UPDATE episodes SET messages = messages - $1, total_len = total_len - $2, closed = false, summary = NULL, embedding = NULL, embedding_space = NULL, \
                 running_summary = NULL, open_loops = NULL, details = NULL, keys_len = NULL, closing_parts = NULL, summarized_messages = 0, summarized_len = 0, \
                 summarized_through = NULL WHERE id = $3 RETURNING scope, messages",
            )
            .bind(*count as i32)
            .bind(len)
            .bind(episode)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_err)?;
            let Some((scope, left)) = left else { continue };
            drop_episode_keys(&mut *conn, *episode).await?;
            add_episode_length(&mut *conn, &scope, -out_of_scope).await?;
            if left <= 0 {
                drop_episode(&mut *conn, *episode, &scope).await?;
            }
        }
        Ok(())
    }

    /// The day summaries that read forgotten messages, and the history summaries that read
    /// those days.
    async fn drop_summaries(conn: &mut Conn, plan: &ForgetPlan, forgets: bool) -> StoreResult<()> {
        // A forget is counted first: a summary made from what was read before keeps out
        // (`epoch_holds`). A text that only grew (a file's description) removes nothing.
        let scopes: BTreeSet<&String> = if forgets {
            let days = plan.days.iter().map(|(scope, _)| scope);
            days.chain(plan.first_days.keys()).collect()
        } else {
            BTreeSet::new()
        };
        for scope in scopes {
            sqlx::query(
                "INSERT INTO summary_epochs (scope, epoch) VALUES ($1, 1) \
                 ON CONFLICT (scope) DO UPDATE SET epoch = summary_epochs.epoch + 1",
            )
            .bind(scope)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        }
        for (scope, day) in &plan.days {
            sqlx::query("DELETE FROM day_summaries WHERE scope = $1 AND day = $2")
                .bind(scope)
                .bind(day.to_string())
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
        }
        for (scope, day) in &plan.first_days {
            sqlx::query("DELETE FROM history_summaries WHERE scope = $1 AND end_day >= $2")
                .bind(scope)
                .bind(day.to_string())
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// What was written from the messages `all`: entries, notes, statements about others, vectors;
    /// fact versions keep their text but no longer point at them.
    async fn drop_derived(conn: &mut Conn, all: &[i64]) -> StoreResult<()> {
        let sources: Vec<String> = all.iter().map(|id| format!("message:{id}")).collect();
        // Whose entries go: what unfinished closes of their episodes came to goes too.
        let owners: Vec<i64> = sqlx::query_scalar(concat!(
            "SELECT DISTINCT person_id FROM memory_entries WHERE source ",
            in_list!(1)
        ))
        .bind(list(&sources))
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
        for person in owners {
            drop_closing_parts(&mut *conn, person).await?;
        }
        for sql in [
            concat!(
                "DELETE FROM memory_entry_history WHERE entry_id IN (SELECT id FROM memory_entries WHERE source ",
                in_list!(1),
                ")"
            ),
            concat!("DELETE FROM memory_entries WHERE source ", in_list!(1)),
            // What they wrote that something else replaced since.
            concat!("DELETE FROM memory_entry_history WHERE source ", in_list!(1)),
            concat!("DELETE FROM daily_notes WHERE source ", in_list!(1)),
        ] {
            sqlx::query(sql)
                .bind(list(&sources))
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
        }
        // A piece of what was made of a file (a transcript's end, an image's text) that goes
        // takes the description kept for the file's bytes, which holds it too and would give
        // it back when the same file comes again (it is made afresh then).
        sqlx::query(concat!(
            "UPDATE attachments SET surrogate = NULL WHERE surrogate IS NOT NULL AND id IN \
             (SELECT ma.attachment_id FROM message_attachments ma JOIN messages p ON p.attachment_of = ma.message_id \
             WHERE p.id ",
            in_list!(1),
            ")"
        ))
        .bind(list(all))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        // An attachment no message carries any more goes too.
        let carried: Vec<i64> = sqlx::query_scalar(concat!(
            "SELECT attachment_id FROM message_attachments WHERE message_id ",
            in_list!(1)
        ))
        .bind(list(all))
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
        sqlx::query(concat!("DELETE FROM message_attachments WHERE message_id ", in_list!(1)))
            .bind(list(all))
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        sqlx::query(concat!(
            "DELETE FROM attachments WHERE id ",
            in_list!(1),
            " AND NOT EXISTS (SELECT 1 FROM message_attachments ma WHERE ma.attachment_id = attachments.id)"
        ))
        .bind(list(&carried))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        forget_vectors(&mut *conn, all).await?;
        // Another message's vector made with one of these as context is made again without it.
        forget_context_vectors(&mut *conn, all).await?;
        for sql in [
            concat!("DELETE FROM vector_backlog WHERE message_id ", in_list!(1)),
            concat!("DELETE FROM hearsay WHERE source_message_id ", in_list!(1)),
            concat!("UPDATE fact_versions SET source_message_id = NULL WHERE source_message_id ", in_list!(1)),
            concat!("DELETE FROM message_terms_backlog WHERE message_id ", in_list!(1)),
        ] {
            sqlx::query(sql)
                .bind(list(all))
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Of messages `ids`, those whose postings still wait in `message_terms_backlog`, locked:
    /// a worker writing queued postings (PostgreSQL: `SKIP LOCKED`) that took one of them
    /// finishes first, and its postings are then in `message_terms` for the caller to see.
    async fn lock_queued_postings(conn: &mut Conn, ids: &[i64]) -> StoreResult<Vec<i64>> {
        sqlx::query_scalar(concat!(
            "SELECT message_id FROM message_terms_backlog WHERE message_id ",
            in_list!(1),
            for_update!()
        ))
        .bind(list(ids))
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)
    }

    /// Message `id`'s text (and language) becomes what `rewrite` makes of it (None: it stays), and what was
    /// derived from the old text follows: its postings are written again (unless they wait
    /// in `message_terms_backlog`, which reads the new text), its vector and those made with
    /// it as context wait to be made again, its episode reopens with its new length (a running
    /// summary that read it counts it as new again, to read it at the next refresh), and the
    /// summaries that read its day go. The text now stored; None when the message is gone.
    pub(in crate::store) async fn rewrite_text(
        conn: &mut Conn,
        id: MessageId,
        rewrite: crate::store::Rewrite<'_>,
    ) -> StoreResult<Option<String>> {
        let row: Option<MessageRow> = sqlx::query_as(concat!(
            "SELECT id, scope, sent_at, episode_id, text, withheld, language FROM messages WHERE id = $1",
            for_update!()
        ))
        .bind(id.0)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        let Some(row) = row else { return Ok(None) };
        let Some((text, language)) = rewrite(&row.4).filter(|(t, _)| *t != row.4) else {
            return Ok(Some(row.4));
        };
        let (scope, episode, withheld) = (row.1.clone(), row.3, row.5);
        let plan = forget_plan(std::slice::from_ref(&row))?;
        // Then they are the old text's, taken out below.
        let queued = lock_queued_postings(&mut *conn, &[id.0]).await?.first().copied();
        sqlx::query("UPDATE messages SET text = $1, language = $2 WHERE id = $3")
            .bind(&text)
            .bind(language.map(|l| l.code()))
            .bind(id.0)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        if !withheld && queued.is_none() {
            unpost(&mut *conn, &plan).await?;
            write_postings(&mut *conn, &[(id.0, scope.clone(), text.clone(), language)]).await?;
        }
        if let Some(episode) = episode {
            let old_len = plan.episodes.get(&episode).map_or(0, |e| e.1);
            let delta = document_terms_in(&text, language).len as i64 - old_len;
            // A running summary made from the old text reads it again as one new message at
            // the next refresh (the summary reads only what came after `summarized_through`).
            sqlx::query(concat!(
                "UPDATE episodes SET total_len = total_len + $1, closed = false, summary = NULL, embedding = NULL, embedding_space = NULL, \
                 summarized_messages = CASE WHEN summarized_through >= $3 THEN ",
                greatest!("summarized_messages - 1", "0"),
                " ELSE summarized_messages END, \
                 summarized_through = CASE WHEN summarized_through >= $3 THEN $3 - 1 ELSE summarized_through END \
                 WHERE id = $2",
            ))
            .bind(delta)
            .bind(episode)
            .bind(id.0)
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
            add_episode_length(&mut *conn, &scope, delta).await?;
        }
        drop_summaries(&mut *conn, &plan, false).await?;
        // Embedded already (the indexer took it): made again from the new text.
        sqlx::query(
            "INSERT INTO vector_backlog (message_id) SELECT DISTINCT message_id FROM message_vectors \
             WHERE message_id = $1 ON CONFLICT DO NOTHING",
        )
        .bind(id.0)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        forget_vectors(&mut *conn, &[id.0]).await?;
        forget_context_vectors(&mut *conn, &[id.0]).await?;
        Ok(Some(text))
    }

    /// Deletes the history of `person`'s entries `ids`; the rows deleted.
    pub(in crate::store) async fn drop_entry_history(
        conn: &mut Conn,
        person: PersonId,
        ids: &[i64],
    ) -> StoreResult<u64> {
        Ok(sqlx::query(concat!(
            "DELETE FROM memory_entry_history WHERE person_id = $1 AND entry_id ",
            in_list!(2)
        ))
        .bind(person.0)
        .bind(list(ids))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?
        .rows_affected())
    }

    /// `delete_messages` inside a write transaction (`replace_messages` stores in the same
    /// one).
    pub(in crate::store) async fn delete_in(conn: &mut Conn, ids: &[MessageId]) -> StoreResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let asked: Vec<i64> = ids.iter().map(|m| m.0).collect();
        // The asked messages locked first: a write that adds to them (the pieces of an
        // attachment's description) commits before the read below, which then sees it
        // (PostgreSQL reads each statement's own snapshot; SQLite writes one at a time).
        sqlx::query(concat!("SELECT id FROM messages WHERE id ", in_list!(1), for_update!()))
            .bind(list(&asked))
            .fetch_all(&mut *conn)
            .await
            .map_err(db_err)?;
        let as_text: Vec<String> = asked.iter().map(i64::to_string).collect();
        // The bot's replies to these messages and the text of their attachments go with them.
        // Each of the three read through its own index: SQLite served the OR of them by reading
        // every message of the database (20 ms at 30,000), and PostgreSQL, which combines the
        // indexes itself, allows no FOR UPDATE on a UNION.
        macro_rules! going {
            ($which:literal) => {
                concat!("SELECT id, scope, sent_at, episode_id, text, withheld, language FROM messages", $which)
            };
        }
        let rows: Vec<MessageRow> = sqlx::query_as(per_dialect!(
            sqlite: concat!(
                going!(" WHERE id "),
                in_list!(1),
                " UNION ",
                going!(" WHERE is_bot AND reply_to "),
                in_list!(2),
                " UNION ",
                going!(" INDEXED BY messages_by_attachment_of WHERE attachment_of "),
                in_list!(3)
            ),
            postgres: concat!(
                going!(" WHERE id "),
                in_list!(1),
                " OR (is_bot AND reply_to ",
                in_list!(2),
                ") OR attachment_of ",
                in_list!(3),
                for_update!()
            ),
        ))
        .bind(list(&asked))
        .bind(list(&as_text))
        .bind(list(&asked))
        .fetch_all(&mut *conn)
        .await
        .map_err(db_err)?;
        // What was written from an asked message goes even when the message itself is gone
        // already (a write that raced a forget).
        let mut all: Vec<i64> = rows.iter().map(|r| r.0).chain(asked.iter().copied()).collect();
        all.sort_unstable();
        all.dedup();
        let plan = forget_plan(&rows)?;
        // Postings being written from the queue are written before they are taken out.
        lock_queued_postings(&mut *conn, &all).await?;
        unpost(&mut *conn, &plan).await?;
        shrink_episodes(&mut *conn, &plan).await?;
        drop_summaries(&mut *conn, &plan, true).await?;
        drop_derived(&mut *conn, &all).await?;
        let deleted = sqlx::query(concat!("DELETE FROM messages WHERE id ", in_list!(1)))
            .bind(list(&all))
            .execute(&mut *conn)
            .await
            .map_err(db_err)?
            .rows_affected();
        // Other processes drop whatever they cached from these messages, at commit.
        changed(&mut *conn, &Change::Forgotten).await?;
        Ok(deleted)
    }

    impl Backend {
        /// `delete_messages`, tried once.
        async fn delete_messages_once(&self, ids: &[MessageId]) -> StoreResult<u64> {
            if ids.is_empty() {
                return Ok(0);
            }
            let mut tx = self.write_tx().await?;
            let deleted = delete_in(&mut tx, ids).await?;
            tx.commit().await.map_err(db_err)?;
            Ok(deleted)
        }

        async fn chatter(
            &self,
            scope: &Scope,
            author: Option<PersonId>,
            from: DateTime<Utc>,
            to: DateTime<Utc>,
            limit: usize,
        ) -> StoreResult<Vec<StoredMessage>> {
            // SQLite's planner likes any index that avoids the sort (time only, or scope only for a
            // quiet author) and then scans a whole range; the index that matches the filter is
            // named (`indexed_by!`).
            macro_rules! chatter_of {
                ($index:literal, $author:literal) => {
                    concat!(
                        "SELECT * FROM (SELECT ",
                        message_columns!(),
                        " FROM messages m",
                        indexed_by!($index),
                        " JOIN people p ON p.id = m.author_id WHERE m.scope = $1 AND ",
                        $author,
                        " AND m.sent_at >= $3 AND m.sent_at < $4 AND NOT m.is_bot AND NOT m.is_command AND NOT m.withheld \
                         ORDER BY m.sent_at DESC, m.id DESC LIMIT $5) t ORDER BY sent_at, id"
                    )
                };
            }
            let sql = match author {
                Some(_) => chatter_of!("messages_by_scope_author_time", "m.author_id = $2"),
                None => chatter_of!("messages_by_scope_time", "CAST($2 AS BIGINT) IS NULL"),
            };
            let rows = sqlx::query(sql)
                .bind(scope.key())
                .bind(author.map(|a| a.0))
                .bind(ms(from))
                .bind(ms(to))
                .bind(limit as i64)
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
            rows.iter().map(message_from_row).collect()
        }
    }

    /// Records the detected languages of messages (id, ISO 639-1 code).
    pub(in crate::store) async fn set_languages(
        conn: &mut Conn,
        detected: &[(i64, &'static str)],
    ) -> StoreResult<()> {
        for (id, code) in detected {
            sqlx::query("UPDATE messages SET language = $1 WHERE id = $2")
                .bind(*code)
                .bind(*id)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Stores `chunk` with one multi-row INSERT; ids are matched back by each row's unique key,
    /// and a message stored before (a redelivery) keeps its id.
    pub(in crate::store) async fn insert_chunk(
        conn: &mut Conn,
        chunk: &[NewMessage],
    ) -> StoreResult<Vec<Stored>> {
        let mut ids = Vec::with_capacity(chunk.len());
        let rows = insert_rows(conn, chunk).await?;
        let inserted: std::collections::HashMap<(i64, String, String), i64> = rows
            .into_iter()
            .map(|(id, s, c, e)| ((s, c, e), id))
            .collect();
        let mut fresh: Vec<Indexable> = Vec::with_capacity(inserted.len());
        for m in chunk {
            match inserted.get(&(m.space.0, m.channel.clone(), m.external_id.clone())) {
                Some(id) => {
                    ids.push(Stored {
                        id: MessageId(*id),
                        new: true,
                    });
                    // Nothing is derived from a withheld message: it is not searchable.
                    if !m.withheld {
                        fresh.push((*id, m.scope.key(), m.text.clone(), m.language));
                    }
                }
                // Already stored (a redelivered message): its existing id.
                None => ids.push(Stored {
                    id: existing_message(conn, m).await?,
                    new: false,
                }),
            }
        }
        write_postings(conn, &fresh).await?;
        Ok(ids)
    }

    /// The id of a message already stored under `msg`'s key (a redelivery). Someone else's
    /// message under an id given through the API is not `msg`: `StoreError::TakenId`.
    async fn existing_message(
        conn: &mut Conn,
        msg: &NewMessage,
    ) -> StoreResult<MessageId> {
        let (id, author): (i64, i64) = sqlx::query_as(
            "SELECT id, author_id FROM messages WHERE space_id = $1 AND channel = $2 AND external_id = $3",
        )
        .bind(msg.space.0)
        .bind(&msg.channel)
        .bind(&msg.external_id)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_err)?;
        // Ids given through the API ("api:…", the caller's own) are checked for their
        // author; a platform's are its own to give (a redelivery after a link is the same
        // person under another id).
        if author != msg.author.0 && msg.external_id.starts_with("api:") {
            return Err(crate::store::StoreError::TakenId {
                external_id: msg.external_id.clone(),
            });
        }
        Ok(MessageId(id))
    }
}

/// A message being deleted: id, scope key, sent at (Unix ms), episode, text, withheld.
type MessageRow = (i64, String, i64, Option<i64>, String, bool, Option<String>);

/// A message whose postings are written: id, scope key, text and detected language.
pub(in crate::store) type Indexable = (i64, String, String, Option<Language>);

/// A row of the postings backlog: the message id and, while the message is there, its scope
/// key, text, whether it is withheld and its stored language code.
pub(in crate::store) type QueuedRow = (
    i64,
    Option<String>,
    Option<String>,
    Option<bool>,
    Option<String>,
);

/// The backlog's messages to index (those still there and not withheld), and the languages
/// detected now for those stored without one (before languages were told apart), withheld or
/// not: every message's length is measured in its language.
pub(in crate::store) fn queued_postings(
    rows: Vec<QueuedRow>,
) -> (Vec<Indexable>, Vec<(i64, &'static str)>) {
    let mut index = Vec::new();
    let mut detected = Vec::new();
    // Those without a language are read together, over the cores (a re-index after an upgrade
    // reads every message).
    let unread: Vec<&str> = rows
        .iter()
        .filter(|r| r.4.is_none())
        .filter_map(|r| r.1.as_ref().and(r.2.as_deref()))
        .collect();
    let mut found = crate::domain::language::detect_all(&unread).into_iter();
    for (id, scope, text, withheld, code) in rows {
        let (Some(scope), Some(text)) = (scope, text) else {
            continue;
        };
        let language = match code.as_deref() {
            Some(code) => Language::from_code(code),
            None => {
                let language = found.next().flatten();
                if let Some(l) = language {
                    detected.push((id, l.code()));
                }
                language
            }
        };
        if withheld != Some(true) {
            index.push((id, scope, text, language));
        }
    }
    (index, detected)
}

/// What deleting messages must undo, worked out once for both backends.
#[derive(Debug, Default)]
struct ForgetPlan {
    /// The postings each message has: (message, scope key, terms, document length).
    postings: Vec<(i64, String, Vec<String>, i64)>,
    /// Per episode: messages and total length leaving it.
    episodes: BTreeMap<i64, (i64, i64)>,
    /// (scope key, day) whose day summary read these messages.
    days: BTreeSet<(String, NaiveDate)>,
    /// Per scope, the first such day: history summaries ending then or later read it.
    first_days: BTreeMap<String, NaiveDate>,
}

fn forget_plan(rows: &[MessageRow]) -> StoreResult<ForgetPlan> {
    let mut plan = ForgetPlan::default();
    for (id, scope, sent_at, episode, text, withheld, language) in rows {
        // The language its postings were written in (not detected again: a newer detector
        // must not leave postings of a forgotten message behind).
        let language = language
            .as_deref()
            .and_then(crate::domain::language::Language::from_code);
        let doc = document_terms_in(text, language);
        let len = doc.len as i64;
        if !withheld {
            plan.postings.push((
                *id,
                scope.clone(),
                doc.terms.into_iter().map(|(t, _)| t).collect(),
                len,
            ));
        }
        if let Some(ep) = episode {
            let e = plan.episodes.entry(*ep).or_default();
            e.0 += 1;
            e.1 += len;
        }
        let day = crate::domain::day_of(from_ms(*sent_at)?);
        plan.days.insert((scope.clone(), day));
        let first = plan.first_days.entry(scope.clone()).or_insert(day);
        *first = (*first).min(day);
    }
    Ok(plan)
}
