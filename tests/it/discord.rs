//! Discord: message events built from real Discord JSON payloads (MESSAGE_CREATE) run the
//! adapter's handler, which looks up channel permissions and sends replies through serenity's
//! real HTTP client pointed at a fake Discord API on 127.0.0.1. Public channel, restricted
//! channel, threads and DMs get the right space, channel, author and privacy; replies are
//! split at 2,000 characters in the right channel. And with both platforms configured, a
//! Discord that refuses its token stops alone while Telegram keeps answering. Two `engram run`
//! processes split a four-shard bot on the fake gateway (serenity's real shard runners).

use crate::common::*;
use engram::adapters::discord::{self, DiscordSettings, Handler};
use engram::adapters::fake_discord::{self as discord_perm, BOT_ID, FakeDiscord};
use engram::adapters::fake_telegram::{Chat, FakeTelegram};
use engram::config::Secrets;
use engram::domain::{Platform, Privacy, Scope, SpaceKind};
use engram::llm::fake::Behavior;
use serde_json::{Value, json};
use serenity::all::{Message, UserId};
use std::sync::Arc;
use std::time::Duration;

const TOKEN: &str = "discord-test-token";
const WITHIN: Duration = Duration::from_secs(20);
const GUILD: u64 = 500;
const GENERAL: u64 = 10;
const MODS: u64 = 11;
const THREAD: u64 = 12;
const SECRET_THREAD: u64 = 13;
const DM: u64 = 20;
const APP_ID: u64 = 777;

fn user(id: u64, name: &str) -> Value {
    json!({"id": id.to_string(), "username": name.to_lowercase(), "discriminator": "0",
           "global_name": name, "avatar": null})
}

/// A MESSAGE_CREATE payload as Discord sends it; `guild` None is a DM.
fn payload(id: u64, channel: u64, guild: Option<u64>, author: (u64, &str), content: &str) -> Value {
    let mentions: Vec<Value> = if content.contains(&format!("<@{BOT_ID}>")) {
        vec![
            json!({"id": BOT_ID.to_string(), "username": "Engram", "discriminator": "0",
                    "global_name": null, "avatar": null, "bot": true}),
        ]
    } else {
        vec![]
    };
    let mut m = json!({
        "id": id.to_string(), "channel_id": channel.to_string(),
        "author": user(author.0, author.1), "content": content,
        "timestamp": format!("2026-11-20T09:{:02}:00.000000+00:00", id % 60),
        "edited_timestamp": null, "tts": false, "mention_everyone": false,
        "mentions": mentions, "mention_roles": [], "attachments": [], "embeds": [],
        "pinned": false, "type": 0, "flags": 0, "components": [], "nonce": id.to_string()
    });
    if let Some(g) = guild {
        m["guild_id"] = json!(g.to_string());
        m["member"] = json!({"roles": [], "joined_at": "2026-01-01T00:00:00.000000+00:00",
                             "deaf": false, "mute": false, "flags": 0});
    }
    m
}

fn message(v: Value) -> Message {
    serde_json::from_value(v).expect("a Discord message payload")
}

async fn setup(llm: bool) -> (Harness, FakeDiscord, Handler) {
    setup_on(None, llm).await
}

/// `setup` on `url`'s database (PostgreSQL) or a SQLite file of its own.
async fn setup_on(url: Option<String>, llm: bool) -> (Harness, FakeDiscord, Handler) {
    connect(harness_on(url, llm).await).await
}

/// A fake Discord with a guild of channels and threads, and the handler of `h`'s bot on it.
async fn connect(h: Harness) -> (Harness, FakeDiscord, Handler) {
    let fake = FakeDiscord::start(TOKEN).await.unwrap();
    fake.add_text_channel(GUILD, GENERAL, "general", false);
    fake.add_text_channel(GUILD, MODS, "mods", true);
    fake.add_thread(GUILD, THREAD, GENERAL, false);
    fake.add_thread(GUILD, SECRET_THREAD, GENERAL, true);
    let handler = handler_for(&h, &fake);
    (h, fake, handler)
}

/// A handler of `h`'s bot on `fake`, as a (re)started process makes it (`discord.catch_up_hours`
/// as configured).
fn handler_for(h: &Harness, fake: &FakeDiscord) -> Handler {
    let catch_up = Duration::from_secs_f64(h.config.discord.catch_up_hours * 3600.0);
    handler_with(h, fake, catch_up)
}

/// The adapter's settings for `h` on `fake`, and serenity's HTTP client with them.
fn client_of(
    h: &Harness,
    fake: &FakeDiscord,
    catch_up: Duration,
) -> (DiscordSettings, serenity::http::Http) {
    let settings = DiscordSettings {
        shards: None,
        api_url: fake.url(),
        bot_name: h.config.bot.name.clone(),
        status: Default::default(),
        downloads: h.config.attachments.limits(),
        catch_up,
    };
    let http = discord::http(TOKEN, &settings);
    http.set_application_id(serenity::all::ApplicationId::new(APP_ID));
    (settings, http)
}

/// `handler_for` catching up `catch_up` back.
fn handler_with(h: &Harness, fake: &FakeDiscord, catch_up: Duration) -> Handler {
    let (settings, http) = client_of(h, fake, catch_up);
    let handler = Handler::new(
        h.bot.clone(),
        Arc::new(http),
        &settings.bot_name,
        settings.downloads.clone(),
        settings.catch_up,
    );
    handler.set_me(UserId::new(BOT_ID));
    handler
}

