//! OpenAI-compatible chat client on reqwest: timeout, retries with exponential backoff on
//! connection errors, timeouts, 429 and 5xx (honouring Retry-After), and a circuit breaker so a
//! dead provider costs one fast failure instead of a timeout per message.

use super::*;
use crate::config::LlmConfig;
use crate::domain::Clock;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use tracing::{debug, warn};

/// The OpenAI-compatible chat client: timeouts, retries with backoff, a circuit breaker.
pub struct OpenAiClient {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    vision_model: String,
    api_key: Option<String>,
    timeout: Duration,
    max_retries: u32,
    backoff: Duration,
    max_retry_after: Duration,
    breaker_failures: u32,
    breaker_cooldown: chrono::Duration,
    clock: Arc<dyn Clock>,
    breaker: Mutex<Breaker>,
    usage: Usage,
}

#[derive(Debug, Default)]
struct Breaker {
    consecutive_failures: u32,
    open_until: Option<DateTime<Utc>>,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<serde_json::Value>,
    temperature: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [serde_json::Value],
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl OpenAiClient {
    /// A client for the `[llm]` settings, with `api_key` as the bearer token when given.
    pub fn new(
        config: &LlmConfig,
        api_key: Option<String>,
        clock: Arc<dyn Clock>,
    ) -> Result<OpenAiClient, LlmError> {
        let (http, timeout) = http_client(config)?;
        Ok(OpenAiClient {
            http,
            endpoint: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            model: config.model.clone(),
            vision_model: if config.vision_model.trim().is_empty() {
                config.model.clone()
            } else {
                config.vision_model.clone()
            },
            api_key,
            timeout,
            max_retries: config.max_retries,
            backoff: Duration::from_millis(config.backoff_ms),
            max_retry_after: Duration::from_secs(config.max_retry_after_secs),
            breaker_failures: config.breaker_failures.max(1),
            breaker_cooldown: chrono::Duration::seconds(config.breaker_cooldown_secs as i64),
            clock,
            breaker: Mutex::new(Breaker::default()),
            usage: Usage::default(),
        })
    }

    fn check_breaker(&self, task: &'static str) -> Result<(), LlmError> {
        let breaker = self.breaker.lock().expect("breaker lock");
        if let Some(until) = breaker.open_until {
            let now = self.clock.now();
            if now < until {
                crate::telemetry::llm_breaker_refused(task);
                let retry_after = (until - now).to_std().unwrap_or_default();
                return Err(LlmError::CircuitOpen { retry_after });
            }
        }
        Ok(())
    }

    fn note_outcome(&self, ok: bool) {
        let mut breaker = self.breaker.lock().expect("breaker lock");
        if ok {
            if breaker.open_until.is_some() {
                crate::telemetry::llm_breaker(false);
            }
            *breaker = Breaker::default();
            return;
        }
        breaker.consecutive_failures += 1;
        if breaker.consecutive_failures >= self.breaker_failures {
            breaker.open_until = Some(self.clock.now() + self.breaker_cooldown);
            crate::telemetry::llm_breaker(true);
            warn!(
                failures = breaker.consecutive_failures,
                cooldown_secs = self.breaker_cooldown.num_seconds(),
                "LLM circuit breaker open: using the offline fallback until the cooldown ends"
            );
        }
    }

    async fn attempt(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let shows_images = request.messages.iter().any(|m| !m.images.is_empty());
        let body = WireRequest {
            model: if shows_images {
                &self.vision_model
            } else {
                &self.model
            },
            messages: request.messages.iter().map(wire_message).collect(),
            temperature: request.temperature,
            max_tokens: request.max_tokens,
            response_format: request
                .json
                .then(|| serde_json::json!({"type": "json_object"})),
            tools: &request.tools,
        };
        let mut builder = self.http.post(&self.endpoint).json(&body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            // The provider's error body (account and project ids, the prompt quoted back) is
            // not read: the status says enough for the log.
            return Err(LlmError::Http {
                status: status.as_u16(),
                detail: if status.as_u16() == 401 {
                    "unauthorized: check ENGRAM_LLM_API_KEY".to_string()
                } else {
                    status.canonical_reason().unwrap_or("error").to_string()
                },
                retry_after,
            });
        }
        let wire: WireResponse = response.json().await.map_err(|e| {
            if e.is_timeout() {
                LlmError::Timeout(self.timeout)
            } else {
                LlmError::BadResponse(e.to_string())
            }
        })?;
        let message = wire
            .choices
            .into_iter()
            .next()
            .map(|c| c.message)
            .ok_or_else(|| LlmError::BadResponse("no choices in the answer".into()))?;
        let content = message.content.unwrap_or_default();
        if content.trim().is_empty() && message.tool_calls.is_empty() {
            return Err(LlmError::BadResponse(
                "no message content in the answer".into(),
            ));
        }
        let usage = wire.usage.unwrap_or(WireUsage {
            prompt_tokens: 0,
            completion_tokens: 0,
        });
        Ok(ChatResponse {
            content,
            tool_calls: message.tool_calls,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
        })
    }

    fn transport_error(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout(self.timeout)
        } else {
            // reqwest's Display never includes headers, so the key cannot leak here.
            LlmError::Connect(e.without_url().to_string())
        }
    }

