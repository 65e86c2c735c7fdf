//! An OpenAI-compatible `/v1/embeddings` client (OpenAI, Ollama, vLLM, llama.cpp server, ...):
//! one HTTP call per batch. Retrying is left to the background embedder, which keeps texts
//! pending until a later pass succeeds.

use super::{EmbedError, Embedder, normalize};
use crate::config::EmbedConfig;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// An OpenAI-compatible `/v1/embeddings` client.
pub struct OpenAiEmbedder {
    http: reqwest::Client,
    endpoint: String,
    /// The server's host and port: the same model name on another server may be other weights.
    server: String,
    model: String,
    dimensions: usize,
    batch_size: usize,
    /// Rough cut for over-long texts (about 4 characters per token).
    max_chars: usize,
    api_key: Option<String>,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    input: &'a [String],
    dimensions: usize,
    encoding_format: &'static str,
}

#[derive(Deserialize)]
struct WireResponse {
    data: Vec<WireItem>,
}

#[derive(Deserialize)]
struct WireItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAiEmbedder {
    /// A client for `config.base_url`, with `api_key` as the bearer token when given.
    pub fn new(config: &EmbedConfig, api_key: Option<String>) -> Result<Self, EmbedError> {
        let timeout = Duration::from_secs_f64(config.timeout_secs);
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| EmbedError::Connect(e.to_string()))?;
        Ok(OpenAiEmbedder {
            http,
            endpoint: format!("{}/embeddings", config.base_url.trim_end_matches('/')),
            server: reqwest::Url::parse(&config.base_url)
                .ok()
                .and_then(|u| {
                    let host = u.host_str()?.to_string();
                    Some(match u.port() {
                        Some(port) => format!("{host}:{port}"),
                        None => host,
                    })
                })
                .unwrap_or_default(),
            model: config.model.clone(),
            dimensions: config.dimensions,
            batch_size: config.batch_size.max(1),
            max_chars: config.max_tokens * 4,
            api_key,
        })
    }

    async fn call(&self, input: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = WireRequest {
            model: &self.model,
            input,
            dimensions: self.dimensions,
            encoding_format: "float",
        };
        let mut req = self.http.post(&self.endpoint).json(&body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| EmbedError::Connect(e.without_url().to_string()))?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            // The provider's error body is not read (account ids, the input quoted back).
            return Err(EmbedError::Http {
                status: status.as_u16(),
                detail: status.canonical_reason().unwrap_or("error").to_string(),
                retry_after,
            });
        }
        let wire: WireResponse = resp
            .json()
            .await
            .map_err(|e| EmbedError::BadResponse(e.without_url().to_string()))?;
        if wire.data.len() != input.len() {
            return Err(EmbedError::BadResponse(format!(
                "{} vectors for {} texts",
                wire.data.len(),
                input.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; input.len()];
        for (pos, item) in wire.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(pos);
            if i >= out.len() || item.embedding.len() != self.dimensions {
                return Err(EmbedError::BadResponse(format!(
                    "vector {i} has {} dimensions, expected {}",
                    item.embedding.len(),
                    self.dimensions
                )));
            }
            let mut v = item.embedding;
            normalize(&mut v);
            out[i] = Some(v);
        }
        out.into_iter()
            .map(|v| v.ok_or_else(|| EmbedError::BadResponse("a vector is missing".into())))
            .collect()
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// The API names its models; the same name at another size, or served by another server,
    /// is another space (the revision names the server's host, never its credentials).
    fn identity(&self) -> crate::domain::ModelIdentity {
        crate::domain::ModelIdentity {
            provider: "openai".into(),
            model: self.model.clone(),
            dimensions: self.dimensions,
            revision: self.server.clone(),
        }
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch_size) {
            // The API refuses empty strings; a lone space embeds as "nothing said".
            let cut: Vec<String> = chunk
                .iter()
                .map(|t| {
                    let t: String = t.chars().take(self.max_chars).collect();
                    if t.trim().is_empty() {
                        " ".to_string()
                    } else {
                        t
                    }
                })
                .collect();
            out.extend(self.call(&cut).await?);
        }
        Ok(out)
    }
}
