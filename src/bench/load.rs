//! `engram bench load`: people in spaces sending messages at a set rate through the real bot
//! (the `MessageHandler` every adapter calls, with the background indexer and scheduled jobs
//! running), the model a local fake with a set latency and fault rate, for a set time, on SQLite
//! or PostgreSQL. Afterwards every message sent is looked up in the store and every "remember"
//! in its author's memory: nothing may be lost.

use crate::adapters::MessageHandler;
use crate::app;
use crate::bench::store::BenchDb;
use crate::bench::{Latency, LoadOptions, latency, resident_memory_kib};
use crate::config::{Config, Secrets};
use crate::domain::{Clock, IncomingMessage, Platform, Privacy, SpaceKind, SystemClock};
use crate::llm::fake::FakeLlmServer;
use serde::Serialize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Serialize)]
/// What `engram bench load` prints, per backend.
pub struct LoadReport {
    /// "sqlite" or "postgres".
    pub backend: &'static str,
    /// People sending messages.
    pub people: usize,
    /// Spaces they were spread over.
    pub spaces: usize,
    /// Messages per second asked for.
    pub rate_per_s: f64,
    /// How long the load ran (seconds).
    pub secs: u64,
    /// The fake model's answer time (milliseconds).
    pub llm_latency_ms: u64,
    /// Share of model requests that failed.
    pub llm_fault_rate: f64,
    /// Messages sent.
    pub sent: usize,
    /// Messages found in the store afterwards (must equal `sent`).
    pub stored: usize,
    /// "remember" commands sent.
    pub remembers_asked: usize,
    /// Of those, how many the bot confirmed.
    pub remembers_confirmed: usize,
    /// Facts found in their author's memory afterwards (must equal `remembers_asked`).
    pub remembers_kept: usize,
    /// Questions answered with the model, answered with "please wait" (a limit), or failed.
    pub answers_by_model: usize,
    /// Questions answered with "please wait" (over a limit).
    pub answers_limited: usize,
    /// Questions whose answer failed.
    pub answers_failed: usize,
    /// Time from a question or remember to its reply, in milliseconds.
    pub reply_latency_ms: LatencyMs,
    /// Requests the fake model received.
    pub llm_requests: usize,
    /// Model calls the bot counted.
    pub llm_calls: u64,
    /// Of those, how many failed.
    pub llm_failures: u64,
    /// Resident memory before the load (KiB).
    pub rss_start_kib: u64,
    /// Resident memory after it (KiB).
    pub rss_end_kib: u64,
    /// Peak resident memory (KiB).
    pub peak_rss_kib: u64,
    /// Wall time of the load, until every sender finished (seconds).
    pub wall_secs: f64,
}

#[derive(Debug, Serialize)]
/// Latency percentiles in milliseconds.
pub struct LatencyMs {
    /// How many samples were taken.
    pub samples: usize,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The slowest.
    pub max: f64,
}

impl From<Latency> for LatencyMs {
    fn from(l: Latency) -> LatencyMs {
        LatencyMs {
            samples: l.samples,
            p50: l.p50_us / 1000.0,
            p99: l.p99_us / 1000.0,
            max: l.max_us / 1000.0,
        }
    }
}

/// What one message was, and what came of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Chatter,
    Question,
    Remember,
}

/// How the bot answered (kept small: a soak holds one per message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answered {
    /// Not addressed: stored, no reply.
    Silent,
    /// "Got it": a remember confirmed.
    Confirmed,
    /// "Please wait": a limit was hit.
    Limited,
    /// Any other reply.
    Replied,
    /// The handler returned an error (the message could not be stored).
    Failed,
}

struct Sent {
    kind: Kind,
    seq: usize,
    person: usize,
    space: usize,
    latency_us: f64,
    answered: Answered,
}

const LIMITED: &str = "ask me again in about";
const BUDGET: &str = "today's budget";

/// Message `seq` of the run: everyone takes turns, and each person's messages go through all
/// kinds (10% remember, 20% questions, 70% chatter).
fn kind_of(seq: usize, people: usize) -> Kind {
    match (seq + seq / people) % 10 {
        0 => Kind::Remember,
        1 | 2 => Kind::Question,
        _ => Kind::Chatter,
    }
}

