//! `engram bench context`: a synthetic community (people, days, messages) in a real SQLite
//! file, and context builds measured cold (offline provider, no caches), with the LLM (a fake
//! OpenAI-compatible server on 127.0.0.1), and warm; LLM calls and tokens per 1,000 messages,
//! day-summary calls per space and hour while chat goes on, cache hit ratio, resident memory.

use super::{ContextBenchOptions, Latency, latency, resident_memory_kib};
use crate::app;
use crate::config::Config;
use crate::domain::{Clock, ManualClock, PersonId, Place, Platform, Privacy, Scope, SpaceKind};
use crate::llm::fake::FakeLlmServer;
use crate::llm::prompts::Prompts;
use crate::llm::{ChatModel, OpenAiClient};
use crate::memory::MemoryManager;
use crate::retrieval::Retriever;
use crate::store::{FactChange, NewMessage, Store};
use chrono::{DateTime, Duration, TimeZone, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Serialize)]
/// What `engram bench context` prints.
pub struct ContextBenchReport {
    /// People in the community.
    pub people: usize,
    /// Days of chat.
    pub days: i64,
    /// Messages stored.
    pub messages: usize,
    /// Time to store them.
    pub ingest_seconds: f64,
    /// No caches, offline provider (no LLM configured).
    pub cold_offline: Latency,
    /// First build per person with the LLM (fake server over HTTP on 127.0.0.1).
    pub cold_llm: Latency,
    /// Caches filled, inputs unchanged.
    pub warm: Latency,
    /// `MemoryManager::context` for a reply, warm: memory plus the channel's working memory.
    pub reply_context_warm: Latency,
    /// Model calls made for the first full build with the LLM.
    pub llm_calls: u64,
    /// Those calls per task.
    pub llm_calls_by_task: std::collections::BTreeMap<String, u64>,
    /// Calls per 1,000 messages stored.
    pub llm_calls_per_1000_messages: f64,
    /// Tokens (prompt and answer) per 1,000 messages stored.
    pub llm_tokens_per_1000_messages: f64,
    /// Cache hits over lookups in the warm rounds.
    pub warm_cache_hit_ratio: f64,
    /// While chat goes on for `live_hours` hours, the most day-summary calls seen for one
    /// space in one hour bucket.
    pub live_hours: u32,
    /// The most day-summary calls one space made in one hour bucket meanwhile (target: at most 1).
    pub max_day_summary_calls_per_space_hour: usize,
    /// Model calls made while chat went on.
    pub live_llm_calls: usize,
    /// Resident memory at the end (KiB).
    pub rss_kib: u64,
    /// Peak resident memory (KiB).
    pub peak_rss_kib: u64,
    /// Episodes over the same messages, with the LLM.
    pub episodes: EpisodesBench,
}

#[derive(Debug, Serialize)]
/// Episodes and their working memory over the community's messages, with the fake LLM.
pub struct EpisodesBench {
    /// Time for the indexer (no vectors) to put every message in an episode.
    pub index_seconds: f64,
    /// Episodes whose working memory was refreshed in one pass (all open then).
    pub refreshed: usize,
    /// Time of that pass.
    pub working_memory_seconds: f64,
    /// Per refresh (milliseconds): reading the episode, the model call, the write.
    pub working_memory_ms_per_refresh: f64,
    /// Model calls of that pass per 1,000 messages.
    pub working_memory_llm_calls_per_1000_messages: f64,
    /// A second pass with nothing new: model calls (target 0).
    pub working_memory_llm_calls_unchanged: usize,
    /// Episodes closed once quiet.
    pub closed: usize,
    /// Time to finish them in memory (final details, facts learned).
    pub finish_seconds: f64,
    /// Model calls to finish them per 1,000 messages.
    pub episode_summary_llm_calls_per_1000_messages: f64,
}

