//! A fake Discord HTTP API on 127.0.0.1 for tests: serenity's real HTTP client, pointed at it
//! as a proxy, fetches channels (with their permission overwrites) and guild roles (with their
//! permissions), sends messages and typing indicators, which are recorded. A wrong token gets
//! 401, as from Discord. Its gateway (`gateway`) takes serenity's shard connections.

mod gateway;
pub use gateway::shard_of;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The bot's own user id on the fake Discord.
pub const BOT_ID: u64 = 900_000_000_000_000_001;
/// The bot's application id, as READY tells it.
pub const APPLICATION_ID: u64 = 900_000_000_000_000_002;
/// View Channel, as Discord's permission bit.
pub const VIEW_CHANNEL: u64 = 1 << 10;
/// Send Messages.
pub const SEND_MESSAGES: u64 = 1 << 11;
/// Manage Messages: a moderator.
pub const MANAGE_MESSAGES: u64 = 1 << 13;
/// Administrator.
pub const ADMINISTRATOR: u64 = 1 << 3;

#[derive(Default)]
struct Shared {
    token: String,
    channels: HashMap<u64, Value>,
    /// Roles per guild: (role id, permissions); a guild without any gets an @everyone that
    /// may view channels and send messages.
    roles: HashMap<u64, Vec<(u64, u64)>>,
    sent: Vec<(u64, Value)>,
    typing: Vec<u64>,
    /// Interaction responses and follow-ups, in order.
    interactions: Vec<Value>,
    /// The global commands last registered (PUT /applications/{app}/commands).
    commands: Vec<Value>,
    next_id: u64,
    /// Attachment files served at /attachments/{name}.
    files: std::collections::HashMap<String, Vec<u8>>,
    /// Attachment downloads served.
    downloads: usize,
    /// Messages served at GET /channels/{channel}/messages/{id} and in the channel's
    /// history, by (channel, id).
    messages: HashMap<(u64, u64), Value>,
    /// Messages fetched so far (one by one).
    message_gets: usize,
    /// Reads of a channel's history so far.
    history_reads: usize,
    /// Channel history reads fail (500) while set.
    history_failing: bool,
    /// Members' roles by (guild, user), served at GET /guilds/{guild}/members/{user}
    /// (anyone else: a member without roles).
    members: HashMap<(u64, u64), Vec<u64>>,
    /// Member lookups so far.
    member_gets: usize,
    /// The gateway's URL.
    gateway_url: String,
    /// Channels deleted (`delete_channel`): reading them answers Unknown Channel.
    deleted_channels: std::collections::HashSet<u64>,
}

#[derive(Clone)]
struct AppState {
    shared: Arc<Mutex<Shared>>,
    sent_count: watch::Sender<usize>,
    typing_count: watch::Sender<usize>,
}

/// A fake Discord HTTP API: records what the bot sends, refuses a wrong token.
pub struct FakeDiscord {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    sent_count: watch::Sender<usize>,
    typing_count: watch::Sender<usize>,
    task: tokio::task::JoinHandle<()>,
    gateway: gateway::Gateway,
}