const ALICE: (u64, &str) = (111, "Alice");
const BOB: (u64, &str) = (222, "Bob");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_threads_and_dms_get_their_place_and_privacy() {
    let (h, fake, handler) = setup(false).await;
    let at_bot = format!("<@{BOT_ID}>");
    let cases = [
        (GENERAL, Some(GUILD), "remember that I love Rust"),
        (MODS, Some(GUILD), "remember that the launch is on Friday"),
        (THREAD, Some(GUILD), "remember that I like threads"),
        (SECRET_THREAD, Some(GUILD), "remember that the raise is 5%"),
        (DM, None, "remember that my cat is Tom"),
    ];
    for (i, (channel, guild, text)) in cases.iter().enumerate() {
        let content = match guild {
            Some(_) => format!("{at_bot} {text}"),
            None => text.to_string(),
        };
        handler
            .on_message(&message(payload(
                2000 + i as u64,
                *channel,
                *guild,
                ALICE,
                &content,
            )))
            .await;
        fake.wait_sent(i + 1, WITHIN).await;
        let (to, body) = fake.sent().pop().unwrap();
        assert_eq!(to, *channel, "answered in the channel asked");
        assert!(
            body["content"].as_str().unwrap().starts_with("Got it"),
            "{body}"
        );
        assert_eq!(
            body["message_reference"]["message_id"],
            (2000 + i as u64).to_string()
        );
    }
    // Chatter is stored, not answered, and shows no typing indicator.
    let typing = fake.typing().len();
    handler
        .on_message(&message(payload(
            2100,
            GENERAL,
            Some(GUILD),
            BOB,
            "lunch anyone?",
        )))
        .await;
    assert_eq!(fake.sent().len(), 5);
    assert_eq!(fake.typing().len(), typing, "typing shown for chatter");

    let alice = h
        .store
        .resolve_person(Platform::Discord, "111", "Alice")
        .await
        .unwrap();
    let guild = h
        .store
        .resolve_space(Platform::Discord, &GUILD.to_string(), SpaceKind::Group, "")
        .await
        .unwrap();
    let scope_of = |channel: u64| {
        let h = &h;
        async move {
            let space = if channel == DM {
                h.store
                    .resolve_space(
                        Platform::Discord,
                        &format!("dm:{DM}"),
                        SpaceKind::Private,
                        "",
                    )
                    .await
                    .unwrap()
            } else {
                guild
            };
            let stored = h
                .store
                .recent_messages(space, &channel.to_string(), None, 10)
                .await
                .unwrap();
            let said = stored
                .iter()
                .find(|m| m.text.contains("remember that"))
                .expect("stored");
            assert_eq!(said.author, alice, "author in {channel}");
            if channel != DM {
                assert!(
                    said.text.starts_with("@Engram"),
                    "the bot mention as its name: {}",
                    said.text
                );
            }
            said.scope.clone()
        }
    };
    assert_eq!(scope_of(GENERAL).await, Scope::Space(guild));
    assert_eq!(
        scope_of(MODS).await,
        Scope::Channel(guild, MODS.to_string())
    );
    assert_eq!(
        scope_of(THREAD).await,
        Scope::Space(guild),
        "a public thread is as its parent"
    );
    assert_eq!(
        scope_of(SECRET_THREAD).await,
        Scope::Channel(guild, SECRET_THREAD.to_string())
    );
    assert_eq!(scope_of(DM).await, Scope::Dm(alice));
    let lunch = h
        .store
        .recent_messages(guild, &GENERAL.to_string(), None, 10)
        .await
        .unwrap();
    assert!(lunch.iter().any(|m| m.text == "lunch anyone?"));
    assert_eq!(
        discord::incoming(
            &message(payload(1, MODS, Some(GUILD), ALICE, "x")),
            UserId::new(BOT_ID),
            "Engram",
            Privacy::ChannelRestricted
        )
        .channel_privacy,
        Privacy::ChannelRestricted
    );

    // What was said in #mods or the DM never surfaces in #general.
    let ask = format!("{at_bot} what do you know about me");
    handler
        .on_message(&message(payload(2200, GENERAL, Some(GUILD), ALICE, &ask)))
        .await;
    fake.wait_sent(6, WITHIN).await;
    let (_, body) = fake.sent().pop().unwrap();
    let answer = body["content"].as_str().unwrap();
    assert!(answer.contains("Rust"), "{answer}");
    for secret in ["Friday", "5%", "Tom"] {
        assert!(
            !answer.contains(secret),
            "{secret} leaked into #general: {answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_replies_are_split_in_the_right_channel() {
    let (h, fake, handler) = setup(true).await;
    let handler = Arc::new(handler);
    let long = "sentence of words. ".repeat(280);
    h.fake().set_behavior(Behavior::Content(long));
    let content = format!("<@{BOT_ID}> tell me everything");
    // The model answers only once "typing…" is shown (a fast answer could come before it).
    h.fake().hold();
    let handling = tokio::spawn({
        let handler = handler.clone();
        let m = message(payload(3000, THREAD, Some(GUILD), ALICE, &content));
        async move { handler.on_message(&m).await }
    });
    fake.wait_typing(1, WITHIN).await;
    h.fake().release();
    handling.await.unwrap();
    fake.wait_sent(3, WITHIN).await;
    let sent = fake.sent();
    assert_eq!(sent.len(), 3, "5,320 characters in parts of 2,000");
    assert!(sent.iter().all(|(to, _)| *to == THREAD));
    let parts: Vec<&str> = sent
        .iter()
        .map(|(_, b)| b["content"].as_str().unwrap())
        .collect();
    assert!(parts.iter().all(|p| p.chars().count() <= 2000));
    assert_eq!(
        parts
            .iter()
            .map(|p| p.matches("sentence").count())
            .sum::<usize>(),
        280
    );
    assert!(sent[0].1.get("message_reference").is_some());
    assert!(sent[1].1.get("message_reference").is_none());
    assert!(
        fake.typing().contains(&THREAD),
        "typing shown while the LLM works"
    );
}

/// Both platforms configured: Discord refuses its token and stops; Telegram keeps answering;
/// shutdown ends what is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_platform_failing_leaves_the_other_running() {
    let discord_fake = FakeDiscord::start(TOKEN).await.unwrap();
    let telegram_fake = FakeTelegram::start("4242:tg").await.unwrap();
    let h = Harness::build(false, |c| {
        c.discord.api_url = discord_fake.url();
        c.telegram.api_url = telegram_fake.url();
        c.telegram.poll_secs = 5;
    })
    .await;
    let secrets = Secrets {
        discord_token: Some("wrong-token".into()),
        telegram_token: Some("4242:tg".into()),
        ..Secrets::default()
    };
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let (config, bot) = (h.config.clone(), h.bot.clone());
    let running = tokio::spawn(async move {
        engram::app::run_platforms(
            &config,
            &secrets,
            bot,
            Default::default(),
            None,
            None,
            shutdown,
        )
        .await
    });
    let dm = Chat::Private {
        id: 1001,
        name: "Alice".into(),
    };
    telegram_fake.push_text(&dm, (1001, "Alice"), "remember that I love Rust", false);
    telegram_fake.wait_sent(1, WITHIN).await;
    telegram_fake.push_text(&dm, (1001, "Alice"), "what do you know about me", false);
    telegram_fake.wait_sent(2, WITHIN).await;
    assert!(telegram_fake.sent_to(1001)[1].contains("Rust"));
    assert!(discord_fake.sent().is_empty());
    stop.send_replace(true);
    let exits = tokio::time::timeout(WITHIN, running)
        .await
        .expect("shutdown ends every platform")
        .unwrap();
    let of = |p: Platform| exits.iter().find(|e| e.platform == p).expect("an exit");
    assert!(
        of(Platform::Discord)
            .error
            .as_deref()
            .is_some_and(|e| e.contains("DISCORD_TOKEN")),
        "{exits:?}"
    );
    assert_eq!(of(Platform::Telegram).error, None, "{exits:?}");
}

/// An INTERACTION_CREATE payload for `/memory request:<request>`; `guild` None is a DM.
fn memory_command(
    id: u64,
    channel: u64,
    guild: Option<u64>,
    author: (u64, &str),
    request: &str,
) -> Value {
    let mut i = json!({
        "id": id.to_string(), "application_id": APP_ID.to_string(), "type": 2,
        "token": format!("interaction-token-{id}"), "version": 1, "locale": "en-US",
        "channel_id": channel.to_string(), "app_permissions": "0", "entitlements": [],
        "authorizing_integration_owners": {}, "attachment_size_limit": 8388608,
        "data": {"id": "5000", "name": "memory", "type": 1,
                 "options": [{"name": "request", "type": 3, "value": request}]}
    });
    match guild {
        Some(g) => {
            i["guild_id"] = json!(g.to_string());
            i["member"] = json!({"user": user(author.0, author.1), "roles": [],
                                 "joined_at": "2026-01-01T00:00:00.000000+00:00",
                                 "deaf": false, "mute": false, "flags": 0, "permissions": "0"});
        }
        None => i["user"] = user(author.0, author.1),
    }
    i
}

/// `/memory` as a slash command: only the asker sees the answer (what may surface in that
/// channel), and neither the request nor the answer enters the channel's history, search or
/// anyone's prompt.
async fn the_memory_slash_command_answers_ephemerally(url: Option<String>) {
    let (h, fake, handler) = setup_on(url, true).await;
    let at_bot = format!("<@{BOT_ID}>");
    handler
        .on_message(&message(payload(
            4000,
            GENERAL,
            Some(GUILD),
            ALICE,
            &format!("{at_bot} remember that I love Rust"),
        )))
        .await;
    handler
        .on_message(&message(payload(
            4001,
            DM,
            None,
            ALICE,
            "remember that my cat is Tom",
        )))
        .await;
    fake.wait_sent(2, WITHIN).await;

    let cmd: serenity::all::CommandInteraction = serde_json::from_value(memory_command(
        4100,
        GENERAL,
        Some(GUILD),
        ALICE,
        "search rust",
    ))
    .unwrap();
    handler.on_memory_command(&cmd).await;
    let cmd: serenity::all::CommandInteraction =
        serde_json::from_value(memory_command(4101, GENERAL, Some(GUILD), ALICE, "")).unwrap();
    handler.on_memory_command(&cmd).await;
    let answers = fake.interactions();
    assert_eq!(answers.len(), 2, "{answers:?}");
    for a in &answers {
        assert_eq!(a["type"], 4, "{a}");
        assert_eq!(a["data"]["flags"], 64, "ephemeral: {a}");
    }
    let found = answers[0]["data"]["content"].as_str().unwrap();
    assert!(found.contains("I love Rust"), "{found}");
    let view = answers[1]["data"]["content"].as_str().unwrap();
    assert!(
        view.contains("I love Rust") && !view.contains("Tom"),
        "a DM entry in a guild: {view}"
    );
    // In the DM, all of it.
    let cmd: serenity::all::CommandInteraction =
        serde_json::from_value(memory_command(4102, DM, None, ALICE, "")).unwrap();
    handler.on_memory_command(&cmd).await;
    let view = fake.interactions()[2]["data"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(view.contains("Tom") && view.contains("Rust"), "{view}");
    // The same interaction delivered again: nothing to do, said in the language of the
    // asker's Discord client (German here, English with "en-US" as a positive control).
    for (id, locale, said) in [
        (4103, "de", "Nichts zu tun."),
        (4104, "en-US", "Nothing to do."),
    ] {
        let mut payload = memory_command(id, DM, None, ALICE, "search rust");
        payload["locale"] = json!(locale);
        let cmd: serenity::all::CommandInteraction = serde_json::from_value(payload).unwrap();
        handler.on_memory_command(&cmd).await;
        handler.on_memory_command(&cmd).await;
        let answers = fake.interactions();
        let again = answers.last().unwrap()["data"]["content"].as_str().unwrap();
        assert_eq!(again, said, "{locale}");
    }
    assert_eq!(
        fake.sent().len(),
        2,
        "slash answers are not channel messages"
    );
    // Only alice saw those answers: they are kept in her private scope, never in the
    // channel's history, its search or anyone else's prompt.
    let guild = h
        .store
        .resolve_space(Platform::Discord, &GUILD.to_string(), SpaceKind::Group, "")
        .await
        .unwrap();
    let channel = h
        .store
        .recent_messages(guild, &GENERAL.to_string(), None, 50)
        .await
        .unwrap();
    assert!(
        channel
            .iter()
            .any(|m| m.text.contains("remember that I love Rust")),
        "positive control: the channel's own history"
    );
    for m in &channel {
        assert!(
            !m.text.contains("/memory") && !m.text.contains("User Preferences"),
            "a private answer in the channel: {}",
            m.text
        );
    }
    let alice = h
        .store
        .find_identity(Platform::Discord, "111")
        .await
        .unwrap()
        .unwrap();
    let private = h
        .store
        .author_messages(alice, Some(&[Scope::Dm(alice)]))
        .await
        .unwrap();
    assert!(
        private
            .iter()
            .any(|(_, t)| t.contains("/memory search rust")),
        "{private:?}"
    );
    // A slash command is stored as a command, not chatter (summaries of the day skip it).
    let flags = crate::common::command_flags(&h.config.store.url).await;
    assert!(
        flags.contains(&("/memory search rust".to_string(), true)),
        "{flags:?}"
    );
    let bob_in_general = engram::domain::Place {
        platform: Platform::Discord,
        space: guild,
        space_kind: SpaceKind::Group,
        channel: GENERAL.to_string(),
        privacy: Privacy::GuildPublic,
        dm_owner: None,
    };
    let bob = h
        .store
        .resolve_person(Platform::Discord, "222", "Bob")
        .await
        .unwrap();
    let found = search_texts(&h, &bob_in_general, bob, "User Preferences rust memory").await;
    assert!(
        found
            .iter()
            .all(|t| !t.contains("User Preferences") && !t.contains("/memory")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|t| t.contains("I love Rust")),
        "positive control: the channel's own words are found: {found:?}"
    );
    // Nor anyone's prompt in the channel.
    let from = h.fake().total();
    handler
        .on_message(&message(payload(
            4200,
            GENERAL,
            Some(GUILD),
            BOB,
            &format!("{at_bot} what's new here?"),
        )))
        .await;
    fake.wait_sent(3, WITHIN).await;
    let prompt = h.fake().requests()[from..]
        .iter()
        .rfind(|r| r.task == "reply")
        .expect("bob got an answer from the model")
        .text();
    assert!(
        prompt.contains("remember that I love Rust"),
        "positive control: {prompt}"
    );
    assert!(
        !prompt.contains("User Preferences") && !prompt.contains("/memory search"),
        "a private answer in bob's prompt: {prompt}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_are_names_for_the_model_and_ids_in_the_store() {
    let (h, fake, handler) = setup(true).await;
    handler
        .on_message(&message(payload(
            5000,
            GENERAL,
            Some(GUILD),
            BOB,
            "I shipped the fix",
        )))
        .await;
    let text = format!("<@{BOT_ID}> please thank <@{}> for the fix", BOB.0);
    handler
        .on_message(&message(payload(5001, GENERAL, Some(GUILD), ALICE, &text)))
        .await;
    fake.wait_sent(1, WITHIN).await;
    let prompt = h
        .fake()
        .requests()
        .into_iter()
        .rfind(|r| r.task == "reply")
        .unwrap()
        .text();
    // The last <conversation> (the system prompt names the tag too).
    let conversation = prompt
        .rsplit("<conversation>")
        .next()
        .expect("a conversation");
    assert!(
        conversation.contains("please thank @Bob for the fix"),
        "{prompt}"
    );
    // Nowhere in what the model sees, summaries included, is the id left.
    assert!(!prompt.contains(&format!("&lt;@{}", BOB.0)), "{prompt}");
    let summaries: Vec<String> = h
        .fake()
        .requests()
        .into_iter()
        .filter(|r| r.task == "day_summary")
        .map(|r| r.text())
        .collect();
    assert!(!summaries.is_empty());
    assert!(
        summaries
            .iter()
            .all(|t| !t.contains(&format!("&lt;@{}", BOB.0))),
        "{summaries:?}"
    );
    let guild = h
        .store
        .resolve_space(Platform::Discord, &GUILD.to_string(), SpaceKind::Group, "")
        .await
        .unwrap();
    let stored = h
        .store
        .recent_messages(guild, &GENERAL.to_string(), None, 10)
        .await
        .unwrap();
    assert!(
        stored
            .iter()
            .any(|m| m.text.contains(&format!("<@{}>", BOB.0))),
        "stored as ids: {stored:?}"
    );
}

/// `v` with these users mentioned (as Discord lists them beside the content).
fn mentioning(mut v: Value, users: &[(u64, &str)]) -> Value {
    let mut list = v["mentions"].as_array().cloned().unwrap_or_default();
    list.extend(users.iter().map(|(id, name)| user(*id, name)));
    v["mentions"] = json!(list);
    v
}

/// `v` from a member with these roles.
fn with_roles(mut v: Value, roles: &[u64]) -> Value {
    v["member"]["roles"] = json!(roles.iter().map(u64::to_string).collect::<Vec<_>>());
    v
}

/// The bot's last answer in the fake.
fn last_answer(fake: &FakeDiscord) -> String {
    fake.sent()
        .last()
        .map(|(_, b)| b["content"].as_str().unwrap_or("").to_string())
        .unwrap_or_default()
}

const CLOSED: u64 = 600;
const EVERYONE_CLOSED: u64 = 600;
const MEMBERS: u64 = 601;
const STAFF_ROLE: u64 = 602;
const MOD_ROLE: u64 = 603;
const LOBBY: u64 = 30;
const STAFF: u64 = 31;
const ADMIN_ROLE: u64 = 604;
const NEWS: u64 = 32;
const CAROL: (u64, &str) = (333, "Carol");
const DAVE: (u64, &str) = (444, "Dave");
const ERIN: (u64, &str) = (555, "Erin");

/// A server whose @everyone may not view channels; each channel opens to a role. Every such
/// channel is restricted: what is said in #staff never reaches #lobby. Role and channel
/// changes take effect at once. Members whose roles give Manage Messages are moderators.
async fn privacy_follows_effective_permissions(url: Option<String>) {
    let (h, fake, handler) = setup_on(url, false).await;
    fake.set_roles(
        CLOSED,
        &[
            (EVERYONE_CLOSED, discord_perm::SEND_MESSAGES),
            (MEMBERS, discord_perm::VIEW_CHANNEL),
            (STAFF_ROLE, discord_perm::VIEW_CHANNEL),
            (MOD_ROLE, discord_perm::MANAGE_MESSAGES),
            (ADMIN_ROLE, discord_perm::ADMINISTRATOR),
        ],
    );
    // A channel opened to @everyone by its own overwrite is public.
    fake.add_channel_with(
        CLOSED,
        NEWS,
        "news",
        &[(EVERYONE_CLOSED, discord_perm::VIEW_CHANNEL, 0)],
    );
    fake.add_channel_with(
        CLOSED,
        LOBBY,
        "lobby",
        &[(MEMBERS, discord_perm::VIEW_CHANNEL, 0)],
    );
    fake.add_channel_with(
        CLOSED,
        STAFF,
        "staff",
        &[(STAFF_ROLE, discord_perm::VIEW_CHANNEL, 0)],
    );
    let at_bot = format!("<@{BOT_ID}>");
    let say = |id: u64, channel: u64, who: (u64, &str), text: &str, about: &[(u64, &str)]| {
        message(with_roles(
            mentioning(payload(id, channel, Some(CLOSED), who, text), about),
            match who {
                CAROL => &[MEMBERS, STAFF_ROLE, MOD_ROLE],
                ERIN => &[MEMBERS, ADMIN_ROLE],
                _ => &[MEMBERS, STAFF_ROLE],
            },
        ))
    };
    handler
        .on_message(&say(
            7000,
            STAFF,
            ALICE,
            &format!("{at_bot} remember that the layoffs are Friday"),
            &[],
        ))
        .await;
    fake.wait_sent(1, WITHIN).await;
    let ask = format!("{at_bot} what do you know about <@{}>", ALICE.0);
    handler
        .on_message(&say(7001, LOBBY, BOB, &ask, &[ALICE]))
        .await;
    fake.wait_sent(2, WITHIN).await;
    let lobby = last_answer(&fake);
    assert!(
        !lobby.contains("layoffs"),
        "#staff leaked into #lobby: {lobby}"
    );
    // Positive control: in #staff it is known.
    handler
        .on_message(&say(7002, STAFF, BOB, &ask, &[ALICE]))
        .await;
    fake.wait_sent(3, WITHIN).await;
    assert!(
        last_answer(&fake).contains("layoffs"),
        "{}",
        last_answer(&fake)
    );
    let space = h
        .store
        .resolve_space(Platform::Discord, &CLOSED.to_string(), SpaceKind::Group, "")
        .await
        .unwrap();
    // The scope a message was stored in, found by its text.
    let scope = |channel: u64, text: &'static str| {
        let h = &h;
        async move {
            h.store
                .recent_messages(space, &channel.to_string(), None, 50)
                .await
                .unwrap()
                .into_iter()
                .find(|m| m.text == text)
                .map(|m| m.scope)
                .unwrap_or_else(|| panic!("{text:?} stored"))
        }
    };
    assert_eq!(
        scope(LOBBY, "@Engram what do you know about <@111>").await,
        Scope::Channel(space, LOBBY.to_string())
    );

    // Moderators come from the roles: Administrator (erin) and Manage Messages (carol) may,
    // dave may not.
    let forget = format!("{at_bot} forget everything about <@{}>", ALICE.0);
    handler
        .on_message(&say(7003, STAFF, DAVE, &forget, &[ALICE]))
        .await;
    fake.wait_sent(4, WITHIN).await;
    assert!(
        last_answer(&fake).contains("Only Alice"),
        "{}",
        last_answer(&fake)
    );
    handler
        .on_message(&say(7004, STAFF, ERIN, &forget, &[ALICE]))
        .await;
    fake.wait_sent(5, WITHIN).await;
    assert!(
        last_answer(&fake).starts_with("Done"),
        "{}",
        last_answer(&fake)
    );
    let budget = format!("{at_bot} remember that the budget is frozen");
    handler
        .on_message(&say(7010, STAFF, ALICE, &budget, &[]))
        .await;
    fake.wait_sent(6, WITHIN).await;
    handler
        .on_message(&say(7011, STAFF, CAROL, &forget, &[ALICE]))
        .await;
    fake.wait_sent(7, WITHIN).await;
    assert!(
        last_answer(&fake).starts_with("Done"),
        "{}",
        last_answer(&fake)
    );
    handler
        .on_message(&say(7012, NEWS, BOB, "news are for everyone", &[]))
        .await;
    assert_eq!(
        scope(NEWS, "news are for everyone").await,
        Scope::Space(space)
    );

    // @everyone is given View Channel: from the next message on, #lobby is public.
    fake.set_roles(
        CLOSED,
        &[
            (
                EVERYONE_CLOSED,
                discord_perm::SEND_MESSAGES | discord_perm::VIEW_CHANNEL,
            ),
            (MEMBERS, discord_perm::VIEW_CHANNEL),
        ],
    );
    handler.on_role_update(serenity::all::GuildId::new(CLOSED));
    handler
        .on_message(&say(7005, LOBBY, BOB, "the lobby is open now", &[]))
        .await;
    assert_eq!(
        scope(LOBBY, "the lobby is open now").await,
        Scope::Space(space)
    );
    handler
        .on_message(&say(7006, STAFF, BOB, "staff is open too", &[]))
        .await;
    assert_eq!(scope(STAFF, "staff is open too").await, Scope::Space(space));
    // #staff is closed again by an overwrite: restricted at once, without waiting.
    fake.add_channel_with(
        CLOSED,
        STAFF,
        "staff",
        &[
            (EVERYONE_CLOSED, 0, discord_perm::VIEW_CHANNEL),
            (STAFF_ROLE, discord_perm::VIEW_CHANNEL, 0),
        ],
    );
    handler.on_channel_update();
    handler
        .on_message(&say(7009, STAFF, BOB, "closed again", &[]))
        .await;
    assert_eq!(
        scope(STAFF, "closed again").await,
        Scope::Channel(space, STAFF.to_string())
    );
}

/// Deleting a message (alone or in bulk) removes it and what came of it; an edit replaces
/// the text everywhere.
async fn deletes_and_edits_reach_the_memory(url: Option<String>) {
    let (h, fake, handler) = setup_on(url, false).await;
    let at_bot = format!("<@{BOT_ID}>");
    handler
        .on_message(&message(payload(
            8000,
            GENERAL,
            Some(GUILD),
            ALICE,
            &format!("{at_bot} remember that my badge number is 4471"),
        )))
        .await;
    handler
        .on_message(&message(payload(
            8001,
            GENERAL,
            Some(GUILD),
            ALICE,
            "the standup moved to Tuesday",
        )))
        .await;
    handler
        .on_message(&message(payload(
            8002,
            GENERAL,
            Some(GUILD),
            ALICE,
            "bring the quarterly numbers",
        )))
        .await;
    fake.wait_sent(1, WITHIN).await;
    // The payloads are timed 09:mm (mm = id % 60): ask after them.
    h.clock.advance(chrono::Duration::hours(1));
    let ask = |id: u64| {
        message(mentioning(
            payload(
                id,
                GENERAL,
                Some(GUILD),
                BOB,
                &format!("{at_bot} what do you know about <@{}>", ALICE.0),
            ),
            &[ALICE],
        ))
    };
    handler.on_message(&ask(8003)).await;
    fake.wait_sent(2, WITHIN).await;
    let before = last_answer(&fake);
    assert!(
        before.contains("4471") && before.contains("Tuesday"),
        "{before}"
    );

    handler
        .on_message_delete(
            serenity::all::ChannelId::new(GENERAL),
            &[serenity::all::MessageId::new(8000)],
            Some(serenity::all::GuildId::new(GUILD)),
        )
        .await;
    // A partial update (no files in it): the message, as Discord has it, is fetched for them.
    let mut edited = payload(
        8001,
        GENERAL,
        Some(GUILD),
        ALICE,
        "the standup moved to Thursday",
    );
    edited["edited_timestamp"] = json!("2026-11-20T09:30:00.000000+00:00");
    fake.add_message(&edited);
    let edit: serenity::all::MessageUpdateEvent = serde_json::from_value(json!({
        "id": "8001", "channel_id": GENERAL.to_string(), "guild_id": GUILD.to_string(),
        "author": user(ALICE.0, ALICE.1), "content": "the standup moved to Thursday",
        "timestamp": "2026-11-20T09:01:00.000000+00:00", "edited_timestamp": "2026-11-20T09:30:00.000000+00:00"
    }))
    .unwrap();
    handler.on_message_update(&edit).await;
    handler
        .on_message_delete(
            serenity::all::ChannelId::new(GENERAL),
            &[
                serenity::all::MessageId::new(8002),
                serenity::all::MessageId::new(9999),
            ],
            Some(serenity::all::GuildId::new(GUILD)),
        )
        .await;
    handler.on_message(&ask(8004)).await;
    fake.wait_sent(3, WITHIN).await;
    let after = last_answer(&fake);
    assert!(
        !after.contains("4471") && !after.contains("Tuesday") && !after.contains("quarterly"),
        "{after}"
    );
    assert!(after.contains("Thursday"), "{after}");
    for gone in ["4471", "tuesday", "quarterly"] {
        let left = rows_holding(&h, gone).await;
        assert!(left.is_empty(), "{gone} still stored: {left:#?}");
    }
}

/// A deleted thread (or channel) takes its messages with it, though Discord sends no delete
/// for each: what was said there, the bot's answers and what was remembered from it leave
/// memory; a channel that was not deleted keeps its own.
async fn a_deleted_thread_takes_its_messages(url: Option<String>) {
    let (h, fake, handler) = setup_on(url, false).await;
    let at_bot = format!("<@{BOT_ID}>");
    for (id, channel, text) in [
        (
            8100,
            THREAD,
            format!("{at_bot} remember that my locker code is 4512"),
        ),
        (8101, THREAD, "the vendor invoice is overdue".to_string()),
        (8102, GENERAL, "the standup moved to Tuesday".to_string()),
    ] {
        handler
            .on_message(&message(payload(id, channel, Some(GUILD), ALICE, &text)))
            .await;
    }
    fake.wait_sent(1, WITHIN).await;
    for kept in ["4512", "invoice", "tuesday"] {
        assert!(
            !rows_holding(&h, kept).await.is_empty(),
            "the control: {kept}"
        );
    }
    handler
        .on_channel_delete(
            serenity::all::ChannelId::new(THREAD),
            serenity::all::GuildId::new(GUILD),
        )
        .await;
    for gone in ["4512", "invoice"] {
        let left = rows_holding(&h, gone).await;
        assert!(left.is_empty(), "{gone} still stored: {left:#?}");
    }
    assert!(
        !rows_holding(&h, "tuesday").await.is_empty(),
        "another channel's stays"
    );
}

/// A deleted channel takes its threads with it, and Discord sends an event for the channel
/// only: the threads' messages leave memory too (Discord says it no longer knows them),
/// while another channel, which Discord still has, keeps its own.
async fn a_deleted_channel_takes_its_threads(url: Option<String>) {
    let (h, fake, handler) = setup_on(url, false).await;
    for (id, channel, text) in [
        (8200, GENERAL, "the vendor invoice is overdue"),
        (8201, THREAD, "my locker code is 4512"),
        (8202, MODS, "the standup moved to Tuesday"),
    ] {
        handler
            .on_message(&message(payload(id, channel, Some(GUILD), ALICE, text)))
            .await;
    }
    for kept in ["invoice", "4512", "tuesday"] {
        assert!(
            !rows_holding(&h, kept).await.is_empty(),
            "the control: {kept}"
        );
    }
    fake.delete_channel(GENERAL);
    handler
        .on_channel_delete(
            serenity::all::ChannelId::new(GENERAL),
            serenity::all::GuildId::new(GUILD),
        )
        .await;
    for gone in ["invoice", "4512"] {
        let left = rows_holding(&h, gone).await;
        assert!(left.is_empty(), "{gone} still stored: {left:#?}");
    }
    assert!(
        !rows_holding(&h, "tuesday").await.is_empty(),
        "a channel Discord still has keeps its messages"
    );
}

/// A channel deleted while the bot was away sends no event the bot could see: the catch-up
/// after the restart finds it gone (Unknown Channel) and forgets it as the event would have,
/// with its threads, once (its newest seen goes too, so the next catch-up does not read it
/// again); another channel is caught up as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_deleted_while_away_is_forgotten_at_the_catch_up() {
    let (h, fake, handler) = setup(false).await;
    for (id, channel, text) in [
        (3100, GENERAL, "the vendor invoice is overdue"),
        (3101, THREAD, "my locker code is 4512"),
        (3102, MODS, "the standup moved to Tuesday"),
    ] {
        let p = payload(id, channel, Some(GUILD), ALICE, text);
        fake.add_message(&p);
        handler.on_message(&message(p)).await;
    }
    fake.add_message(&payload(
        3103,
        MODS,
        Some(GUILD),
        BOB,
        "the launch moved to Friday",
    ));
    fake.delete_channel(GENERAL);
    let restarted = handler_for(&h, &fake);
    let now = discord::snowflake_at(chrono::Utc::now());
    restarted.expect_catch_up();
    restarted.catch_up(None, now).await;
    for gone in ["invoice", "4512"] {
        let left = rows_holding(&h, gone).await;
        assert!(left.is_empty(), "{gone} still stored: {left:#?}");
    }
    let text = database_text(&h).await;
    assert!(text.contains("standup moved"), "kept: {text}");
    assert!(text.contains("launch moved to Friday"), "caught up: {text}");
    let reads = fake.history_reads();
    restarted.expect_catch_up();
    restarted.catch_up(None, now).await;
    assert_eq!(fake.history_reads() - reads, 1, "only #mods is read again");
}

/// Nothing the bot sends pings anyone: replies and slash answers carry empty allowed mentions,
/// whatever text they quote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_never_ping() {
    let (_h, fake, handler) = setup(false).await;
    let at_bot = format!("<@{BOT_ID}>");
    handler
        .on_message(&message(payload(
            9000,
            GENERAL,
            Some(GUILD),
            ALICE,
            &format!(
                "{at_bot} remember that I owe @everyone and <@&42> and <@{}> a lunch",
                BOB.0
            ),
        )))
        .await;
    handler
        .on_message(&message(payload(
            9001,
            GENERAL,
            Some(GUILD),
            ALICE,
            &format!("{at_bot} what do you know about me"),
        )))
        .await;
    fake.wait_sent(2, WITHIN).await;
    let cmd: serenity::all::CommandInteraction =
        serde_json::from_value(memory_command(9002, GENERAL, Some(GUILD), ALICE, "")).unwrap();
    handler.on_memory_command(&cmd).await;
    let (_, quoted) = fake.sent().pop().unwrap();
    assert!(
        quoted["content"].as_str().unwrap().contains("@everyone"),
        "{quoted}"
    );
    let bodies: Vec<Value> = fake
        .sent()
        .into_iter()
        .map(|(_, b)| b)
        .chain(fake.interactions().into_iter().map(|i| i["data"].clone()))
        .collect();
    assert_eq!(bodies.len(), 3);
    for b in bodies {
        let allowed = &b["allowed_mentions"];
        assert_eq!(allowed["parse"], json!([]), "{b}");
        assert!(
            allowed["users"].as_array().is_none_or(|u| u.is_empty()),
            "{b}"
        );
        assert!(
            allowed["roles"].as_array().is_none_or(|r| r.is_empty()),
            "{b}"
        );
        assert_ne!(allowed["replied_user"], json!(true), "{b}");
    }
}

