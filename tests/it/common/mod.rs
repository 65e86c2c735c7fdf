//! Test harness: the whole bot on a real SQLite file in a temp dir, a manual clock, and
//! optionally the fake OpenAI-compatible server on 127.0.0.1 driven by the real client.
#![allow(dead_code)]

use chrono::{DateTime, TimeZone, Utc};
pub use engram::adapters::console::ConsoleOptions;
use engram::adapters::console::console_message;
use engram::app;
use engram::bot::Bot;
use engram::config::{Config, Secrets};
pub use engram::domain::Clock;
use engram::domain::{ManualClock, PersonId, Platform, Scope, SpaceKind};
use engram::llm::fake::FakeLlmServer;
use engram::store::Store;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Harness {
    pub bot: Arc<Bot>,
    /// The bot's memory tier (the same parts the bot runs on).
    pub memory: app::Memory,
    pub clock: Arc<ManualClock>,
    pub store: Arc<dyn Store>,
    pub fake: Option<FakeLlmServer>,
    pub config: Config,
    pub dir: tempfile::TempDir,
    seq: AtomicU64,
}

pub fn start_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, 0)
        .single()
        .unwrap()
}

pub fn test_config(dir: &std::path::Path, llm_url: Option<String>) -> Config {
    let mut config = Config::defaults();
    config.store.url = format!("sqlite://{}", dir.join("engram.db").display());
    config.llm.base_url = llm_url.unwrap_or_default();
    config.llm.timeout_secs = 2.0;
    config.llm.max_retries = 1;
    config.llm.backoff_ms = 1;
    config.llm.breaker_failures = 1000;
    config.bot.moderators = vec!["console:mod".into()];
    // Tests talk fast on a clock that stands still: the spending limits are tested on their own.
    config.limits.answers_per_person_per_minute = 0;
    config.limits.answers_per_space_per_minute = 0;
    config.limits.space_daily_llm_budget = 0;
    // Tests show many wrong secrets from one address on purpose: the limit is tested alone.
    config.server.wrong_secrets = 0;
    // Working memory is refreshed only when a test asks (no scheduler runs): soon enough that
    // a short script sees it.
    config.episodes.refresh_messages = 4;
    // Short scripted episodes still get their final details from the model.
    config.episodes.summary_min_messages = 1;
    // PDFs are read by the engram binary (this test program is not one).
    config.attachments.pdf_reader = env!("CARGO_BIN_EXE_engram").into();
    config
}

impl Harness {
    pub async fn offline() -> Harness {
        Harness::build(false, |_| {}).await
    }

    pub async fn with_llm() -> Harness {
        Harness::build(true, |_| {}).await
    }

