//! The composition root: wires config, store, chat model, clock and memory into a `Bot`.
//! Everything is passed in, so tests start the whole bot with a temp database, a fake LLM
//! server and a manual clock.

use crate::bot::Bot;
use crate::config::{Config, Secrets, StoreConfig};
use crate::domain::Clock;
use crate::llm::{ChatModel, LlmError, OpenAiClient};
use crate::memory::MemoryManager;
use crate::store::postgres::PgSettings;
use crate::store::{PostgresStore, SqliteStore, Store, StoreError};
use std::sync::Arc;
use std::time::Duration;
use tracing::info;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("{0}")]
    Setup(String),
}

/// Opens the database named by `store.url` (SQLite or PostgreSQL) and applies migrations.
pub async fn open_store(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    open_store_url(&config.store.url, &config.store).await
}

/// Opens `url` with the pool settings of `settings`.
pub async fn open_store_url(
    url: &str,
    settings: &StoreConfig,
) -> Result<Arc<dyn Store>, StoreError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let pg = PgSettings {
            max_connections: settings.max_connections,
            acquire_timeout: Duration::from_millis(settings.acquire_timeout_ms),
            statement_timeout: Duration::from_millis(settings.statement_timeout_ms),
        };
        return Ok(Arc::new(PostgresStore::open(url, &pg).await?));
    }
    let store = SqliteStore::open(
        url,
        settings.max_connections,
        Duration::from_millis(settings.busy_timeout_ms),
    )
    .await?;
    Ok(Arc::new(store))
}

/// The configured chat model, or None (offline fallback) when `llm.base_url` is empty.
pub fn chat_model(
    config: &Config,
    secrets: &Secrets,
    clock: Arc<dyn Clock>,
) -> Result<Option<Arc<dyn ChatModel>>, LlmError> {
    if config.llm.base_url.trim().is_empty() {
        info!(
            "no LLM configured (llm.base_url is empty): memory uses the deterministic offline fallback"
        );
        return Ok(None);
    }
    info!(base_url = %crate::config::redact_url(&config.llm.base_url), model = %config.llm.model, api_key = secrets.llm_api_key.is_some(), "LLM configured");
    Ok(Some(Arc::new(OpenAiClient::new(
        &config.llm,
        secrets.llm_api_key.clone(),
        clock,
    )?)))
}

/// Starts the scheduled jobs of this process in the background; send `true` to stop them.
pub fn start_scheduler(
    config: &Config,
    memory: Arc<crate::memory::MemoryManager>,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::watch::Sender<bool>,
) {
    let scheduler = Arc::new(crate::jobs::Scheduler::new(
        memory,
        crate::jobs::Scheduler::process_holder(),
        chrono::Duration::seconds(config.jobs.lease_secs as i64),
        config.jobs.day_summaries_time(),
    ));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let every = Duration::from_secs(config.jobs.tick_secs);
    (tokio::spawn(scheduler.run_until(every, stopped)), stop)
}

/// Builds the bot from its parts.
pub fn build_bot(
    config: &Config,
    store: Arc<dyn Store>,
    llm: Option<Arc<dyn ChatModel>>,
    clock: Arc<dyn Clock>,
) -> Result<Bot, AppError> {
    let memory = MemoryManager::new(store.clone(), llm.clone(), clock, config.memory.clone())
        .map_err(AppError::Setup)?;
    Ok(Bot::new(config.clone(), store, Arc::new(memory), llm))
}
