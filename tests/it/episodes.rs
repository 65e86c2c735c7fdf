//! The working memory of open episodes on both harnesses, with the fake LLM: refreshed after
//! `episodes.refresh_messages` new messages with one model call, none when nothing changed;
//! read by replies in its own place only (a private chat's never reaches a group); and gone
//! with what a forget takes.

use crate::common::*;
use engram::retrieval::Indexer;

/// The harness's background indexer (episodes, no vectors).
fn indexer(h: &Harness) -> Indexer {
    Indexer::new(
        h.store.clone(),
        None,
        h.clock.clone(),
        h.config.retrieval.clone(),
        h.config.episodes.topic_rules(),
        64,
    )
}

/// Indexes everything pending, closing nothing.
async fn index(h: &Harness) {
    indexer(h).index_all(|_| {}).await.unwrap();
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
    // A paused person's messages are withheld: nothing is due, nothing is summarized.
    h.dm("carol", "/memory pause").await;
    for i in 0..every {
        h.say_in(
            &lab,
            "carol",
            &format!("my secret plan number {i} is tulips"),
        )
        .await;
    }
    index(&h).await;
    assert_eq!(refresh(&h).await, 0);
    assert_eq!(h.fake().count("working_memory"), 1);
    // Messages with files (in another channel): the pieces of their text count in the episode
    // but are not read as conversation; one refresh covers them all, then nothing is due.
    let desk = group("desk");
    for i in 0..every {
        let mut msg = engram::adapters::console::console_message(
            &desk,
            "dave",
            &format!("agenda draft {i}"),
            9_000 + i as u64,
            h.clock.now(),
            false,
        );
        msg.attachments = vec![engram::domain::attachment::IncomingAttachment {
            kind: engram::domain::attachment::AttachmentKind::File,
            name: format!("agenda{i}.txt"),
            mime: Some("text/plain".into()),
            content: Ok(format!("Item {i}: budget for the offsite").into_bytes()),
        }];
        h.bot.handle(&msg).await.unwrap();
    }
    index(&h).await;
    assert_eq!(refresh(&h).await, 1);
    assert_eq!(refresh(&h).await, 0, "covered, so not due again");
    assert_eq!(h.fake().count("working_memory"), 2);
    let asked = h.fake().requests();
    let last = asked
        .iter()
        .rev()
        .find(|r| r.task == "working_memory")
        .unwrap();
    assert!(!last.text().contains("tulips"), "{}", last.text());
    assert!(last.text().contains("agenda draft 3"), "{}", last.text());

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

    // A refresh made from messages one of which was forgotten meanwhile is not kept.
    let bob = h.person("bob").await;
    let said = h.store.author_messages(bob, None).await.unwrap();
    let (lisbon, _) = said
        .iter()
        .find(|(_, t)| t.contains("Lisbon looks good"))
        .unwrap();
    let lab_episode = h.store.messages_by_id(&[*lisbon]).await.unwrap()[0]
        .episode
        .expect("indexed");
    let read = h
        .store
        .episode_messages(lab_episode, false, 100)
        .await
        .unwrap();
    let stale = engram::store::WorkingMemory {
        summary: format!("stale summary quoting {}", read[0].text),
        open_loops: vec![],
    };
    let fresh = engram::store::WorkingMemory {
        summary: "a fresh summary".into(),
        open_loops: vec![],
    };
    assert!(
        h.store
            .save_working_memory(lab_episode, &read, &fresh)
            .await
            .unwrap(),
        "positive control"
    );
    h.store.delete_messages(&[read[0].id]).await.unwrap();
    assert!(
        !h.store
            .save_working_memory(lab_episode, &read, &stale)
            .await
            .unwrap()
    );
    assert!(rows_holding(&h, "stale summary").await.is_empty());
}

/// Entries of `who` as (scope key, value), sorted.
async fn entries_of(h: &Harness, who: &str) -> Vec<(String, String)> {
    let person = h.person(who).await;
    let mut out: Vec<(String, String)> = h
        .store
        .entries(person, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.scope.key(), e.value))
        .collect();
    out.sort();
    out
}

