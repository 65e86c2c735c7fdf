//! `/metrics` after a scripted conversation: every counter moved by exactly what happened.
//! Its own test binary, with one test: the metrics recorder is global to a process, and no
//! other test may move the counters meanwhile.

#[path = "it/common/mod.rs"]
#[macro_use]
mod common;

use common::*;
use engram::adapters::console::ConsoleOptions;
use engram::app;
use engram::config::Secrets;
use engram::domain::status::{Connection, PlatformStatus};
use engram::domain::{ManualClock, Platform};
use engram::llm::fake::{Behavior, FakeLlmServer};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every sample of a Prometheus text page: "name{labels}" → value.
fn samples(page: &str) -> BTreeMap<String, f64> {
    page.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// How much each series moved between two scrapes (absent before: from 0).
fn moved(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>, series: &str) -> f64 {
    after.get(series).copied().unwrap_or(0.0) - before.get(series).copied().unwrap_or(0.0)
}

/// Sum of the movements of every series of `name` whose labels contain all of `labels`.
fn moved_where(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    name: &str,
    labels: &[&str],
) -> f64 {
    after
        .keys()
        .filter(|k| k.split('{').next() == Some(name) && labels.iter().all(|l| k.contains(l)))
        .map(|k| moved(before, after, k))
        .sum()
}

/// The prompt tokens the fake server reports for a request (a quarter of its characters).
fn tokens_of(r: &engram::llm::fake::RecordedRequest) -> f64 {
    let chars: usize = r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .map(str::len)
        .sum();
    (chars / 4) as f64
}

async fn scrape(url: &str) -> BTreeMap<String, f64> {
    let page = reqwest::get(format!("{url}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    samples(&page)
}

#[tokio::test]
async fn counters_move_by_exactly_what_happened() {
    // The chat model and the embedder on separate fakes: a failure set up for the one is not
    // taken by the other.
    let fake = FakeLlmServer::start().await.unwrap();
    let embed_fake = FakeLlmServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path(), Some(fake.base_url()));
    config.embed.provider = "openai".into();
    config.embed.base_url = embed_fake.base_url();
    config.server.listen = "127.0.0.1:0".into();
    // The conversation's one failure does not open the breaker; three in a row do (below).
    config.llm.breaker_failures = 3;
    let clock = Arc::new(ManualClock::new(start_time()));
    let store = app::open_store(&config).await.unwrap();
    let secrets = Secrets {
        embed_api_key: Some("k".into()),
        ..Secrets::default()
    };
    let llm = app::chat_model(&config, &secrets, clock.clone()).unwrap();
    let embedder = app::embedder(&config, &secrets).unwrap();
    let built = app::build_bot(
        &config,
        store.clone(),
        llm.clone(),
        embedder.clone(),
        None,
        clock.clone(),
    )
    .unwrap();
    let bot = Arc::new(built.bot);
    let platforms = PlatformStatus::default();
    platforms.set(
        Platform::Console,
        Connection::Connected { since: clock.now() },
    );
    let (listening, stop) =
        app::start_service(&config, store.clone(), platforms, Default::default())
            .await
            .unwrap()
            .expect("server.listen is set");
    let url = format!("http://{}", listening.addr);
    let ready = reqwest::get(format!("{url}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 200, "{}", ready.text().await.unwrap());

    let before = scrape(&url).await;
    let stats_before = built.memory.manager.cache_stats();

    // The conversation: two addressed messages in a DM, one model failure, two chatter lines
    // in a group (stored, not answered), one addressed line there.
    let say = |opts: ConsoleOptions, who: &'static str, text: &'static str, n: u64| {
        let bot = bot.clone();
        let clock = clock.clone();
        async move {
            let msg = engram::adapters::console::console_message(
                &opts,
                who,
                text,
                1000 + n,
                clock.now(),
                false,
            );
            bot.handle(&msg).await.unwrap()
        }
    };
    let dm = ConsoleOptions::private("alice");
    let mut replies = 0;
    replies += say(
        dm.clone(),
        "alice",
        "remember that I keep bees on my roof",
        1,
    )
    .await
    .is_some() as usize;
    replies += say(dm.clone(), "alice", "what do you know about my roof?", 2)
        .await
        .is_some() as usize;
    // A refusal the client does not retry: one failed call, answered offline.
    let failed_at = fake.total();
    fake.push_once(Behavior::Status(400));
    replies += say(dm.clone(), "alice", "tell me something about bees", 3)
        .await
        .is_some() as usize;
    let room = group("hive");
    for (n, text) in [(4, "the weather is nice today"), (5, "I agree completely")] {
        assert!(say(room.clone(), "bob", text, n).await.is_none(), "chatter");
    }
    replies += say(room.clone(), "bob", "Engram, who keeps bees?", 6)
        .await
        .is_some() as usize;
    assert_eq!(replies, 4);
    let incoming = 6.0;
    // Delivered again (a platform retrying after a restart): kept once, answered once, and
    // counted once.
    assert!(
        say(room.clone(), "bob", "I agree completely", 5)
            .await
            .is_none(),
        "chatter again"
    );
    assert!(
        say(dm.clone(), "alice", "what do you know about my roof?", 2)
            .await
            .is_none(),
        "answered already"
    );
    let redelivered = 2.0;

    // Background work: the indexer embeds what was stored, a scheduled job runs.
    let indexer = engram::retrieval::Indexer::new(
        store.clone(),
        embedder,
        clock.clone(),
        config.retrieval.clone(),
        config.episodes.topic_rules(),
        config.embed.index_batch(),
    );
    // The backlog it found, as the background loop reports it (one round, then it stops).
    let waiting = store.index_backlog().await.unwrap();
    assert!(waiting as f64 >= incoming, "{waiting}");
    let indexer = Arc::new(indexer);
    let (_stop, stopped) = tokio::sync::watch::channel(true);
    indexer
        .clone()
        .run_until(std::time::Duration::from_secs(3600), stopped)
        .await;
    let backlog = samples(
        &reqwest::get(format!("{url}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    );
    assert_eq!(
        backlog.get("engram_index_backlog").copied(),
        Some(waiting as f64),
        "the backlog gauge"
    );
    let indexed = waiting as usize + indexer.index_all(|_| {}).await.unwrap();
    let scheduler = engram::jobs::Scheduler::new(
        built.memory.manager.clone(),
        store.clone(),
        clock.clone(),
        "metrics-test".into(),
        chrono::Duration::seconds(60),
        chrono::NaiveTime::from_hms_opt(0, 5, 0).unwrap(),
        7,
    );
    let ran = scheduler.run_maintenance().await.unwrap();
    assert!(
        matches!(ran, engram::jobs::JobOutcome::Ran { .. }),
        "{ran:?}"
    );

    let after = scrape(&url).await;
    let m = |series: &str| moved(&before, &after, series);
    let mw = |name: &str, labels: &[&str]| moved_where(&before, &after, name, labels);

    // Messages: every incoming one and every reply, per author kind.
    assert_eq!(
        m(r#"engram_messages_stored_total{platform="console",author="person"}"#),
        incoming
    );
    assert_eq!(
        m(r#"engram_messages_stored_total{platform="console",author="bot"}"#),
        replies as f64
    );
    assert_eq!(
        m(r#"engram_replies_total{platform="console"}"#),
        replies as f64
    );
    assert_eq!(
        m(r#"engram_reply_seconds_count{platform="console"}"#),
        replies as f64
    );
    // Every delivery went through one timed insert.
    assert_eq!(
        m(r#"engram_store_query_seconds_count{op="insert_message"}"#),
        incoming + redelivered + replies as f64
    );

    // The model: calls per task as the fake server saw them, its prompt tokens, one error.
    let requests = fake.requests();
    assert!(!requests.is_empty());
    let mut tasks: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for r in &requests {
        let e = tasks.entry(r.task.clone()).or_default();
        e.0 += 1.0;
        e.1 += tokens_of(r);
    }
    let failed = &requests[failed_at];
    for (task, (calls, _)) in &tasks {
        assert_eq!(
            mw("engram_llm_calls_total", &[&format!("task=\"{task}\"")]),
            *calls,
            "calls of {task}"
        );
    }
    assert_eq!(mw("engram_llm_errors_total", &[]), 1.0, "one failed call");
    assert_eq!(
        mw(
            "engram_llm_errors_total",
            &[&format!("task=\"{}\"", failed.task)]
        ),
        1.0
    );
    // Prompt tokens as the provider counted them: every request but the refused one.
    let prompt_tokens: f64 = tasks.values().map(|(_, t)| t).sum::<f64>() - tokens_of(failed);
    assert_eq!(
        mw("engram_llm_tokens_total", &["kind=\"prompt\""]),
        prompt_tokens
    );
    assert!(mw("engram_llm_tokens_total", &["kind=\"completion\""]) > 0.0);

    // Embeddings: each indexed message, each question embedded once.
    assert_eq!(
        m(r#"engram_embed_texts_total{use="index"}"#),
        indexed as f64
    );
    assert_eq!(
        m(r#"engram_embed_texts_total{use="query"}"#),
        m(r#"engram_cache_misses_total{cache="query_vectors"}"#)
    );
    assert!(indexed as f64 >= incoming);

    // The memory caches: the same lookups the manager counted.
    let stats = built.memory.manager.cache_stats();
    let memory_caches = |name: &str| {
        [
            "today",
            "past_days",
            "history",
            "degraded",
            "merged",
            "facts",
            "hearsay",
        ]
        .iter()
        .map(|c| m(&format!("{name}{{cache=\"{c}\"}}")))
        .sum::<f64>()
    };
    assert_eq!(
        memory_caches("engram_cache_hits_total"),
        (stats.hits - stats_before.hits) as f64
    );
    assert_eq!(
        memory_caches("engram_cache_misses_total"),
        (stats.misses - stats_before.misses) as f64
    );
    assert!(stats.misses > stats_before.misses, "lookups happened");

    // The job.
    assert_eq!(
        m(r#"engram_job_runs_total{job="maintenance",outcome="done"}"#),
        1.0
    );
    // Every embedding call timed once: the questions one at a time, the index in batches, as
    // many calls as the embedding server answered.
    assert_eq!(
        m(r#"engram_embed_seconds_count{use="query"}"#),
        m(r#"engram_embed_texts_total{use="query"}"#)
    );
    assert_eq!(
        m(r#"engram_embed_seconds_count{use="query"}"#)
            + m(r#"engram_embed_seconds_count{use="index"}"#),
        embed_fake.total() as f64
    );
    assert!(m(r#"engram_embed_seconds_count{use="index"}"#) >= 1.0);
    assert!(m(r#"engram_embed_seconds_count{use="query"}"#) >= 1.0);
    // Each search reads BM25 and the vectors once.
    let searches = m(r#"engram_store_query_seconds_count{op="search_messages"}"#);
    assert!(searches >= 1.0);
    assert_eq!(
        m(r#"engram_store_query_seconds_count{op="nearest_messages"}"#),
        searches
    );
    // Each search asks who wrote in its scopes once (read from the store on a miss).
    let authors = m(r#"engram_cache_hits_total{cache="scope_authors"}"#)
        + m(r#"engram_cache_misses_total{cache="scope_authors"}"#);
    assert_eq!(authors, searches, "the scope_authors cache");
    assert!(m(r#"engram_cache_misses_total{cache="scope_authors"}"#) >= 1.0);

    // Jobs of their own kind: each person's extraction run, one of them failing (the model
    // refuses its first call), and the episodes closing.
    let before = after;
    let extractor = app::extractor(
        &config,
        store.clone(),
        llm.clone(),
        clock.clone(),
        "metrics-test".into(),
        built.memory.prompts.clone(),
    )
    .unwrap()
    .expect("a model is configured");
    fake.push_once(Behavior::Status(400));
    let runs = extractor
        .extract_all(clock.now().date_naive(), false, |_, _| {})
        .await
        .unwrap();
    let failed = runs.iter().filter(|r| r.error.is_some()).count();
    assert_eq!(failed, 1, "{runs:?}");
    assert!(runs.len() >= 2, "alice's and bob's: {runs:?}");
    clock.advance(chrono::Duration::hours(2));
    indexer.close_episodes().await.unwrap();
    let closed = extractor.finish_episodes().await.unwrap();
    assert!(closed >= 2, "the DM's and the group's: {closed}");
    let after = scrape(&url).await;
    let m = |series: &str| moved(&before, &after, series);
    assert_eq!(
        m(r#"engram_job_runs_total{job="extract",outcome="failed"}"#),
        1.0
    );
    assert_eq!(
        m(r#"engram_job_runs_total{job="extract",outcome="done"}"#),
        (runs.len() - failed) as f64
    );
    assert_eq!(
        m(r#"engram_job_runs_total{job="episode",outcome="done"}"#),
        closed as f64
    );

    // The circuit breaker: `breaker_failures` refusals in a row open it (the gauge says 1),
    // the next call is refused without reaching the provider (counted for its task), and a
    // call after the cooldown closes it.
    let llm = llm.expect("a model is configured");
    let ask = |task: &'static str| engram::llm::ChatRequest {
        task,
        messages: vec![engram::llm::ChatMessage::user("hello")],
        temperature: 0.0,
        json: false,
        max_tokens: None,
        tools: Vec::new(),
    };
    let before = scrape(&url).await;
    for _ in 0..config.llm.breaker_failures {
        fake.push_once(Behavior::Status(400));
        assert!(llm.complete(&ask("reply")).await.is_err());
    }
    let sent = fake.total();
    assert!(matches!(
        llm.complete(&ask("day_summary")).await,
        Err(engram::llm::LlmError::CircuitOpen { .. })
    ));
    assert_eq!(fake.total(), sent, "refused without a call");
    let open = scrape(&url).await;
    assert_eq!(open.get("engram_llm_breaker_open"), Some(&1.0));
    assert_eq!(
        moved(
            &before,
            &open,
            r#"engram_llm_breaker_refusals_total{task="day_summary"}"#
        ),
        1.0
    );
    assert_eq!(
        moved_where(&before, &open, "engram_llm_breaker_refusals_total", &[]),
        1.0
    );
    assert_eq!(
        moved_where(&before, &open, "engram_llm_errors_total", &[]),
        config.llm.breaker_failures as f64
    );
    clock.advance(chrono::Duration::seconds(
        config.llm.breaker_cooldown_secs as i64 + 1,
    ));
    llm.complete(&ask("reply")).await.unwrap();
    let closed = scrape(&url).await;
    assert_eq!(closed.get("engram_llm_breaker_open"), Some(&0.0));

    let _ = stop.send(true);
    listening.task.await.unwrap();
}