impl FakeDiscord {
    /// Starts it on a free port of 127.0.0.1, accepting `token`.
    pub async fn start(token: &str) -> std::io::Result<FakeDiscord> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let gateway = gateway::Gateway::start(token, bot_user()).await?;
        let shared = Arc::new(Mutex::new(Shared {
            token: token.to_string(),
            next_id: 1_000,
            gateway_url: gateway.url(),
            ..Shared::default()
        }));
        let (sent_count, _) = watch::channel(0);
        let (typing_count, _) = watch::channel(0);
        let state = AppState {
            shared: shared.clone(),
            sent_count: sent_count.clone(),
            typing_count: typing_count.clone(),
        };
        let app = Router::new()
            .route("/api/v10/users/@me", get(me))
            .route("/api/v10/gateway", get(gateway_url))
            .route("/api/v10/gateway/bot", get(gateway_url))
            .route("/api/v10/channels/{id}", get(channel))
            .route("/api/v10/guilds/{id}/roles", get(roles))
            .route("/api/v10/guilds/{id}/members/{user}", get(member))
            .route(
                "/api/v10/channels/{id}/messages",
                post(send_message).get(channel_history),
            )
            .route("/api/v10/channels/{id}/typing", post(typing))
            .route(
                "/api/v10/channels/{id}/messages/{message}",
                get(get_message),
            )
            .route(
                "/api/v10/interactions/{id}/{token}/callback",
                post(interaction_callback),
            )
            .route("/api/v10/webhooks/{app}/{token}", post(followup))
            .route(
                "/api/v10/applications/{app}/commands",
                axum::routing::put(set_commands),
            )
            .route("/attachments/{name}", get(attachment))
            .with_state(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeDiscord {
            addr,
            shared,
            sent_count,
            typing_count,
            task,
            gateway,
        })
    }

    /// Every shard that identified on the gateway so far, in order: (shard, total).
    pub fn shards_identified(&self) -> Vec<(u64, u64)> {
        self.gateway.identified()
    }

    /// Waits until `n` shards identified on the gateway (at most `within`, then panics).
    pub async fn wait_shards(&self, n: usize, within: Duration) {
        self.gateway.wait_identified(n, within).await;
    }

    /// Sends a MESSAGE_CREATE (`payload` as Discord sends it) through the gateway, to the
    /// shard of its `guild_id` (none: a DM, shard 0); the number of connections it went to.
    pub fn dispatch_message(&self, payload: &Value) -> usize {
        let guild = payload["guild_id"]
            .as_str()
            .and_then(|g| g.parse::<u64>().ok());
        self.gateway.dispatch(guild, "MESSAGE_CREATE", payload)
    }

    /// Serves `bytes` as an attachment; its URL (Discord's CDN stands here).
    pub fn add_file(&self, name: &str, bytes: &[u8]) -> String {
        self.shared
            .lock()
            .expect("fake lock")
            .files
            .insert(name.to_string(), bytes.to_vec());
        format!("http://{}/attachments/{name}", self.addr)
    }

    /// Serves `payload` (a message as Discord sends it: `id` and `channel_id` set) when the
    /// bot fetches it, and in its channel's history; as Discord's HTTP API does, without
    /// `guild_id` and `member` (only gateway events carry them).
    pub fn add_message(&self, payload: &Value) {
        let id = |k: &str| payload[k].as_str().and_then(|v| v.parse::<u64>().ok());
        let (Some(channel), Some(message)) = (id("channel_id"), id("id")) else {
            panic!("a message needs its id and channel_id: {payload}");
        };
        self.shared
            .lock()
            .expect("fake lock")
            .messages
            .insert((channel, message), payload.clone());
    }

    /// Messages the bot fetched so far.
    pub fn message_gets(&self) -> usize {
        self.shared.lock().expect("fake lock").message_gets
    }

    /// Reads of a channel's history (`GET /channels/{id}/messages`) so far.
    pub fn history_reads(&self) -> usize {
        self.shared.lock().expect("fake lock").history_reads
    }

    /// Gives `user` these roles in `guild` (what a member lookup answers).
    pub fn set_member_roles(&self, guild: u64, user: u64, roles: &[u64]) {
        self.shared
            .lock()
            .expect("fake lock")
            .members
            .insert((guild, user), roles.to_vec());
    }

    /// Member lookups (`GET /guilds/{id}/members/{user}`) so far.
    pub fn member_gets(&self) -> usize {
        self.shared.lock().expect("fake lock").member_gets
    }

    /// Makes reads of a channel's history fail (an outage) or work again.
    pub fn fail_history(&self, failing: bool) {
        self.shared.lock().expect("fake lock").history_failing = failing;
    }

    /// Attachment downloads served so far.
    pub fn downloads(&self) -> usize {
        self.shared.lock().expect("fake lock").downloads
    }

    /// The global commands the bot registered last.
    pub fn commands(&self) -> Vec<Value> {
        self.shared.lock().expect("fake lock").commands.clone()
    }

    /// The proxy URL for `discord.api_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds a guild text channel; `hidden` denies View Channel to @everyone.
    pub fn add_text_channel(&self, guild: u64, id: u64, name: &str, hidden: bool) {
        let overwrites = if hidden {
            json!([{"id": guild.to_string(), "type": 0, "allow": "0", "deny": VIEW_CHANNEL.to_string()}])
        } else {
            json!([])
        };
        self.insert(
            id,
            json!({"id": id.to_string(), "type": 0, "guild_id": guild.to_string(), "name": name,
                   "position": 0, "permission_overwrites": overwrites, "nsfw": false}),
        );
    }

    /// Adds a guild text channel with these overwrites for roles: (role id, allow, deny).
    pub fn add_channel_with(
        &self,
        guild: u64,
        id: u64,
        name: &str,
        overwrites: &[(u64, u64, u64)],
    ) {
        let overwrites: Vec<Value> = overwrites
            .iter()
            .map(|(role, allow, deny)| {
                json!({"id": role.to_string(), "type": 0, "allow": allow.to_string(), "deny": deny.to_string()})
            })
            .collect();
        self.insert(
            id,
            json!({"id": id.to_string(), "type": 0, "guild_id": guild.to_string(), "name": name,
                   "position": 0, "permission_overwrites": overwrites, "nsfw": false}),
        );
    }

    /// Sets the roles of `guild`: (role id, permissions). The @everyone role's id is the
    /// guild's.
    pub fn set_roles(&self, guild: u64, roles: &[(u64, u64)]) {
        self.shared
            .lock()
            .expect("fake lock")
            .roles
            .insert(guild, roles.to_vec());
    }

    /// Adds a thread of `parent`; `private` makes it a private thread.
    pub fn add_thread(&self, guild: u64, id: u64, parent: u64, private: bool) {
        self.insert(
            id,
            json!({"id": id.to_string(), "type": if private { 12 } else { 11 },
                   "guild_id": guild.to_string(), "parent_id": parent.to_string(), "name": "thread",
                   "owner_id": "1", "message_count": 1, "member_count": 1,
                   "thread_metadata": {"archived": false, "auto_archive_duration": 1440,
                                       "archive_timestamp": "2026-11-20T09:00:00+00:00", "locked": false}}),
        );
    }

    /// Deletes a channel as Discord does: its threads and every message in them go with it
    /// (no event is sent: the test sends the one Discord would), and reading any of them
    /// answers Unknown Channel.
    pub fn delete_channel(&self, id: u64) {
        let mut s = self.shared.lock().expect("fake lock");
        let parent = id.to_string();
        let gone: Vec<u64> = s
            .channels
            .iter()
            .filter(|(c, v)| **c == id || v["parent_id"].as_str() == Some(parent.as_str()))
            .map(|(c, _)| *c)
            .chain([id])
            .collect();
        for c in gone {
            s.channels.remove(&c);
            s.messages.retain(|(channel, _), _| *channel != c);
            s.deleted_channels.insert(c);
        }
    }

    fn insert(&self, id: u64, channel: Value) {
        self.shared
            .lock()
            .expect("fake lock")
            .channels
            .insert(id, channel);
    }

    /// (channel id, message body) of every message sent.
    pub fn sent(&self) -> Vec<(u64, Value)> {
        self.shared.lock().expect("fake lock").sent.clone()
    }

    /// Interaction responses (`{"type": 4, "data": …}`) and follow-ups (the message body).
    pub fn interactions(&self) -> Vec<Value> {
        self.shared.lock().expect("fake lock").interactions.clone()
    }

    /// The channels the bot showed "typing…" in, in order.
    pub fn typing(&self) -> Vec<u64> {
        self.shared.lock().expect("fake lock").typing.clone()
    }

    /// Waits until "typing…" was shown at least `n` times (at most `within`, then panics).
    pub async fn wait_typing(&self, n: usize, within: Duration) {
        if !reaches(&self.typing_count, n, within).await {
            panic!("typing was not shown {n} times: {:?}", self.typing());
        }
    }

    /// Waits until at least `n` messages were sent (at most `within`, then panics).
    pub async fn wait_sent(&self, n: usize, within: Duration) {
        if !reaches(&self.sent_count, n, within).await {
            panic!("{n} messages were not sent: {:?}", self.sent());
        }
    }
}

