//! Track 2 against the fake LLM over HTTP: day summaries (one call per space per hour bucket at
//! most, past days never recomputed), history summaries, the 3-way merge and its caches.

use crate::common::*;
use chrono::Duration;
use engram::domain::Clock;

/// Three days of chatter in "lab", days D-2, D-1 and D (D = the clock's day).
async fn chatter(h: &Harness) {
    let lab = group("lab");
    let base = h.clock.now();
    for (day, lines) in [
        (
            -2i64,
            [
                ("alice", "I finally fixed the flaky deploy pipeline"),
                ("bob", "my cat knocked over the coffee again"),
            ],
        ),
        (
            -1,
            [
                ("alice", "preparing slides about database performance"),
                ("bob", "going climbing this weekend with friends"),
            ],
        ),
        (
            0,
            [
                ("alice", "presentation went great, everyone liked it"),
                ("bob", "tired after a long climbing session"),
            ],
        ),
    ] {
        h.clock.set(base + Duration::days(day));
        for (who, text) in lines {
            assert_eq!(
                h.say_in(&lab, who, text).await,
                None,
                "chatter gets no reply"
            );
        }
    }
    h.clock.set(base);
}

#[tokio::test]
async fn context_is_built_once_and_then_served_from_cache() {
    let h = Harness::with_llm().await;
    h.clock.set(start_time() + Duration::days(2));
    chatter(&h).await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "Engram, remember that I love Rust")
        .await;
    h.fake().clear();

    let alice = h.person("alice").await;
    let place = engram::domain::Place {
        platform: engram::domain::Platform::Console,
        space: engram::domain::SpaceId(match h.space_scope("lab").await {
            engram::domain::Scope::Space(s) => s.0,
            _ => unreachable!(),
        }),
        space_kind: engram::domain::SpaceKind::Group,
        channel: "general".into(),
        privacy: engram::domain::Privacy::GuildPublic,
        dm_owner: None,
    };
    let memory = &h.memory.manager;
    let first = memory.person_memory(alice, "alice", &place).await.unwrap();
    let calls = h.fake().total();
    assert!(calls >= 1, "the first build uses the LLM");
    assert_eq!(
        h.fake().count("day_summary"),
        3,
        "one per day with messages: {:?}",
        h.fake()
            .requests()
            .iter()
            .map(|r| &r.task)
            .collect::<Vec<_>>()
    );
    assert!(first.text.contains("Rust"), "{}", first.text);
    assert!(
        first.text.contains("presentation"),
        "today's summary is merged in: {}",
        first.text
    );
    assert!(
        first.text.contains("slides"),
        "the history is merged in: {}",
        first.text
    );

    let second = memory.person_memory(alice, "alice", &place).await.unwrap();
    assert_eq!(second, first);
    assert_eq!(
        h.fake().total(),
        calls,
        "unchanged inputs: no LLM call the second time"
    );

    // The merge prompt carried the three parts as data.
    let merge = h
        .fake()
        .requests()
        .into_iter()
        .find(|r| r.task == "merge_context")
        .expect("a merge call");
    let text = merge.text();
    assert!(
        text.contains("<facts>") && text.contains("<today>") && text.contains("<history>"),
        "{text}"
    );
}

#[tokio::test]
async fn day_summaries_refresh_at_most_hourly_and_past_days_are_never_recomputed() {
    let h = Harness::with_llm().await;
    h.clock.set(start_time() + Duration::days(2));
    chatter(&h).await;
    let lab = group("lab");
    let ask = "Engram, what do you know about me";
    h.say_in(&lab, "alice", ask).await;
    assert_eq!(h.fake().count("day_summary"), 3);

    // More chatter in the same hour: no new day summary.
    for i in 0..5 {
        h.clock.advance(Duration::minutes(5));
        h.say_in(&lab, "bob", &format!("still talking about climbing {i}"))
            .await;
        h.say_in(&lab, "alice", ask).await;
        h.say_in(&lab, "bob", ask).await;
    }
    assert_eq!(
        h.fake().count("day_summary"),
        3,
        "same hour bucket: no refresh"
    );

    // Next hour, new messages: exactly one more call for today's summary, none for past days.
    h.clock.advance(Duration::hours(1));
    h.say_in(&lab, "bob", "bouldering gym was packed").await;
    for _ in 0..3 {
        h.say_in(&lab, "alice", ask).await;
        h.say_in(&lab, "bob", ask).await;
    }
    let day_calls: Vec<_> = h
        .fake()
        .requests()
        .into_iter()
        .filter(|r| r.task == "day_summary")
        .collect();
    assert_eq!(day_calls.len(), 4);
    assert!(
        day_calls[3].text().contains("bouldering"),
        "the refresh covers today"
    );
    assert!(
        !day_calls[3].text().contains("slides"),
        "past days are not part of it"
    );

    // A later hour with questions to the bot but no new chatter: no call. Chatter later in
    // that hour waits for the next bucket.
    h.clock.advance(Duration::hours(1));
    for _ in 0..4 {
        h.say_in(&lab, "alice", ask).await;
    }
    h.say_in(&lab, "bob", "anyone up for pizza?").await;
    h.say_in(&lab, "alice", ask).await;
    assert_eq!(h.fake().count("day_summary"), 4);
    h.clock.advance(Duration::hours(1));
    h.say_in(&lab, "alice", ask).await;
    assert_eq!(h.fake().count("day_summary"), 5);
    assert!(
        h.fake()
            .requests()
            .into_iter()
            .rfind(|r| r.task == "day_summary")
            .unwrap()
            .text()
            .contains("pizza")
    );
}