/// `v` as a reply to message `to`, which Discord no longer has (deleted): the reference stays,
/// the referenced message is null.
fn replying_to_deleted(mut v: Value, to: u64, channel: u64) -> Value {
    v["type"] = json!(19);
    v["message_reference"] = json!({
        "message_id": to.to_string(), "channel_id": channel.to_string(),
        "guild_id": GUILD.to_string()
    });
    v["referenced_message"] = Value::Null;
    v
}

/// A reply to a message deleted meanwhile (from Discord and so from memory): it is answered
/// like any message to the bot, and the deleted message does not come back through it.
async fn a_reply_to_a_deleted_message_brings_nothing_back(url: Option<String>) {
    // With the (fake) model: its answer shows the earlier messages recalled into its prompt.
    let (h, fake, handler) = setup_on(url, true).await;
    let at_bot = format!("<@{BOT_ID}>");
    // In a thread, two days before the questions: recalled by search, not part of the
    // conversation the question is in.
    let mut said = payload(
        8100,
        THREAD,
        Some(GUILD),
        ALICE,
        "the offsite moves to Lisbon in March",
    );
    said["timestamp"] = json!("2026-11-18T09:00:00.000000+00:00");
    handler.on_message(&message(said)).await;
    h.clock.advance(chrono::Duration::hours(1));
    let question = format!("{at_bot} where is the offsite?");
    // The control: asked before the delete, the message is found.
    handler
        .on_message(&message(payload(
            8101,
            GENERAL,
            Some(GUILD),
            BOB,
            &question,
        )))
        .await;
    fake.wait_sent(1, WITHIN).await;
    let before = last_answer(&fake);
    assert!(before.contains("Lisbon"), "{before}");

    handler
        .on_message_delete(
            serenity::all::ChannelId::new(THREAD),
            &[serenity::all::MessageId::new(8100)],
            Some(serenity::all::GuildId::new(GUILD)),
        )
        .await;
    handler
        .on_message(&message(replying_to_deleted(
            payload(8102, THREAD, Some(GUILD), CAROL, &question),
            8100,
            THREAD,
        )))
        .await;
    fake.wait_sent(2, WITHIN).await;
    let after = last_answer(&fake);
    assert!(!after.contains("Lisbon"), "{after}");
    assert!(rows_holding(&h, "lisbon").await.is_empty());
    // The reply itself is kept, as Carol's.
    let reply = h
        .store
        .message_by_external(
            Platform::Discord,
            &GUILD.to_string(),
            &THREAD.to_string(),
            "8102",
        )
        .await
        .unwrap()
        .expect("carol's reply is stored");
    assert_eq!(reply.author_name, "Carol");
}