const WORDS: &[&str] = &[
    "rust",
    "deploy",
    "coffee",
    "kubernetes",
    "garden",
    "chess",
    "release",
    "bug",
    "meeting",
    "holiday",
    "berlin",
    "guitar",
    "marathon",
    "database",
    "migration",
    "cat",
    "pizza",
    "weekend",
    "deadline",
    "review",
    "sushi",
    "climbing",
    "novel",
    "postgres",
    "tired",
    "excited",
    "happy",
    "stressed",
    "tomorrow",
    "yesterday",
    "finally",
    "again",
    "project",
    "team",
    "train",
    "rain",
];

fn sentence(rng: &mut StdRng) -> String {
    let n = rng.random_range(4..16);
    (0..n)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Builds the community in a temporary SQLite file and measures.
pub async fn run(opts: &ContextBenchOptions) -> anyhow::Result<ContextBenchReport> {
    let dir = std::env::temp_dir().join(format!(
        "engram-bench-{}-{}",
        std::process::id(),
        Utc::now().timestamp_millis()
    ));
    std::fs::create_dir_all(&dir)?;
    let url = format!("sqlite://{}", dir.join("bench.db").display());
    let result = run_in(opts, &url).await;
    if std::env::var_os("ENGRAM_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("kept {}", dir.display());
    }
    result
}

/// The seeded community of a context benchmark.
struct Community {
    /// Its members: id and name.
    people: Vec<(PersonId, String)>,
    /// Its one public channel.
    place: Place,
}

/// The community: one public space, `opts.people` members, `opts.messages` messages spread
/// over `opts.days` days up to `now`, and facts for every other member.
async fn seed(
    store: &dyn Store,
    opts: &ContextBenchOptions,
    rng: &mut StdRng,
    now: DateTime<Utc>,
) -> anyhow::Result<Community> {
    let space = store
        .resolve_space(Platform::Console, "bench", SpaceKind::Group, "bench")
        .await?;
    let mut people = Vec::with_capacity(opts.people);
    for i in 0..opts.people {
        let name = format!("person{i:03}");
        people.push((
            store
                .resolve_person(Platform::Console, &name, &name)
                .await?,
            name,
        ));
    }
    let place = Place {
        platform: Platform::Console,
        space,
        space_kind: SpaceKind::Group,
        channel: "general".into(),
        privacy: Privacy::GuildPublic,
        dm_owner: None,
    };
    let start = now - Duration::days(opts.days - 1) - Duration::hours(15);
    let span_ms = (now - start).num_milliseconds();
    let mut batch = Vec::with_capacity(1000);
    for i in 0..opts.messages {
        // A skewed activity: a few people talk much more than the rest.
        let who = ((rng.random::<f64>().powi(2)) * opts.people as f64) as usize % opts.people;
        batch.push(NewMessage {
            space,
            channel: "general".into(),
            scope: Scope::Space(space),
            privacy: Privacy::GuildPublic,
            author: people[who].0,
            is_bot: false,
            is_command: false,
            external_id: format!("m{i}"),
            reply_to: None,
            text: sentence(rng),
            language: None,
            sent_at: start + Duration::milliseconds(rng.random_range(0..span_ms)),
            withheld: false,
        });
        if batch.len() == 1000 {
            store
                .insert_messages(&super::store::detected(&batch))
                .await?;
            batch.clear();
        }
    }
    store
        .insert_messages(&super::store::detected(&batch))
        .await?;
    for (id, name) in people.iter().step_by(2) {
        let change = FactChange {
            op: "remember".into(),
            request: "seed".into(),
            method: "offline".into(),
            changed_by: Some(*id),
            source_message: None,
            at: now,
            drop_history: false,
        };
        let text = format!(
            "- {name}: I work on {} and love {}",
            WORDS[id.0 as usize % WORDS.len()],
            WORDS[(id.0 as usize * 7) % WORDS.len()]
        );
        store
            .update_facts(*id, &Scope::Space(space), 0, &text, &change)
            .await?;
    }
    Ok(Community { people, place })
}

/// Builds the memory of each of `people` at `place` `rounds` times; microseconds per build.
/// `cold` drops every cache before each build.
async fn time_builds(
    memory: &MemoryManager,
    people: &[(PersonId, String)],
    place: &Place,
    rounds: usize,
    cold: bool,
) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::new();
    for _ in 0..rounds {
        for (id, name) in people {
            if cold {
                memory.purge_caches();
            }
            let t = Instant::now();
            std::hint::black_box(memory.person_memory(*id, name, place).await?);
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok(times)
}

/// The live phase of a context benchmark: chat going on while memory is asked for.
struct Live<'a> {
    store: &'a dyn Store,
    memory: &'a MemoryManager,
    fake: &'a FakeLlmServer,
    clock: &'a ManualClock,
}

impl Live<'_> {
    /// Every 10 minutes for `hours` hours, 20 new messages in the community's channel and 10
    /// memory builds of random members. Returns the most day-summary calls in one hour.
    async fn chat(
        &self,
        community: &Community,
        hours: u32,
        rng: &mut StdRng,
    ) -> anyhow::Result<usize> {
        let space = community.place.space;
        let mut per_hour = std::collections::BTreeMap::<(chrono::NaiveDate, u32), usize>::new();
        let mut seq = 0usize;
        for _ in 0..(hours * 6) {
            self.clock.advance(Duration::minutes(10));
            let at = self.clock.now();
            let batch: Vec<NewMessage> = (0..20)
                .map(|_| {
                    seq += 1;
                    NewMessage {
                        space,
                        channel: "general".into(),
                        scope: Scope::Space(space),
                        privacy: Privacy::GuildPublic,
                        author: community.people[rng.random_range(0..community.people.len())].0,
                        is_bot: false,
                        is_command: false,
                        external_id: format!("live{seq}"),
                        reply_to: None,
                        text: sentence(rng),
                        language: None,
                        sent_at: at,
                        withheld: false,
                    }
                })
                .collect();
            self.store
                .insert_messages(&super::store::detected(&batch))
                .await?;
            let calls = self.fake.count("day_summary");
            for _ in 0..10 {
                let (id, name) = &community.people[rng.random_range(0..community.people.len())];
                self.memory
                    .person_memory(*id, name, &community.place)
                    .await?;
            }
            use chrono::Timelike;
            *per_hour.entry((at.date_naive(), at.hour())).or_default() +=
                self.fake.count("day_summary") - calls;
        }
        Ok(per_hour.values().copied().max().unwrap_or(0))
    }
}

