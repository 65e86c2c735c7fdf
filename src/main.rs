//! The `engram` binary: parses the command line, loads config and secrets, sets up logging,
//! and hands over to the library's composition root (`app`); the commands that read or write a
//! deployment offline (export, import, migrate, extract) run their loops and progress here.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use engram::adapters::console::{self, ConsoleOptions, ConsoleSink};
use engram::app;
use engram::bench::store as bench_store;
use engram::bench::{ContextBenchOptions, LoadOptions};
use engram::config::{Config, Secrets};
use engram::domain::status::{Connection, PlatformStatus};
use engram::domain::{Clock, ManualClock, Platform, SystemClock};
use engram::service::memory_api::ApiKeys;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "engram",
    version,
    about = "A chat bot with tiered, privacy-aware long-term memory"
)]
struct Cli {
    /// Local config file (default: config/local.toml if present, or $ENGRAM_CONFIG).
    #[arg(long, global = true, env = "ENGRAM_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the bot: Discord/Telegram when their tokens are set, else a console chat.
    Run(ChatArgs),
    /// Reads a PDF on stdin and writes its text to stdout (what the bot runs for each
    /// attached PDF, in a process of its own).
    #[command(hide = true)]
    PdfText {
        /// Most memory it may take beyond what it starts with (MiB).
        #[arg(long, default_value_t = 512)]
        max_memory_mb: u64,
    },
    /// Chat with the bot on stdin/stdout.
    Chat(ChatArgs),
    /// Copy a deployment to another database (e.g. SQLite to PostgreSQL); safe to repeat.
    Migrate {
        /// Source database URL (sqlite://PATH or postgres://...).
        #[arg(long)]
        from: String,
        /// Target database URL.
        #[arg(long)]
        to: String,
    },
    /// Daily extraction of structured memory now: for one person or everyone active.
    Extract {
        /// Person id, or a name (console user, display name).
        #[arg(long, conflicts_with = "all", required_unless_present = "all")]
        user: Option<String>,
        #[arg(long)]
        all: bool,
        /// Ask the LLM and show what would change, write nothing.
        #[arg(long)]
        dry_run: bool,
        /// The day whose 24 hours (ending at memory.extraction_at) to read (default: today).
        #[arg(long)]
        day: Option<chrono::NaiveDate>,
    },
    /// Search a person's memory entries (all of them, as in their private chat).
    Search {
        #[arg(long)]
        user: String,
        #[arg(long)]
        query: String,
    },
    /// Write everyone's MEMORY.md and daily notes to DIR/{person id}-{name}/ (MEMORY.md with
    /// each entry's scope, memory/*.md); import puts them back where they were learned.
    Export {
        #[arg(long, default_value = "data/memory")]
        out: PathBuf,
    },
    /// Read an export back (DIR/{person id}[-name]/...); importing twice changes nothing.
    Import {
        #[arg(long = "dir", default_value = "data/memory")]
        dir: PathBuf,
    },
    /// What an operator checks: the database and its migrations, the running process's
    /// `/readyz` (when `server.listen` is set), the scheduled jobs, table sizes, the index
    /// backlog. JSON on stdout.
    Status {
        /// Only ask the running process's `/readyz`: exit 0 when ready, 1 when not (a
        /// container's health check).
        #[arg(long)]
        ready: bool,
    },
    /// The memory engine as an MCP server on stdin and stdout, acting for the people and in
    /// the spaces one key of server.api_keys is bound to (its secret is not needed here).
    Mcp {
        /// The key whose binding it acts with (default: the only key configured).
        #[arg(long)]
        key: Option<String>,
    },
    /// Embed now, with a progress bar, every message that has no vector of the configured
    /// embedding model (after a model change, or when embeddings were off), and index what is
    /// pending; the running bot does the same in the background. Safe to stop and run again.
    Reindex,
    /// Benchmarks (print JSON).
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(clap::Args, Clone)]
struct ChatArgs {
    /// Who is speaking (default: $USER).
    #[arg(long = "as", value_name = "NAME")]
    speaker: Option<String>,
    /// A group space to speak in (default: a private chat with the bot).
    #[arg(long, conflicts_with = "dm")]
    space: Option<String>,
    /// Channel within the space.
    #[arg(long, default_value = "general")]
    channel: String,
    /// The channel is visible only to some members (channel_restricted privacy).
    #[arg(long, requires = "space")]
    restricted: bool,
    /// A private chat with the bot (the default).
    #[arg(long)]
    dm: bool,
    /// Speak as a moderator of the space.
    #[arg(long)]
    moderator: bool,
    /// Play a script of `name: text` lines (a file, or - for stdin) instead of chatting.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Messages stored per second, one at a time and batched, on SQLite and PostgreSQL.
    Ingest {
        /// PostgreSQL server to measure too (a new database is created and dropped).
        #[arg(long, env = "ENGRAM_BENCH_POSTGRES_URL")]
        postgres: Option<String>,
        #[arg(long, default_value_t = 2_000)]
        single: usize,
        #[arg(long, default_value_t = 100_000)]
        batched: usize,
        #[arg(long, default_value_t = 1_000)]
        batch_size: usize,
        /// A `bench retrieval` data file whose turns are the messages' texts (default:
        /// sentences of made-up words, which no language detection recognises).
        #[arg(long)]
        texts: Option<PathBuf>,
    },
    /// Full-text search latency as one space grows, on SQLite and PostgreSQL.
    Search {
        #[arg(long, env = "ENGRAM_BENCH_POSTGRES_URL")]
        postgres: Option<String>,
        /// Comma-separated sizes, ascending.
        #[arg(long, default_value = "10000,100000,1000000", value_delimiter = ',')]
        sizes: Vec<usize>,
        #[arg(long, default_value_t = 200)]
        queries: usize,
    },
    /// Retrieval quality (R@k, nDCG@10 at turn and session level) and query latency on
    /// LongMemEval-format data, through the real ingest path and the bot's search.
    Retrieval(RetrievalArgs),
    /// Embedding throughput (texts and word pieces per second) and one question's embedding
    /// latency, on the turns and questions of a `bench retrieval` data file.
    Embed(EmbedArgs),
    /// Language detection's accuracy on labelled chat lines (`code<TAB>text` per line), per
    /// language, and its time per line.
    Language {
        #[arg(long, default_value = "tests/data/language_lines.tsv")]
        data: PathBuf,
    },
    /// People in spaces sending messages at a set rate through the real bot, the model a
    /// local fake with a set latency and fault rate; checks that every message and every
    /// "remember" was kept. SQLite, and PostgreSQL when a server URL is given.
    Load {
        #[arg(long, env = "ENGRAM_BENCH_POSTGRES_URL")]
        postgres: Option<String>,
        #[arg(long, default_value_t = 50)]
        people: usize,
        #[arg(long, default_value_t = 10)]
        spaces: usize,
        /// Messages per second, everyone together.
        #[arg(long, default_value_t = 20.0)]
        rate: f64,
        /// How long to send, in seconds.
        #[arg(long, default_value_t = 300)]
        secs: u64,
        /// The fake model's answer time (milliseconds).
        #[arg(long, default_value_t = 300)]
        llm_latency_ms: u64,
        /// Share of model requests that fail (0..=1).
        #[arg(long, default_value_t = 0.1)]
        llm_fault_rate: f64,
        /// Record metrics (as `server.listen` does), to measure what they cost.
        #[arg(long)]
        metrics: bool,
    },
    /// Context build time, LLM calls and cache behaviour on a synthetic community.
    Context {
        #[arg(long, default_value_t = 100)]
        people: usize,
        #[arg(long, default_value_t = 7)]
        days: i64,
        #[arg(long, default_value_t = 20_000)]
        messages: usize,
        #[arg(long, default_value_t = 20)]
        warm_rounds: usize,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Record metrics (as `server.listen` does), to measure what they cost.
        #[arg(long)]
        metrics: bool,
    },
}

