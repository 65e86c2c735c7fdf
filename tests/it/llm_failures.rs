//! The LLM refusing connections, answering 500, timing out, rate limiting or returning invalid
//! JSON: the bot still replies with the best context it has, keeps every message, and no fact
//! is lost or corrupted.

use crate::common::*;
use engram::domain::Scope;
use engram::llm::fake::Behavior;

async fn seeded() -> Harness {
    let h = Harness::build(true, |c| c.llm.timeout_secs = 0.3).await;
    assert!(
        h.dm("alice", "remember that I love Rust")
            .await
            .starts_with("Got it")
    );
    h
}

/// `reply_fails`: the reply call itself fails (an invalid-JSON model still "answers" in text).
async fn check_survives(h: &Harness, label: &str, reply_fails: bool) {
    let alice = h.person("alice").await;
    let facts_before = h.store.facts(alice, &Scope::Dm(alice)).await.unwrap();
    let versions_before = h.fact_versions().await;
    let messages_before = h.message_count().await;

    let reply = h.dm("alice", "what do you know about me").await;
    assert!(reply.contains("I love Rust"), "{label}: {reply}");
    let reply = h.dm("alice", "how was your day?").await;
    assert!(!reply.is_empty());
    if reply_fails {
        assert!(
            reply.contains("I love Rust"),
            "{label}: the fallback reply shows memory: {reply}"
        );
    }
    let reply = h.dm("alice", "forget that I play golf").await;
    assert!(reply.contains("didn't find"), "{label}: {reply}");

    // The forget request itself states what is forgotten, so it leaves the history.
    assert_eq!(
        h.message_count().await,
        messages_before + 5,
        "{label}: every other message and reply is kept"
    );
    assert_eq!(
        h.fact_versions().await,
        versions_before,
        "{label}: no fact changed"
    );
    assert_eq!(
        h.store.facts(alice, &Scope::Dm(alice)).await.unwrap(),
        facts_before,
        "{label}"
    );

    // A remember during the outage is kept word for word, next to what was there.
    let reply = h.dm("alice", "remember that I live in Berlin").await;
    assert!(reply.contains("word for word"), "{label}: {reply}");
    let facts = h.store.facts(alice, &Scope::Dm(alice)).await.unwrap().text;
    assert!(
        facts.contains("I love Rust") && facts.contains("I live in Berlin"),
        "{label}: {facts}"
    );
}

#[tokio::test]
async fn llm_answering_500() {
    let h = seeded().await;
    h.fake().set_behavior(Behavior::Status(500));
    check_survives(&h, "500", true).await;
}

#[tokio::test]
async fn llm_returning_invalid_json() {
    let h = seeded().await;
    h.fake().set_behavior(Behavior::InvalidJson);
    check_survives(&h, "invalid json", false).await;
}

#[tokio::test]
async fn llm_timing_out() {
    let h = seeded().await;
    h.fake().set_behavior(Behavior::Hang);
    check_survives(&h, "timeout", true).await;
}

#[tokio::test]
async fn llm_refusing_connections() {
    let dir = tempfile::tempdir().unwrap();
    // A port held but not listening: connections are refused, and no one else can take it.
    let (_held, port) = refused_port();
    let mut config = test_config(dir.path(), Some(format!("http://127.0.0.1:{port}/v1")));
    config.llm.timeout_secs = 0.3;
    let h = Harness::assemble(
        dir,
        None,
        config,
        std::sync::Arc::new(engram::domain::ManualClock::new(start_time())),
    )
    .await;
    let reply = h.dm("alice", "remember that I love Rust").await;
    assert!(reply.contains("word for word"), "{reply}");
    check_survives(&h, "refused", true).await;
}

#[tokio::test]
async fn rate_limits_are_retried_after_retry_after() {
    let h = Harness::with_llm().await;
    h.fake().push_once(Behavior::RateLimited);
    let reply = h.dm("alice", "remember that I love Rust").await;
    assert_eq!(
        reply, "Got it, I'll remember that.",
        "retried and merged by the LLM"
    );
    assert_eq!(h.fake().count("remember"), 2, "one 429, one success");
}

#[tokio::test]
async fn absurd_retry_after_values_never_panic_and_waits_stay_capped() {
    // The cap is 0 s here, so a wait that was not capped would hang the test (bounded below).
    let h = Harness::build(true, |c| c.llm.max_retry_after_secs = 0).await;
    let values = [
        "1e20",
        "NaN",
        "-5",
        "inf",
        "-inf",
        "18446744073709551616",
        "9e999",
    ];
    for (i, value) in values.into_iter().enumerate() {
        h.fake().clear();
        h.fake().push_once(Behavior::RetryAfter(value.to_string()));
        let said = format!("remember that I keep {i} bees");
        let reply = tokio::time::timeout(std::time::Duration::from_secs(20), h.dm("alice", &said))
            .await
            .unwrap_or_else(|_| panic!("Retry-After {value}: the wait was not capped"));
        assert_eq!(reply, "Got it, I'll remember that.", "Retry-After {value}");
        assert_eq!(
            h.fake().count("remember"),
            2,
            "Retry-After {value}: one 429, one success"
        );
    }
}

