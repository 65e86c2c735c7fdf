//! Telegram end to end: the real teloxide client polls a fake Bot API server on 127.0.0.1 for
//! updates and answers through its sendMessage, in a private chat, a group and a forum topic:
//! remember → recall, commands registered, long answers split, text sent as plain text.

use crate::common::*;
use engram::adapters::fake_telegram::{BOT_USERNAME, Chat, FakeTelegram, TgFile, TgUser};
use engram::adapters::split::utf16;
use engram::adapters::telegram::{self, TelegramError, TelegramSettings};
use engram::adapters::{CatchUp, MessageHandler, Typing};
use engram::bot::Reply;
use engram::domain::IncomingMessage;
use engram::domain::{Platform, SpaceKind};
use engram::llm::fake::Behavior;
use engram::memory::MemoryError;
use engram::store::StoreError;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::watch;

const TOKEN: &str = "4242:test-token";
/// A bound for waiting on the adapter, so a bug fails instead of hanging (not a sleep).
const WITHIN: Duration = Duration::from_secs(20);

struct Running {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<(), TelegramError>>,
}

impl Running {
    async fn stop(self) -> Result<(), TelegramError> {
        self.stop.send_replace(true);
        tokio::time::timeout(WITHIN, self.task)
            .await
            .expect("the adapter stops on shutdown")
            .expect("the adapter task did not panic")
    }
}

fn start(h: &Harness, fake: &FakeTelegram, token: &str) -> Running {
    start_with(h, h.bot.clone(), fake, token)
}

fn start_with(
    h: &Harness,
    handler: Arc<dyn MessageHandler>,
    fake: &FakeTelegram,
    token: &str,
) -> Running {
    start_with_grace(h, handler, fake, token, WITHIN)
}

fn start_with_grace(
    h: &Harness,
    handler: Arc<dyn MessageHandler>,
    fake: &FakeTelegram,
    token: &str,
    shutdown_grace: Duration,
) -> Running {
    start_polling(h, handler, fake, token, shutdown_grace, 5)
}

fn start_polling(
    h: &Harness,
    handler: Arc<dyn MessageHandler>,
    fake: &FakeTelegram,
    token: &str,
    shutdown_grace: Duration,
    poll_secs: u32,
) -> Running {
    let (stop, shutdown) = watch::channel(false);
    let settings = TelegramSettings {
        api_url: fake.url(),
        poll_secs,
        bot_name: h.config.bot.name.clone(),
        shutdown_grace,
        status: Default::default(),
        downloads: h.config.attachments.limits(),
    };
    let token = token.to_string();
    let task =
        tokio::spawn(async move { telegram::run(handler, &token, settings, shutdown).await });
    Running { stop, task }
}

/// The bot, except that a message containing `needle` makes it panic (a bug on one update).
struct PanicsOn {
    bot: Arc<engram::bot::Bot>,
    needle: &'static str,
    panicked: AtomicUsize,
}

#[async_trait::async_trait]
impl MessageHandler for PanicsOn {
    fn text(&self, language: Option<engram::domain::language::Language>, id: &str) -> String {
        self.bot.text(language, id)
    }

    fn text_in_each(&self, id: &str) -> Vec<(engram::domain::language::Language, String)> {
        self.bot.text_in_each(id)
    }

    async fn message(
        &self,
        msg: &IncomingMessage,
        typing: Typing<'_>,
    ) -> Result<Option<Reply>, StoreError> {
        if msg.text.contains(self.needle) {
            self.panicked.fetch_add(1, Ordering::SeqCst);
            panic!("a handler bug, on purpose");
        }
        self.bot.message(msg, typing).await
    }

    async fn keeps(&self, msg: &IncomingMessage) -> Result<bool, StoreError> {
        self.bot.keeps(msg).await
    }

    async fn edited(&self, msg: &IncomingMessage) -> Result<(), MemoryError> {
        self.bot.edited(msg).await
    }

    async fn deleted(
        &self,
        platform: Platform,
        space: &str,
        channel: &str,
        ids: &[String],
    ) -> Result<u64, MemoryError> {
        self.bot.deleted(platform, space, channel, ids).await
    }

    async fn channel_deleted(
        &self,
        platform: Platform,
        space: &str,
        channel: &str,
    ) -> Result<u64, MemoryError> {
        self.bot.channel_deleted(platform, space, channel).await
    }

    async fn channels_kept(
        &self,
        platform: Platform,
        space: &str,
    ) -> Result<Vec<String>, StoreError> {
        self.bot.channels_kept(platform, space).await
    }

    async fn seen(
        &self,
        platform: Platform,
        space: &str,
        channel: &str,
        id: i64,
    ) -> Result<(), StoreError> {
        self.bot.seen(platform, space, channel, id).await
    }

    async fn to_catch_up(
        &self,
        platform: Platform,
        within: std::time::Duration,
    ) -> Result<CatchUp, StoreError> {
        self.bot.to_catch_up(platform, within).await
    }
}

/// The group "Lab" (-100500), without topics.
fn lab_group() -> Chat {
    Chat::Group {
        id: -100500,
        title: "Lab".into(),
        topic: None,
    }
}

fn alice_dm() -> Chat {
    Chat::Private {
        id: 1001,
        name: "Alice".into(),
    }
}

const ALICE: (i64, &str) = (1001, "Alice");
const BOB: (i64, &str) = (1002, "Bob");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_chat_remembers_and_recalls_with_commands_registered() {
    let h = Harness::offline().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);

    let first = fake.push_text(&alice_dm(), ALICE, "remember that I love Rust", false);
    fake.wait_sent(1, WITHIN).await;
    let sent = fake.sent();
    assert!(
        sent[0]["text"].as_str().unwrap().starts_with("Got it"),
        "{sent:?}"
    );
    assert_eq!(sent[0]["chat_id"], 1001);
    assert_eq!(sent[0]["reply_parameters"]["message_id"], first);
    assert!(
        sent[0].get("parse_mode").is_none(),
        "plain text, never markup"
    );

    fake.push_text(&alice_dm(), ALICE, "what do you know about me", false);
    fake.wait_sent(2, WITHIN).await;
    let answer = &fake.sent_to(1001)[1];
    assert!(answer.contains("Rust"), "{answer}");

    // Commands: registered with descriptions; /start is the help; /memory shows MEMORY.md.
    let commands = fake.commands();
    let names: Vec<&str> = commands
        .iter()
        .filter_map(|c| c["command"].as_str())
        .collect();
    assert!(
        names.contains(&"memory") && names.contains(&"help"),
        "{commands:?}"
    );
    assert!(
        commands
            .iter()
            .all(|c| !c["description"].as_str().unwrap().is_empty())
    );
    // Each catalogue language's menu for the clients set to it, English for every other.
    let help_in = |code: &str| {
        fake.commands_in(code)
            .iter()
            .find(|c| c["command"] == "help")
            .map(|c| c["description"].as_str().unwrap().to_string())
    };
    assert_eq!(help_in("").as_deref(), Some("What I can do"));
    assert_eq!(help_in("ru").as_deref(), Some("Что я умею"));
    assert_eq!(help_in("pt").as_deref(), Some("O que eu sei fazer"));
    for code in ["de", "es", "fr"] {
        assert_eq!(fake.commands_in(code).len(), commands.len(), "{code}");
    }
    assert_eq!(help_in("it"), None, "no Italian catalogue: English");
    fake.push_text(&alice_dm(), ALICE, "/start", false);
    fake.push_text(&alice_dm(), ALICE, "/memory", false);
    fake.wait_sent(4, WITHIN).await;
    let texts = fake.sent_to(1001);
    assert!(texts[2].contains("remember"), "help: {}", texts[2]);
    assert!(texts[3].contains("I love Rust"), "MEMORY.md: {}", texts[3]);

    // Stored as Alice's private chat on Telegram.
    let alice = h
        .store
        .resolve_person(Platform::Telegram, "1001", "Alice")
        .await
        .unwrap();
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 1);
    running.stop().await.unwrap();
}

