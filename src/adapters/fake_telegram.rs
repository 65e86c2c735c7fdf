//! A fake Telegram Bot API server on 127.0.0.1 for tests: the real teloxide client talks HTTP
//! to it (`POST /bot<TOKEN>/<method>`). Tests queue updates (messages in private chats, groups
//! and forum topics, and their edits); `getUpdates` long-polls for them; `sendMessage`,
//! `sendChatAction` and `setMyCommands` are recorded; `getChatAdministrators` answers the
//! administrators a test set. "@name" words in a message come with their mention entities, as
//! from Telegram. A wrong token gets 401 Unauthorized, as from Telegram.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// The bot the fake server is: id and username.
pub const BOT_ID: i64 = 7_000_000_001;
/// The bot's username on the fake Telegram.
pub const BOT_USERNAME: &str = "engram_test_bot";

/// A chat where a test message is posted.
#[derive(Debug, Clone)]
pub enum Chat {
    /// A private chat with user `id` (the chat id is the user id).
    Private {
        /// The user's (and the chat's) id.
        id: i64,
        /// The user's display name.
        name: String,
    },
    /// A group or supergroup; `topic` is a forum topic id.
    Group {
        /// The chat id.
        id: i64,
        /// The group's title.
        title: String,
        /// The forum topic, if any.
        topic: Option<i32>,
    },
}

impl Chat {
    fn json(&self) -> Value {
        match self {
            Chat::Private { id, name } => json!({"id": id, "type": "private", "first_name": name}),
            Chat::Group { id, title, topic } => {
                json!({"id": id, "type": "supergroup", "title": title, "is_forum": topic.is_some()})
            }
        }
    }

    fn id(&self) -> i64 {
        match self {
            Chat::Private { id, .. } | Chat::Group { id, .. } => *id,
        }
    }
}

#[derive(Default)]
struct Shared {
    token: String,
    refuse_all: bool,
    /// sendMessage calls still to answer 429 (flood control).
    rate_limited: usize,
    /// The `retry_after` (seconds) of those 429s.
    retry_after: u32,
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    sent: Vec<Value>,
    actions: Vec<Value>,
    /// The command menus, by `language_code` ("" for every client).
    commands: HashMap<String, Vec<Value>>,
    calls: Vec<String>,
    chats: std::collections::HashMap<i64, Value>,
    /// Administrators per chat: (user id, name).
    admins: std::collections::HashMap<i64, Vec<(i64, String)>>,
    /// Files getFile and the file route serve, by file id.
    files: std::collections::HashMap<String, Vec<u8>>,
    /// The size getFile states of a file, where a test set one (else its length).
    stated_sizes: std::collections::HashMap<String, usize>,
    /// getFile calls answered.
    file_gets: usize,
    /// While true, file downloads wait (a slow file server).
    files_held: watch::Sender<bool>,
}

/// A file a test message carries.
#[derive(Debug, Clone, Copy)]
pub enum TgFile<'a> {
    /// A photo (JPEG).
    Photo(&'a [u8]),
    /// A document: file name, MIME type, bytes.
    Document(&'a str, &'a str, &'a [u8]),
    /// A voice note (OGG).
    Voice(&'a [u8]),
    /// An audio file: file name, bytes.
    Audio(&'a str, &'a [u8]),
}

/// Someone who writes in a test chat.
#[derive(Debug, Clone)]
pub struct TgUser<'a> {
    /// The user id.
    pub id: i64,
    /// The display name.
    pub name: &'a str,
    /// The @username, if any.
    pub username: Option<&'a str>,
}

impl TgUser<'_> {
    fn json(&self) -> Value {
        let mut user = json!({"id": self.id, "is_bot": false, "first_name": self.name});
        if let Some(u) = self.username {
            user["username"] = json!(u);
        }
        user
    }
}

/// Mention entities of the "@name" words of `text` (offsets in UTF-16 units).
fn mention_entities(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for (i, c) in text.char_indices() {
        let at_word_start = i == 0 || text[..i].ends_with(char::is_whitespace);
        if c == '@' && at_word_start {
            let rest = &text[i + 1..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(json!({"type": "mention", "offset": offset, "length": name.len() + 1}));
            }
        }
        offset += c.len_utf16();
    }
    out
}

