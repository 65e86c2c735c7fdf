//! Settings: `config/default.toml` (embedded, so the binary runs anywhere), then a local file,
//! then `ENGRAM__SECTION__KEY` variables. Secrets are read from the environment only and are
//! never part of `Config`'s `Debug` output or logs.

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration is invalid: {0}")]
    Parse(String),
    #[error("configuration file {0} does not exist")]
    MissingFile(PathBuf),
    #[error("{key}: {problem}")]
    Invalid { key: &'static str, problem: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub bot: BotConfig,
    pub discord: DiscordConfig,
    pub telegram: TelegramConfig,
    pub store: StoreConfig,
    pub llm: LlmConfig,
    pub memory: MemoryConfig,
    pub jobs: JobsConfig,
    pub embed: EmbedConfig,
    pub retrieval: RetrievalConfig,
    pub limits: LimitsConfig,
    pub log: LogConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    pub api_url: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    pub api_url: String,
    pub poll_secs: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedConfig {
    pub provider: String,
    pub model_dir: String,
    pub base_url: String,
    pub model: String,
    pub dimensions: usize,
    pub batch_size: usize,
    pub max_tokens: usize,
    pub timeout_secs: f64,
    pub idle_secs: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalConfig {
    pub k1: f64,
    pub b: f64,
    pub candidates: usize,
    pub episode_candidates: usize,
    pub rrf_k: f64,
    pub bm25_weight: f64,
    pub vector_weight: f64,
    pub episode_weight: f64,
    pub episode_rrf_k: f64,
    pub episode_rrf_k_bm25_only: f64,
    pub time_weight: f64,
    pub speaker_weight: f64,
    pub phrase_weight: f64,
    pub max_query_terms: usize,
    pub items: usize,
    pub episode_gap_minutes: i64,
    pub episode_merge_similarity: f32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobsConfig {
    pub day_summaries_after: String,
    pub tick_secs: u64,
    pub lease_secs: u64,
    pub retry_backoff_secs: u64,
}

impl JobsConfig {
    pub fn day_summaries_time(&self) -> chrono::NaiveTime {
        chrono::NaiveTime::parse_from_str(&self.day_summaries_after, "%H:%M").expect("validated")
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BotConfig {
    pub name: String,
    pub moderators: Vec<String>,
    pub max_command_chars: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    pub url: String,
    pub max_connections: u32,
    pub busy_timeout_ms: u64,
    pub acquire_timeout_ms: u64,
    pub statement_timeout_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    pub base_url: String,
    pub model: String,
    pub timeout_secs: f64,
    pub max_retries: u32,
    pub backoff_ms: u64,
    pub max_retry_after_secs: u64,
    pub breaker_failures: u32,
    pub breaker_cooldown_secs: u64,
    pub reply_temperature: f32,
    pub max_reply_tokens: u32,
    pub reply_tools: bool,
    pub max_tool_rounds: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    pub context_budget_tokens: usize,
    pub tokenizer: String,
    pub day_summary_chars: usize,
    pub history_summary_chars: usize,
    pub history_days: u32,
    pub working_memory_messages: usize,
    pub max_fact_chars: usize,
    pub max_facts_chars: usize,
    pub max_summary_messages: usize,
    pub max_message_chars_in_prompt: usize,
    pub cache_capacity: u64,
    pub memory_md_max_words: usize,
    pub durable_confidence: f64,
    pub extraction_at: String,
    pub max_extraction_messages: usize,
    pub extraction_catch_up_days: u32,
    pub daily_notes_days: u32,
}

impl MemoryConfig {
    pub fn extraction_time(&self) -> chrono::NaiveTime {
        chrono::NaiveTime::parse_from_str(&self.extraction_at, "%H:%M").expect("validated")
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub answers_per_person_per_minute: u32,
    pub answers_per_space_per_minute: u32,
    pub space_daily_llm_budget: u64,
    pub mentions_per_message: usize,
}

impl LimitsConfig {
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
pub struct LogConfig {
    pub level: String,
    pub format: String,
}

/// Secrets, from the environment only. `Debug` shows whether each is set, never its value.
#[derive(Clone, Default)]
pub struct Secrets {
    pub llm_api_key: Option<String>,
    pub embed_api_key: Option<String>,
    pub discord_token: Option<String>,
    pub telegram_token: Option<String>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |s: &Option<String>| if s.is_some() { "<set>" } else { "<unset>" };
        f.debug_struct("Secrets")
            .field("llm_api_key", &shown(&self.llm_api_key))
            .field("embed_api_key", &shown(&self.embed_api_key))
            .field("discord_token", &shown(&self.discord_token))
            .field("telegram_token", &shown(&self.telegram_token))
            .finish()
    }
}

impl Secrets {
    pub fn from_env() -> Secrets {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Secrets {
            llm_api_key: var("ENGRAM_LLM_API_KEY").or_else(|| var("OPENAI_API_KEY")),
            embed_api_key: var("ENGRAM_EMBED_API_KEY")
                .or_else(|| var("ENGRAM_LLM_API_KEY"))
                .or_else(|| var("OPENAI_API_KEY")),
            discord_token: var("DISCORD_TOKEN"),
            telegram_token: var("TELEGRAM_TOKEN"),
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
            .map_err(|e| ConfigError::Parse(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        fn invalid(key: &'static str, problem: impl Into<String>) -> ConfigError {
            ConfigError::Invalid {
                key,
                problem: problem.into(),
            }
        }
        if self.bot.name.trim().is_empty() {
            return Err(invalid("bot.name", "must not be empty"));
        }
        if self.bot.name.chars().any(|c| c.is_whitespace() || c == '@') {
            return Err(invalid("bot.name", "must be one word without '@'"));
        }
        for m in &self.bot.moderators {
            let ok = m.split_once(':').is_some_and(|(p, id)| {
                crate::domain::Platform::parse(p).is_some() && !id.is_empty()
            });
            if !ok {
                return Err(invalid(
                    "bot.moderators",
                    format!(
                        "{m:?} is not \"platform:user_id\" (platform: console, discord or telegram)"
                    ),
                ));
            }
        }
        if !["sqlite:", "postgres://", "postgresql://"]
            .iter()
            .any(|p| self.store.url.starts_with(p))
        {
            return Err(invalid(
                "store.url",
                format!(
                    "unsupported database URL {:?}: use sqlite://PATH or postgres://USER@HOST/DB",
                    redact_url(&self.store.url)
                ),
            ));
        }
        if self.store.max_connections == 0 {
            return Err(invalid("store.max_connections", "must be at least 1"));
        }
        let url = &self.llm.base_url;
        let offline_or_http =
            url.is_empty() || url.starts_with("http://") || url.starts_with("https://");
        if !offline_or_http {
            return Err(invalid(
                "llm.base_url",
                format!(
                    "{:?} must start with http:// or https:// (or be empty for offline)",
                    redact_url(&self.llm.base_url)
                ),
            ));
        }
        if !(self.llm.timeout_secs > 0.0 && self.llm.timeout_secs <= 3600.0) {
            return Err(invalid("llm.timeout_secs", "must be between 0 and 3600"));
        }
        if self.llm.model.trim().is_empty() {
            return Err(invalid("llm.model", "must not be empty"));
        }
        if !(0.0..=2.0).contains(&self.llm.reply_temperature) {
            return Err(invalid("llm.reply_temperature", "must be between 0 and 2"));
        }
        if self.memory.context_budget_tokens < 100 {
            return Err(invalid(
                "memory.context_budget_tokens",
                "must be at least 100",
            ));
        }
        if !matches!(self.memory.tokenizer.as_str(), "cl100k_base" | "o200k_base") {
            return Err(invalid(
                "memory.tokenizer",
                "must be cl100k_base or o200k_base",
            ));
        }
        if self.memory.day_summary_chars < 50 || self.memory.history_summary_chars < 50 {
            return Err(invalid("memory.*_summary_chars", "must be at least 50"));
        }
        if self.memory.history_days == 0 || self.memory.history_days > 30 {
            return Err(invalid("memory.history_days", "must be between 1 and 30"));
        }
        if self.memory.max_fact_chars == 0
            || self.memory.max_facts_chars < self.memory.max_fact_chars
        {
            return Err(invalid(
                "memory.max_facts_chars",
                "must be at least memory.max_fact_chars (and both above 0)",
            ));
        }
        if chrono::NaiveTime::parse_from_str(&self.jobs.day_summaries_after, "%H:%M").is_err() {
            return Err(invalid(
                "jobs.day_summaries_after",
                "must be a UTC time HH:MM",
            ));
        }
        if chrono::NaiveTime::parse_from_str(&self.memory.extraction_at, "%H:%M").is_err() {
            return Err(invalid("memory.extraction_at", "must be a UTC time HH:MM"));
        }
        if !(0.0..=1.0).contains(&self.memory.durable_confidence)
            || self.memory.memory_md_max_words < 50
            || self.memory.daily_notes_days == 0
        {
            return Err(invalid(
                "memory.durable_confidence",
                "must be within 0..1 (memory_md_max_words at least 50, daily_notes_days at least 1)",
            ));
        }
        if !(1..=86_400).contains(&self.jobs.retry_backoff_secs) {
            return Err(invalid(
                "jobs.retry_backoff_secs",
                "must be between 1 and 86400",
            ));
        }
        if self.memory.extraction_catch_up_days > 30 {
            return Err(invalid(
                "memory.extraction_catch_up_days",
                "must be between 0 and 30",
            ));
        }
        if self.limits.mentions_per_message == 0 {
            return Err(invalid("limits.mentions_per_message", "must be at least 1"));
        }
        if !(1..=15).contains(&self.telegram.poll_secs)
            || !(self.telegram.api_url.starts_with("http://")
                || self.telegram.api_url.starts_with("https://"))
        {
            return Err(invalid(
                "telegram.api_url",
                "must be an http(s) URL (and telegram.poll_secs within 1..=15)",
            ));
        }
        if self.llm.reply_tools && self.llm.max_tool_rounds == 0 {
            return Err(invalid(
                "llm.max_tool_rounds",
                "must be at least 1 when reply_tools is on",
            ));
        }
        if self.jobs.tick_secs == 0 || self.jobs.lease_secs < 10 {
            return Err(invalid(
                "jobs.tick_secs",
                "tick_secs must be at least 1 and lease_secs at least 10",
            ));
        }
        if !matches!(
            self.embed.provider.as_str(),
            "auto" | "local" | "openai" | "none"
        ) {
            return Err(invalid(
                "embed.provider",
                "must be \"auto\", \"local\", \"openai\" or \"none\"",
            ));
        }
        if self.embed.provider == "openai"
            && !(self.embed.base_url.starts_with("http://")
                || self.embed.base_url.starts_with("https://"))
        {
            return Err(invalid(
                "embed.base_url",
                "must start with http:// or https:// when embed.provider = \"openai\"",
            ));
        }
        if self.embed.dimensions == 0 || self.embed.dimensions > 4096 {
            return Err(invalid("embed.dimensions", "must be between 1 and 4096"));
        }
        if self.embed.batch_size == 0 || self.embed.max_tokens < 8 || self.embed.max_tokens > 512 {
            return Err(invalid(
                "embed.batch_size",
                "batch_size must be at least 1 and max_tokens between 8 and 512",
            ));
        }
        let r = &self.retrieval;
        if !(r.k1 >= 0.0 && r.k1 <= 10.0 && (0.0..=1.0).contains(&r.b)) {
            return Err(invalid(
                "retrieval.k1",
                "k1 must be between 0 and 10 and b between 0 and 1",
            ));
        }
        if r.candidates == 0
            || r.items == 0
            || r.rrf_k <= 0.0
            || r.episode_rrf_k <= 0.0
            || r.episode_rrf_k_bm25_only <= 0.0
            || r.max_query_terms == 0
        {
            return Err(invalid(
                "retrieval.candidates",
                "candidates, items, max_query_terms and rrf_k must be above 0",
            ));
        }
        if !(0.0..=1.0).contains(&r.episode_merge_similarity) || r.episode_gap_minutes <= 0 {
            return Err(invalid(
                "retrieval.episode_merge_similarity",
                "must be between 0 and 1, and episode_gap_minutes above 0",
            ));
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(invalid("log.format", "must be \"text\" or \"json\""));
        }
        Ok(())
    }

    pub fn is_moderator(&self, platform: crate::domain::Platform, user_id: &str) -> bool {
        self.bot
            .moderators
            .iter()
            .any(|m| m.split_once(':') == Some((platform.as_str(), user_id)))
    }
}

fn reject_secrets_in_file(path: &Path) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Parse(format!("cannot read {}: {e}", path.display())))?;
    // A file that is not TOML is reported by the loader, with its line.
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(());
    };
    match secret_in(&table, "") {
        Some(key) => Err(ConfigError::Parse(format!(
            "{}: {key} is a secret; secrets come only from the environment \
             (ENGRAM_LLM_API_KEY, ENGRAM_EMBED_API_KEY, DISCORD_TOKEN, TELEGRAM_TOKEN, and a \
             database password in ENGRAM__STORE__URL)",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// The first key of `table` (dotted, under `prefix`) that holds a secret: a key named as one
/// (`api_key`, `token`, `password`, …, not merely containing such a word, so
/// `context_budget_tokens` is a setting), or a URL with a password in it.
fn secret_in(table: &toml::Table, prefix: &str) -> Option<String> {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let name = key.to_ascii_lowercase();
        if SECRET_KEYS.contains(&name.as_str()) {
            return Some(path);
        }
        match value {
            toml::Value::Table(inner) => {
                if let Some(found) = secret_in(inner, &path) {
                    return Some(found);
                }
            }
            toml::Value::String(v) if url_has_password(v) => return Some(path),
            _ => {}
        }
    }
    None
}

/// Whether a URL carries a password ("scheme://user:password@host").
fn url_has_password(value: &str) -> bool {
    let Some((_, rest)) = value.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(user, _)| user.contains(':'))
}

/// A URL with any user:password part hidden, safe to print.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_string(),
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
    fn secrets_debug_hides_values() {
        let s = Secrets {
            llm_api_key: Some("sk-very-secret".into()),
            ..Secrets::default()
        };
        let shown = format!("{s:?}");
        assert!(!shown.contains("sk-very-secret") && shown.contains("<set>"));
    }
}