/// Two linked channels' posts forwarded into one discussion group come from Telegram's one
/// placeholder account: each channel is its own author, so one's memory is not the other's
/// (nor one person's with everyone who writes as a chat). The control: a channel's own
/// memory is there for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_chat_a_message_is_sent_as_is_its_own_author() {
    let h = Harness::offline().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let lab = lab_group();
    let news = (-100_700, "News");
    let rumours = (-100_800, "Rumours");
    let remember = format!("@{BOT_USERNAME} remember that our launch is on Friday");
    fake.push_as_chat(&lab, news, &remember, true);
    fake.wait_sent(1, WITHIN).await;
    let asked = format!("@{BOT_USERNAME} what do you know about me");
    // A member writing as a channel: Telegram's placeholder for that is a bot account.
    fake.push_as_chat(&lab, rumours, &asked, false);
    fake.wait_sent(2, WITHIN).await;
    fake.push_as_chat(&lab, news, &asked, true);
    fake.wait_sent(3, WITHIN).await;
    let texts = fake.sent_to(-100500);
    assert!(
        !texts[1].contains("launch"),
        "another chat's memory: {}",
        texts[1]
    );
    assert!(texts[2].contains("launch"), "the control: {}", texts[2]);
    let news_author = h
        .store
        .find_identity(Platform::Telegram, "-100700")
        .await
        .unwrap();
    assert!(news_author.is_some(), "stored as the channel");
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_and_forum_topic_answer_only_when_addressed() {
    let h = Harness::offline().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let lab = lab_group();

    // Chatter is stored, not answered; then a mention, a command and a reply are.
    fake.push_text(&lab, BOB, "hello everyone, coffee at 3?", false);
    let mention = format!("@{BOT_USERNAME} remember that I prefer green tea");
    fake.push_text(&lab, ALICE, &mention, false);
    fake.wait_sent(1, WITHIN).await;
    assert_eq!(
        fake.sent().len(),
        1,
        "chatter got an answer: {:?}",
        fake.sent()
    );
    assert!(
        fake.chat_actions().len() <= 1,
        "typing shown for chatter: {:?}",
        fake.chat_actions()
    );
    assert!(fake.sent_to(-100500)[0].starts_with("Got it"));
    let command = format!("/memory@{BOT_USERNAME}");
    fake.push_text(&lab, ALICE, &command, false);
    fake.push_text(&lab, ALICE, "what do you know about me", true);
    fake.wait_sent(3, WITHIN).await;
    let texts = fake.sent_to(-100500);
    assert!(texts[1].contains("green tea"), "{}", texts[1]);
    // The platform's command is stored as a command (summaries skip it); the chatter is not.
    let flags = crate::common::command_flags(&h.config.store.url).await;
    assert!(flags.contains(&(command.clone(), true)), "{flags:?}");
    assert!(
        flags.contains(&("hello everyone, coffee at 3?".to_string(), false)),
        "{flags:?}"
    );
    assert!(texts[2].contains("green tea"), "{}", texts[2]);

    let space = h
        .store
        .resolve_space(Platform::Telegram, "-100500", SpaceKind::Group, "Lab")
        .await
        .unwrap();
    let stored = h
        .store
        .recent_messages(space, "main", None, 20)
        .await
        .unwrap();
    assert!(
        stored.iter().any(|m| m.text.contains("coffee at 3")),
        "{stored:?}"
    );

    // A forum topic is a channel of the group: the answer goes to the same topic.
    let topic = Chat::Group {
        id: -100500,
        title: "Lab".into(),
        topic: Some(77),
    };
    fake.push_text(&topic, ALICE, &format!("@{BOT_USERNAME} help"), false);
    fake.wait_sent(4, WITHIN).await;
    let last = fake.sent().pop().unwrap();
    assert_eq!(last["message_thread_id"], 77, "{last}");
    let in_topic = h
        .store
        .recent_messages(space, "77", None, 20)
        .await
        .unwrap();
    assert_eq!(
        in_topic.len(),
        2,
        "the question and the answer: {in_topic:?}"
    );
    running.stop().await.unwrap();
}