#[tokio::test]
async fn retries_stop_after_the_configured_count() {
    let h = Harness::build(true, |c| c.llm.max_retries = 2).await;
    h.fake().set_behavior(Behavior::Status(503));
    h.dm("alice", "remember that I love Rust").await;
    assert_eq!(h.fake().count("remember"), 3, "first try + 2 retries");
    h.fake().clear();
    h.fake().set_behavior(Behavior::Status(400));
    h.dm("alice", "remember that I like tea").await;
    assert_eq!(h.fake().count("remember"), 1, "a 400 is not retried");
}

#[tokio::test]
async fn the_breaker_stops_calling_a_dead_llm() {
    let h = Harness::build(true, |c| {
        c.llm.breaker_failures = 2;
        c.llm.max_retries = 0;
    })
    .await;
    h.fake().set_behavior(Behavior::Status(500));
    for i in 0..5 {
        h.dm("alice", &format!("remember that fact number {i} is true"))
            .await;
    }
    assert_eq!(
        h.fake().count("remember"),
        2,
        "after two failures the breaker opens"
    );
    // After the cooldown the LLM is tried again.
    h.fake().set_behavior(Behavior::Smart);
    h.clock.advance(chrono::Duration::seconds(61));
    assert_eq!(
        h.dm("alice", "remember that I love Rust").await,
        "Got it, I'll remember that."
    );
}

#[tokio::test]
async fn garbled_answers_that_would_shrink_memory_are_refused() {
    let h = Harness::with_llm().await;
    for i in 0..6 {
        h.dm(
            "alice",
            &format!("remember that my hobby number {i} is something long and specific"),
        )
        .await;
    }
    let alice = h.person("alice").await;
    let before = h.store.facts(alice, &Scope::Dm(alice)).await.unwrap().text;

    // A "merge" that keeps only the new fact: refused, the fact is appended verbatim instead.
    h.fake()
        .push_once(Behavior::Content(r#"{"facts": "alice likes tea."}"#.into()));
    let reply = h.dm("alice", "remember that I like tea").await;
    assert!(reply.contains("word for word"), "{reply}");
    let after = h.store.facts(alice, &Scope::Dm(alice)).await.unwrap().text;
    assert!(
        after.starts_with(before.trim()) && after.contains("I like tea"),
        "{after}"
    );

    // A "forget" of one thing that wipes everything: refused; exact wording matched offline.
    h.fake()
        .push_once(Behavior::Content(r#"{"found": true, "facts": ""}"#.into()));
    let reply = h
        .dm(
            "alice",
            "forget that my hobby number 3 is something long and specific",
        )
        .await;
    assert!(reply.contains("forgotten"), "{reply}");
    let after = h.store.facts(alice, &Scope::Dm(alice)).await.unwrap().text;
    assert!(
        !after.contains("hobby number 3")
            && after.contains("hobby number 5")
            && after.contains("tea"),
        "{after}"
    );

    // Valid JSON of the wrong shape is a bad answer too.
    h.fake()
        .push_once(Behavior::Content(r#"{"facts": 42}"#.into()));
    let reply = h.dm("alice", "remember that I like coffee").await;
    assert!(reply.contains("word for word"), "{reply}");
}

/// A log sink for one test: what the bot logs while the guard lives (this thread).
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The provider's error text (account and project ids) never reaches a chat or a log line:
/// people get a plain message, the operator's log the status.
#[tokio::test]
async fn provider_errors_stay_out_of_the_chat() {
    let logs = Logs::default();
    let sink = logs.clone();
    let _guard = tracing::subscriber::set_default(
        tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .finish(),
    );
    let h = seeded().await;
    for behavior in [
        Behavior::Status(401),
        Behavior::Status(500),
        Behavior::Status(403),
    ] {
        h.fake().set_behavior(behavior.clone());
        let reply = h.dm("alice", "how was your day?").await;
        for detail in [
            "org-fake123",
            "proj_fake456",
            "organization",
            "HTTP",
            "401",
            "403",
            "500",
        ] {
            assert!(!reply.contains(detail), "{behavior:?}: {detail} in {reply}");
        }
        // Positive control: the fallback still answers from memory.
        assert!(reply.contains("I love Rust"), "{reply}");
    }
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    for detail in ["org-fake123", "proj_fake456", "organization"] {
        assert!(!logged.contains(detail), "{detail} logged: {logged}");
    }
    // Positive control: the failures are logged, with their status.
    for status in ["HTTP 500", "HTTP 403", "HTTP 401"] {
        assert!(logged.contains(status), "{status} not logged: {logged}");
    }
}
