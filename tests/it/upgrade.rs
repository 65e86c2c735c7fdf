//! Databases made by an older engram open in this one and keep every row. Each backend has a
//! fixture made at schema v0008 (the last schema before the store was rewritten by concern):
//! two days of chat, remembered and forgotten entries, hearsay, a link code, a paused member,
//! an extraction run, summaries, indexed messages with vectors and closed episodes. The test
//! loads it, opens it through the store (which applies any newer migration), compares every
//! row with what the fixture held, and asks the bot what it remembers.
//!
//! The fixtures are made by `make_upgrade_fixtures` (ignored), with the engram of the day, only
//! when a new schema version wants its own; it never replaces a version's files:
//! `ENGRAM_UPGRADE_FIXTURE=v0009 cargo test --test it upgrade::make_upgrade_fixtures -- --ignored`
//! (PostgreSQL running, `pg_dump` of the server's version as ENGRAM_PG_DUMP).

use crate::common::*;
use engram::embed::{EmbedError, Embedder, SharedEmbedder};
use engram::retrieval::indexer::Indexer;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

const VERSION: &str = "v0008";

fn fixture(name: &str) -> PathBuf {
    fixture_of(VERSION, name)
}

fn fixture_of(version: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upgrade")
        .join(format!("{version}.{name}"))
}

fn gunzip(path: &PathBuf) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn gzip(path: &PathBuf, bytes: &[u8]) {
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::best(),
    );
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap();
}

/// The rows of a database, one line each (newlines in values escaped), sorted: row order is
/// not part of what a database keeps.
async fn sorted_rows(url: &str) -> Vec<String> {
    let mut rows: Vec<String> = database_rows_at(url)
        .await
        .into_iter()
        .map(|r| r.replace('\\', "\\\\").replace('\n', "\\n"))
        .collect();
    rows.sort();
    rows
}

/// The rows the fixture held when it was made.
fn fixture_rows(backend: &str) -> Vec<String> {
    let text = std::fs::read_to_string(fixture(&format!("{backend}.rows"))).unwrap();
    text.lines().map(str::to_string).collect()
}

/// Columns later migrations added to a table, as they read in every old row: 0009's context
/// of a vector (SQLite's message_vectors.context_id, PostgreSQL's messages.embedding_context:
/// NULL), 0011's working memory of episodes (not superseded, started by a gap, nothing
/// summarized), 0012's messages.attachment_of (NULL) and 0013's episodes.embedding_space (the
/// `unrecorded` model, 1, where the episode had a vector), PostgreSQL's facts.embedding
/// (never written, dropped) and 0014's messages.language (each message's: English here; on
/// PostgreSQL messages are read in their old shape below), 0016's episodes.keys_len
/// (NULL: no search keys yet), 0018's episodes.summarized_through (NULL: no working
/// memory made yet), 0021's episodes.closing_parts (NULL: no close cut off) and 0022's
/// memory_settings.cleared_at (NULL: never cleared). Each: backend, table, what the new
/// columns add at the end of a row, and what the row ended with before. (0013 moved message vectors to a table keyed by model:
/// `vectors_as_before` reads those rows back in their old shape.)
const NEW_COLUMNS: &[(&str, &str, &str, &str)] = &[
    ("sqlite", "messages", " |  | en", ""),
    (
        "sqlite",
        "episodes",
        " | 0 | gap |  |  | 0 | 0 |  | 1 |  |  | ",
        "",
    ),
    (
        "sqlite",
        "episodes",
        " | 0 | gap |  |  | 0 | 0 |  |  |  |  | ",
        "",
    ),
    (
        "sqlite",
        "episodes",
        " | 0 | gap |  |  | 0 | 0 |  | 1 |  | ",
        "",
    ),
    (
        "sqlite",
        "episodes",
        " | 0 | gap |  |  | 0 | 0 |  |  |  | ",
        "",
    ),
    ("postgres", "episodes", ",f,gap,,,0,0,,1,,,)", ")"),
    ("postgres", "episodes", ",f,gap,,,0,0,,,,,)", ")"),
    ("postgres", "episodes", ",f,gap,,,0,0,,1,,)", ")"),
    ("postgres", "episodes", ",f,gap,,,0,0,,,,)", ")"),
    ("postgres", "facts", ")", ",)"),
    ("sqlite", "memory_settings", " |  | 0", ""),
    ("postgres", "memory_settings", ",,0)", ")"),
];