/// A fact of its own (the first words make an entry's key: facts that share them are one
/// entry, updated).
fn fact(seq: usize) -> String {
    format!("I keep beehive b{seq} in the garden")
}

fn message(seq: usize, person: usize, space: usize, people: usize) -> IncomingMessage {
    let text = match kind_of(seq, people) {
        Kind::Remember => format!("Engram, remember that {}", fact(seq)),
        Kind::Question => format!("Engram, how do you feel about topic {} today?", seq % 37),
        Kind::Chatter => format!(
            "topic {} went well, the build is green and lunch is at {}",
            seq % 37,
            seq % 12 + 1
        ),
    };
    let name = format!("loadperson{person}");
    IncomingMessage {
        platform: Platform::Console,
        space_external_id: format!("loadspace{space}"),
        space_kind: SpaceKind::Group,
        space_title: format!("load space {space}"),
        channel_external_id: "general".into(),
        channel_privacy: Privacy::GuildPublic,
        author_external_id: name.clone(),
        author_display_name: name,
        author_username: None,
        author_is_bot: false,
        external_id: format!("load{seq}"),
        text,
        sent_at: chrono::Utc::now(),
        reply_to_external_id: None,
        replies_to_bot: false,
        mentions: Vec::new(),
        attachments: Vec::new(),
        author_is_moderator: false,
        private_answer: false,
        command: None,
    }
}

impl LoadOptions {
    /// Refuses options no load can be made of.
    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.people > 0 && self.spaces > 0 && self.secs > 0,
            "people, spaces and secs must be positive"
        );
        anyhow::ensure!(
            self.rate > 0.0 && self.rate <= 10_000.0,
            "rate must be between 0 and 10000 messages per second"
        );
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.llm_fault_rate),
            "llm-fault-rate must be within 0..=1"
        );
        Ok(())
    }
}

/// Sends message `seq` (of `person` in `space`) and sorts its answer.
async fn send(
    handler: &dyn MessageHandler,
    seq: usize,
    person: usize,
    space: usize,
    people: usize,
) -> Sent {
    let msg = message(seq, person, space, people);
    let asked = Instant::now();
    let result = handler
        .message(&msg, Box::pin(std::future::pending()))
        .await;
    let latency_us = asked.elapsed().as_secs_f64() * 1e6;
    let answered = match result {
        Ok(None) => Answered::Silent,
        Ok(Some(r)) if r.text.starts_with("Got it") => Answered::Confirmed,
        Ok(Some(r)) if r.text.contains(LIMITED) || r.text.contains(BUDGET) => Answered::Limited,
        Ok(Some(_)) => Answered::Replied,
        Err(_) => Answered::Failed,
    };
    Sent {
        kind: kind_of(seq, people),
        seq,
        person,
        space,
        latency_us,
        answered,
    }
}

/// What of the load the store kept: every message sent is stored, and every remember is in
/// its author's memory. Returns (messages stored, remembers kept).
async fn kept(db: &BenchDb, outcomes: &[Sent], people: usize) -> anyhow::Result<(usize, usize)> {
    let mut stored = 0;
    let mut remembers_kept = 0;
    for sent in outcomes {
        let msg = message(sent.seq, sent.person, sent.space, people);
        if db
            .store
            .message_by_external(
                Platform::Console,
                &msg.space_external_id,
                "general",
                &msg.external_id,
            )
            .await?
            .is_some()
        {
            stored += 1;
        }
        if sent.kind == Kind::Remember {
            let person = db
                .store
                .find_identity(Platform::Console, &msg.author_external_id)
                .await?;
            if let Some(person) = person {
                let want = fact(sent.seq);
                let entries = db.store.entries(person, None).await?;
                if entries.iter().any(|e| e.value.contains(&want)) {
                    remembers_kept += 1;
                }
            }
        }
    }
    Ok((stored, remembers_kept))
}