/// A fake Telegram Bot API: hands out queued updates to getUpdates and records what the bot sends.
pub struct FakeTelegram {
    addr: SocketAddr,
    conflicts: Arc<std::sync::atomic::AtomicUsize>,
    shared: Arc<Mutex<Shared>>,
    new_update: Arc<Notify>,
    sent_count: watch::Sender<usize>,
    refused_count: watch::Sender<usize>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct AppState {
    /// getUpdates calls being answered now (Telegram allows one consumer per token).
    polling: Arc<std::sync::atomic::AtomicUsize>,
    /// getUpdates calls answered 409 Conflict because another was being answered.
    conflicts: Arc<std::sync::atomic::AtomicUsize>,
    shared: Arc<Mutex<Shared>>,
    new_update: Arc<Notify>,
    sent_count: watch::Sender<usize>,
    refused_count: watch::Sender<usize>,
}

impl FakeTelegram {
    /// Starts the server; only `token` is accepted.
    pub async fn start(token: &str) -> std::io::Result<FakeTelegram> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared {
            token: token.to_string(),
            next_update: 1,
            next_message: 1,
            ..Shared::default()
        }));
        let new_update = Arc::new(Notify::new());
        let (sent_count, _) = watch::channel(0);
        let (refused_count, _) = watch::channel(0);
        let conflicts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let state = AppState {
            polling: Default::default(),
            conflicts: conflicts.clone(),
            shared: shared.clone(),
            new_update: new_update.clone(),
            sent_count: sent_count.clone(),
            refused_count: refused_count.clone(),
        };
        let app = Router::new()
            .route("/{bot}/{method}", post(handle))
            .route("/file/{bot}/{*path}", axum::routing::get(file))
            .with_state(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeTelegram {
            addr,
            conflicts,
            shared,
            new_update,
            sent_count,
            refused_count,
            task,
        })
    }

    /// The Bot API base URL (for `telegram.api_url`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Refuse every call as if the service were down (500), until called with false.
    pub fn refuse_all(&self, refuse: bool) {
        self.shared.lock().expect("fake lock").refuse_all = refuse;
    }

    /// The next `n` sendMessage calls get 429 "retry after 0" (flood control).
    pub fn rate_limit_next(&self, n: usize) {
        self.rate_limit_next_for(n, 0);
    }

    /// The next `n` sendMessage calls get 429 "retry after `secs`".
    pub fn rate_limit_next_for(&self, n: usize, secs: u32) {
        let mut s = self.shared.lock().expect("fake lock");
        s.rate_limited = n;
        s.retry_after = secs;
    }

    /// Queues a text message from user `from` (id, name) in `chat`; `reply_to_bot` makes it a
    /// reply to one of the bot's messages. Returns the message id.
    pub fn push_text(&self, chat: &Chat, from: (i64, &str), text: &str, reply_to_bot: bool) -> i64 {
        let from = TgUser {
            id: from.0,
            name: from.1,
            username: None,
        };
        self.push_message(chat, &from, text, reply_to_bot, None, None)
    }

    /// `push_text` from someone with a username.
    pub fn push_from(&self, chat: &Chat, from: &TgUser<'_>, text: &str, reply_to_bot: bool) -> i64 {
        self.push_message(chat, from, text, reply_to_bot, None, None)
    }

    /// Queues a text message in `chat` sent on behalf of the chat `sender` (id, title), as
    /// Telegram sends it: a linked channel's post forwarded automatically into its
    /// discussion group comes from the placeholder account 777000 (`forwarded`), a member
    /// writing as a channel from the bot account Channel_Bot. Returns the message id.
    pub fn push_as_chat(
        &self,
        chat: &Chat,
        sender: (i64, &str),
        text: &str,
        forwarded: bool,
    ) -> i64 {
        let (id, name) = if forwarded {
            (777_000, "Telegram")
        } else {
            (136_817_688, "Channel")
        };
        let placeholder = TgUser {
            id,
            name,
            username: None,
        };
        self.push_shaped(chat, &placeholder, text, false, None, None, |m| {
            m["from"]["is_bot"] = json!(!forwarded);
            m["sender_chat"] = json!({"id": sender.0, "type": "channel", "title": sender.1});
            m["is_automatic_forward"] = json!(forwarded);
        })
    }

    /// Queues an edit of message `id` (sent by `from` in `chat`): its new text.
    pub fn push_edit(&self, chat: &Chat, from: &TgUser<'_>, id: i64, text: &str) {
        self.push_message(chat, from, text, false, Some(id), None);
    }

    /// Queues a message carrying `file` with `caption` (may be empty); the file is served by
    /// getFile and the file route. `size` overrides the size the message and getFile state (a
    /// file that claims to be smaller or larger than it is). Returns the message id.
    pub fn push_file(
        &self,
        chat: &Chat,
        from: (i64, &str),
        file: TgFile<'_>,
        caption: &str,
        size: Option<usize>,
    ) -> i64 {
        self.push_file_as(chat, from, file, caption, size, None)
    }

    /// Queues an edit of message `id` that carries `file` with `caption` (as `push_file`).
    pub fn push_file_edit(
        &self,
        chat: &Chat,
        from: (i64, &str),
        id: i64,
        file: TgFile<'_>,
        caption: &str,
    ) -> i64 {
        self.push_file_as(chat, from, file, caption, None, Some(id))
    }

    fn push_file_as(
        &self,
        chat: &Chat,
        from: (i64, &str),
        file: TgFile<'_>,
        caption: &str,
        size: Option<usize>,
        edit_of: Option<i64>,
    ) -> i64 {
        let from = TgUser {
            id: from.0,
            name: from.1,
            username: None,
        };
        let (key, bytes) = match &file {
            TgFile::Photo(b) => ("photo", *b),
            TgFile::Document(_, _, b) => ("document", *b),
            TgFile::Voice(b) => ("voice", *b),
            TgFile::Audio(_, b) => ("audio", *b),
        };
        let id = {
            let mut s = self.shared.lock().expect("fake lock");
            let id = format!("file{}", s.files.len() + 1);
            s.files.insert(id.clone(), bytes.to_vec());
            if let Some(size) = size {
                s.stated_sizes.insert(id.clone(), size);
            }
            id
        };
        let meta = json!({"file_id": id, "file_unique_id": format!("u-{id}"),
                          "file_size": size.unwrap_or(bytes.len())});
        let mut value = meta.clone();
        match file {
            TgFile::Photo(_) => {
                value["width"] = json!(640);
                value["height"] = json!(480);
                value = json!([value]);
            }
            TgFile::Document(name, mime, _) => {
                value["file_name"] = json!(name);
                value["mime_type"] = json!(mime);
            }
            TgFile::Voice(_) => {
                value["duration"] = json!(3);
                value["mime_type"] = json!("audio/ogg");
            }
            TgFile::Audio(name, _) => {
                value["duration"] = json!(60);
                value["file_name"] = json!(name);
                value["mime_type"] = json!("audio/mpeg");
            }
        }
        self.push_message(chat, &from, caption, false, edit_of, Some((key, value)))
    }

    /// Holds every file download until called again with false (a file server too slow for
    /// `attachments.timeout_secs`).
    pub fn hold_files(&self, held: bool) {
        self.shared
            .lock()
            .expect("fake lock")
            .files_held
            .send_replace(held);
    }

    /// getFile calls answered so far.
    pub fn file_gets(&self) -> usize {
        self.shared.lock().expect("fake lock").file_gets
    }

    /// The administrators `getChatAdministrators` answers for `chat`: (user id, name).
    pub fn set_admins(&self, chat: i64, admins: &[(i64, &str)]) {
        self.shared.lock().expect("fake lock").admins.insert(
            chat,
            admins.iter().map(|(id, n)| (*id, n.to_string())).collect(),
        );
    }

    fn push_message(
        &self,
        chat: &Chat,
        from: &TgUser<'_>,
        text: &str,
        reply_to_bot: bool,
        edit_of: Option<i64>,
        file: Option<(&str, Value)>,
    ) -> i64 {
        self.push_shaped(chat, from, text, reply_to_bot, edit_of, file, |_| {})
    }

    /// `push_message`, the message then given its last touches by `shape`.
    #[allow(clippy::too_many_arguments)]
    fn push_shaped(
        &self,
        chat: &Chat,
        from: &TgUser<'_>,
        text: &str,
        reply_to_bot: bool,
        edit_of: Option<i64>,
        file: Option<(&str, Value)>,
        shape: impl FnOnce(&mut Value),
    ) -> i64 {
        let mut s = self.shared.lock().expect("fake lock");
        let message_id = match edit_of {
            Some(id) => id,
            None => {
                s.next_message += 1;
                s.next_message - 1
            }
        };
        let chat_json = chat.json();
        s.chats.insert(chat.id(), chat_json.clone());
        let mut message = json!({
            "message_id": message_id,
            "date": 1_764_000_000 + message_id,
            "chat": chat_json,
            "from": from.json(),
        });
        match file {
            Some((key, value)) => {
                message[key] = value;
                if !text.is_empty() {
                    message["caption"] = json!(text);
                }
            }
            None => message["text"] = json!(text),
        }
        let entities = mention_entities(text);
        if !entities.is_empty() {
            message["entities"] = json!(entities);
        }
        if edit_of.is_some() {
            message["edit_date"] = json!(1_764_100_000 + message_id);
        }
        if let Chat::Group {
            topic: Some(topic), ..
        } = chat
        {
            message["message_thread_id"] = json!(topic);
            message["is_topic_message"] = json!(true);
        }
        if reply_to_bot {
            message["reply_to_message"] = json!({
                "message_id": 999_999, "date": 1_764_000_000, "chat": chat.json(),
                "from": bot_user(), "text": "an earlier answer"
            });
        }
        shape(&mut message);
        let update_id = s.next_update;
        s.next_update += 1;
        let kind = if edit_of.is_some() {
            "edited_message"
        } else {
            "message"
        };
        s.updates
            .push(json!({"update_id": update_id, kind: message}));
        drop(s);
        self.new_update.notify_waiters();
        self.new_update.notify_one();
        message_id
    }

    /// getUpdates calls refused with 409 Conflict: made while another was being answered
    /// (two processes polling one token).
    pub fn conflicts(&self) -> usize {
        self.conflicts.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every `sendMessage` body so far.
    pub fn sent(&self) -> Vec<Value> {
        self.shared.lock().expect("fake lock").sent.clone()
    }

    /// The texts sent to chat `chat`.
    pub fn sent_to(&self, chat: i64) -> Vec<String> {
        self.sent()
            .iter()
            .filter(|m| m["chat_id"].as_i64() == Some(chat))
            .filter_map(|m| m["text"].as_str().map(str::to_string))
            .collect()
    }

    /// Waits until at least `n` messages were sent (at most `within`, then panics).
    pub async fn wait_sent(&self, n: usize, within: Duration) {
        if !reaches(&self.sent_count, n, within).await {
            panic!("{n} messages were not sent: {:?}", self.sent());
        }
    }

    /// Waits until at least `n` calls were refused by `refuse_all` (at most `within`).
    pub async fn wait_refused(&self, n: usize, within: Duration) {
        if !reaches(&self.refused_count, n, within).await {
            panic!("{n} calls were not refused: {:?}", self.calls());
        }
    }

    /// The command list the bot registered for every client (setMyCommands).
    pub fn commands(&self) -> Vec<Value> {
        self.commands_in("")
    }

    /// The command list the bot registered for clients in `language_code` ("" for every
    /// client; empty when none was).
    pub fn commands_in(&self, language_code: &str) -> Vec<Value> {
        let s = self.shared.lock().expect("fake lock");
        s.commands.get(language_code).cloned().unwrap_or_default()
    }

    /// The chat actions ("typing") the bot sent.
    pub fn chat_actions(&self) -> Vec<Value> {
        self.shared.lock().expect("fake lock").actions.clone()
    }

    /// Method names called, in order (lowercase).
    pub fn calls(&self) -> Vec<String> {
        self.shared.lock().expect("fake lock").calls.clone()
    }
}

