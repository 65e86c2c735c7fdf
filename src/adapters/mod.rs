//! Platform adapters at the top of the flow: each turns platform events into
//! `IncomingMessage`s for the bot (through the `MessageHandler` seam) and sends the replies
//! back. Only this layer names platform types. Each event is handled in its own task, so a bug
//! that panics on one event is logged and that event skipped while the platform goes on.

pub mod console;
pub mod discord;
#[cfg(feature = "test-util")]
pub mod fake_discord;
#[cfg(feature = "test-util")]
pub mod fake_telegram;
pub mod lease;
pub mod split;
pub mod telegram;

use async_trait::async_trait;
use std::future::Future;
use std::pin::Pin;

use crate::bot::{Bot, Reply};
use crate::domain::language::Language;
use crate::domain::{IncomingMessage, Platform};
use crate::memory::MemoryError;
use crate::store::StoreError;

/// Where replies go: a platform channel, or the console.
#[async_trait]
pub trait ReplySink: Send + Sync {
    /// Sends one reply; an I/O error means it did not arrive.
    async fn send(&self, reply: &Reply) -> std::io::Result<()>;
}

/// A platform's "typing…" indicator, run while an answer is being made.
pub type Typing<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What the platform adapters ask of the bot. `Bot` is the one implementation; tests wrap it
/// (a handler that panics on one event).
#[async_trait]
pub trait MessageHandler: Send + Sync + 'static {
    /// A new message: stored, and the reply when the bot was addressed.
    async fn message(
        &self,
        msg: &IncomingMessage,
        typing: Typing<'_>,
    ) -> Result<Option<Reply>, StoreError>;
    /// Whether the bot keeps `msg` (by its platform ids): an edit of a message it does not
    /// keep changes nothing, so its files need not be fetched.
    async fn keeps(&self, msg: &IncomingMessage) -> Result<bool, StoreError>;
    /// A message was edited on the platform.
    async fn edited(&self, msg: &IncomingMessage) -> Result<(), MemoryError>;
    /// Messages were deleted on the platform; returns how many stored messages left memory.
    async fn deleted(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
        external_ids: &[String],
    ) -> Result<u64, MemoryError>;
    /// A channel or thread was deleted on the platform, with its messages; returns how many
    /// stored messages left memory.
    async fn channel_deleted(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
    ) -> Result<u64, MemoryError>;
    /// The channels of (platform, space) that kept messages were said in.
    async fn channels_kept(
        &self,
        platform: Platform,
        space_external_id: &str,
    ) -> Result<Vec<String>, StoreError>;
    /// The platform message `external_id` of (platform, space, channel) was stored: the
    /// newest seen there moves to it (what a restart catches up after).
    async fn seen(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
        external_id: i64,
    ) -> Result<(), StoreError>;
    /// What a platform that does not deliver again must fetch after a restart: the channels
    /// with a message seen within `within` (and the newest seen in each), and the messages
    /// of that time whose files a stop left without their description.
    async fn to_catch_up(
        &self,
        platform: Platform,
        within: std::time::Duration,
    ) -> Result<CatchUp, StoreError>;
    /// The bot's own text `id` (a message catalogue's) in `language`, English when it has
    /// none: for what an adapter says itself.
    fn text(&self, language: Option<Language>, id: &str) -> String;
    /// The bot's own text `id` in each language whose catalogue has it, English first: for
    /// what a platform shows per client language (command menus).
    fn text_in_each(&self, id: &str) -> Vec<(Language, String)>;
}

/// What `MessageHandler::to_catch_up` gives (the bot reads it from the store).
pub use crate::bot::CatchUp;

#[async_trait]
impl MessageHandler for Bot {
    fn text(&self, language: Option<Language>, id: &str) -> String {
        crate::domain::texts::Say::new(self.texts(), language).text(id)
    }

    fn text_in_each(&self, id: &str) -> Vec<(Language, String)> {
        self.texts().in_each_language(id)
    }

    async fn message(
        &self,
        msg: &IncomingMessage,
        typing: Typing<'_>,
    ) -> Result<Option<Reply>, StoreError> {
        self.handle_with(msg, typing).await
    }

    async fn keeps(&self, msg: &IncomingMessage) -> Result<bool, StoreError> {
        self.keeps(msg).await
    }

    async fn edited(&self, msg: &IncomingMessage) -> Result<(), MemoryError> {
        self.message_edited(msg).await
    }

    async fn deleted(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
        external_ids: &[String],
    ) -> Result<u64, MemoryError> {
        self.message_deleted(
            platform,
            space_external_id,
            channel_external_id,
            external_ids,
        )
        .await
    }

    async fn channel_deleted(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
    ) -> Result<u64, MemoryError> {
        self.channel_deleted(platform, space_external_id, channel_external_id)
            .await
    }

    async fn channels_kept(
        &self,
        platform: Platform,
        space_external_id: &str,
    ) -> Result<Vec<String>, StoreError> {
        self.channels_kept(platform, space_external_id).await
    }

    async fn seen(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
        external_id: i64,
    ) -> Result<(), StoreError> {
        self.seen(
            platform,
            space_external_id,
            channel_external_id,
            external_id,
        )
        .await
    }

    async fn to_catch_up(
        &self,
        platform: Platform,
        within: std::time::Duration,
    ) -> Result<CatchUp, StoreError> {
        self.to_catch_up(platform, within).await
    }
}

/// Whether `handler` keeps the message `edit` is an edit of (so its files are worth
/// fetching); None when that cannot be told (logged).
pub async fn edit_of_kept(handler: &dyn MessageHandler, edit: &IncomingMessage) -> Option<bool> {
    match handler.keeps(edit).await {
        Ok(kept) => Some(kept),
        Err(e) => {
            tracing::error!(platform = edit.platform.as_str(), error = %e,
                "an edited message could not be looked up");
            None
        }
    }
}

/// Runs the handling of one platform event in a task of its own and waits for it. A panic in
/// it (a bug) is logged with the event and the event is skipped: the caller goes on to the
/// next one. None when the work did not finish.
pub async fn isolated<T, F>(platform: Platform, event: &str, work: F) -> Option<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    // Stopping the caller (a shutdown past its grace) stops the work too.
    struct AbortOnDrop(tokio::task::AbortHandle);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut task = tokio::spawn(work);
    let _stop = AbortOnDrop(task.abort_handle());
    match (&mut task).await {
        Ok(done) => Some(done),
        Err(e) => {
            if e.is_panic() {
                tracing::error!(
                    platform = platform.as_str(),
                    event,
                    "handling this event panicked (a bug); it is skipped and the platform goes on"
                );
            }
            None
        }
    }
}