/// Whether `count` reaches `n` within `within`.
async fn reaches(count: &watch::Sender<usize>, n: usize, within: Duration) -> bool {
    let mut count = count.subscribe();
    tokio::time::timeout(within, count.wait_for(|c| *c >= n))
        .await
        .map(|seen| seen.expect("the fake is running"))
        .is_ok()
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The bot's user object, as Discord describes it.
pub fn bot_user() -> Value {
    json!({"id": BOT_ID.to_string(), "username": "Engram", "discriminator": "0",
           "global_name": null, "avatar": null, "bot": true})
}

/// None when the request carries the token, else the 401 to answer.
fn refused(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    let expected = format!("Bot {}", state.shared.lock().expect("fake lock").token);
    let given = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    (given != expected).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"message": "401: Unauthorized", "code": 0})),
        )
            .into_response()
    })
}

async fn me(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    Json(bot_user()).into_response()
}

async fn gateway_url(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    let url = state.shared.lock().expect("fake lock").gateway_url.clone();
    Json(json!({"url": url, "shards": 1, "session_start_limit":
        {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}}))
    .into_response()
}

async fn channel(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    match state.shared.lock().expect("fake lock").channels.get(&id) {
        Some(c) => Json(c.clone()).into_response(),
        None => unknown_channel(),
    }
}

