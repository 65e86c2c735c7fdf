//! The Discord adapter (serenity), at the top of the flow: gateway message events become
//! `IncomingMessage`s for `Bot::handle`, and replies go back through serenity's HTTP client in
//! parts of at most 2,000 characters, the first one as a reply, with "typing…" shown while the
//! answer is made. Every message in the channels and threads the bot can read is stored; it
//! answers when mentioned, replied to, addressed by name first, or in a DM. Privacy comes from
//! what @everyone may effectively do: the guild's @everyone role and the channel's overwrites
//! together; a channel @everyone cannot view is `channel_restricted` (so is a private thread),
//! a public one `guild_public`, a thread follows its parent, a DM is `dm`. Channel, thread and
//! role updates take effect at once. Moderators are the members whose roles give Manage
//! Messages or Administrator in that guild. Edits and deletes reach the memory; replies never
//! ping anyone; `/memory` answers, which only the asker sees, are kept in their private scope.

use crate::adapters::split::{chars, shortened, split_message};
use crate::adapters::{MessageHandler, isolated};
use crate::bot::Reply;
use crate::domain::attachment::{AttachmentKind, DownloadLimits, IncomingAttachment};
use crate::domain::language::Language;
use crate::domain::status::PlatformStatus;
use crate::domain::{IncomingMessage, Mention, Platform, Privacy, SpaceKind, mention};
use crate::router::memory_request;
use crate::store::ChannelCursor;
use chrono::{DateTime, Utc};
use serenity::all::{
    Attachment, Channel, ChannelId, ChannelType, Command, CommandInteraction, CommandOptionType,
    ConnectionStage, Context, CreateAllowedMentions, CreateCommand, CreateCommandOption,
    CreateInteractionResponse, CreateInteractionResponseFollowup, CreateInteractionResponseMessage,
    CreateMessage, EventHandler, GatewayIntents, GuildChannel, GuildId, Http, HttpBuilder,
    Interaction, Message, MessageId, MessageUpdateEvent, PartialGuildChannel,
    PermissionOverwriteType, Permissions, Ready, Role, RoleId, ShardStageUpdateEvent, User, UserId,
};
use serenity::http::{HttpError, MessagePagination};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::watch;
use tracing::{error, info, warn};

/// Discord's longest message, in characters.
pub const MAX_MESSAGE: usize = 2000;

/// Read guild messages and DMs, with their content (a privileged intent: enable "Message
/// Content Intent" for the bot in the Developer Portal).
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
}

#[derive(Debug, thiserror::Error)]
/// Why the Discord adapter stopped.
pub enum DiscordError {
    /// The token was refused: retrying cannot help.
    #[error("Discord refused the bot token (check DISCORD_TOKEN)")]
    BadToken,
    #[error("Discord: {0}")]
    /// The gateway failed in a way retrying did not mend.
    Gateway(String),
}

#[derive(Debug, Clone)]
/// How to reach Discord.
pub struct DiscordSettings {
    /// Base URL of an HTTP proxy for the Discord API; empty for discord.com.
    pub api_url: String,
    /// The bot's name in its own conversation: "<@bot id>" becomes "@Name".
    pub bot_name: String,
    /// Where the connection's state is told (`/readyz`).
    pub status: PlatformStatus,
    /// The gateway shards of this process (None: one shard, all of the bot's guilds).
    pub shards: Option<crate::config::ShardRange>,
    /// What attachments may be downloaded.
    pub downloads: DownloadLimits,
    /// How far back a (re)connection catches up (`discord.catch_up_hours`; zero: not at all).
    pub catch_up: Duration,
}

/// The HTTP client: Discord's API, or everything sent to `api_url` (a proxy, or a fake).
pub fn http(token: &str, settings: &DiscordSettings) -> Http {
    let builder = HttpBuilder::new(token);
    if settings.api_url.is_empty() {
        builder.build()
    } else {
        builder
            .proxy(settings.api_url.trim_end_matches('/'))
            .ratelimiter_disabled(true)
            .build()
    }
}

/// Turns Discord messages into the bot's and sends its replies.
pub struct Handler {
    bot: Arc<dyn MessageHandler>,
    http: Arc<Http>,
    bot_name: String,
    me: OnceLock<UserId>,
    /// Channel privacy by channel id: permissions rarely change, a lookup costs a request.
    /// Channel, thread and role updates drop it.
    privacy: moka::sync::Cache<ChannelId, Privacy>,
    /// Each guild's roles (their permissions), for @everyone and for moderators.
    roles: moka::sync::Cache<GuildId, Arc<HashMap<RoleId, Role>>>,
    /// Members' roles looked up for messages read over HTTP (which do not carry them).
    members: moka::sync::Cache<(GuildId, UserId), Arc<Vec<RoleId>>>,
    downloads: DownloadLimits,
    catch_up: Duration,
    /// Messages being handled now: the gateway's and a catch-up's copy of one are handled
    /// once.
    in_flight: Mutex<HashSet<MessageId>>,
    /// Channels whose newest seen waits: being caught up, or seen while a catch-up was
    /// getting ready.
    deferred: Mutex<HashMap<ChannelId, Deferred>>,
    /// Catch-ups getting ready (READY seen, their channels not known yet): meanwhile the
    /// newest seen of every channel waits, so none moves past what they will read.
    preparing: AtomicUsize,
    /// Each shard's catch-up run: a newer READY makes the older run stop between two
    /// messages (never in the middle of one: an answer stored is also sent).
    generations: Mutex<HashMap<u32, u64>>,
    /// No catch-up goes on (shutdown).
    stopped: AtomicBool,
    /// Messages read again for their files by a catch-up of this process (each once).
    retried: Mutex<HashSet<MessageId>>,
}

/// A channel whose newest seen waits (`Handler::saw`).
#[derive(Debug, Clone, Copy)]
struct Deferred {
    guild: Option<GuildId>,
    /// The newest seen a catch-up reads from (None: no catch-up has it; it only waits for
    /// one to get ready).
    from: Option<i64>,
    /// The newest message handled there meanwhile.
    newest: Option<MessageId>,
}

/// A catch-up getting ready (`Handler::expect_catch_up`), ready when dropped at the latest
/// (then the channels that only waited keep their newest seen where it was: a catch-up reads
/// their messages again, each known by its id).
struct Preparing<'a>(Option<&'a Handler>);

impl Preparing<'_> {
    /// Ready: the channels that only waited for it and now get their newest seen.
    fn done(&mut self) -> Vec<(Option<GuildId>, ChannelId, MessageId)> {
        self.0.take().map_or_else(Vec::new, Handler::prepared)
    }
}

impl Drop for Preparing<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

/// A message claimed for handling (`Handler::claim`), let go when dropped.
struct Claim<'a> {
    set: &'a Mutex<HashSet<MessageId>>,
    id: MessageId,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.set.lock().expect("claims lock").remove(&self.id);
    }
}

