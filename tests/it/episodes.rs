//! The working memory of open episodes on both harnesses, with the fake LLM: refreshed after
//! `episodes.refresh_messages` new messages with one model call, none when nothing changed;
//! read by replies in its own place only (a private chat's never reaches a group); and gone
//! with what a forget takes.

use crate::common::*;
use engram::config::Config;
use engram::retrieval::Indexer;

/// Indexes everything pending (episodes, no vectors), closing nothing.
async fn index(h: &Harness) {
    let indexer = Indexer::new(
        h.store.clone(),
        None,
        h.clock.clone(),
        h.config.retrieval.clone(),
        Config::defaults().episodes.topic_rules(),
        64,
    );
    indexer.index_all(|_| {}).await.unwrap();
}

/// Refreshes what is due; how many episodes were refreshed.
async fn refresh(h: &Harness) -> usize {
    h.memory.manager.refresh_working_memory().await.unwrap()
}

async fn working_memory_refreshes_and_stays_in_its_place(url: Option<String>) {
    let h = harness_on(url, true).await;
    let every = h.config.episodes.refresh_messages as usize;
    assert_eq!(every, 4, "the harness refreshes every 4 messages");
    let lab = group("lab");
    let talk = [
        ("alice", "Where should we hold the team offsite in March?"),
        ("bob", "Lisbon looks good to me, flights are cheap"),
        ("carol", "I'll check the hotel prices near the river"),
        ("alice", "Lisbon it is then, pending the hotel prices"),
    ];
    for (who, text) in &talk[..3] {
        h.say_in(&lab, who, text).await;
    }
    index(&h).await;
    // Below the threshold: nothing to do, no model call.
    assert_eq!(refresh(&h).await, 0);
    assert_eq!(h.fake().count("working_memory"), 0);
    let (who, text) = talk[3];
    h.say_in(&lab, who, text).await;
    index(&h).await;
    assert_eq!(refresh(&h).await, 1);
    assert_eq!(h.fake().count("working_memory"), 1, "one call per refresh");
    // Nothing changed: no refresh, no call.
    assert_eq!(refresh(&h).await, 0);
    assert_eq!(h.fake().count("working_memory"), 1);

    // The reply in the lab takes the running summary (the fake's starts "Then:") and the
    // open loops.
    let reply = h
        .say_in(&lab, "bob", "Engram, where are we with the offsite?")
        .await
        .expect("addressed");
    assert!(
        reply.contains("Then:") && reply.contains("hotel prices"),
        "{reply}"
    );

    // Alice's private chat has its own episode: its working memory never reaches the lab.
    for text in [
        "my passport number is P-7731, keep it handy",
        "the visa office closes at noon",
        "I will book the visa appointment tomorrow",
    ] {
        h.dm("alice", text).await;
    }
    index(&h).await;
    assert_eq!(
        refresh(&h).await,
        1,
        "the private chat's episode (with the bot's replies)"
    );
    let mine = h.dm("alice", "what was I doing?").await;
    assert!(mine.contains("P-7731"), "positive control: {mine}");
    index(&h).await;
    let theirs = h
        .say_in(&lab, "bob", "Engram, anything new about the trip?")
        .await
        .expect("addressed");
    assert!(theirs.contains("Then:"), "positive control: {theirs}");
    assert!(!theirs.contains("P-7731"), "{theirs}");

    // A forget takes it out of the working memory too: nothing anywhere holds it, and the
    // next refresh is made without it.
    assert!(!rows_holding(&h, "P-7731").await.is_empty());
    let reply = h
        .dm("alice", "forget that my passport number is P-7731")
        .await;
    assert!(reply.contains("forgotten"), "{reply}");
    let left = rows_holding(&h, "P-7731").await;
    assert!(left.is_empty(), "still stored: {left:#?}");
    index(&h).await;
    refresh(&h).await;
    let left = rows_holding(&h, "P-7731").await;
    assert!(left.is_empty(), "made again from what is left: {left:#?}");
}

on_both_harnesses!(working_memory_refreshes_and_stays_in_its_place);
