//! The composition root: wires config, store, chat model, clock and memory into a `Bot`.
//! Everything is passed in, so tests start the whole bot with a temp database, a fake LLM
//! server and a manual clock.

use crate::bot::{Bot, BotParts};
use crate::config::{Config, Secrets, StoreConfig};
use crate::domain::Clock;
use crate::domain::budget::Limits;
use crate::domain::status::{Connection, PlatformStatus};
use crate::embed::{EmbedError, Embedder, LocalEmbedder, OpenAiEmbedder, SharedEmbedder};
use crate::ingest::Ingestor;
use crate::linking::Linker;
use crate::llm::prompts::{PromptError, PromptSource, PromptSources, Prompts};
use crate::llm::transcribe::{OpenAiTranscriber, Transcriber};
use crate::llm::{ChatModel, LlmError, OpenAiClient};
use crate::memory::entries::EntryBook;
use crate::memory::tokens::TokenCounter;
use crate::memory::tools::ToolExecutor;
use crate::memory::{MemoryManager, MemoryParts};
use crate::responder::Responder;
use crate::retrieval::{Indexer, Retriever};
use crate::service::ServiceError;
use crate::service::memory_api::{ApiKeys, MemoryApi, MemoryApiParts};
use crate::store::postgres::PgSettings;
use crate::store::{DbUrl, PostgresStore, SqliteStore, Store, StoreError};
use crate::{embed, llm};
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

