//! `engram bench embed`: embedding throughput (texts and word pieces per second, in the
//! indexer's batches) and the latency of embedding one question alone (the reply path), on the
//! turns and questions of a `bench retrieval` data file.

use super::retrieval::{BenchError, read_records};
use crate::embed::{EmbedError, SharedEmbedder};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;
use tokenizers::{Tokenizer, TruncationParams};

/// Texts embedded before the clock starts.
const WARM_UP: usize = 16;

/// What `run` measures.
pub struct EmbedBenchOptions {
    /// The data file (its turns are the texts, its questions the queries).
    pub data: PathBuf,
    /// The embedder.
    pub embedder: SharedEmbedder,
    /// Texts per call: the indexer's round (`EmbedConfig::index_batch`), in the data's order.
    pub batch: usize,
    /// At most this many texts.
    pub texts: usize,
    /// At most this many questions, each embedded alone.
    pub queries: usize,
    /// A tokenizer to count word pieces with (the local model's), cut at the embedder's
    /// length.
    pub tokenizer: Option<(PathBuf, usize)>,
}

/// What `engram bench embed` prints for one embedder.
#[derive(Debug, Serialize)]
pub struct EmbedReport {
    /// The data file.
    pub data: String,
    /// The embedding model.
    pub embedder: String,
    /// Texts embedded.
    pub texts: usize,
    /// Their word pieces as the model sees them (cut at its length); 0 without a tokenizer.
    pub tokens: usize,
    /// Time to embed them all (seconds).
    pub seconds: f64,
    /// Texts per second.
    pub texts_per_second: f64,
    /// Word pieces per second.
    pub tokens_per_second: f64,
    /// One question at a time (microseconds).
    pub query_latency: super::Latency,
}

/// Why the benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum EmbedBenchError {
    /// The data file.
    #[error(transparent)]
    Data(#[from] BenchError),
    /// The embedder failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The tokenizer to count with could not be read.
    #[error("{0}")]
    Tokenizer(String),
}

/// Runs the benchmark; `progress` hears how many texts are done.
pub async fn run(
    opts: EmbedBenchOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<EmbedReport, EmbedBenchError> {
    let records = read_records(&opts.data)?;
    let texts: Vec<String> = records
        .iter()
        .flat_map(|r| &r.sessions)
        .flat_map(|s| &s.turns)
        .map(|t| t.text.trim().to_string())
        .filter(|t| !t.is_empty())
        .take(opts.texts)
        .collect();
    let questions: Vec<String> = records
        .iter()
        .flat_map(|r| &r.questions)
        .map(|q| q.question.clone())
        .take(opts.queries)
        .collect();
    let tokens = match &opts.tokenizer {
        Some((path, max)) => count_tokens(path, *max, &texts)?,
        None => 0,
    };
    // Untimed: the first runs size the runtime's buffers.
    opts.embedder
        .embed(&texts[..texts.len().min(WARM_UP)])
        .await?;
    let started = Instant::now();
    let mut done = 0;
    for chunk in texts.chunks(opts.batch.max(1)) {
        opts.embedder.embed(chunk).await?;
        done += chunk.len();
        progress(done, texts.len());
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut latencies = Vec::with_capacity(questions.len());
    for q in &questions {
        let started = Instant::now();
        opts.embedder.embed(std::slice::from_ref(q)).await?;
        latencies.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let per_second = |n: usize| (n as f64 / seconds.max(1e-9) * 10.0).round() / 10.0;
    Ok(EmbedReport {
        data: opts.data.display().to_string(),
        embedder: opts.embedder.model().to_string(),
        texts: texts.len(),
        tokens,
        seconds: (seconds * 100.0).round() / 100.0,
        texts_per_second: per_second(texts.len()),
        tokens_per_second: per_second(tokens),
        query_latency: super::latency(latencies),
    })
}

/// Word pieces of `texts` as a model cut at `max` sees them (special tokens included).
fn count_tokens(path: &PathBuf, max: usize, texts: &[String]) -> Result<usize, EmbedBenchError> {
    let err = |e: tokenizers::Error| EmbedBenchError::Tokenizer(format!("{}: {e}", path.display()));
    let mut tokenizer = Tokenizer::from_file(path).map_err(err)?;
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max,
            ..Default::default()
        }))
        .map_err(err)?;
    tokenizer.with_padding(None);
    let encodings = tokenizer.encode_batch(texts.to_vec(), true).map_err(err)?;
    Ok(encodings.iter().map(|e| e.get_ids().len()).sum())
}