impl Handler {
    /// The gateway event handler: events go to `bot`, replies out through `http`.
    pub fn new(
        bot: Arc<dyn MessageHandler>,
        http: Arc<Http>,
        bot_name: &str,
        downloads: DownloadLimits,
        catch_up: Duration,
    ) -> Handler {
        Handler {
            bot,
            http,
            bot_name: bot_name.to_string(),
            me: OnceLock::new(),
            privacy: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(300))
                .build(),
            roles: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(300))
                .build(),
            members: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(Duration::from_secs(300))
                .build(),
            downloads,
            catch_up,
            in_flight: Mutex::default(),
            deferred: Mutex::default(),
            preparing: AtomicUsize::new(0),
            generations: Mutex::default(),
            stopped: AtomicBool::new(false),
            retried: Mutex::default(),
        }
    }

    /// Claims `id` for handling; None while another task handles it.
    fn claim(&self, id: MessageId) -> Option<Claim<'_>> {
        let fresh = self.in_flight.lock().expect("claims lock").insert(id);
        fresh.then_some(Claim {
            set: &self.in_flight,
            id,
        })
    }

    /// A new gateway session: what changed while the bot was away (channel overwrites,
    /// roles) is looked up again, not taken from before.
    pub fn on_reconnect(&self) {
        self.privacy.invalidate_all();
        self.roles.invalidate_all();
        self.members.invalidate_all();
    }

    /// The roles of `user` in `guild`, looked up (cached): for a message read over HTTP.
    /// None when the lookup fails (then not a moderator: the safe side).
    async fn member_roles(&self, guild: GuildId, user: UserId) -> Option<Arc<Vec<RoleId>>> {
        if let Some(r) = self.members.get(&(guild, user)) {
            return Some(r);
        }
        match self.http.get_member(guild, user).await {
            Ok(m) => {
                let roles = Arc::new(m.roles);
                self.members.insert((guild, user), roles.clone());
                Some(roles)
            }
            Err(e) => {
                warn!(platform = "discord", error = %e, guild = guild.get(), "member lookup failed; not treated as a moderator");
                None
            }
        }
    }

    /// A channel or thread changed (its overwrites, its parent): privacy is worked out again.
    pub fn on_channel_update(&self) {
        self.privacy.invalidate_all();
    }

    /// A role of `guild` was created, changed or deleted: what @everyone and moderators may
    /// do is worked out again.
    pub fn on_role_update(&self, guild: GuildId) {
        self.roles.invalidate(&guild);
        self.privacy.invalidate_all();
    }

    /// The roles of `guild` (cached).
    async fn guild_roles(&self, guild: GuildId) -> serenity::Result<Arc<HashMap<RoleId, Role>>> {
        if let Some(r) = self.roles.get(&guild) {
            return Ok(r);
        }
        let roles = Arc::new(guild.roles(&self.http).await?);
        self.roles.insert(guild, roles.clone());
        Ok(roles)
    }

    /// Whether a member with `roles` in `guild` moderates it: Manage Messages or
    /// Administrator from @everyone or any of their roles. Unknown roles: not a moderator.
    async fn is_moderator(&self, guild: GuildId, member_roles: &[RoleId]) -> bool {
        match self.guild_roles(guild).await {
            Ok(roles) => moderates(&roles, guild, member_roles),
            Err(e) => {
                warn!(platform = "discord", error = %e, guild = guild.get(), "roles lookup failed; not treated as a moderator");
                false
            }
        }
    }

    /// The bot's own user id (from READY; tests set it).
    pub fn set_me(&self, me: UserId) {
        let _ = self.me.set(me);
    }

    /// One message event: stored, and answered when the bot is addressed.
    pub async fn on_message(&self, msg: &Message) {
        let roles = msg.member.as_ref().map(|m| m.roles.clone());
        self.handle_message(msg, roles.as_deref()).await;
    }

    /// `on_message`, the author having `roles` in the guild (None: unknown); false when the
    /// message could not be stored.
    async fn handle_message(&self, msg: &Message, roles: Option<&[RoleId]>) -> bool {
        let Some(me) = self.me.get().copied() else {
            warn!(platform = "discord", "message before READY; ignored");
            return true;
        };
        if msg.author.id == me {
            return true;
        }
        // The gateway's copy and a catch-up's may come at once: one handles it.
        let Some(_claim) = self.claim(msg.id) else {
            info!(
                platform = "discord",
                message = msg.id.get(),
                "already being handled"
            );
            return true;
        };
        let privacy = match msg.guild_id {
            None => Privacy::Dm,
            Some(_) => match self.channel_privacy(msg.channel_id).await {
                Ok(p) => p,
                Err(e) => {
                    // Unknown permissions: the safe side is the narrowest place.
                    warn!(platform = "discord", error = %e, channel = msg.channel_id.get(), "channel lookup failed; treated as restricted");
                    Privacy::ChannelRestricted
                }
            },
        };
        let mut incoming = incoming(msg, me, &self.bot_name, privacy);
        incoming.attachments = attachments(&msg.attachments, &self.downloads).await;
        if let (Some(guild), Some(roles)) = (msg.guild_id, roles) {
            incoming.author_is_moderator = self.is_moderator(guild, roles).await;
        }
        // The indicator lasts about 10 seconds per call.
        let typing = async {
            let mut every = tokio::time::interval(Duration::from_secs(8));
            loop {
                every.tick().await;
                if msg.channel_id.broadcast_typing(&self.http).await.is_err() {
                    break;
                }
            }
        };
        let reply = self.bot.message(&incoming, Box::pin(typing)).await;
        if reply.is_ok() {
            self.saw(msg).await;
        }
        match reply {
            Ok(Some(reply)) => self.send(msg, &reply).await,
            Ok(None) => {}
            Err(e) => {
                error!(platform = "discord", error = %e, "message could not be stored");
                return false;
            }
        }
        true
    }

    /// `msg` was handled: a catch-up after a restart starts after it. While its channel is
    /// being caught up, or a catch-up is getting ready, the newest seen waits (the one kept is
    /// marked as seen now, so it is not dropped as stale).
    async fn saw(&self, msg: &Message) {
        // Without catch-ups nothing reads it: no channel's activity is kept.
        if self.catch_up.is_zero() {
            return;
        }
        let (guild, channel) = (msg.guild_id, msg.channel_id);
        let waiting = {
            let mut deferred = self.deferred.lock().expect("catch-up lock");
            match deferred.get_mut(&channel) {
                Some(d) => {
                    d.newest = d.newest.max(Some(msg.id));
                    Some(d.from)
                }
                None if self.preparing.load(Ordering::SeqCst) > 0 => {
                    let newest = Some(msg.id);
                    let from = None;
                    deferred.insert(
                        channel,
                        Deferred {
                            guild,
                            from,
                            newest,
                        },
                    );
                    Some(None)
                }
                None => None,
            }
        };
        match waiting {
            None => self.seen(guild, channel, msg.id.get() as i64).await,
            Some(Some(from)) => self.seen(guild, channel, from).await,
            Some(None) => {}
        }
    }

    /// Keeps `id` as the newest message seen in `channel` (a newer one kept stays).
    async fn seen(&self, guild: Option<GuildId>, channel: ChannelId, id: i64) {
        let (space, channel) = (space_of(guild, channel), channel.get().to_string());
        if let Err(e) = self.bot.seen(Platform::Discord, &space, &channel, id).await {
            warn!(platform = "discord", error = %e, "the newest message seen could not be kept");
        }
    }

    /// A catch-up is coming (READY): until it knows its channels, every channel's newest
    /// seen waits. `catch_up` ends the wait.
    pub fn expect_catch_up(&self) {
        self.preparing.fetch_add(1, Ordering::SeqCst);
    }

    /// A catch-up knows its channels: once none is getting ready, the channels that only
    /// waited (guild, channel, newest handled there), to get their newest seen.
    fn prepared(&self) -> Vec<(Option<GuildId>, ChannelId, MessageId)> {
        let before = self
            .preparing
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(1))
            })
            .unwrap_or(0);
        if before > 1 {
            return Vec::new();
        }
        let mut deferred = self.deferred.lock().expect("catch-up lock");
        let mut waited = Vec::new();
        deferred.retain(|channel, d| {
            if d.from.is_some() {
                return true;
            }
            waited.extend(d.newest.map(|newest| (d.guild, *channel, newest)));
            false
        });
        waited
    }

    /// Starts `shard`'s catch-up (`catch_up`) of what was said before `now` (and a little
    /// after: a clock behind Discord's must not leave a gap; what both read is handled once).
    pub fn start_catch_up(self: &Arc<Self>, shard: Option<(u32, u32)>, now: DateTime<Utc>) {
        let (handler, until) = (self.clone(), snowflake_at(now + CATCH_UP_OVERLAP));
        tokio::spawn(isolated(Platform::Discord, "catch-up", async move {
            handler.catch_up(shard, until).await
        }));
    }

    /// Stops every catch-up between two messages (shutdown).
    pub fn stop_catching_up(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// A new run of `shard`'s catch-up: the older one stops.
    fn next_run(&self, shard: Option<(u32, u32)>) -> u64 {
        let mut runs = self.generations.lock().expect("catch-up lock");
        let run = runs.entry(shard.map_or(0, |s| s.0)).or_insert(0);
        *run += 1;
        *run
    }

    /// Whether `run` is still `shard`'s catch-up.
    fn goes_on(&self, shard: Option<(u32, u32)>, run: u64) -> bool {
        !self.stopped.load(Ordering::SeqCst)
            && self
                .generations
                .lock()
                .expect("catch-up lock")
                .get(&shard.map_or(0, |s| s.0))
                == Some(&run)
    }

    /// After (re)connecting `shard` (id, total; None: the only one), once `expect_catch_up`
    /// was called: what Discord does not deliver again, said before `until` (the gateway
    /// delivers what comes after). Each channel seen within `catch_up` is read after the
    /// newest message seen there, at most the newest `CATCH_UP_MAX`, oldest first; then the
    /// messages of that time whose images or recordings still have a bare line are read again
    /// by id, newest first (each once per process, at most `CATCH_UP_FILES`; one Discord no
    /// longer has is deleted from memory). Each goes the way of a new message: stored once
    /// (one already kept is known again), described, answered when it was addressed to the
    /// bot and is still unanswered. Only this shard's guilds (DMs are shard 0's), and never a
    /// message before the newest seen: one forgotten since does not come back. A channel not
    /// read to the end (an error, a message that could not be stored, a newer READY) keeps
    /// its newest seen where the reading stopped, and the next catch-up goes on from there.
    pub async fn catch_up(&self, shard: Option<(u32, u32)>, until: MessageId) {
        let mut preparing = Preparing(Some(self));
        let run = self.next_run(shard);
        if self.catch_up.is_zero() {
            return;
        }
        let todo = match self.bot.to_catch_up(Platform::Discord, self.catch_up).await {
            Ok(todo) => todo,
            Err(e) => {
                error!(platform = "discord", error = %e, "what to catch up could not be read");
                return;
            }
        };
        let mine: Vec<(Option<GuildId>, ChannelId, i64)> = todo
            .channels
            .iter()
            .filter_map(|c| place_of(c).map(|(g, ch)| (g, ch, c.external_id)))
            .filter(|(g, _, _)| serves(shard, *g))
            .collect();
        {
            let mut deferred = self.deferred.lock().expect("catch-up lock");
            for (guild, channel, after) in &mine {
                let d = deferred.entry(*channel).or_insert(Deferred {
                    guild: *guild,
                    from: None,
                    newest: None,
                });
                d.from = Some(*after);
            }
        }
        for (guild, channel, newest) in preparing.done() {
            self.seen(guild, channel, newest.get() as i64).await;
        }
        let mut read = HashSet::new();
        let mut vanished = HashSet::new();
        for (guild, channel, after) in &mine {
            if !self.goes_on(shard, run) {
                return;
            }
            let reading =
                self.read_channel(*guild, *channel, *after, until, todo.since, (shard, run));
            let (handled, whole) = match reading.await {
                Ok(done) => done,
                // Deleted while the bot was away: as a delete event would.
                Err(e) if unknown_channel(&e) && guild.is_some() => {
                    let guild = guild.expect("a guild's channel");
                    self.forget_channel(*channel, guild).await;
                    vanished.insert(guild);
                    self.deferred.lock().expect("catch-up lock").remove(channel);
                    continue;
                }
                Err(e) => {
                    warn!(platform = "discord", error = %e, channel = channel.get(), "a channel could not be caught up; the next connection tries again");
                    (Vec::new(), false)
                }
            };
            let last = handled.last().copied();
            read.extend(handled);
            let finished = {
                let mut deferred = self.deferred.lock().expect("catch-up lock");
                if whole {
                    deferred.remove(channel)
                } else {
                    // Goes on from where it stopped: later messages wait behind it.
                    if let (Some(d), Some(last)) = (deferred.get_mut(channel), last) {
                        d.from = Some(last.get() as i64);
                    }
                    None
                }
            };
            let newest = match finished {
                Some(d) => last.max(d.newest).map(|m| m.get() as i64),
                None => last.map(|m| m.get() as i64),
            };
            if let Some(newest) = newest {
                self.seen(*guild, *channel, newest).await;
            }
        }
        for guild in vanished {
            self.forget_vanished_channels(guild).await;
        }
        let mut files = 0;
        for c in &todo.undescribed {
            let Some((guild, channel)) = place_of(c).filter(|(g, _)| serves(shard, *g)) else {
                continue;
            };
            let id = MessageId::new(c.external_id.max(1) as u64);
            if read.contains(&id)
                || files >= CATCH_UP_FILES
                || !self.retried.lock().expect("catch-up lock").insert(id)
            {
                continue;
            }
            if !self.goes_on(shard, run) {
                return;
            }
            files += 1;
            match self.http.get_message(channel, id).await {
                Ok(msg) => {
                    self.on_fetched(msg, guild, channel).await;
                }
                // Deleted on Discord while the bot was away: as a delete event would.
                Err(serenity::Error::Http(HttpError::UnsuccessfulRequest(r)))
                    if r.error.code == UNKNOWN_MESSAGE =>
                {
                    self.on_message_delete(channel, &[id], guild).await;
                }
                Err(e) => {
                    warn!(platform = "discord", error = %e, channel = channel.get(), "a message to describe again could not be read")
                }
            }
        }
        info!(
            platform = "discord",
            channels = mine.len(),
            messages = read.len(),
            files,
            "caught up"
        );
    }

    /// Reads `channel` between the messages `after` and `until` (both left out), said since
    /// `since` (however long its newest seen was held back), at most the newest
    /// `CATCH_UP_MAX`, and handles each, oldest first, as a new message: the ids handled, up
    /// to the first that could not be stored, and whether it got to the end (not when one
    /// could not be stored or the shard's `run` was stopped).
    async fn read_channel(
        &self,
        guild: Option<GuildId>,
        channel: ChannelId,
        after: i64,
        until: MessageId,
        since: DateTime<Utc>,
        (shard, run): (Option<(u32, u32)>, u64),
    ) -> serenity::Result<(Vec<MessageId>, bool)> {
        let after = MessageId::new(after.max(1) as u64);
        let mut before = until;
        let mut found: Vec<Message> = Vec::new();
        loop {
            let page = self
                .http
                .get_messages(channel, Some(MessagePagination::Before(before)), Some(100))
                .await?;
            let Some(oldest) = page.iter().map(|m| m.id).min() else {
                break;
            };
            let full = page.len() >= 100;
            let old = page.iter().any(|m| *m.timestamp < since);
            found.extend(page.into_iter().filter(|m| {
                m.id > after && m.id < until && m.channel_id == channel && *m.timestamp >= since
            }));
            if oldest <= after || !full || oldest >= before || old {
                break;
            }
            if found.len() >= CATCH_UP_MAX {
                warn!(
                    platform = "discord",
                    channel = channel.get(),
                    kept = CATCH_UP_MAX,
                    "more may have been said while the bot was away than a catch-up reads: older messages are left out"
                );
                break;
            }
            before = oldest;
        }
        found.sort_by_key(|m| std::cmp::Reverse(m.id));
        found.dedup_by_key(|m| m.id);
        found.truncate(CATCH_UP_MAX);
        let mut handled = Vec::with_capacity(found.len());
        for msg in found.into_iter().rev() {
            let id = msg.id;
            if !self.goes_on(shard, run) || !self.on_fetched(msg, guild, channel).await {
                return Ok((handled, false));
            }
            handled.push(id);
        }
        Ok((handled, true))
    }

    /// A message read over HTTP, handled as if the gateway had sent it. Such a message does
    /// not say its guild: the place it was seen in does (and one from elsewhere is skipped).
    async fn on_fetched(
        &self,
        mut msg: Message,
        guild: Option<GuildId>,
        channel: ChannelId,
    ) -> bool {
        if msg.channel_id != channel {
            return true;
        }
        msg.guild_id = guild;
        // Nor the author's roles: a moderator's request made meanwhile is a moderator's.
        let mine = self.me.get() == Some(&msg.author.id);
        let roles = match guild {
            Some(g) if !msg.author.bot && !mine => self.member_roles(g, msg.author.id).await,
            _ => None,
        };
        self.handle_message(&msg, roles.as_deref().map(Vec::as_slice))
            .await
    }

    /// The `/memory` slash command: the same work as "/memory …" in a message, answered
    /// ephemerally (only the person who asked sees their memory), split like any reply.
    pub async fn on_memory_command(&self, cmd: &CommandInteraction) {
        let request = cmd
            .data
            .options
            .iter()
            .find(|o| o.name == "request")
            .and_then(|o| o.value.as_str())
            .unwrap_or("")
            .trim()
            .to_string();
        let privacy = match cmd.guild_id {
            None => Privacy::Dm,
            Some(_) => self
                .channel_privacy(cmd.channel_id)
                .await
                .unwrap_or(Privacy::ChannelRestricted),
        };
        // Kept as the person would have typed it; what it asks is the command itself.
        let mut incoming = message_in(
            cmd.guild_id,
            cmd.channel_id,
            privacy,
            &cmd.user,
            format!("interaction:{}", cmd.id.get()),
            format!("/memory {request}").trim().to_string(),
            *cmd.id.created_at(),
        );
        incoming.command = Some(memory_request(&crate::ingest::sanitize(&request)));
        // Only the asker sees the answer: it shows what may surface in this channel, and it is
        // kept in their private scope, never in the channel's history (where others' prompts
        // and searches would read it).
        incoming.private_answer = true;
        incoming.author_is_moderator = cmd
            .member
            .as_ref()
            .and_then(|m| m.permissions)
            .is_some_and(|p| p.administrator() || p.manage_messages());
        let text = match self
            .bot
            .message(&incoming, Box::pin(std::future::pending()))
            .await
        {
            Ok(Some(reply)) => reply.text,
            // What the adapter says itself is in the language of the asker's Discord client.
            Ok(None) => self
                .bot
                .text(Language::from_code(&cmd.locale), "slash-nothing"),
            Err(e) => {
                error!(platform = "discord", error = %e, "slash command could not be stored");
                self.bot
                    .text(Language::from_code(&cmd.locale), "not-stored")
            }
        };
        for (i, part) in split_message(&text, MAX_MESSAGE, chars)
            .into_iter()
            .enumerate()
        {
            let sent = if i == 0 {
                let message = CreateInteractionResponseMessage::new()
                    .content(part)
                    .ephemeral(true)
                    .allowed_mentions(CreateAllowedMentions::new());
                cmd.create_response(&self.http, CreateInteractionResponse::Message(message))
                    .await
            } else {
                let followup = CreateInteractionResponseFollowup::new()
                    .content(part)
                    .ephemeral(true)
                    .allowed_mentions(CreateAllowedMentions::new());
                cmd.create_followup(&self.http, followup).await.map(|_| ())
            };
            if let Err(e) = sent {
                error!(platform = "discord", error = %e, "answering a slash command failed");
                return;
            }
        }
    }

    async fn send(&self, to: &Message, reply: &Reply) {
        for (i, part) in split_message(&reply.text, MAX_MESSAGE, chars)
            .into_iter()
            .enumerate()
        {
            // Nothing the bot says pings anyone: not @everyone, roles, people it quotes, or the
            // person it answers.
            let mut message = CreateMessage::new()
                .content(part)
                .allowed_mentions(CreateAllowedMentions::new());
            if i == 0 {
                message = message.reference_message(to);
            }
            if let Err(e) = to.channel_id.send_message(&self.http, message).await {
                error!(platform = "discord", error = %e, channel = to.channel_id.get(), "sending a reply failed");
                return;
            }
        }
    }

    /// The privacy of a guild channel or thread, from its permissions (cached).
    async fn channel_privacy(&self, id: ChannelId) -> serenity::Result<Privacy> {
        if let Some(p) = self.privacy.get(&id) {
            return Ok(p);
        }
        let channel = guild_channel(&self.http, id).await?;
        let parent = match (&channel.kind, channel.parent_id) {
            (ChannelType::PublicThread | ChannelType::NewsThread, Some(parent)) => {
                Some(guild_channel(&self.http, parent).await?)
            }
            _ => None,
        };
        let roles = self.guild_roles(channel.guild_id).await?;
        let everyone = roles
            .get(&RoleId::new(channel.guild_id.get()))
            .map_or(Permissions::empty(), |r| r.permissions);
        let p = privacy_of(&channel, parent.as_ref(), everyone);
        self.privacy.insert(id, p);
        Ok(p)
    }

    /// Messages deleted in a channel (one, or a bulk delete): they leave the memory.
    pub async fn on_message_delete(
        &self,
        channel: ChannelId,
        ids: &[MessageId],
        guild: Option<GuildId>,
    ) {
        let space = space_of(guild, channel);
        let ids: Vec<String> = ids.iter().map(|id| id.get().to_string()).collect();
        if let Err(e) = self
            .bot
            .deleted(Platform::Discord, &space, &channel.get().to_string(), &ids)
            .await
        {
            error!(platform = "discord", error = %e, "a deleted message could not be forgotten");
        }
    }

    /// A channel or thread of `guild` was deleted, and its messages with it (Discord sends
    /// no delete for each): they leave memory as deleted messages do. A channel's threads go
    /// with it without an event of their own, so each other channel of the guild that memory
    /// holds messages of is asked for, and one Discord no longer knows goes the same way.
    pub async fn on_channel_delete(&self, channel: ChannelId, guild: GuildId) {
        self.forget_channel(channel, guild).await;
        self.forget_vanished_channels(guild).await;
        self.on_channel_update();
    }

    /// Each channel of `guild` that memory holds messages of is asked for, and one Discord
    /// no longer knows leaves memory (its threads, when a channel was deleted).
    async fn forget_vanished_channels(&self, guild: GuildId) {
        let space = guild_space(guild);
        let kept = match self.bot.channels_kept(Platform::Discord, &space).await {
            Ok(kept) => kept,
            Err(e) => {
                error!(platform = "discord", error = %e, "the channels of a guild where one was deleted could not be read");
                return;
            }
        };
        // Failed asks count against Discord's limit of invalid requests: a few in a row
        // (channels the bot may no longer see) end the look.
        let mut failed = 0;
        for channel in kept.iter().filter_map(|c| c.parse::<u64>().ok()) {
            let channel = ChannelId::new(channel.max(1));
            match self.http.get_channel(channel).await {
                Err(e) if unknown_channel(&e) => self.forget_channel(channel, guild).await,
                Err(e) => {
                    warn!(platform = "discord", error = %e, channel = channel.get(), "a channel of a guild where one was deleted could not be looked at");
                    failed += 1;
                    if failed >= PROBE_FAILURES {
                        return;
                    }
                }
                Ok(_) => failed = 0,
            }
        }
    }

    /// A thread of `guild` was deleted, and its messages with it (a thread has no threads:
    /// nothing else is looked at).
    pub async fn on_thread_delete(&self, thread: ChannelId, guild: GuildId) {
        self.forget_channel(thread, guild).await;
        self.on_channel_update();
    }

    /// `channel` of `guild` is gone from Discord: its messages leave memory.
    async fn forget_channel(&self, channel: ChannelId, guild: GuildId) {
        let space = space_of(Some(guild), channel);
        if let Err(e) = self
            .bot
            .channel_deleted(Platform::Discord, &space, &channel.get().to_string())
            .await
        {
            error!(platform = "discord", error = %e, "a deleted channel could not be forgotten");
        }
    }

    /// A message was edited: its new text replaces the old one everywhere in memory.
    pub async fn on_message_update(&self, event: &MessageUpdateEvent) {
        let (Some(content), Some(author)) = (&event.content, &event.author) else {
            return;
        };
        let Some(me) = self.me.get().copied() else {
            return;
        };
        if author.id == me {
            return;
        }
        let privacy = match event.guild_id {
            None => Privacy::Dm,
            Some(_) => self
                .channel_privacy(event.channel_id)
                .await
                .unwrap_or(Privacy::ChannelRestricted),
        };
        let mut edited = message_in(
            event.guild_id,
            event.channel_id,
            privacy,
            author,
            event.id.get().to_string(),
            content.to_string(),
            event.timestamp.map_or_else(chrono::Utc::now, |t| *t),
        );
        edited.author_is_bot = author.bot;
        edited.mentions = event
            .mentions
            .iter()
            .flatten()
            .filter(|u| u.id != me)
            .map(mention)
            .chain(own_mentions(content, me, &self.bot_name))
            .collect();
        // An edit of a message the bot does not keep changes nothing: its files are not
        // fetched. Unless the message is young: it may still be on its way in (its own files
        // downloading), and the edit then goes the whole way, as it comes.
        match super::edit_of_kept(self.bot.as_ref(), &edited).await {
            Some(true) => {}
            Some(false) => {
                let age = chrono::Utc::now().timestamp() - event.id.created_at().unix_timestamp();
                let arriving = self.downloads.timeout.as_secs() as i64 * 4 + 60;
                if age > arriving {
                    return;
                }
            }
            None => return,
        }
        // An edit comes with the message's files (a message's files stay with its new text).
        // A partial update without them: the message is fetched for its files; if that fails,
        // the edit is stored without them (its new text matters more: it may take something
        // back).
        let fetched;
        let list = match &event.attachments {
            Some(list) => Some(list),
            None => match self.http.get_message(event.channel_id, event.id).await {
                Ok(m) => {
                    fetched = m;
                    Some(&fetched.attachments)
                }
                // Deleted meanwhile: the delete is what counts.
                Err(serenity::Error::Http(h))
                    if h.status_code().map(|c| c.as_u16()) == Some(404) =>
                {
                    return;
                }
                Err(e) => {
                    warn!(platform = "discord", error = %e,
                        "an edit came without its message's files, and the message could not be fetched");
                    None
                }
            },
        };
        if let Some(list) = list {
            edited.attachments = attachments(list, &self.downloads).await;
        }
        if let Err(e) = self.bot.edited(&edited).await {
            error!(platform = "discord", error = %e, "an edited message could not be updated");
        }
    }
}

