//! Forgetting forgets, on SQLite and PostgreSQL, offline and with the fake LLM: `forget that
//! X`, `/memory clear`, a paused person, and deleted or edited platform messages leave nothing
//! that comes back: no row of any table holds it (postings, summaries, episodes, notes,
//! histories), no vector is left, search does not find it, and no reply or prompt shows it.
//! Each check has its positive control: the same look finds the thing before it is forgotten.

#[macro_use]
mod common;
use common::*;
use engram::adapters::console::{ConsoleOptions, console_message};
use engram::config::Secrets;
use engram::domain::{MessageId, Platform};
use engram::retrieval::Indexer;
use std::sync::Arc;

/// Runs the background indexer once over everything: vectors (the fake embedding server
/// when the harness has one), episodes, and closing them as episodic memories.
async fn index(h: &Harness) {
    let mut config = h.config.clone();
    let embedder = match &h.fake {
        Some(fake) => {
            config.embed.provider = "openai".into();
            config.embed.base_url = fake.base_url();
            engram::app::embedder(&config, &Secrets::default()).unwrap()
        }
        None => None,
    };
    let clock: Arc<dyn Clock> = h.clock.clone();
    let indexer = Indexer::new(
        h.store.clone(),
        embedder,
        clock,
        config.retrieval.clone(),
        64,
    );
    indexer.index_all(|_| {}).await.unwrap();
    h.clock.advance(chrono::Duration::hours(1));
    indexer.close_episodes().await.unwrap();
}

/// Ids of stored messages whose text holds `needle`.
async fn messages_holding(h: &Harness, who: &str, needle: &str) -> Vec<MessageId> {
    let person = h.person(who).await;
    h.store
        .author_messages(person, None)
        .await
        .unwrap()
        .into_iter()
        .filter(|(_, t)| t.contains(needle))
        .map(|(id, _)| id)
        .collect()
}

/// The LLM requests made since `from` (their prompts as text).
fn prompts_since(h: &Harness, from: usize) -> Vec<String> {
    h.fake
        .as_ref()
        .map(|f| f.requests()[from..].iter().map(|r| r.text()).collect())
        .unwrap_or_default()
}

async fn forget_leaves_nothing(url: Option<String>, llm: bool) {
    let h = harness_on(url, llm).await;
    let dm = ConsoleOptions::private("alice");
    h.dm("alice", "remember that I love Rust").await;
    h.dm("alice", "remember that my salary is 90k").await;
    h.dm("alice", "honestly my salary is 90k and I hate it")
        .await;
    index(&h).await;
    let alice = h.person("alice").await;
    let place = h.place(&dm, "alice").await;
    // Positive controls: before the forget it is in the reply, in search, in the tables and
    // (with vectors) in the vector index.
    let before = h.dm("alice", "what do you know about me").await;
    assert!(before.contains("90k"), "{before}");
    assert!(
        search_texts(&h, &place, alice, "salary 90k")
            .await
            .iter()
            .any(|t| t.contains("90k"))
    );
    assert!(!rows_holding(&h, "90k").await.is_empty());
    let stated = messages_holding(&h, "alice", "90k").await;
    assert_eq!(stated.len(), 2, "the remember and the chatter");
    if llm {
        assert_eq!(h.store.message_vectors(&stated).await.unwrap().len(), 2);
    }

    let reply = h.dm("alice", "forget that my salary is 90k").await;
    assert!(reply.contains("forgotten"), "{reply}");
    let asked_from = h.fake.as_ref().map_or(0, |f| f.total());
    let hello = h.dm("alice", "hello").await;
    assert!(!hello.contains("90k"), "{hello}");
    let recall = h.dm("alice", "what do you know about me").await;
    assert!(!recall.contains("90k"), "{recall}");
    assert!(recall.contains("Rust"), "the rest stays: {recall}");
    for prompt in prompts_since(&h, asked_from) {
        assert!(
            !prompt.contains("90k"),
            "a prompt after the forget: {prompt}"
        );
    }
    assert!(
        search_texts(&h, &place, alice, "salary 90k")
            .await
            .iter()
            .all(|t| !t.contains("90k"))
    );
    assert!(h.store.message_vectors(&stated).await.unwrap().is_empty());
    assert!(
        h.store
            .entries(alice, None)
            .await
            .unwrap()
            .iter()
            .all(|e| !e.value.contains("90k"))
    );
    assert!(
        h.store
            .entry_history(alice)
            .await
            .unwrap()
            .iter()
            .all(|v| !v.value.contains("90k"))
    );
    // Episodes made from those messages are made again without them.
    index(&h).await;
    let left = rows_holding(&h, "90k").await;
    assert!(left.is_empty(), "still stored: {left:#?}");
}

