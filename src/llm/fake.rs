//! A fake OpenAI-compatible server on 127.0.0.1 for tests and `engram bench`: the real client
//! talks HTTP to it. It answers each task deterministically from the data in the prompt, records
//! every request, and can be told to fail (status codes, invalid JSON, hanging, rate limits).

use super::prompts::unescape;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// How the fake answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Behavior {
    /// Deterministic, well-formed answers built from the prompt's data.
    Smart,
    /// This HTTP status with an error body.
    Status(u16),
    /// 429 with `Retry-After: 0`.
    RateLimited,
    /// 429 with this `Retry-After` value, however absurd ("1e20", "NaN", "-5").
    RetryAfter(String),
    /// 200 with content that is not the JSON asked for.
    InvalidJson,
    /// Never answers (the client must time out).
    Hang,
    /// 200 with exactly this content.
    Content(String),
    /// `Smart`, but a reply with tools makes the calls written in any message it was shown,
    /// whoever wrote it: a model that a prompt injection sways.
    Gullible,
}

#[derive(Debug, Clone)]
/// One request the fake received.
pub struct RecordedRequest {
    /// The task it was for, read from the prompt.
    pub task: String,
    /// The JSON body as sent.
    pub body: Value,
}

impl RecordedRequest {
    /// The concatenated message contents.
    pub fn text(&self) -> String {
        self.body["messages"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct Shared {
    behavior: Option<Behavior>,
    once: VecDeque<Behavior>,
    requests: Vec<RecordedRequest>,
    /// Requests wait while this is false (`hold` / `release`).
    open: Option<tokio::sync::watch::Sender<bool>>,
    /// Every answer takes at least this long (`set_latency`).
    latency: std::time::Duration,
    /// This share of requests answers 500 instead (`set_fault_rate`), spread evenly.
    fault_rate: f64,
    /// Requests seen, for the evenly spread faults (and told to `wait_seen`).
    seen: u64,
    seen_watch: Option<tokio::sync::watch::Sender<u64>>,
    /// While the gate is closed, requests from this one on wait (None: all of them).
    hold_from: Option<u64>,
    /// Requests are kept for `requests()` (off for long benchmarks).
    forget_requests: bool,
    /// An embeddings request with a text holding this is refused with 400, as a model
    /// refuses an input it cannot take (`refuse_embedding_of`).
    refused_text: Option<String>,
}

/// A fake OpenAI-compatible `/v1/chat/completions` server on 127.0.0.1 that answers from the prompt it is given.
pub struct FakeLlmServer {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeLlmServer {
    /// Starts it on a free port.
    pub async fn start() -> std::io::Result<FakeLlmServer> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared {
            behavior: Some(Behavior::Smart),
            open: Some(tokio::sync::watch::channel(true).0),
            seen_watch: Some(tokio::sync::watch::channel(0).0),
            ..Shared::default()
        }));
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .route("/v1/embeddings", post(handle_embeddings))
            .route("/v1/audio/transcriptions", post(handle_transcription))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeLlmServer { addr, shared, task })
    }

    /// Base URL for `llm.base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// How it answers from now on.
    pub fn set_behavior(&self, behavior: Behavior) {
        self.shared.lock().expect("fake lock").behavior = Some(behavior);
    }

    /// Use `behavior` for the next request only (queued in order).
    pub fn push_once(&self, behavior: Behavior) {
        self.shared
            .lock()
            .expect("fake lock")
            .once
            .push_back(behavior);
    }

    /// Requests from now on wait (unanswered) until `release`.
    pub fn hold(&self) {
        self.set_open(false, None);
    }

    /// The next `n` requests are answered; the ones after them wait until `release`.
    pub fn hold_after(&self, n: u64) {
        let from = self.shared.lock().expect("fake lock").seen + n;
        self.set_open(false, Some(from));
    }

    /// Answers the held requests and lets new ones through.
    pub fn release(&self) {
        self.set_open(true, None);
    }

    fn set_open(&self, open: bool, from: Option<u64>) {
        let mut s = self.shared.lock().expect("fake lock");
        s.hold_from = from;
        if let Some(gate) = &s.open {
            gate.send_replace(open);
        }
    }