#[derive(Debug, thiserror::Error)]
/// What stops the bot from starting.
pub enum AppError {
    #[error(transparent)]
    /// The database could not be opened or migrated.
    Store(#[from] StoreError),
    #[error(transparent)]
    /// The chat model client could not be built.
    Llm(#[from] LlmError),
    #[error(transparent)]
    /// The embedder could not be loaded.
    Embed(#[from] EmbedError),
    #[error(transparent)]
    /// An edited prompt is missing a placeholder or cannot be read.
    Prompt(#[from] PromptError),
    #[error(transparent)]
    /// A phrases file is not valid.
    Phrases(#[from] crate::domain::phrases::PhrasesError),
    /// A message catalogue is not valid.
    #[error(transparent)]
    Texts(#[from] crate::domain::texts::TextsError),
    /// `prompts.dir` was set to something that is not a directory.
    #[error("prompts.dir: {0} is not a directory (leave it unset for the built-in prompts)")]
    PromptsDir(std::path::PathBuf),
    #[error(transparent)]
    /// `memory.tokenizer` names no tokenizer this build has.
    Tokenizer(#[from] crate::memory::tokens::UnknownTokenizer),
}

/// Opens the database named by `store.url` (SQLite or PostgreSQL) and applies migrations.
pub async fn open_store(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    open_store_url(&config.store.url, &config.store).await
}

/// Opens the database named by `store.url` for a command that reads it: a SQLite file that
/// is not there is an error, not a new empty database.
pub async fn open_existing_store(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    open_existing_store_url(&config.store.url, &config.store).await
}

/// Opens `url` with the pool settings of `settings`, creating a SQLite file when missing.
pub async fn open_store_url(
    url: &str,
    settings: &StoreConfig,
) -> Result<Arc<dyn Store>, StoreError> {
    open_db(DbUrl::parse(url)?, settings, true).await
}

/// Opens `url` like `open_store_url`, but refuses a SQLite file that does not exist.
pub async fn open_existing_store_url(
    url: &str,
    settings: &StoreConfig,
) -> Result<Arc<dyn Store>, StoreError> {
    open_db(existing(url)?, settings, true).await
}

/// Opens the configured database as it is, without migrating or writing anything (refusing
/// a SQLite file that does not exist): for reports on a database other processes use.
pub async fn open_store_as_is(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    open_db(existing(&config.store.url)?, &config.store, false).await
}

/// `url` read, refusing a SQLite file that does not exist.
fn existing(url: &str) -> Result<DbUrl, StoreError> {
    let db = DbUrl::parse(url)?;
    if let Some(path) = db.sqlite_file().filter(|p| !p.exists()) {
        return Err(StoreError::Missing(path.display().to_string()));
    }
    Ok(db)
}

/// Opens `db`; with `migrate`, brings its schema to this build's (else as it is).
async fn open_db(
    db: DbUrl,
    settings: &StoreConfig,
    migrate: bool,
) -> Result<Arc<dyn Store>, StoreError> {
    match db {
        DbUrl::Postgres(url) => {
            let pg = PgSettings {
                max_connections: settings.connections(),
                acquire_timeout: Duration::from_millis(settings.acquire_timeout_ms),
                statement_timeout: Duration::from_millis(settings.statement_timeout_ms),
                ping_after_idle: Duration::from_millis(settings.ping_after_idle_ms),
            };
            Ok(Arc::new(if migrate {
                PostgresStore::open(&url, &pg).await?
            } else {
                PostgresStore::open_as_is(&url, &pg).await?
            }))
        }
        DbUrl::Sqlite { url, .. } => {
            let (max, busy) = (
                settings.connections(),
                Duration::from_millis(settings.busy_timeout_ms),
            );
            Ok(Arc::new(if migrate {
                SqliteStore::open(&url, max, busy).await?
            } else {
                SqliteStore::open_as_is(&url, max, busy).await?
            }))
        }
    }
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

/// The configured speech-to-text model, or None when `llm.transcription_model` (or
/// `llm.base_url`) is empty.
pub fn transcriber(
    config: &Config,
    secrets: &Secrets,
) -> Result<Option<Arc<dyn Transcriber>>, LlmError> {
    let t = OpenAiTranscriber::new(&config.llm, secrets.llm_api_key.clone())?;
    if t.is_some() {
        info!(model = %config.llm.transcription_model, "speech to text configured: voice notes and audio files are transcribed");
    }
    Ok(t.map(|t| Arc::new(t) as Arc<dyn Transcriber>))
}

/// The configured embedder: the local MiniLM, an OpenAI-compatible API, or None (BM25 only).
/// "auto" uses the local model when it is in `embed.model_dir`.
pub fn embedder(config: &Config, secrets: &Secrets) -> Result<Option<SharedEmbedder>, EmbedError> {
    let e = &config.embed;
    let dir = std::path::Path::new(&e.model_dir);
    let precision = e.precision();
    let provider = match e.provider.as_str() {
        "auto" if LocalEmbedder::present(dir, precision) => "local",
        "auto" => {
            // Said once, at start, where a default log level shows it: search quality depends
            // on it.
            warn!(model_dir = %e.model_dir, "no embedding model found: retrieval uses BM25 only (scripts/fetch-model.sh fetches it; or set embed.model_dir, or embed.provider = \"none\" to silence this)");
            return Ok(None);
        }
        other => other,
    };
    match provider {
        "local" => {
            let library = (!e.onnxruntime.is_empty()).then(|| std::path::Path::new(&e.onnxruntime));
            let model = LocalEmbedder::load(dir, precision, library, e.max_tokens)?;
            if model.dimensions() != e.dimensions {
                return Err(EmbedError::Load(format!(
                    "the model in {} gives {} dimensions, embed.dimensions is {}",
                    e.model_dir,
                    model.dimensions(),
                    e.dimensions
                )));
            }
            info!(model_dir = %e.model_dir, model = model.model(), "embeddings: local all-MiniLM-L6-v2 (ONNX Runtime)");
            Ok(Some(Arc::new(model)))
        }
        "openai" => {
            info!(base_url = %crate::config::redact_url(&e.base_url), model = %e.model, "embeddings: OpenAI-compatible API");
            Ok(Some(Arc::new(OpenAiEmbedder::new(
                e,
                secrets.embed_api_key.clone(),
            )?)))
        }
        _ => {
            info!("embeddings off (embed.provider = \"none\"): retrieval uses BM25 only");
            Ok(None)
        }
    }
}

/// The prompts of `prompts.dir` (built-in copies for the files that are not there), checked,
/// with where each came from.
pub fn prompts(config: &Config) -> Result<(Arc<Prompts>, PromptSources), AppError> {
    let dir = std::path::Path::new(&config.prompts.dir);
    // The default directory may be missing (built-in prompts); one set on purpose may not.
    if config.prompts.dir != Config::defaults().prompts.dir && !dir.is_dir() {
        return Err(AppError::PromptsDir(dir.to_path_buf()));
    }
    let (prompts, sources) = Prompts::load(dir)?;
    Ok((Arc::new(prompts), sources))
}

/// The memory phrases: the built-in files of `phrases/`, with the `.toml` files of
/// `phrases.dir` replacing those of the same name and adding others (a community's language).
pub fn phrases(config: &Config) -> Result<Arc<crate::domain::phrases::Phrases>, AppError> {
    let files = language_files(config, "toml")?;
    let phrases = crate::domain::phrases::Phrases::with_files(&files)?;
    info!(languages = %phrases.languages().join(", "), "memory phrases");
    Ok(Arc::new(phrases))
}

/// The bot's own texts: the built-in catalogues of `phrases/`, with the `.ftl` files of
/// `phrases.dir` over them (a file's messages replace its language's, or start a language).
pub fn texts(config: &Config) -> Result<Arc<crate::domain::texts::Texts>, AppError> {
    let files = language_files(config, "ftl")?;
    let texts = crate::domain::texts::Texts::with_files(&files)?;
    info!(languages = %texts.languages().join(", "), "message catalogues");
    Ok(Arc::new(texts))
}

/// The files of `phrases.dir` with extension `ext` (name, text), sorted by name; none when
/// the default directory is missing (the built-in files serve).
fn language_files(config: &Config, ext: &str) -> Result<Vec<(String, String)>, AppError> {
    use crate::domain::phrases::PhrasesError;
    let dir = std::path::Path::new(&config.phrases.dir);
    let unreadable = |file: &std::path::Path, e: std::io::Error| PhrasesError {
        file: file.display().to_string(),
        reason: e.to_string(),
    };
    let mut files = Vec::new();
    if dir.is_dir() {
        let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| unreadable(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|e| unreadable(&path, e))?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            files.push((name.unwrap_or_default(), text));
        }
    } else if config.phrases.dir != Config::defaults().phrases.dir {
        // The default directory may be missing (built-in phrases); one set on purpose may not.
        return Err(PhrasesError {
            file: dir.display().to_string(),
            reason: "no such directory".into(),
        }
        .into());
    }
    Ok(files)
}

/// Says which prompt is in use for each task: edited ones at warn (they change how the bot
/// behaves), the rest at info.
fn announce_prompts(dir: &str, sources: &[(&'static str, PromptSource)]) {
    let edited: Vec<&str> = sources
        .iter()
        .filter(|(_, s)| matches!(s, PromptSource::File { edited: true, .. }))
        .map(|(name, _)| *name)
        .collect();
    if !edited.is_empty() {
        warn!(dir, prompts = %edited.join(", "), "using edited prompts");
    }
    for (name, source) in sources {
        match source {
            PromptSource::NotAPrompt(path) => {
                warn!(file = %path.display(), "this file is not one of the prompts (remember.md, reply.md, extract.md, …) and is not used")
            }
            PromptSource::BuiltIn => info!(prompt = name, source = "built-in", "prompt"),
            PromptSource::File { path, edited } => {
                info!(prompt = name, source = %path.display(), edited, "prompt")
            }
        }
    }
}

/// The daily extraction of structured memory, with `prompts`; none without an LLM (it needs
/// one).
pub fn extractor(
    config: &Config,
    store: Arc<dyn Store>,
    llm: Option<Arc<dyn ChatModel>>,
    clock: Arc<dyn Clock>,
    holder: String,
    prompts: Arc<Prompts>,
) -> Result<Option<crate::memory::extraction::Extractor>, AppError> {
    let Some(llm) = llm else {
        return Ok(None);
    };
    Ok(Some(crate::memory::extraction::Extractor::new(
        store,
        llm,
        clock,
        holder,
        chrono::Duration::seconds(config.jobs.lease_secs as i64),
        crate::memory::extraction::ExtractionSettings {
            durable: config.memory.durable_confidence,
            max_messages: config.memory.max_extraction_messages,
            at: config.memory.extraction_time(),
            day_summary_chars: config.memory.day_summary_chars,
            max_message_chars: config.memory.max_message_chars_in_prompt,
            catch_up_days: config.memory.extraction_catch_up_days,
            episode_min_messages: config.episodes.summary_min_messages,
        },
        prompts,
    )))
}

/// Starts the scheduled jobs of this process over `memory` in the background; send `true` to
/// stop them.
pub fn start_scheduler(
    config: &Config,
    memory: &Memory,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    llm: Option<Arc<dyn ChatModel>>,
) -> Result<
    (
        tokio::task::JoinHandle<()>,
        tokio::sync::watch::Sender<bool>,
    ),
    AppError,
> {
    let holder = crate::store::process_holder();
    let llm_for_usage = llm.clone();
    let extractor = extractor(
        config,
        store.clone(),
        llm,
        clock.clone(),
        holder.clone(),
        memory.prompts.clone(),
    )?;
    let scheduler = Arc::new(
        crate::jobs::Scheduler::new(
            memory.manager.clone(),
            store,
            clock,
            holder,
            chrono::Duration::seconds(config.jobs.lease_secs as i64),
            config.jobs.day_summaries_time(),
            config.memory.daily_notes_days,
        )
        .with_extractor(extractor)
        .with_usage(llm_for_usage.map(crate::jobs::UsageRecorder::new))
        .with_retry_backoff(chrono::Duration::seconds(
            config.jobs.retry_backoff_secs as i64,
        )),
    );
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let every = Duration::from_secs(config.jobs.tick_secs);
    Ok((tokio::spawn(scheduler.run_until(every, stopped)), stop))
}

/// Makes the configured embedder's vector space the one in use, and says so at start when the
/// model changed: search goes on with BM25 plus the vectors the new model has already made, while
/// the indexer embeds the rest in the background, newest first. Returns how many messages still
/// have no vector of the model.
pub async fn activate_vectors(
    store: &dyn Store,
    embedder: Option<&SharedEmbedder>,
) -> Result<i64, StoreError> {
    let Some(embedder) = embedder else {
        return Ok(0);
    };
    let model = embedder.identity();
    let (space, before) = store.activate_vector_space(&model).await?;
    let coverage = store.vector_coverage().await?;
    // A text the model refused counts as done: it is not sent again.
    let covered = coverage.done(space);
    let missing = (coverage.messages - covered).max(0);
    match before {
        Some(old) => warn!(
            from = %old,
            to = %model,
            missing,
            covered,
            "the embedding model changed: the old model's vectors are never compared with the new one's; search uses BM25 and the new model's vectors while the rest are embedded in the background, newest first"
        ),
        None if missing > 0 => info!(
            model = %model,
            missing,
            "messages without a vector of this embedding model are embedded in the background, newest first"
        ),
        None => {}
    }
    Ok(missing)
}

/// The background indexer of `config` (embeddings, episodes, episodic memories).
pub fn indexer(
    config: &Config,
    store: Arc<dyn Store>,
    embedder: Option<SharedEmbedder>,
    clock: Arc<dyn Clock>,
    phrases: &crate::domain::phrases::Phrases,
) -> Indexer {
    // Topic-shift markers: the configured ones and every language's (phrases files).
    let mut topics = config.episodes.topic_rules();
    for marker in phrases.markers() {
        if !topics.markers.contains(&marker) {
            topics.markers.push(marker);
        }
    }
    Indexer::new(
        store,
        embedder,
        clock,
        config.retrieval.clone(),
        topics,
        config.embed.index_batch(),
    )
    .keeping_old_vectors(config.embed.keep_old_vectors)
}

/// Starts the background indexer (embeddings, episodes, episodic memories) of this process;
/// send `true` to stop it.
pub fn start_indexer(
    config: &Config,
    store: Arc<dyn Store>,
    embedder: Option<SharedEmbedder>,
    clock: Arc<dyn Clock>,
    phrases: &crate::domain::phrases::Phrases,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::watch::Sender<bool>,
) {
    let indexer = Arc::new(indexer(config, store, embedder, clock, phrases));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let idle = Duration::from_secs(config.embed.idle_secs.max(1));
    (tokio::spawn(indexer.run_until(idle, stopped)), stop)
}

/// Starts the HTTP listener of `server.listen` (none when it is empty) with the metrics
/// recorder installed; send `true` to stop it.
pub async fn start_service(
    config: &Config,
    store: Arc<dyn Store>,
    platforms: PlatformStatus,
    programs: crate::service::Programs,
) -> Result<Option<(crate::service::Listening, tokio::sync::watch::Sender<bool>)>, ServiceError> {
    if config.server.listen.is_empty() {
        return Ok(None);
    }
    let metrics = crate::telemetry::install()?;
    let routes = crate::service::router(
        crate::service::ServiceState {
            store,
            platforms,
            metrics: metrics.clone(),
        },
        programs,
    );
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let bounds = crate::service::Bounds::of(&config.server);
    let listening =
        crate::service::serve(&config.server.listen, routes, metrics, bounds, stopped).await?;
    Ok(Some((listening, stop)))
}

/// The memory API and MCP server over `bot` and `memory`, answering to `keys`; none when
/// there is no key.
pub fn memory_api(
    config: &Config,
    keys: ApiKeys,
    bot: Arc<Bot>,
    memory: &Memory,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
) -> Option<Arc<MemoryApi>> {
    if keys.is_empty() {
        return None;
    }
    Some(Arc::new(MemoryApi::new(MemoryApiParts {
        bot,
        store,
        memory: memory.manager.clone(),
        entries: memory.entries.clone(),
        retriever: memory.retriever.clone(),
        tools: memory.tools.clone(),
        tokens: memory.tokens.clone(),
        clock,
        budget: config.memory.context_budget_tokens,
        keys,
    })))
}

/// The admin page over `memory`, answering to `token`'s holders; none without a token.
pub fn admin_page(
    token: Option<&str>,
    memory: &Memory,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
) -> Result<Option<Arc<crate::service::admin::Admin>>, crate::service::admin::auth::WeakToken> {
    let Some(token) = token else {
        return Ok(None);
    };
    let auth = crate::service::admin::auth::AdminAuth::new(token)?;
    Ok(Some(Arc::new(crate::service::admin::Admin::new(
        crate::service::admin::AdminParts {
            store,
            memory: memory.manager.clone(),
            entries: memory.entries.clone(),
            clock,
            auth,
        },
    ))))
}

/// The lease that elects this bot's one Telegram poller among the processes sharing `store`
/// (named by the token, so two bots on one database each have theirs); none when
/// `telegram.poller_lease_secs` is 0 or there is no token.
pub fn telegram_lease(
    config: &Config,
    secrets: &Secrets,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
) -> Option<Arc<dyn crate::adapters::lease::Lease>> {
    let token = secrets.telegram_token.as_deref()?;
    if config.telegram.poller_lease_secs == 0 {
        return None;
    }
    Some(Arc::new(crate::adapters::lease::StoreLease::new(
        store,
        clock,
        telegram_lease_name(token),
        crate::store::process_holder(),
        Duration::from_secs(config.telegram.poller_lease_secs),
    )))
}

/// The name of the Telegram poller's lease for `token` (a hash of it: the token itself is
/// never stored).
pub fn telegram_lease_name(token: &str) -> String {
    format!("telegram-poller:{}", token_id(token))
}

/// A short hash of a platform token, to name its leases (the token itself is never stored).
fn token_id(token: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(token.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The leases of the Discord shards this process runs (`discord-shard:<token hash>:N/TOTAL`
/// each, held together), so that of processes whose ranges overlap one runs a shard and the
/// others stand by; none when `discord.shard_lease_secs` is 0 or there is no token.
pub fn discord_lease(
    config: &Config,
    secrets: &Secrets,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
) -> Option<Arc<dyn crate::adapters::lease::Lease>> {
    let token = secrets.discord_token.as_deref()?;
    if config.discord.shard_lease_secs == 0 {
        return None;
    }
    let range = crate::config::ShardRange::parse(&config.discord.shards)
        .unwrap_or(None)
        .unwrap_or(crate::config::ShardRange {
            first: 0,
            last: 0,
            total: 1,
        });
    let id = token_id(token);
    let leases = (range.first..=range.last)
        .map(|shard| {
            Arc::new(crate::adapters::lease::StoreLease::new(
                store.clone(),
                clock.clone(),
                format!("discord-shard:{id}:{shard}/{}", range.total),
                crate::store::process_holder(),
                Duration::from_secs(config.discord.shard_lease_secs),
            )) as Arc<dyn crate::adapters::lease::Lease>
        })
        .collect();
    Some(Arc::new(crate::adapters::lease::AllOf(leases)))
}

/// How one platform adapter ended.
#[derive(Debug)]
pub struct PlatformExit {
    /// The platform.
    pub platform: crate::domain::Platform,
    /// Why it stopped; none when it ended normally.
    pub error: Option<String>,
}

/// Runs every platform whose token is set until `shutdown` turns true, each in its own task:
/// a platform that fails (a refused token, an outage it cannot ride out) is logged and stops
/// alone, the others go on. Returns when all of them have stopped.
pub async fn run_platforms(
    config: &Config,
    secrets: &Secrets,
    bot: Arc<crate::bot::Bot>,
    status: PlatformStatus,
    telegram_lease: Option<Arc<dyn crate::adapters::lease::Lease>>,
    discord_lease: Option<Arc<dyn crate::adapters::lease::Lease>>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Vec<PlatformExit> {
    use crate::domain::Platform;
    let mut tasks = tokio::task::JoinSet::new();
    if let Some(token) = secrets.telegram_token.clone() {
        status.set(Platform::Telegram, Connection::Connecting);
        let settings = crate::adapters::telegram::TelegramSettings {
            api_url: config.telegram.api_url.clone(),
            poll_secs: config.telegram.poll_secs,
            bot_name: config.bot.name.clone(),
            shutdown_grace: Duration::from_secs(10),
            status: status.clone(),
            downloads: config.attachments.limits(),
        };
        let (bot, shutdown) = (bot.clone(), shutdown.clone());
        let lease = telegram_lease.clone();
        tasks.spawn(async move {
            let result = match lease {
                Some(lease) => {
                    crate::adapters::telegram::run_elected(bot, &token, settings, lease, shutdown)
                        .await
                }
                None => crate::adapters::telegram::run(bot, &token, settings, shutdown).await,
            };
            (Platform::Telegram, result.map_err(|e| e.to_string()))
        });
    }
    if let Some(token) = secrets.discord_token.clone() {
        status.set(Platform::Discord, Connection::Connecting);
        let settings = crate::adapters::discord::DiscordSettings {
            api_url: config.discord.api_url.clone(),
            bot_name: config.bot.name.clone(),
            status: status.clone(),
            // Checked with the rest of the configuration at start.
            shards: crate::config::ShardRange::parse(&config.discord.shards).unwrap_or(None),
            downloads: config.attachments.limits(),
            catch_up: Duration::from_secs_f64(config.discord.catch_up_hours * 3600.0),
        };
        let (bot, shutdown) = (bot.clone(), shutdown.clone());
        let lease = discord_lease.clone();
        tasks.spawn(async move {
            let result = match lease {
                Some(lease) => {
                    crate::adapters::discord::run_elected(bot, &token, settings, lease, shutdown)
                        .await
                }
                None => crate::adapters::discord::run(bot, &token, settings, shutdown).await,
            };
            (Platform::Discord, result.map_err(|e| e.to_string()))
        });
    }
    let mut exits = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let (platform, result) = match joined {
            Ok(done) => done,
            Err(e) => {
                tracing::error!(error = %e, "a platform task panicked");
                continue;
            }
        };
        match &result {
            Ok(()) => {
                status.set(platform, Connection::Stopped);
                info!(platform = platform.as_str(), "platform stopped")
            }
            Err(e) => {
                status.failed(platform, e.clone());
                tracing::error!(platform = platform.as_str(), error = %e, "platform failed; the others keep running")
            }
        }
        exits.push(PlatformExit {
            platform,
            error: result.err(),
        });
    }
    exits
}

/// The memory tier, each part made once: the manager, and the parts that others use directly
/// (the same ones the manager holds).
pub struct Memory {
    /// Facts, summaries, context, forgetting.
    pub manager: Arc<MemoryManager>,
    /// Structured entries (MEMORY.md, daily notes).
    pub entries: Arc<EntryBook>,
    /// The memory tools a model may use.
    pub tools: ToolExecutor,
    /// The token counter prompts are measured with.
    pub tokens: TokenCounter,
    /// What finds the retrieved part of every context.
    pub retriever: Arc<Retriever>,
    /// The prompts every model call of memory and the jobs uses.
    pub prompts: Arc<Prompts>,
    /// The memory phrases (requests are read and stated facts filed by them; the indexer
    /// takes their topic markers).
    pub phrases: Arc<crate::domain::phrases::Phrases>,
}

/// Builds the memory tier over `store`: `llm` when a model is configured, `retriever` for
/// the retrieved part of contexts, `prompts` for every memory call.
pub fn build_memory(
    config: &Config,
    store: Arc<dyn Store>,
    llm: Option<Arc<dyn ChatModel>>,
    clock: Arc<dyn Clock>,
    retriever: Arc<Retriever>,
    prompts: Arc<Prompts>,
) -> Result<Memory, AppError> {
    let settings = config.memory.clone();
    let tokens = TokenCounter::new(&settings.tokenizer)?;
    let phrases = phrases(config)?;
    let entries = Arc::new(
        EntryBook::new(store.clone(), clock.clone(), settings.memory_md_max_words)
            .with_phrases(phrases.clone()),
    );
    let tools = ToolExecutor::new(
        store.clone(),
        entries.clone(),
        clock.clone(),
        settings.durable_confidence,
        settings.memory_md_max_words,
    );
    let manager = Arc::new(MemoryManager::new(MemoryParts {
        store,
        llm,
        clock,
        settings,
        retriever: retriever.clone(),
        entries: entries.clone(),
        tools: tools.clone(),
        prompts: prompts.clone(),
        episodes: config.episodes.clone(),
    }));
    Ok(Memory {
        manager,
        entries,
        tools,
        tokens,
        retriever,
        prompts,
        phrases,
    })
}

/// The memory of a command-line run or an offline benchmark: no model, BM25 retrieval, the
/// built-in prompts.
pub fn offline_memory(
    config: &Config,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
) -> Result<Memory, AppError> {
    let retriever = Arc::new(Retriever::new(
        store.clone(),
        None,
        config.retrieval.clone(),
    ));
    build_memory(
        config,
        store,
        None,
        clock,
        retriever,
        Arc::new(Prompts::builtin()),
    )
}

/// A bot and the memory tier it runs on.
pub struct Built {
    /// The bot, for the platforms.
    pub bot: Bot,
    /// Its memory, for the jobs and the caches that follow other processes.
    pub memory: Memory,
    /// The memory phrases it reads (the indexer takes their topic markers).
    pub phrases: Arc<crate::domain::phrases::Phrases>,
}

/// Builds the bot from its parts; `embedder` (None: BM25 only) serves retrieval,
/// `transcriber` (None: not configured) the voice notes.
pub fn build_bot(
    config: &Config,
    store: Arc<dyn Store>,
    llm: Option<Arc<dyn ChatModel>>,
    embedder: Option<SharedEmbedder>,
    transcriber: Option<Arc<dyn Transcriber>>,
    clock: Arc<dyn Clock>,
) -> Result<Built, AppError> {
    // What answers spend on the model and the embedder is limited per person and space; with
    // neither configured there is nothing to limit.
    let limits = (llm.is_some() || embedder.is_some())
        .then(|| Arc::new(Limits::new(config.limits.settings(), clock.clone())));
    let (llm, embedder) = match &limits {
        Some(limits) => (
            llm.map(|l| {
                Arc::new(llm::budgeted::Budgeted::new(l, limits.clone())) as Arc<dyn ChatModel>
            }),
            embedder.map(|e| Arc::new(embed::budgeted::Budgeted::new(e)) as SharedEmbedder),
        ),
        None => (llm, embedder),
    };
    let retriever = Arc::new(Retriever::new(
        store.clone(),
        embedder,
        config.retrieval.clone(),
    ));
    let (prompts, sources) = prompts(config)?;
    announce_prompts(&config.prompts.dir, &sources);
    let memory = build_memory(
        config,
        store.clone(),
        llm.clone(),
        clock.clone(),
        retriever,
        prompts.clone(),
    )?;
    let texts = texts(config)?;
    let responder = Responder::new(
        memory.manager.clone(),
        llm.clone(),
        memory.tokens.clone(),
        memory.tools.clone(),
        config,
        &prompts,
        texts.clone(),
    );
    let phrases = memory.phrases.clone();
    // Images go to the chat model (as `llm.vision_model`) when one that takes them is named.
    let vision = llm
        .clone()
        .filter(|_| !config.llm.vision_model.trim().is_empty())
        .map(|model| (model, prompts.describe_image.clone()));
    let describer = crate::ingest::describe::Describer::new(
        vision,
        transcriber,
        (
            config.attachments.chunk_chars,
            config.attachments.max_chunks,
        ),
    );
    let bot = Bot::new(BotParts {
        config: config.clone(),
        ingestor: Ingestor::new(
            store.clone(),
            &config.bot.name,
            config.limits.mentions_per_message,
        )
        .with_chunking(
            config.attachments.chunk_chars,
            config.attachments.max_chunks,
        )
        .with_phrases(phrases.clone())
        .with_describer(describer)
        .with_pdf_reader(pdf_reader(&config.attachments)),
        linker: Linker::new(store.clone(), clock.clone()),
        store,
        clock,
        memory: memory.manager.clone(),
        entries: memory.entries.clone(),
        responder,
        limits,
        texts,
    });
    Ok(Built {
        bot,
        memory,
        phrases,
    })
}

/// How PDFs are read (`attachments.pdf_reader`): by this binary, for "".
pub fn pdf_reader(config: &crate::config::AttachmentsConfig) -> crate::ingest::pdf::PdfReader {
    use crate::ingest::pdf::PdfReader;
    let program = match config.pdf_reader.trim() {
        "off" => None,
        "" => std::env::current_exe().ok(),
        path => Some(std::path::PathBuf::from(path)),
    };
    match program {
        Some(p) => PdfReader::new(
            p,
            std::time::Duration::from_secs_f64(config.pdf_timeout_secs.max(0.1)),
            config.pdf_max_memory_mb.max(16),
        ),
        None => PdfReader::off(),
    }
}
