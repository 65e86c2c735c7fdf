//! The Telegram adapter (teloxide), at the top of the flow: long-polls `getUpdates`, turns each
//! message into an `IncomingMessage` for `Bot::handle`, and sends the reply with
//! `sendMessage` in parts of at most 4,096 UTF-16 units, as plain text (no parse mode, so
//! nothing in it is markup). A private chat is a DM; a group or supergroup is one space whose
//! forum topics are its channels. The bot is addressed by @username, by a reply to it, by its
//! name first, or by a command; with BotFather's privacy mode on, Telegram only delivers those
//! messages in groups, so the group's other chatter is not seen. Edited messages replace the
//! old text in memory; a group's administrators (`getChatAdministrators`, cached for a few
//! minutes) are its moderators; usernames are kept so "@name" mentions resolve.

use crate::adapters::lease::Lease;
use crate::adapters::split::{shortened, split_message, utf16};
use crate::adapters::{MessageHandler, edit_of_kept, isolated};
use crate::bot::Reply;
use crate::domain::attachment::{AttachmentKind, DownloadLimits, IncomingAttachment};
use crate::domain::language::Language;
use crate::domain::status::PlatformStatus;
use crate::domain::{Command, IncomingMessage, Mention, Platform, Privacy, SpaceKind};
use crate::router::memory_request;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use teloxide::payloads::setters::*;
use teloxide::requests::Requester;
use teloxide::types::{
    AllowedUpdate, BotCommand, ChatAction, ChatId, Me, Message, MessageEntityKind, ReplyParameters,
    ThreadId, Update, UpdateKind, UserId,
};
use teloxide::{ApiError, RequestError};
use tokio::sync::{Notify, Semaphore, mpsc, watch};
use tokio::task::JoinSet;
use tracing::{error, info, warn};

/// Telegram's longest message, in UTF-16 code units.
pub const MAX_MESSAGE: usize = 4096;

/// The channel name of a group's messages outside forum topics.
pub const MAIN_CHANNEL: &str = "main";

#[derive(Debug, thiserror::Error)]
/// Why the Telegram adapter stopped.
pub enum TelegramError {
    /// The token was refused: retrying cannot help.
    #[error("Telegram refused the bot token (check TELEGRAM_TOKEN)")]
    BadToken,
    #[error("invalid telegram.api_url {0:?}")]
    /// `telegram.api_url` is not a URL.
    BadUrl(String),
}

/// Where and how to reach the Bot API.
#[derive(Debug, Clone)]
pub struct TelegramSettings {
    /// Base URL of the Bot API ("https://api.telegram.org", or a self-hosted server).
    pub api_url: String,
    /// Long-poll wait of one `getUpdates` (seconds, under the client's 17 s timeout).
    pub poll_secs: u32,
    /// The bot's name in its own conversation ("Engram"), shown for its own mention (ingest
    /// writes "@username" as "@Name").
    pub bot_name: String,
    /// On shutdown, how long the chats may take to finish what they were given.
    pub shutdown_grace: Duration,
    /// Where the connection's state is told (`/readyz`).
    pub status: PlatformStatus,
    /// What attachments may be downloaded.
    pub downloads: DownloadLimits,
}

/// Telegram's command menu: each command and the catalogue text describing it.
const MENU: [(&str, &str); 4] = [
    ("help", "menu-help"),
    ("memory", "menu-memory"),
    ("link", "menu-link"),
    ("unlink", "menu-unlink"),
];

/// The most characters Telegram takes in a command's description.
const DESCRIPTION_CHARS: usize = 256;

/// The commands shown in Telegram's menu in `language` (English where its catalogue has no
/// text; a community's text longer than Telegram takes is cut).
pub fn commands(handler: &dyn MessageHandler, language: Option<Language>) -> Vec<BotCommand> {
    MENU.into_iter()
        .map(|(c, id)| {
            BotCommand::new(c, shortened(&handler.text(language, id), DESCRIPTION_CHARS))
        })
        .collect()
}

/// The menus registered at start: English for every client, and each language that has a
/// catalogue with menu texts for the clients set to it.
pub fn menus(handler: &dyn MessageHandler) -> Vec<(Option<Language>, Vec<BotCommand>)> {
    let mut languages: Vec<Language> = MENU
        .iter()
        .flat_map(|(_, id)| handler.text_in_each(id))
        .map(|(l, _)| l)
        .filter(|l| *l != Language::English)
        .collect();
    languages.sort_by_key(|l| l.code());
    languages.dedup();
    std::iter::once(None)
        .chain(languages.into_iter().map(Some))
        .map(|l| (l, commands(handler, l)))
        .collect()
}