/// The rows 0013 reshaped, read from the upgraded database in their v0008 shape: SQLite's
/// message_vectors rows without the model column, PostgreSQL's messages with their vector back
/// in its column. Every old vector must be there, as the `unrecorded` model's (space 1).
async fn vectors_as_before(url: &str, backend: &str) -> Vec<String> {
    use sqlx::{Connection, Row};
    let mut rows = Vec::new();
    if backend == "postgres" {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        for r in sqlx::query(
            "SELECT ROW(m.id, m.space_id, m.channel, m.scope, m.privacy, m.author_id, m.is_bot, \
             m.is_command, m.external_id, m.reply_to, m.text, m.sent_at, v.embedding, m.episode_id, \
             m.indexed, m.withheld)::text FROM messages m \
             LEFT JOIN message_vectors v ON v.message_id = m.id AND v.space_id = 1",
        )
        .fetch_all(&mut c)
        .await
        .unwrap()
        {
            rows.push(format!("messages: {}", r.get::<String, _>(0)));
        }
    } else {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        for r in sqlx::query(
            "SELECT message_id || ' | ' || scope || ' | ' || hex(embedding) FROM message_vectors WHERE space_id = 1",
        )
        .fetch_all(&mut c)
        .await
        .unwrap()
        {
            rows.push(format!("message_vectors: {}", r.get::<String, _>(0)));
        }
    }
    rows
}

/// `row` without the values `NEW_COLUMNS` gave it (SQLite rows are values joined by " | ",
/// PostgreSQL rows tuples): an old row kept as it was reads as it did. Any other change still
/// shows.
fn without_new_columns(row: &str, backend: &str) -> String {
    for (b, table, added, end) in NEW_COLUMNS {
        let Some(rest) = row.strip_prefix(&format!("{table}: ")) else {
            continue;
        };
        if *b != backend {
            continue;
        }
        if let Some(kept) = rest.strip_suffix(added) {
            return format!("{table}: {kept}{end}");
        }
    }
    row.to_string()
}

/// Opens the old database at `url` with today's engram; every row is kept, and the bot still
/// knows what alice told it.
async fn upgrade_keeps_everything(url: String, backend: &str) {
    let before = sorted_rows(&url).await;
    let expected = fixture_rows(backend);
    assert_eq!(before, expected, "the fixture did not load as it was made");
    // Positive control: the comparison sees a change of one row.
    assert!(expected.iter().any(|r| r.contains("Miso")));

    let h = harness_on(Some(url.clone()), false).await;
    // Read back in their old shape below (on PostgreSQL the vectors were messages' column).
    let reshaped: &[&str] = if backend == "postgres" {
        &["messages: ", "message_vectors: "]
    } else {
        &["message_vectors: "]
    };
    let all = sorted_rows(&url).await;
    // The old vectors' model was never recorded: one model of their size that no
    // configuration matches.
    let spaces: Vec<&String> = all
        .iter()
        .filter(|r| r.starts_with("vector_spaces: "))
        .collect();
    let unrecorded = if backend == "postgres" {
        "vector_spaces: (1,unrecorded,unrecorded,384,\"\",f)"
    } else {
        "vector_spaces: 1 | unrecorded | unrecorded | 384 |  | 0"
    };
    assert_eq!(spaces, [unrecorded]);
    let mut after: Vec<String> = all
        .into_iter()
        .filter(|r| !reshaped.iter().any(|t| r.starts_with(t)) && !r.starts_with("vector_spaces: "))
        .map(|r| without_new_columns(&r, backend))
        .chain(vectors_as_before(&url, backend).await)
        .collect();
    // A table later migrations made with its row: 0032's count of forgets, none yet.
    let counted = if backend == "postgres" {
        "forget_count: (1,0)"
    } else {
        "forget_count: 1 | 0"
    };
    assert!(after.iter().any(|r| r == counted), "{after:#?}");
    after.retain(|r| r != counted);
    after.sort();
    let missing: Vec<&String> = expected.iter().filter(|r| !after.contains(r)).collect();
    let added: Vec<&String> = after.iter().filter(|r| !expected.contains(r)).collect();
    assert!(
        missing.is_empty() && added.is_empty(),
        "the upgrade changed rows:\nmissing {missing:#?}\nadded {added:#?}"
    );
    h.clock.set(start_time() + chrono::Duration::days(3));
    let memory = h.dm("alice", "/memory").await;
    assert!(memory.contains("Miso"), "{memory}");
    assert!(
        !memory.contains("Berlin"),
        "a forgotten entry came back: {memory}"
    );
    let found = h.dm("alice", "/memory search payments").await;
    assert!(found.contains("payments"), "{found}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v0008_sqlite_database_opens_and_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    std::fs::write(&path, gunzip(&fixture("sqlite.gz"))).unwrap();
    upgrade_keeps_everything(format!("sqlite://{}", path.display()), "sqlite").await;
}

postgres_test! {
    async fn a_v0008_postgres_database_opens_and_keeps_every_row() {
        use sqlx::Connection;
        let url = fresh_postgres_url().await;
        let dump = String::from_utf8(gunzip(&fixture("postgres.sql.gz"))).unwrap();
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(dump)).execute(&mut c).await.unwrap();
        c.close().await.unwrap();
        upgrade_keeps_everything(url, "postgres").await;
    }
}