/// Whether `count` reaches `n` within `within`.
async fn reaches(count: &watch::Sender<usize>, n: usize, within: Duration) -> bool {
    let mut count = count.subscribe();
    tokio::time::timeout(within, count.wait_for(|c| *c >= n))
        .await
        .is_ok_and(|seen| seen.is_ok())
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn bot_user() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "Engram", "username": BOT_USERNAME})
}

fn ok(result: Value) -> Response {
    Json(json!({"ok": true, "result": result})).into_response()
}

// Over 80 lines: one arm per Bot API method the fake serves (test support, not in a release
// build).
/// A file's bytes (`https://api.telegram.org/file/bot<token>/<path>`).
async fn file(
    State(state): State<AppState>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    let (found, mut held) = {
        let s = state.shared.lock().expect("fake lock");
        if bot != format!("bot{}", s.token) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let id = path.trim_start_matches("files/");
        (s.files.get(id).cloned(), s.files_held.subscribe())
    };
    let _ = held.wait_for(|held| !*held).await;
    match found {
        Some(bytes) => bytes.into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn handle(
    State(state): State<AppState>,
    Path((bot, method)): Path<(String, String)>,
    body: Option<Json<Value>>,
) -> Response {
    let body = body.map(|Json(b)| b).unwrap_or(Value::Null);
    let method = method.to_lowercase();
    {
        let mut s = state.shared.lock().expect("fake lock");
        s.calls.push(method.clone());
        if s.refuse_all {
            state.refused_count.send_modify(|n| *n += 1);
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(
                    json!({"ok": false, "error_code": 500, "description": "Internal Server Error"}),
                ),
            )
                .into_response();
        }
        if bot != format!("bot{}", s.token) {
            return (
                StatusCode::UNAUTHORIZED,
                Json(json!({"ok": false, "error_code": 401, "description": "Unauthorized"})),
            )
                .into_response();
        }
    }
    match method.as_str() {
        "getme" => ok(json!({
            "id": BOT_ID, "is_bot": true, "first_name": "Engram", "username": BOT_USERNAME,
            "can_join_groups": true, "can_read_all_group_messages": false,
            "supports_inline_queries": false, "can_connect_to_business": false,
            "has_main_web_app": false
        })),
        "setmycommands" => {
            let mut s = state.shared.lock().expect("fake lock");
            let language = body["language_code"].as_str().unwrap_or("").to_string();
            let commands = body["commands"].as_array().cloned().unwrap_or_default();
            // As Telegram checks: a two-letter code, 1 to 256 characters per description.
            let fits = commands.iter().all(|c| {
                let d = c["description"].as_str().unwrap_or("").chars().count();
                (1..=256).contains(&d)
            });
            if !(fits && (language.is_empty() || language.len() == 2)) {
                return (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"ok": false, "error_code": 400,
                                "description": "Bad Request: invalid commands"})),
                )
                    .into_response();
            }
            s.commands.insert(language, commands);
            ok(json!(true))
        }
        "deletewebhook" => ok(json!(true)),
        "getfile" => {
            let id = body["file_id"].as_str().unwrap_or_default().to_string();
            let mut s = state.shared.lock().expect("fake lock");
            s.file_gets += 1;
            let stated = s.stated_sizes.get(&id).copied();
            match s.files.get(&id) {
                Some(bytes) => ok(json!({"file_id": id, "file_unique_id": format!("u-{id}"),
                                         "file_size": stated.unwrap_or(bytes.len()),
                                         "file_path": format!("files/{id}")})),
                None => (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"ok": false, "error_code": 400, "description": "Bad Request: invalid file_id"})),
                )
                    .into_response(),
            }
        }
        "getchatadministrators" => {
            let chat = body["chat_id"].as_i64().unwrap_or_default();
            let admins = state
                .shared
                .lock()
                .expect("fake lock")
                .admins
                .get(&chat)
                .cloned()
                .unwrap_or_default();
            let members: Vec<Value> = admins
                .iter()
                .map(|(id, name)| {
                    json!({"status": "administrator", "user": {"id": id, "is_bot": false, "first_name": name},
                           "can_be_edited": false, "is_anonymous": false, "can_manage_chat": true,
                           "can_change_info": true, "can_delete_messages": true, "can_manage_video_chats": true,
                           "can_invite_users": true, "can_restrict_members": true, "can_promote_members": false})
                })
                .collect();
            ok(Value::Array(members))
        }
        "getwebhookinfo" => ok(json!({"url": "", "has_custom_certificate": false, "pending_update_count": 0})),
        "getupdates" => get_updates(&state, &body).await,
        "sendchataction" => {
            state
                .shared
                .lock()
                .expect("fake lock")
                .actions
                .push(body);
            ok(json!(true))
        }
        "sendmessage" => {
            let mut s = state.shared.lock().expect("fake lock");
            if s.rate_limited > 0 {
                s.rate_limited -= 1;
                let secs = s.retry_after;
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    Json(json!({"ok": false, "error_code": 429,
                                "description": format!("Too Many Requests: retry after {secs}"),
                                "parameters": {"retry_after": secs}})),
                )
                    .into_response();
            }
            let chat_id = body["chat_id"].as_i64().unwrap_or_default();
            let chat = s
                .chats
                .get(&chat_id)
                .cloned()
                .unwrap_or(json!({"id": chat_id, "type": "private", "first_name": "someone"}));
            let message_id = s.next_message;
            s.next_message += 1;
            s.sent.push(body.clone());
            let n = s.sent.len();
            drop(s);
            state.sent_count.send_replace(n);
            ok(json!({
                "message_id": message_id, "date": 1_764_000_000 + message_id, "chat": chat,
                "from": bot_user(), "text": body["text"]
            }))
        }
        other => (
            StatusCode::NOT_FOUND,
            Json(json!({"ok": false, "error_code": 404, "description": format!("Not Found: method {other}")})),
        )
            .into_response(),
    }
}