/// Chats whose updates are being handled at the same time, at most.
const CONCURRENT_CHATS: usize = 32;

/// Updates one `getUpdates` returns at most (Telegram's own limit).
const BATCH: u8 = 100;

/// Updates received and not finished, at most: beyond it no more are fetched until some finish.
const MAX_UNFINISHED: usize = 1000;

/// When a whole batch of updates behind a slow one has been handled and nothing new can be
/// fetched (Telegram returns at most `BATCH` from the acknowledged offset on), the slow one is
/// acknowledged unfinished after this long, so other chats are not held up any longer.
const STALL: Duration = Duration::from_secs(30);

/// The longest flood-control wait honoured before one more try (Telegram's `retry_after`);
/// a longer one drops that message part with an error in the log instead of holding the chat.
pub const MAX_FLOOD_WAIT: Duration = Duration::from_secs(30);

/// Everything an update's handling needs, shared by the chats' workers.
struct Ctx {
    api: teloxide::Bot,
    token: String,
    handler: Arc<dyn MessageHandler>,
    me: Me,
    settings: TelegramSettings,
    admins: Admins,
    /// Chats handled at the same time.
    running: Semaphore,
    /// Updates received and not finished yet: Telegram is told of none from the first of them
    /// on, so after a crash it delivers them again.
    unfinished: std::sync::Mutex<BTreeSet<i32>>,
    /// Told whenever an update finishes.
    finished: Notify,
}

impl Ctx {
    fn unfinished(&self) -> std::sync::MutexGuard<'_, BTreeSet<i32>> {
        self.unfinished.lock().expect("unfinished lock")
    }

    fn finish(&self, id: i32) {
        self.unfinished().remove(&id);
        self.finished.notify_waiters();
    }
}

/// The updates of one chat waiting for its worker, and how many are not finished yet.
struct ChatQueue {
    tx: mpsc::UnboundedSender<Update>,
    pending: Arc<AtomicUsize>,
}