/// Words hashed into 384 buckets: deterministic vectors of the size both schemas hold.
struct HashedWords;

#[async_trait::async_trait]
impl Embedder for HashedWords {
    fn model(&self) -> &str {
        "hashed-words"
    }
    fn dimensions(&self) -> usize {
        384
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 384];
                for w in t.to_lowercase().split_whitespace() {
                    let h = w.bytes().fold(7u32, |h, b| h.wrapping_mul(31) ^ b as u32);
                    v[h as usize % 384] += 1.0;
                }
                engram::embed::normalize(&mut v);
                v
            })
            .collect())
    }
}

/// Two days of chat through the bot, the day's extraction and the indexer, on `url`.
async fn make_old_database(url: String) {
    let h = harness_on(Some(url), true).await;
    h.dm("alice", "remember that I love Rust").await;
    h.dm("alice", "remember that my cat is called Miso").await;
    h.dm("alice", "remember that my timezone is UTC+1").await;
    h.clock.advance(chrono::Duration::minutes(5));
    h.dm("alice", "remember that my timezone is UTC+2").await;
    h.dm("alice", "remember that I live in Berlin").await;
    h.dm("alice", "forget that I live in Berlin").await;
    h.dm("alice", "I work at the payments team").await;
    let mut lab = group("lab");
    lab.speaker = "bob".into();
    h.say_in(&lab, "bob", "we ship the release on Friday").await;
    lab.speaker = "alice".into();
    h.say_in(&lab, "alice", "the release notes are in the wiki")
        .await;
    h.say_in(
        &lab,
        "alice",
        "Engram, remember this about @bob: he plays chess",
    )
    .await;
    h.dm("bob", "remember that I like green tea").await;
    h.dm("bob", "/memory link").await;
    h.dm("carol", "/memory pause").await;
    h.dm("carol", "I love chess").await;
    h.clock.set(start_time() + chrono::Duration::hours(14));
    h.extractor("seed")
        .extract_all(start_time().date_naive(), false, |_, _| {})
        .await
        .unwrap();
    h.clock.set(start_time() + chrono::Duration::days(1));
    h.dm("alice", "what did we talk about yesterday?").await;
    h.dm("alice", "what is my cat called?").await;
    let embedder: SharedEmbedder = Arc::new(HashedWords);
    let indexer = Indexer::new(
        h.store.clone(),
        Some(embedder),
        h.clock.clone(),
        engram::config::Config::defaults().retrieval,
        engram::config::Config::defaults().episodes.topic_rules(),
        8,
    );
    indexer.index_all(|_| {}).await.unwrap();
    h.clock.set(start_time() + chrono::Duration::days(2));
    indexer.close_episodes().await.unwrap();
    h.dm("bob", "what do you know about me").await;
    indexer.index_all(|_| {}).await.unwrap();
}