#[tokio::test]
async fn a_restarted_bot_reuses_stored_summaries() {
    // Alice's two past days (about 120 characters) exceed the history budget: the history is
    // the model's summary of them, not their concatenation.
    let h = Harness::build(true, |c| c.memory.history_summary_chars = 80).await;
    h.clock.set(start_time() + Duration::days(2));
    chatter(&h).await;
    let lab = group("lab");
    let ask = "Engram, what do you know about me";
    let first = h.say_in(&lab, "alice", ask).await.unwrap();
    let summaries = h.fake().count("day_summary");
    let histories: Vec<_> = h
        .fake()
        .requests()
        .into_iter()
        .filter(|r| r.task == "history_summary")
        .collect();
    assert_eq!(histories.len(), 1, "one history summary for alice");
    let prompt = histories[0].text();
    assert!(
        prompt.contains("deploy pipeline") && prompt.contains("slides"),
        "both past days go to the model: {prompt}"
    );
    assert!(
        !prompt.contains("coffee"),
        "bob's days are not alice's history: {prompt}"
    );
    assert!(
        first.contains("Earlier:"),
        "the model's history is used: {first}"
    );
    let h = h.restart().await;
    h.fake().clear();
    let again = h.say_in(&lab, "alice", ask).await.unwrap();
    assert_eq!(
        h.fake().count("day_summary"),
        0,
        "{summaries} stored summaries reused"
    );
    assert_eq!(
        h.fake().count("history_summary"),
        0,
        "the stored history is reused"
    );
    assert!(again.contains("Earlier:"), "{again}");
    // Chatter after today's summary, within the same hour: not summarized yet.
    h.say_in(
        &lab,
        "bob",
        "late night: the presentation went great for alice too",
    )
    .await;
    // The next day, yesterday becomes a past day: computed once, then never again.
    h.clock.advance(Duration::days(1));
    h.say_in(&lab, "alice", "Engram, what do you know about me")
        .await;
    let after_day_change = h.fake().count("day_summary");
    h.clock.advance(Duration::hours(3));
    h.say_in(&lab, "alice", "Engram, what do you know about me")
        .await;
    let h = h.restart().await;
    h.clock.advance(Duration::hours(3));
    h.say_in(&lab, "alice", "Engram, what do you know about me")
        .await;
    let past_calls = h
        .fake()
        .requests()
        .into_iter()
        .filter(|r| r.task == "day_summary" && r.text().contains("late night"))
        .count();
    assert_eq!(
        past_calls, 1,
        "yesterday summarized once more after the day ended, then never ({after_day_change} calls)"
    );
}

/// Alice's history of the days before today in "lab", made at the harness's clock: the text,
/// whether it was made without the model's day summaries, and the history_summary calls made.
async fn alices_history(h: &Harness) -> (String, bool, usize) {
    let scope = h.space_scope("lab").await;
    let alice = h.person("alice").await;
    let before = h.fake().count("history_summary");
    let (text, degraded) = h
        .memory
        .manager
        .history_summary(&scope, alice, "alice", h.clock.now())
        .await
        .unwrap();
    (
        text.to_string(),
        degraded,
        h.fake().count("history_summary") - before,
    )
}

/// The past days go to the model only when their dated lines do not fit the history budget,
/// to the character. A history made from the model's day summaries is stored as ending
/// yesterday; one made while the model failed (extractive day summaries of what she said) is
/// not stored, so it is made again once the model is back.
#[tokio::test]
async fn the_history_goes_to_the_model_only_when_it_does_not_fit() {
    let at = |budget: usize| async move {
        let h = Harness::build(true, |c| c.memory.history_summary_chars = budget).await;
        h.clock.set(start_time() + Duration::days(2));
        chatter(&h).await;
        h
    };
    let h = at(10_000).await;
    let (text, degraded, calls) = alices_history(&h).await;
    assert!(!degraded && calls == 0, "{degraded} {calls}");
    assert!(
        text.contains("deploy pipeline") && text.contains("slides") && !text.contains("coffee"),
        "{text}"
    );
    let scope = h.space_scope("lab").await;
    let alice = h.person("alice").await;
    let yesterday = (h.clock.now() - Duration::days(1)).date_naive();
    assert_eq!(
        h.store
            .history_summary(&scope, alice, yesterday)
            .await
            .unwrap()
            .as_deref(),
        Some(text.as_str()),
        "stored as the history up to yesterday"
    );

    let fits = text.chars().count();
    for (budget, calls) in [(fits, 0), (fits - 1, 1)] {
        let h = at(budget).await;
        let (made, _, made_calls) = alices_history(&h).await;
        assert_eq!(made_calls, calls, "budget {budget} for {fits} characters");
        assert!(made.chars().count() <= budget, "{made}");
    }

    let h = at(10_000).await;
    h.fake()
        .set_behavior(engram::llm::fake::Behavior::Status(500));
    let (offline, degraded, _) = alices_history(&h).await;
    assert!(degraded, "made without the model's day summaries");
    assert!(
        offline.contains("deploy pipeline") && offline.contains("slides"),
        "alice's own words, extracted: {offline}"
    );
    assert!(!offline.contains("coffee"), "{offline}");
    let scope = h.space_scope("lab").await;
    let alice = h.person("alice").await;
    assert_eq!(
        h.store
            .history_summary(&scope, alice, yesterday)
            .await
            .unwrap(),
        None,
        "a history made without the model is not kept"
    );
}