fn init_logging(config: &Config) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&config.log.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if config.log.format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
    // A panic (a bug) is a structured log line like any other error; the task it happened in
    // ends, and the adapters go on with the next event.
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        // Cut short: a slicing panic quotes the whole text it was cutting.
        let message: String = message.chars().take(120).collect();
        tracing::error!(%location, panic = %message, "panicked");
    }));
}

/// Progress of long command-line work, on stderr: a bar on a terminal; where stderr is a pipe
/// or a log, a plain line now and then (about every tenth of the work, and at the end).
struct Progress {
    bar: indicatif::ProgressBar,
    what: &'static str,
    /// stderr is no terminal: indicatif draws nothing, the plain lines say it.
    plain: bool,
    /// Where the last plain line was.
    printed: std::cell::Cell<u64>,
}

impl Progress {
    /// Work of `total` items of `what` ("people", "texts"); `None` when the total is unknown.
    fn new(total: Option<u64>, what: &'static str) -> Progress {
        let (bar, template) = match total {
            Some(total) => (
                indicatif::ProgressBar::new(total),
                "{bar:30} {pos}/{len} {msg} ({elapsed}, {eta} left)",
            ),
            None => (
                indicatif::ProgressBar::new_spinner(),
                "{spinner} {pos} {msg} ({elapsed})",
            ),
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_message(what);
        let plain = bar.is_hidden();
        Progress {
            bar,
            what,
            plain,
            printed: std::cell::Cell::new(0),
        }
    }

    /// `done` items so far.
    fn set(&self, done: u64) {
        self.bar.set_position(done);
        if self.plain {
            let total = self.bar.length();
            let step = total.map_or(20_000, |t| (t / 10).max(1));
            if done >= self.printed.get() + step || Some(done) == total {
                self.printed.set(done);
                match total {
                    Some(total) => eprintln!("{done}/{total} {}", self.what),
                    None => eprintln!("{done} {}", self.what),
                }
            }
        }
    }

    /// A new label ("messages: 1200 rows") for a spinner's next stretch.
    fn label(&self, what: String) {
        if self.plain {
            eprintln!("{what}");
            self.printed.set(0);
        }
        self.bar.set_message(what);
    }

    fn finish(&self) {
        self.bar.finish();
    }
}

fn default_speaker() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty() && !u.contains(char::is_whitespace))
        .unwrap_or_else(|| "you".to_string())
}

/// `engram bench retrieval`'s options.
#[derive(clap::Args)]
struct RetrievalArgs {
    /// Data files, .jsonl or .jsonl.gz, one conversation record per line
    /// (`bench::retrieval::Record`); several are measured in one run (`--data A --data B`).
    #[arg(long, required = true)]
    data: Vec<PathBuf>,
    /// Where to write the JSON reports (they are printed too).
    #[arg(long)]
    out: Option<PathBuf>,
    /// "config" (the [embed] settings), "local", "openai" or "none"; several, comma-separated
    /// ("none,local"), are measured side by side.
    #[arg(long, default_value = "config", value_delimiter = ',')]
    embedder: Vec<String>,
    /// Directory of the local model's weights (overrides embed.model_dir).
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// Keep the messages' vectors in this file between runs (keyed by model and text hash);
    /// questions are always embedded, so their latency is real.
    #[arg(long)]
    embed_cache: Option<PathBuf>,
    /// Measure on PostgreSQL (a new database is created and dropped) instead of SQLite.
    #[arg(long)]
    postgres: Option<String>,
    /// Only the first N records of each file.
    #[arg(long)]
    records: Option<usize>,
}