/// Updates from `offset` on (earlier ones are confirmed and dropped), at most `limit`; waits for
/// one when none is queued, up to the request's `timeout` seconds.
async fn get_updates(state: &AppState, body: &Value) -> Response {
    use std::sync::atomic::Ordering::SeqCst;
    /// Counts a call as being answered until it is (or its client went away: the server
    /// drops the handler).
    struct Polling(Arc<std::sync::atomic::AtomicUsize>);
    impl Drop for Polling {
        fn drop(&mut self) {
            self.0.fetch_sub(1, SeqCst);
        }
    }
    if state.polling.fetch_add(1, SeqCst) > 0 {
        state.polling.fetch_sub(1, SeqCst);
        state.conflicts.fetch_add(1, SeqCst);
        return (
            StatusCode::CONFLICT,
            Json(json!({"ok": false, "error_code": 409,
                "description": "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"})),
        )
            .into_response();
    }
    let _polling = Polling(state.polling.clone());
    let offset = body["offset"].as_i64().unwrap_or(0);
    let timeout = body["timeout"].as_u64().unwrap_or(0);
    // At most `limit` (1 to 100, default 100), as Telegram answers.
    let limit = body["limit"].as_u64().unwrap_or(100).clamp(1, 100) as usize;
    let pending = |s: &mut Shared| -> Vec<Value> {
        s.updates
            .retain(|u| u["update_id"].as_i64().unwrap_or_default() >= offset);
        s.updates.iter().take(limit).cloned().collect()
    };
    let notified = state.new_update.notified();
    let now = pending(&mut state.shared.lock().expect("fake lock"));
    if !now.is_empty() || timeout == 0 {
        return ok(Value::Array(now));
    }
    let _ = tokio::time::timeout(Duration::from_secs(timeout), notified).await;
    ok(Value::Array(pending(
        &mut state.shared.lock().expect("fake lock"),
    )))
}
