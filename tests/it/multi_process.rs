//! Several bot processes on one database (separate pools, as separate processes have): one run
//! of a scheduled job, one person per identity, and no lost concurrent fact update. Runs on
//! PostgreSQL (required in CI) and on a shared SQLite file.

use crate::common::*;
use chrono::{Duration, TimeZone, Utc};
use engram::domain::{Platform, Scope};
use engram::jobs::{JobOutcome, Scheduler};
use engram::llm::fake::FakeLlmServer;
use engram::store::Change;

/// Two bots on `url`, both using one fake LLM, with one shared manual clock at 15:00.
async fn two_bots(url: &str, fake: &FakeLlmServer) -> (Harness, Harness) {
    let mut bots = bots_on(url, fake, 2).await;
    bots[0].clock.set(
        Utc.with_ymd_and_hms(2026, 11, 20, 15, 0, 0)
            .single()
            .unwrap(),
    );
    let b = bots.pop().unwrap();
    (bots.pop().unwrap(), b)
}

/// The change feed as one more listener hears it, so that a test can wait until process B has
/// applied every change sent so far (B applies them in the order they were sent).
/// What B has been told of the changes other processes made: PostgreSQL's notifications as
/// they are sent, or SQLite's `change_log` rows since the feed was followed.
struct Feed {
    url: String,
    listener: Option<sqlx::postgres::PgListener>,
    since: i64,
    heard: u64,
}

impl Feed {
    async fn follow(url: &str) -> Feed {
        use sqlx::Connection;
        if url.starts_with("postgres") {
            let mut listener = sqlx::postgres::PgListener::connect(url).await.unwrap();
            listener.listen("engram_changes").await.unwrap();
            return Feed {
                url: url.to_string(),
                listener: Some(listener),
                since: 0,
                heard: 0,
            };
        }
        let mut db = sqlx::SqliteConnection::connect(url).await.unwrap();
        let since = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM change_log")
            .fetch_one(&mut db)
            .await
            .unwrap();
        Feed {
            url: url.to_string(),
            listener: None,
            since,
            heard: 0,
        }
    }

    /// Sends a marker and waits until B applied every change sent before it (bounded, so a
    /// bug fails rather than hangs; B writes no change itself here).
    async fn settle(&mut self, b: &Harness) {
        use sqlx::Connection;
        let within = std::time::Duration::from_secs(10);
        if let Some(listener) = self.listener.as_mut() {
            let mut db = sqlx::PgConnection::connect(&self.url).await.unwrap();
            sqlx::query("SELECT pg_notify('engram_changes', $1)")
                .bind(Change::Marker.payload())
                .execute(&mut db)
                .await
                .unwrap();
            loop {
                let note = tokio::time::timeout(within, listener.recv())
                    .await
                    .expect("the marker comes back")
                    .unwrap();
                self.heard += 1;
                if Change::parse(note.payload()) == Change::Marker {
                    break;
                }
            }
        } else {
            let mut db = sqlx::SqliteConnection::connect(&self.url).await.unwrap();
            sqlx::query("INSERT INTO change_log (origin, change, at) VALUES ('test', $1, 0)")
                .bind(Change::Marker.payload())
                .execute(&mut db)
                .await
                .unwrap();
            let sent: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM change_log WHERE seq > $1")
                .bind(self.since)
                .fetch_one(&mut db)
                .await
                .unwrap();
            self.heard = sent as u64;
        }
        let heard = self.heard;
        let mut applied = b.memory.manager.changes_applied();
        tokio::time::timeout(within, applied.wait_for(|n| *n >= heard))
            .await
            .expect("B applied every change sent")
            .unwrap();
    }
}

async fn carol_likes_tea(url: &str, fake: &FakeLlmServer) -> (Harness, Harness, Feed) {
    let (a, b) = two_bots(url, fake).await;
    let mut feed = Feed::follow(url).await;
    a.say_in(&group("lab"), "carol", "Engram, remember that I like tea")
        .await;
    feed.settle(&b).await;
    (a, b, feed)
}

fn scheduler(h: &Harness, name: &str) -> Scheduler {
    Scheduler::new(
        h.memory.manager.clone(),
        h.store.clone(),
        h.clock.clone(),
        name.into(),
        Duration::minutes(15),
        chrono::NaiveTime::from_hms_opt(0, 5, 0).unwrap(),
        h.config.memory.daily_notes_days,
    )
}