    /// Waits until `n` requests have arrived in all (answered, failed or held), or panics
    /// after `within` (a bound for tests, not a sleep).
    pub async fn wait_seen(&self, n: usize, within: std::time::Duration) {
        let mut seen = self
            .shared
            .lock()
            .expect("fake lock")
            .seen_watch
            .as_ref()
            .expect("started fake")
            .subscribe();
        tokio::time::timeout(within, seen.wait_for(|v| *v >= n as u64))
            .await
            .unwrap_or_else(|_| panic!("the fake model saw fewer than {n} requests"))
            .expect("fake running");
    }

    /// Embeddings requests with a text holding `text` answer 400 from now on (a model
    /// refusing an input it cannot take).
    pub fn refuse_embedding_of(&self, text: &str) {
        self.shared.lock().expect("fake lock").refused_text = Some(text.to_string());
    }

    /// Every answer takes at least `latency` (a slow provider, for benchmarks).
    pub fn set_latency(&self, latency: std::time::Duration) {
        self.shared.lock().expect("fake lock").latency = latency;
    }

    /// `rate` (0..=1) of the requests answer 500, spread evenly and deterministically.
    pub fn set_fault_rate(&self, rate: f64) {
        self.shared.lock().expect("fake lock").fault_rate = rate.clamp(0.0, 1.0);
    }

    /// Keep no request bodies from now on (a long benchmark), only count them.
    pub fn stop_recording(&self) {
        let mut s = self.shared.lock().expect("fake lock");
        s.forget_requests = true;
        s.requests.clear();
    }

    /// Requests answered or failed so far, recorded or not.
    pub fn seen(&self) -> usize {
        self.shared.lock().expect("fake lock").seen as usize
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().expect("fake lock").requests.clone()
    }

    /// The prompts (all messages' text) of the requests for `task`, in the order received.
    pub fn prompts(&self, task: &str) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.task == task)
            .map(RecordedRequest::text)
            .collect()
    }

    /// Requests for `task` so far.
    pub fn count(&self, task: &str) -> usize {
        self.shared
            .lock()
            .expect("fake lock")
            .requests
            .iter()
            .filter(|r| r.task == task)
            .count()
    }

    /// Requests so far.
    pub fn total(&self) -> usize {
        self.shared.lock().expect("fake lock").requests.len()
    }

    /// Forgets the requests so far.
    pub fn clear(&self) {
        self.shared.lock().expect("fake lock").requests.clear();
    }
}

impl Drop for FakeLlmServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn task_of(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .and_then(|s| s.lines().next())
        .and_then(|l| l.strip_prefix("# Task: "))
        .unwrap_or("unknown")
        .trim()
        .to_string()
}

/// Records the request and picks its behaviour; then waits while held and for the set latency,
/// and makes it a fault (500) at the set rate.
async fn admit(shared: &Mutex<Shared>, task: &str, body: &Value) -> Behavior {
    let (behavior, gate, latency, fault) = {
        let mut s = shared.lock().expect("fake lock");
        if !s.forget_requests {
            s.requests.push(RecordedRequest {
                task: task.to_string(),
                body: body.clone(),
            });
        }
        let behavior = s
            .once
            .pop_front()
            .or_else(|| s.behavior.clone())
            .unwrap_or(Behavior::Smart);
        let index = s.seen;
        s.seen += 1;
        if let Some(w) = &s.seen_watch {
            w.send_replace(s.seen);
        }
        let n = index as f64;
        let fault = ((n + 1.0) * s.fault_rate).floor() > (n * s.fault_rate).floor();
        let gate = s
            .open
            .as_ref()
            .filter(|_| s.hold_from.is_none_or(|from| index >= from))
            .map(|g| g.subscribe());
        (behavior, gate, s.latency, fault)
    };
    if let Some(mut gate) = gate {
        let _ = gate.wait_for(|open| *open).await;
    }
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if fault {
        return Behavior::Status(500);
    }
    behavior
}

async fn handle(State(shared): State<Arc<Mutex<Shared>>>, Json(body): Json<Value>) -> Response {
    let task = task_of(&body);
    let behavior = admit(&shared, &task, &body).await;
    if let Some(failure) = failure(&behavior).await {
        return failure;
    }
    match behavior {
        Behavior::Status(_) | Behavior::RateLimited | Behavior::RetryAfter(_) | Behavior::Hang => {
            unreachable!()
        }
        Behavior::Content(content) => completion(&content, &body),
        Behavior::InvalidJson => completion("Sure! Here is what I think: {facts: oops", &body),
        Behavior::Smart | Behavior::Gullible if task == "tool_chat" => tool_chat(&body),
        Behavior::Smart | Behavior::Gullible if task == "describe_image" => {
            completion(&describe_image(&body), &body)
        }
        Behavior::Smart if task == "reply" && has_tools(&body) => tool_reply(&body, false),
        Behavior::Gullible if task == "reply" && has_tools(&body) => tool_reply(&body, true),
        Behavior::Smart | Behavior::Gullible => completion(&smart_answer(&task, &body), &body),
    }
}

