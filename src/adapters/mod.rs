//! Platform adapters at the top of the flow: each turns platform events into
//! `IncomingMessage`s for `Bot::handle` and sends the replies back. Only this layer names
//! platform types. Console now; Discord and Telegram plug in beside it.

pub mod console;
pub mod discord;
pub mod fake_discord;
pub mod fake_telegram;
pub mod split;
pub mod telegram;

use async_trait::async_trait;

use crate::bot::Reply;

/// Where replies go: a platform channel, or the console.
#[async_trait]
pub trait ReplySink: Send + Sync {
    async fn send(&self, reply: &Reply) -> std::io::Result<()>;
}