async fn scheduled_job_runs_once(url: String) {
    let fake = FakeLlmServer::start().await.unwrap();
    let (a, b) = two_bots(&url, &fake).await;
    a.say_in(&group("lab"), "alice", "shipping the release tonight")
        .await;
    b.say_in(&group("home"), "bob", "the garden needs water")
        .await;
    b.say_in(&group("home"), "carol", "Engram, remember that I like tea")
        .await;
    a.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 21, 0, 1, 0)
            .single()
            .unwrap(),
    );
    let (sa, sb) = (scheduler(&a, "process-a"), scheduler(&b, "process-b"));
    assert_eq!(sa.run_due().await.unwrap(), JobOutcome::NotDue);
    a.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 21, 0, 10, 0)
            .single()
            .unwrap(),
    );
    fake.clear();
    let (ra, rb) = tokio::join!(sa.run_due(), sb.run_due());
    let outcomes = [ra.unwrap(), rb.unwrap()];
    let ran: Vec<_> = outcomes
        .iter()
        .filter(|o| matches!(o, JobOutcome::Ran { .. }))
        .collect();
    assert_eq!(ran.len(), 1, "{outcomes:?}");
    assert_eq!(
        *ran[0],
        JobOutcome::Ran {
            run_key: "2026-11-20".into(),
            scopes: 2,
            degraded: 0
        }
    );
    assert_eq!(
        fake.count("day_summary"),
        2,
        "one call per active scope, from one process"
    );
    // Later ticks, from either process, do nothing.
    assert_eq!(
        sb.run_due().await.unwrap(),
        JobOutcome::AlreadyDone {
            run_key: "2026-11-20".into()
        }
    );
    assert_eq!(
        sa.run_due().await.unwrap(),
        JobOutcome::AlreadyDone {
            run_key: "2026-11-20".into()
        }
    );
    assert_eq!(fake.count("day_summary"), 2);
    let runs = a.store.job_runs(engram::jobs::DAY_SUMMARIES).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].status.as_str(), runs[0].attempts), ("done", 1));
    // And the summaries it stored serve both processes: no further day-summary call.
    a.say_in(&group("lab"), "alice", "Engram, what do you know about me")
        .await;
    b.say_in(&group("home"), "bob", "Engram, what do you know about me")
        .await;
    assert_eq!(fake.count("day_summary"), 2);
}

async fn a_crashed_job_is_taken_over(url: String) {
    let fake = FakeLlmServer::start().await.unwrap();
    let (a, b) = two_bots(&url, &fake).await;
    a.say_in(&group("lab"), "alice", "shipping the release tonight")
        .await;
    a.clock.set(
        Utc.with_ymd_and_hms(2026, 11, 21, 0, 10, 0)
            .single()
            .unwrap(),
    );
    // Process A claimed the run and died before finishing.
    let claim = a
        .store
        .claim_job(
            engram::jobs::DAY_SUMMARIES,
            "2026-11-20",
            "process-a",
            a.clock_now(),
            Duration::minutes(15),
        )
        .await
        .unwrap();
    assert!(matches!(claim, engram::store::JobClaim::Acquired { .. }));
    let sb = scheduler(&b, "process-b");
    assert!(matches!(
        sb.run_due().await.unwrap(),
        JobOutcome::HeldByOther { .. }
    ));
    a.clock.advance(Duration::minutes(16));
    assert!(matches!(
        sb.run_due().await.unwrap(),
        JobOutcome::Ran { scopes: 1, .. }
    ));
    let runs = b.store.job_runs(engram::jobs::DAY_SUMMARIES).await.unwrap();
    assert_eq!(
        (
            runs[0].holder.as_str(),
            runs[0].status.as_str(),
            runs[0].attempts
        ),
        ("process-b", "done", 2)
    );
    // Maintenance: once a day, whoever comes first.
    let sa = scheduler(&a, "process-a");
    let (ma, mb) = tokio::join!(sa.run_maintenance(), sb.run_maintenance());
    let ran = [ma.unwrap(), mb.unwrap()]
        .iter()
        .filter(|o| matches!(o, JobOutcome::Ran { .. }))
        .count();
    assert_eq!(ran, 1);
    assert_eq!(
        b.store.job_runs(engram::jobs::MAINTENANCE).await.unwrap()[0].status,
        "done"
    );
}