/// A delete handled before the message it deletes (its creation still on its way, or the
/// message delivered again after the delete, as a resuming gateway does): the message stays
/// out of memory, and only it.
async fn a_delete_that_comes_first_keeps_the_message_out(url: Option<String>) {
    let (h, _fake, handler) = setup_on(url, false).await;
    let stored = |id: &'static str| {
        let store = h.store.clone();
        async move {
            store
                .message_by_external(
                    Platform::Discord,
                    &GUILD.to_string(),
                    &GENERAL.to_string(),
                    id,
                )
                .await
                .unwrap()
                .is_some()
        }
    };
    async fn delete(handler: &Handler, id: u64) {
        handler
            .on_message_delete(
                serenity::all::ChannelId::new(GENERAL),
                &[serenity::all::MessageId::new(id)],
                Some(serenity::all::GuildId::new(GUILD)),
            )
            .await
    }
    let post = |id: u64, text: &str| message(payload(id, GENERAL, Some(GUILD), ALICE, text));
    delete(&handler, 8300).await;
    handler
        .on_message(&post(8300, "my locker code is 9931"))
        .await;
    handler
        .on_message(&post(8301, "the locker room opens at seven"))
        .await;
    assert!(!stored("8300").await);
    assert!(rows_holding(&h, "9931").await.is_empty());
    assert!(stored("8301").await, "the positive control");
    // Kept, deleted, then delivered again: it stays deleted.
    delete(&handler, 8301).await;
    assert!(!stored("8301").await);
    handler
        .on_message(&post(8301, "the locker room opens at seven"))
        .await;
    assert!(!stored("8301").await);
    assert!(rows_holding(&h, "locker room").await.is_empty());
}