/// The space id of a channel: the guild, or the DM channel itself.
fn space_of(guild: Option<GuildId>, channel: ChannelId) -> String {
    guild.map_or_else(|| format!("dm:{}", channel.get()), guild_space)
}

/// The space id of a guild.
fn guild_space(guild: GuildId) -> String {
    guild.get().to_string()
}

/// Most messages a catch-up reads in one channel (the newest).
pub const CATCH_UP_MAX: usize = 1000;

/// Most messages a catch-up reads again for their files.
pub const CATCH_UP_FILES: usize = 100;

/// How far past the moment of the connection a catch-up reads (a clock behind Discord's).
const CATCH_UP_OVERLAP: chrono::TimeDelta = chrono::TimeDelta::seconds(30);

/// Discord's error code for a message it does not have.
const UNKNOWN_MESSAGE: isize = 10008;
/// Failed looks at a guild's channels in a row that end `forget_vanished_channels`.
const PROBE_FAILURES: usize = 3;
/// Discord's error code for a channel (or thread) that does not exist (any more).
const UNKNOWN_CHANNEL: isize = 10003;

/// Whether Discord answered that the channel asked about does not exist.
fn unknown_channel(e: &serenity::Error) -> bool {
    matches!(e, serenity::Error::Http(HttpError::UnsuccessfulRequest(r)) if r.error.code == UNKNOWN_CHANNEL)
}