/// `engram bench embed`'s options.
#[derive(clap::Args)]
struct EmbedArgs {
    /// Data file in `bench retrieval`'s format: its turns are embedded, its questions timed.
    #[arg(long)]
    data: PathBuf,
    /// As for `bench retrieval`: "config", "local" (also "local:int8", "local:f32"),
    /// "openai"; several, comma-separated, side by side.
    #[arg(long, default_value = "config", value_delimiter = ',')]
    embedder: Vec<String>,
    /// Directory of the local model (overrides embed.model_dir).
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// At most this many texts.
    #[arg(long, default_value_t = usize::MAX)]
    texts: usize,
    /// At most this many questions, each embedded alone.
    #[arg(long, default_value_t = 200)]
    queries: usize,
}

fn main() -> anyhow::Result<()> {
    // First of all, before any thread starts: this returns only when the process did not
    // start again on huge pages (see `huge_pages`).
    let not_restarted = engram::huge_pages::restart_on_huge_pages();
    let cli = Cli::parse();
    // Before anything else: no configuration, no logging, nothing of the bot, and no async
    // runtime (its threads would start, and take address space, after the reader's memory
    // limit is set).
    if let Some(Command::PdfText { max_memory_mb }) = cli.command {
        std::process::exit(engram::ingest::pdf::child_main(max_memory_mb));
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(cli, not_restarted))
}

async fn run(cli: Cli, not_restarted: Option<std::io::Error>) -> anyhow::Result<()> {
    let config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("engram: {e}");
            std::process::exit(2);
        }
    };
    init_logging(&config);
    if let Some(e) = not_restarted {
        tracing::warn!(error = %e, "could not start again on huge pages; memory stays on small pages");
    }
    let secrets = Secrets::from_env();
    match cli.command.unwrap_or(Command::Run(ChatArgs {
        speaker: None,
        space: None,
        channel: "general".into(),
        restricted: false,
        dm: false,
        moderator: false,
        script: None,
    })) {
        Command::Run(args) => {
            if secrets.discord_token.is_some() || secrets.telegram_token.is_some() {
                serve(&config, &secrets).await
            } else {
                chat(&config, &secrets, args).await
            }
        }
        Command::Chat(args) => chat(&config, &secrets, args).await,
        Command::PdfText { .. } => unreachable!("handled before the configuration"),
        Command::Migrate { from, to } => migrate(&config, &from, &to).await,
        Command::Export { out } => export(&config, &out).await,
        Command::Extract {
            user,
            all,
            dry_run,
            day,
        } => extract(&config, &secrets, user, all, dry_run, day).await,
        Command::Search { user, query } => search(&config, &user, &query).await,
        Command::Import { dir } => import(&config, &dir).await,
        Command::Bench(command) => bench(command, &config, &secrets).await,
        Command::Status { ready } => status(&config, ready).await,
        Command::Mcp { key } => mcp(&config, &secrets, key).await,
        Command::Reindex => reindex(&config, &secrets).await,
    }
}

/// `engram reindex`: the background indexer's work in the foreground, with progress.
async fn reindex(config: &Config, secrets: &Secrets) -> anyhow::Result<()> {
    let store = app::open_existing_store(config).await?;
    let embedder = app::embedder(config, secrets)
        .context("loading the embedding model")?
        .context("no embedding model is configured (embed.provider): nothing to embed")?;
    let missing = app::activate_vectors(store.as_ref(), Some(&embedder)).await?;
    let model = embedder.identity();
    let pending = store.index_backlog().await?;
    let phrases = app::phrases(config)?;
    let indexer = app::indexer(
        config,
        store.clone(),
        Some(embedder),
        Arc::new(SystemClock),
        &phrases,
    );
    let progress = Progress::new(Some((missing + pending).max(0) as u64), "messages embedded");
    let done = indexer.index_all(|n| progress.set(n as u64)).await;
    progress.finish();
    let done = done.context(
        "embedding stopped (what was embedded is kept: `engram reindex` again goes on from there)",
    )?;
    let coverage = store.vector_coverage().await?;
    let space = store.vector_space(&model).await?;
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "model": model,
            "embedded": done,
            "messages": coverage.messages,
            "share_embedded": coverage.share(space),
        }))?
    );
    Ok(())
}

/// The keys of `server.api_keys`, their secrets read from the environment (none without a
/// listener to serve them).
fn server_keys(config: &Config) -> anyhow::Result<ApiKeys> {
    if config.server.listen.is_empty() {
        return Ok(ApiKeys::default());
    }
    Ok(ApiKeys::load(&config.server.api_keys, |var| {
        std::env::var(var).ok()
    })?)
}

/// `engram mcp`: the MCP server on stdio until the client closes it, acting with the binding
/// of the key `name` (default: the only one configured).
async fn mcp(config: &Config, secrets: &Secrets, name: Option<String>) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let configured = &config.server.api_keys;
    let bound = match &name {
        Some(name) => configured
            .iter()
            .find(|k| &k.name == name)
            .with_context(|| format!("server.api_keys has no key named {name:?}"))?,
        None => match configured.as_slice() {
            [only] => only,
            [] => anyhow::bail!(
                "server.api_keys has no key: the MCP server acts with the binding of one"
            ),
            _ => anyhow::bail!("server.api_keys has several keys: name one with --key"),
        },
    };
    let keys = ApiKeys::local(bound);
    let running = start_bot(config, secrets, Arc::new(SystemClock), keys, false).await?;
    let api = running.api.clone().context("the memory API")?;
    let key = api.keys().named(&bound.name).context("the bound key")?;
    tracing::info!(key = %key.name, "MCP server on stdio");
    let server = engram::service::mcp::McpServer::with_key(api, key)
        .serve(rmcp::transport::stdio())
        .await
        .context("starting the MCP session")?;
    server.waiting().await?;
    running.stop().await;
    Ok(())
}