async fn one_person_per_identity(url: String) {
    let fake = FakeLlmServer::start().await.unwrap();
    let (a, b) = two_bots(&url, &fake).await;
    let lab = group("lab");
    let texts: Vec<String> = (0..6).map(|i| format!("hello {i}")).collect();
    let mut tasks = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let bot = if i % 2 == 0 { &a } else { &b };
        tasks.push(bot.say_in(&lab, "newbie", text));
        tasks.push(bot.say_in(&lab, "newbie", text));
    }
    futures::future::join_all(tasks).await;
    let id = a
        .store
        .find_identity(Platform::Console, "newbie")
        .await
        .unwrap()
        .unwrap();
    let counts = a.store.table_counts().await.unwrap();
    assert_eq!(
        counts.iter().find(|c| c.table == "people").unwrap().rows,
        1,
        "one person for newbie ({id:?})"
    );
    assert_eq!(
        counts.iter().find(|c| c.table == "messages").unwrap().rows,
        6 + 6,
        "12 messages (each said twice, distinct ids)"
    );
}

async fn concurrent_fact_updates_both_land(url: String) {
    let fake = FakeLlmServer::start().await.unwrap();
    let (a, b) = two_bots(&url, &fake).await;
    let lab = group("lab");
    a.say_in(&lab, "carol", "hi").await;
    // Carol, talking to both processes at once.
    for round in 0..3 {
        let (ta, tb) = (
            format!("Engram, remember that I ran marathon {round}"),
            format!("Engram, remember that I speak Greek level {round}"),
        );
        let (ra, rb) = tokio::join!(a.say_in(&lab, "carol", &ta), b.say_in(&lab, "carol", &tb));
        assert!(ra.unwrap().starts_with("Got it") && rb.unwrap().starts_with("Got it"));
    }
    let carol = a.person("carol").await;
    let scope = a.space_scope("lab").await;
    let facts = a.store.facts(carol, &scope).await.unwrap().text;
    for round in 0..3 {
        assert!(
            facts.contains(&format!("marathon {round}"))
                && facts.contains(&format!("Greek level {round}")),
            "{facts}"
        );
    }
    assert_eq!(a.store.fact_history(carol, &scope).await.unwrap().len(), 6);
    assert!(matches!(scope, Scope::Space(_)));
}

trait ClockNow {
    fn clock_now(&self) -> chrono::DateTime<Utc>;
}
impl ClockNow for Harness {
    fn clock_now(&self) -> chrono::DateTime<Utc> {
        self.clock.now()
    }
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                postgres_test! {
                    async fn $name() {
                        super::$name(super::fresh_postgres_url().await).await;
                    }
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    super::$name(format!("sqlite://{}", dir.path().join("shared.db").display())).await;
                }
            )*
        }
    };
}

on_both!(
    scheduled_job_runs_once,
    a_crashed_job_is_taken_over,
    one_person_per_identity,
    concurrent_fact_updates_both_land,
    facts_changed_elsewhere_are_never_served_stale,
    forget_and_clear_elsewhere_are_never_served_stale,
    an_answer_made_while_another_process_forgets_is_not_kept
);

/// Process B answers alice while process A forgets what the answer shows. B has not heard of
/// the forget (its feed is behind: SQLite's is read every second), and A looked for the bot's
/// quotes before B's answer was stored: B keeps only the note a shown memory leaves. The
/// control: the same question with nothing forgotten meanwhile keeps its answer.
async fn an_answer_made_while_another_process_forgets_is_not_kept(url: String) {
    let fake = FakeLlmServer::start().await.unwrap();
    // The model waits for the forget: long enough not to time out meanwhile.
    let mut bots = bots_with(&url, &fake, 2, |c| c.llm.timeout_secs = 60.0).await;
    let (b, a) = (bots.pop().unwrap(), bots.pop().unwrap());
    answered_across_a_forget(&b, &a, &fake).await;
}

