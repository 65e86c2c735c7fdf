//! `kill -9` in the middle of work, then a restart: while a script is being ingested, while
//! the indexer embeds, and during `engram extract --all`. The restarted process finishes the
//! work, and the database ends as an uninterrupted run leaves it: every message once, every
//! message's postings and the term statistics consistent, one vector per message, no
//! duplicate entries. The moment of the kill is a request the fake model holds, never a timer.

use engram::llm::fake::FakeLlmServer;
use sqlx::sqlite::SqlitePool;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

const WITHIN: Duration = Duration::from_secs(60);
const DAY: &str = "2026-11-20";

/// A day in the lab: chatter, questions and remembers from two people, a minute apart.
fn script() -> String {
    let mut out = String::new();
    for i in 0..30 {
        let who = if (i / 6) % 2 == 0 { "alice" } else { "bob" };
        let text = match i % 6 {
            0 => format!("I like oolong tea number {i}"),
            1 => format!("Engram, remember that I keep beehive b{i}"),
            2 => format!("my project {i} ships next week"),
            3 => format!("Engram, how was your day {i}?"),
            4 => format!("I'm moving desk {i} to the window"),
            _ => format!("lunch {i} at the usual place"),
        };
        out.push_str(&format!(
            "[{DAY} {:02}:{:02}] {who}: {text}\n",
            9 + i / 60,
            i % 60
        ));
    }
    out
}