/// Closing episodes in memory: facts are learned from each person's own words, in the
/// episode's scope, once (a process killed after learning and before finishing leaves the
/// same state when the next one takes over); a fact about someone from another person's words
/// refuses the whole answer; a paused person's messages are not even sent to the model.
async fn closing_learns_own_facts_once_in_scope(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    let hall = group("hall");
    h.dm("carol", "/memory pause").await;
    h.say_in(&lab, "alice", "I maintain the billing service in Go")
        .await;
    h.say_in(&lab, "carol", "I collect vintage cameras from Leipzig")
        .await;
    h.dm("alice", "I am learning the cello this winter").await;
    h.say_in(&hall, "alice", "the hall projector is broken again")
        .await;
    h.say_in(&hall, "bob", "alice's manager is leaving the company soon")
        .await;
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    assert!(indexer(&h).close_episodes().await.unwrap() >= 3);
    let from = h.fake().total();
    let extractor = h.extractor("a");
    let finished = extractor.finish_episodes().await.unwrap();
    assert!(finished >= 3, "{finished}");
    let lab_scope = h.space_scope("lab").await.key();
    let alice = entries_of(&h, "alice").await;
    assert!(
        alice.contains(&(
            lab_scope.clone(),
            "I maintain the billing service in Go".into()
        )),
        "learned in the lab's scope: {alice:?}"
    );
    let dm_fact = alice
        .iter()
        .find(|(_, v)| v.contains("cello"))
        .expect("learned in her private chat");
    assert!(dm_fact.0.starts_with("dm:"), "{dm_fact:?}");
    // Bob's words about alice refused the hall's answer (asked twice): nothing learned from
    // it, the details are extractive.
    assert!(
        alice.iter().all(|(_, v)| !v.contains("manager is leaving")),
        "{alice:?}"
    );
    assert!(
        alice.iter().all(|(_, v)| !v.contains("projector")),
        "refused whole, her own fact too: {alice:?}"
    );
    assert!(entries_of(&h, "bob").await.is_empty());
    let hall_details = rows_holding(&h, "manager is leaving").await;
    assert!(
        hall_details
            .iter()
            .any(|r| r.starts_with("episodes:") && r.contains("offline")),
        "{hall_details:#?}"
    );
    // Carol paused: nothing learned, and her words never reached the model.
    assert!(entries_of(&h, "carol").await.is_empty());
    let asked: Vec<_> = h.fake().requests()[from..]
        .iter()
        .filter(|r| r.task == "episode_summary")
        .cloned()
        .collect();
    let prompts: Vec<String> = asked.iter().map(|r| r.text()).collect();
    assert!(
        prompts.iter().any(|p| p.contains("billing service")),
        "positive control"
    );
    assert!(prompts.iter().all(|p| !p.contains("vintage cameras")));
    for r in &asked {
        let t = r.body["temperature"]
            .as_f64()
            .expect("a temperature is sent");
        assert!(t <= 0.2, "temperature {t}");
    }
    // Nothing is due any more: no model call.
    let calls = h.fake().count("episode_summary");
    assert_eq!(extractor.finish_episodes().await.unwrap(), 0);
    assert_eq!(h.fake().count("episode_summary"), calls);

    // A process died after learning, before keeping the details and finishing its claim.
    let before = database_text(&h).await;
    let learned_before = entries_of(&h, "alice").await;
    exec(
        &h.config.store.url,
        "UPDATE episodes SET details = NULL; \
         UPDATE job_runs SET status = 'running', holder = 'dead', lease_until = 0 WHERE job = 'episode'",
    )
    .await;
    h.clock.advance(chrono::Duration::minutes(30));
    assert!(h.extractor("b").finish_episodes().await.unwrap() >= 3);
    assert_eq!(
        entries_of(&h, "alice").await,
        learned_before,
        "learned once"
    );
    let notes = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("daily_notes:"))
            .count()
    };
    assert_eq!(notes(&database_text(&h).await), notes(&before));

    // Her message deleted: what closing its episode learned from it goes; the rest stays.
    let alice_id = h.person("alice").await;
    let said = h.store.author_messages(alice_id, None).await.unwrap();
    let (billing, _) = said.iter().find(|(_, t)| t.contains("billing")).unwrap();
    let message = h.store.messages_by_id(&[*billing]).await.unwrap().remove(0);
    assert!(message.episode.is_some());
    h.memory
        .manager
        .forget_message(&message, None)
        .await
        .unwrap();
    let alice = entries_of(&h, "alice").await;
    assert!(
        alice.iter().all(|(_, v)| !v.contains("billing")),
        "{alice:?}"
    );
    assert!(
        alice.iter().any(|(_, v)| v.contains("cello")),
        "the rest stays: {alice:?}"
    );
}

on_both_harnesses!(
    working_memory_refreshes_and_stays_in_its_place,
    closing_learns_own_facts_once_in_scope,
);