/// The smallest message id Discord gives at `t` (ids begin with their time, in milliseconds
/// since 2015).
pub fn snowflake_at(t: DateTime<Utc>) -> MessageId {
    const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;
    let ms = (t.timestamp_millis() - DISCORD_EPOCH_MS).max(1) as u64;
    MessageId::new(ms << 22)
}

/// The guild (None: a DM) and channel a cursor names, as `space_of` wrote them; None for
/// anything else (never read as a DM by mistake).
fn place_of(c: &ChannelCursor) -> Option<(Option<GuildId>, ChannelId)> {
    let channel = ChannelId::new(c.channel.parse::<u64>().ok().filter(|id| *id > 0)?);
    let guild = match c.space_external_id.strip_prefix("dm:") {
        Some(dm) => (dm == c.channel).then_some(None)?,
        None => Some(GuildId::new(
            c.space_external_id
                .parse::<u64>()
                .ok()
                .filter(|id| *id > 0)?,
        )),
    };
    Some((guild, channel))
}

/// Whether `shard` (id, total; None: the only one) gets `guild`'s events: shard
/// `(guild_id >> 22) % total`; DMs come to shard 0.
fn serves(shard: Option<(u32, u32)>, guild: Option<GuildId>) -> bool {
    match (shard, guild) {
        (None, _) => true,
        (Some((id, _)), None) => id == 0,
        (Some((id, total)), Some(g)) => (g.get() >> 22) % u64::from(total.max(1)) == u64::from(id),
    }
}

