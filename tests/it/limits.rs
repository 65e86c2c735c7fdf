//! What answers may spend: per-person and per-space answers per minute, a daily token budget
//! per space, and a bounded number of people per message. Over a limit, conversation gets a
//! clear short answer without a model call, memory commands still land (word for word), and
//! every message is stored.

use crate::common::*;
use engram::domain::Platform;

const SLOW_DOWN: &str = "ask me again in about";

#[tokio::test]
async fn a_person_over_the_per_minute_limit_is_told_to_wait_and_remembers_still_land() {
    let h = Harness::build(true, |c| c.limits.answers_per_person_per_minute = 2).await;
    for _ in 0..2 {
        let reply = h.dm("alice", "how are you?").await;
        assert!(!reply.contains(SLOW_DOWN), "{reply}");
    }
    assert_eq!(h.fake().count("reply"), 2);
    let messages = h.message_count().await;
    let reply = h.dm("alice", "and what about tomorrow?").await;
    assert!(reply.contains(SLOW_DOWN), "{reply}");
    assert_eq!(h.fake().count("reply"), 2, "no model call over the limit");
    assert_eq!(
        h.message_count().await,
        messages + 2,
        "the question and the answer are stored"
    );
    // A remember over the limit is kept word for word, without the model.
    let reply = h.dm("alice", "remember that I love Rust").await;
    assert!(reply.starts_with("Got it"), "{reply}");
    assert_eq!(h.fake().count("remember"), 0);
    let alice = h.person("alice").await;
    let entries = h.store.entries(alice, None).await.unwrap();
    assert!(
        entries.iter().any(|e| e.value.contains("love Rust")),
        "{entries:?}"
    );
    // Someone else is not held up; a minute later Alice is answered again.
    assert!(!h.dm("bob", "how are you?").await.contains(SLOW_DOWN));
    h.clock.advance(chrono::Duration::seconds(61));
    assert!(!h.dm("alice", "how are you?").await.contains(SLOW_DOWN));
    assert_eq!(h.fake().count("reply"), 4);
}

#[tokio::test]
async fn a_busy_space_is_limited_as_a_whole() {
    let h = Harness::build(true, |c| c.limits.answers_per_space_per_minute = 3).await;
    let lab = group("lab");
    for who in ["alice", "bob", "carol"] {
        let reply = h.say_in(&lab, who, "Engram, how are you?").await.unwrap();
        assert!(!reply.contains(SLOW_DOWN), "{reply}");
    }
    let reply = h
        .say_in(&lab, "dave", "Engram, how are you?")
        .await
        .unwrap();
    assert!(reply.contains(SLOW_DOWN), "{reply}");
    // Another space, and Dave's private chat, are not.
    let reply = h
        .say_in(&group("home"), "dave", "Engram, hi")
        .await
        .unwrap();
    assert!(!reply.contains(SLOW_DOWN), "{reply}");
    assert!(!h.dm("dave", "hi").await.contains(SLOW_DOWN));
}

#[tokio::test]
async fn a_space_that_spent_its_daily_budget_waits_for_the_next_day() {
    // The fake model's answers cost well over 50 tokens each.
    let h = Harness::build(true, |c| c.limits.space_daily_llm_budget = 50).await;
    let lab = group("lab");
    let first = h
        .say_in(&lab, "alice", "Engram, how are you?")
        .await
        .unwrap();
    assert!(!first.contains("budget"), "{first}");
    let calls = h.fake().total();
    let over = h.say_in(&lab, "bob", "Engram, how are you?").await.unwrap();
    assert!(over.contains("today's budget"), "{over}");
    assert_eq!(h.fake().total(), calls, "no model call over the budget");
    // Memory commands still work there, without the model.
    let kept = h
        .say_in(&lab, "bob", "Engram, remember that I play chess")
        .await
        .unwrap();
    assert!(kept.starts_with("Got it"), "{kept}");
    assert_eq!(h.fake().total(), calls);
    // Another space has its own budget; the next day the lab has a new one.
    let home = h.say_in(&group("home"), "bob", "Engram, hi").await.unwrap();
    assert!(!home.contains("budget"), "{home}");
    h.clock.advance(chrono::Duration::days(1));
    let next_day = h.say_in(&lab, "bob", "Engram, how are you?").await.unwrap();
    assert!(!next_day.contains("budget"), "{next_day}");
}

#[tokio::test]
async fn a_message_mentioning_many_people_builds_memory_for_a_bounded_few() {
    let h = Harness::build(false, |c| c.limits.mentions_per_message = 5).await;
    let mut msg = platform_message(Platform::Discord, "alice", "hello all of you", true);
    msg.mentions = (0..200)
        .map(|i| engram::domain::Mention {
            external_id: format!("u{i}"),
            display_name: format!("user{i}"),
            username: None,
            token: format!("<@u{i}>"),
            is_self: false,
        })
        .collect();
    // The same person mentioned again does not use up the bound.
    msg.mentions.insert(
        1,
        engram::domain::Mention {
            external_id: "u0".into(),
            display_name: "user0".into(),
            username: None,
            token: "<@u0>".into(),
            is_self: false,
        },
    );
    h.bot.handle(&msg).await.unwrap();
    let known: Vec<bool> = futures::future::join_all((0..7).map(|i| {
        let store = h.store.clone();
        async move {
            store
                .find_identity(Platform::Discord, &format!("u{i}"))
                .await
                .unwrap()
                .is_some()
        }
    }))
    .await;
    assert_eq!(known, [true, true, true, true, true, false, false]);
}