/// Process B cached carol's facts; process A changes them: B must never serve the old text.
async fn facts_changed_elsewhere_are_never_served_stale(url: String) {
    let url = url.as_str();
    let fake = FakeLlmServer::start().await.unwrap();
    let (a, b, mut feed) = carol_likes_tea(url, &fake).await;
    let lab = group("lab");
    let ask = "Engram, what do you know about @carol";
    assert!(
        b.say_in(&lab, "bob", ask).await.unwrap().contains("tea"),
        "B reads and caches carol's facts"
    );
    a.say_in(&lab, "carol", "Engram, remember that I moved to Lisbon")
        .await;
    // Event-driven: B's listener reports each change it applied (bounded so a bug fails, not hangs).
    feed.settle(&b).await;
    let reply = b.say_in(&lab, "bob", ask).await.unwrap();
    assert!(reply.contains("Lisbon") && reply.contains("tea"), "{reply}");
    assert_eq!(
        engram::store::Change::parse(&engram::store::Change::Unknown.payload()),
        engram::store::Change::Unknown
    );
    let cleared = engram::store::Change::Cleared {
        person: engram::domain::PersonId(7),
    };
    assert_eq!(engram::store::Change::parse(&cleared.payload()), cleared);
}

/// Process B cached what it knew about carol (her facts, today's summary with the LLM, the
/// merged text); in process A she forgets one thing, then clears everything: B never serves
/// the old text, in either case.
async fn forget_and_clear_elsewhere_are_never_served_stale(url: String) {
    let url = url.as_str();
    let fake = FakeLlmServer::start().await.unwrap();
    let (a, b) = two_bots(url, &fake).await;
    let mut feed = Feed::follow(url).await;
    let lab = group("lab");
    a.say_in(&lab, "carol", "Engram, remember that my salary is 90k")
        .await;
    a.say_in(&lab, "carol", "Engram, remember that I like tea")
        .await;
    a.say_in(&lab, "carol", "my sister moves to Oslo in May")
        .await;
    feed.settle(&b).await;
    let ask = "Engram, what do you know about @carol";
    let cached = b.say_in(&lab, "bob", ask).await.unwrap();
    assert!(
        cached.contains("90k") && cached.contains("tea") && cached.contains("Oslo"),
        "B reads and caches carol's memory: {cached}"
    );
    a.say_in(&lab, "carol", "Engram, forget that my salary is 90k")
        .await;
    feed.settle(&b).await;
    let reply = b.say_in(&lab, "bob", ask).await.unwrap();
    assert!(!reply.contains("90k") && reply.contains("tea"), "{reply}");

    a.say_in(&lab, "carol", "Engram, /memory clear").await;
    a.say_in(&lab, "carol", "Engram, yes").await;
    feed.settle(&b).await;
    let reply = b.say_in(&lab, "bob", ask).await.unwrap();
    assert!(!reply.contains("tea") && !reply.contains("Oslo"), "{reply}");
}

postgres_test! {
/// Process B's change feed (its LISTEN connection) is cut. What it missed meanwhile cannot be
/// known, so once it notices, B drops everything it cached. Here carol's facts change behind
/// both bots' backs (no notification at all): only that drop lets B see the new text.
async fn postgres_a_lost_change_feed_drops_the_cache() {
    use sqlx::Connection;
    let url = fresh_postgres_url().await;
    let fake = FakeLlmServer::start().await.unwrap();
    let (_a, b, _feed) = carol_likes_tea(&url, &fake).await;
    let lab = group("lab");
    let ask = "Engram, what do you know about @carol";
    assert!(b.say_in(&lab, "bob", ask).await.unwrap().contains("tea"));
    let mut db = sqlx::PgConnection::connect(&url).await.unwrap();
    let changed = sqlx::query("UPDATE facts SET text = replace(text, 'tea', 'mate')")
        .execute(&mut db)
        .await
        .unwrap();
    assert_eq!(changed.rows_affected(), 1);
    // The control: with its feed up and told nothing, B still serves what it cached.
    let stale = b.say_in(&lab, "bob", ask).await.unwrap();
    assert!(stale.contains("tea") && !stale.contains("mate"), "{stale}");

    let mut applied = b.memory.manager.changes_applied();
    let before = *applied.borrow_and_update();
    let _alone = ENDING_CONNECTIONS.lock().await;
    let cut: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query ILIKE 'LISTEN %'",
    )
    .fetch_all(&mut db)
    .await
    .unwrap();
    assert_eq!(cut.len(), 3, "both processes' feeds and the test's own are cut");
    assert!(cut.iter().all(|c| *c));
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        applied.wait_for(|n| *n > before),
    )
    .await
    .expect("B noticed its lost feed")
    .unwrap();
    let fresh = b.say_in(&lab, "bob", ask).await.unwrap();
    assert!(fresh.contains("mate"), "{fresh}");
}
}