fn has_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// Task `reply` with the memory tools offered: calls written as `<call name="TOOL">ARGS</call>`
/// in the current message (the last one of the conversation; any message at all when
/// `gullible`) are made; once their results are in, the reply quotes them.
fn tool_reply(body: &Value, gullible: bool) -> Response {
    let (results, user) = tool_round(body);
    if !results.is_empty() {
        return completion(
            &format!("(fake reply) tool results: {}", results.join(" | ")),
            body,
        );
    }
    let said: Vec<String> = elements(&user, "message")
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let obeyed = if gullible {
        said.join("\n")
    } else {
        said.last().cloned().unwrap_or_default()
    };
    if elements(&obeyed, "call").is_empty() {
        return completion(&smart_answer("reply", body), body);
    }
    tool_calls(&obeyed)
}

/// The `<call name="TOOL">ARGS</call>` elements of `text` as one assistant turn of tool calls.
fn tool_calls(text: &str) -> Response {
    let calls: Vec<Value> = elements(text, "call")
        .into_iter()
        .enumerate()
        .map(|(i, (attrs, args))| {
            json!({"id": format!("call_{i}"), "type": "function", "function": {
                "name": attr(&attrs, "name").unwrap_or_default(), "arguments": args}})
        })
        .collect();
    Json(json!({
        "id": "fake-tools",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
    }))
    .into_response()
}

/// Task `tool_chat`: the calls written as `<call name="TOOL">ARGS</call>` in the user message
/// come back as `tool_calls`, all in the first round; once tool results are in, the answer
/// quotes them.
fn tool_chat(body: &Value) -> Response {
    let (results, user) = tool_round(body);
    if !results.is_empty() {
        return completion(&format!("tool results: {}", results.join(" | ")), body);
    }
    tool_calls(&user)
}

/// The tool results sent so far, and the last user message.
fn tool_round(body: &Value) -> (Vec<String>, String) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let results = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    let user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    (results, user)
}

/// The HTTP failures both endpoints fake: a status, a rate limit (Retry-After: 0), a hang.
async fn failure(behavior: &Behavior) -> Option<Response> {
    match behavior {
        Behavior::Status(code) => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            // Providers put account details in their errors: they must never reach a chat.
            let message = "fake failure for organization org-fake123, project proj_fake456";
            Some((status, Json(json!({"error": {"message": message}}))).into_response())
        }
        Behavior::RateLimited | Behavior::RetryAfter(_) => {
            let value = match behavior {
                Behavior::RetryAfter(v) => v.as_str(),
                _ => "0",
            };
            let mut headers = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert("retry-after", v);
            }
            Some(
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    headers,
                    Json(json!({"error": {"message": "slow down"}})),
                )
                    .into_response(),
            )
        }
        Behavior::Hang => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        _ => None,
    }
}

/// `/v1/embeddings`: deterministic vectors (hashed words, so texts sharing words are
/// similar) of the requested dimensions; failures follow the same behaviours as chat.
async fn handle_embeddings(
    State(shared): State<Arc<Mutex<Shared>>>,
    Json(body): Json<Value>,
) -> Response {
    let behavior = admit(&shared, "embeddings", &body).await;
    let dims = body["dimensions"].as_u64().unwrap_or(384) as usize;
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().unwrap_or("").to_string())
            .collect(),
        _ => Vec::new(),
    };
    if let Some(failure) = failure(&behavior).await {
        return failure;
    }
    let refused = shared.lock().expect("fake lock").refused_text.clone();
    if refused.is_some_and(|r| inputs.iter().any(|t| t.contains(&r))) {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"message": "input too long", "type": "invalid_request_error"}})),
        )
            .into_response();
    }
    match behavior {
        Behavior::Status(_) | Behavior::RateLimited | Behavior::RetryAfter(_) | Behavior::Hang => {
            unreachable!()
        }
        // Garbled: one vector short and of the wrong size.
        Behavior::InvalidJson | Behavior::Content(_) => Json(json!({
            "data": [{"index": 0, "embedding": [0.5, 0.5]}]
        }))
        .into_response(),
        Behavior::Smart | Behavior::Gullible => {
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, text)| json!({"object": "embedding", "index": i, "embedding": hashed_vector(text, dims)}))
                .collect();
            Json(json!({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 0, "total_tokens": 0}}))
                .into_response()
        }
    }
}