/// A Telegram outage (every call answered 500): the adapter keeps asking instead of stopping;
/// what was written during the outage is answered once Telegram is back, once, and what was
/// remembered before it is still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_ridden_out_and_what_came_meanwhile_answered_once() {
    let h = Harness::offline().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    // Polls of one second: the poll in hand when the outage starts ends soon.
    let running = start_polling(&h, h.bot.clone(), &fake, TOKEN, WITHIN, 1);
    fake.push_text(&alice_dm(), ALICE, "remember that I love Rust", false);
    fake.wait_sent(1, WITHIN).await;

    fake.refuse_all(true);
    // Two refused polls (a pause between them): it is still trying.
    fake.wait_refused(2, WITHIN).await;
    let asked = fake.push_text(&alice_dm(), ALICE, "what do you know about me", false);
    fake.wait_refused(3, WITHIN).await;
    fake.refuse_all(false);

    fake.wait_sent(2, WITHIN).await;
    let sent = fake.sent();
    assert_eq!(sent[1]["reply_parameters"]["message_id"], asked);
    assert!(
        sent[1]["text"].as_str().unwrap().contains("Rust"),
        "{sent:?}"
    );
    // A later message is answered too, and the one from the outage not again.
    fake.push_text(&alice_dm(), ALICE, "/memory", false);
    fake.wait_sent(3, WITHIN).await;
    let answered: Vec<i64> = fake
        .sent()
        .iter()
        .map(|m| m["reply_parameters"]["message_id"].as_i64().unwrap())
        .collect();
    assert_eq!(answered.iter().filter(|id| **id == asked).count(), 1);
    running
        .stop()
        .await
        .expect("an outage is not a reason to stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_arrives_split() {
    let h = Harness::with_llm().await;
    let long = "word ".repeat(2000);
    h.fake().set_behavior(Behavior::Content(long.clone()));
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    // Flood control on the first two sends: waited out, nothing lost.
    fake.rate_limit_next(2);
    fake.push_text(&alice_dm(), ALICE, "tell me a long story", false);
    fake.wait_sent(3, WITHIN).await;
    let parts = fake.sent_to(1001);
    assert_eq!(parts.len(), 3, "10,000 characters in parts of 4,096");
    assert!(parts.iter().all(|p| utf16(p) <= 4096));
    let words: usize = parts.iter().map(|p| p.split_whitespace().count()).sum();
    assert_eq!(words, 2000, "no word lost or broken");
    let tries = fake.calls().iter().filter(|c| *c == "sendmessage").count();
    assert_eq!(tries, 5, "two 429s retried");
    // Only the first part is a reply to the question.
    let sent = fake.sent();
    assert!(sent[0].get("reply_parameters").is_some());
    assert!(sent[1].get("reply_parameters").is_none());
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_whose_handling_panics_is_acknowledged_skipped_and_the_next_answered() {
    let h = Harness::offline().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let handler = Arc::new(PanicsOn {
        bot: h.bot.clone(),
        needle: "BOOM",
        panicked: AtomicUsize::new(0),
    });
    let running = start_with(&h, handler.clone(), &fake, TOKEN);
    fake.push_text(&alice_dm(), ALICE, "BOOM remember that I love Rust", false);
    fake.push_text(&alice_dm(), ALICE, "remember that I like tea", false);
    fake.wait_sent(1, WITHIN).await;
    let bob = Chat::Private {
        id: 1002,
        name: "Bob".into(),
    };
    fake.push_text(&bob, BOB, "remember that I play chess", false);
    fake.wait_sent(2, WITHIN).await;
    assert_eq!(handler.panicked.load(Ordering::SeqCst), 1);
    assert!(
        fake.sent_to(1001)[0].starts_with("Got it"),
        "{:?}",
        fake.sent()
    );
    assert!(
        fake.sent_to(1002)[0].starts_with("Got it"),
        "{:?}",
        fake.sent()
    );
    // The adapter is still running and stops cleanly.
    running.stop().await.unwrap();

    // After a restart the panicking update is not delivered again: it was acknowledged.
    let running = start_with(&h, handler.clone(), &fake, TOKEN);
    fake.push_text(&alice_dm(), ALICE, "/memory", false);
    fake.wait_sent(3, WITHIN).await;
    assert_eq!(handler.panicked.load(Ordering::SeqCst), 1, "redelivered");
    let memory = fake.sent_to(1001).pop().unwrap();
    assert!(memory.contains("I like tea"), "{memory}");
    assert!(
        !memory.contains("I love Rust"),
        "the panicking update was skipped: {memory}"
    );
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chats_are_served_at_once_and_each_chat_in_order() {
    // The held call must not time out while the other chat is served.
    let h = Harness::build(true, |c| c.llm.timeout_secs = 120.0).await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    // Alice's question needs the model, which does not answer until released.
    h.fake().hold();
    fake.push_text(&alice_dm(), ALICE, "how was your day?", false);
    let bob = Chat::Private {
        id: 1002,
        name: "Bob".into(),
    };
    let asked: Vec<i64> = (0..5)
        .map(|i| fake.push_text(&bob, BOB, &format!("/memory search thing{i}"), false))
        .collect();
    // Bob's five answers come while Alice's model call is still held: one slow answer holds
    // up only its own chat.
    fake.wait_sent(5, WITHIN).await;
    assert!(fake.sent_to(1001).is_empty(), "{:?}", fake.sent());
    // In Bob's chat, in the order asked.
    let answered: Vec<i64> = fake
        .sent()
        .iter()
        .filter(|m| m["chat_id"] == 1002)
        .map(|m| m["reply_parameters"]["message_id"].as_i64().unwrap())
        .collect();
    assert_eq!(answered, asked);
    h.fake().release();
    fake.wait_sent(6, WITHIN).await;
    assert_eq!(fake.sent_to(1001).len(), 1);
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_unfinished_at_shutdown_comes_again_after_the_restart() {
    let h = Harness::build(true, |c| c.llm.timeout_secs = 120.0).await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let bob = Chat::Private {
        id: 1002,
        name: "Bob".into(),
    };
    // Alice's question waits on the model; Bob's is answered, and a later update of his too.
    let running = start_with_grace(&h, h.bot.clone(), &fake, TOKEN, Duration::ZERO);
    h.fake().hold();
    fake.push_text(&alice_dm(), ALICE, "how was your day?", false);
    h.fake().wait_seen(1, WITHIN).await;
    fake.push_text(&bob, BOB, "/memory", false);
    fake.wait_sent(1, WITHIN).await;
    // Stopped with no grace: Alice's update is cut off, unanswered.
    running.stop().await.unwrap();
    assert!(fake.sent_to(1001).is_empty());
    h.fake().release();
    // After the restart Telegram delivers it again, and only it: Bob's is not answered twice.
    let running = start(&h, &fake, TOKEN);
    fake.wait_sent(2, WITHIN).await;
    assert_eq!(fake.sent_to(1001).len(), 1, "{:?}", fake.sent());
    fake.push_text(&bob, BOB, "/memory", false);
    fake.wait_sent(3, WITHIN).await;
    // Stopping lets every chat finish: a second answer to Bob's first message would be sent
    // by now.
    running.stop().await.unwrap();
    assert_eq!(fake.sent_to(1001).len(), 1, "{:?}", fake.sent());
    assert_eq!(fake.sent_to(1002).len(), 2, "{:?}", fake.sent());
}

/// A photo whose description a stop cut off (the vision model still working, no grace) keeps
/// its bare line; Telegram delivers the update again after the restart, and then the photo is
/// described: the message is stored once, with the description, and answered once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_cut_off_before_its_description_is_described_when_delivered_again() {
    let h = Harness::build(true, |c| {
        c.llm.vision_model = "fake-vision".into();
        c.llm.timeout_secs = 120.0;
    })
    .await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start_with_grace(&h, h.bot.clone(), &fake, TOKEN, Duration::ZERO);
    h.fake().hold();
    let shot = b"\x89PNG\r\n\x1a\n\0ImportError: no module named frobnitz\0\x01";
    fake.push_file(
        &alice_dm(),
        ALICE,
        TgFile::Photo(shot),
        "my screen right now",
        None,
    );
    h.fake().wait_seen(1, WITHIN).await;
    assert_eq!(
        h.fake().count("describe_image"),
        1,
        "the description is under way"
    );
    running.stop().await.unwrap();
    let stored = database_text(&h).await;
    assert!(
        stored.contains("my screen right now\n[image#1 photo.jpg]") && !stored.contains("frobnitz"),
        "stored before the model, bare: {stored}"
    );
    h.fake().release();

    let running = start(&h, &fake, TOKEN);
    fake.wait_sent(1, WITHIN).await;
    running.stop().await.unwrap();
    assert_eq!(h.fake().count("describe_image"), 2);
    // (A row of `rows_of` is the first line of its text.)
    let kept = rows_of(&h, "messages", "| 1001:1 |").await;
    assert_eq!(kept.len(), 1, "stored once: {kept:#?}");
    let stored = database_text(&h).await;
    assert!(
        stored.contains(
            "my screen right now\n[image#1 photo.jpg] a picture saying ImportError: no module named frobnitz"
        ),
        "{stored}"
    );
    assert_eq!(fake.sent_to(1001).len(), 1, "{:?}", fake.sent());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_wait_beyond_the_cap_drops_that_part_and_the_chat_goes_on() {
    let h = Harness::offline().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    // An hour's wait is not honoured: that answer is dropped (logged), the next one is sent.
    fake.rate_limit_next_for(1, 3600);
    fake.push_text(&alice_dm(), ALICE, "remember that I love Rust", false);
    fake.push_text(&alice_dm(), ALICE, "/memory", false);
    fake.wait_sent(1, WITHIN).await;
    let sent = fake.sent_to(1001);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].contains("I love Rust"), "{sent:?}");
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_stops_with_a_clear_error() {
    let h = Harness::offline().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, "4242:wrong");
    let result = tokio::time::timeout(WITHIN, running.task)
        .await
        .expect("a refused token ends the adapter")
        .unwrap();
    assert!(matches!(result, Err(TelegramError::BadToken)), "{result:?}");
    assert!(result.unwrap_err().to_string().contains("TELEGRAM_TOKEN"));
}

/// `engram run` as a user starts it: TELEGRAM_TOKEN set, the API URL a setting. A good token
/// serves until SIGTERM and exits cleanly; a refused one exits with a clear error. Neither
/// prints the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engram_run_serves_telegram_until_sigterm_and_never_logs_the_token() {
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |token: &str| {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"));
        cmd.arg("run")
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for (k, _) in
            std::env::vars().filter(|(k, _)| k.starts_with("ENGRAM") || k.ends_with("_TOKEN"))
        {
            cmd.env_remove(k);
        }
        cmd.env("TELEGRAM_TOKEN", token)
            .env("ENGRAM__TELEGRAM__API_URL", fake.url())
            .env("ENGRAM__EMBED__PROVIDER", "none")
            .env("ENGRAM__LOG__LEVEL", "debug");
        cmd.spawn().expect("engram starts")
    };

    let refused = tokio::time::timeout(WITHIN, run("4242:wrong").wait_with_output())
        .await
        .expect("a refused token ends the process")
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(err.contains("Telegram refused the bot token"), "{err}");
    assert!(!err.contains("4242:wrong"), "the token was printed: {err}");

    let child = run(TOKEN);
    fake.push_text(&alice_dm(), ALICE, "remember that I love Rust", false);
    fake.wait_sent(1, WITHIN).await;
    assert!(fake.sent_to(1001)[0].starts_with("Got it"));
    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = tokio::time::timeout(WITHIN, child.wait_with_output())
        .await
        .expect("SIGTERM stops the bot")
        .unwrap();
    let logs =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{logs}");
    assert!(logs.contains("shutting down"), "{logs}");
    assert!(!logs.contains(TOKEN), "the token was printed: {logs}");
}

