//! The chat-model seam at the bottom of the memory flow: the `ChatModel` trait, the
//! OpenAI-compatible client (`openai`), speech to text (`transcribe`), the prompts from
//! `prompts/`, and a fake OpenAI-compatible server (`fake`) for tests and benchmarks.

pub mod budgeted;
#[cfg(feature = "test-util")]
pub mod fake;
pub mod openai;
pub mod prompts;
pub mod transcribe;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

pub use openai::OpenAiClient;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
/// Who says a chat message.
pub enum Role {
    /// The instructions.
    System,
    /// The person (or the data the bot hands the model).
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering one of the assistant's tool calls.
    Tool,
}

/// One function call the model asked for (OpenAI `tool_calls`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, which the tool result names.
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    /// Always "function".
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
/// The function a tool call asks for.
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// JSON text, as the model wrote it (it may be malformed).
    pub arguments: String,
}

fn function_type() -> String {
    "function".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
/// One message of a chat request.
pub struct ChatMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    /// Tool calls the model made (assistant messages only).
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The tool call this message answers (tool results only).
    pub tool_call_id: Option<String>,
    /// Images shown with the text, as data URLs (`data:image/png;base64,…`): sent as OpenAI
    /// vision content parts, to `llm.vision_model`.
    #[serde(skip)]
    pub images: Vec<String>,
}

impl ChatMessage {
    fn new(role: Role, content: String) -> Self {
        ChatMessage {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }
    /// The assistant's turn that asked for tool calls (sent back with their results).
    pub fn assistant_calls(content: String, calls: Vec<ToolCall>) -> Self {
        ChatMessage {
            tool_calls: calls,
            ..ChatMessage::new(Role::Assistant, content)
        }
    }
    /// A tool's result for the call `id`.
    pub fn tool_result(id: &str, content: String) -> Self {
        ChatMessage {
            tool_call_id: Some(id.to_string()),
            ..ChatMessage::new(Role::Tool, content)
        }
    }
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage::new(Role::System, content.into())
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::new(Role::User, content.into())
    }
    /// A user message showing `images` (data URLs) with its text.
    pub fn user_with_images(content: impl Into<String>, images: Vec<String>) -> Self {
        ChatMessage {
            images,
            ..ChatMessage::new(Role::User, content.into())
        }
    }
}

#[derive(Debug, Clone)]
/// One request to the chat model.
pub struct ChatRequest {
    /// What the call is for ("remember", "day_summary", ...): metrics and logs.
    pub task: &'static str,
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// Sampling temperature (0 for every memory operation).
    pub temperature: f32,
    /// Ask for a JSON object (`response_format: json_object`).
    pub json: bool,
    /// The longest answer wanted, in tokens; none: the API's default.
    pub max_tokens: Option<u32>,
    /// OpenAI `tools` the model may call (empty: none).
    pub tools: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq)]
/// The model's answer.
pub struct ChatResponse {
    /// The text.
    pub content: String,
    /// Calls the model asked for instead of (or with) an answer.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens of the prompt, as the API counted them.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

#[derive(Debug, thiserror::Error)]
/// Why a chat-model call gave no usable answer. Never shown in a chat.
pub enum LlmError {
    #[error("no language model is configured")]
    /// `llm.base_url` is empty: the offline fallback answers instead.
    NotConfigured,
    #[error("cannot reach the language model: {0}")]
    /// The API could not be reached.
    Connect(String),
    #[error("the language model did not answer within {0:?}")]
    /// No answer within the timeout.
    Timeout(Duration),
    #[error("the language model answered HTTP {status}: {detail}")]
    /// The API answered with an error status.
    Http {
        /// The HTTP status.
        status: u16,
        /// What the status means ("Internal Server Error", or what to check for a 401):
        /// never the provider's error text.
        detail: String,
        /// From Retry-After, when the server sent one.
        retry_after: Option<Duration>,
    },
    #[error("the language model's answer is unusable: {0}")]
    /// The answer was not what was asked for (not JSON, missing fields).
    BadResponse(String),
    /// Too many failures in a row: calls are skipped until the cooldown ends.
    #[error("the language model is failing; calls paused for {retry_after:?}")]
    CircuitOpen {
        /// How long until calls are tried again.
        retry_after: Duration,
    },
    /// The answer this call was for is over its person's or space's limit.
    #[error("the spending limit for this answer is reached")]
    Limited,
}

impl LlmError {
    /// Whether the same request may succeed if repeated later.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Connect(_) | LlmError::Timeout(_) | LlmError::CircuitOpen { .. } => true,
            LlmError::Http { status, .. } => *status == 429 || *status >= 500,
            LlmError::NotConfigured | LlmError::BadResponse(_) | LlmError::Limited => false,
        }
    }
}

