//! Speech to text: the `Transcriber` seam and its OpenAI-compatible client
//! (`POST {llm.base_url}/audio/transcriptions`, multipart, `llm.transcription_model`).

use super::LlmError;
use crate::config::LlmConfig;
use async_trait::async_trait;
use std::time::Duration;

/// A recording to transcribe.
#[derive(Debug, Clone, Copy)]
pub struct Recording<'a> {
    /// Its file name ("voice.ogg").
    pub name: &'a str,
    /// Its MIME type, as read from its bytes.
    pub mime: &'a str,
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// Speech to text.
#[async_trait]
pub trait Transcriber: Send + Sync {
    /// The words spoken in `recording` (may be empty: nothing said).
    async fn transcribe(&self, recording: Recording<'_>) -> Result<String, LlmError>;
}

/// An OpenAI-compatible transcription endpoint (Whisper API and its look-alikes).
pub struct OpenAiTranscriber {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
}

#[derive(serde::Deserialize)]
struct WireTranscript {
    text: String,
}

impl OpenAiTranscriber {
    /// A client for `llm.transcription_model` at `llm.base_url`; None when either is empty.
    pub fn new(
        config: &LlmConfig,
        api_key: Option<String>,
    ) -> Result<Option<OpenAiTranscriber>, LlmError> {
        if config.base_url.trim().is_empty() || config.transcription_model.trim().is_empty() {
            return Ok(None);
        }
        let (http, timeout) = super::openai::http_client(config)?;
        Ok(Some(OpenAiTranscriber {
            http,
            endpoint: format!(
                "{}/audio/transcriptions",
                config.base_url.trim_end_matches('/')
            ),
            model: config.transcription_model.clone(),
            api_key,
            timeout,
        }))
    }

    async fn attempt(&self, recording: Recording<'_>) -> Result<String, LlmError> {
        let file = reqwest::multipart::Part::bytes(recording.bytes.to_vec())
            .file_name(recording.name.to_string())
            .mime_str(recording.mime)
            .map_err(|_| LlmError::BadResponse(format!("bad MIME type {:?}", recording.mime)))?;
        let form = reqwest::multipart::Form::new()
            .text("model", self.model.clone())
            .text("response_format", "json")
            .part("file", file);
        let mut builder = self.http.post(&self.endpoint).multipart(form);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let timed_out = |e: &reqwest::Error| e.is_timeout();
        let response = builder.send().await.map_err(|e| {
            if timed_out(&e) {
                LlmError::Timeout(self.timeout)
            } else {
                LlmError::Connect(e.without_url().to_string())
            }
        })?;
        let status = response.status();
        if !status.is_success() {
            // The body is the provider's: not kept, not logged.
            return Err(LlmError::Http {
                status: status.as_u16(),
                detail: status.canonical_reason().unwrap_or("error").to_string(),
                retry_after: None,
            });
        }
        let wire: WireTranscript = response.json().await.map_err(|e| {
            if timed_out(&e) {
                LlmError::Timeout(self.timeout)
            } else {
                LlmError::BadResponse("not a transcript".into())
            }
        })?;
        Ok(wire.text)
    }
}

#[async_trait]
impl Transcriber for OpenAiTranscriber {
    async fn transcribe(&self, recording: Recording<'_>) -> Result<String, LlmError> {
        let result = self.attempt(recording).await;
        crate::telemetry::llm_call("transcribe", result.as_ref().ok().map(|_| (0, 0)));
        result
    }
}