on_both_harnesses!(
    a_delete_that_comes_first_keeps_the_message_out,
    a_reply_to_a_deleted_message_brings_nothing_back,
    privacy_follows_effective_permissions,
    deletes_and_edits_reach_the_memory,
    a_deleted_thread_takes_its_messages,
    a_deleted_channel_takes_its_threads,
    the_memory_slash_command_answers_ephemerally,
    what_was_said_while_away_is_caught_up_once_in_its_place,
    an_image_cut_off_before_its_description_is_described_after_the_restart,
);

/// An update of a message with a file keeps the file: one that changes nothing (Discord sends
/// the whole message again when it is pinned), even when the file cannot be fetched this time,
/// leaves everything as it was; an edit of its text
/// keeps the file's line and pieces with the new text (the file fetched again), and the old
/// text is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_keeps_the_files_of_its_message() {
    let (h, fake, handler) = setup(false).await;
    let notes = b"# Standup\nShip the billing fix on Thursday\n";
    let url = fake.add_file("standup.md", notes);
    let mut p = payload(7101, GENERAL, Some(GUILD), ALICE, "notes from the standup");
    p["attachments"] = json!([{"id": "9101", "filename": "standup.md", "size": notes.len(),
        "url": url, "proxy_url": url, "content_type": "text/markdown"}]);
    handler.on_message(&message(p.clone())).await;
    let messages = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("messages: "))
            .map(str::to_string)
            .collect()
    };
    let first = database_text(&h).await;
    assert!(
        first.contains("notes from the standup\n[file#1 standup.md] # Standup")
            && first.contains("[file#1 standup.md, part 1/1] # Standup"),
        "positive control: {first}"
    );
    let update = |v: Value| -> serenity::all::MessageUpdateEvent {
        serde_json::from_value(v).expect("a MESSAGE_UPDATE payload")
    };
    let mut pinned = p.clone();
    pinned["pinned"] = json!(true);
    handler.on_message_update(&update(pinned)).await;
    assert_eq!(messages(&database_text(&h).await), messages(&first));
    // Pinned again while the file cannot be fetched: what was kept stays.
    let mut unreachable = p.clone();
    unreachable["attachments"][0]["url"] = json!(format!("{}/gone/standup.md", fake.url()));
    unreachable["attachments"][0]["proxy_url"] = unreachable["attachments"][0]["url"].clone();
    handler.on_message_update(&update(unreachable)).await;
    assert_eq!(messages(&database_text(&h).await), messages(&first));
    let downloads = fake.downloads();

    let mut edited = p.clone();
    edited["content"] = json!("notes from the Tuesday standup");
    edited["edited_timestamp"] = json!("2026-11-20T09:45:00.000000+00:00");
    handler.on_message_update(&update(edited)).await;
    assert!(
        fake.downloads() > downloads,
        "the edit's file is fetched again"
    );
    let after = database_text(&h).await;
    assert!(
        after.contains("notes from the Tuesday standup\n[file#")
            && after.contains(" standup.md] # Standup Ship the billing fix"),
        "{after}"
    );
    assert_eq!(
        after.matches("standup.md, part 1/1] # Standup").count(),
        1,
        "one piece, the old one gone: {after}"
    );
    assert!(!after.contains("notes from the standup"), "{after}");

    // A partial update (no files in it): the message is fetched for its files, which stay.
    let mut partial = p.clone();
    partial["content"] = json!("notes from the Wednesday standup");
    partial["edited_timestamp"] = json!("2026-11-20T09:50:00.000000+00:00");
    fake.add_message(&partial);
    partial.as_object_mut().unwrap().remove("attachments");
    handler.on_message_update(&update(partial)).await;
    assert_eq!(fake.message_gets(), 1);
    let after = database_text(&h).await;
    assert!(
        after.contains("notes from the Wednesday standup\n[file#")
            && after.contains(" standup.md] # Standup Ship the billing fix"),
        "{after}"
    );
    assert!(!after.contains("Tuesday"), "{after}");

    // An edit of a message the bot never kept: nothing is fetched, nothing stored.
    let (downloads, gets) = (fake.downloads(), fake.message_gets());
    let mut stranger = p.clone();
    stranger["id"] = json!("7199");
    stranger["content"] = json!("never seen before");
    handler.on_message_update(&update(stranger.clone())).await;
    stranger.as_object_mut().unwrap().remove("attachments");
    handler.on_message_update(&update(stranger)).await;
    assert_eq!((fake.downloads(), fake.message_gets()), (downloads, gets));
    assert!(!database_text(&h).await.contains("never seen before"));

    // A partial update of a message Discord no longer has (404 when fetched): deleted
    // meanwhile, so the edit is not stored.
    let mut other = payload(7102, GENERAL, Some(GUILD), ALICE, "a second note");
    handler.on_message(&message(other.clone())).await;
    other["content"] = json!("a second note, edited");
    other["edited_timestamp"] = json!("2026-11-20T09:55:00.000000+00:00");
    other.as_object_mut().unwrap().remove("attachments");
    handler.on_message_update(&update(other)).await;
    assert_eq!(fake.message_gets(), gets + 1);
    let after = database_text(&h).await;
    assert!(after.contains("a second note"), "positive control: {after}");
    assert!(!after.contains("a second note, edited"), "{after}");
}

/// A file larger than Discord said is stopped at `attachments.max_bytes` as it downloads (its
/// length, or its bytes as they come), never read whole into memory; the message is kept with
/// why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_larger_than_declared_stops_at_the_limit() {
    let h = Harness::build(false, |c| c.attachments.max_bytes = 1000).await;
    let (h, fake, handler) = connect(h).await;
    let url = fake.add_file("notes.txt", &vec![b'a'; 200_000]);
    let mut p = payload(7003, GENERAL, Some(GUILD), ALICE, "my notes");
    p["attachments"] = json!([{"id": "9010", "filename": "notes.txt", "size": 10, "url": url,
                               "proxy_url": url, "content_type": "text/plain"}]);
    handler.on_message(&message(p)).await;
    let text = database_text(&h).await;
    assert!(
        text.contains("my notes\n[file notes.txt] not read: too large (over 1000 bytes)"),
        "{text}"
    );
}

/// Attachments download (reqwest, a 404 is a failed download) from the URL Discord gives (the fake server stands
/// in for its CDN): a Markdown file's text is kept (a line in the message, a piece of its own,
/// in the channel's scope), an image by name, and a file Discord says is too large is never
/// fetched; the message is stored whatever becomes of its files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_download_from_the_links_discord_gives() {
    let (h, fake, handler) = setup(false).await;
    let notes = b"# Standup\nShip the billing fix on Thursday\n";
    let url = fake.add_file("standup.md", notes);
    let shot = fake.add_file("shot.png", b"\x89PNG\r\n\x1a\n");
    let huge = fake.add_file("huge.log", b"x");
    let clip = fake.add_file("demo.mp4", b"\0\0\0\x20ftypisom");
    let backup = fake.add_file("backup.zip", b"PK\x03\x04");
    let file = |id: &str, name: &str, size: usize, url: &str, mime: &str| {
        json!({"id": id, "filename": name, "size": size, "url": url, "proxy_url": url,
               "content_type": mime})
    };
    let mut p = payload(7001, GENERAL, Some(GUILD), ALICE, "notes from today");
    p["attachments"] = json!([
        file(
            "9001",
            "standup.md",
            notes.len(),
            &url,
            "text/markdown; charset=utf-8"
        ),
        file("9002", "shot.png", 8, &shot, "image/png"),
        file("9003", "huge.log", 999_999_999, &huge, "text/plain"),
        file("9004", "demo.mp4", 12, &clip, "video/mp4"),
        // No type declared: its name says what it is.
        json!({"id": "9005", "filename": "backup.zip", "size": 4, "url": backup,
               "proxy_url": backup}),
    ]);
    handler.on_message(&message(p)).await;
    assert_eq!(
        fake.downloads(),
        2,
        "neither the one too large nor the video and the archive (attachments.skip_types) is fetched"
    );
    let text = database_text(&h).await;
    for kept in [
        "notes from today\n[file#1 standup.md] # Standup Ship the billing fix on Thursday\n[image#2 shot.png]\n[file huge.log] not read: too large (999999999 bytes)\n[file demo.mp4] not read: type video/mp4 is not read\n[file backup.zip] not read: type application/zip is not read",
        "[file#1 standup.md, part 1/1] # Standup\nShip the billing fix on Thursday",
    ] {
        assert!(text.contains(kept), "{kept}: {text}");
    }
    assert!(
        text.lines()
            .filter(|l| l.contains("standup.md, part"))
            .all(|l| l.contains(" | space:")),
        "in the channel's scope"
    );
}

/// Files sent in a Discord DM stay in it: a PDF's text is kept as a piece in the DM's scope,
/// a broken PDF and a file that is not text are kept by name with why; asked in the DM, the
/// bot recalls the PDF's text (the control), asked in the guild it never does, to her or to
/// anyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dms_files_never_surface_in_the_guild() {
    let (h, fake, handler) = setup(true).await;
    let report =
        engram::ingest::attachments::pdf_with("Quarterly report: the widgets shipped late");
    let files: [(&str, &str, Vec<u8>, &str); 3] = [
        ("9201", "report.pdf", report, "application/pdf"),
        (
            "9202",
            "broken.pdf",
            b"%PDF-1.4 not really".to_vec(),
            "application/pdf",
        ),
        (
            "9203",
            "data.json",
            b"\xFF\xFE\x00broken".to_vec(),
            "application/json",
        ),
    ];
    let list: Vec<Value> = files
        .iter()
        .map(|(id, name, bytes, mime)| {
            let url = fake.add_file(name, bytes);
            json!({"id": id, "filename": name, "size": bytes.len(), "url": url,
                   "proxy_url": url, "content_type": mime})
        })
        .collect();
    let mut p = payload(7201, DM, None, ALICE, "the files for Monday");
    p["attachments"] = json!(list);
    handler.on_message(&message(p)).await;
    assert_eq!(fake.downloads(), 3);
    let stored = database_text(&h).await;
    let line = "the files for Monday\n[file#1 report.pdf] Quarterly report: the widgets shipped late\n[file#2 broken.pdf] not read: not a readable PDF\n[file#3 data.json] not read: not text";
    assert!(stored.contains(line), "{stored}");
    let pieces = rows_of(&h, "messages", "report.pdf, part").await;
    assert!(!pieces.is_empty(), "{stored}");
    assert!(
        pieces.iter().all(|r| r.contains(" | dm:")),
        "in the DM's scope: {pieces:#?}"
    );

    let question = "what did the quarterly report say about the widgets?";
    let answers = fake.sent().len();
    handler
        .on_message(&message(payload(7202, DM, None, ALICE, question)))
        .await;
    fake.wait_sent(answers + 1, WITHIN).await;
    let mine = last_answer(&fake);
    assert!(mine.contains("shipped late"), "positive control: {mine}");
    for (i, who) in [BOB, ALICE].into_iter().enumerate() {
        let asked = format!("<@{BOT_ID}> {question}");
        handler
            .on_message(&message(payload(
                7203 + i as u64,
                GENERAL,
                Some(GUILD),
                who,
                &asked,
            )))
            .await;
        fake.wait_sent(answers + 2 + i, WITHIN).await;
        let theirs = last_answer(&fake);
        assert!(!theirs.contains("shipped late"), "{}: {theirs}", who.1);
    }
}