/// The running process's `/readyz`, asked on `server.listen` (an unspecified address is asked
/// on loopback): its status code and body.
async fn probe_ready(config: &Config) -> anyhow::Result<(u16, serde_json::Value)> {
    anyhow::ensure!(
        !config.server.listen.is_empty(),
        "server.listen is not set: no process listens to ask (set ENGRAM__SERVER__LISTEN)"
    );
    let mut addr: std::net::SocketAddr = config.server.listen.parse()?;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let response = reqwest::Client::new()
        .get(format!("http://{addr}/readyz"))
        .timeout(std::time::Duration::from_secs(3))
        .send()
        .await
        .with_context(|| format!("no process answers on {addr}"))?;
    let code = response.status().as_u16();
    Ok((code, response.json().await.unwrap_or_default()))
}

/// `engram status`.
async fn status(config: &Config, ready_only: bool) -> anyhow::Result<()> {
    if ready_only {
        let (code, body) = probe_ready(config).await?;
        println!("{body}");
        anyhow::ensure!(code == 200, "not ready (HTTP {code})");
        return Ok(());
    }
    // The running process first: it answers even when the database does not.
    let running = match probe_ready(config).await {
        Ok((_, body)) => body,
        Err(e) => serde_json::json!({ "not_answering": e.to_string() }),
    };
    let database = engram::config::redact_url(&config.store.url);
    // As it is: a report never migrates a database that older processes may still use.
    let store = match app::open_store_as_is(config).await {
        Ok(store) => store,
        Err(e) => {
            let report = serde_json::json!({
                "database": database,
                "store": "unreachable",
                "running_process": running,
            });
            println!("{}", serde_json::to_string_pretty(&report)?);
            return Err(e).context("the database could not be opened");
        }
    };
    let readiness = store.readiness().await?;
    if !readiness.current() {
        // Another build's schema: its tables are not read with this build's queries.
        let report = serde_json::json!({
            "database": database,
            "migrations": readiness,
            "migrations_current": false,
            "running_process": running,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    let mut jobs = serde_json::Map::new();
    for job in engram::jobs::SCHEDULED {
        let runs = store.job_summary(job).await?;
        jobs.insert(
            job.to_string(),
            serde_json::json!({
                "done": runs.done,
                "failed": runs.failed,
                "running": runs.running,
                "last": runs.last.map(|r| serde_json::json!({
                    "run_key": r.run_key, "status": r.status, "attempts": r.attempts, "holder": r.holder,
                })),
            }),
        );
    }
    let sizes: serde_json::Map<String, serde_json::Value> = store
        .table_counts()
        .await?
        .into_iter()
        .map(|t| (t.table.to_string(), t.rows.into()))
        .collect();
    let report = serde_json::json!({
        "database": database,
        "migrations": readiness,
        "migrations_current": readiness.current(),
        "running_process": running,
        "jobs": jobs,
        "leases": store.leases().await?,
        "rows": sizes,
        "index_backlog": store.index_backlog().await?,
        "vectors": vector_report(&store.vector_coverage().await?),
        "languages": store
            .message_languages()
            .await?
            .into_iter()
            .map(|(code, n)| (code.unwrap_or_else(|| "unknown".into()), n.into()))
            .collect::<serde_json::Map<String, serde_json::Value>>(),
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

/// Each vector space's model, whether the configuration uses it, and the share of messages with
/// a vector in it.
fn vector_report(coverage: &engram::store::VectorCoverage) -> serde_json::Value {
    serde_json::json!({
        "messages": coverage.messages,
        "models": coverage.spaces.iter().map(|s| serde_json::json!({
            "model": s.model,
            "active": s.active,
            "vectors": s.vectors,
            "refused": s.refused,
            "share": coverage.share(s.id),
        })).collect::<Vec<_>>(),
    })
}

/// `engram bench …`: each benchmark prints its JSON report on stdout.
async fn bench(command: BenchCommand, config: &Config, secrets: &Secrets) -> anyhow::Result<()> {
    match command {
        BenchCommand::Ingest {
            postgres,
            single,
            batched,
            batch_size,
            texts,
        } => {
            anyhow::ensure!(batch_size > 0, "--batch-size must be positive");
            let turns: Option<Vec<String>> = match texts {
                Some(path) => Some(
                    engram::bench::retrieval::read_records(&path)?
                        .into_iter()
                        .flat_map(|r| r.sessions)
                        .flat_map(|s| s.turns)
                        .map(|t| t.text)
                        .collect(),
                ),
                None => None,
            };
            anyhow::ensure!(
                turns.as_ref().is_none_or(|t| !t.is_empty()),
                "--texts: the file has no turns"
            );
            let mut reports = Vec::new();
            for db in bench_dbs(postgres.as_deref(), &config.store).await? {
                eprintln!("ingest: {}", db.backend);
                reports.push(
                    bench_store::ingest(&db, single, batched, batch_size, turns.as_deref()).await?,
                );
                db.drop_db().await;
            }
            println!("{}", serde_json::to_string_pretty(&reports)?);
            Ok(())
        }
        BenchCommand::Search {
            postgres,
            sizes,
            queries,
        } => {
            anyhow::ensure!(
                sizes.windows(2).all(|w| w[0] < w[1]) && !sizes.is_empty(),
                "--sizes must be ascending"
            );
            let mut reports = Vec::new();
            for db in bench_dbs(postgres.as_deref(), &config.store).await? {
                reports.push(
                    bench_store::search(&db, &sizes, queries, |line| eprintln!("{line}")).await?,
                );
                db.drop_db().await;
            }
            println!("{}", serde_json::to_string_pretty(&reports)?);
            Ok(())
        }
        BenchCommand::Retrieval(args) => bench_retrieval(args, config, secrets).await,
        BenchCommand::Embed(args) => bench_embed(args, config, secrets).await,
        BenchCommand::Language { data } => {
            let text = std::fs::read_to_string(&data)
                .with_context(|| format!("reading {}", data.display()))?;
            let report = engram::bench::language::run(&text)?;
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(())
        }
        BenchCommand::Load {
            postgres,
            people,
            spaces,
            rate,
            secs,
            llm_latency_ms,
            llm_fault_rate,
            metrics,
        } => {
            if metrics {
                engram::telemetry::install()?;
            }
            let opts = LoadOptions {
                people,
                spaces,
                rate,
                secs,
                llm_latency_ms,
                llm_fault_rate,
            };
            bench_load(&opts, postgres.as_deref(), &config.store).await
        }
        BenchCommand::Context {
            people,
            days,
            messages,
            warm_rounds,
            seed,
            metrics,
        } => {
            if metrics {
                engram::telemetry::install()?;
            }
            anyhow::ensure!(
                people > 0 && days > 0 && messages > 0,
                "people, days and messages must be positive"
            );
            bench_context(&ContextBenchOptions {
                people,
                days,
                messages,
                warm_rounds,
                seed,
            })
            .await
        }
    }
}

/// `engram bench retrieval`: each data file through ingest and search with each embedder, on
/// SQLite or PostgreSQL (a new database for every run); the reports side by side.
async fn bench_retrieval(
    args: RetrievalArgs,
    config: &Config,
    secrets: &Secrets,
) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for provider in &args.embedder {
        let (config, chosen) =
            bench_embedder(config, secrets, provider, args.model_dir.as_deref())?;
        let name = match &chosen {
            Some(e) => e.model().to_string(),
            None => "none".to_string(),
        };
        // Messages' vectors may come from the cache; questions are always embedded.
        let index_embedder = match (&args.embed_cache, &chosen) {
            (Some(path), Some(inner)) => {
                Some(Arc::new(engram::bench::retrieval::CachedEmbedder::open(
                    inner.clone(),
                    format!("max_tokens={}", config.embed.max_tokens),
                    path.clone(),
                )) as engram::embed::SharedEmbedder)
            }
            _ => chosen.clone(),
        };
        for data in &args.data {
            let db = match &args.postgres {
                Some(url) => bench_store::BenchDb::postgres(url, &config.store).await?,
                None => bench_store::BenchDb::sqlite(&config.store).await?,
            };
            let report = engram::bench::retrieval::run(
                engram::bench::retrieval::RetrievalBenchOptions {
                    data: data.clone(),
                    store: db.store.clone(),
                    backend: db.backend.to_string(),
                    embedder: chosen.clone(),
                    index_embedder: index_embedder.clone(),
                    embedder_name: name.clone(),
                    settings: config.retrieval.clone(),
                    topics: config.episodes.topic_rules(),
                    index_batch: config.embed.index_batch(),
                    records: args.records,
                },
                |line| eprintln!("{line}"),
            )
            .await;
            db.drop_db().await;
            let report = report?;
            eprintln!("{}", engram::bench::retrieval::table(&report));
            reports.push(report);
        }
    }
    let json = serde_json::to_string_pretty(&reports)?;
    if let Some(path) = &args.out {
        std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{json}");
    eprintln!("{}", engram::bench::retrieval::side_by_side(&reports));
    Ok(())
}

/// The settings and embedder a benchmark names: "config" (the [embed] settings), "local",
/// "local:int8", "local:f32", "openai" or "none".
fn bench_embedder(
    config: &Config,
    secrets: &Secrets,
    provider: &str,
    model_dir: Option<&std::path::Path>,
) -> anyhow::Result<(Config, Option<engram::embed::SharedEmbedder>)> {
    let mut config = config.clone();
    if let Some(dir) = model_dir {
        config.embed.model_dir = dir.display().to_string();
    }
    let (provider, precision) = provider.split_once(':').unwrap_or((provider, ""));
    if provider != "config" {
        config.embed.provider = provider.to_string();
    }
    if !precision.is_empty() {
        config.embed.local_precision = precision.to_string();
    }
    config.validate()?;
    let embedder = app::embedder(&config, secrets)?;
    Ok((config, embedder))
}

/// `engram bench embed`: each embedder on the data file's texts, side by side.
async fn bench_embed(args: EmbedArgs, config: &Config, secrets: &Secrets) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for provider in &args.embedder {
        let (config, embedder) =
            bench_embedder(config, secrets, provider, args.model_dir.as_deref())?;
        let embedder = embedder.context("--embedder none has nothing to measure")?;
        let tokenizer = std::path::Path::new(&config.embed.model_dir).join("tokenizer.json");
        let report = engram::bench::embed::run(
            engram::bench::embed::EmbedBenchOptions {
                data: args.data.clone(),
                embedder,
                batch: config.embed.index_batch(),
                texts: args.texts,
                queries: args.queries,
                tokenizer: tokenizer
                    .is_file()
                    .then_some((tokenizer, config.embed.max_tokens)),
            },
            {
                let mut progress: Option<Progress> = None;
                move |done, total| {
                    let bar = progress
                        .get_or_insert_with(|| Progress::new(Some(total as u64), "texts embedded"));
                    bar.set(done as u64);
                    if done == total {
                        bar.finish();
                    }
                }
            },
        )
        .await?;
        eprintln!("{}", serde_json::to_string(&report)?);
        reports.push(report);
    }
    println!("{}", serde_json::to_string_pretty(&reports)?);
    Ok(())
}

/// `engram bench load`, on SQLite and on PostgreSQL when a URL is given.
#[cfg(feature = "test-util")]
async fn bench_load(
    opts: &LoadOptions,
    postgres: Option<&str>,
    store: &engram::config::StoreConfig,
) -> anyhow::Result<()> {
    let mut reports = Vec::new();
    for db in bench_dbs(postgres, store).await? {
        let report = engram::bench::load::run(opts, &db).await;
        db.drop_db().await;
        let report = report?;
        eprintln!("{}", serde_json::to_string(&report)?);
        reports.push(report);
    }
    println!("{}", serde_json::to_string_pretty(&reports)?);
    Ok(())
}

/// `engram bench context`.
#[cfg(feature = "test-util")]
async fn bench_context(opts: &ContextBenchOptions) -> anyhow::Result<()> {
    let report = engram::bench::context::run(opts).await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

/// Without the fake model server (a release build), the two benchmarks that need it say how to
/// get it.
#[cfg(not(feature = "test-util"))]
async fn bench_load(
    _: &LoadOptions,
    _: Option<&str>,
    _: &engram::config::StoreConfig,
) -> anyhow::Result<()> {
    Err(needs_test_util("load"))
}

#[cfg(not(feature = "test-util"))]
async fn bench_context(_: &ContextBenchOptions) -> anyhow::Result<()> {
    Err(needs_test_util("context"))
}

#[cfg(not(feature = "test-util"))]
fn needs_test_util(bench: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "`engram bench {bench}` runs against a fake model server, which this build leaves out; \
         run it with `cargo run --release --features test-util -- bench {bench}`"
    )
}

/// SQLite always; PostgreSQL when a server URL is given; both with the `[store]` settings.
async fn bench_dbs(
    postgres: Option<&str>,
    settings: &engram::config::StoreConfig,
) -> anyhow::Result<Vec<bench_store::BenchDb>> {
    let mut dbs = vec![bench_store::BenchDb::sqlite(settings).await?];
    match postgres {
        Some(url) => dbs.push(
            bench_store::BenchDb::postgres(url, settings)
                .await
                .context("creating the PostgreSQL bench database")?,
        ),
        None => {
            eprintln!("no --postgres URL (or ENGRAM_BENCH_POSTGRES_URL): measuring SQLite only")
        }
    }
    Ok(dbs)
}

/// The bot and what runs beside it: the store, chat model and embedder, wired by `app`, the
/// background indexer and the HTTP listener (when `server.listen` is set).
struct Running {
    bot: Arc<engram::bot::Bot>,
    memory: app::Memory,
    store: Arc<dyn engram::store::Store>,
    llm: Option<Arc<dyn engram::llm::ChatModel>>,
    platforms: PlatformStatus,
    /// The memory API (when `server.api_keys` has keys).
    api: Option<Arc<engram::service::memory_api::MemoryApi>>,
    indexer: tokio::task::JoinHandle<()>,
    stop_indexer: tokio::sync::watch::Sender<bool>,
    listener: Option<(engram::service::Listening, tokio::sync::watch::Sender<bool>)>,
}

impl Running {
    /// Stops the indexer and the listener and waits for them.
    async fn stop(self) {
        let _ = self.stop_indexer.send(true);
        let _ = self.indexer.await;
        if let Some((listening, stop)) = self.listener {
            let _ = stop.send(true);
            let _ = listening.task.await;
        }
    }
}

/// The bot and what runs beside it, the memory API answering to `keys`; with `listen`, the
/// HTTP listener of `server.listen` too.
async fn start_bot(
    config: &Config,
    secrets: &Secrets,
    clock: Arc<dyn Clock>,
    keys: ApiKeys,
    listen: bool,
) -> anyhow::Result<Running> {
    let store = app::open_store(config).await.with_context(|| {
        format!(
            "opening the database {}",
            engram::config::redact_url(&config.store.url)
        )
    })?;
    let llm = app::chat_model(config, secrets, clock.clone())?;
    let embedder = app::embedder(config, secrets).context("loading the embedding model")?;
    let built = app::build_bot(
        config,
        store.clone(),
        llm.clone(),
        embedder.clone(),
        app::transcriber(config, secrets)?,
        clock.clone(),
    )?;
    let (bot, memory, phrases) = (Arc::new(built.bot), built.memory, built.phrases);
    memory.manager.follow_changes().await?;
    let api = app::memory_api(
        config,
        keys,
        bot.clone(),
        &memory,
        store.clone(),
        clock.clone(),
    );
    app::activate_vectors(store.as_ref(), embedder.as_ref()).await?;
    let (indexer, stop_indexer) =
        app::start_indexer(config, store.clone(), embedder, clock.clone(), &phrases);
    let platforms = PlatformStatus::default();
    let listener = if listen {
        if secrets.admin_token.is_some() && config.server.listen.is_empty() {
            tracing::warn!("ENGRAM_ADMIN_TOKEN is set but server.listen is empty: no admin page");
        }
        let admin = app::admin_page(
            secrets.admin_token.as_deref(),
            &memory,
            store.clone(),
            clock.clone(),
        )?;
        let programs = engram::service::Programs {
            api: api.clone(),
            admin,
        };
        app::start_service(config, store.clone(), platforms.clone(), programs).await?
    } else {
        None
    };
    Ok(Running {
        bot,
        memory,
        store,
        llm,
        platforms,
        api,
        indexer,
        stop_indexer,
        listener,
    })
}

/// `engram run` with platform tokens: Discord and Telegram at once, until Ctrl-C or SIGTERM.
async fn serve(config: &Config, secrets: &Secrets) -> anyhow::Result<()> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let running = start_bot(config, secrets, clock.clone(), server_keys(config)?, true).await?;
    let (jobs, stop_jobs) = app::start_scheduler(
        config,
        &running.memory,
        running.store.clone(),
        clock.clone(),
        running.llm.clone(),
    )?;
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("shutting down");
        let _ = stop.send(true);
    });
    let lease = app::telegram_lease(config, secrets, running.store.clone(), clock.clone());
    let shards = app::discord_lease(config, secrets, running.store.clone(), clock.clone());
    let exits = app::run_platforms(
        config,
        secrets,
        running.bot.clone(),
        running.platforms.clone(),
        lease,
        shards,
        shutdown,
    )
    .await;
    let _ = stop_jobs.send(true);
    let _ = jobs.await;
    running.stop().await;
    let failed: Vec<String> = exits
        .iter()
        .filter_map(|e| Some(format!("{}: {}", e.platform.as_str(), e.error.as_ref()?)))
        .collect();
    anyhow::ensure!(failed.is_empty(), "{}", failed.join("; "));
    Ok(())
}

async fn chat(config: &Config, secrets: &Secrets, args: ChatArgs) -> anyhow::Result<()> {
    let manual = args
        .script
        .as_ref()
        .map(|_| Arc::new(ManualClock::new(chrono::Utc::now())));
    let clock: Arc<dyn Clock> = match &manual {
        Some(m) => m.clone(),
        None => Arc::new(SystemClock),
    };
    let running = start_bot(config, secrets, clock.clone(), server_keys(config)?, true).await?;
    let bot = running.bot.clone();
    running.platforms.connected(Platform::Console);
    let opts = ConsoleOptions {
        speaker: args.speaker.unwrap_or_else(default_speaker),
        space: args.space,
        channel: args.channel,
        restricted: args.restricted,
        moderator: args.moderator,
    };
    let sink = ConsoleSink::new(tokio::io::stdout(), &config.bot.name);
    match (args.script, manual) {
        (Some(path), Some(clock)) => {
            let input: Box<dyn tokio::io::AsyncRead + Unpin> = if path.as_os_str() == "-" {
                Box::new(tokio::io::stdin())
            } else {
                Box::new(
                    tokio::fs::File::open(&path)
                        .await
                        .with_context(|| format!("opening script {}", path.display()))?,
                )
            };
            let played =
                console::run_script(&bot, opts, clock, tokio::io::BufReader::new(input), &sink)
                    .await?;
            tracing::info!(lines = played, "script finished");
        }
        _ => {
            let (jobs, stop_jobs) = app::start_scheduler(
                config,
                &running.memory,
                running.store.clone(),
                clock.clone(),
                running.llm.clone(),
            )?;
            let stdin = tokio::io::BufReader::new(tokio::io::stdin());
            console::run_interactive(&bot, opts, clock, stdin, &sink).await?;
            let _ = stop_jobs.send(true);
            let _ = jobs.await;
        }
    }
    running
        .platforms
        .set(Platform::Console, Connection::Stopped);
    running.stop().await;
    Ok(())
}

/// The memory tier of a command-line run, no platform and no model. The database must
/// exist: these commands read or add to a deployment, never start one.
async fn offline_memory(
    config: &Config,
) -> anyhow::Result<(Arc<dyn engram::store::Store>, app::Memory)> {
    let store = app::open_existing_store(config).await?;
    let memory = app::offline_memory(config, store.clone(), Arc::new(engram::domain::SystemClock))?;
    Ok((store, memory))
}

/// A person by id or by name on any platform.
async fn find_person(
    store: &Arc<dyn engram::store::Store>,
    user: &str,
) -> anyhow::Result<engram::domain::PersonId> {
    use engram::domain::Platform;
    if let Ok(id) = user.parse::<i64>()
        && store.person(engram::domain::PersonId(id)).await?.is_some()
    {
        return Ok(engram::domain::PersonId(id));
    }
    for platform in [Platform::Console, Platform::Discord, Platform::Telegram] {
        if let Some(id) = store.find_identity(platform, user).await? {
            return Ok(id);
        }
        match store
            .find_people(platform, user, engram::store::Among::Everyone)
            .await?
            .as_slice()
        {
            [] => {}
            [one] => return Ok(one.person),
            many => anyhow::bail!(
                "{} people on {platform} go by {user:?}: give a person id ({})",
                many.len(),
                many.iter()
                    .map(|m| m.person.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    anyhow::bail!("no person {user:?} in this database (give a person id or a name)")
}

async fn extract(
    config: &Config,
    secrets: &Secrets,
    user: Option<String>,
    all: bool,
    dry_run: bool,
    day: Option<chrono::NaiveDate>,
) -> anyhow::Result<()> {
    let store = app::open_existing_store(config).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let llm = app::chat_model(config, secrets, clock.clone())?;
    let Some(extractor) = app::extractor(
        config,
        store.clone(),
        llm,
        clock.clone(),
        engram::store::process_holder(),
        app::prompts(config)?.0,
    )?
    else {
        anyhow::bail!(
            "extraction needs a language model: set llm.base_url (and ENGRAM_LLM_API_KEY)"
        );
    };
    let day = day.unwrap_or_else(|| clock.now().date_naive());
    let runs = if all {
        extractor
            .extract_all(day, dry_run, {
                let mut progress: Option<Progress> = None;
                move |done, total| {
                    let bar =
                        progress.get_or_insert_with(|| Progress::new(Some(total as u64), "people"));
                    bar.set(done as u64);
                    if done == total {
                        bar.finish();
                    }
                }
            })
            .await?
    } else {
        let person = find_person(&store, user.as_deref().unwrap_or_default()).await?;
        extractor.extract_person(person, day, dry_run).await?
    };
    println!("{}", serde_json::to_string_pretty(&runs)?);
    if dry_run {
        // The same, for people: what each run would change, entry by entry.
        for run in &runs {
            eprintln!(
                "person {} in {} on {} ({}): {} to add, {} to update, {} to delete, {} to note",
                run.person,
                run.scope,
                run.day,
                run.status,
                run.written,
                run.updated,
                run.removed,
                run.noted
            );
            for change in &run.changes {
                eprintln!("  {}", change.line());
            }
        }
        eprintln!("dry run: nothing was written");
    }
    let failed = runs.iter().filter(|r| r.error.is_some()).count();
    anyhow::ensure!(
        failed == 0,
        "{failed} of {} runs failed (see \"error\")",
        runs.len()
    );
    Ok(())
}

async fn search(config: &Config, user: &str, query: &str) -> anyhow::Result<()> {
    let store = app::open_existing_store(config).await?;
    let person = find_person(&store, user).await?;
    let entries = store.entries(person, None).await?;
    let found = engram::memory::entries::rank_entries(entries, query, 20);
    if found.is_empty() {
        println!("nothing matches {query:?}");
    }
    for (i, (e, score)) in found.iter().enumerate() {
        println!(
            "{}. [{}] {} (score {score:.2}, confidence {:.2}, {})",
            i + 1,
            e.category.as_str(),
            e.value,
            e.confidence,
            e.origin
        );
    }
    Ok(())
}

async fn export(config: &Config, out: &std::path::Path) -> anyhow::Result<()> {
    let (store, memory) = offline_memory(config).await?;
    let people = store.people_with_memory().await?;
    let progress = Progress::new(Some(people.len() as u64), "people exported");
    for (n, person) in people.iter().enumerate() {
        // "12-alice": the id import reads, and a name a person can find.
        let name: String = store
            .person(*person)
            .await?
            .map(|p| p.display_name)
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { '_' })
            .take(40)
            .collect();
        let dir = if name.is_empty() {
            out.join(person.0.to_string())
        } else {
            out.join(format!("{}-{name}", person.0))
        };
        for (path, text) in memory.entries.export(*person).await? {
            let file = dir.join(&path);
            std::fs::create_dir_all(file.parent().expect("a file in a directory"))?;
            std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        }
        progress.set(n as u64 + 1);
    }
    progress.finish();
    println!("{} people exported to {}", people.len(), out.display());
    Ok(())
}

async fn import(config: &Config, dir: &std::path::Path) -> anyhow::Result<()> {
    let (store, memory) = offline_memory(config).await?;
    let mut dirs: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    dirs.sort_by_key(|d| d.file_name());
    // Every folder is read and checked before anything is written: an import into the wrong
    // database stops whole, not half-way.
    let mut plan = Vec::new();
    for d in dirs {
        let name = d.file_name().to_string_lossy().to_string();
        let Ok(id) = name.split('-').next().unwrap_or_default().parse::<i64>() else {
            anyhow::bail!(
                "{}: export folders are named by person id (\"12\" or \"12-alice\")",
                d.path().display()
            );
        };
        let person = engram::domain::PersonId(id);
        anyhow::ensure!(
            store.person(person).await?.is_some(),
            "person {id} is not in this database; import into the database the export came from"
        );
        let mut files = Vec::new();
        let main = d.path().join("MEMORY.md");
        if main.exists() {
            let text = std::fs::read_to_string(&main)?;
            // The accounts the export names must include one of this person's here.
            if let Some(exported) = engram::memory::entries::exported_accounts(&text) {
                let here: Vec<String> = store
                    .accounts(person)
                    .await?
                    .iter()
                    .map(|a| format!("{}:{}", a.platform, a.external_id))
                    .collect();
                anyhow::ensure!(
                    exported.is_empty() || exported.iter().any(|a| here.contains(a)),
                    "{} was exported for {}, but person {id} here is {}: import into the database the export came from",
                    d.path().display(),
                    exported.join(", "),
                    if here.is_empty() {
                        "no account".to_string()
                    } else {
                        here.join(", ")
                    }
                );
            }
            files.push(("MEMORY.md".to_string(), text));
        }
        let notes = d.path().join("memory");
        if notes.exists() {
            let mut days: Vec<_> = std::fs::read_dir(&notes)?.collect::<Result<_, _>>()?;
            days.sort_by_key(|f| f.file_name());
            for f in days {
                let name = f.file_name().to_string_lossy().to_string();
                files.push((format!("memory/{name}"), std::fs::read_to_string(f.path())?));
            }
        }
        plan.push((d.path(), person, files));
    }
    let progress = Progress::new(Some(plan.len() as u64), "people imported");
    for (n, (path, person, files)) in plan.iter().enumerate() {
        let (entries, notes) = memory
            .entries
            .import(*person, files)
            .await
            .with_context(|| format!("importing {}", path.display()))?;
        tracing::info!(%person, entries, notes, "imported");
        progress.set(n as u64 + 1);
    }
    progress.finish();
    println!("{} people imported from {}", plan.len(), dir.display());
    Ok(())
}

async fn migrate(config: &Config, from: &str, to: &str) -> anyhow::Result<()> {
    use engram::config::redact_url;
    use engram::store::copy::{copy_all, summarize};
    let (source_url, target_url) = (
        engram::store::DbUrl::parse(from).context("--from")?,
        engram::store::DbUrl::parse(to).context("--to")?,
    );
    anyhow::ensure!(
        !source_url.same_database(&target_url),
        "--from and --to name the same database"
    );
    let source = app::open_existing_store_url(from, &config.store)
        .await
        .with_context(|| format!("opening the source {}", redact_url(from)))?;
    let target = app::open_store_url(to, &config.store)
        .await
        .with_context(|| format!("opening the target {}", redact_url(to)))?;
    eprintln!("copying {} -> {}", redact_url(from), redact_url(to));
    let mut last = String::new();
    let progress = Progress::new(None, "rows read");
    let added = copy_all(source.as_ref(), target.as_ref(), |table, rows| {
        if table != last {
            progress.label(format!("{table}: rows read"));
            last = table.to_string();
        }
        progress.set(rows);
    })
    .await?;
    progress.finish();
    let (before, after) = (
        summarize(source.as_ref()).await?,
        summarize(target.as_ref()).await?,
    );
    println!(
        "{:<22} {:>10} {:>10}  {:<16} {:<16} ",
        "table", "from rows", "to rows", "from checksum", "to checksum"
    );
    let mut equal = true;
    for (a, b) in before.iter().zip(&after) {
        let same = a == b;
        equal &= same;
        println!(
            "{:<22} {:>10} {:>10}  {:<16} {:<16} {}",
            a.table,
            a.rows,
            b.rows,
            &a.checksum[..16],
            &b.checksum[..16],
            if same { "ok" } else { "DIFFERENT" }
        );
    }
    println!("{added} rows added");
    anyhow::ensure!(
        equal,
        "the target differs from the source (it held other data before?)"
    );
    Ok(())
}