/// Telegram people go by @username: mentions resolve through it, a name two people share is
/// asked about instead of guessed (a member renaming themselves gains nothing), a group's
/// administrators are its moderators, an edit replaces the old text, and nothing is sent with
/// a parse mode.
async fn usernames_admins_and_edits(url: Option<String>) {
    let h = harness_on(url, false).await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    fake.set_admins(-100600, &[(2003, "Carol")]);
    let running = start(&h, &fake, TOKEN);
    let lab = Chat::Group {
        id: -100600,
        title: "Lab".into(),
        topic: None,
    };
    let dana = TgUser {
        id: 2001,
        name: "Dana",
        username: Some("dana_k"),
    };
    let alice = TgUser {
        id: 2002,
        name: "Alice",
        username: Some("alice_w"),
    };
    let carol = TgUser {
        id: 2003,
        name: "Carol",
        username: Some("carol_c"),
    };
    let eve = TgUser {
        id: 2004,
        name: "Dana",
        username: Some("eve_x"),
    };
    let bot = format!("@{BOT_USERNAME}");
    let mut sent = 0;
    let mut ask = |who: &TgUser<'_>, text: &str| {
        fake.push_from(&lab, who, &format!("{bot} {text}"), false);
        sent += 1;
        sent
    };
    let n = ask(&dana, "remember that I run the book club");
    fake.wait_sent(n, WITHIN).await;
    let n = ask(&alice, "what do you know about @dana_k");
    fake.wait_sent(n, WITHIN).await;
    let answer = fake.sent_to(-100600).pop().unwrap();
    assert!(answer.contains("book club"), "by username: {answer}");

    // Eve calls herself "Dana" too: the name is no longer enough.
    fake.push_from(&lab, &eve, "hi all", false);
    let n = ask(&alice, "what do you know about Dana");
    fake.wait_sent(n, WITHIN).await;
    let answer = fake.sent_to(-100600).pop().unwrap();
    assert!(
        answer.contains("More than one")
            && answer.contains("@dana_k")
            && !answer.contains("book club"),
        "{answer}"
    );
    // Telling about "Dana" is asked about too, never put on the oldest Dana.
    let n = ask(&alice, "remember this about Dana: she hates the book club");
    fake.wait_sent(n, WITHIN).await;
    let answer = fake.sent_to(-100600).pop().unwrap();
    assert!(answer.contains("More than one"), "{answer}");
    let dana_id = h
        .store
        .find_identity(Platform::Telegram, "2001")
        .await
        .unwrap()
        .unwrap();
    assert!(h.store.hearsay(dana_id, None).await.unwrap().is_empty());

    // Moderators are the group's administrators.
    let n = ask(&alice, "forget everything about @dana_k");
    fake.wait_sent(n, WITHIN).await;
    let answer = fake.sent_to(-100600).pop().unwrap();
    assert!(answer.contains("Only Dana"), "{answer}");
    let n = ask(&carol, "forget everything about @dana_k");
    fake.wait_sent(n, WITHIN).await;
    let answer = fake.sent_to(-100600).pop().unwrap();
    assert!(
        answer.starts_with("Done"),
        "an administrator moderates: {answer}"
    );
    let n = ask(&alice, "what do you know about @dana_k");
    fake.wait_sent(n, WITHIN).await;
    assert!(!fake.sent_to(-100600).pop().unwrap().contains("book club"));

    // An edit replaces the text (handled before the next message is answered).
    let id = fake.push_from(&lab, &dana, "the club meets at the Lighthouse cafe", false);
    let n = ask(&alice, "help");
    fake.wait_sent(n, WITHIN).await;
    assert!(
        !rows_holding(&h, "lighthouse").await.is_empty(),
        "positive control: stored and posted"
    );
    fake.push_edit(&lab, &dana, id, "the club meets at the Harbour pub");
    let n = ask(&alice, "help");
    fake.wait_sent(n, WITHIN).await;
    assert!(rows_holding(&h, "lighthouse").await.is_empty());
    assert!(!rows_holding(&h, "harbour").await.is_empty());
    // A link code posted in the group is dead at once, however it is spelled out.
    let dana_dm = Chat::Private {
        id: 2001,
        name: "Dana".into(),
    };
    let n = fake.sent().len() + 1;
    fake.push_from(&dana_dm, &dana, "/memory link", false);
    fake.wait_sent(n, WITHIN).await;
    let code = code_in(&fake.sent_to(2001).pop().unwrap());
    let spaced = code.replace('-', " ").to_lowercase();
    fake.push_from(&lab, &dana, &format!("oops, my code: {spaced}"), false);
    let n = fake.sent().len() + 1;
    fake.push_from(&lab, &alice, &format!("{bot} help"), false);
    fake.wait_sent(n, WITHIN).await;
    let stolen = platform_message(
        Platform::Discord,
        "d-eve",
        &format!("/memory link {code}"),
        false,
    );
    let reply = h.bot.handle(&stolen).await.unwrap().unwrap().text;
    assert!(
        reply.contains("unknown"),
        "a code seen in the group still works: {reply}"
    );
    for half in code.split('-') {
        assert!(
            rows_holding(&h, half).await.is_empty(),
            "{half} of the code stored"
        );
    }
    for m in fake.sent() {
        assert!(
            m.get("parse_mode").is_none(),
            "plain text, never markup: {m}"
        );
    }
    running.stop().await.unwrap();
}