/// The slash command is described in each catalogue language for the Discord clients in it
/// (Spanish for both of Discord's Spanish locales, Portuguese as pt-BR), English for the rest;
/// a community's text longer than Discord takes is cut, so the registration, which Discord
/// refuses whole for one bad description (as the fake does: the control), still goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_slash_command_is_described_in_each_language() {
    let dir = tempfile::tempdir().unwrap();
    let long = "Quello che ricordo di te ".repeat(8);
    std::fs::write(
        dir.path().join("it.ftl"),
        format!("slash-memory = {long}\n"),
    )
    .unwrap();
    let phrases = dir.path().display().to_string();
    let h = Harness::build(false, |c| c.phrases.dir = phrases).await;
    let fake = FakeDiscord::start(TOKEN).await.unwrap();
    let (_, http) = client_of(&h, &fake, Duration::ZERO);
    discord::register_commands(&http, h.bot.as_ref())
        .await
        .expect("Discord takes every description");
    let commands = fake.commands();
    let memory = &commands[0];
    assert_eq!(
        memory["description"],
        "What I remember about you (only you see the answer)"
    );
    let shown = &memory["description_localizations"];
    assert_eq!(shown["ru"], "Что я помню о вас (ответ видите только вы)");
    assert_eq!(
        shown["es-ES"],
        "Lo que recuerdo de ti (solo tú ves la respuesta)"
    );
    assert_eq!(shown["es-419"], shown["es-ES"]);
    assert_eq!(
        shown["pt-BR"],
        "O que eu lembro sobre você (só você vê a resposta)"
    );
    let italian = shown["it"].as_str().unwrap();
    assert!(
        italian.starts_with("Quello che ricordo") && italian.chars().count() == 100,
        "{italian}"
    );
    assert!(
        shown.get("en-US").is_none() && shown.get("ar").is_none(),
        "{shown}"
    );
    let request = &memory["options"][0];
    assert!(
        request["description_localizations"]["de"]
            .as_str()
            .unwrap()
            .starts_with("leer zum Ansehen"),
        "{request}"
    );
    // The control: a description Discord does not take is refused, and nothing changes.
    let too_long = serenity::all::CreateCommand::new("memory").description("x".repeat(101));
    assert!(
        serenity::all::Command::set_global_commands(&http, vec![too_long])
            .await
            .is_err()
    );
    assert_eq!(fake.commands(), commands);
}

/// An image and an audio file of a Discord message, with a vision and a speech-to-text model:
/// the image's line gets its short description and its text is kept as a piece, the audio's
/// line its transcript, all in the channel's scope; the message is stored before either call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_and_audio_of_a_discord_message_are_described() {
    let h = Harness::build(true, |c| {
        c.llm.vision_model = "fake-vision".into();
        c.llm.transcription_model = "fake-whisper".into();
    })
    .await;
    let (h, fake, handler) = connect(h).await;
    let handler = Arc::new(handler);
    let llm = h.fake.as_ref().unwrap();
    let shot = fake.add_file(
        "build.png",
        b"\x89PNG\r\n\x1a\n\0error: missing semicolon at line 42\0",
    );
    let memo = fake.add_file("memo.mp3", b"ID3\x04\0lunch with the team moved to noon\0");
    let file = |id: &str, name: &str, url: &str, mime: &str| {
        json!({"id": id, "filename": name, "size": 64, "url": url, "proxy_url": url,
               "content_type": mime})
    };
    let mut p = payload(7101, GENERAL, Some(GUILD), ALICE, "the build again");
    p["attachments"] = json!([
        file("9101", "build.png", &shot, "image/png"),
        file("9102", "memo.mp3", &memo, "audio/mpeg"),
    ]);
    // Held: the message is in the database while the model has not answered.
    llm.hold();
    let handling = tokio::spawn({
        let handler = handler.clone();
        let m = message(p);
        async move { handler.on_message(&m).await }
    });
    llm.wait_seen(1, std::time::Duration::from_secs(20)).await;
    assert!(
        database_text(&h)
            .await
            .contains("the build again\n[image#1 build.png]"),
        "stored before the model is asked"
    );
    llm.release();
    handling.await.unwrap();
    assert_eq!(
        (llm.count("describe_image"), llm.count("transcribe")),
        (1, 1)
    );
    let text = database_text(&h).await;
    for kept in [
        "the build again\n[image#1 build.png] a picture saying error: missing semicolon at line 42\n[audio#2 memo.mp3] audio: lunch with the team moved to noon",
        "[image#1 build.png, text] error: missing semicolon at line 42",
    ] {
        assert!(text.contains(kept), "{kept}: {text}");
    }
    assert!(
        text.lines()
            .filter(|l| l.contains("build.png, "))
            .all(|l| l.contains(" | space:")),
        "in the channel's scope"
    );
    // The provider gets the recording named by its type only, never the name its sender
    // gave it.
    let sent: Vec<String> = llm
        .requests()
        .iter()
        .filter(|r| r.task == "transcribe")
        .map(|r| r.body["file"].to_string())
        .collect();
    assert_eq!(sent, ["\"audio.mp3\""]);
}

/// Each file of a message is a model call of its own: one message with four images, posted
/// in passing by someone allowed two a minute, gets two described and two bare lines (the
/// message's admission paid the first, each other is admitted on its own), not four calls
/// for the price of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_file_of_a_message_is_paid_on_its_own() {
    let h = Harness::build(true, |c| {
        c.llm.vision_model = "fake-vision".into();
        c.limits.answers_per_person_per_minute = 2;
    })
    .await;
    let (h, fake, handler) = connect(h).await;
    let llm = h.fake.as_ref().unwrap();
    let files: Vec<Value> = (0..4)
        .map(|n| {
            let name = format!("shot{n}.png");
            let bytes = [
                b"\x89PNG\r\n\x1a\n\0".as_slice(),
                format!("picture number {n}\0").as_bytes(),
            ]
            .concat();
            let url = fake.add_file(&name, &bytes);
            json!({"id": format!("95{n:02}"), "filename": name, "size": 64, "url": url,
                   "proxy_url": url, "content_type": "image/png"})
        })
        .collect();
    let mut p = payload(7201, GENERAL, Some(GUILD), BOB, "screenshots from today");
    p["attachments"] = json!(files);
    handler.on_message(&message(p)).await;
    assert_eq!(llm.count("describe_image"), 2);
    let text = database_text(&h).await;
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("[image#")).collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("] a picture saying picture number"))
            .count(),
        2,
        "{lines:#?}"
    );
}

/// What was said while the bot was away: after a restart the handler reads each channel seen
/// in the last day after the newest message it saw there, oldest first, page by page, and
/// handles each as the gateway's would be: stored in its own place and privacy (the HTTP API
/// does not say the guild, and a restricted channel's message must not become a DM),
/// answered when addressed and not answered yet. A message before the newest seen (one
/// forgotten since) is never read back, nor one after the connection (the gateway brings
/// it), nor a channel of a guild another shard serves.
async fn what_was_said_while_away_is_caught_up_once_in_its_place(url: Option<String>) {
    let (h, fake, handler) = setup_on(url, false).await;
    // A guild of shard 1 of 2 ((id >> 22) % 2), where `id % 2` would say 0.
    const BIG: u64 = (1 << 22) | 500;
    const BIG_CHANNEL: u64 = 40;
    fake.add_text_channel(BIG, BIG_CHANNEL, "big", false);
    let at_bot = format!("<@{BOT_ID}>");
    // Seen before the stop: the newest of #mods, of #big and of the DM (answered).
    for p in [
        payload(3010, MODS, Some(GUILD), ALICE, "morning all"),
        payload(3040, BIG_CHANNEL, Some(BIG), ALICE, "big morning"),
        payload(3020, DM, None, ALICE, "hello"),
    ] {
        fake.add_message(&p);
        handler.on_message(&message(p)).await;
    }
    fake.wait_sent(1, WITHIN).await;
    // Said while it was away (and one answered, its newest seen not moved: a crash between
    // the two); one before the newest seen in #mods, never kept; one after the connection.
    let answered_before = payload(
        3013,
        MODS,
        Some(GUILD),
        BOB,
        &format!("{at_bot} remember that the demo is on Monday"),
    );
    let incoming = discord::incoming(
        &message(answered_before.clone()),
        UserId::new(BOT_ID),
        "Engram",
        Privacy::ChannelRestricted,
    );
    assert!(h.bot.handle(&incoming).await.unwrap().is_some(), "answered");
    let after_connecting = discord::snowflake_at(chrono::Utc::now() + chrono::Duration::minutes(1));
    for p in [
        answered_before,
        payload(3005, MODS, Some(GUILD), BOB, "the old plan was Tuesday"),
        payload(3011, MODS, Some(GUILD), BOB, "the launch moved to Friday"),
        payload(
            3012,
            MODS,
            Some(GUILD),
            BOB,
            &format!("{at_bot} remember that I own the launch checklist"),
        ),
        payload(
            after_connecting.get(),
            MODS,
            Some(GUILD),
            BOB,
            "said after the connection",
        ),
        payload(3021, DM, None, ALICE, "remember that my cat is Tom"),
        payload(3030, GENERAL, Some(GUILD), BOB, "a channel never seen"),
        payload(3041, BIG_CHANNEL, Some(BIG), BOB, "big news"),
    ] {
        fake.add_message(&p);
    }
    // A long absence: two pages of #mods.
    for n in 0..120 {
        fake.add_message(&payload(
            3100 + n,
            MODS,
            Some(GUILD),
            BOB,
            &format!("note {n}"),
        ));
    }
    let restarted = handler_for(&h, &fake);
    let now = discord::snowflake_at(chrono::Utc::now());
    restarted.catch_up(Some((1, 2)), now).await;
    assert_eq!(fake.history_reads(), 1, "shard 1 reads #big only");
    assert!(database_text(&h).await.contains("big news"));
    // READY came: a message handled before the catch-up knows its channels does not move
    // #mods' newest seen past what is still to read.
    restarted.expect_catch_up();
    let live = payload(3300, MODS, Some(GUILD), ALICE, "back online?");
    fake.add_message(&live);
    restarted.on_message(&message(live)).await;
    restarted.catch_up(Some((0, 2)), now).await;
    assert_eq!(
        fake.history_reads(),
        1 + 3,
        "shard 0: #mods (two pages) and the DM"
    );
    let text = database_text(&h).await;
    for kept in [
        "the launch moved to Friday",
        "I own the launch checklist",
        "my cat is Tom",
        "note 0",
        "note 119",
    ] {
        assert!(text.contains(kept), "{kept}: {text}");
    }
    assert!(
        !text.contains("the old plan was Tuesday"),
        "before the newest seen"
    );
    assert!(!text.contains("said after the connection"));
    assert!(!text.contains("a channel never seen"));
    let guild = h
        .store
        .resolve_space(Platform::Discord, &GUILD.to_string(), SpaceKind::Group, "")
        .await
        .unwrap();
    let stored = |channel: u64, id: u64| {
        let h = &h;
        async move {
            let space = if channel == DM {
                format!("dm:{DM}")
            } else {
                GUILD.to_string()
            };
            h.store
                .message_by_external(
                    Platform::Discord,
                    &space,
                    &channel.to_string(),
                    &id.to_string(),
                )
                .await
                .unwrap()
                .expect("kept")
        }
    };
    assert_eq!(
        stored(MODS, 3011).await.scope,
        Scope::Channel(guild, MODS.to_string()),
        "a restricted channel's message stays there"
    );
    let alice = stored(DM, 3020).await.author;
    assert_eq!(stored(DM, 3021).await.scope, Scope::Dm(alice));
    // Oldest first: stored in the order they were said.
    let mut order = Vec::new();
    for id in [3011, 3012, 3100, 3150, 3219] {
        order.push(stored(MODS, id).await.id);
    }
    assert!(order.is_sorted(), "{order:?}");
    // The two addressed messages not answered yet are answered where they were said; the
    // one answered before the stop is not answered again.
    fake.wait_sent(3, WITHIN).await;
    let sent = fake.sent();
    let answered: Vec<(u64, String)> = sent[1..]
        .iter()
        .map(|(to, b)| (*to, b["message_reference"]["message_id"].to_string()))
        .collect();
    assert_eq!(
        answered,
        [(MODS, "\"3012\"".to_string()), (DM, "\"3021\"".to_string())]
    );
    // Each channel's newest seen is its newest message now.
    let cursors: Vec<(String, i64)> = h
        .store
        .channels_seen_since(Platform::Discord, start_time() - chrono::Duration::days(1))
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.channel, c.external_id))
        .collect();
    assert_eq!(
        cursors,
        [
            (BIG_CHANNEL.to_string(), 3041),
            (MODS.to_string(), 3300),
            (DM.to_string(), 3021)
        ]
    );
    // Again: nothing stored or answered twice.
    let rows = rows_of(&h, "messages", "").await.len();
    restarted.catch_up(None, now).await;
    assert_eq!(rows_of(&h, "messages", "").await.len(), rows);
    assert_eq!(fake.sent().len(), 3);
}