// Over 80 lines: the phases of the benchmark in order (seed, cold, with the model, warm,
// live), each timed where it runs.
async fn run_in(opts: &ContextBenchOptions, url: &str) -> anyhow::Result<ContextBenchReport> {
    let config = Config::defaults();
    let store: Arc<dyn Store> = app::open_store_url(url, &config.store).await?;
    let now = Utc
        .with_ymd_and_hms(2026, 11, 22, 15, 30, 0)
        .single()
        .expect("valid time");
    let clock = Arc::new(ManualClock::new(now));
    let mut rng = StdRng::seed_from_u64(opts.seed);

    let t0 = Instant::now();
    let community = seed(store.as_ref(), opts, &mut rng, now).await?;
    let (people, place) = (&community.people, &community.place);
    let ingest_seconds = t0.elapsed().as_secs_f64();

    // Cold, offline provider: every cache dropped before each build.
    let offline = app::offline_memory(&config, store.clone(), clock.clone())?.manager;
    let cold = time_builds(&offline, people, place, 3, true).await?;

    // With the LLM: the fake server over real HTTP.
    let fake = FakeLlmServer::start().await?;
    let mut llm_config = config.llm.clone();
    llm_config.base_url = fake.base_url();
    let client = Arc::new(OpenAiClient::new(&llm_config, None, clock.clone())?);
    let llm: Arc<dyn ChatModel> = client.clone();
    let retriever = Arc::new(Retriever::new(
        store.clone(),
        None,
        config.retrieval.clone(),
    ));
    let memory = app::build_memory(
        &config,
        store.clone(),
        Some(llm),
        clock.clone(),
        retriever,
        Arc::new(Prompts::builtin()),
    )?
    .manager;
    let cold_llm = time_builds(&memory, people, place, 1, false).await?;
    let usage = client.usage();

    memory.reset_cache_stats();
    let warm = time_builds(&memory, people, place, opts.warm_rounds, false).await?;
    let hit_ratio = memory.cache_stats().hit_ratio();
    // The whole reply context: the speaker's memory plus the channel's working memory (one
    // indexed query that is never cached).
    let mut reply_warm = Vec::new();
    for (id, name) in people {
        let t = Instant::now();
        std::hint::black_box(memory.context(&[(*id, name.clone())], place, "").await?);
        reply_warm.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (rss, peak) = resident_memory_kib();

    // Chat goes on: every 10 minutes for 3 hours, 20 new messages and 10 context builds.
    let live_hours = 3u32;
    let calls_before = fake.total();
    let live = Live {
        store: store.as_ref(),
        memory: &memory,
        fake: &fake,
        clock: &clock,
    };
    let most_per_hour = live.chat(&community, live_hours, &mut rng).await?;
    let live_llm_calls = fake.total() - calls_before;
    let per_1000 = opts.messages as f64 / 1000.0;
    let episodes = episodes(&config, &store, &memory, client, &fake, &clock, per_1000).await?;
    Ok(ContextBenchReport {
        people: opts.people,
        days: opts.days,
        messages: opts.messages,
        ingest_seconds,
        cold_offline: latency(cold),
        cold_llm: latency(cold_llm),
        warm: latency(warm),
        reply_context_warm: latency(reply_warm),
        llm_calls: usage.calls,
        llm_calls_by_task: usage.calls_by_task.clone(),
        llm_calls_per_1000_messages: usage.calls as f64 / per_1000,
        llm_tokens_per_1000_messages: (usage.prompt_tokens + usage.completion_tokens) as f64
            / per_1000,
        warm_cache_hit_ratio: hit_ratio,
        live_hours,
        max_day_summary_calls_per_space_hour: most_per_hour,
        live_llm_calls,
        rss_kib: rss,
        peak_rss_kib: peak,
        episodes,
    })
}

/// Episodes over everything stored: indexed, their working memory refreshed (twice: the
/// second pass has nothing new), then closed and finished in memory, with the fake LLM.
async fn episodes(
    config: &Config,
    store: &Arc<dyn Store>,
    memory: &MemoryManager,
    llm: Arc<OpenAiClient>,
    fake: &FakeLlmServer,
    clock: &Arc<ManualClock>,
    per_1000: f64,
) -> anyhow::Result<EpisodesBench> {
    let indexer = crate::retrieval::Indexer::new(
        store.clone(),
        None,
        clock.clone(),
        config.retrieval.clone(),
        config.episodes.topic_rules(),
        config.embed.index_batch(),
    );
    let t = Instant::now();
    indexer.index_all(|_| {}).await?;
    let index_seconds = t.elapsed().as_secs_f64();
    let before = fake.count("working_memory");
    let t = Instant::now();
    let refreshed = memory.refresh_working_memory().await?;
    let working_memory_seconds = t.elapsed().as_secs_f64();
    let calls = fake.count("working_memory") - before;
    memory.refresh_working_memory().await?;
    let unchanged = fake.count("working_memory") - before - calls;
    clock.advance(Duration::minutes(config.retrieval.episode_gap_minutes + 1));
    let closed = indexer.close_episodes().await?;
    let extractor = app::extractor(
        config,
        store.clone(),
        Some(llm),
        clock.clone(),
        "bench".into(),
        Arc::new(Prompts::builtin()),
    )?
    .ok_or_else(|| anyhow::anyhow!("no extractor"))?;
    let before = fake.count("episode_summary");
    let t = Instant::now();
    while extractor.finish_episodes().await? > 0 {}
    let finish_seconds = t.elapsed().as_secs_f64();
    Ok(EpisodesBench {
        index_seconds,
        refreshed,
        working_memory_seconds,
        working_memory_ms_per_refresh: working_memory_seconds * 1e3 / refreshed.max(1) as f64,
        working_memory_llm_calls_per_1000_messages: calls as f64 / per_1000,
        working_memory_llm_calls_unchanged: unchanged,
        closed,
        finish_seconds,
        episode_summary_llm_calls_per_1000_messages: (fake.count("episode_summary") - before)
            as f64
            / per_1000,
    })
}