fn engram(dir: &Path, db: &Path, fake: &FakeLlmServer, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_engram"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ENGRAM") || k.ends_with("_TOKEN"))
    {
        cmd.env_remove(k);
    }
    cmd.args(args)
        .current_dir(dir)
        .env("ENGRAM__STORE__URL", format!("sqlite://{}", db.display()))
        .env("ENGRAM__LLM__BASE_URL", fake.base_url())
        // A held request must not time out while the test decides when to kill.
        .env("ENGRAM__LLM__TIMEOUT_SECS", "600")
        .env("ENGRAM__EMBED__TIMEOUT_SECS", "600")
        .env("ENGRAM__EMBED__PROVIDER", "none")
        .env("ENGRAM__LOG__LEVEL", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

async fn run_to_end(mut cmd: Command) {
    let out = cmd.output().await.expect("engram runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn kill_9(mut child: Child) {
    child.start_kill().expect("SIGKILL");
    let status = child.wait().await.unwrap();
    assert!(!status.success(), "killed, not finished: {status:?}");
}

fn play(dir: &Path, db: &Path, fake: &FakeLlmServer) -> Command {
    let path = dir.join("day.txt");
    std::fs::write(&path, script()).unwrap();
    let path = path.display().to_string();
    engram(
        dir,
        db,
        fake,
        &["chat", "--space", "lab", "--script", &path],
    )
}

fn extract_all(dir: &Path, db: &Path, fake: &FakeLlmServer) -> Command {
    engram(dir, db, fake, &["extract", "--all", "--day", DAY])
}

async fn pool(db: &Path) -> SqlitePool {
    SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap()
}

async fn rows(pool: &SqlitePool, sql: &str) -> Vec<String> {
    sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_all(pool)
        .await
        .unwrap()
}

async fn one(pool: &SqlitePool, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(pool)
        .await
        .unwrap()
}

/// What people said, each message once.
async fn human_messages(pool: &SqlitePool) -> Vec<String> {
    rows(
        pool,
        "SELECT p.display_name || ': ' || m.text FROM messages m JOIN people p ON p.id = m.author_id WHERE m.is_bot = 0 ORDER BY m.sent_at, m.text",
    )
    .await
}

async fn entries(pool: &SqlitePool) -> Vec<String> {
    rows(
        pool,
        "SELECT p.display_name || '|' || e.scope || '|' || e.key || '|' || e.value FROM memory_entries e JOIN people p ON p.id = e.person_id ORDER BY 1",
    )
    .await
}

/// Postings of every stored message, and term statistics that add up to them.
async fn assert_index_consistent(pool: &SqlitePool) {
    let without_postings = one(
        pool,
        "SELECT COUNT(*) FROM messages m WHERE m.withheld = 0 AND NOT EXISTS (SELECT 1 FROM message_terms t WHERE t.message_id = m.id)",
    )
    .await;
    assert_eq!(without_postings, 0, "messages missing their postings");
    let orphans = one(
        pool,
        "SELECT COUNT(*) FROM message_terms t WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = t.message_id)",
    )
    .await;
    assert_eq!(orphans, 0, "postings of messages that are gone");
    let mismatched = one(
        pool,
        "SELECT COUNT(*) FROM scope_term_stats s LEFT JOIN (SELECT scope, COUNT(*) AS docs, SUM(doc_len) AS total_len FROM (SELECT DISTINCT scope, message_id, doc_len FROM message_terms) GROUP BY scope) d ON d.scope = s.scope WHERE s.docs <> COALESCE(d.docs, 0) OR s.total_len <> COALESCE(d.total_len, 0)",
    )
    .await;
    assert_eq!(mismatched, 0, "term statistics that do not add up");
    let docs = one(pool, "SELECT COALESCE(SUM(docs), 0) FROM scope_term_stats").await;
    assert!(docs > 0, "positive control: the statistics count something");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_work_and_restarted_ends_like_an_uninterrupted_run() {
    let fake = FakeLlmServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();

    // The reference: the same day, played and extracted without interruption.
    let reference = dir.path().join("reference.db");
    run_to_end(play(dir.path(), &reference, &fake)).await;
    run_to_end(extract_all(dir.path(), &reference, &fake)).await;
    let reference = pool(&reference).await;
    let want_messages = human_messages(&reference).await;
    let want_entries = entries(&reference).await;
    assert_eq!(want_messages.len(), 30);
    assert!(want_entries.len() >= 10, "{want_entries:?}");

    // 1. Killed while the script is being ingested: the model holds its first answer, so the
    // process is stopped with part of the day stored. Played again, the day is there once.
    let db = dir.path().join("crashed.db");
    let seen = fake.seen();
    fake.hold();
    let child = play(dir.path(), &db, &fake).spawn().unwrap();
    fake.wait_seen(seen + 1, WITHIN).await;
    kill_9(child).await;
    fake.release();
    {
        let partial = pool(&db).await;
        let stored = human_messages(&partial).await.len();
        assert!(
            stored > 0 && stored < 30,
            "killed part-way: {stored} stored"
        );
        assert_index_consistent(&partial).await;
    }
    run_to_end(play(dir.path(), &db, &fake)).await;
    let crashed = pool(&db).await;
    assert_eq!(human_messages(&crashed).await, want_messages);
    assert_index_consistent(&crashed).await;

    // 2. Killed while the indexer embeds (its second batch held), then indexed again: one
    // vector per message. (Messages the script's own indexer took with no embedder have none
    // until an embedder comes: then they are its backlog, and get theirs too.)
    const UNVECTORED: &str = "SELECT COUNT(*) FROM messages m WHERE m.withheld = 0 AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id)";
    let pending = one(&crashed, "SELECT COUNT(*) FROM messages WHERE indexed = 0").await;
    assert!(pending > 4, "left for the embedder: {pending}");
    let unvectored_before = one(&crashed, UNVECTORED).await - pending;
    assert!(
        unvectored_before > 0,
        "the script's indexer left some without a vector"
    );
    let seen = fake.seen();
    fake.hold_after(1);
    let mut chat = engram(
        dir.path(),
        &db,
        &fake,
        &["chat", "--space", "lab", "--as", "carol"],
    );
    chat.env("ENGRAM__EMBED__PROVIDER", "openai")
        .env("ENGRAM__EMBED__BASE_URL", fake.base_url())
        .env("ENGRAM__EMBED__BATCH_SIZE", "2")
        .env("ENGRAM_EMBED_API_KEY", "test-key")
        .stdin(Stdio::piped());
    let child = chat.spawn().unwrap();
    fake.wait_seen(seen + 2, WITHIN).await;
    kill_9(child).await;
    fake.release();
    let indexed = one(&crashed, "SELECT COUNT(*) FROM messages WHERE indexed = 1").await;
    let total = one(&crashed, "SELECT COUNT(*) FROM messages").await;
    assert!(
        indexed < total,
        "killed before the indexer finished: {indexed}/{total}"
    );
    let mut config = engram::config::Config::defaults();
    config.store.url = format!("sqlite://{}", db.display());
    config.embed.provider = "openai".into();
    config.embed.base_url = fake.base_url();
    let secrets = engram::config::Secrets {
        embed_api_key: Some("test-key".into()),
        ..Default::default()
    };
    let store = engram::app::open_store(&config).await.unwrap();
    let embedder = engram::app::embedder(&config, &secrets).unwrap();
    let indexer = engram::retrieval::Indexer::new(
        store.clone(),
        embedder,
        std::sync::Arc::new(engram::domain::SystemClock),
        config.retrieval.clone(),
        config.episodes.topic_rules(),
        8,
    );
    indexer.index_all(|_| {}).await.unwrap();
    drop(store);
    assert_eq!(
        one(&crashed, "SELECT COUNT(*) FROM messages WHERE indexed = 0").await,
        0
    );
    assert_eq!(
        one(&crashed, UNVECTORED).await,
        0,
        "every message has its vector, those indexed without an embedder too"
    );
    assert_eq!(
        one(&crashed, "SELECT COUNT(*) FROM message_vectors").await,
        one(&crashed, "SELECT COUNT(*) FROM messages WHERE withheld = 0").await,
        "one vector per message"
    );
    assert_index_consistent(&crashed).await;

    // 3. Killed during `engram extract --all` (one person's run done, the next held), then
    // run again: the killed run is taken over at once and nothing is written twice.
    let seen = fake.seen();
    fake.hold_after(1);
    let child = extract_all(dir.path(), &db, &fake).spawn().unwrap();
    fake.wait_seen(seen + 2, WITHIN).await;
    kill_9(child).await;
    fake.release();
    let partial = entries(&crashed).await;
    assert!(
        partial.len() < want_entries.len(),
        "killed part-way: {partial:?}"
    );
    run_to_end(extract_all(dir.path(), &db, &fake)).await;
    assert_eq!(entries(&crashed).await, want_entries);
    // Run again: already done, nothing changes.
    run_to_end(extract_all(dir.path(), &db, &fake)).await;
    assert_eq!(entries(&crashed).await, want_entries);

    // 4. Killed during `engram reindex` to another model (256 dimensions, one text per call):
    // its first batch of 16 is stored, the next call held. Run again, it goes on where it
    // stopped: every message gets the new model's vector, the held text is the only one asked
    // twice, and the old model's vectors go.
    let reindex = || {
        let mut cmd = engram(dir.path(), &db, &fake, &["reindex"]);
        cmd.env("ENGRAM__EMBED__PROVIDER", "openai")
            .env("ENGRAM__EMBED__BASE_URL", fake.base_url())
            .env("ENGRAM__EMBED__MODEL", "model-b")
            .env("ENGRAM__EMBED__DIMENSIONS", "256")
            .env("ENGRAM__EMBED__BATCH_SIZE", "1")
            .env("ENGRAM_EMBED_API_KEY", "test-key");
        cmd
    };
    let by_model_b = || {
        fake.requests()
            .iter()
            .filter(|r| r.task == "embeddings" && r.body["model"] == "model-b")
            .count() as i64
    };
    let vectors = "SELECT COUNT(*) FROM messages WHERE withheld = 0";
    let messages = one(&crashed, vectors).await;
    let seen = fake.seen();
    fake.hold_after(16);
    let child = reindex().spawn().unwrap();
    fake.wait_seen(seen + 17, WITHIN).await;
    kill_9(child).await;
    fake.release();
    const IN_B: &str = "SELECT COUNT(*) FROM message_vectors v JOIN vector_spaces s ON s.id = v.space_id WHERE s.model = 'model-b'";
    assert_eq!(one(&crashed, IN_B).await, 16, "the first batch was kept");
    assert_eq!(by_model_b(), 17);
    run_to_end(reindex()).await;
    assert_eq!(
        one(&crashed, IN_B).await,
        messages,
        "every message in model B"
    );
    assert_eq!(by_model_b(), messages + 1, "only the held text asked twice");
    assert_eq!(
        one(&crashed, "SELECT COUNT(*) FROM message_vectors").await,
        messages,
        "the old model's vectors went"
    );
    assert_index_consistent(&crashed).await;
}