on_both_harnesses!(usernames_admins_and_edits);

postgres_test! {
    /// `engram run` twice with one token on one PostgreSQL (docker-compose's `--scale`): one
    /// process polls (Telegram's 409 Conflict never happens while both run), every update is
    /// answered exactly once, and when the poller is killed the other polls within the lease
    /// time, answering what the dead one left unacknowledged only if it was not answered.
    async fn processes_elect_one_telegram_poller() {
        let url = fresh_postgres_url().await;
        let fake = FakeTelegram::start(TOKEN).await.unwrap();
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
                    ("TELEGRAM_TOKEN", TOKEN),
                    ("ENGRAM__TELEGRAM__API_URL", &api),
                    ("ENGRAM__TELEGRAM__POLL_SECS", "1"),
                    ("ENGRAM__TELEGRAM__POLLER_LEASE_SECS", &lease),
                ],
            )
        };
        let mut procs = [run(dirs[0].path(), ports[0]), run(dirs[1].path(), ports[1])];
        // Both are up (one polling, one standing by, both ready) before anything is sent.
        for port in ports {
            wait_ready(port).await;
        }
        let pids = [procs[0].id().unwrap(), procs[1].id().unwrap()];
        let say = |n: usize| {
            fake.push_text(&alice_dm(), ALICE, &format!("hello number {n}"), false);
        };
        for n in 1..=3 {
            say(n);
        }
        fake.wait_sent(3, WITHIN).await;

        assert_eq!(fake.conflicts(), 0, "never two consumers at once");
        // The lease names the poller's process.
        let store = open_url(&url).await;
        let name = engram::app::telegram_lease_name(TOKEN);
        let holder = |h: &str| pids.iter().position(|p| h.contains(&format!("-{p}-")));
        let (first, _) = store.lease_holder(&name).await.unwrap().expect("a poller");
        let poller = holder(&first).expect("one of the two");
        // `engram status` shows operators which process polls (the lease names a hash of the
        // token, never the token).
        let mut status = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"));
        status.arg("status").current_dir(dirs[0].path());
        for (k, _) in
            std::env::vars().filter(|(k, _)| k.starts_with("ENGRAM") || k.ends_with("_TOKEN"))
        {
            status.env_remove(k);
        }
        let out = status
            .env("ENGRAM__STORE__URL", &url)
            .env("ENGRAM__EMBED__PROVIDER", "none")
            .output()
            .await
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let leases = report["leases"].as_array().expect("a list of leases");
        assert!(
            leases
                .iter()
                .any(|l| l["name"] == name.as_str() && l["holder"] == first.as_str()),
            "{report}"
        );
        assert!(!report.to_string().contains(TOKEN), "{report}");

        // Kill it (no goodbye): the other takes over and answers what comes next.
        procs[poller].start_kill().unwrap();
        procs[poller].wait().await.unwrap();
        let killed = std::time::Instant::now();
        for n in 4..=6 {
            say(n);
        }
        fake.wait_sent(6, WITHIN).await;
        let took = killed.elapsed();
        assert!(
            took < Duration::from_secs(lease_secs + 3),
            "polling moved within the lease time: {took:?}"
        );
        let (next, _) = store.lease_holder(&name).await.unwrap().expect("a poller");
        assert_eq!(holder(&next), Some(1 - poller), "{next}");

        // Exactly once: one reply per message, each message stored once.
        say(7);
        fake.wait_sent(7, WITHIN).await;
        assert_eq!(fake.sent_to(1001).len(), 7, "{:?}", fake.sent_to(1001));
        let stored = store.table_counts().await.unwrap();
        let messages = stored.iter().find(|t| t.table == "messages").unwrap().rows;
        assert_eq!(messages, 14, "7 messages and 7 replies");

        // A process that stops gives the lease up.
        let other = &mut procs[1 - poller];
        let pid = other.id().unwrap().to_string();
        std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        tokio::time::timeout(WITHIN, other.wait()).await.expect("it stops").unwrap();
        assert_eq!(store.lease_holder(&name).await.unwrap(), None);
    }
}

/// Each piece of a file is stored in the language it is written in (not the language of the
/// caption that carried it): a German file with an English caption, an English one with a
/// German caption. (One line each: a row of `rows_of` is one line of text.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_piece_of_a_file_keeps_its_own_language() {
    let h = Harness::with_llm().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let dm = alice_dm();
    for (name, text, caption) in [
        (
            "umzug.md",
            "Wir ziehen im Mai nach Hamburg, die neue Wohnung hat drei Zimmer und einen Balkon.\n",
            "here are the notes I wrote for the move, can you keep them for me",
        ),
        (
            "moving.md",
            "We are moving to Hamburg in May, the new flat has three rooms and a balcony.\n",
            "hier sind meine Notizen für den Umzug, die ich für dich aufgeschrieben habe",
        ),
    ] {
        fake.push_file(
            &dm,
            ALICE,
            TgFile::Document(name, "text/markdown", text.as_bytes()),
            caption,
            None,
        );
    }
    fake.wait_sent(2, WITHIN).await;
    running.stop().await.unwrap();
    for (name, code) in [("umzug.md", "de"), ("moving.md", "en")] {
        let pieces = rows_of(&h, "messages", &format!("{name}, part")).await;
        assert_eq!(pieces.len(), 1, "{pieces:#?}");
        assert!(
            pieces[0].ends_with(&format!(" | {code}")),
            "{name}: {pieces:#?}"
        );
    }
}

/// Asks `question` in Alice's private chat, where the answer must recall `needle` (the
/// positive control), and in a group where nothing was ever said, by Alice herself and by
/// Carol, where it must not; `sent` answers came before.
async fn recalled_in_private_only(fake: &FakeTelegram, question: &str, needle: &str, sent: usize) {
    fake.push_text(&alice_dm(), ALICE, question, false);
    fake.wait_sent(sent + 1, WITHIN).await;
    let mine = fake.sent_to(1001).last().cloned().unwrap();
    assert!(mine.contains(needle), "positive control: {mine}");
    let other = Chat::Group {
        id: -600,
        title: "Other".into(),
        topic: None,
    };
    fake.push_text(
        &other,
        (1003, "Carol"),
        &format!("@{BOT_USERNAME} {question}"),
        false,
    );
    fake.wait_sent(sent + 2, WITHIN).await;
    let theirs = fake.sent_to(-600).last().cloned().unwrap();
    assert!(!theirs.contains(needle), "{theirs}");
    fake.push_text(&other, ALICE, &format!("@{BOT_USERNAME} {question}"), false);
    fake.wait_sent(sent + 3, WITHIN).await;
    let hers = fake.sent_to(-600).last().cloned().unwrap();
    assert!(!hers.contains(needle), "{hers}");
}