    pub async fn build(llm: bool, tweak: impl FnOnce(&mut Config)) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let fake = if llm {
            Some(FakeLlmServer::start().await.unwrap())
        } else {
            None
        };
        let mut config = test_config(dir.path(), fake.as_ref().map(|f| f.base_url()));
        tweak(&mut config);
        Harness::assemble(dir, fake, config, Arc::new(ManualClock::new(start_time()))).await
    }

    pub async fn assemble(
        dir: tempfile::TempDir,
        fake: Option<FakeLlmServer>,
        config: Config,
        clock: Arc<ManualClock>,
    ) -> Harness {
        let store = app::open_store(&config).await.unwrap();
        let llm = app::chat_model(&config, &Secrets::default(), clock.clone()).unwrap();
        let transcriber = app::transcriber(&config, &Secrets::default()).unwrap();
        let built = app::build_bot(
            &config,
            store.clone(),
            llm,
            None,
            transcriber,
            clock.clone(),
        )
        .unwrap();
        let (bot, memory) = (Arc::new(built.bot), built.memory);
        memory.manager.follow_changes().await.unwrap();
        Harness {
            bot,
            memory,
            clock,
            store,
            fake,
            config,
            dir,
            seq: AtomicU64::new(0),
        }
    }

    /// A new bot process on the same database and fake server (a restart).
    pub async fn restart(self) -> Harness {
        let Harness {
            dir,
            fake,
            config,
            clock,
            ..
        } = self;
        Harness::assemble(dir, fake, config, clock).await
    }

    /// The daily extraction of this bot's database, with its own LLM client, as `holder`.
    pub fn extractor(&self, holder: &str) -> engram::memory::extraction::Extractor {
        let clock: Arc<dyn Clock> = self.clock.clone();
        let llm = app::chat_model(&self.config, &Secrets::default(), clock.clone())
            .unwrap()
            .expect("the fake LLM");
        app::extractor(
            &self.config,
            self.store.clone(),
            Some(llm),
            clock,
            holder.into(),
            self.memory.prompts.clone(),
        )
        .unwrap()
        .unwrap()
    }

    pub fn fake(&self) -> &FakeLlmServer {
        self.fake.as_ref().expect("harness has a fake LLM")
    }

    /// `who` says `text` where `opts` says; the bot's reply, if any.
    pub async fn say_in(&self, opts: &ConsoleOptions, who: &str, text: &str) -> Option<String> {
        // One counter for all harnesses: two "processes" never reuse a platform message id.
        static MESSAGE_SEQ: AtomicU64 = AtomicU64::new(0);
        let seq = MESSAGE_SEQ.fetch_add(1, Ordering::Relaxed) + self.seq.load(Ordering::Relaxed);
        let msg = console_message(opts, who, text, seq, self.clock.now(), false);
        self.bot
            .handle(&msg)
            .await
            .expect("handled")
            .map(|r| r.text)
    }

    /// In `who`'s private chat with the bot.
    pub async fn dm(&self, who: &str, text: &str) -> String {
        self.say_in(&ConsoleOptions::private(who), who, text)
            .await
            .expect("a DM always gets a reply")
    }

    pub async fn person(&self, name: &str) -> PersonId {
        self.store
            .find_identity(Platform::Console, name)
            .await
            .unwrap()
            .expect("known person")
    }

    pub async fn space_scope(&self, space: &str) -> Scope {
        Scope::Space(
            self.store
                .resolve_space(Platform::Console, space, SpaceKind::Group, space)
                .await
                .unwrap(),
        )
    }

    pub async fn message_count(&self) -> i64 {
        self.store
            .table_counts()
            .await
            .unwrap()
            .iter()
            .find(|t| t.table == "messages")
            .unwrap()
            .rows
    }

    pub async fn fact_versions(&self) -> i64 {
        self.store
            .table_counts()
            .await
            .unwrap()
            .iter()
            .find(|t| t.table == "fact_versions")
            .unwrap()
            .rows
    }
}

/// `n` bots (separate pools, as separate processes have) on `url`, all using `fake`, with one
/// shared manual clock.
pub async fn bots_on(url: &str, fake: &FakeLlmServer, n: usize) -> Vec<Harness> {
    bots_with(url, fake, n, |_| {}).await
}

/// `bots_on`, each configuration changed by `tweak`.
pub async fn bots_with(
    url: &str,
    fake: &FakeLlmServer,
    n: usize,
    tweak: impl Fn(&mut Config),
) -> Vec<Harness> {
    let clock = Arc::new(ManualClock::new(start_time()));
    let mut bots = Vec::new();
    for _ in 0..n {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path(), Some(fake.base_url()));
        config.store.url = url.to_string();
        tweak(&mut config);
        bots.push(Harness::assemble(dir, None, config, clock.clone()).await);
    }
    bots
}

pub fn group(space: &str) -> ConsoleOptions {
    ConsoleOptions {
        speaker: String::new(),
        space: Some(space.to_string()),
        channel: "general".into(),
        restricted: false,
        moderator: false,
    }
}

pub fn restricted(space: &str, channel: &str) -> ConsoleOptions {
    ConsoleOptions {
        speaker: String::new(),
        space: Some(space.to_string()),
        channel: channel.into(),
        restricted: true,
        moderator: false,
    }
}

/// What `person` has in MEMORY.md, values only.
pub async fn entry_values(h: &Harness, person: PersonId) -> Vec<String> {
    h.store
        .entries(person, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.value)
        .collect()
}