    fn delay_before_retry(&self, attempt: u32, error: &LlmError) -> Duration {
        if let LlmError::Http {
            retry_after: Some(after),
            ..
        } = error
        {
            return (*after).min(self.max_retry_after);
        }
        self.backoff.saturating_mul(1u32 << attempt.min(16))
    }
}

/// An HTTP client for the `[llm]` API: its request timeout (`llm.timeout_secs`), and that.
pub(super) fn http_client(config: &LlmConfig) -> Result<(reqwest::Client, Duration), LlmError> {
    let timeout = Duration::from_secs_f64(config.timeout_secs);
    let http = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .build()
        .map_err(|e| LlmError::Connect(e.to_string()))?;
    Ok((http, timeout))
}

/// A message as the API takes it: with images, its content is a list of parts (the text, then
/// each image as an `image_url`).
fn wire_message(m: &ChatMessage) -> serde_json::Value {
    // Strings, options and lists of strings: always JSON.
    let mut v = serde_json::to_value(m).expect("a chat message is JSON");
    if !m.images.is_empty() {
        let mut parts = vec![serde_json::json!({"type": "text", "text": m.content})];
        parts.extend(
            m.images
                .iter()
                .map(|url| serde_json::json!({"type": "image_url", "image_url": {"url": url}})),
        );
        v["content"] = serde_json::Value::Array(parts);
    }
    v
}

/// Retry-After in seconds or as an HTTP date. Negative, NaN and unreadable values are none; a
/// value too large for a `Duration` is the longest one (the caller caps every wait).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    if let Ok(secs) = value.trim().parse::<f64>() {
        if secs.is_nan() || secs < 0.0 {
            return None;
        }
        return Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let when = DateTime::parse_from_rfc2822(value.trim()).ok()?;
    (when.with_timezone(&Utc) - Utc::now()).to_std().ok()
}

#[async_trait]
impl ChatModel for OpenAiClient {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.check_breaker(request.task)?;
        let mut attempt = 0;
        let result = loop {
            let result = self.attempt(request).await;
            match &result {
                Err(e) if e.is_retryable() && attempt < self.max_retries => {
                    let delay = self.delay_before_retry(attempt, e);
                    debug!(task = request.task, attempt, delay_ms = delay.as_millis() as u64, error = %e, "LLM call failed; retrying");
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                _ => break result,
            }
        };
        // A well-formed HTTP exchange with unusable content is the model's fault, not the
        // provider's: it does not count towards opening the breaker.
        self.note_outcome(result.is_ok() || matches!(result, Err(LlmError::BadResponse(_))));
        if let Err(e) = &result {
            warn!(task = request.task, attempts = attempt + 1, error = %e, "LLM call failed");
        }
        self.usage.record(request.task, &result);
        result
    }

    fn usage(&self) -> UsageSnapshot {
        self.usage.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_parses_seconds_and_rejects_junk() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("soon"), None);
        // Absurd values never panic: NaN and infinities of either sign, 1e20 seconds.
        assert_eq!(parse_retry_after("NaN"), None);
        assert_eq!(parse_retry_after("-inf"), None);
        assert_eq!(parse_retry_after("1e20"), Some(Duration::MAX));
        assert_eq!(parse_retry_after("inf"), Some(Duration::MAX));
    }
}