/// A hostile PDF costs the process that reads it, never the bot: forms that draw themselves
/// without end (the parser's stack overflows: a crash no `catch_unwind` stops) and forms that
/// draw each other 2^40 times (the parser never ends) are each kept with why they were not
/// read, the bot answers every message as usual, and a good PDF after them is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_pdf_never_stops_the_bot() {
    use engram::ingest::attachments::{pdf_drawing_forms, pdf_with};
    let h = Harness::build(true, |c| c.attachments.pdf_timeout_secs = 2.0).await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let dm = alice_dm();
    let report = pdf_with("Quarterly report: the widgets shipped late");
    for (name, bytes) in [
        ("loop.pdf", pdf_drawing_forms(1, true)),
        ("fan.pdf", pdf_drawing_forms(40, false)),
        ("report.pdf", report),
    ] {
        fake.push_file(
            &dm,
            ALICE,
            TgFile::Document(name, "application/pdf", &bytes),
            "",
            None,
        );
    }
    fake.wait_sent(3, WITHIN).await;
    let stored = database_text(&h).await;
    for text in [
        "[file#1 loop.pdf] not read: not a readable PDF",
        "[file#2 fan.pdf] not read: the PDF took too long to read",
        "[file#3 report.pdf] Quarterly report: the widgets shipped late",
    ] {
        assert!(stored.contains(text), "{text}: {stored}");
    }
    running.stop().await.unwrap();
}

/// A file larger than Telegram said (in the message and in getFile) is stopped at
/// `attachments.max_bytes` as its bytes arrive, never read whole; the message is kept with
/// why. A file within the limit is read (the control).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_larger_than_stated_stops_at_the_limit() {
    let h = Harness::build(true, |c| c.attachments.max_bytes = 1000).await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let dm = alice_dm();
    let big = vec![b'a'; 200_000];
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Document("big.txt", "text/plain", &big),
        "",
        Some(10),
    );
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Document("small.txt", "text/plain", b"the picnic is by the lake"),
        "",
        None,
    );
    fake.wait_sent(2, WITHIN).await;
    assert_eq!(
        fake.file_gets(),
        2,
        "both fetched: the first said it was small"
    );
    let stored = database_text(&h).await;
    for text in [
        "[file big.txt] not read: too large (over 1000 bytes)",
        "[file#1 small.txt] the picnic is by the lake",
    ] {
        assert!(stored.contains(text), "{text}: {stored}");
    }
    running.stop().await.unwrap();
}

/// Attachments through the real teloxide client (getFile, then the file from the fake
/// server): a Markdown document's (and a PDF's) text is kept in pieces that search finds in the private chat
/// it was sent in and never in a group; a photo, a voice note and files that cannot be read
/// (too large: not even downloaded; not text; a broken PDF) are kept by name with the message; the same file
/// twice is kept once; forgetting the message takes its pieces and the file with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_are_kept_as_text_in_their_place() {
    let h = Harness::with_llm().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let group = Chat::Group {
        id: -500,
        title: "Lab".into(),
        topic: None,
    };
    let notes = "# Setup\nInstall with pip.\n\n# Errors\nImportError: no module named frobnicate\n";
    let dm = alice_dm();
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Document("notes.md", "text/markdown", notes.as_bytes()),
        "my setup notes",
        None,
    );
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Photo(b"\xFF\xD8\xFFjpeg"),
        "the sunset at Cabo da Roca",
        None,
    );
    fake.push_file(&dm, ALICE, TgFile::Voice(b"OggS voice"), "", None);
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Document("big.txt", "text/plain", b"small really"),
        "",
        Some(50_000_000),
    );
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Document("data.json", "application/json", b"\xFF\xFE\x00broken"),
        "",
        None,
    );
    let report =
        engram::ingest::attachments::pdf_with("Quarterly report: the widgets shipped late");
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Document("report.pdf", "application/pdf", &report),
        "",
        None,
    );
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Document("broken.pdf", "application/pdf", b"%PDF-1.4 not really"),
        "",
        None,
    );
    fake.wait_sent(7, WITHIN).await;
    // Every message was stored, whatever became of its file; the oversized one was not fetched.
    assert_eq!(fake.file_gets(), 6);
    let stored = database_text(&h).await;
    for text in [
        "my setup notes\n[file#1 notes.md] # Setup Install with pip. # Errors ImportError: no module named frobnicate",
        "the sunset at Cabo da Roca\n[image#2 photo.jpg]",
        "[voice#3 voice.ogg] voice note",
        "[file big.txt] not read: too large (50000000 bytes)",
        "[file#4 data.json] not read: not text",
        "[file#5 report.pdf] Quarterly report: the widgets shipped late",
        "[file#6 broken.pdf] not read: not a readable PDF",
    ] {
        assert!(stored.contains(text), "{text}: {stored}");
    }
    // Both sections fit one piece of `attachments.chunk_chars`.
    let pieces = rows_of(&h, "messages", "notes.md, part").await;
    assert_eq!(pieces.len(), 1, "{pieces:#?}");
    assert!(
        pieces.iter().all(|r| r.contains(" | dm:")),
        "in her private chat's scope: {pieces:#?}"
    );

    // The same file in a group is the group's own: a new id, so its line says nothing of
    // the private chat's copy (an old id would tell the group someone sent it before).
    // Twice in the group, it is kept once there.
    for _ in 0..2 {
        fake.push_file(
            &group,
            BOB,
            TgFile::Document("notes.md", "text/markdown", notes.as_bytes()),
            "",
            None,
        );
    }
    fake.push_text(&group, BOB, &format!("@{BOT_USERNAME} hello"), false);
    fake.wait_sent(8, WITHIN).await;
    let kept = rows_of(&h, "attachments", "notes.md").await;
    assert_eq!(
        kept.len(),
        2,
        "once in private, once in the group: {kept:#?}"
    );
    let in_group: Vec<String> = rows_of(&h, "messages", "[file#7 notes.md] # Setup")
        .await
        .into_iter()
        .filter(|r| r.contains(" | space:"))
        .collect();
    assert_eq!(
        in_group.len(),
        2,
        "both group messages carry #7: {in_group:#?}"
    );
    assert!(
        rows_of(&h, "messages", "[file#1 notes.md]")
            .await
            .iter()
            .all(|r| r.contains(" | dm:")),
        "the private chat's id never shows in the group"
    );
    // Six kept in private (not the one too large to fetch), and the group's two.
    assert_eq!(rows_of(&h, "message_attachments", "").await.len(), 8);

    // Asked about it in private, the answer recalls the piece; in another group it never does.
    recalled_in_private_only(
        &fake,
        "what was the ImportError in my notes about frobnicate?",
        "no module named frobnicate",
        8,
    )
    .await;
    running.stop().await.unwrap();

    // Deleting the message on the platform takes its pieces, and every answer that recalled
    // them, from her private chat; the file stays while the group's message carries it.
    let first = "1001:1";
    let gone = h
        .bot
        .deleted(Platform::Telegram, "1001", "1001", &[first.to_string()])
        .await
        .unwrap();
    assert!(gone >= 2, "the message and its piece: {gone}");
    let left: Vec<String> = rows_of(&h, "messages", "no module named")
        .await
        .into_iter()
        .filter(|r| r.contains(" | dm:"))
        .collect();
    assert!(left.is_empty(), "{left:#?}");
    assert_eq!(
        rows_of(&h, "attachments", "notes.md").await.len(),
        1,
        "the group's own copy stays"
    );
}