/// Whether this is a CI run (CI set to anything but empty, "false" or "0").
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// A fresh, empty PostgreSQL database on the test server named by ENGRAM_TEST_POSTGRES_URL.
/// Only PostgreSQL tests call it, and those run only when the build saw ENGRAM_TEST_POSTGRES=1
/// (`postgres_test!`) or when asked for with `--ignored`: a missing server is then a failure.
pub async fn fresh_postgres_url() -> String {
    let Some(base) = std::env::var("ENGRAM_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        panic!(
            "ENGRAM_TEST_POSTGRES_URL is not set: start the test server first, \
             eval \"$(scripts/pg-test-server.sh start)\""
        );
    };
    use sqlx::Connection;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "engram_t_{}_{}_{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed),
        Utc::now().timestamp_micros() % 1_000_000_000
    );
    let mut admin = sqlx::PgConnection::connect(&base)
        .await
        .expect("connect to the test PostgreSQL server");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .expect("create a test database");
    let (prefix, _) = base.rsplit_once('/').expect("URL with a database name");
    format!("{prefix}/{name}")
}

/// Held by each test that ends PostgreSQL connections from the server side: this process's
/// record of the last lost connection (`postgres::needs_ping`) is shared by every store in
/// it, so one such test would change what another's connections do.
#[allow(dead_code)]
pub static ENDING_CONNECTIONS: std::sync::LazyLock<tokio::sync::Mutex<()>> =
    std::sync::LazyLock::new(|| tokio::sync::Mutex::new(()));

/// Opens a store on `url` with the default pool settings.
pub async fn open_url(url: &str) -> Arc<dyn Store> {
    app::open_store_url(url, &Config::defaults().store)
        .await
        .expect("store opens")
}

/// A harness (with the fake LLM when `llm`) on `url`'s database, or its own SQLite file.
#[allow(dead_code)]
pub async fn harness_on(url: Option<String>, llm: bool) -> Harness {
    Harness::build(llm, |c| {
        if let Some(url) = url {
            c.store.url = url;
        }
    })
    .await
}

/// A PostgreSQL test: it runs when the build saw ENGRAM_TEST_POSTGRES=1 (exported by
/// `scripts/pg-test-server.sh start`, and always in CI); otherwise cargo test lists it as
/// ignored with this reason, never as a silent `ok`.
#[allow(unused_macros)]
macro_rules! postgres_test {
    ($(#[$meta:meta])* async fn $name:ident() $body:block) => {
        $(#[$meta])*
        #[cfg_attr(
            not(engram_postgres_tests),
            ignore = "needs PostgreSQL: eval \"$(scripts/pg-test-server.sh start)\", then cargo test"
        )]
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() $body
    };
}

/// Generates `sqlite_bot::NAME` and `postgres_bot::NAME` tests that call `NAME(url)`: the
/// whole bot on SQLite (`None`) or on a fresh PostgreSQL database (required in CI).
#[allow(unused_macros)]
macro_rules! on_both_harnesses {
    ($($name:ident),* $(,)?) => {
        mod sqlite_bot {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(None).await;
                }
            )*
        }
        mod postgres_bot {
            $(
                postgres_test! {
                    async fn $name() {
                        super::$name(Some(super::fresh_postgres_url().await)).await;
                    }
                }
            )*
        }
    };
}

/// Generates `sqlite::NAME` and `postgres::NAME` tests that call `NAME(store)` on a fresh
/// database of each backend (PostgreSQL as `postgres_test!` says).
#[allow(unused_macros)]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let store = super::open_url(&format!("sqlite://{}", dir.path().join("t.db").display())).await;
                    super::$name(store).await;
                }
            )*
        }
        mod postgres {
            $(
                postgres_test! {
                    async fn $name() {
                        let url = super::fresh_postgres_url().await;
                        super::$name(super::open_url(&url).await).await;
                    }
                }
            )*
        }
    };
}

/// Every value of every table of the harness's database as text, one line per row (sqlx's
/// migration log aside). What was forgotten must appear nowhere in it: not in a row, a
/// posting (stems: "salari"), a summary, an episode or a vector's table.
pub async fn database_text(h: &Harness) -> String {
    database_text_at(&h.config.store.url).await
}