/// Runs until `shutdown` turns true. A bad token ends it with an error; an unreachable API is
/// retried with a growing pause, logged each time. Updates of different chats are handled at
/// the same time (one slow answer holds up only its own chat); the updates of one chat are
/// handled one after another, in order. An update is acknowledged (a later `getUpdates` starts
/// after it) once it and every update before it have finished, whether their handling worked,
/// failed or panicked: after a crash, Telegram delivers the unfinished ones again. On shutdown
/// the chats get `settings.shutdown_grace` to finish.
pub async fn run(
    handler: Arc<dyn MessageHandler>,
    token: &str,
    settings: TelegramSettings,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), TelegramError> {
    let url = reqwest::Url::parse(&settings.api_url)
        .map_err(|_| TelegramError::BadUrl(settings.api_url.clone()))?;
    let api = teloxide::Bot::new(token).set_api_url(url);
    let status = settings.status.clone();
    let Some(me) = connect(&api, handler.as_ref(), token, &status, &mut shutdown).await? else {
        return Ok(());
    };
    let ctx = Arc::new(Ctx {
        api: api.clone(),
        token: token.to_string(),
        handler,
        me,
        settings,
        admins: Admins::new(),
        running: Semaphore::new(CONCURRENT_CHATS),
        unfinished: std::sync::Mutex::new(BTreeSet::new()),
        finished: Notify::new(),
    });
    let mut backoff = Backoff::default();
    let mut chats = Chats::default();
    let mut offset: i32;
    loop {
        if !room_for_more(&ctx, &mut shutdown).await {
            break;
        }
        offset = ctx
            .unfinished()
            .first()
            .copied()
            .unwrap_or(chats.next_new)
            .max(chats.ack_floor);
        chats.handed.retain(|id| *id >= offset);
        let poll = api
            .get_updates()
            .offset(offset)
            .limit(BATCH)
            .timeout(ctx.settings.poll_secs)
            .allowed_updates(vec![AllowedUpdate::Message, AllowedUpdate::EditedMessage]);
        let updates = tokio::select! {
            _ = shutdown.changed() => break,
            updates = poll => updates,
        };
        let updates = match updates {
            Ok(updates) => {
                if backoff.failed() {
                    status.connected(Platform::Telegram);
                }
                backoff = Backoff::default();
                updates
            }
            Err(e) if refused(&e) => return Err(TelegramError::BadToken),
            Err(e) => {
                status.failed(
                    Platform::Telegram,
                    format!("getUpdates failed: {}", redact(&e, token)),
                );
                let wait = backoff.next();
                warn!(platform = "telegram", error = %redact(&e, token), retry_in_s = wait.as_secs(), "getUpdates failed");
                tokio::select! {
                    _ = shutdown.changed() => break,
                    _ = tokio::time::sleep(wait) => {}
                }
                continue;
            }
        };
        let full = updates.len() >= usize::from(BATCH);
        let fresh = chats.hand_out(&ctx, updates);
        chats.note_batch(fresh, full, ctx.unfinished().len());
        if fresh == 0 && !ctx.unfinished().is_empty() {
            // Only updates still being handled came back: wait for one of them to finish (or a
            // moment, for new ones) rather than ask again at once.
            let finished = ctx.finished.notified();
            tokio::select! {
                _ = shutdown.changed() => break,
                _ = finished => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }
    drain(ctx, chats).await;
    Ok(())
}

/// `run` in one process of several at a time, the one holding `lease` (Telegram answers a
/// second `getUpdates` consumer of a token with 409 Conflict): `lease::run_elected`.
pub async fn run_elected(
    handler: Arc<dyn MessageHandler>,
    token: &str,
    settings: TelegramSettings,
    lease: Arc<dyn Lease>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), TelegramError> {
    let status = settings.status.clone();
    crate::adapters::lease::run_elected(Platform::Telegram, status, lease, shutdown, |stopped| {
        run(handler.clone(), token, settings.clone(), stopped)
    })
    .await
}

/// Too much unfinished work: fetches nothing more until some of it is done. False when
/// `shutdown` came first.
async fn room_for_more(ctx: &Ctx, shutdown: &mut watch::Receiver<bool>) -> bool {
    while ctx.unfinished().len() >= MAX_UNFINISHED {
        let finished = ctx.finished.notified();
        tokio::select! {
            _ = shutdown.changed() => return false,
            _ = finished => {}
            // A finish between the count and the wait is not missed for long.
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
    true
}

/// Asks Telegram who the bot is until it answers (an unreachable API is retried with a
/// growing pause), then registers the bot's commands. None when `shutdown` came first.
async fn connect(
    api: &teloxide::Bot,
    handler: &dyn MessageHandler,
    token: &str,
    status: &PlatformStatus,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Option<Me>, TelegramError> {
    let mut backoff = Backoff::default();
    let me = loop {
        tokio::select! {
            _ = shutdown.changed() => return Ok(None),
            me = api.get_me() => match me {
                Ok(me) => break me,
                Err(e) if refused(&e) => return Err(TelegramError::BadToken),
                Err(e) => {
                    status.failed(
                        Platform::Telegram,
                        format!("Telegram unreachable: {}", redact(&e, token)),
                    );
                    let wait = backoff.next();
                    warn!(platform = "telegram", error = %redact(&e, token), retry_in_s = wait.as_secs(), "Telegram unreachable");
                    tokio::select! {
                        _ = shutdown.changed() => return Ok(None),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    };
    info!(platform = "telegram", username = %me.username(), "connected");
    status.connected(Platform::Telegram);
    if !me.can_read_all_group_messages {
        info!(
            platform = "telegram",
            "privacy mode is on: in groups only commands, mentions and replies to the bot arrive (turn it off in BotFather to collect all group chatter)"
        );
    }
    for (language, menu) in menus(handler) {
        let mut request = api.set_my_commands(menu);
        if let Some(l) = language {
            request = request.language_code(l.code());
        }
        if let Err(e) = request.await {
            warn!(platform = "telegram", language = language.map(Language::code), error = %redact(&e, token), "could not register the bot commands");
        }
    }
    Ok(Some(me))
}

/// The chats being served: one queue and worker each, and which updates were handed out.
#[derive(Default)]
struct Chats {
    queues: HashMap<ChatId, ChatQueue>,
    workers: JoinSet<()>,
    /// Updates handed to a chat (finished or not) from the acknowledged offset on: Telegram
    /// delivers the ones after an unfinished update again, and they are not handled twice.
    handed: BTreeSet<i32>,
    /// The id after the newest update seen.
    next_new: i32,
    /// Acknowledged however unfinished (see `STALL`).
    ack_floor: i32,
    /// Since when full batches of old updates have come back with nothing new.
    stalled_since: Option<std::time::Instant>,
}

impl Chats {
    /// After a batch of `fresh` new updates (`full`: as many as asked for), with `unfinished`
    /// updates still being handled: a slow update that has held up full batches for `STALL`
    /// is acknowledged unfinished, so the updates behind it keep coming.
    fn note_batch(&mut self, fresh: usize, full: bool, unfinished: usize) {
        if fresh > 0 || !full {
            self.stalled_since = None;
            return;
        }
        let since = *self
            .stalled_since
            .get_or_insert_with(std::time::Instant::now);
        if since.elapsed() >= STALL {
            warn!(
                platform = "telegram",
                unfinished,
                "a slow update holds up a full batch: acknowledged unfinished (not delivered again after a crash)"
            );
            self.ack_floor = self.next_new;
            self.stalled_since = None;
        }
    }

    /// Hands each update not handed out before to its chat's queue (starting a worker for a
    /// chat that has none), in order. Returns how many were new.
    fn hand_out(&mut self, ctx: &Arc<Ctx>, updates: Vec<Update>) -> usize {
        // A chat whose worker has finished everything lets it go (dropping the sender ends it).
        self.queues
            .retain(|_, q| q.pending.load(Ordering::Acquire) > 0);
        while self.workers.try_join_next().is_some() {}
        let mut fresh = 0;
        for update in updates {
            let id = update.id.0 as i32;
            self.next_new = self.next_new.max(id.saturating_add(1));
            if !self.handed.insert(id) {
                continue;
            }
            fresh += 1;
            let Some(chat) = update.chat().map(|c| c.id) else {
                continue;
            };
            ctx.unfinished().insert(id);
            let workers = &mut self.workers;
            let queue = self.queues.entry(chat).or_insert_with(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                let pending = Arc::new(AtomicUsize::new(0));
                workers.spawn(chat_worker(ctx.clone(), rx, pending.clone()));
                ChatQueue { tx, pending }
            });
            queue.pending.fetch_add(1, Ordering::AcqRel);
            if queue.tx.send(update).is_err() {
                // Cannot happen while the queue is in the map (its worker lives until the
                // sender is dropped); counted back so the chat is not kept forever.
                queue.pending.fetch_sub(1, Ordering::AcqRel);
                ctx.finish(id);
            }
        }
        fresh
    }
}

/// Shutting down: no new updates; the chats get the grace period to finish what they were
/// given, the rest is stopped. What finished is acknowledged; what did not comes again at the
/// next start.
async fn drain(ctx: Arc<Ctx>, chats: Chats) {
    let Chats {
        queues,
        mut workers,
        next_new,
        ack_floor,
        ..
    } = chats;
    drop(queues);
    let all = async { while workers.join_next().await.is_some() {} };
    if tokio::time::timeout(ctx.settings.shutdown_grace, all)
        .await
        .is_err()
    {
        let left = ctx.unfinished().len();
        warn!(
            platform = "telegram",
            left, "stopping with updates unfinished; Telegram will deliver them again"
        );
        workers.abort_all();
    }
    // Acknowledges what finished since the last poll (nothing is waited for).
    let offset = ctx
        .unfinished()
        .first()
        .copied()
        .unwrap_or(next_new)
        .max(ack_floor);
    if next_new > 0
        && let Err(e) = ctx
            .api
            .get_updates()
            .offset(offset)
            .timeout(0)
            .limit(1)
            .await
    {
        warn!(platform = "telegram", error = %redact(&e, &ctx.token), "could not acknowledge the last updates; they may come again");
    }
    info!(platform = "telegram", "stopped");
}

/// Handles one chat's updates in order, each in a task of its own (a panic skips that update).
async fn chat_worker(
    ctx: Arc<Ctx>,
    mut updates: mpsc::UnboundedReceiver<Update>,
    pending: Arc<AtomicUsize>,
) {
    while let Some(update) = updates.recv().await {
        let id = update.id.0;
        let permit = ctx.running.acquire().await;
        let work = {
            let ctx = ctx.clone();
            async move { ctx.update(update).await }
        };
        if isolated(Platform::Telegram, "update", work).await.is_none() {
            error!(platform = "telegram", update = id, "update skipped");
        }
        drop(permit);
        ctx.finish(id as i32);
        pending.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The error as text without the token (request URLs carry it: /bot<TOKEN>/method).
fn redact(e: &impl std::fmt::Display, token: &str) -> String {
    let text = e.to_string();
    if token.is_empty() {
        text
    } else {
        text.replace(token, "<TELEGRAM_TOKEN>")
    }
}

fn refused(e: &RequestError) -> bool {
    matches!(e, RequestError::Api(ApiError::InvalidToken))
}

/// Growing pause between attempts: 1 s, 2 s, 4 s … up to a minute.
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    fn next(&mut self) -> Duration {
        let secs = 1u64 << self.0.min(6);
        self.0 += 1;
        Duration::from_secs(secs.min(60))
    }

    /// Whether the last try failed.
    fn failed(&self) -> bool {
        self.0 > 0
    }
}

/// The administrators of each group (its moderators), asked of Telegram at most every few
/// minutes per group.
struct Admins(moka::sync::Cache<ChatId, Arc<HashSet<UserId>>>);

impl Admins {
    fn new() -> Admins {
        Admins(
            moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(600))
                .build(),
        )
    }

    /// Whether `user` administers `chat`; when Telegram cannot say, not.
    async fn contains(&self, api: &teloxide::Bot, token: &str, chat: ChatId, user: UserId) -> bool {
        if let Some(admins) = self.0.get(&chat) {
            return admins.contains(&user);
        }
        match api.get_chat_administrators(chat).await {
            Ok(members) => {
                let admins: Arc<HashSet<UserId>> =
                    Arc::new(members.into_iter().map(|m| m.user.id).collect());
                self.0.insert(chat, admins.clone());
                admins.contains(&user)
            }
            Err(e) => {
                warn!(platform = "telegram", error = %redact(&e, token), "getChatAdministrators failed; not treated as a moderator");
                false
            }
        }
    }
}

/// The files a message carries, as (kind, file, name, MIME type): the largest size of a photo,
/// a document, a voice note, an audio file.
fn files(
    m: &Message,
) -> Vec<(
    AttachmentKind,
    &teloxide::types::FileMeta,
    String,
    Option<String>,
)> {
    let mut out = Vec::new();
    if let Some(p) = m.photo().and_then(|sizes| sizes.last()) {
        out.push((
            AttachmentKind::Image,
            &p.file,
            "photo.jpg".to_string(),
            Some("image/jpeg".to_string()),
        ));
    }
    if let Some(d) = m.document() {
        let mime = d.mime_type.as_ref().map(ToString::to_string);
        let kind = if mime.as_deref().is_some_and(|t| t.starts_with("image/")) {
            AttachmentKind::Image
        } else {
            AttachmentKind::File
        };
        out.push((
            kind,
            &d.file,
            d.file_name.clone().unwrap_or_else(|| "file".into()),
            mime,
        ));
    }
    if let Some(v) = m.voice() {
        let mime = v.mime_type.as_ref().map(ToString::to_string);
        out.push((
            AttachmentKind::Voice,
            &v.file,
            "voice.ogg".to_string(),
            mime,
        ));
    }
    if let Some(a) = m.audio() {
        let mime = a.mime_type.as_ref().map(ToString::to_string);
        out.push((
            AttachmentKind::Audio,
            &a.file,
            a.file_name.clone().unwrap_or_else(|| "audio".into()),
            mime,
        ));
    }
    out
}

impl Ctx {
    /// The attachments of `m`, each downloaded through teloxide (getFile, then the file)
    /// within the limits, or with why it was not.
    async fn attachments(&self, m: &Message) -> Vec<IncomingAttachment> {
        let limits = &self.settings.downloads;
        let mut out = Vec::new();
        for (kind, file, name, mime) in files(m) {
            let content =
                if let Some(why) = limits.refusal(&name, mime.as_deref(), u64::from(file.size)) {
                    Err(why)
                } else {
                    tokio::time::timeout(limits.timeout, self.download(file, limits.max_bytes))
                        .await
                        .unwrap_or_else(|_| Err("download timed out".into()))
                };
            out.push(IncomingAttachment {
                kind,
                name,
                mime,
                content,
            });
        }
        out
    }

    /// One file's bytes, when there are at most `max` of them (as getFile says, and as
    /// they arrive: the download stops at the first byte beyond).
    async fn download(
        &self,
        file: &teloxide::types::FileMeta,
        max: u64,
    ) -> Result<Vec<u8>, String> {
        use teloxide::net::Download;
        let found = self.api.get_file(file.id.clone()).await.map_err(|e| {
            warn!(platform = "telegram", error = %redact(&e, &self.token), "getFile failed");
            "download failed".to_string()
        })?;
        if u64::from(found.meta.size) > max {
            return Err(format!("too large ({} bytes)", found.meta.size));
        }
        let mut capped = Capped {
            bytes: Vec::new(),
            max,
        };
        let done = self.api.download_file(&found.path, &mut capped).await;
        if capped.bytes.len() as u64 > max {
            return Err(format!("too large (over {max} bytes)"));
        }
        done.map_err(|e| {
            warn!(platform = "telegram", error = %redact(&e, &self.token), "file download failed");
            "download failed".to_string()
        })?;
        Ok(capped.bytes)
    }

    /// One update: a new message (stored, answered when addressed) or an edit.
    async fn update(&self, update: Update) {
        match update.kind {
            UpdateKind::Message(m) => self.message(&m).await,
            UpdateKind::EditedMessage(m) => {
                if let Some(mut edited) = incoming(&m, &self.me, &self.settings.bot_name) {
                    // An edit of a message the bot does not keep changes nothing: its files
                    // are not fetched.
                    if edit_of_kept(self.handler.as_ref(), &edited).await != Some(true) {
                        return;
                    }
                    edited.attachments = self.attachments(&m).await;
                    if let Err(e) = self.handler.edited(&edited).await {
                        error!(platform = "telegram", error = %e, "an edited message could not be updated");
                    }
                }
            }
            _ => {}
        }
    }

    /// One message: stored by the bot (always), answered when addressed, with "typing…" shown
    /// while the answer is being made.
    async fn message(&self, m: &Message) {
        let Some(mut incoming) = incoming(m, &self.me, &self.settings.bot_name) else {
            return;
        };
        incoming.attachments = self.attachments(m).await;
        // One who writes as a chat is no administrator here, whoever they are.
        if !m.chat.is_private()
            && m.sender_chat.is_none()
            && let Some(from) = &m.from
        {
            incoming.author_is_moderator = self
                .admins
                .contains(&self.api, &self.token, m.chat.id, from.id)
                .await;
        }
        // Telegram shows "typing…" for 5 seconds per action.
        let typing = async {
            let mut every = tokio::time::interval(Duration::from_secs(4));
            loop {
                every.tick().await;
                let mut action = self.api.send_chat_action(m.chat.id, ChatAction::Typing);
                if let Some(t) = topic(m) {
                    action = action.message_thread_id(t);
                }
                if action.await.is_err() {
                    break;
                }
            }
        };
        match self.handler.message(&incoming, Box::pin(typing)).await {
            Ok(Some(reply)) => self.send(m, &reply).await,
            Ok(None) => {}
            Err(e) => error!(platform = "telegram", error = %e, "message could not be stored"),
        }
    }

    /// Sends `reply` in parts, the first one as a reply to `to`; Telegram's flood limits
    /// (RetryAfter) are waited out, up to `MAX_FLOOD_WAIT` each time.
    async fn send(&self, to: &Message, reply: &Reply) {
        for (i, part) in split_message(&reply.text, MAX_MESSAGE, utf16)
            .into_iter()
            .enumerate()
        {
            for _attempt in 0..3 {
                let mut request = self.api.send_message(to.chat.id, part.clone());
                if let Some(t) = topic(to) {
                    request = request.message_thread_id(t);
                }
                if i == 0 {
                    request = request.reply_parameters(
                        ReplyParameters::new(to.id).allow_sending_without_reply(),
                    );
                }
                match request.await {
                    Ok(_) => break,
                    Err(RequestError::RetryAfter(wait)) if wait.duration() <= MAX_FLOOD_WAIT => {
                        warn!(
                            platform = "telegram",
                            wait_s = wait.seconds(),
                            "rate limited"
                        );
                        tokio::time::sleep(wait.duration()).await;
                    }
                    Err(e) => {
                        error!(platform = "telegram", error = %redact(&e, &self.token), chat = to.chat.id.0, "sendMessage failed");
                        return;
                    }
                }
            }
        }
    }
}

/// The forum topic of a message, if it was posted in one.
fn topic(m: &Message) -> Option<ThreadId> {
    m.thread_id.filter(|_| m.is_topic_message)
}

/// The message as the bot sees it, or None when it is not for the bot's memory (no text, a
/// channel post, the bot's own message).
pub fn incoming(m: &Message, me: &Me, bot_name: &str) -> Option<IncomingMessage> {
    let text = m.text().or(m.caption()).unwrap_or("");
    if text.is_empty() && files(m).is_empty() {
        return None;
    }
    let from = m.from.as_ref()?;
    if from.id == me.user.id || m.chat.is_channel() {
        return None;
    }
    let private = m.chat.is_private();
    let chat = m.chat.id.0.to_string();
    let (space_kind, channel, privacy, title) = if private {
        (
            SpaceKind::Private,
            chat.clone(),
            Privacy::Dm,
            format!("private chat with {}", from.full_name()),
        )
    } else {
        let channel = topic(m).map_or(MAIN_CHANNEL.to_string(), |t| t.0.0.to_string());
        let title = m.chat.title().unwrap_or("group").to_string();
        (SpaceKind::Group, channel, Privacy::GuildPublic, title)
    };
    // A message sent on behalf of a chat (a linked channel's post forwarded into its
    // discussion group, a channel a member writes as, an anonymous administrator) is that
    // chat's: its `from` is then a placeholder account that every such chat shares (777000,
    // GroupAnonymousBot), which would make all of them one person. Chat ids are negative,
    // so they never meet a user's.
    let (author_external_id, author_display_name, author_username) = match &m.sender_chat {
        Some(c) => (
            c.id.0.to_string(),
            c.title().or(c.username()).unwrap_or("a chat").to_string(),
            c.username().map(str::to_string),
        ),
        None => (
            from.id.0.to_string(),
            from.full_name(),
            from.username.clone(),
        ),
    };
    let replies_to_bot = m
        .reply_to_message()
        .and_then(|r| r.from.as_ref())
        .is_some_and(|u| u.id == me.user.id);
    // People mentioned: by a text mention (the account itself), or by "@username", which
    // the memory resolves among the accounts it has seen.
    let mentions = m
        .parse_entities()
        .or_else(|| m.parse_caption_entities())
        .unwrap_or_default()
        .iter()
        .filter_map(|e| match e.kind() {
            MessageEntityKind::TextMention { user } if user.id != me.user.id => Some(Mention {
                external_id: user.id.0.to_string(),
                display_name: user.full_name(),
                username: user.username.clone(),
                token: e.text().to_string(),
                is_self: false,
            }),
            MessageEntityKind::Mention => {
                let name = e.text().trim_start_matches('@');
                let is_self = name.eq_ignore_ascii_case(me.username());
                Some(Mention {
                    external_id: if is_self {
                        me.user.id.0.to_string()
                    } else {
                        String::new()
                    },
                    display_name: if is_self {
                        bot_name.to_string()
                    } else {
                        name.to_string()
                    },
                    username: Some(name.to_string()),
                    token: e.text().to_string(),
                    is_self,
                })
            }
            _ => None,
        })
        .collect();
    Some(IncomingMessage {
        platform: Platform::Telegram,
        space_external_id: chat.clone(),
        space_kind,
        space_title: title,
        channel_external_id: channel,
        channel_privacy: privacy,
        author_external_id,
        author_display_name,
        author_username,
        // The placeholders of anonymous administrators and of members writing as a channel
        // are bot accounts; the chat they stand for is not.
        author_is_bot: m.sender_chat.is_none() && from.is_bot,
        external_id: format!("{chat}:{}", m.id.0),
        text: text.to_string(),
        sent_at: m.date,
        reply_to_external_id: m.reply_to_message().map(|r| format!("{chat}:{}", r.id.0)),
        replies_to_bot,
        mentions,
        attachments: Vec::new(),
        author_is_moderator: false,
        private_answer: false,
        // Read from the text as ingest will keep it (no control characters in its words).
        command: command_of(&crate::ingest::sanitize(text), me.username()),
    })
}

/// A command for this bot ("/memory@engram_bot search x", or "/memory search x") as the
/// command it is: "/start" and "/help" are the help, "/link" and "/unlink" the `/memory`
/// subcommands, any other command of ours conversation. None for a command of another bot
/// or a message that is not a command (its text is read as any message's).
pub fn command_of(text: &str, username: &str) -> Option<Command> {
    let rest = text.trim().strip_prefix('/')?;
    let (first, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let (command, target) = first.split_once('@').unwrap_or((first, ""));
    if !(target.is_empty() || target.eq_ignore_ascii_case(username)) {
        return None;
    }
    let args = args.trim();
    Some(match command.to_lowercase().as_str() {
        "start" | "help" => Command::Help,
        "memory" => memory_request(args),
        c @ ("link" | "unlink") => memory_request(&format!("{c} {args}")),
        // Read as the same words typed to the bot would be.
        c => crate::router::parse_command(&format!("/{c} {args}")),
    })
}

/// A download's destination that takes at most `max` bytes: the write that would go beyond
/// fails (its bytes kept, so the caller sees why), which ends the download.
struct Capped {
    bytes: Vec<u8>,
    max: u64,
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.bytes.extend_from_slice(buf);
        std::task::Poll::Ready(if self.bytes.len() as u64 > self.max {
            Err(std::io::Error::other("over the size limit"))
        } else {
            Ok(buf.len())
        })
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_menu_text_is_in_the_english_catalogue() {
        let texts = crate::domain::texts::Texts::built_in();
        for (_, id) in MENU {
            assert!(texts.has("en", id), "{id}");
        }
    }

    #[test]
    fn commands_for_this_bot_are_commands() {
        use crate::domain::MemoryCommand;
        let c = |s: &str| command_of(s, "engram_bot");
        assert_eq!(
            c("/memory@engram_bot search rust"),
            Some(Command::Memory(MemoryCommand::Search("rust".into())))
        );
        assert_eq!(c("/memory"), Some(Command::Memory(MemoryCommand::View)));
        assert_eq!(
            c("/memory search rust"),
            Some(Command::Memory(MemoryCommand::Search("rust".into())))
        );
        assert_eq!(c("/memory confirm"), Some(Command::Confirm(true)));
        assert_eq!(c("/start"), Some(Command::Help));
        assert_eq!(c("/help@Engram_Bot"), Some(Command::Help));
        assert_eq!(
            c("/link 123456"),
            Some(Command::Memory(MemoryCommand::Link("123456".into())))
        );
        assert_eq!(
            c("/unlink@engram_bot"),
            Some(Command::Memory(MemoryCommand::Unlink(String::new())))
        );
        assert_eq!(c("/weather"), Some(Command::Chat));
        // Another bot's command, and words that are not a command.
        assert_eq!(c("/memory@other_bot"), None);
        assert_eq!(c("@ENGRAM_BOT remember that I love tea"), None);
        assert_eq!(c("hi all"), None);
    }

    #[test]
    fn the_bots_own_mention_reads_as_its_name() {
        let msg = |text: &str, tokens: &[&str]| IncomingMessage {
            mentions: tokens
                .iter()
                .map(|t| Mention {
                    external_id: "1".into(),
                    display_name: "Engram".into(),
                    username: Some("engram_bot".into()),
                    token: t.to_string(),
                    is_self: true,
                })
                .collect(),
            ..crate::adapters::console::console_message(
                &crate::adapters::console::ConsoleOptions::private("a"),
                "a",
                text,
                0,
                chrono::Utc::now(),
                false,
            )
        };
        let t =
            |text: &str, tokens: &[&str]| crate::ingest::message_text(&msg(text, tokens), "Engram");
        assert_eq!(
            t("@ENGRAM_BOT remember that I love tea", &["@ENGRAM_BOT"]),
            "@Engram remember that I love tea"
        );
        assert_eq!(t("mail @engram_bots now", &[]), "mail @engram_bots now");
        // Another word that starts like the token is left alone.
        assert_eq!(
            t("@engram_bot and @engram_bots", &["@engram_bot"]),
            "@Engram and @engram_bots"
        );
        assert_eq!(t("hi all", &[]), "hi all");
        // Characters whose lowercase changes length, before and inside the text.
        // (The Kelvin sign is "K" once composed, as every stored text is.)
        assert_eq!(
            t("\u{212A} @engram_bot hi", &["@engram_bot"]),
            "K @Engram hi"
        );
        assert_eq!(t("İİ @ENGRAM_BOT İ", &["@ENGRAM_BOT"]), "İİ @Engram İ");
    }
}