/// Images and recordings through the real teloxide client, with a vision model and a
/// speech-to-text model (the fake server's): a photo gets a short description in its line
/// (which the answer to it already sees) and its detailed description and visible text as
/// pieces in the private chat's scope; a voice note gets its transcript; bytes that are not an
/// image are never sent to the model; the same photo again costs no second call; a garbled
/// answer leaves the bare line and the message; the description never surfaces in another
/// group, and deleting the messages takes every word of it with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_and_voice_notes_are_described_in_their_place() {
    let h = Harness::build(true, |c| {
        c.llm.vision_model = "fake-vision".into();
        c.llm.transcription_model = "fake-whisper".into();
    })
    .await;
    let llm = h.fake.as_ref().unwrap();
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let dm = alice_dm();
    let shot = b"\x89PNG\r\n\x1a\n\0ImportError: no module named frobnitz\0\x01";
    let first = fake.push_file(&dm, ALICE, TgFile::Photo(shot), "my screen right now", None);
    fake.wait_sent(1, WITHIN).await;
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Voice(b"OggS\0\x02remind me to buy oat milk on friday\0"),
        "",
        None,
    );
    fake.wait_sent(2, WITHIN).await;
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Photo(b"<html>a 404 page</html>"),
        "",
        None,
    );
    fake.wait_sent(3, WITHIN).await;
    // An audio file (Telegram's `audio`, an MP3 with a caption): transcribed too.
    fake.push_file(
        &dm,
        ALICE,
        TgFile::Audio(
            "standup.mp3",
            b"ID3\x04\0the standup moves to half past ten\0",
        ),
        "for the team",
        None,
    );
    fake.wait_sent(4, WITHIN).await;
    assert_eq!(llm.count("describe_image"), 1, "not an image: not sent");
    assert_eq!(llm.count("transcribe"), 2);
    let asked = llm
        .requests()
        .into_iter()
        .find(|r| r.task == "describe_image")
        .unwrap();
    // The bytes alone: no caption or name shapes what another copy of them says.
    let sent = asked.body.to_string();
    assert!(
        !sent.contains("my screen") && !sent.contains("photo.jpg"),
        "{sent}"
    );
    assert_eq!(asked.body["model"], "fake-vision");
    let image = asked.body["messages"][1]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(image.starts_with("data:image/png;base64,"), "{image}");
    let stored = database_text(&h).await;
    for kept in [
        "my screen right now\n[image#1 photo.jpg] a picture saying ImportError: no module named frobnitz",
        "[image#1 photo.jpg, text] ImportError: no module named frobnitz",
        "[voice#2 voice.ogg] voice note: remind me to buy oat milk on friday",
        "[image#3 photo.jpg]",
        "for the team\n[audio#4 standup.mp3] audio: the standup moves to half past ten",
    ] {
        assert!(stored.contains(kept), "{kept}: {stored}");
    }
    assert!(
        rows_of(&h, "messages", "photo.jpg, ")
            .await
            .iter()
            .all(|r| r.contains(" | dm:")),
        "the pieces are in her private chat's scope"
    );
    // The answer to the photo was made after its description joined it.
    let answers = fake.sent_to(1001);
    assert!(
        answers[0].contains("a picture saying ImportError"),
        "{answers:?}"
    );
    // A voice note without a word is answered as what was said in it.
    assert!(
        answers[1].contains("remind me to buy oat milk"),
        "{answers:?}"
    );

    // The same photo in a group is described again, under an id of the group's: neither
    // the id nor an answer without a model call tells the group that someone sent it
    // before. The same photo again in the group is described from what was kept there.
    let group = Chat::Group {
        id: -500,
        title: "Lab".into(),
        topic: None,
    };
    let group_photo = fake.push_file(&group, BOB, TgFile::Photo(shot), "", None);
    fake.push_text(&group, BOB, &format!("@{BOT_USERNAME} hello"), false);
    fake.wait_sent(5, WITHIN).await;
    assert_eq!(
        llm.count("describe_image"),
        2,
        "described again in the group"
    );
    let again = fake.push_file(&group, BOB, TgFile::Photo(shot), "", None);
    fake.push_text(&group, BOB, &format!("@{BOT_USERNAME} hello again"), false);
    fake.wait_sent(6, WITHIN).await;
    assert_eq!(
        llm.count("describe_image"),
        2,
        "kept in the group: no third call"
    );
    let in_group: Vec<String> = rows_of(&h, "messages", "[image#5 photo.jpg] a picture saying")
        .await
        .into_iter()
        .filter(|r| r.contains(" | space:"))
        .collect();
    assert_eq!(in_group.len(), 2, "{in_group:#?}");
    assert!(
        rows_of(&h, "messages", "[image#1 photo.jpg")
            .await
            .iter()
            .all(|r| r.contains(" | dm:")),
        "the private chat's id never shows in the group"
    );

    // A garbled answer: the message and its bare line stay, nothing else is kept.
    llm.push_once(Behavior::InvalidJson);
    let other_shot = b"\x89PNG\r\n\x1a\n\0a chart of quarterly sales\0";
    fake.push_file(&dm, ALICE, TgFile::Photo(other_shot), "sales", None);
    fake.wait_sent(7, WITHIN).await;
    assert_eq!(llm.count("describe_image"), 3);
    let stored = database_text(&h).await;
    let at = stored
        .find("sales\n[image#")
        .expect("the message is stored");
    let text = stored[at..].split(" | ").next().unwrap();
    assert!(text.ends_with(" photo.jpg]"), "the bare line: {text}");
    assert!(!stored.contains("quarterly sales"), "{stored}");

    // In her private chat the screenshot is recalled; in a group where it was never sent, not.
    recalled_in_private_only(
        &fake,
        "what did the ImportError screenshot say?",
        "no module named frobnitz",
        7,
    )
    .await;
    running.stop().await.unwrap();

    // Deleting both messages that carried it takes the description, its pieces, the answers
    // that quoted it and the kept surrogate: no word of it is left anywhere.
    h.bot
        .deleted(
            Platform::Telegram,
            "1001",
            "1001",
            &[format!("1001:{first}")],
        )
        .await
        .unwrap();
    assert!(
        database_text(&h).await.contains("frobnitz"),
        "positive control: the group's copy is still there"
    );
    h.bot
        .deleted(
            Platform::Telegram,
            "-500",
            "main",
            &[format!("-500:{group_photo}"), format!("-500:{again}")],
        )
        .await
        .unwrap();
    let left = database_text(&h).await;
    assert!(!left.contains("frobnitz"), "{left}");
}