/// The rows of `table` (as `database_text` shows them) holding `needle`.
pub async fn rows_of(h: &Harness, table: &str, needle: &str) -> Vec<String> {
    database_text(h)
        .await
        .lines()
        .filter(|l| l.starts_with(&format!("{table}: ")) && l.contains(needle))
        .map(str::to_string)
        .collect()
}

/// `database_text` of the database at `url`.
pub async fn database_text_at(url: &str) -> String {
    database_rows_at(url)
        .await
        .into_iter()
        .map(|row| format!("{row}\n"))
        .collect()
}

/// Every row of every table of the database at `url` as `table: values` (see `database_text`).
pub async fn database_rows_at(url: &str) -> Vec<String> {
    use sqlx::{Connection, Row};
    let mut out = Vec::new();
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' \
             AND table_type = 'BASE TABLE' AND table_name <> '_sqlx_migrations' ORDER BY 1",
        )
        .fetch_all(&mut c)
        .await
        .unwrap();
        for t in tables {
            let sql = format!("SELECT t::text FROM {t} t");
            for row in sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all(&mut c)
                .await
                .unwrap()
            {
                out.push(format!("{t}: {}", row.get::<String, _>(0)));
            }
        }
    } else {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             AND name <> '_sqlx_migrations' ORDER BY 1",
        )
        .fetch_all(&mut c)
        .await
        .unwrap();
        for t in tables {
            let cols: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT name FROM pragma_table_info('{t}')"
            )))
            .fetch_all(&mut c)
            .await
            .unwrap();
            let row = cols
                .iter()
                .map(|col| {
                    format!(
                        "COALESCE(CASE WHEN typeof(\"{col}\") = 'blob' THEN hex(\"{col}\") ELSE CAST(\"{col}\" AS TEXT) END, '')"
                    )
                })
                .collect::<Vec<_>>()
                .join(" || ' | ' || ");
            let sql = format!("SELECT {row} FROM \"{t}\"");
            for r in sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all(&mut c)
                .await
                .unwrap()
            {
                out.push(format!("{t}: {}", r.get::<String, _>(0)));
            }
        }
    }
    out
}

/// Every stored message's text with its `is_command` flag, oldest first.
pub async fn command_flags(url: &str) -> Vec<(String, bool)> {
    use sqlx::Connection;
    let sql = "SELECT text, is_command FROM messages ORDER BY id";
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query_as(sql).fetch_all(&mut c).await.unwrap()
    } else {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query_as(sql).fetch_all(&mut c).await.unwrap()
    }
}

/// Whether `row` holds `needle`, a needle that begins or ends with a digit not counting inside a
/// longer number ("4921" is not in the timestamp 1795702492160; it is in "PIN: 4921").
fn holds(row: &str, needle: &str) -> bool {
    let digit_at = |s: &str, i: usize, back: bool| {
        let c = if back {
            s[..i].chars().next_back()
        } else {
            s[i..].chars().next()
        };
        c.is_some_and(|c| c.is_ascii_digit())
    };
    let (starts, ends) = (
        digit_at(needle, 0, false),
        digit_at(needle, needle.len(), true),
    );
    row.match_indices(needle).any(|(i, m)| {
        let inside_a_number =
            starts && digit_at(row, i, true) || ends && digit_at(row, i + m.len(), false);
        !inside_a_number
    })
}

#[test]
fn a_number_is_not_found_inside_a_longer_one() {
    assert!(holds("messages: 7 | pin: 4921 | 1795702400000", "4921"));
    assert!(holds("4921", "4921"));
    assert!(!holds("people: 1 | alice | 1795702492160", "4921"));
    assert!(holds("card 4111 1111 1111 1111.", "4111 1111 1111 1111"));
    assert!(
        holds("the word hunter2x", "hunter2"),
        "a word's end is not a number's"
    );
    assert!(!holds("x 24111 1111 1111 1111", "4111 1111 1111 1111"));
}