/// Discord's answer about a channel that does not exist.
fn unknown_channel() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"message": "Unknown Channel", "code": 10003})),
    )
        .into_response()
}

async fn get_message(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((channel, message)): Path<(u64, u64)>,
) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    let mut s = state.shared.lock().expect("fake lock");
    s.message_gets += 1;
    match s.messages.get(&(channel, message)) {
        Some(m) => Json(as_read(m)).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"message": "Unknown Message", "code": 10008})),
        )
            .into_response(),
    }
}

/// A message as the HTTP API gives it: without `guild_id` and `member`.
fn as_read(m: &Value) -> Value {
    let mut m = m.clone();
    if let Some(o) = m.as_object_mut() {
        o.remove("guild_id");
        o.remove("member");
    }
    m
}

/// `GET /channels/{id}/messages?before=|after=&limit=`: the channel's messages before
/// `before` (the newest of them) or after `after` (the oldest of them), or its newest, at most
/// `limit` (50 by default, 100 at most), newest first, as Discord answers.
async fn channel_history(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(channel): Path<u64>,
    axum::extract::Query(q): axum::extract::Query<HashMap<String, String>>,
) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    let id = |k: &str| q.get(k).and_then(|v| v.parse::<u64>().ok());
    let limit: usize = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(50)
        .min(100);
    let mut s = state.shared.lock().expect("fake lock");
    s.history_reads += 1;
    if s.deleted_channels.contains(&channel) {
        return unknown_channel();
    }
    if s.history_failing {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"message": "500: Internal Server Error", "code": 0})),
        )
            .into_response();
    }
    let mut ids: Vec<u64> = s
        .messages
        .keys()
        .filter(|(c, _)| *c == channel)
        .map(|(_, id)| *id)
        .collect();
    ids.sort_unstable();
    let ids: Vec<u64> = match (id("before"), id("after")) {
        (_, Some(after)) => {
            let mut oldest: Vec<u64> = ids.into_iter().filter(|i| *i > after).take(limit).collect();
            oldest.reverse();
            oldest
        }
        (before, None) => ids
            .into_iter()
            .rev()
            .filter(|i| before.is_none_or(|b| *i < b))
            .take(limit)
            .collect(),
    };
    let page: Vec<Value> = ids
        .iter()
        .map(|id| as_read(&s.messages[&(channel, *id)]))
        .collect();
    Json(page).into_response()
}

/// `GET /guilds/{id}/members/{user}`: the member with the roles `set_member_roles` gave.
async fn member(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((guild, user)): Path<(u64, u64)>,
) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    let mut s = state.shared.lock().expect("fake lock");
    s.member_gets += 1;
    let roles: Vec<String> = s
        .members
        .get(&(guild, user))
        .map(|r| r.iter().map(u64::to_string).collect())
        .unwrap_or_default();
    Json(json!({
        "user": {"id": user.to_string(), "username": format!("user{user}"), "discriminator": "0",
                 "global_name": null, "avatar": null},
        "roles": roles, "joined_at": "2026-01-01T00:00:00.000000+00:00",
        "deaf": false, "mute": false, "flags": 0
    }))
    .into_response()
}