/// Whether `member_roles` (with @everyone) give Manage Messages or Administrator.
pub fn moderates(roles: &HashMap<RoleId, Role>, guild: GuildId, member_roles: &[RoleId]) -> bool {
    let everyone = RoleId::new(guild.get());
    let perms = std::iter::once(&everyone)
        .chain(member_roles)
        .filter_map(|id| roles.get(id))
        .fold(Permissions::empty(), |p, r| p | r.permissions);
    perms.administrator() || perms.manage_messages()
}

async fn guild_channel(http: &Http, id: ChannelId) -> serenity::Result<GuildChannel> {
    match id.to_channel(http).await? {
        Channel::Guild(c) => Ok(c),
        _ => Err(serenity::Error::Other("not a guild channel")),
    }
}

/// `channel_restricted` unless @everyone may effectively view the channel (a private thread
/// always), a public thread as its parent, otherwise `guild_public`. `everyone` is what the
/// guild's @everyone role grants.
pub fn privacy_of(
    channel: &GuildChannel,
    parent: Option<&GuildChannel>,
    everyone: Permissions,
) -> Privacy {
    match channel.kind {
        ChannelType::PrivateThread => Privacy::ChannelRestricted,
        ChannelType::PublicThread | ChannelType::NewsThread => parent
            .map_or(Privacy::ChannelRestricted, |p| {
                privacy_of(p, None, everyone)
            }),
        _ if everyone_can_view(channel, everyone) => Privacy::GuildPublic,
        _ => Privacy::ChannelRestricted,
    }
}