/// Sends `total` messages at `opts.rate` per second, each answered in a task of its own, and
/// waits for every answer; progress every 10 s.
async fn drive(
    handler: Arc<dyn MessageHandler>,
    opts: &LoadOptions,
    backend: &str,
    total: usize,
) -> Vec<Sent> {
    let outcomes: Arc<Mutex<Vec<Sent>>> = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / opts.rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = tokio::task::JoinSet::new();
    let mut last_report = Instant::now();
    for seq in 0..total {
        tick.tick().await;
        let (people, person) = (opts.people, seq % opts.people);
        let space = person % opts.spaces;
        let (handler, sink) = (handler.clone(), outcomes.clone());
        tasks.spawn(async move {
            let sent = send(handler.as_ref(), seq, person, space, people).await;
            sink.lock().expect("outcomes lock").push(sent);
        });
        while tasks.try_join_next().is_some() {}
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            eprintln!(
                "[{}] load: {}/{} sent, {} finished, {:.0} s",
                backend,
                seq + 1,
                total,
                outcomes.lock().expect("outcomes lock").len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    while tasks.join_next().await.is_some() {}
    std::mem::take(&mut *outcomes.lock().expect("outcomes lock"))
}

/// Runs the load on `db` and checks every message and every remember afterwards.
pub async fn run(opts: &LoadOptions, db: &BenchDb) -> anyhow::Result<LoadReport> {
    opts.check()?;
    let (rss_start, _) = resident_memory_kib();
    let fake = FakeLlmServer::start().await?;
    fake.set_latency(Duration::from_millis(opts.llm_latency_ms));
    fake.set_fault_rate(opts.llm_fault_rate);
    fake.stop_recording();
    let mut config = Config::load(None)?;
    config.llm.base_url = fake.base_url();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let llm = app::chat_model(&config, &Secrets::default(), clock.clone())?;
    let built = app::build_bot(
        &config,
        db.store.clone(),
        llm.clone(),
        None,
        None,
        clock.clone(),
    )?;
    let (bot, memory) = (Arc::new(built.bot), built.memory);
    memory.manager.follow_changes().await?;
    let (indexer, stop_indexer) = app::start_indexer(
        &config,
        db.store.clone(),
        None,
        clock.clone(),
        &built.phrases,
    );
    let (jobs, stop_jobs) =
        app::start_scheduler(&config, &memory, db.store.clone(), clock, llm.clone())?;
    let handler: Arc<dyn MessageHandler> = bot.clone();

    let started = Instant::now();
    let total = (opts.rate * opts.secs as f64).round() as usize;
    let outcomes = drive(handler, opts, db.backend, total).await;
    let wall_secs = started.elapsed().as_secs_f64();
    stop_jobs.send_replace(true);
    stop_indexer.send_replace(true);
    let _ = jobs.await;
    let _ = indexer.await;

    let (stored, remembers_kept) = kept(db, &outcomes, opts.people).await?;
    let count = |kind: Kind, answered: Answered| {
        outcomes
            .iter()
            .filter(|s| s.kind == kind && s.answered == answered)
            .count()
    };
    let usage = llm.as_ref().map(|l| l.usage()).unwrap_or_default();
    let (rss_end, peak) = resident_memory_kib();
    Ok(LoadReport {
        backend: db.backend,
        people: opts.people,
        spaces: opts.spaces,
        rate_per_s: opts.rate,
        secs: opts.secs,
        llm_latency_ms: opts.llm_latency_ms,
        llm_fault_rate: opts.llm_fault_rate,
        sent: total,
        stored,
        remembers_asked: outcomes.iter().filter(|s| s.kind == Kind::Remember).count(),
        remembers_confirmed: count(Kind::Remember, Answered::Confirmed),
        remembers_kept,
        answers_by_model: count(Kind::Question, Answered::Replied),
        answers_limited: count(Kind::Question, Answered::Limited),
        answers_failed: outcomes
            .iter()
            .filter(|s| s.answered == Answered::Failed)
            .count(),
        reply_latency_ms: latency(
            outcomes
                .iter()
                .filter(|s| matches!(s.answered, Answered::Confirmed | Answered::Replied))
                .map(|s| s.latency_us)
                .collect(),
        )
        .into(),
        llm_requests: fake.seen(),
        llm_calls: usage.calls,
        llm_failures: usage.failures,
        rss_start_kib: rss_start,
        rss_end_kib: rss_end,
        peak_rss_kib: peak,
        wall_secs,
    })
}