/// A forget that matches only a piece of a file's text (here the end of a voice note's
/// transcript, past what its line shows) takes that piece and the description kept for the
/// file's bytes (which would give it back when the same file comes again): no word of it is
/// left anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forget_of_a_transcripts_end_leaves_no_copy_of_it() {
    let h = Harness::build(true, |c| {
        c.llm.transcription_model = "fake-whisper".into();
    })
    .await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let dm = alice_dm();
    let said = "I am at the clinic on Monday morning for the yearly check of my knee, then I go \
        to the office, then to the gym, and in the evening I cook dinner for my parents who come \
        to visit from Porto for the weekend. My badge number is 4471.";
    let voice = [b"OggS\0\x02".as_slice(), said.as_bytes(), b"\0"].concat();
    fake.push_file(&dm, ALICE, TgFile::Voice(&voice), "", None);
    fake.wait_sent(1, WITHIN).await;
    let line: Vec<String> = rows_of(&h, "messages", "[voice#1 voice.ogg] voice note:")
        .await
        .into_iter()
        .filter(|r| r.contains(" | 1001:1 | "))
        .collect();
    assert!(
        line.len() == 1 && !line[0].contains("4471"),
        "the line shows the start only: {line:#?}"
    );
    assert!(
        rows_of(&h, "messages", "transcript")
            .await
            .iter()
            .any(|r| r.contains("4471")),
        "positive control: a piece holds it"
    );
    assert!(
        rows_of(&h, "attachments", "4471").await.len() == 1,
        "and the kept description"
    );
    fake.push_text(&dm, ALICE, "forget that my badge number is 4471", false);
    fake.wait_sent(2, WITHIN).await;
    running.stop().await.unwrap();
    let left = database_text(&h).await;
    assert!(!left.contains("4471"), "{left}");
}

/// Files the settings keep from being read: one from a file server slower than
/// `attachments.timeout_secs`, and a video (`attachments.skip_types`, never fetched). Each
/// message is stored and answered with its file kept by name and why it was not read; the
/// same file, once the server answers, is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_the_settings_refuse_leave_the_message() {
    // The held download never ends, so the time only has to leave the answering server
    // room (a loaded test machine) for the positive control.
    let h = Harness::build(true, |c| c.attachments.timeout_secs = 3.0).await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let dm = alice_dm();
    let notes = TgFile::Document("slow.md", "text/markdown", b"# Plan\nship the widgets\n");
    fake.hold_files(true);
    fake.push_file(&dm, ALICE, notes, "the slow notes", None);
    fake.wait_sent(1, WITHIN).await;
    let stored = database_text(&h).await;
    assert!(
        stored.contains("the slow notes\n[file slow.md] not read: download timed out"),
        "{stored}"
    );
    assert!(!stored.contains("ship the widgets"), "{stored}");
    let gets = fake.file_gets();
    let clip = TgFile::Document("demo.mp4", "video/mp4", b"\0\0\0\x20ftypisom");
    fake.push_file(&dm, ALICE, clip, "our demo", None);
    fake.wait_sent(2, WITHIN).await;
    assert_eq!(fake.file_gets(), gets, "the video is not fetched");
    let stored = database_text(&h).await;
    assert!(
        stored.contains("our demo\n[file demo.mp4] not read: type video/mp4 is not read"),
        "{stored}"
    );
    // Positive control: the same notes from a server that answers are read.
    fake.hold_files(false);
    fake.push_file(&dm, ALICE, notes, "the notes again", None);
    fake.wait_sent(3, WITHIN).await;
    running.stop().await.unwrap();
    let stored = database_text(&h).await;
    assert!(
        stored.contains("the notes again\n[file#1 slow.md] # Plan ship the widgets"),
        "{stored}"
    );
}

/// An edit of a message the bot does not keep (never seen, or deleted) fetches nothing and
/// stores nothing; an edit of one it keeps fetches its file again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_of_messages_not_kept_fetch_nothing() {
    let h = Harness::with_llm().await;
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let group = Chat::Group {
        id: -500,
        title: "Lab".into(),
        topic: None,
    };
    let notes = TgFile::Document("n.md", "text/markdown", b"# Plan\nship it\n");
    let kept = fake.push_file(&group, BOB, notes, "my plan", None);
    fake.push_text(&group, BOB, &format!("@{BOT_USERNAME} hi"), false);
    fake.wait_sent(1, WITHIN).await;
    let gets = fake.file_gets();
    assert_eq!(gets, 1);
    fake.push_file_edit(&group, BOB, 999, notes, "an edit of something never seen");
    fake.push_file_edit(&group, BOB, kept, notes, "my new plan");
    fake.push_text(&group, BOB, &format!("@{BOT_USERNAME} hi again"), false);
    fake.wait_sent(2, WITHIN).await;
    running.stop().await.unwrap();
    // Positive control: the kept one's file was fetched again; the other's never.
    assert_eq!(fake.file_gets(), gets + 1);
    let stored = database_text(&h).await;
    assert!(
        stored.contains("my new plan\n[file#") && stored.contains(" n.md] # Plan"),
        "{stored}"
    );
    assert!(!stored.contains("never seen"), "{stored}");
}

/// Files posted in passing cost their poster only: over her own per-minute limit Mallory's
/// photos keep their bare lines (no call), and the space's answers are all still there for
/// the others; a paused person's photo is never sent to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_posted_in_passing_cost_their_poster_only() {
    let h = Harness::build(true, |c| {
        c.llm.vision_model = "fake-vision".into();
        c.limits.answers_per_person_per_minute = 2;
        c.limits.answers_per_space_per_minute = 3;
    })
    .await;
    let llm = h.fake.as_ref().unwrap();
    let fake = FakeTelegram::start(TOKEN).await.unwrap();
    let running = start(&h, &fake, TOKEN);
    let group = Chat::Group {
        id: -500,
        title: "Lab".into(),
        topic: None,
    };
    let mallory = (1009, "Mallory");
    let photos: Vec<Vec<u8>> = (0..4)
        .map(|n| {
            [
                b"\x89PNG\r\n\x1a\n\0".as_slice(),
                format!("picture number {n}").as_bytes(),
            ]
            .concat()
        })
        .collect();
    for p in &photos {
        fake.push_file(&group, mallory, TgFile::Photo(p), "", None);
    }
    // Three people ask: the space's limit (3) is all theirs.
    for (n, who) in [ALICE, BOB, (1003, "Carol")].into_iter().enumerate() {
        fake.push_text(&group, who, &format!("@{BOT_USERNAME} question {n}"), false);
    }
    fake.wait_sent(3, WITHIN).await;
    assert_eq!(llm.count("describe_image"), 2, "Mallory's own limit");
    let answers = fake.sent_to(-500);
    assert_eq!(answers.len(), 3);
    assert!(
        answers.iter().all(|a| a.contains("(fake reply)")),
        "answered by the model: {answers:?}"
    );
    let described = rows_of(&h, "messages", "] a picture saying picture number").await;
    assert_eq!(described.len(), 2, "{described:#?}");

    // Paused: her photo is stored, never sent.
    fake.push_text(&alice_dm(), ALICE, "/memory pause", false);
    fake.wait_sent(4, WITHIN).await;
    let before = llm.count("describe_image");
    fake.push_file(
        &alice_dm(),
        ALICE,
        TgFile::Photo(b"\x89PNG\r\n\x1a\n\0my passport scan\0"),
        "",
        None,
    );
    fake.wait_sent(5, WITHIN).await;
    running.stop().await.unwrap();
    assert_eq!(llm.count("describe_image"), before);
    assert!(!database_text(&h).await.contains("passport"));
}