/// The lines of `database_text` that hold `needle` or, for its words, the stems search
/// postings (of messages, and of episodes' keys) keep ("balcony" is posted as "balconi"),
/// case-insensitively.
/// Alice tells `asker` her locker code in a private chat, and asks it back (the control: the
/// answer is kept as said); then she asks again while the model (`fake`, held) waits and
/// `forgetter` (the same process or another) forgets the message. The answer says the code
/// once, as asked, and nothing in the database holds it afterwards.
pub async fn answered_across_a_forget(asker: &Harness, forgetter: &Harness, fake: &FakeLlmServer) {
    asker.dm("alice", "my locker code is 4512").await;
    let control = asker.dm("alice", "what is my locker code?").await;
    assert!(control.contains("4512"), "{control}");
    let kept = |rows: Vec<String>| {
        rows.iter()
            .any(|r| r.contains("what is my locker code?") && r.contains("(fake reply)"))
    };
    assert!(
        kept(rows_holding(asker, "4512").await),
        "the control: an answer is kept as said"
    );
    let alice = asker.person("alice").await;
    let said = asker.store.author_messages(alice, None).await.unwrap();
    let (told, _) = said.iter().find(|(_, t)| t.contains("4512")).unwrap();
    let told = asker
        .store
        .messages_by_id(&[*told])
        .await
        .unwrap()
        .remove(0);

    let seen = fake.total();
    fake.hold_after(0);
    let (answer, ()) = tokio::join!(asker.dm("alice", "what was my locker code again?"), async {
        fake.wait_seen(seen + 1, std::time::Duration::from_secs(20))
            .await;
        forgetter
            .memory
            .manager
            .forget_message(&told, None)
            .await
            .unwrap();
        fake.release();
    });
    assert!(
        answer.starts_with("(fake reply)") && answer.contains("4512"),
        "the model's answer, shown once as asked: {answer}"
    );
    let left = rows_holding(asker, "4512").await;
    assert!(left.is_empty(), "{left:#?}");
}

pub async fn rows_holding(h: &Harness, needle: &str) -> Vec<String> {
    let needle = needle.to_lowercase();
    let stems: Vec<String> = engram::store::document_terms(&needle)
        .terms
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    database_text(h)
        .await
        .lines()
        .filter(|l| {
            let l = l.to_lowercase();
            holds(&l, &needle)
                || ["message_terms", "episode_terms"].iter().any(|table| {
                    stems.iter().any(|s| {
                        l.starts_with(&format!("{table}: {s} |"))
                            || l.starts_with(&format!("{table}: ({s},"))
                    })
                })
        })
        .map(str::to_string)
        .collect()
}

/// What hybrid search finds for `query` among what may surface at `place` for `asker`.
pub async fn search_texts(
    h: &Harness,
    place: &engram::domain::Place,
    asker: PersonId,
    query: &str,
) -> Vec<String> {
    h.memory
        .retriever
        .search(
            query,
            &place.visible_scopes(asker),
            Some(asker),
            h.clock.now(),
            20,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.message.text)
        .collect()
}

impl Harness {
    /// The place where `who` speaks with `opts` (as the console adapter builds it).
    pub async fn place(&self, opts: &ConsoleOptions, who: &str) -> engram::domain::Place {
        use engram::domain::{Place, Privacy};
        let person = self.person(who).await;
        match &opts.space {
            None => Place {
                platform: Platform::Console,
                space: self
                    .store
                    .resolve_space(
                        Platform::Console,
                        &format!("dm:{who}"),
                        SpaceKind::Private,
                        who,
                    )
                    .await
                    .unwrap(),
                space_kind: SpaceKind::Private,
                channel: format!("dm:{who}"),
                privacy: Privacy::Dm,
                dm_owner: Some(person),
            },
            Some(space) => Place {
                platform: Platform::Console,
                space: self
                    .store
                    .resolve_space(Platform::Console, space, SpaceKind::Group, space)
                    .await
                    .unwrap(),
                space_kind: SpaceKind::Group,
                channel: opts.channel.clone(),
                privacy: if opts.restricted {
                    Privacy::ChannelRestricted
                } else {
                    Privacy::GuildPublic
                },
                dm_owner: None,
            },
        }
    }
}