/// Whether every member may view `channel`: @everyone may (the role's permissions, then the
/// channel's @everyone overwrite, deny then allow, as Discord computes them), and no other
/// role's or member's overwrite denies it (a muted or unverified role, one member kept out:
/// those members do not see it, so it is not public, whatever other roles allow them).
fn everyone_can_view(channel: &GuildChannel, everyone: Permissions) -> bool {
    if everyone.administrator() {
        return true;
    }
    let role = RoleId::new(channel.guild_id.get());
    let mut perms = everyone;
    for o in &channel.permission_overwrites {
        if o.kind == PermissionOverwriteType::Role(role) {
            perms.remove(o.deny);
            perms.insert(o.allow);
        } else if o.deny.view_channel() {
            return false;
        }
    }
    perms.view_channel()
}

/// The message as the bot sees it, in a channel of the given privacy.
pub fn incoming(msg: &Message, me: UserId, bot_name: &str, privacy: Privacy) -> IncomingMessage {
    let mut m = message_in(
        msg.guild_id,
        msg.channel_id,
        privacy,
        &msg.author,
        msg.id.get().to_string(),
        msg.content.clone(),
        *msg.timestamp,
    );
    m.author_is_bot = msg.author.bot;
    m.reply_to_external_id = msg
        .message_reference
        .as_ref()
        .and_then(|r| r.message_id)
        .map(|id| id.get().to_string());
    m.replies_to_bot = msg
        .referenced_message
        .as_ref()
        .is_some_and(|r| r.author.id == me);
    m.mentions = msg
        .mentions
        .iter()
        .filter(|u| u.id != me)
        .map(mention)
        .chain(own_mentions(&msg.content, me, bot_name))
        .collect();
    m
}

