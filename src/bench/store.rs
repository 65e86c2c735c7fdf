//! `engram bench ingest` and `engram bench search`: messages stored per second (one at a time
//! and batched) and full-text search latency as one space grows to 10k, 100k and 1M messages,
//! on SQLite and, when given a server, PostgreSQL. Text is drawn from a Zipf-distributed
//! vocabulary, so term frequencies look like chat rather than like a 36-word toy.

use super::{Latency, latency};
use crate::config::StoreConfig;
use crate::domain::language;
use crate::domain::{PersonId, Platform, Privacy, Scope, SpaceId, SpaceKind};
use crate::store::{Bm25, NewMessage, Store, query_terms};
use chrono::{Duration, TimeZone, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// A Zipf(1.07) vocabulary of synthetic words.
pub struct Corpus {
    words: Vec<String>,
    cumulative: Vec<f64>,
}

impl Corpus {
    /// A vocabulary of `size` made-up words.
    pub fn new(size: usize) -> Corpus {
        const SYLLABLES: [&str; 24] = [
            "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ba", "de", "fu", "go", "ha", "ji",
            "ko", "la", "mo", "nu", "pe", "qui", "ri", "su", "ta", "zo",
        ];
        let words = (0..size)
            .map(|mut i| {
                let mut w = String::new();
                loop {
                    w.push_str(SYLLABLES[i % SYLLABLES.len()]);
                    i /= SYLLABLES.len();
                    if i == 0 {
                        break;
                    }
                }
                w.push_str(SYLLABLES[(w.len() * 7) % SYLLABLES.len()]);
                w
            })
            .collect();
        let mut total = 0.0;
        let cumulative = (1..=size)
            .map(|r| {
                total += 1.0 / (r as f64).powf(1.07);
                total
            })
            .collect();
        Corpus { words, cumulative }
    }

    fn rank(&self, rng: &mut StdRng) -> usize {
        let x = rng.random::<f64>() * self.cumulative.last().copied().unwrap_or(1.0);
        self.cumulative
            .partition_point(|&c| c < x)
            .min(self.words.len() - 1)
    }

    /// A sentence of 5 to 17 words drawn from the vocabulary.
    pub fn sentence(&self, rng: &mut StdRng) -> String {
        let n = rng.random_range(5..18);
        (0..n)
            .map(|_| self.words[self.rank(rng)].as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A query of two content words (ranks 50..5000: neither stop-word-like nor unseen).
    pub fn query(&self, rng: &mut StdRng) -> String {
        (0..2)
            .map(|_| self.words[rng.random_range(50..5000.min(self.words.len()))].as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A query of one of the ten most frequent words (in 10-70% of the messages, as "like"
    /// or "great" are in chat) and one content word of `query`'s ranks: "what does she like
    /// about hiking?".
    pub fn frequent_query(&self, rng: &mut StdRng) -> String {
        let frequent = &self.words[rng.random_range(0..10.min(self.words.len()))];
        let other = &self.words[rng.random_range(50..5000.min(self.words.len()))];
        format!("{frequent} {other}")
    }
}

/// A throwaway database for one backend; dropped (file or database) afterwards.
pub struct BenchDb {
    /// "sqlite" or "postgres".
    pub backend: &'static str,
    /// The store on it.
    pub store: Arc<dyn Store>,
    cleanup: Cleanup,
}

enum Cleanup {
    Dir(std::path::PathBuf),
    Database { admin: String, name: String },
}

impl BenchDb {
    /// A new SQLite file in a temporary directory, opened with `settings` (its URL aside).
    pub async fn sqlite(settings: &StoreConfig) -> anyhow::Result<BenchDb> {
        let dir = std::env::temp_dir().join(format!(
            "engram-bench-{}-{}",
            std::process::id(),
            Utc::now().timestamp_micros()
        ));
        std::fs::create_dir_all(&dir)?;
        let url = format!("sqlite://{}", dir.join("bench.db").display());
        let store = crate::app::open_store_url(&url, settings).await?;
        Ok(BenchDb {
            backend: "sqlite",
            store,
            cleanup: Cleanup::Dir(dir),
        })
    }

    /// A new database on the server of `admin_url` (which must allow CREATE DATABASE), opened
    /// with `settings` (its URL aside).
    pub async fn postgres(admin_url: &str, settings: &StoreConfig) -> anyhow::Result<BenchDb> {
        use sqlx::Connection;
        let name = format!(
            "engram_bench_{}_{}",
            std::process::id(),
            Utc::now().timestamp_micros() % 1_000_000_000
        );
        let mut admin = sqlx::PgConnection::connect(admin_url).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await?;
        let (prefix, _) = admin_url
            .rsplit_once('/')
            .ok_or_else(|| anyhow::anyhow!("the PostgreSQL URL needs a database name"))?;
        let store = crate::app::open_store_url(&format!("{prefix}/{name}"), settings).await?;
        Ok(BenchDb {
            backend: "postgres",
            store,
            cleanup: Cleanup::Database {
                admin: admin_url.to_string(),
                name,
            },
        })
    }

    /// Drops the database, unless ENGRAM_BENCH_KEEP is set (to inspect it afterwards).
    pub async fn drop_db(self) {
        let BenchDb { store, cleanup, .. } = self;
        drop(store);
        if std::env::var_os("ENGRAM_BENCH_KEEP").is_some() {
            match &cleanup {
                Cleanup::Dir(dir) => eprintln!("kept {}", dir.display()),
                Cleanup::Database { name, .. } => eprintln!("kept database {name}"),
            }
            return;
        }
        match cleanup {
            Cleanup::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::Database { admin, name } => {
                use sqlx::Connection;
                if let Ok(mut c) = sqlx::PgConnection::connect(&admin).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                    )))
                    .execute(&mut c)
                    .await;
                }
            }
        }
    }
}

struct Community {
    space: SpaceId,
    people: Vec<PersonId>,
}

async fn community(store: &dyn Store, people: usize) -> anyhow::Result<Community> {
    let space = store
        .resolve_space(Platform::Console, "bench", SpaceKind::Group, "bench")
        .await?;
    let mut ids = Vec::with_capacity(people);
    for i in 0..people {
        let name = format!("person{i:03}");
        ids.push(
            store
                .resolve_person(Platform::Console, &name, &name)
                .await?,
        );
    }
    Ok(Community { space, people: ids })
}

fn messages(
    c: &Community,
    text: &mut impl FnMut(&mut StdRng) -> String,
    rng: &mut StdRng,
    from: usize,
    n: usize,
) -> Vec<NewMessage> {
    let start = Utc
        .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .expect("valid");
    (from..from + n)
        .map(|i| NewMessage {
            space: c.space,
            channel: "general".into(),
            scope: Scope::Space(c.space),
            privacy: Privacy::GuildPublic,
            author: c.people[rng.random_range(0..c.people.len())],
            is_bot: false,
            is_command: false,
            external_id: format!("b{i}"),
            reply_to: None,
            text: text(rng),
            // Detected by the benchmark as ingest does, inside the timed part.
            language: None,
            sent_at: start + Duration::seconds(i as i64 * 20),
            withheld: false,
        })
        .collect()
}

/// `batch` with each message's language, detected as a batch is (over the cores).
pub(crate) fn detected(batch: &[NewMessage]) -> Vec<NewMessage> {
    let texts: Vec<&str> = batch.iter().map(|m| m.text.as_str()).collect();
    batch
        .iter()
        .zip(language::detect_all(&texts))
        .map(|(m, language)| NewMessage {
            language,
            ..m.clone()
        })
        .collect()
}

#[derive(Debug, Serialize)]
/// What `engram bench ingest` prints, per backend.
pub struct IngestReport {
    /// "sqlite" or "postgres".
    pub backend: &'static str,
    /// Where the texts came from: "made-up words", or the data file's turns.
    pub texts: String,
    /// Messages stored one at a time.
    pub single_messages: usize,
    /// Their rate (messages per second).
    pub single_per_second: f64,
    /// Messages stored in batches.
    pub batched_messages: usize,
    /// Messages per batch.
    pub batch_size: usize,
    /// Their rate (messages per second).
    pub batched_per_second: f64,
}

/// Stores `single` messages one at a time, then `batched` in batches of `batch_size`; their
/// texts are `turns` in order (again from the first when they run out; at least one), or without them
/// sentences of made-up words (no language's: every one goes through `lingua`'s n-grams, the
/// dearest detection there is).
pub async fn ingest(
    db: &BenchDb,
    single: usize,
    batched: usize,
    batch_size: usize,
    turns: Option<&[String]>,
) -> anyhow::Result<IngestReport> {
    let corpus = Corpus::new(20_000);
    let mut next = 0usize;
    let mut text = |rng: &mut StdRng| match turns {
        Some(turns) => {
            next += 1;
            turns[(next - 1) % turns.len()].clone()
        }
        None => corpus.sentence(rng),
    };
    let mut rng = StdRng::seed_from_u64(7);
    let c = community(db.store.as_ref(), 100).await?;
    let one_by_one = messages(&c, &mut text, &mut rng, 0, single);
    let t = Instant::now();
    for m in &one_by_one {
        let language = language::detect(&m.text);
        db.store
            .insert_message(&NewMessage {
                language,
                ..m.clone()
            })
            .await?;
    }
    let single_secs = t.elapsed().as_secs_f64();
    let all = messages(&c, &mut text, &mut rng, single, batched);
    let t = Instant::now();
    for chunk in all.chunks(batch_size) {
        db.store.insert_messages(&detected(chunk)).await?;
    }
    let batched_secs = t.elapsed().as_secs_f64();
    Ok(IngestReport {
        backend: db.backend,
        texts: match turns {
            Some(t) => format!("{} turns of a data file", t.len()),
            None => "made-up words".into(),
        },
        single_messages: single,
        single_per_second: single as f64 / single_secs,
        batched_messages: batched,
        batch_size,
        batched_per_second: batched as f64 / batched_secs,
    })
}

#[derive(Debug, Serialize)]
/// Search latency at one corpus size.
pub struct SearchPoint {
    /// Messages in the searched space.
    pub messages: usize,
    /// Time to store them.
    pub load_seconds: f64,
    /// Queries run of each kind (`latency`'s and `frequent_word_latency`'s).
    pub queries: usize,
    /// Hits per query, on average (at most 10).
    pub mean_hits: f64,
    /// Query latency.
    pub latency: Latency,
    /// Query latency when one of the two words is among the ten most frequent
    /// (`Corpus::frequent_query`).
    pub frequent_word_latency: Latency,
}

#[derive(Debug, Serialize)]
/// What `engram bench search` prints, per backend.
pub struct SearchReport {
    /// "sqlite" or "postgres".
    pub backend: &'static str,
    /// One point per corpus size.
    pub points: Vec<SearchPoint>,
}

/// The latency of `queries` searches of `scopes` for the queries `query` makes, and how many
/// hits they found in all.
async fn timed_searches(
    db: &BenchDb,
    scopes: &[Scope],
    queries: usize,
    mut query: impl FnMut() -> String,
) -> anyhow::Result<(Latency, usize)> {
    let mut us = Vec::with_capacity(queries);
    let mut hits = 0;
    for _ in 0..queries {
        let terms = query_terms(&query(), 16);
        let t = Instant::now();
        hits += db
            .store
            .search_messages(scopes, &terms, Bm25::default(), 10)
            .await?
            .len();
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok((latency(us), hits))
}

/// Grows one space through `sizes` and measures `queries` searches at each size.
pub async fn search(
    db: &BenchDb,
    sizes: &[usize],
    queries: usize,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<SearchReport> {
    let corpus = Corpus::new(20_000);
    let mut rng = StdRng::seed_from_u64(11);
    let c = community(db.store.as_ref(), 200).await?;
    let scopes = [Scope::Global, Scope::Space(c.space)];
    let mut loaded = 0;
    let mut points = Vec::new();
    for &size in sizes {
        let t = Instant::now();
        while loaded < size {
            let n = (size - loaded).min(5000);
            db.store
                .insert_messages(&detected(&messages(
                    &c,
                    &mut |rng: &mut StdRng| corpus.sentence(rng),
                    &mut rng,
                    loaded,
                    n,
                )))
                .await?;
            loaded += n;
            if loaded % 100_000 == 0 {
                progress(&format!("{}: {loaded} messages stored", db.backend));
            }
        }
        // Upkeep as the daily maintenance job does it, so plans reflect the data just loaded.
        db.store.maintain().await?;
        let load_seconds = t.elapsed().as_secs_f64();
        let mut qrng = StdRng::seed_from_u64(size as u64);
        // Warm-up: first queries pay for cold caches on both backends.
        for _ in 0..10 {
            db.store
                .search_messages(
                    &scopes,
                    &query_terms(&corpus.query(&mut qrng), 16),
                    Bm25::default(),
                    10,
                )
                .await?;
        }
        let (plain, plain_hits) =
            timed_searches(db, &scopes, queries, || corpus.query(&mut qrng)).await?;
        let (frequent, frequent_hits) =
            timed_searches(db, &scopes, queries, || corpus.frequent_query(&mut qrng)).await?;
        let hits = plain_hits + frequent_hits;
        progress(&format!("{}: searched {size} messages", db.backend));
        points.push(SearchPoint {
            messages: size,
            load_seconds,
            queries,
            mean_hits: hits as f64 / (2 * queries) as f64,
            latency: plain,
            frequent_word_latency: frequent,
        });
    }
    Ok(SearchReport {
        backend: db.backend,
        points,
    })
}