/// A message as a platform adapter hands it over: `user` (also their name) on `platform`, in
/// their private chat, or (`public`) in #general of the group "guild-1".
pub fn platform_message(
    platform: Platform,
    user: &str,
    text: &str,
    public: bool,
) -> engram::domain::IncomingMessage {
    use engram::domain::{IncomingMessage, Privacy};
    static SEQ: AtomicU64 = AtomicU64::new(1);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let (space, kind, channel, privacy) = if public {
        (
            "guild-1".to_string(),
            SpaceKind::Group,
            "general",
            Privacy::GuildPublic,
        )
    } else {
        (format!("dm:{user}"), SpaceKind::Private, "dm", Privacy::Dm)
    };
    IncomingMessage {
        platform,
        space_external_id: space,
        space_kind: kind,
        space_title: "test".into(),
        channel_external_id: channel.into(),
        channel_privacy: privacy,
        author_external_id: user.into(),
        author_display_name: user.into(),
        author_username: None,
        author_is_bot: false,
        external_id: format!("pm{seq}"),
        text: text.into(),
        sent_at: start_time(),
        reply_to_external_id: None,
        replies_to_bot: false,
        mentions: vec![],
        attachments: vec![],
        author_is_moderator: false,
        private_answer: false,
        command: None,
    }
}