async fn forget_leaves_nothing_offline(url: Option<String>) {
    forget_leaves_nothing(url, false).await;
}

async fn forget_leaves_nothing_with_the_llm(url: Option<String>) {
    forget_leaves_nothing(url, true).await;
}

/// `/memory clear`: in her private chat and in a group, what alice said is no longer read by
/// anything: replies, summaries (with the LLM they were computed and stored before), search,
/// episodes, any table.
async fn clear_leaves_nothing(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    h.dm("alice", "my divorce papers arrive tomorrow").await;
    h.dm("alice", "remember that I love Rust").await;
    h.say_in(&lab, "alice", "I am secretly job hunting").await;
    h.say_in(&lab, "bob", "the build is green again").await;
    h.say_in(
        &lab,
        "bob",
        "Engram, remember this about @alice: she bikes to work",
    )
    .await;
    index(&h).await;
    let alice = h.person("alice").await;
    let bob = h.person("bob").await;
    let lab_place = h.place(&lab, "bob").await;
    // Positive controls.
    let mine = h.dm("alice", "what do you know about me").await;
    assert!(mine.contains("divorce") && mine.contains("Rust"), "{mine}");
    let theirs = h
        .say_in(&lab, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(
        theirs.contains("job hunting") && theirs.contains("bikes"),
        "{theirs}"
    );
    assert!(
        !search_texts(&h, &lab_place, bob, "job hunting")
            .await
            .is_empty()
    );
    assert!(!rows_holding(&h, "divorce").await.is_empty());

    assert!(h.dm("alice", "/memory clear").await.contains("yes"));
    assert!(h.dm("alice", "yes").await.starts_with("Done"));
    let mine = h.dm("alice", "what do you know about me").await;
    for gone in ["divorce", "Rust", "job hunting", "bikes"] {
        assert!(!mine.contains(gone), "{gone}: {mine}");
    }
    let theirs = h
        .say_in(&lab, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(
        !theirs.contains("job hunting") && !theirs.contains("bikes"),
        "{theirs}"
    );
    assert!(
        search_texts(&h, &lab_place, bob, "job hunting")
            .await
            .is_empty()
    );
    // Bob's own words stay his.
    let bobs = h
        .say_in(&lab, "carol", "Engram, what do you know about @bob")
        .await
        .unwrap();
    assert!(bobs.contains("build is green"), "{bobs}");
    index(&h).await;
    for gone in ["divorce", "job hunting", "hunting", "bikes"] {
        let left = rows_holding(&h, gone).await;
        assert!(left.is_empty(), "{gone} still stored: {left:#?}");
    }
    assert!(h.store.entries(alice, None).await.unwrap().is_empty());
    assert!(h.store.hearsay(alice, None).await.unwrap().is_empty());
}

/// Paused: what alice says is kept but nothing is derived from it (no summary, no search, no
/// extraction), and nobody can tell the bot about her; after resume, it all works again.
async fn pause_is_honoured_everywhere(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "I went hiking in the Alps").await;
    h.dm("alice", "/memory pause").await;
    h.say_in(&lab, "alice", "I secretly applied to Globex")
        .await;
    let refused = h
        .say_in(
            &lab,
            "bob",
            "Engram, remember this about @alice: she applied to Globex",
        )
        .await
        .unwrap();
    assert!(refused.contains("paused"), "{refused}");
    let alice = h.person("alice").await;
    assert!(h.store.hearsay(alice, None).await.unwrap().is_empty());
    let from = h.fake().total();
    let reply = h
        .say_in(&lab, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(!reply.contains("Globex"), "{reply}");
    let summaries: Vec<String> = h
        .fake()
        .requests()
        .into_iter()
        .skip(from)
        .filter(|r| r.task == "day_summary")
        .map(|r| r.text())
        .collect();
    assert!(!summaries.is_empty(), "a day summary was made");
    for s in &summaries {
        // Positive control: what she said before pausing is read.
        assert!(s.contains("Alps") && !s.contains("Globex"), "{s}");
    }
    let bob = h.person("bob").await;
    let place = h.place(&lab, "bob").await;
    // Bob's own attempt is his message; hers is found by nothing.
    let found = search_texts(&h, &place, bob, "secretly applied Globex").await;
    assert!(found.iter().all(|t| !t.contains("secretly")), "{found:?}");
    assert!(
        !search_texts(&h, &place, bob, "Alps hiking")
            .await
            .is_empty()
    );
    index(&h).await;
    // Stored (nothing is lost), and only as the message itself.
    let left = rows_holding(&h, "secret").await;
    assert!(
        !left.is_empty() && left.iter().all(|l| l.starts_with("messages:")),
        "{left:#?}"
    );
    // Resumed: new words are memory again.
    h.dm("alice", "/memory resume").await;
    h.say_in(&lab, "alice", "I adopted a greyhound").await;
    assert!(!search_texts(&h, &place, bob, "greyhound").await.is_empty());
}

/// A platform message deleted or edited leaves memory, with what was derived from it: a
/// deleted "remember that …" is forgotten; an edit replaces the text everywhere.
async fn deleted_and_edited_messages_leave_memory(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    let say = |text: &str, id: &str| {
        let mut m = console_message(&lab, "alice", text, 0, h.clock.now(), false);
        m.external_id = id.to_string();
        m
    };
    h.bot
        .handle(&say("Engram, remember that I live in Porto", "m1"))
        .await
        .unwrap();
    h.bot
        .handle(&say("my new flat has a balcony", "m2"))
        .await
        .unwrap();
    h.bot
        .handle(&say("the cat is called Miso", "m3"))
        .await
        .unwrap();
    index(&h).await;
    let asked = h
        .say_in(&lab, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(
        asked.contains("Porto") && asked.contains("balcony"),
        "{asked}"
    );
    let bob = h.person("bob").await;
    let place = h.place(&lab, "alice").await;
    assert!(!search_texts(&h, &place, bob, "balcony").await.is_empty());

    let removed = h
        .bot
        .message_deleted(
            Platform::Console,
            "lab",
            "general",
            &["m1".into(), "m2".into()],
        )
        .await
        .unwrap();
    assert!(removed >= 2, "{removed}");
    let asked = h
        .say_in(&lab, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(
        !asked.contains("Porto") && !asked.contains("balcony") && asked.contains("Miso"),
        "{asked}"
    );
    assert!(search_texts(&h, &place, bob, "balcony").await.is_empty());
    let edit = say("the cat is called Mochi", "m3");
    h.bot.message_edited(&edit).await.unwrap();
    assert!(search_texts(&h, &place, bob, "Miso").await.is_empty());
    assert!(!search_texts(&h, &place, bob, "Mochi").await.is_empty());
    index(&h).await;
    for gone in ["porto", "balcony", "miso"] {
        let left = rows_holding(&h, gone).await;
        assert!(left.is_empty(), "{gone} still stored: {left:#?}");
    }
    let stored = rows_holding(&h, "mochi").await;
    assert!(
        stored.iter().any(|l| l.starts_with("message_terms")) || stored.len() >= 2,
        "the edit is stored and indexed: {stored:#?}"
    );
}

on_both_harnesses!(
    forget_leaves_nothing_offline,
    forget_leaves_nothing_with_the_llm,
    clear_leaves_nothing,
    pause_is_honoured_everywhere,
    deleted_and_edited_messages_leave_memory,
);