/// `/v1/audio/transcriptions` (multipart: `model`, `file`): the transcript is the longest run
/// of printable text in the file's bytes (a test's "voice note" is an audio header and the
/// words said); failures follow the same behaviours as chat, garbled is not JSON.
async fn handle_transcription(
    State(shared): State<Arc<Mutex<Shared>>>,
    mut form: axum::extract::Multipart,
) -> Response {
    let (mut model, mut name, mut bytes) = (String::new(), String::new(), Vec::new());
    while let Ok(Some(field)) = form.next_field().await {
        match field.name() {
            Some("model") => model = field.text().await.unwrap_or_default(),
            Some("file") => {
                name = field.file_name().unwrap_or_default().to_string();
                bytes = field.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
            }
            _ => {}
        }
    }
    let body = json!({"model": model, "file": name, "size": bytes.len()});
    let behavior = admit(&shared, "transcribe", &body).await;
    if let Some(failure) = failure(&behavior).await {
        return failure;
    }
    match behavior {
        Behavior::Status(_) | Behavior::RateLimited | Behavior::RetryAfter(_) | Behavior::Hang => {
            unreachable!()
        }
        Behavior::InvalidJson => "Sure! the audio says {oops".into_response(),
        Behavior::Content(text) => Json(json!({ "text": text })).into_response(),
        Behavior::Smart | Behavior::Gullible => {
            Json(json!({ "text": printable_text(&bytes) })).into_response()
        }
    }
}

/// The longest run of printable text in `bytes` (split at control characters and bytes
/// that are not UTF-8), trimmed: what the fake "sees" in an image or "hears" in a recording.
pub fn printable_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .split(|c: char| (c.is_control() && c != ' ') || c == char::REPLACEMENT_CHARACTER)
        .map(str::trim)
        .max_by_key(|run| run.chars().count())
        .unwrap_or("")
        .to_string()
}

/// Task `describe_image`: for each image shown (a data URL), the text in its bytes
/// (`printable_text`) as what it shows; nothing readable is "a picture".
fn describe_image(body: &Value) -> String {
    use base64::Engine as _;
    let texts: Vec<String> = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter_map(|part| part["image_url"]["url"].as_str())
        .filter_map(|url| url.split_once(";base64,").map(|(_, data)| data.to_string()))
        .filter_map(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
        .map(|bytes| printable_text(&bytes))
        .collect();
    let text = texts.join("\n");
    let short = if text.is_empty() {
        "a picture".to_string()
    } else {
        format!("a picture saying {}", clip(&text, 60))
    };
    json!({
        "short": short,
        "detailed": format!("A picture. {}", if text.is_empty() { "No text on it.".to_string() } else { format!("The text on it reads: {}", clip(&text, 300)) }),
        "text": text,
    })
    .to_string()
}

/// Words hashed into `dims` buckets (not normalised: the client normalises).
fn hashed_vector(text: &str, dims: usize) -> Vec<f32> {
    use sha2::{Digest, Sha256};
    let mut v = vec![0.0f32; dims.max(1)];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = Sha256::digest(word.to_lowercase().as_bytes());
        let bucket = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize % v.len();
        v[bucket] += 1.0;
    }
    if v.iter().all(|x| *x == 0.0) {
        v[0] = 1.0;
    }
    v
}

fn completion(content: &str, request: &Value) -> Response {
    let prompt_chars: usize = request["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m["content"].as_str())
                .map(str::len)
                .sum()
        })
        .unwrap_or(0);
    Json(json!({
        "id": "fake-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_chars / 4, "completion_tokens": content.len() / 4,
                  "total_tokens": (prompt_chars + content.len()) / 4}
    }))
    .into_response()
}