/// The one-time link code in a reply of the bot ("K7QM-X2PD").
pub fn code_in(reply: &str) -> String {
    reply
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .find(|w| {
            w.len() == 9
                && w.as_bytes()[4] == b'-'
                && w.chars()
                    .all(|c| c == '-' || c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .unwrap_or_else(|| panic!("no code in {reply}"))
        .to_string()
}

/// The `engram` binary run in `dir` (a new user's scratch directory): `stdin` fed, none of the
/// caller's ENGRAM*/token variables, only `env`. (stdout, stderr, success)
pub fn engram(
    dir: &std::path::Path,
    args: &[&str],
    stdin: &str,
    env: &[(&str, &str)],
) -> (String, String, bool) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, _) in std::env::vars()
        .filter(|(k, _)| k.starts_with("ENGRAM") || k == "OPENAI_API_KEY" || k.ends_with("_TOKEN"))
    {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("engram starts");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

/// `engram run` in `dir` as a service runs it (docker-compose's `--scale`) on the database
/// `store_url`, listening on `port`, without embeddings: none of the caller's ENGRAM*/token
/// variables, only those and `env`; killed when dropped.
pub fn engram_serving(
    dir: &std::path::Path,
    store_url: &str,
    port: u16,
    env: &[(&str, &str)],
) -> tokio::process::Child {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_engram"));
    cmd.arg("run")
        .current_dir(dir)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ENGRAM") || k.ends_with("_TOKEN"))
    {
        cmd.env_remove(k);
    }
    let listen = format!("127.0.0.1:{port}");
    cmd.env("ENGRAM__STORE__URL", store_url)
        .env("ENGRAM__EMBED__PROVIDER", "none")
        .env("ENGRAM__SERVER__LISTEN", listen);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("engram starts")
}

/// Two different free ports on 127.0.0.1, for two processes to listen on (held while both are
/// picked, so they differ; free again when returned, for the processes to bind).
pub fn two_free_ports() -> [u16; 2] {
    let held = [refused_port(), refused_port()];
    [held[0].1, held[1].1]
}

/// Waits until the process listening on `port` says it is ready (`/readyz`: store reachable,
/// each platform connected). Waiting for another process to start is the one wait by polling.
pub async fn wait_ready(port: u16) {
    let ready = format!("http://127.0.0.1:{port}/readyz");
    for _ in 0..300 {
        if reqwest::get(&ready)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the process on port {port} did not become ready");
}

/// A port on 127.0.0.1 where connections are refused, held for as long as the socket lives:
/// bound but not listening, so no other test or process can take it meanwhile.
pub fn refused_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind("127.0.0.1:0".parse().unwrap())
        .expect("bind 127.0.0.1:0");
    let port = socket.local_addr().expect("bound").port();
    (socket, port)
}

/// The HTTP listener of `h` on a free port serving `programs`: its base URL, and the switch
/// that stops it.
#[allow(dead_code)]
pub async fn listen(
    h: &Harness,
    programs: engram::service::Programs,
) -> (String, tokio::sync::watch::Sender<bool>) {
    let mut config = h.config.clone();
    config.server.listen = "127.0.0.1:0".into();
    let platforms = engram::domain::status::PlatformStatus::default();
    let (listening, stop) = app::start_service(&config, h.store.clone(), platforms, programs)
        .await
        .unwrap()
        .unwrap();
    (format!("http://{}", listening.addr), stop)
}

/// Runs `sql` on the database at `url` (SQLite file or PostgreSQL).
pub async fn exec(url: &str, sql: &str) {
    use sqlx::Connection;
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(&mut c)
            .await
            .unwrap();
    } else {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(&mut c)
            .await
            .unwrap();
    }
}

/// Every stored vector of these messages, in any vector space (any model's).
pub async fn vectors_in_any_space(
    store: &Arc<dyn Store>,
    ids: &[engram::domain::MessageId],
) -> Vec<(engram::domain::MessageId, Vec<f32>)> {
    let mut all = Vec::new();
    for space in store.vector_coverage().await.unwrap().spaces {
        all.extend(
            store
                .message_vectors(space.id, ids)
                .await
                .unwrap()
                .into_iter()
                .map(|v| (v.message, v.vector)),
        );
    }
    all.sort_by_key(|(id, _)| *id);
    all
}

/// The episodes BM25 finds for `words` in `scopes` (messages and details' search keys).
pub async fn episodes_found(
    store: &dyn Store,
    scopes: &[engram::domain::Scope],
    words: &str,
) -> Vec<i64> {
    store
        .search_episodes(
            scopes,
            &engram::store::query_terms(words, 8),
            engram::store::Bm25::default(),
            10,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.episode)
        .collect()
}

/// What `who` says in `opts` now, under the platform id `id` (so a test can edit or delete it
/// later), not addressed to the bot.
pub fn said_as(
    h: &Harness,
    opts: &ConsoleOptions,
    who: &str,
    text: &str,
    id: &str,
) -> engram::domain::IncomingMessage {
    let mut m = console_message(opts, who, text, 0, h.clock.now(), false);
    m.external_id = id.to_string();
    m
}

/// A message of `author` in #general of `space`, its language detected.
#[allow(dead_code)]
pub fn msg(
    space: engram::domain::SpaceId,
    scope: Scope,
    author: PersonId,
    ext: &str,
    text: &str,
    at: DateTime<Utc>,
) -> engram::store::NewMessage {
    engram::store::NewMessage {
        space,
        channel: "general".into(),
        privacy: scope.privacy(),
        scope,
        author,
        is_bot: false,
        is_command: false,
        external_id: ext.into(),
        reply_to: None,
        text: text.into(),
        language: engram::domain::language::detect(text),
        sent_at: at,
        withheld: false,
    }
}

/// Returns once `n` sessions of `url`'s PostgreSQL database wait on locks, or `done()` (what
/// should wait has finished without: the caller's assertions tell).
pub async fn until_waiting_on_locks(url: &str, n: i64, done: impl Fn() -> bool) {
    until_locked(url, n, None, done).await
}

/// Returns once a session of `url`'s PostgreSQL database waits on a lock the session
/// `holder` (its backend pid) holds, or `done()`.
pub async fn until_held_up_by(url: &str, holder: i32, done: impl Fn() -> bool) {
    until_locked(url, 1, Some(holder), done).await
}

async fn until_locked(url: &str, n: i64, holder: Option<i32>, done: impl Fn() -> bool) {
    use sqlx::Connection;
    let mut watch = sqlx::PgConnection::connect(url).await.unwrap();
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() \
             AND (CAST($1 AS INTEGER) IS NULL OR $1 = ANY(pg_blocking_pids(pid)))",
        )
        .bind(holder)
        .fetch_one(&mut watch)
        .await
        .unwrap();
        if waiting >= n || done() {
            return;
        }
        tokio::task::yield_now().await;
    }
}