async fn roles(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(guild): Path<u64>,
) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    let roles = state
        .shared
        .lock()
        .expect("fake lock")
        .roles
        .get(&guild)
        .cloned()
        .unwrap_or_else(|| vec![(guild, VIEW_CHANNEL | SEND_MESSAGES)]);
    let body: Vec<Value> = roles
        .iter()
        .enumerate()
        .map(|(i, (id, perms))| {
            json!({"id": id.to_string(), "name": if *id == guild { "@everyone".to_string() } else { format!("role{i}") },
                   "color": 0, "colors": {"primary_color": 0, "secondary_color": null, "tertiary_color": null},
                   "hoist": false, "managed": false, "mentionable": false, "position": i,
                   "permissions": perms.to_string(), "icon": null, "unicode_emoji": null, "flags": 0})
        })
        .collect();
    Json(Value::Array(body)).into_response()
}

async fn send_message(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Json(body): Json<Value>,
) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    let mut s = state.shared.lock().expect("fake lock");
    s.next_id += 1;
    let message_id = s.next_id;
    s.sent.push((id, body.clone()));
    let n = s.sent.len();
    drop(s);
    state.sent_count.send_replace(n);
    Json(sent_message(message_id, id, &body)).into_response()
}

async fn typing(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<u64>,
) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    let mut s = state.shared.lock().expect("fake lock");
    s.typing.push(id);
    let n = s.typing.len();
    drop(s);
    state.typing_count.send_replace(n);
    StatusCode::NO_CONTENT.into_response()
}

async fn attachment(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    let mut s = state.shared.lock().expect("fake lock");
    s.downloads += 1;
    match s.files.get(&name) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Discord's client languages, the keys a localization may have.
const LOCALES: [&str; 32] = [
    "id", "da", "de", "en-GB", "en-US", "es-ES", "es-419", "fr", "hr", "it", "lt", "hu", "nl",
    "no", "pl", "pt-BR", "ro", "fi", "sv-SE", "vi", "tr", "cs", "el", "bg", "ru", "uk", "hi", "th",
    "zh-CN", "ja", "zh-TW", "ko",
];

/// Whether a command or option's descriptions are as Discord takes them: 1 to 100 characters,
/// localized only for its locales.
fn described_as_discord_takes(item: &Value) -> bool {
    let fits = |v: &Value| {
        v.as_str()
            .is_some_and(|d| (1..=100).contains(&d.chars().count()))
    };
    let localized = match &item["description_localizations"] {
        Value::Null => true,
        Value::Object(m) => m
            .iter()
            .all(|(locale, d)| LOCALES.contains(&locale.as_str()) && fits(d)),
        _ => false,
    };
    fits(&item["description"]) && localized
}

/// Registers the global commands, refusing (400, all of them) what Discord would.
async fn set_commands(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(r) = refused(&state, &headers) {
        return r;
    }
    let commands = body.as_array().cloned().unwrap_or_default();
    let valid = commands.iter().all(|c| {
        described_as_discord_takes(c)
            && c["options"]
                .as_array()
                .is_none_or(|o| o.iter().all(described_as_discord_takes))
    });
    if !valid {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"message": "Invalid Form Body", "code": 50035})),
        )
            .into_response();
    }
    state.shared.lock().expect("fake lock").commands = commands;
    Json(json!([])).into_response()
}

async fn interaction_callback(State(state): State<AppState>, Json(body): Json<Value>) -> Response {
    // Interaction endpoints are authorized by the interaction's token in the URL.
    state
        .shared
        .lock()
        .expect("fake lock")
        .interactions
        .push(body);
    StatusCode::NO_CONTENT.into_response()
}

async fn followup(
    State(state): State<AppState>,
    Path((_app, _token)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    let mut s = state.shared.lock().expect("fake lock");
    s.next_id += 1;
    let id = s.next_id;
    s.interactions.push(body.clone());
    drop(s);
    Json(sent_message(id, 0, &body)).into_response()
}

/// The message Discord returns for a sent `body`.
fn sent_message(id: u64, channel: u64, body: &Value) -> Value {
    json!({
        "id": id.to_string(), "channel_id": channel.to_string(), "author": bot_user(),
        "content": body["content"], "timestamp": "2026-11-20T09:00:00.000000+00:00",
        "edited_timestamp": null, "tts": false, "mention_everyone": false, "mentions": [],
        "mention_roles": [], "attachments": [], "embeds": [], "pinned": false, "type": 0
    })
}