/// Elements `<tag attrs>inner</tag>` in order: (attribute text, unescaped inner text).
pub fn elements(text: &str, tag: &str) -> Vec<(String, String)> {
    let open = format!("<{tag}");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        if !(after.starts_with('>') || after.starts_with(' ')) {
            rest = after;
            continue;
        }
        let Some(gt) = after.find('>') else { break };
        let attrs = after[..gt].trim().to_string();
        let body = &after[gt + 1..];
        let Some(end) = body.find(&close) else { break };
        out.push((attrs, unescape(&body[..end])));
        rest = &body[end + close.len()..];
    }
    out
}

/// The value of attribute `name` in an element's attribute text.
pub fn attr(attrs: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = attrs.find(&key)? + key.len();
    let end = attrs[start..].find('"')?;
    Some(unescape(&attrs[start..start + end]))
}

fn first(text: &str, tag: &str) -> String {
    elements(text, tag)
        .into_iter()
        .next()
        .map(|(_, t)| t)
        .unwrap_or_default()
}

/// The text of an XML fragment: tags dropped, whitespace runs made one space.
fn plain_text(xml: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in xml.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A final episode summary: the first message as its topic, and one fact per statement of a
/// person (three words or more, not a question), about its author, or (gullible) about the
/// person its first word names as "<name>'s …": a validator must refuse that one. "maybe"
/// makes a fact weak. A part of a long episode adds its first message to what the parts
/// before came to (`<earlier>`) and keeps the questions open before it.
fn episode_summary(user: &str) -> String {
    let messages = elements(user, "message");
    let earlier = elements(user, "earlier").into_iter().next().map(|(_, t)| t);
    let mut open: Vec<String> = elements(user, "earlier_open_questions")
        .into_iter()
        .flat_map(|(_, t)| t.lines().map(str::to_string).collect::<Vec<_>>())
        .collect();
    open.extend(
        messages
            .iter()
            .filter(|(_, t)| t.trim().ends_with('?'))
            .map(|(_, t)| t.clone()),
    );
    // Each author once, as a model lists the people of a conversation.
    let mut authors: Vec<String> = Vec::new();
    for author in messages.iter().filter_map(|(a, _)| attr(a, "author")) {
        if !authors.contains(&author) {
            authors.push(author);
        }
    }
    let facts: Vec<Value> = messages
        .iter()
        .filter(|(a, _)| attr(a, "bot").is_none())
        .filter_map(|(a, t)| {
            let t = t.trim();
            let lower = t.to_lowercase();
            if t.ends_with('?') || t.split_whitespace().count() < 3 {
                return None;
            }
            let author = attr(a, "author")?;
            let named = lower
                .split("'s ")
                .next()
                .filter(|w| !w.contains(' '))
                .and_then(|w| authors.iter().find(|n| n.to_lowercase() == w));
            let key: Vec<&str> = lower
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .take(4)
                .collect();
            Some(json!({
                "person": named.unwrap_or(&author), "category": "personal_context",
                "key": key.join("_"), "value": t,
                "confidence": if lower.contains("maybe") { 0.5 } else { 0.9 },
                "messages": [attr(a, "n").and_then(|n| n.parse::<u64>().ok()).unwrap_or(0)]
            }))
        })
        .collect();
    let first = messages.first().map(|(_, t)| t.clone()).unwrap_or_default();
    json!({
        "topic": clip(&first, 60),
        "summary": match earlier {
            Some(e) => clip(&format!("{} Then: {first}", e.trim()), 1000),
            None => clip(&format!("Episode: {first}"), 300),
        },
        "decisions": [], "todos": [], "entities": authors, "artifacts": [],
        "open_questions": open,
        "facts": facts
    })
    .to_string()
}

fn clip(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

// Over 80 lines: one arm per model task the fake answers (test support, not in a release
// build).
fn smart_answer(task: &str, body: &Value) -> String {
    let user = body["messages"]
        .as_array()
        .and_then(|ms| ms.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    match task {
        "remember" => {
            let facts = first(&user, "facts");
            let fact = first(&user, "new_fact");
            let subject = first(&user, "subject");
            let sentence = format!("{subject}: {}.", fact.trim_end_matches('.'));
            let merged = if facts.trim().is_empty() {
                sentence
            } else {
                format!("{} {sentence}", facts.trim())
            };
            json!({ "facts": merged }).to_string()
        }
        "forget" => {
            let facts = first(&user, "facts");
            let target = first(&user, "forget").to_lowercase();
            let sentences: Vec<&str> = facts.split_inclusive('.').collect();
            let kept: Vec<&str> = sentences
                .iter()
                .copied()
                .filter(|s| !s.to_lowercase().contains(target.trim()))
                .collect();
            let found = kept.len() != sentences.len();
            json!({ "found": found, "facts": kept.concat().trim() }).to_string()
        }
        "day_summary" => {
            let people = elements(&user, "person");
            let messages = elements(&user, "message");
            let mut summaries = serde_json::Map::new();
            for (attrs, name) in people {
                let id = attr(&attrs, "id").unwrap_or_default();
                let said: Vec<String> = messages
                    .iter()
                    .filter(|(a, _)| attr(a, "author_id").as_deref() == Some(id.as_str()))
                    .map(|(_, t)| t.clone())
                    .take(3)
                    .collect();
                summaries.insert(
                    id,
                    Value::String(clip(&format!("{name} said: {}", said.join(" / ")), 300)),
                );
            }
            json!({ "summaries": summaries }).to_string()
        }
        "history_summary" => {
            let days: Vec<String> = elements(&user, "day").into_iter().map(|(_, t)| t).collect();
            json!({ "summary": clip(&format!("Earlier: {}", days.join(" ")), 500) }).to_string()
        }
        "working_memory" => {
            // The summary so far and the messages since, as given: what a prompt holds shows in
            // the working memory, and what it drops is missing from it.
            let before = plain_text(&first(&user, "summary"));
            let messages: Vec<String> = elements(&user, "message")
                .into_iter()
                .map(|(_, t)| t)
                .collect();
            let loops: Vec<&String> = messages.iter().filter(|t| t.contains('?')).collect();
            let summary = format!("{before} Then: {}", messages.join(" / "));
            json!({ "summary": clip(summary.trim(), 600), "open_loops": loops }).to_string()
        }
        "episode_summary" => episode_summary(&user),
        "merge_context" => {
            let parts: Vec<String> = ["facts", "today", "history"]
                .iter()
                .map(|t| first(&user, t))
                .filter(|t| !t.trim().is_empty())
                .collect();
            json!({ "context": parts.join(" ") }).to_string()
        }
        "reply" => {
            // Echoes the last message and everything the prompt's memory holds (facts, notes,
            // recalled messages): what leaks into a prompt shows in the reply, and what a
            // prompt drops is missing from it.
            let last = elements(&user, "message")
                .pop()
                .map(|(_, t)| t)
                .unwrap_or_default();
            let memory = plain_text(&first(&user, "memory"));
            let mut reply = format!("(fake reply) you said: {}", clip(&last, 200));
            if !memory.is_empty() {
                reply.push_str(&format!(" | remembered: {}", clip(&memory, 1500)));
            }
            reply
        }
        "extract" => {
            // One entry per statement in the prompt (three words or more, not a question),
            // whoever wrote it: a message that should not be in the prompt becomes an entry a
            // test can see. "maybe" makes it weak.
            let messages = elements(&user, "message");
            let updates: Vec<Value> = messages
                .iter()
                .filter_map(|(_, t)| {
                    let t = t.trim();
                    let lower = t.to_lowercase();
                    if t.ends_with('?') || t.split_whitespace().count() < 3 {
                        return None;
                    }
                    let key: Vec<String> = lower
                        .split(|c: char| !c.is_alphanumeric())
                        .filter(|w| !w.is_empty())
                        .take(4)
                        .map(str::to_string)
                        .collect();
                    let category = if lower.contains("work") {
                        "work_context"
                    } else if lower.contains("like") || lower.contains("prefer") {
                        "preference"
                    } else {
                        "personal_context"
                    };
                    let confidence = if lower.contains("maybe") { 0.5 } else { 0.9 };
                    Some(json!({
                        "category": category, "key": key.join("_"), "value": t,
                        "action": "add", "confidence": confidence
                    }))
                })
                .collect();
            let mut answer = json!({
                "memory_updates": updates,
                "daily_notes": format!("- {} messages today", messages.len())
            });
            // The combined pass asks for the day summary too.
            let system = body["messages"][0]["content"].as_str().unwrap_or("");
            if system.contains("\"day_summary\"") {
                let said: Vec<String> = messages.iter().map(|(_, t)| t.clone()).collect();
                answer["day_summary"] = json!(clip(&format!("Said: {}", said.join(" / ")), 300));
            }
            answer.to_string()
        }
        _ => json!({ "error": "unknown task" }).to_string(),
    }
}