#[async_trait]
/// The chat-model seam: the OpenAI-compatible client in the product, a fake server in tests.
pub trait ChatModel: Send + Sync {
    /// One completion.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;
    /// Calls and tokens so far, per task.
    fn usage(&self) -> UsageSnapshot;
}

/// Counters of LLM use, per task.
#[derive(Debug, Default)]
pub struct Usage {
    inner: Mutex<UsageSnapshot>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
/// LLM use so far.
pub struct UsageSnapshot {
    /// Calls made.
    pub calls: u64,
    /// Calls that failed.
    pub failures: u64,
    /// Prompt tokens spent.
    pub prompt_tokens: u64,
    /// Answer tokens spent.
    pub completion_tokens: u64,
    /// Calls per task ("reply", "extract", …).
    pub calls_by_task: BTreeMap<String, u64>,
}

impl Usage {
    /// Counts one call of `task` and what it spent.
    pub fn record(&self, task: &'static str, result: &Result<ChatResponse, LlmError>) {
        crate::telemetry::llm_call(
            task,
            result
                .as_ref()
                .ok()
                .map(|r| (r.prompt_tokens, r.completion_tokens)),
        );
        let mut u = self.inner.lock().expect("usage lock");
        u.calls += 1;
        *u.calls_by_task.entry(task.to_string()).or_default() += 1;
        match result {
            Ok(r) => {
                // A provider's counts are data: absurd ones saturate instead of overflowing.
                u.prompt_tokens = u.prompt_tokens.saturating_add(r.prompt_tokens);
                u.completion_tokens = u.completion_tokens.saturating_add(r.completion_tokens);
            }
            Err(_) => u.failures += 1,
        }
    }

    /// The counters now.
    pub fn snapshot(&self) -> UsageSnapshot {
        self.inner.lock().expect("usage lock").clone()
    }
}

/// Parses a model's JSON answer, tolerating a Markdown code fence around it.
pub fn parse_json_answer<T: serde::de::DeserializeOwned>(content: &str) -> Result<T, LlmError> {
    let trimmed = content.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(body.trim()).map_err(|e| {
        LlmError::BadResponse(format!(
            "invalid JSON: {} ({} characters)",
            json_error(&e),
            trimmed.chars().count()
        ))
    })
}

/// What is wrong with a model's JSON, without any of its text: the answer is about people
/// (what they said, their memory), and the error goes to logs and job records, which keep
/// nothing of theirs (serde's own message quotes the offending value).
pub fn json_error(e: &serde_json::Error) -> String {
    format!(
        "{:?} error at line {} column {}",
        e.classify(),
        e.line(),
        e.column()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_token_counts_from_a_provider_saturate() {
        let usage = Usage::default();
        let huge = Ok(ChatResponse {
            content: "ok".into(),
            tool_calls: Vec::new(),
            prompt_tokens: u64::MAX,
            completion_tokens: u64::MAX,
        });
        usage.record("reply", &huge);
        usage.record("reply", &huge);
        let snapshot = usage.snapshot();
        assert_eq!(snapshot.prompt_tokens, u64::MAX);
        assert_eq!(snapshot.calls, 2);
    }

    #[derive(Deserialize, Debug)]
    struct F {
        facts: String,
    }

    #[test]
    fn json_answers_parse_with_or_without_fences_and_garbage_is_an_error() {
        assert_eq!(
            parse_json_answer::<F>("{\"facts\":\"a\"}").unwrap().facts,
            "a"
        );
        assert_eq!(
            parse_json_answer::<F>("```json\n{\"facts\":\"b\"}\n```")
                .unwrap()
                .facts,
            "b"
        );
        assert!(matches!(
            parse_json_answer::<F>("sure! here"),
            Err(LlmError::BadResponse(_))
        ));
        assert!(matches!(
            parse_json_answer::<F>("{\"fact\":1}"),
            Err(LlmError::BadResponse(_))
        ));
    }

    /// A bad answer's error (logged, kept in job records) holds none of the answer's text.
    #[test]
    fn a_bad_answers_error_quotes_none_of_it() {
        #[derive(serde::Deserialize, Debug)]
        struct F {
            #[allow(dead_code)]
            facts: u8,
        }
        for answer in [
            "{\"facts\": \"her diagnosis is flu\"}",
            "sure! her diagnosis is flu",
            "{\"facts\": 1, her diagnosis is flu",
        ] {
            let err = parse_json_answer::<F>(answer).unwrap_err().to_string();
            assert!(!err.contains("diagnosis"), "{err}");
            assert!(err.contains("line 1"), "{err}");
        }
    }
}