async fn write_rows(url: &str, path: PathBuf) {
    let mut text = sorted_rows(url).await.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// Writes the fixtures of the schema version named by ENGRAM_UPGRADE_FIXTURE (see the module's
/// comment); without it, it does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a tool, not a test: makes upgrade fixtures when ENGRAM_UPGRADE_FIXTURE names a new version"]
async fn make_upgrade_fixtures() {
    let Ok(version) = std::env::var("ENGRAM_UPGRADE_FIXTURE") else {
        eprintln!("ENGRAM_UPGRADE_FIXTURE is not set: no fixtures made");
        return;
    };
    let fixture = |name: &str| fixture_of(&version, name);
    for name in [
        "sqlite.gz",
        "sqlite.rows",
        "postgres.sql.gz",
        "postgres.rows",
    ] {
        assert!(
            !fixture(name).exists(),
            "{} exists: fixtures of a version are never replaced",
            fixture(name).display()
        );
    }
    std::fs::create_dir_all(fixture("x").parent().unwrap()).unwrap();
    // SQLite: a clean copy of the file, compressed.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("seed.db").display());
    make_old_database(url.clone()).await;
    let copy = dir.path().join("copy.db");
    {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "VACUUM INTO '{}'",
            copy.display()
        )))
        .execute(&mut c)
        .await
        .unwrap();
    }
    gzip(&fixture("sqlite.gz"), &std::fs::read(&copy).unwrap());
    write_rows(&url, fixture("sqlite.rows")).await;

    // PostgreSQL: a plain dump with INSERTs (no psql meta-commands), compressed.
    let url = fresh_postgres_url().await;
    make_old_database(url.clone()).await;
    let pg_dump = std::env::var("ENGRAM_PG_DUMP").unwrap_or_else(|_| "pg_dump".into());
    let out = std::process::Command::new(pg_dump)
        .args([
            "--inserts",
            "--no-owner",
            "--no-privileges",
            "--no-comments",
            "-d",
            &url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump: String = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('\\'))
        .map(|l| format!("{l}\n"))
        .collect();
    gzip(&fixture("postgres.sql.gz"), dump.as_bytes());
    write_rows(&url, fixture("postgres.rows")).await;
}

/// SQLite's migration 31 (ids never given again) keeps every row and reference, and run again
/// (a crash between its commit and its record) changes nothing: rows whose foreign keys point
/// at the tables it makes again stay (episode_terms' ON DELETE CASCADE would have emptied it
/// with foreign keys on), and an id deleted from the top is not given again after either run.
#[tokio::test]
async fn sqlite_ids_are_never_given_again_across_migration_31() {
    use engram::domain::{Platform, Scope, SpaceKind};
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("e.db").display());
    let s = open_url(&url).await;
    let lab = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    let alice = s
        .resolve_person(Platform::Console, "alice", "Alice")
        .await
        .unwrap();
    let noon = chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 11, 20, 12, 0, 0).unwrap();
    let mut ids = Vec::new();
    for (i, text) in ["the zeppelin leaves at noon", "bring a coat", "and the map"]
        .into_iter()
        .enumerate()
    {
        let m = msg(lab, Scope::Space(lab), alice, &format!("m{i}"), text, noon);
        ids.push(s.insert_message(&m).await.unwrap().id);
    }
    let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
    for sql in [
        "INSERT INTO episodes (scope, space_id, channel, started_at, ended_at, messages, total_len, updated_at) \
         SELECT scope, space_id, channel, 0, 0, 2, 9, 0 FROM messages WHERE id = $1",
        "INSERT INTO episode_terms (term, scope, episode_id, tf) SELECT 'zeppelin', scope, (SELECT MAX(id) FROM episodes), 1 FROM messages WHERE id = $1",
        "INSERT INTO fact_versions (person_id, scope, version, op, request, text, method, source_message_id, created_at) \
         SELECT author_id, scope, 1, 'add', 'remember', 'likes zeppelins', 'verbatim', id, 0 FROM messages WHERE id = $1",
    ] {
        sqlx::query(sql)
            .bind(ids[0].0)
            .execute(&mut c)
            .await
            .unwrap();
    }
    // The newest message goes: its id must not come back.
    assert_eq!(s.delete_messages(&[ids[2]]).await.unwrap(), 1);
    let before = sorted_rows(&url).await;
    for table in ["episode_terms", "fact_versions", "episodes"] {
        assert!(
            before.iter().any(|r| r.starts_with(&format!("{table}: "))),
            "the positive control: a row of {table} in {before:?}"
        );
    }
    let migration = include_str!("../../migrations/sqlite/0031_ids_never_reused.sql");
    sqlx::raw_sql(migration).execute(&mut c).await.unwrap();
    c.close().await.unwrap();
    assert_eq!(sorted_rows(&url).await, before);
    let next = msg(lab, Scope::Dm(alice), alice, "m9", "a private word", noon);
    let id = s.insert_message(&next).await.unwrap().id;
    assert!(id.0 > ids[2].0, "{id:?} after {:?}", ids[2]);
}