/// A clear made while the bot was away (the admin page, or another platform of a joined
/// person) reaches what the person said meanwhile: the catch-up does not bring it back;
/// another member's message of that time is kept, and what the person says after the clear
/// is kept too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_made_while_away_reaches_what_was_said_meanwhile() {
    let (h, fake, handler) = setup(false).await;
    let seen = payload(3001, MODS, Some(GUILD), ALICE, "morning all");
    fake.add_message(&seen);
    handler.on_message(&message(seen)).await;
    for p in [
        payload(3011, MODS, Some(GUILD), ALICE, "my locker code is 4512"),
        payload(3012, MODS, Some(GUILD), BOB, "the launch moved to Friday"),
    ] {
        fake.add_message(&p);
    }
    // Cleared an hour later (the messages say 09:11 and 09:12).
    h.clock.advance(chrono::Duration::hours(1));
    let alice = h
        .store
        .find_identity(Platform::Discord, &ALICE.0.to_string())
        .await
        .unwrap()
        .expect("known");
    h.memory
        .manager
        .clear_with_joined(alice, &engram::memory::audit::By::operator("admin"))
        .await
        .unwrap();
    assert!(!database_text(&h).await.contains("morning all"), "cleared");
    let restarted = handler_for(&h, &fake);
    restarted
        .catch_up(None, discord::snowflake_at(chrono::Utc::now()))
        .await;
    let text = database_text(&h).await;
    assert!(
        text.contains("the launch moved to Friday"),
        "bob's is kept: {text}"
    );
    assert!(
        !text.contains("4512"),
        "alice's from before the clear is not: {text}"
    );
    // What she says after the clear is hers as before.
    let mut after = payload(3400, MODS, Some(GUILD), ALICE, "back after the clear");
    after["timestamp"] = json!("2026-11-20T10:05:00.000000+00:00");
    restarted.on_message(&message(after)).await;
    assert!(database_text(&h).await.contains("back after the clear"));
}

/// A channel that cannot be read at the catch-up keeps its newest seen: later messages there
/// wait behind it (they do not move it past what was missed), and the next connection reads
/// what was missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_that_cannot_be_caught_up_is_read_at_the_next_connection() {
    let (h, fake, handler) = setup(false).await;
    handler
        .on_message(&message(payload(
            3010,
            MODS,
            Some(GUILD),
            ALICE,
            "morning all",
        )))
        .await;
    fake.add_message(&payload(
        3011,
        MODS,
        Some(GUILD),
        BOB,
        "the launch moved to Friday",
    ));
    let restarted = handler_for(&h, &fake);
    let now = discord::snowflake_at(chrono::Utc::now());
    fake.fail_history(true);
    restarted.expect_catch_up();
    restarted.catch_up(None, now).await;
    assert_eq!(fake.history_reads(), 1, "tried");
    assert!(!database_text(&h).await.contains("launch moved"));
    // Said after the connection, handled: #mods still waits behind what was missed. One of
    // them is forgotten on request meanwhile: the next catch-up, reading from before it, must
    // not bring it back.
    let at_bot = format!("<@{BOT_ID}>");
    for p in [
        payload(3012, MODS, Some(GUILD), ALICE, "anyone?"),
        payload(3013, MODS, Some(GUILD), ALICE, "my bike is the blue one"),
        payload(
            3014,
            MODS,
            Some(GUILD),
            ALICE,
            &format!("{at_bot} forget that my bike is the blue one"),
        ),
    ] {
        if p["id"] == "3014" {
            assert!(
                database_text(&h).await.contains("my bike is the blue one"),
                "the positive control: kept until forgotten"
            );
        }
        fake.add_message(&p);
        restarted.on_message(&message(p)).await;
    }
    fake.wait_sent(1, WITHIN).await;
    assert!(
        last_answer(&fake).contains("forgotten"),
        "{}",
        last_answer(&fake)
    );
    assert!(!database_text(&h).await.contains("blue one"));
    fake.fail_history(false);
    restarted.expect_catch_up();
    restarted.catch_up(None, now).await;
    let text = database_text(&h).await;
    assert!(text.contains("the launch moved to Friday"), "{text}");
    assert_eq!(
        rows_of(&h, "messages", "| anyone? |").await.len(),
        1,
        "read again, kept once"
    );
    assert!(
        !text.contains("blue one"),
        "forgotten stays forgotten: {text}"
    );
    assert_eq!(
        fake.sent().len(),
        1,
        "the request to forget, forgotten with what it named, is not read as a new one"
    );
    let cursors: Vec<i64> = h
        .store
        .channels_seen_since(Platform::Discord, start_time())
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.external_id)
        .collect();
    assert_eq!(cursors, [3014], "then it moves on");
}

/// An edit of a "remember that …" message: the old text is forgotten with the fact it asked
/// for (its own platform ids among what is kept out), and the new text is kept all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_request_to_remember_keeps_its_new_text() {
    let (h, fake, handler) = setup(false).await;
    let at_bot = format!("<@{BOT_ID}>");
    let said = payload(
        3700,
        GENERAL,
        Some(GUILD),
        ALICE,
        &format!("{at_bot} remember that my locker is number twelve"),
    );
    handler.on_message(&message(said)).await;
    fake.wait_sent(1, WITHIN).await;
    assert!(database_text(&h).await.contains("locker is number twelve"));
    let new_text = format!("{at_bot} remember that my locker is number fourteen");
    let mut edited = payload(3700, GENERAL, Some(GUILD), ALICE, &new_text);
    edited["edited_timestamp"] = json!("2026-11-20T09:30:00.000000+00:00");
    fake.add_message(&edited);
    let edit: serenity::all::MessageUpdateEvent = serde_json::from_value(json!({
        "id": "3700", "channel_id": GENERAL.to_string(), "guild_id": GUILD.to_string(),
        "author": user(ALICE.0, ALICE.1), "attachments": [], "content": new_text,
        "timestamp": "2026-11-20T09:01:00.000000+00:00", "edited_timestamp": "2026-11-20T09:30:00.000000+00:00"
    }))
    .unwrap();
    handler.on_message_update(&edit).await;
    let text = database_text(&h).await;
    assert!(!text.contains("number twelve"), "{text}");
    assert_eq!(
        rows_of(&h, "messages", "remember that my locker is number fourteen")
            .await
            .len(),
        1,
        "{text}"
    );
}

/// A moderator's request said while the bot was away is a moderator's: messages read over
/// HTTP do not carry the author's roles, so the catch-up looks them up (once per member);
/// a member without the role is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moderators_request_caught_up_is_a_moderators() {
    let (h, fake, handler) = setup(false).await;
    fake.set_roles(
        GUILD,
        &[
            (
                GUILD,
                discord_perm::VIEW_CHANNEL | discord_perm::SEND_MESSAGES,
            ),
            (MOD_ROLE, discord_perm::MANAGE_MESSAGES),
        ],
    );
    fake.set_member_roles(GUILD, CAROL.0, &[MOD_ROLE]);
    let at_bot = format!("<@{BOT_ID}>");
    let told = payload(
        3600,
        GENERAL,
        Some(GUILD),
        ALICE,
        &format!("{at_bot} remember that I live in Oslo"),
    );
    fake.add_message(&told);
    handler.on_message(&message(told)).await;
    fake.wait_sent(1, WITHIN).await;
    let forget = format!("{at_bot} forget everything about <@{}>", ALICE.0);
    for (id, who) in [(3601, DAVE), (3602, CAROL), (3603, DAVE)] {
        let p = payload(id, GENERAL, Some(GUILD), who, &forget);
        fake.add_message(&mentioning(p, &[ALICE]));
    }
    let restarted = handler_for(&h, &fake);
    restarted
        .catch_up(None, discord::snowflake_at(chrono::Utc::now()))
        .await;
    fake.wait_sent(4, WITHIN).await;
    let answers: Vec<String> = fake.sent()[1..]
        .iter()
        .map(|(_, b)| b["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(answers[0].contains("Only Alice"), "{answers:?}");
    assert!(answers[1].starts_with("Done"), "{answers:?}");
    assert!(answers[2].contains("Only Alice"), "{answers:?}");
    assert_eq!(fake.member_gets(), 2, "Dave and Carol, each once");
    assert!(!database_text(&h).await.contains("Oslo"));
}

/// With `discord.catch_up_hours = 0` no channel's newest seen is kept (nothing would read
/// it); with catch-ups on, it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_catch_ups_no_channel_activity_is_kept() {
    let h = Harness::build(false, |c| c.discord.catch_up_hours = 0.0).await;
    let (h, fake, handler) = connect(h).await;
    let cursors = || async {
        h.store
            .channels_seen_since(Platform::Discord, start_time() - chrono::Duration::days(1))
            .await
            .unwrap()
            .len()
    };
    handler
        .on_message(&message(payload(3800, DM, None, ALICE, "hello")))
        .await;
    assert_eq!(cursors().await, 0);
    let on = handler_with(&h, &fake, Duration::from_secs(3600));
    on.on_message(&message(payload(3801, DM, None, ALICE, "hello again")))
        .await;
    assert_eq!(cursors().await, 1, "the positive control");
}