/// The bytes at an attachment's URL, when there are at most `max` of them (`None`: more; the
/// download stops as soon as that is known, whatever the size Discord declared). Not
/// serenity's `Attachment::download`: it takes any answer's body, so an expired link's error
/// page would be kept as the file.
async fn fetch(url: &str, max: u64) -> reqwest::Result<Option<Vec<u8>>> {
    static CLIENT: std::sync::LazyLock<reqwest::Client> =
        std::sync::LazyLock::new(reqwest::Client::new);
    let mut answer = CLIENT.get(url).send().await?.error_for_status()?;
    if answer.content_length().is_some_and(|n| n > max) {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await? {
        if (bytes.len() + chunk.len()) as u64 > max {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// The attachments of a message, each downloaded (from the URL Discord gives) within
/// `limits`, or with why it was not.
pub async fn attachments(list: &[Attachment], limits: &DownloadLimits) -> Vec<IncomingAttachment> {
    let mut out = Vec::with_capacity(list.len());
    for a in list {
        let mime = a.content_type.clone();
        let kind = match mime.as_deref().unwrap_or("") {
            m if m.starts_with("image/") => AttachmentKind::Image,
            m if m.starts_with("audio/") && a.duration_secs.is_some() => AttachmentKind::Voice,
            m if m.starts_with("audio/") => AttachmentKind::Audio,
            _ => AttachmentKind::File,
        };
        let content = if let Some(why) =
            limits.refusal(&a.filename, mime.as_deref(), u64::from(a.size))
        {
            Err(why)
        } else {
            match tokio::time::timeout(limits.timeout, fetch(&a.url, limits.max_bytes)).await {
                Ok(Ok(Some(bytes))) => Ok(bytes),
                Ok(Ok(None)) => Err(format!("too large (over {} bytes)", limits.max_bytes)),
                Ok(Err(e)) => {
                    // The status only: the URL is a signed link.
                    warn!(platform = "discord", status = ?e.status(), "attachment download failed");
                    Err("download failed".into())
                }
                Err(_) => Err("download timed out".into()),
            }
        };
        out.push(IncomingAttachment {
            kind,
            name: a.filename.clone(),
            mime,
            content,
        });
    }
    out
}

fn mention(u: &User) -> Mention {
    Mention {
        external_id: u.id.get().to_string(),
        display_name: u.display_name().to_string(),
        username: Some(u.name.clone()),
        token: mention::token(&u.id.get().to_string()),
        is_self: false,
    }
}

/// What `author` said in `channel` of `guild` (None: a DM), as the bot's message type.
fn message_in(
    guild: Option<GuildId>,
    channel: ChannelId,
    privacy: Privacy,
    author: &User,
    external_id: String,
    text: String,
    sent_at: chrono::DateTime<chrono::Utc>,
) -> IncomingMessage {
    let space = space_of(guild, channel);
    let channel = channel.get().to_string();
    IncomingMessage {
        platform: Platform::Discord,
        space_external_id: space,
        space_kind: if guild.is_none() {
            SpaceKind::Private
        } else {
            SpaceKind::Group
        },
        space_title: guild.map_or_else(|| "direct messages".to_string(), |g| format!("guild {g}")),
        channel_external_id: channel,
        channel_privacy: if guild.is_none() {
            Privacy::Dm
        } else {
            privacy
        },
        author_external_id: author.id.get().to_string(),
        author_display_name: author.display_name().to_string(),
        author_username: Some(author.name.clone()),
        author_is_bot: false,
        external_id,
        text,
        sent_at,
        reply_to_external_id: None,
        replies_to_bot: false,
        mentions: Vec::new(),
        attachments: Vec::new(),
        author_is_moderator: false,
        private_answer: false,
        command: None,
    }
}

/// The bot's own mentions ("<@123>", "<@!123>") as the text holds them; ingest writes them
/// as its name. Taken from the text, not the event's mention list: a reply pings the bot
/// without naming it, and an edit event may carry no list.
pub fn own_mentions(text: &str, me: UserId, bot_name: &str) -> Vec<Mention> {
    [mention::token(&me.to_string()), format!("<@!{me}>")]
        .into_iter()
        .filter(|token| text.contains(token.as_str()))
        .map(|token| Mention {
            external_id: me.get().to_string(),
            display_name: bot_name.to_string(),
            username: None,
            token,
            is_self: true,
        })
        .collect()
}

/// Discord's locales for a language (the languages its client comes in).
fn discord_locales(language: Language) -> Vec<&'static str> {
    match language.code() {
        "es" => vec!["es-ES", "es-419"],
        "pt" => vec!["pt-BR"],
        "sv" => vec!["sv-SE"],
        // English is the description itself; Discord has no Arabic or Tamil client.
        "en" | "ar" | "ta" => vec![],
        code => vec![code],
    }
}

/// The most characters Discord takes in a command's or an option's description.
const DESCRIPTION_CHARS: usize = 100;

/// Catalogue text `id`: English as the description, and each catalogue language's for the
/// Discord clients in it.
fn described(handler: &dyn MessageHandler, id: &str) -> (String, Vec<(&'static str, String)>) {
    let english = shortened(&handler.text(None, id), DESCRIPTION_CHARS);
    let localized = handler
        .text_in_each(id)
        .into_iter()
        .flat_map(|(l, text)| {
            let text = shortened(&text, DESCRIPTION_CHARS);
            discord_locales(l)
                .into_iter()
                .map(move |loc| (loc, text.clone()))
        })
        .collect();
    (english, localized)
}

/// The slash commands registered at start, described in each catalogue language.
pub fn slash_commands(handler: &dyn MessageHandler) -> Vec<CreateCommand> {
    let (about, about_in) = described(handler, "slash-memory");
    let (request, request_in) = described(handler, "slash-memory-request");
    let mut option =
        CreateCommandOption::new(CommandOptionType::String, "request", request).required(false);
    for (locale, text) in request_in {
        option = option.description_localized(locale, text);
    }
    let mut command = CreateCommand::new("memory").description(about);
    for (locale, text) in about_in {
        command = command.description_localized(locale, text);
    }
    vec![command.add_option(option)]
}

/// Registers the slash commands (`slash_commands`) as the bot's global commands.
pub async fn register_commands(
    http: &Http,
    handler: &dyn MessageHandler,
) -> Result<(), serenity::Error> {
    Command::set_global_commands(http, slash_commands(handler))
        .await
        .map(drop)
}

/// Relays serenity's events to the handler.
struct Events(Arc<Handler>, PlatformStatus);

#[serenity::async_trait]
impl EventHandler for Events {
    async fn ready(&self, ctx: Context, ready: Ready) {
        // First: until the catch-up knows its channels, no channel's newest seen moves; and
        // what changed while the bot was away (overwrites, roles) is looked up again.
        self.0.expect_catch_up();
        self.0.on_reconnect();
        let shard = ready.shard.map_or(0, |s| s.id.0);
        info!(platform = "discord", user = %ready.user.name, guilds = ready.guilds.len(), shard, "connected");
        self.1.shard_connected(Platform::Discord, shard);
        self.0.set_me(ready.user.id);
        if let Err(e) = register_commands(&ctx.http, self.0.bot.as_ref()).await {
            warn!(platform = "discord", error = %e, "could not register the slash commands");
        }
        // What was said while the bot was away (or cut off by a stop), in its own task.
        let shard = ready.shard.map(|s| (s.id.0, s.total));
        self.0.start_catch_up(shard, chrono::Utc::now());
    }

    async fn shard_stage_update(&self, _ctx: Context, event: ShardStageUpdateEvent) {
        // Back after a resume (no READY then), or away: `/readyz` says which shards are up.
        let shard = event.shard_id.0;
        if event.new == ConnectionStage::Connected {
            self.1.shard_connected(Platform::Discord, shard);
        } else {
            warn!(platform = "discord", shard, stage = %event.new, "shard disconnected; reconnecting");
            self.1.shard_disconnected(Platform::Discord, shard);
        }
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        if let Interaction::Command(cmd) = interaction
            && cmd.data.name == "memory"
        {
            self.0.on_memory_command(&cmd).await;
        }
    }

    async fn message(&self, _ctx: Context, msg: Message) {
        let handler = self.0.clone();
        isolated(Platform::Discord, "message", async move {
            handler.on_message(&msg).await
        })
        .await;
    }

    async fn message_update(
        &self,
        _ctx: Context,
        _old: Option<Message>,
        _new: Option<Message>,
        event: MessageUpdateEvent,
    ) {
        self.0.on_message_update(&event).await;
    }

    async fn message_delete(
        &self,
        _ctx: Context,
        channel: ChannelId,
        id: MessageId,
        guild: Option<GuildId>,
    ) {
        self.0.on_message_delete(channel, &[id], guild).await;
    }

    async fn message_delete_bulk(
        &self,
        _ctx: Context,
        channel: ChannelId,
        ids: Vec<MessageId>,
        guild: Option<GuildId>,
    ) {
        self.0.on_message_delete(channel, &ids, guild).await;
    }

    async fn channel_update(&self, _ctx: Context, _old: Option<GuildChannel>, _new: GuildChannel) {
        self.0.on_channel_update();
    }

    async fn channel_delete(
        &self,
        _ctx: Context,
        channel: GuildChannel,
        _messages: Option<Vec<Message>>,
    ) {
        self.0.on_channel_delete(channel.id, channel.guild_id).await;
    }

    async fn thread_delete(
        &self,
        _ctx: Context,
        thread: PartialGuildChannel,
        _full: Option<GuildChannel>,
    ) {
        self.0.on_thread_delete(thread.id, thread.guild_id).await;
    }

    async fn thread_update(&self, _ctx: Context, _old: Option<GuildChannel>, _new: GuildChannel) {
        self.0.on_channel_update();
    }

    async fn guild_role_create(&self, _ctx: Context, new: Role) {
        self.0.on_role_update(new.guild_id);
    }

    async fn guild_role_update(&self, _ctx: Context, _old: Option<Role>, new: Role) {
        self.0.on_role_update(new.guild_id);
    }

    async fn guild_role_delete(
        &self,
        _ctx: Context,
        guild: GuildId,
        _role: RoleId,
        _data: Option<Role>,
    ) {
        self.0.on_role_update(guild);
    }
}

/// `run` in one process of several whose shard ranges overlap, the one holding `lease` (its
/// shards' leases, `lease::AllOf`): `lease::run_elected`. Discord sends a shard's events to
/// every connection that runs it, so each would be handled twice.
pub async fn run_elected(
    bot: Arc<dyn MessageHandler>,
    token: &str,
    settings: DiscordSettings,
    lease: Arc<dyn crate::adapters::lease::Lease>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), DiscordError> {
    let status = settings.status.clone();
    crate::adapters::lease::run_elected(Platform::Discord, status, lease, shutdown, |stopped| {
        run(bot.clone(), token, settings.clone(), stopped)
    })
    .await
}

/// Connects to the gateway and runs until `shutdown` turns true. A refused token ends it with
/// an error; serenity reconnects by itself after network trouble.
pub async fn run(
    bot: Arc<dyn MessageHandler>,
    token: &str,
    settings: DiscordSettings,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), DiscordError> {
    // A wrong token shows here, before the gateway is tried.
    if let Err(e) = http(token, &settings).get_current_user().await {
        return Err(classify(&e));
    }
    let handler = Arc::new(Handler::new(
        bot,
        Arc::new(http(token, &settings)),
        &settings.bot_name,
        settings.downloads.clone(),
        settings.catch_up,
    ));
    let mut client = serenity::all::ClientBuilder::new_with_http(http(token, &settings), intents())
        .event_handler(Events(handler.clone(), settings.status.clone()))
        .await
        .map_err(|e| classify(&e))?;
    match settings.shards {
        Some(r) => settings
            .status
            .runs_shards(Platform::Discord, r.first..=r.last, r.total),
        None => settings.status.runs_shards(Platform::Discord, [0], 1),
    }
    let shards = client.shard_manager.clone();
    let result = tokio::select! {
        result = start(&mut client, settings.shards) => result.map_err(|e| classify(&e)),
        _ = shutdown.changed() => {
            handler.stop_catching_up();
            shards.shutdown_all().await;
            info!(platform = "discord", "stopped");
            Ok(())
        }
    };
    // However it ended, no catch-up answers for a platform that is gone.
    handler.stop_catching_up();
    result
}

/// Connects this process's shards: one for the whole bot, or its range of `total` (Discord
/// sends each guild's events to shard `(guild_id >> 22) % total`).
async fn start(
    client: &mut serenity::Client,
    shards: Option<crate::config::ShardRange>,
) -> serenity::Result<()> {
    match shards {
        None => client.start().await,
        Some(r) => {
            info!(
                platform = "discord",
                first = r.first,
                last = r.last,
                total = r.total,
                "starting shards"
            );
            // serenity's range end is the last shard itself.
            client.start_shard_range(r.first..r.last, r.total).await
        }
    }
}

fn classify(e: &serenity::Error) -> DiscordError {
    let text = e.to_string();
    if text.contains("401")
        || text.to_lowercase().contains("unauthorized")
        || text.contains("InvalidAuthentication")
    {
        DiscordError::BadToken
    } else {
        DiscordError::Gateway(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text channel of guild 1 with `overwrites`: (id, type: 0 role / 1 member, allow, deny).
    fn channel(overwrites: &[(u64, u8, u64, u64)]) -> GuildChannel {
        let overwrites: Vec<serde_json::Value> = overwrites
            .iter()
            .map(|(id, kind, allow, deny)| {
                serde_json::json!({"id": id.to_string(), "type": kind,
                                   "allow": allow.to_string(), "deny": deny.to_string()})
            })
            .collect();
        serde_json::from_value(serde_json::json!({"id": "10", "type": 0, "guild_id": "1",
            "name": "c", "position": 0, "permission_overwrites": overwrites, "nsfw": false}))
        .expect("a guild channel")
    }

    #[test]
    fn a_channel_some_members_may_not_view_is_restricted() {
        let view = Permissions::VIEW_CHANNEL.bits();
        let everyone = Permissions::VIEW_CHANNEL | Permissions::SEND_MESSAGES;
        // The control: nothing denies it.
        assert_eq!(
            privacy_of(&channel(&[]), None, everyone),
            Privacy::GuildPublic
        );
        // Another role allowed more: still public.
        assert_eq!(
            privacy_of(&channel(&[(7, 0, view, 0)]), None, everyone),
            Privacy::GuildPublic
        );
        for kept_out in [
            // @everyone denied.
            (1, 0, 0, view),
            // A "muted" role denied.
            (7, 0, 0, view),
            // One member denied.
            (42, 1, 0, view),
        ] {
            assert_eq!(
                privacy_of(&channel(&[kept_out]), None, everyone),
                Privacy::ChannelRestricted,
                "{kept_out:?}"
            );
        }
        // A role's deny of something else keeps it public.
        let send = Permissions::SEND_MESSAGES.bits();
        assert_eq!(
            privacy_of(&channel(&[(7, 0, 0, send)]), None, everyone),
            Privacy::GuildPublic
        );
    }
}
