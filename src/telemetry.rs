//! Metrics: the names Engram records through the `metrics` facade, where each part calls in
//! when its work happens, and the Prometheus recorder the listener's `/metrics` renders.
//! Without an installed recorder (no `server.listen`) every call here is a no-op.

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Duration;

/// Messages stored, per platform (bot replies included, labelled `author="bot"`).
pub const MESSAGES_STORED: &str = "engram_messages_stored_total";
/// Replies sent, per platform.
pub const REPLIES: &str = "engram_replies_total";
/// Seconds from a message's arrival to its reply being ready, per platform.
pub const REPLY_SECONDS: &str = "engram_reply_seconds";
/// Chat-model calls, per task.
pub const LLM_CALLS: &str = "engram_llm_calls_total";
/// Chat-model calls that failed, per task.
pub const LLM_ERRORS: &str = "engram_llm_errors_total";
/// Chat-model tokens, per task and kind (prompt, completion).
pub const LLM_TOKENS: &str = "engram_llm_tokens_total";
/// Calls refused by the open circuit breaker, per task.
pub const LLM_BREAKER_REFUSALS: &str = "engram_llm_breaker_refusals_total";
/// 1 while the chat model's circuit breaker is open.
pub const LLM_BREAKER_OPEN: &str = "engram_llm_breaker_open";
/// Texts embedded, per use (index, query).
pub const EMBED_TEXTS: &str = "engram_embed_texts_total";
/// Seconds per embedding call, per use.
pub const EMBED_SECONDS: &str = "engram_embed_seconds";
/// Messages waiting for the indexer (postings, episode, vector).
pub const EMBED_BACKLOG: &str = "engram_index_backlog";
/// Cache lookups answered, per cache.
pub const CACHE_HITS: &str = "engram_cache_hits_total";
/// Cache lookups that had to build the value, per cache.
pub const CACHE_MISSES: &str = "engram_cache_misses_total";
/// Scheduled job runs that ended, per job and outcome (done, failed).
pub const JOB_RUNS: &str = "engram_job_runs_total";
/// Seconds per store query, per operation.
pub const STORE_QUERY_SECONDS: &str = "engram_store_query_seconds";

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Histogram buckets (seconds): a millisecond to a minute.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0,
];

#[derive(Debug, thiserror::Error)]
/// The recorder could not be installed (another one is, from outside Engram).
#[error("cannot install the metrics recorder: {0}")]
pub struct TelemetryError(#[from] metrics_exporter_prometheus::BuildError);

/// Installs the Prometheus recorder for this process (once; later calls get the same handle)
/// and describes every metric.
pub fn install() -> Result<PrometheusHandle, TelemetryError> {
    // One installer at a time: two listeners starting at once share one recorder.
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = HANDLE.get() {
        return Ok(h.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets(&BUCKETS)?
        .install_recorder()?;
    let handle = HANDLE.get_or_init(|| handle).clone();
    describe();
    Ok(handle)
}

fn describe() {
    describe_counter!(
        MESSAGES_STORED,
        "Messages stored, per platform and author kind"
    );
    describe_counter!(REPLIES, "Replies sent, per platform");
    describe_histogram!(
        REPLY_SECONDS,
        Unit::Seconds,
        "Time from a message to its reply"
    );
    describe_counter!(LLM_CALLS, "Chat-model calls, per task");
    describe_counter!(LLM_ERRORS, "Chat-model calls that failed, per task");
    describe_counter!(LLM_TOKENS, "Chat-model tokens, per task and kind");
    describe_counter!(
        LLM_BREAKER_REFUSALS,
        "Calls skipped while the circuit breaker was open, per task"
    );
    describe_gauge!(LLM_BREAKER_OPEN, "1 while the chat model's breaker is open");
    describe_counter!(EMBED_TEXTS, "Texts embedded, per use");
    describe_histogram!(EMBED_SECONDS, Unit::Seconds, "Embedding call time, per use");
    describe_gauge!(EMBED_BACKLOG, "Messages waiting for the indexer");
    describe_counter!(CACHE_HITS, "Cache lookups answered, per cache");
    describe_counter!(
        CACHE_MISSES,
        "Cache lookups that built the value, per cache"
    );
    describe_counter!(JOB_RUNS, "Scheduled job runs, per job and outcome");
    describe_histogram!(
        STORE_QUERY_SECONDS,
        Unit::Seconds,
        "Store query time, per operation"
    );
}

/// A message was stored on `platform`, by a person or the bot.
pub fn message_stored(platform: &'static str, by_bot: bool) {
    let author = if by_bot { "bot" } else { "person" };
    counter!(MESSAGES_STORED, "platform" => platform, "author" => author).increment(1);
}

/// A reply on `platform` took `elapsed` from the message it answers.
pub fn reply_sent(platform: &'static str, elapsed: Duration) {
    counter!(REPLIES, "platform" => platform).increment(1);
    metrics::histogram!(REPLY_SECONDS, "platform" => platform).record(elapsed.as_secs_f64());
}

/// One chat-model call of `task` ended: its tokens when it answered, an error when not.
pub fn llm_call(task: &'static str, tokens: Option<(u64, u64)>) {
    counter!(LLM_CALLS, "task" => task).increment(1);
    match tokens {
        Some((prompt, completion)) => {
            counter!(LLM_TOKENS, "task" => task, "kind" => "prompt").increment(prompt);
            counter!(LLM_TOKENS, "task" => task, "kind" => "completion").increment(completion);
        }
        None => counter!(LLM_ERRORS, "task" => task).increment(1),
    }
}

/// A call of `task` was skipped because the breaker is open.
pub fn llm_breaker_refused(task: &'static str) {
    counter!(LLM_BREAKER_REFUSALS, "task" => task).increment(1);
}

/// The breaker opened (true) or closed (false).
pub fn llm_breaker(open: bool) {
    gauge!(LLM_BREAKER_OPEN).set(if open { 1.0 } else { 0.0 });
}

/// `texts` texts were embedded for `usage` ("index", "query") in `elapsed`.
pub fn embedded(usage: &'static str, texts: usize, elapsed: Duration) {
    counter!(EMBED_TEXTS, "use" => usage).increment(texts as u64);
    metrics::histogram!(EMBED_SECONDS, "use" => usage).record(elapsed.as_secs_f64());
}

/// Messages waiting for the indexer now.
pub fn index_backlog(messages: i64) {
    gauge!(EMBED_BACKLOG).set(messages as f64);
}

/// A lookup in `cache` found its value (or not).
pub fn cache_lookup(cache: &'static str, hit: bool) {
    if hit {
        counter!(CACHE_HITS, "cache" => cache).increment(1);
    } else {
        counter!(CACHE_MISSES, "cache" => cache).increment(1);
    }
}

/// A run of `job` ended with `outcome` ("done" or "failed").
pub fn job_run(job: &str, outcome: &'static str) {
    counter!(JOB_RUNS, "job" => job.to_string(), "outcome" => outcome).increment(1);
}

/// A store operation took `elapsed`.
pub fn store_query(op: &'static str, elapsed: Duration) {
    metrics::histogram!(STORE_QUERY_SECONDS, "op" => op).record(elapsed.as_secs_f64());
}

/// Runs `work`, recording its time as store operation `op`.
pub async fn timed<T>(op: &'static str, work: impl std::future::Future<Output = T>) -> T {
    let start = std::time::Instant::now();
    let out = work.await;
    store_query(op, start.elapsed());
    out
}