/// The gateway's copy of a message and a catch-up's, handled at the same moment: one of them
/// handles it, so it is answered once (and its model called once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_delivered_twice_at_once_is_answered_once() {
    let (h, fake, handler) = setup(true).await;
    let handler = Arc::new(handler);
    let llm = h.fake.as_ref().unwrap();
    let m = message(payload(
        3500,
        MODS,
        Some(GUILD),
        ALICE,
        &format!("<@{BOT_ID}> what should I cook tonight?"),
    ));
    llm.hold();
    let first = tokio::spawn({
        let (handler, m) = (handler.clone(), m.clone());
        async move { handler.on_message(&m).await }
    });
    llm.wait_seen(1, WITHIN).await;
    tokio::time::timeout(WITHIN, handler.on_message(&m))
        .await
        .expect("the second copy does not wait for the first");
    llm.release();
    first.await.unwrap();
    fake.wait_sent(1, WITHIN).await;
    assert_eq!(fake.sent().len(), 1, "{:?}", fake.sent());
    assert_eq!(llm.count("reply"), 1);
}

/// An image whose description a stop cut off (the vision model still working) keeps its bare
/// line; Discord never sends the message again, so the catch-up after the restart reads it
/// again and the image is described: stored once, with its description, and described once
/// more only. One deleted on Discord meanwhile (the read answers 404) leaves memory.
async fn an_image_cut_off_before_its_description_is_described_after_the_restart(
    url: Option<String>,
) {
    let h = Harness::build(true, |c| {
        c.llm.vision_model = "fake-vision".into();
        if let Some(url) = url {
            c.store.url = url;
        }
    })
    .await;
    let (h, fake, handler) = connect(h).await;
    let llm = h.fake.as_ref().unwrap();
    let shot = fake.add_file(
        "shot.png",
        b"\x89PNG\r\n\x1a\n\0ImportError: no module named frobnitz\0",
    );
    let gone = fake.add_file("gone.png", b"\x89PNG\r\n\x1a\n\0a deleted screenshot\0");
    let with_file = |id: u64, text: &str, name: &str, url: &str| {
        let mut p = payload(id, GENERAL, Some(GUILD), ALICE, text);
        p["attachments"] = json!([{"id": format!("9{id}"), "filename": name, "size": 64,
                                   "url": url, "proxy_url": url, "content_type": "image/png"}]);
        p
    };
    let kept = with_file(7201, "my screen right now", "shot.png", &shot);
    let deleted = with_file(7202, "oops, wrong screen", "gone.png", &gone);
    // Only the first is still on Discord after the restart: the second is deleted meanwhile.
    fake.add_message(&kept);
    llm.hold();
    let handler = Arc::new(handler);
    let mut handling = Vec::new();
    for (n, p) in [kept, deleted].into_iter().enumerate() {
        let (handler, m) = (handler.clone(), message(p));
        handling.push(tokio::spawn(async move { handler.on_message(&m).await }));
        llm.wait_seen(n + 1, WITHIN).await;
    }
    // The stop.
    for h in handling {
        h.abort();
        assert!(h.await.unwrap_err().is_cancelled());
    }
    llm.release();
    let text = database_text(&h).await;
    assert!(
        text.contains("my screen right now\n[image#1 shot.png]")
            && text.contains("oops, wrong screen\n[image#2 gone.png]")
            && !text.contains("frobnitz"),
        "stored before the model, bare: {text}"
    );
    let restarted = handler_for(&h, &fake);
    let now = discord::snowflake_at(chrono::Utc::now());
    restarted.catch_up(None, now).await;
    assert_eq!(
        llm.count("describe_image"),
        3,
        "the kept one described again"
    );
    assert_eq!(fake.message_gets(), 2, "each read again by its id");
    assert_eq!(
        rows_of(&h, "messages", "my screen right now").await.len(),
        1
    );
    let text = database_text(&h).await;
    assert!(
        text.contains(
            "my screen right now\n[image#1 shot.png] a picture saying ImportError: no module named frobnitz"
        ),
        "{text}"
    );
    assert!(
        !text.contains("wrong screen") && !text.contains("gone.png"),
        "deleted on Discord while away: gone here too: {text}"
    );
    // Described now: another catch-up reads and asks nothing.
    restarted.catch_up(None, now).await;
    assert_eq!((llm.count("describe_image"), fake.message_gets()), (3, 2));
}

postgres_test! {
    /// `engram run` twice with one Discord token on one PostgreSQL, each with its own range of
    /// a four-shard bot (`discord.shards` "0-1/4" and "2-3/4", as README's "Several processes"
    /// says): serenity's shard runners identify the four shards between them on the fake
    /// gateway, which sends each guild's events to its shard as Discord does, and every
    /// message is stored and answered exactly once, whichever process runs its shard. (A range
    /// one shard short never identifies it, and the wait fails. A range that also takes a
    /// shard of the other, or one past the total, would identify it at serenity's next boot,
    /// 5 s after the last, which this test does not wait for.)
    async fn processes_split_the_discord_shards() {
        let url = fresh_postgres_url().await;
        let fake = FakeDiscord::start(TOKEN).await.unwrap();
        // One guild per shard ((guild >> 22) % 4), each with a channel.
        let guild = |shard: u64| (shard << 22) | 9;
        for shard in 0..4 {
            assert_eq!(discord_perm::shard_of(Some(guild(shard)), 4), shard);
            fake.add_text_channel(guild(shard), 100 + shard, "general", false);
        }
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let ports = two_free_ports();
        let api = fake.url();
        let run = |dir: &std::path::Path, port: u16, shards: &str| {
            engram_serving(
                dir,
                &url,
                port,
                &[
                    ("DISCORD_TOKEN", TOKEN),
                    ("ENGRAM__DISCORD__API_URL", &api),
                    ("ENGRAM__DISCORD__SHARDS", shards),
                ],
            )
        };
        let _procs = [
            run(dirs[0].path(), ports[0], "0-1/4"),
            run(dirs[1].path(), ports[1], "2-3/4"),
        ];
        // serenity starts a process's shards 5 s apart, as Discord asks.
        fake.wait_shards(4, Duration::from_secs(60)).await;
        for port in ports {
            wait_ready(port).await;
        }
        // Each process is ready once its own shards are connected, and says which.
        for (port, runs) in ports.iter().zip([[0, 1], [2, 3]]) {
            let ready: Value = reqwest::get(format!("http://127.0.0.1:{port}/readyz"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(
                ready["shards"]["discord"],
                json!({"total": 4, "runs": runs, "connected": runs}),
                "{ready}"
            );
        }
        let mut shards = fake.shards_identified();
        shards.sort();
        assert_eq!(shards, [(0, 4), (1, 4), (2, 4), (3, 4)], "each shard once");

        let at_bot = format!("<@{BOT_ID}>");
        for shard in 0..4 {
            let event = payload(
                3000 + shard,
                100 + shard,
                Some(guild(shard)),
                ALICE,
                &format!("{at_bot} remember that shard {shard} drinks tea"),
            );
            assert_eq!(fake.dispatch_message(&event), 1, "one connection runs shard {shard}");
        }
        fake.wait_sent(4, WITHIN).await;
        for shard in 0..4 {
            let replies: Vec<_> = fake
                .sent()
                .into_iter()
                .filter(|(to, _)| *to == 100 + shard)
                .collect();
            assert_eq!(replies.len(), 1, "shard {shard}: {replies:?}");
            assert!(
                replies[0].1["content"].as_str().unwrap().starts_with("Got it"),
                "{replies:?}"
            );
        }
        let store = open_url(&url).await;
        let stored = store.table_counts().await.unwrap();
        let messages = stored.iter().find(|t| t.table == "messages").unwrap().rows;
        assert_eq!(messages, 8, "4 messages and 4 replies, each stored once");
    }
}

postgres_test! {
    /// `engram run` twice with the same Discord settings on one PostgreSQL (as `docker compose
    /// --scale` starts them: both would run the one shard): one process holds the shard's
    /// lease and connects it, the other stands by, so each message is answered once; killed,
    /// the runner's shard moves to the other within the lease time.
    async fn processes_with_the_same_shards_run_each_shard_once() {
        let url = fresh_postgres_url().await;
        let fake = FakeDiscord::start(TOKEN).await.unwrap();
        let guild = 9u64;
        fake.add_text_channel(guild, 100, "general", false);
        let lease_secs = 3;
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let ports = two_free_ports();
        let (api, lease) = (fake.url(), lease_secs.to_string());
        let run = |dir: &std::path::Path, port: u16| {
            engram_serving(
                dir,
                &url,
                port,
                &[
                    ("DISCORD_TOKEN", TOKEN),
                    ("ENGRAM__DISCORD__API_URL", &api),
                    ("ENGRAM__DISCORD__SHARD_LEASE_SECS", &lease),
                ],
            )
        };
        let mut procs = [run(dirs[0].path(), ports[0]), run(dirs[1].path(), ports[1])];
        fake.wait_shards(1, Duration::from_secs(60)).await;
        for port in ports {
            wait_ready(port).await;
        }
        // Which one runs the shard: the other stands by.
        let mut states = Vec::new();
        for port in ports {
            let ready: Value = reqwest::get(format!("http://127.0.0.1:{port}/readyz"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            states.push(ready["platforms"]["discord"].to_string());
        }
        let runner = states
            .iter()
            .position(|s| !s.contains("standby"))
            .unwrap_or_else(|| panic!("one runs the shard: {states:?}"));
        assert!(states[1 - runner].contains("standby"), "{states:?}");
        let at_bot = format!("<@{BOT_ID}>");
        let say = |n: u64| {
            let event = payload(
                5000 + n,
                100,
                Some(guild),
                ALICE,
                &format!("{at_bot} remember that tea number {n} is green"),
            );
            fake.dispatch_message(&event)
        };
        assert_eq!(say(1), 1, "one connection runs the shard");
        fake.wait_sent(1, WITHIN).await;

        // Killed (no goodbye): the other connects the shard within the lease time.
        procs[runner].start_kill().unwrap();
        procs[runner].wait().await.unwrap();
        let killed = std::time::Instant::now();
        fake.wait_shards(2, Duration::from_secs(60)).await;
        let took = killed.elapsed();
        assert!(
            took < Duration::from_secs(lease_secs + 10),
            "the shard moved within the lease time: {took:?}"
        );
        assert_eq!(say(2), 1, "the other runs it now, once");
        fake.wait_sent(2, WITHIN).await;
        assert_eq!(fake.sent().len(), 2, "each message answered once");
        drop(procs);
    }
}
