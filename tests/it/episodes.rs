//! The working memory of open episodes on both harnesses, with the fake LLM: refreshed after
//! `episodes.refresh_messages` new messages with one model call, none when nothing changed;
//! read by replies in its own place only (a private chat's never reaches a group); gone
//! with what a forget takes; and a message whose file is described after (or while) a refresh
//! read it is read again.

use crate::common::*;
use engram::llm::fake::Behavior;
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

/// A refresh the model fails while it is out (5xx) keeps the model's summary as it was and
/// stays due: once the model answers again, it is shown the messages that came during the
/// outage (before, an extractive summary replaced its work and moved past them for good). An
/// error that will not pass (400) is not retried: the extractive summary stands in.
async fn an_outage_passes_no_message_by_the_working_memory(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    for (who, text) in [
        ("alice", "Where should we hold the team offsite in March?"),
        ("bob", "Lisbon looks good to me, flights are cheap"),
        ("carol", "I'll check the hotel prices near the river"),
        ("alice", "Lisbon it is then, pending the hotel prices"),
    ] {
        h.say_in(&lab, who, text).await;
    }
    index(&h).await;
    assert_eq!(refresh(&h).await, 1);
    let episode = h
        .store
        .recent_messages(h.place(&lab, "alice").await.space, &lab.channel, None, 10)
        .await
        .unwrap()[0]
        .episode
        .unwrap();
    let made = h.store.episode_working_memory(episode).await.unwrap();
    assert!(made.summary.starts_with("Then:"), "the model's: {made:?}");
    for (who, text) in [
        (
            "bob",
            "the Lisbon offsite hotel near the river has the museum of tiles close by",
        ),
        (
            "carol",
            "hotel prices in Lisbon for the offsite are fine in March",
        ),
        (
            "alice",
            "Lisbon offsite dinner at the hotel on the second night",
        ),
        (
            "bob",
            "for the Lisbon offsite we need a vegetarian option for Dana",
        ),
    ] {
        h.say_in(&lab, who, text).await;
    }
    index(&h).await;
    h.fake().set_behavior(Behavior::Status(503));
    assert_eq!(refresh(&h).await, 0, "nothing kept while the model fails");
    assert_eq!(
        h.store.episode_working_memory(episode).await.unwrap(),
        made,
        "the model's summary stays"
    );
    h.fake().set_behavior(Behavior::Smart);
    assert_eq!(refresh(&h).await, 1, "still due");
    let asked = h
        .fake()
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.task == "working_memory")
        .unwrap();
    for said in ["museum of tiles", "vegetarian option for Dana"] {
        assert!(asked.text().contains(said), "{said}: {}", asked.text());
    }
    // An error that will not pass (the request refused): not asked again and again, the
    // extractive summary stands in and the refresh is done.
    for (who, text) in [
        (
            "carol",
            "the Lisbon offsite hotel has a meeting room for the team",
        ),
        (
            "alice",
            "the Lisbon offsite agenda goes out on Friday with the hotel details",
        ),
        ("bob", "Lisbon offsite: the hotel breakfast starts at seven"),
        ("carol", "the Lisbon offsite hotel checkout is at noon"),
    ] {
        h.say_in(&lab, who, text).await;
    }
    index(&h).await;
    h.fake().set_behavior(Behavior::Status(400));
    assert_eq!(refresh(&h).await, 1, "the extractive one is kept");
    assert_eq!(refresh(&h).await, 0, "and nothing is due any more");
    let now = h.store.episode_working_memory(episode).await.unwrap();
    assert!(!now.summary.starts_with("Then:"), "extractive: {now:?}");
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
    assert!(last.text().contains("agenda draft 3"), "{}", last.text());
    // The paused person's words reached no refresh: the lab's was asked (the positive
    // control), none held theirs.
    let refreshes: Vec<String> = asked
        .iter()
        .filter(|r| r.task == "working_memory")
        .map(|r| r.text())
        .collect();
    assert!(
        refreshes.iter().any(|t| t.contains("Lisbon")),
        "{refreshes:?}"
    );
    assert!(
        refreshes.iter().all(|t| !t.contains("tulips")),
        "{refreshes:?}"
    );

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
    // From all that is left, not only what came after the summary it cleared.
    let dm_episode = episode_of_said(&h, "alice", "the visa office closes at noon").await;
    let rebuilt = h.store.episode_working_memory(dm_episode).await.unwrap();
    assert!(rebuilt.summary.contains("visa office"), "{rebuilt:?}");

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
        .episode_messages(lab_episode, false, engram::store::EpisodeEnd::Oldest, 100)
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
    // What the working memory is now: what a refresh read before it built on it.
    let state = || async {
        let summary = h.store.episode_working_memory(lab_episode).await.unwrap();
        let episode = h.store.episodes(&[lab_episode]).await.unwrap().remove(0);
        (summary.summary, episode.summarized_through)
    };
    let (summary, through) = state().await;
    // Built on a summary that is not there any more (a forget cleared it meanwhile): refused.
    for was in [
        ("a summary cleared meanwhile", through),
        (summary.as_str(), None),
    ] {
        assert!(
            !h.store
                .save_working_memory(lab_episode, &read, was, &stale)
                .await
                .unwrap(),
            "{was:?}"
        );
    }
    assert!(
        h.store
            .save_working_memory(lab_episode, &read, (&summary, through), &fresh)
            .await
            .unwrap(),
        "positive control"
    );
    let (summary, _) = state().await;
    assert_eq!(summary, "a fresh summary");
    h.store.delete_messages(&[read[0].id]).await.unwrap();
    // Read again: refused for the message gone, not for the summary the delete cleared.
    let (summary, through) = state().await;
    assert!(
        !h.store
            .save_working_memory(lab_episode, &read, (&summary, through), &stale)
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

/// Fact-augmented keys through the episode job: the words of a closed episode's details find
/// it, and an episode whose details were kept before keys existed (an older database) gets
/// its keys from the next run without asking the model again.
async fn details_become_search_keys_and_older_ones_get_theirs(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "I maintain the billing service in Go")
        .await;
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    assert_eq!(indexer(&h).close_episodes().await.unwrap(), 1);
    let scope = [h.space_scope("lab").await];
    // The fake model's summary opens with "Episode:", a word no message has.
    let keys_only = "episode";
    assert!(
        episodes_found(h.store.as_ref(), &scope, keys_only)
            .await
            .is_empty()
    );
    let by_message = episodes_found(h.store.as_ref(), &scope, "billing").await;
    assert_eq!(by_message.len(), 1, "the positive control");
    assert_eq!(h.extractor("a").finish_episodes().await.unwrap(), 1);
    assert_eq!(
        episodes_found(h.store.as_ref(), &scope, keys_only).await,
        by_message
    );

    exec(
        &h.config.store.url,
        "DELETE FROM episode_terms; UPDATE episodes SET keys_len = NULL",
    )
    .await;
    assert!(
        episodes_found(h.store.as_ref(), &scope, keys_only)
            .await
            .is_empty()
    );
    let calls = h.fake().count("episode_summary");
    assert_eq!(h.extractor("b").finish_episodes().await.unwrap(), 0);
    assert_eq!(
        episodes_found(h.store.as_ref(), &scope, keys_only).await,
        by_message
    );
    assert_eq!(
        h.fake().count("episode_summary"),
        calls,
        "no new model call"
    );
}

/// Puts `details` (an episode summary as a model would write it) as episode `episode`'s,
/// without search keys, as an older database would have it.
async fn put_details(h: &Harness, episode: i64, details: serde_json::Value) {
    exec(
        &h.config.store.url,
        &format!(
            "UPDATE episodes SET details = '{}', keys_len = NULL WHERE id = {episode}; \
             DELETE FROM episode_terms WHERE episode_id = {episode}",
            details.to_string().replace('\'', "''"),
        ),
    )
    .await;
}

/// Details as a model writes them: this summary and these entities and decisions.
fn details_saying(summary: &str, entities: &[&str], decisions: &[&str]) -> serde_json::Value {
    serde_json::json!({
        "topic": "the week", "summary": summary, "decisions": decisions, "todos": [],
        "entities": entities, "artifacts": [], "open_questions": [], "facts": [], "method": "llm"
    })
}

/// A forget takes what it removes out of the details of the episodes its person wrote in, and
/// so out of their search keys: a model that saw her entries may have written them into an
/// episode's summary, which no message of the episode says (put there here as such a model
/// would), whole or in pieces. Episodes she did not write in keep theirs (others' words).
async fn a_forget_takes_its_words_out_of_episode_details(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    h.say_in(
        &lab,
        "alice",
        "Engram, remember that my badge number is 4471",
    )
    .await
    .expect("addressed");
    h.clock.advance(chrono::Duration::hours(2));
    h.say_in(&lab, "alice", "I maintain the billing service in Go")
        .await;
    h.say_in(&lab, "bob", "the deploy window is on Friday")
        .await;
    h.clock.advance(chrono::Duration::hours(2));
    h.say_in(&lab, "bob", "the museum opens on Monday").await;
    h.say_in(&lab, "carol", "I booked the tickets yesterday")
        .await;
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    indexer(&h).close_episodes().await.unwrap();
    h.extractor("a").finish_episodes().await.unwrap();
    let scope = [h.space_scope("lab").await];
    let (hers, theirs) = (
        episodes_found(h.store.as_ref(), &scope, "billing").await,
        episodes_found(h.store.as_ref(), &scope, "museum").await,
    );
    assert_eq!((hers.len(), theirs.len()), (1, 1));
    put_details(
        &h,
        hers[0],
        details_saying(
            "Alice maintains billing. Her badge is no. 4471. The deploy is on Friday.",
            &["Alice", "4471", "badge number 4471"],
            &["ship the airship release"],
        ),
    )
    .await;
    put_details(
        &h,
        theirs[0],
        details_saying("Bob noted that Alice's badge number is 4471.", &[], &[]),
    )
    .await;
    assert_eq!(h.extractor("a").finish_episodes().await.unwrap(), 0);
    let found = episodes_found(h.store.as_ref(), &scope, "4471").await;
    assert!(
        found.contains(&hers[0]) && found.contains(&theirs[0]),
        "the positive control: {found:?}"
    );

    let reply = h
        .say_in(&lab, "alice", "Engram, forget that my badge number is 4471")
        .await
        .expect("addressed");
    assert!(reply.contains("forgotten"), "{reply}");
    assert_eq!(
        episodes_found(h.store.as_ref(), &scope, "4471").await,
        theirs
    );
    let text = database_text(&h).await;
    let her_details = text
        .lines()
        .find(|l| l.contains("Alice maintains billing."))
        .expect("the rest of her episode's details stays");
    assert!(!her_details.contains("4471"), "{her_details}");
    assert!(
        her_details.contains("The deploy is on Friday.") && her_details.contains("airship"),
        "{her_details}"
    );
    assert!(
        text.contains("Bob noted that Alice's badge number is 4471."),
        "others' words stay"
    );
    // The rest of the keys still find her episode.
    assert_eq!(
        episodes_found(h.store.as_ref(), &scope, "airship").await,
        hers
    );
}

/// Four messages of alice and bob in the lab (enough for the model to summarize), indexed
/// and closed an hour later; the episode's id.
async fn chat_episode(h: &Harness, topic: &str) -> i64 {
    chat_episode_from(h, topic, &format!("I have a plan for the {topic}")).await
}

/// `chat_episode`, alice's first message being `first`.
async fn chat_episode_from(h: &Harness, topic: &str, first: &str) -> i64 {
    let lab = group("lab");
    h.clock.advance(chrono::Duration::hours(2));
    for (who, text) in [
        ("alice", first.to_string()),
        ("bob", format!("tell me more about the {topic}")),
        ("alice", format!("the {topic} starts next week")),
        ("bob", format!("sounds good, the {topic} it is")),
    ] {
        h.say_in(&lab, who, &text).await;
    }
    index(h).await;
    h.clock.advance(chrono::Duration::hours(1));
    indexer(h).close_episodes().await.unwrap();
    let found = episodes_found(h.store.as_ref(), &[h.space_scope("lab").await], topic).await;
    assert_eq!(found.len(), 1, "{found:?}");
    found[0]
}

/// The details kept for `episode`, as stored.
async fn stored_details(h: &Harness, episode: i64) -> String {
    let text = database_text(h).await;
    let prefix = if h.config.store.url.starts_with("postgres") {
        format!("episodes: ({episode},")
    } else {
        format!("episodes: {episode} |")
    };
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .map(str::to_string)
        .unwrap_or_default()
}

/// An entry forgotten while the model writes an episode's details from a prompt that showed
/// it: the forget looked for it in details before these were kept, so the job checks the
/// entries it showed once they are kept, and extractive details replace the model's.
async fn an_entry_forgotten_while_the_model_writes_does_not_stay_in_details(url: Option<String>) {
    let h = harness_on(url, true).await;
    h.say_in(
        &group("lab"),
        "alice",
        "Engram, remember that my badge number is 4471",
    )
    .await
    .expect("addressed");
    let alice = h.person("alice").await;
    let badge = h
        .store
        .entries(alice, None)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.value.contains("4471"))
        .expect("kept as an entry");
    // A model that repeats what it was shown.
    let echo = |topic: &str| {
        Behavior::Content(
            serde_json::json!({
                "topic": topic, "summary": "Alice's badge number is 4471. They made a plan.",
                "decisions": [], "todos": [], "entities": ["Alice"], "artifacts": [],
                "open_questions": [], "facts": []
            })
            .to_string(),
        )
    };
    // The positive control: the entry stays, so do the details that say it.
    let kept = chat_episode(&h, "offsite").await;
    h.fake().push_once(echo("offsite"));
    h.extractor("a").finish_episodes().await.unwrap();
    assert!(stored_details(&h, kept).await.contains("4471"));

    let raced = chat_episode(&h, "hackathon").await;
    h.fake().push_once(echo("hackathon"));
    let (_, finishing) = finishing_held(&h, 0).await;
    h.store.delete_entries(alice, &[badge.id]).await.unwrap();
    h.fake().release();
    finishing.await.unwrap().unwrap();
    let details = stored_details(&h, raced).await;
    assert!(details.contains("hackathon"), "{details}");
    assert!(!details.contains("4471"), "{details}");
}

/// Something of alice's forgotten while the model writes an episode's details (a forget
/// that matched none of the episode's messages and none of the entries its prompt showed:
/// they say it in other words): what the model learned from her messages is not written as
/// an entry after the forget, and the details are extractive. The control: the same close
/// with nothing forgotten learns it.
async fn a_fact_learned_while_its_author_forgets_is_not_kept(url: Option<String>) {
    let h = harness_on(url, true).await;
    let alice_said = |topic: &str| format!("my badge 4471 opens the door for the {topic}");
    let learned = |topic: &str| {
        Behavior::Content(
            serde_json::json!({
                "topic": topic, "summary": format!("Alice's badge opens the {topic} door."),
                "decisions": [], "todos": [], "entities": ["Alice"], "artifacts": [],
                "open_questions": [], "facts": [{"person": "alice",
                    "category": "personal_context", "key": format!("{topic}_badge"),
                    "value": alice_said(topic), "confidence": 0.9, "messages": [1]}]
            })
            .to_string(),
        )
    };
    let holding = |topic: &'static str| {
        let h = &h;
        async move {
            entries_of(h, "alice")
                .await
                .into_iter()
                .filter(|(_, v)| v.contains(topic))
                .count()
        }
    };
    let kept = chat_episode_from(&h, "offsite", &alice_said("offsite")).await;
    h.fake().push_once(learned("offsite"));
    h.extractor("a").finish_episodes().await.unwrap();
    let details = stored_details(&h, kept).await;
    assert!(details.contains("opens the offsite door."), "{details}");
    assert_eq!(holding("offsite").await, 1, "the control: learned");

    let raced = chat_episode_from(&h, "hackathon", &alice_said("hackathon")).await;
    h.fake().push_once(learned("hackathon"));
    let (_, finishing) = finishing_held(&h, 0).await;
    // As every forget of hers begins (what it then removes is elsewhere).
    let alice = h.person("alice").await;
    h.store
        .begin_forgetting(alice, h.clock.now())
        .await
        .unwrap();
    h.fake().release();
    finishing.await.unwrap().unwrap();
    assert_eq!(holding("hackathon").await, 0, "learned after the forget");
    assert_eq!(holding("offsite").await, 1);
    let details = stored_details(&h, raced).await;
    assert!(details.contains("hackathon"), "{details}");
    assert!(!details.contains("opens the hackathon door."), "{details}");
}

/// A close cut off half-way; then a forget of one of its authors' that removes no entry and
/// no message (what it forgets was said in other words, which the part may repeat): what
/// the part came to is not used again, and every part is asked again. (The control, a run
/// that goes on from the part it reached, is `a_close_cut_off_goes_on_from_the_part_it_reached`.)
async fn a_forget_of_an_authors_drops_what_a_cut_off_close_came_to(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    payroll_cut_off(&h, &lab).await;
    let alice = h.person("alice").await;
    h.store
        .begin_forgetting(alice, h.clock.now())
        .await
        .unwrap();
    h.clock.advance(chrono::Duration::seconds(
        h.config.jobs.lease_secs as i64 + 1,
    ));
    let from = h.fake().count("episode_summary");
    assert_eq!(h.extractor("b").finish_episodes().await.unwrap(), 1);
    assert_eq!(
        h.fake().count("episode_summary") - from,
        2,
        "both parts asked again"
    );
}

/// The episode job started in the background with the model holding every request from the
/// `answered + 1`th on, once the held one has arrived: the seen count before it, and the job.
async fn finishing_held(
    h: &Harness,
    answered: u64,
) -> (
    usize,
    tokio::task::JoinHandle<Result<usize, engram::memory::MemoryError>>,
) {
    let seen = h.fake().total();
    h.fake().hold_after(answered);
    let finishing = tokio::spawn({
        let extractor = h.extractor("a");
        async move { extractor.finish_episodes().await }
    });
    h.fake()
        .wait_seen(
            seen + answered as usize + 1,
            std::time::Duration::from_secs(20),
        )
        .await;
    (seen, finishing)
}

/// A close cut off half-way (the process gone while the model wrote its second part of three)
/// goes on from there when it runs again: the part done is not asked again, and the details
/// are an uninterrupted close's. What the parts came to is kept only until the details are;
/// a forget of an entry of one of the episode's authors (their entries were in its prompts)
/// drops it, and the close asks every part again.
async fn a_close_cut_off_goes_on_from_the_part_it_reached(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    remember_and_finish(&h, &lab, "I play the cello").await;
    let billing = long_episode(&h, &lab, "billing", 650).await;
    let lease_ends = chrono::Duration::seconds(h.config.jobs.lease_secs as i64 + 1);
    // Killed while the model writes the second part.
    killed_after_one_part(&h).await;
    let kept = h.store.closing_parts(billing).await.unwrap();
    assert!(
        kept.as_deref()
            .is_some_and(|k| k.contains("Episode: I maintain the billing")),
        "the first part is kept: {kept:?}"
    );
    assert_eq!(details_of(&h, billing).await, None);

    // Another process takes the run over when the lease ends: two parts asked, not three.
    h.clock.advance(lease_ends);
    let from = h.fake().count("episode_summary");
    assert_eq!(h.extractor("b").finish_episodes().await.unwrap(), 1);
    assert_eq!(
        h.fake().count("episode_summary") - from,
        2,
        "the part done is not asked again"
    );
    assert!(
        entries_of(&h, "carol")
            .await
            .iter()
            .any(|(_, v)| v == "I keep bees on the billing office roof"),
        "learned from the last part"
    );
    assert_eq!(
        h.store.closing_parts(billing).await.unwrap(),
        None,
        "kept until the details are"
    );
    // The same conversation elsewhere, closed without a stop: the same details.
    let reference = long_episode(&h, &group("hall"), "billing", 650).await;
    assert_ne!(reference, billing);
    let from = h.fake().count("episode_summary");
    assert_eq!(h.extractor("a").finish_episodes().await.unwrap(), 1);
    assert_eq!(h.fake().count("episode_summary") - from, 3);
    let details = details_of(&h, billing).await.expect("kept");
    assert!(
        details.contains("Episode: I maintain the billing"),
        "{details}"
    );
    assert_eq!(Some(details), details_of(&h, reference).await);

    // Cut off again, in a later episode of two parts; alice then forgets an entry that its
    // prompt showed: what the part came to goes, and every part is asked again.
    let payroll = payroll_cut_off(&h, &lab).await;
    h.say_in(&lab, "alice", "Engram, forget that I play the cello")
        .await
        .expect("answered");
    cello_and_its_parts_gone(&h, payroll).await;
    h.clock.advance(lease_ends);
    let from = h.fake().count("episode_summary");
    assert!(h.extractor("b").finish_episodes().await.unwrap() >= 1);
    assert_eq!(
        h.fake().count("episode_summary") - from,
        2,
        "both parts asked again"
    );

    // Cut off once more; then an entry its prompt showed goes by a path that does not look
    // for kept parts (here: straight from the table). The next run drops the parts before it
    // asks anything, and asks every part again.
    remember_and_finish(&h, &lab, "I play the oboe").await;
    let ledger = long_episode(&h, &lab, "ledger", 320).await;
    killed_after_one_part(&h).await;
    assert!(
        h.store.closing_parts(ledger).await.unwrap().is_some(),
        "kept"
    );
    exec(
        &h.config.store.url,
        "DELETE FROM memory_entries WHERE value LIKE '%oboe%'",
    )
    .await;
    assert!(
        !entries_of(&h, "alice")
            .await
            .iter()
            .any(|(_, v)| v.contains("oboe")),
        "gone"
    );
    assert!(
        h.store.closing_parts(ledger).await.unwrap().is_some(),
        "still kept: nothing looked"
    );
    h.clock.advance(lease_ends);
    let (seen, finishing) = finishing_held(&h, 0).await;
    assert_eq!(
        h.store.closing_parts(ledger).await.unwrap(),
        None,
        "dropped before the first part is asked again"
    );
    h.fake().release();
    assert!(finishing.await.unwrap().unwrap() >= 1);
    assert_eq!(h.fake().total() - seen, 2, "both parts asked again");
}

/// A close cut off half-way; then the message that told an entry its prompt showed is
/// deleted (on its platform, or forgotten): the entry goes with the message, and what the
/// part came to goes with the entry.
async fn a_deleted_message_drops_what_a_cut_off_close_came_to(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    remember_and_finish(&h, &lab, "I play the cello").await;
    let payroll = payroll_cut_off(&h, &lab).await;
    let alice = h.person("alice").await;
    let said = h.store.author_messages(alice, None).await.unwrap();
    let (told, _) = said
        .iter()
        .find(|(_, t)| t.ends_with("remember that I play the cello"))
        .expect("stored");
    h.store.delete_messages(&[*told]).await.unwrap();
    cello_and_its_parts_gone(&h, payroll).await;
}

/// A forget that finds the thing nowhere else (no fact, entry or message says it any more:
/// here only a model's summary of her episode does) still takes it out of the details.
async fn a_forget_found_only_in_details_takes_it_out(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "I maintain the billing service in Go")
        .await;
    h.say_in(&lab, "bob", "the deploy window is on Friday")
        .await;
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    indexer(&h).close_episodes().await.unwrap();
    h.extractor("a").finish_episodes().await.unwrap();
    let scope = [h.space_scope("lab").await];
    let hers = episodes_found(h.store.as_ref(), &scope, "billing").await;
    assert_eq!(hers.len(), 1);
    put_details(
        &h,
        hers[0],
        details_saying(
            "Alice maintains billing. She works night shifts as a nurse at Mercy Hospital.",
            &["Alice", "Mercy Hospital"],
            &[],
        ),
    )
    .await;
    // Its search keys follow (the job's next run).
    h.extractor("a").finish_episodes().await.unwrap();
    assert_eq!(
        episodes_found(h.store.as_ref(), &scope, "nurse").await,
        hers,
        "the positive control"
    );
    h.say_in(
        &lab,
        "alice",
        "Engram, forget that I work night shifts as a nurse at Mercy Hospital",
    )
    .await
    .expect("addressed");
    assert_eq!(
        episodes_found(h.store.as_ref(), &scope, "nurse").await,
        Vec::<i64>::new()
    );
    let text = database_text(&h).await;
    assert!(!text.contains("Mercy Hospital"), "{text}");
    assert!(text.contains("Alice maintains billing."), "the rest stays");
}

/// An edit of a message in a finished episode reopens it (the old text leaves it), the edited
/// text joins it again at the same size, and its next close is finished as a new run: the
/// details are made again, from the new text.
async fn an_episode_an_edit_reopened_is_finished_again(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    let say = |text: &str, who: &str, id: &str| said_as(&h, &lab, who, text, id);
    h.bot
        .handle(&say("I maintain the billing service in Go", "alice", "e1"))
        .await
        .unwrap();
    h.bot
        .handle(&say("the deploy window is on Friday", "bob", "e2"))
        .await
        .unwrap();
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    indexer(&h).close_episodes().await.unwrap();
    let episode = episode_of_said(&h, "alice", "I maintain the billing service in Go").await;
    assert_eq!(h.extractor("a").finish_episodes().await.unwrap(), 1);
    assert!(details_of(&h, episode).await.is_some(), "finished once");
    let mut edit = say("I maintain the billing service in Rust", "alice", "e1");
    edit.sent_at = h.clock.now() - chrono::Duration::hours(1);
    h.bot.message_edited(&edit).await.unwrap();
    assert_eq!(details_of(&h, episode).await, None, "reopened by the edit");
    index(&h).await;
    assert_eq!(
        episode_of_said(&h, "alice", "I maintain the billing service in Rust").await,
        episode,
        "the edit is in the same episode again"
    );
    h.clock.advance(chrono::Duration::hours(1));
    indexer(&h).close_episodes().await.unwrap();
    assert_eq!(h.extractor("a").finish_episodes().await.unwrap(), 1);
    let details = details_of(&h, episode).await.expect("finished again");
    assert!(!details.contains("in Go"), "{details}");
}

/// Alice's cello entry is gone, and with it what the cut-off close of `episode` came to.
async fn cello_and_its_parts_gone(h: &Harness, episode: i64) {
    assert!(
        !entries_of(h, "alice")
            .await
            .iter()
            .any(|(_, v)| v.contains("cello")),
        "the entry is gone"
    );
    assert_eq!(
        h.store.closing_parts(episode).await.unwrap(),
        None,
        "dropped with the entry"
    );
}

/// Alice asks the bot to remember `fact` in `space`; that conversation is closed and
/// finished, so her entry is there before what follows.
async fn remember_and_finish(h: &Harness, space: &ConsoleOptions, fact: &str) {
    h.say_in(space, "alice", &format!("Engram, remember that {fact}"))
        .await
        .expect("answered");
    assert!(!entries_of(h, "alice").await.is_empty());
    index(h).await;
    h.clock.advance(chrono::Duration::hours(1));
    indexer(h).close_episodes().await.unwrap();
    h.extractor("a").finish_episodes().await.unwrap();
}

/// A "payroll" episode of two parts in `space` whose close was cut off after the first,
/// which is kept; its id.
async fn payroll_cut_off(h: &Harness, space: &ConsoleOptions) -> i64 {
    let payroll = long_episode(h, space, "payroll", 320).await;
    killed_after_one_part(h).await;
    assert!(
        h.store.closing_parts(payroll).await.unwrap().is_some(),
        "kept"
    );
    payroll
}

/// A closed episode in `space`: alice's "I maintain the {topic} service in Go", `tickets` of
/// bob's "{topic} ticket-N", and for billing carol's "I keep bees on the billing office roof".
async fn long_episode(h: &Harness, space: &ConsoleOptions, topic: &str, tickets: usize) -> i64 {
    let first = format!("I maintain the {topic} service in Go");
    h.say_in(space, "alice", &first).await;
    for i in 0..tickets {
        h.say_in(space, "bob", &format!("{topic} ticket-{i}")).await;
    }
    if topic == "billing" {
        h.say_in(space, "carol", "I keep bees on the billing office roof")
            .await;
    }
    index(h).await;
    h.clock.advance(chrono::Duration::hours(1));
    indexer(h).close_episodes().await.unwrap();
    // The newest episode that message is in (the same words may have been said elsewhere).
    let alice = h.person("alice").await;
    let newest = h
        .store
        .author_messages(alice, None)
        .await
        .unwrap()
        .into_iter()
        .filter(|(_, t)| *t == first)
        .map(|(id, _)| id)
        .max()
        .expect("said");
    h.store.messages_by_id(&[newest]).await.unwrap()[0]
        .episode
        .expect("indexed")
}

/// Finishing the closed episodes is killed while the model writes the second part.
async fn killed_after_one_part(h: &Harness) {
    let (_, finishing) = finishing_held(h, 1).await;
    finishing.abort();
    assert!(finishing.await.unwrap_err().is_cancelled());
    h.fake().release();
}

/// The final details episode `episode` keeps (JSON), if any.
async fn details_of(h: &Harness, episode: i64) -> Option<String> {
    use sqlx::Connection;
    let url = &h.config.store.url;
    let sql = format!("SELECT details FROM episodes WHERE id = {episode}");
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut c)
            .await
            .unwrap()
    } else {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut c)
            .await
            .unwrap()
    }
}

/// The episode of the message of `who` that says `text`.
async fn episode_of_said(h: &Harness, who: &str, text: &str) -> i64 {
    let person = h.person(who).await;
    let said = h.store.author_messages(person, None).await.unwrap();
    let (id, _) = said.iter().find(|(_, t)| t == text).expect("stored");
    h.store.messages_by_id(&[*id]).await.unwrap()[0]
        .episode
        .expect("indexed")
}

/// The messages the last working-memory request showed (after the summary so far).
fn last_refresh_asked(h: &Harness) -> String {
    let text = h
        .fake()
        .requests()
        .iter()
        .rev()
        .find(|r| r.task == "working_memory")
        .expect("a refresh asked the model")
        .text();
    let (_, messages) = text.split_once("<messages>").expect("its messages");
    messages.to_string()
}

async fn each_refresh_reads_what_came_since_the_last(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    // A memory command (and the bot's answer to it) among the first messages: counted in the
    // episode, not read as its conversation.
    for (who, text) in [
        ("alice", "Where should we hold the Lisbon offsite in March?"),
        ("bob", "Engram, remember that I prefer window seats"),
        ("carol", "The Lisbon offsite hotel by the river looks good"),
        ("alice", "Lisbon offsite it is, pending the hotel"),
    ] {
        h.say_in(&lab, who, text).await;
    }
    index(&h).await;
    assert_eq!(refresh(&h).await, 1);
    let first = last_refresh_asked(&h);
    assert!(first.contains("Where should we hold"), "{first}");
    let notes: Vec<String> = (0..4)
        .map(|i| format!("Lisbon offsite hotel note {i}"))
        .collect();
    for text in &notes {
        h.say_in(&lab, "dave", text).await;
    }
    index(&h).await;
    let episode = episode_of_said(&h, "alice", "Lisbon offsite it is, pending the hotel").await;
    for text in &notes {
        assert_eq!(
            episode_of_said(&h, "dave", text).await,
            episode,
            "one episode"
        );
    }
    assert_eq!(refresh(&h).await, 1);
    assert_eq!(h.fake().count("working_memory"), 2);
    let second = last_refresh_asked(&h);
    for text in &notes {
        assert!(second.contains(text.as_str()), "{text} not read: {second}");
    }
    // What the first refresh read is in the summary so far, not shown again.
    assert!(!second.contains("Where should we hold"), "{second}");

    // A long episode: more messages than a refresh reads. The newest are what it reads.
    let many = 1_010;
    for i in 0..many {
        h.say_in(&lab, "erin", &format!("Lisbon offsite hotel remark {i}"))
            .await;
    }
    index(&h).await;
    let last = format!("Lisbon offsite hotel remark {}", many - 1);
    assert_eq!(
        episode_of_said(&h, "erin", &last).await,
        episode,
        "one episode"
    );
    assert_eq!(refresh(&h).await, 1);
    let third = last_refresh_asked(&h);
    assert!(third.contains(&last), "the newest is read");

    // Only memory commands since (counted, not read): due, but no model call.
    let calls = h.fake().count("working_memory");
    for text in [
        "I want the Lisbon offsite hotel by the river",
        "my Lisbon offsite hotel remark matters",
        "the Lisbon offsite hotel remark list is mine",
    ] {
        h.say_in(&lab, "bob", &format!("Engram, remember that {text}"))
            .await
            .expect("answered");
    }
    index(&h).await;
    assert_eq!(refresh(&h).await, 1, "covered");
    assert_eq!(h.fake().count("working_memory"), calls, "no call");
    assert_eq!(refresh(&h).await, 0, "not due again");
    let memory = h.store.episode_working_memory(episode).await.unwrap();
    assert!(memory.summary.contains("Then:"), "kept: {memory:?}");

    // A conversation of memory commands only (an episode of its own): covered once, no call,
    // and not due at every tick after.
    let desk = group("desk");
    for text in ["I prefer aisle seats", "my badge is blue"] {
        h.say_in(&desk, "carol", &format!("Engram, remember that {text}"))
            .await
            .expect("answered");
    }
    index(&h).await;
    assert_eq!(refresh(&h).await, 1, "covered");
    assert_eq!(refresh(&h).await, 0, "not due again");
    assert_eq!(h.fake().count("working_memory"), calls, "no call");
}

/// An episode longer than the model is shown at once closes in parts: one call each, each
/// with what the parts before came to, and what is said in the last part is learned too.
async fn a_long_episode_closes_in_parts(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "I maintain the billing service in Go")
        .await;
    h.say_in(&lab, "alice", "who books the billing hotel?")
        .await;
    for i in 0..650 {
        // Two words: no fact in them (the fake learns from statements of three or more).
        h.say_in(&lab, "bob", &format!("billing ticket-{i}")).await;
    }
    h.say_in(&lab, "carol", "I keep bees on the billing office roof")
        .await;
    index(&h).await;
    let episode = episode_of_said(&h, "carol", "I keep bees on the billing office roof").await;
    let read = h
        .store
        .episode_messages(episode, false, engram::store::EpisodeEnd::Oldest, 1000)
        .await
        .unwrap();
    assert_eq!(
        read.len(),
        653,
        "{:?}",
        read.iter().map(|m| &m.text).collect::<Vec<_>>()
    );
    assert_eq!(
        episode_of_said(&h, "alice", "I maintain the billing service in Go").await,
        episode,
        "one episode"
    );
    h.clock.advance(chrono::Duration::hours(1));
    assert!(indexer(&h).close_episodes().await.unwrap() >= 1);
    let from = h.fake().total();
    assert!(h.extractor("a").finish_episodes().await.unwrap() >= 1);
    let asked: Vec<String> = h.fake().requests()[from..]
        .iter()
        .filter(|r| r.task == "episode_summary")
        .map(|r| r.text())
        .collect();
    assert_eq!(asked.len(), 3, "653 messages, at most 300 a part");
    assert!(!asked[0].contains("</earlier>"), "{}", asked[0]);
    for part in &asked[1..] {
        assert!(
            part.contains("</earlier>") && part.contains("Episode: I maintain the billing"),
            "what the first part came to goes with the next: {part}"
        );
        assert!(
            part.contains("<earlier_open_questions>who books the billing hotel?"),
            "and the questions still open: {part}"
        );
    }
    assert!(asked[2].contains("bees"));
    let lab_scope = h.space_scope("lab").await.key();
    assert!(
        entries_of(&h, "carol").await.contains(&(
            lab_scope.clone(),
            "I keep bees on the billing office roof".into()
        )),
        "learned from the last part"
    );
    assert!(
        entries_of(&h, "alice")
            .await
            .contains(&(lab_scope, "I maintain the billing service in Go".into())),
        "and from the first"
    );
    // Three parts of 218, 218 and 217 messages; the last part's summary and open questions,
    // which carry the earlier ones, are the episode's.
    let details = stored_details(&h, episode).await;
    assert!(
        details.contains("Episode: I maintain the billing")
            && details.contains("Then: billing ticket-216 Then: billing ticket-434"),
        "{details}"
    );
    assert!(
        details.contains("who books the billing hotel?"),
        "{details}"
    );

    // A claim lost while the model writes a part (the process took too long and another took
    // the run over): this one stops before the next part (of three), keeping no details (the
    // first part, done while it held the claim, is kept for whoever goes on).
    let desk = group("desk");
    for i in 0..700 {
        h.say_in(&desk, "bob", &format!("support ticket-{i}")).await;
    }
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    indexer(&h).close_episodes().await.unwrap();
    let (seen, finishing) = finishing_held(&h, 1).await;
    exec(
        &h.config.store.url,
        "UPDATE job_runs SET holder = 'b' WHERE job = 'episode' AND status = 'running'",
    )
    .await;
    h.fake().release();
    assert_eq!(
        finishing.await.unwrap().unwrap(),
        0,
        "nothing finished here"
    );
    assert_eq!(h.fake().total(), seen + 2, "no third part asked");
    let support = episode_of_said(&h, "bob", "support ticket-0").await;
    assert_eq!(details_of(&h, support).await, None, "no details kept");
    let parts: Vec<serde_json::Value> =
        serde_json::from_str(&h.store.closing_parts(support).await.unwrap().expect("kept"))
            .unwrap();
    assert_eq!(
        parts.len(),
        1,
        "only the part done while the claim was held"
    );

    // Another run kept the episode's details while this one's model wrote (its lease ran
    // out): what this one learned stays, as the other's would.
    let hall = group("hall");
    for text in [
        "I repair old synthesizers at home",
        "the synthesizers need new capacitors",
        "capacitors for synthesizers are cheap",
        "I will order synthesizers capacitors",
    ] {
        h.say_in(&hall, "carol", text).await;
    }
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    indexer(&h).close_episodes().await.unwrap();
    let raced = episode_of_said(&h, "carol", "I repair old synthesizers at home").await;
    let said = h
        .store
        .episode_messages(raced, false, engram::store::EpisodeEnd::Oldest, 100)
        .await
        .unwrap();
    let (_, finishing) = finishing_held(&h, 0).await;
    assert_eq!(
        h.store
            .save_episode_details(raced, &said, "{}", "synthesizers")
            .await
            .unwrap(),
        engram::store::DetailsSaved::Kept
    );
    h.fake().release();
    finishing.await.unwrap().unwrap();
    let hall_scope = h.space_scope("hall").await.key();
    assert!(
        entries_of(&h, "carol")
            .await
            .contains(&(hall_scope, "I repair old synthesizers at home".into())),
        "{:?}",
        entries_of(&h, "carol").await
    );
}

/// Token pressure: fewer new messages than `episodes.refresh_messages` but more search words
/// than `episodes.refresh_words` make a refresh due (one model call); short lines do not.
async fn a_long_burst_refreshes_before_the_count(url: Option<String>) {
    let h = Harness::build(true, |c| {
        if let Some(url) = url {
            c.store.url = url;
        }
        c.episodes.refresh_words = 60;
    })
    .await;
    assert_eq!(h.config.episodes.refresh_messages, 4);
    let lab = group("lab");
    h.say_in(&lab, "alice", "short one").await;
    h.say_in(&lab, "bob", "another short one").await;
    index(&h).await;
    assert_eq!(
        refresh(&h).await,
        0,
        "two short lines: neither count is reached"
    );
    let long: Vec<String> = (0..40).map(|i| format!("budget{i} line{i}")).collect();
    h.say_in(&lab, "carol", &long.join(" ")).await;
    index(&h).await;
    assert_eq!(refresh(&h).await, 1, "three messages, but 80 more words");
    assert_eq!(h.fake().count("working_memory"), 1);
    assert_eq!(refresh(&h).await, 0, "covered, so not due again");
}

/// The Lisbon offsite talk in `lab`, with Bob's message that a picture's description will
/// join (`describe_the_shortlist`), indexed.
async fn shortlist_talk(h: &Harness, lab: &ConsoleOptions) {
    for (who, text) in [
        ("alice", "Where should we hold the Lisbon offsite in March?"),
        ("bob", "Here is the shortlist we made"),
        ("carol", "The Lisbon offsite hotel by the river looks good"),
        ("alice", "Lisbon offsite it is, pending the hotel"),
    ] {
        h.say_in(lab, who, text).await;
    }
    index(h).await;
}

/// The description of a picture joins Bob's shortlist message, as a vision model's answer
/// does (`Store::describe_attachment`); the message's text now.
async fn describe_the_shortlist(h: &Harness) -> Option<String> {
    let bob = h.person("bob").await;
    let said = h.store.author_messages(bob, None).await.unwrap();
    let (shortlist, _) = said
        .iter()
        .find(|(_, t)| t == "Here is the shortlist we made")
        .expect("stored");
    let rewrite = |t: &str| Some((format!("{t}\n{SHORTLIST_GIST}"), None));
    h.store
        .describe_attachment(*shortlist, 0, "{}", &rewrite, &[])
        .await
        .unwrap()
}

const SHORTLIST_GIST: &str = "[image#1 shortlist.png] a whiteboard listing three Lisbon hotels";

/// A message whose text grows after the running summary read it (an image's description
/// joins its line once the vision model answers; a redelivered update is described late)
/// is read again at the next refresh, as one new message: the description reaches the
/// running summary. The messages after it are shown again with it; the ones before are not.
async fn a_message_described_after_a_refresh_is_read_again(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    shortlist_talk(&h, &lab).await;
    assert_eq!(refresh(&h).await, 1);
    assert_eq!(h.fake().count("working_memory"), 1);
    let kept = describe_the_shortlist(&h).await;
    assert!(kept.is_some_and(|t| t.ends_with(SHORTLIST_GIST)));
    // One new message so far: not due before the count.
    index(&h).await;
    assert_eq!(refresh(&h).await, 0);
    for text in ["Booked the river hotel", "Flights are next"] {
        h.say_in(&lab, "dave", text).await;
    }
    index(&h).await;
    assert_eq!(refresh(&h).await, 0, "three new of four");
    h.say_in(&lab, "erin", "I can take the flights").await;
    index(&h).await;
    assert_eq!(refresh(&h).await, 1);
    let asked = last_refresh_asked(&h);
    assert!(asked.contains(SHORTLIST_GIST), "{asked}");
    assert!(asked.contains("I can take the flights"), "{asked}");
    assert!(
        !asked.contains("Where should we hold"),
        "read before: {asked}"
    );
}

/// A file described while a refresh is being made from its bare line (the model still
/// answering): that summary is not kept, and the next refresh reads the message with its
/// description.
async fn a_message_described_during_a_refresh_is_read_again(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    shortlist_talk(&h, &lab).await;
    h.fake().hold();
    let refreshing = tokio::spawn({
        let manager = h.memory.manager.clone();
        async move { manager.refresh_working_memory().await }
    });
    h.fake()
        .wait_seen(1, std::time::Duration::from_secs(20))
        .await;
    describe_the_shortlist(&h).await;
    h.fake().release();
    assert_eq!(
        refreshing.await.unwrap().unwrap(),
        0,
        "made from the bare line: not kept"
    );
    assert!(
        !last_refresh_asked(&h).contains("whiteboard"),
        "positive control"
    );
    assert_eq!(refresh(&h).await, 1);
    assert_eq!(h.fake().count("working_memory"), 2);
    let asked = last_refresh_asked(&h);
    assert!(asked.contains(SHORTLIST_GIST), "{asked}");
}

/// How many lines of `person`'s daily notes note a fact holding `words`.
async fn noted(h: &Harness, person: engram::domain::PersonId, words: &str) -> usize {
    h.store
        .daily_notes(person, None)
        .await
        .unwrap()
        .iter()
        .map(|n| {
            n.text
                .lines()
                .filter(|l| l.starts_with("- ") && l.contains(words))
                .count()
        })
        .sum()
}

/// What closing an episode learns goes through the daily extraction's gate: a fact the model
/// is unsure of (the fake gives "maybe" 0.5) is a daily note, not a MEMORY.md entry; and the
/// day's extraction over the same messages, before or after the close, writes no entry twice.
/// (Each source keeps its own note, taken back on its own when its messages are forgotten.)
async fn closing_and_the_day_learn_each_fact_once_through_one_gate(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "I maintain the billing service in Go")
        .await;
    h.say_in(&lab, "alice", "maybe I will take harp lessons next year")
        .await;
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    assert_eq!(indexer(&h).close_episodes().await.unwrap(), 1);
    assert_eq!(h.extractor("a").finish_episodes().await.unwrap(), 1);
    let holding = |entries: &[(String, String)], word: &str| {
        entries.iter().filter(|(_, v)| v.contains(word)).count()
    };
    let learned = entries_of(&h, "alice").await;
    assert_eq!(holding(&learned, "billing"), 1, "{learned:?}");
    assert_eq!(holding(&learned, "harp"), 0, "below the gate: {learned:?}");
    let alice = h.person("alice").await;
    assert_eq!(
        noted(&h, alice, "harp lessons").await,
        1,
        "a daily note instead"
    );

    // The day's extraction reads the same messages: the same facts, once each.
    let day = h.clock.now().date_naive();
    let runs = h
        .extractor("b")
        .extract_all(day, false, |_, _| {})
        .await
        .unwrap();
    assert!(runs.iter().all(|r| r.error.is_none()), "{runs:?}");
    assert!(!runs.is_empty(), "alice's day was extracted");
    let after = entries_of(&h, "alice").await;
    assert_eq!(holding(&after, "billing"), 1, "{after:?}");
    assert_eq!(holding(&after, "harp"), 0, "{after:?}");
    assert!(
        noted(&h, alice, "harp lessons").await >= 1,
        "still a note, not an entry"
    );

    // The other order, the next day: the day's extraction first, the episode's close after.
    h.clock.advance(chrono::Duration::days(1));
    let day = h.clock.now().date_naive();
    h.say_in(&lab, "alice", "I run the payroll service in Rust")
        .await;
    index(&h).await;
    h.extractor("c")
        .extract_all(day, false, |_, _| {})
        .await
        .unwrap();
    let learned = entries_of(&h, "alice").await;
    assert_eq!(holding(&learned, "payroll"), 1, "{learned:?}");
    h.clock.advance(chrono::Duration::hours(1));
    assert_eq!(indexer(&h).close_episodes().await.unwrap(), 1);
    assert_eq!(h.extractor("d").finish_episodes().await.unwrap(), 1);
    let after = entries_of(&h, "alice").await;
    assert_eq!(
        holding(&after, "payroll"),
        1,
        "not again by the close: {after:?}"
    );
}

/// An episode's details (a model's summary, entities, decisions) are memory of the episode's
/// place: their words find it from there and from nowhere else. A private chat's episode whose
/// summary names a word none of its messages has is not found from a group its author shares
/// with the bot, by its keys or by the bot's search there.
async fn a_private_episodes_details_stay_in_their_chat(url: Option<String>) {
    let h = harness_on(url, true).await;
    h.dm("alice", "I am planning a trip with my sister").await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "the lab meeting moved to Friday")
        .await;
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    assert!(indexer(&h).close_episodes().await.unwrap() >= 2);
    let private = episode_of_said(&h, "alice", "I am planning a trip with my sister").await;
    put_details(
        &h,
        private,
        details_saying(
            "Alice plans a trip to Zanzibar with her sister",
            &["Zanzibar"],
            &["book the Zanzibar ferry"],
        ),
    )
    .await;
    h.extractor("a").finish_episodes().await.unwrap();
    let alice = h.person("alice").await;
    let dm = [engram::domain::Scope::Dm(alice)];
    let group_scopes = [h.space_scope("lab").await, engram::domain::Scope::Global];
    assert_eq!(
        episodes_found(h.store.as_ref(), &dm, "zanzibar ferry").await,
        vec![private],
        "the positive control: found in her chat"
    );
    assert!(
        episodes_found(h.store.as_ref(), &group_scopes, "zanzibar ferry")
            .await
            .is_empty()
    );
    let retriever =
        engram::retrieval::Retriever::new(h.store.clone(), None, h.config.retrieval.clone());
    let now = h.clock.now();
    let search = |scopes: &[engram::domain::Scope]| {
        let (retriever, scopes) = (&retriever, scopes.to_vec());
        async move {
            retriever
                .search("Zanzibar ferry trip sister", &scopes, Some(alice), now, 20)
                .await
                .unwrap()
        }
    };
    let found = search(&group_scopes).await;
    assert!(
        found.iter().all(|r| !r.message.text.contains("sister")),
        "{found:?}"
    );
    let mine = search(&dm).await;
    assert!(
        mine.iter().any(|r| r.message.text.contains("sister")),
        "the positive control: {mine:?}"
    );
}

on_both_harnesses!(
    closing_and_the_day_learn_each_fact_once_through_one_gate,
    a_private_episodes_details_stay_in_their_chat,
    an_outage_passes_no_message_by_the_working_memory,
    an_episode_an_edit_reopened_is_finished_again,
    a_message_described_during_a_refresh_is_read_again,
    a_message_described_after_a_refresh_is_read_again,
    a_long_burst_refreshes_before_the_count,
    a_long_episode_closes_in_parts,
    a_close_cut_off_goes_on_from_the_part_it_reached,
    a_deleted_message_drops_what_a_cut_off_close_came_to,
    each_refresh_reads_what_came_since_the_last,
    an_entry_forgotten_while_the_model_writes_does_not_stay_in_details,
    a_fact_learned_while_its_author_forgets_is_not_kept,
    a_forget_of_an_authors_drops_what_a_cut_off_close_came_to,
    a_forget_takes_its_words_out_of_episode_details,
    a_forget_found_only_in_details_takes_it_out,
    working_memory_refreshes_and_stays_in_its_place,
    closing_learns_own_facts_once_in_scope,
    details_become_search_keys_and_older_ones_get_theirs,
);

postgres_test! {
/// A forget that PostgreSQL aborts to break a deadlock (here with another transaction that
/// holds the message's episode, then asks for the message the forget holds) is run again and
/// goes through, and so does the other; what was not forgotten stays.
async fn a_forget_aborted_by_a_deadlock_is_run_again() {
    let url = crate::common::fresh_postgres_url().await;
    let h = harness_on(Some(url.clone()), false).await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "my locker code is 4512").await;
    h.say_in(&lab, "bob", "the launch moved to Friday").await;
    index(&h).await;
    let episode = episode_of_said(&h, "alice", "my locker code is 4512").await;
    let alice = h.person("alice").await;
    let said = h.store.author_messages(alice, None).await.unwrap();
    let (message, _) = said
        .iter()
        .find(|(_, t)| t == "my locker code is 4512")
        .expect("stored");
    // The forget holds the message and waits for the episode, which the other holds; the
    // other then asks for the message.
    let forget = in_a_deadlock(
        &url,
        ("SELECT id FROM episodes WHERE id = $1 FOR UPDATE", episode),
        "%FROM episodes%",
        ("SELECT id FROM messages WHERE id = $1 FOR UPDATE", message.0),
        {
            let store = h.store.clone();
            let message = *message;
            async move { store.delete_messages(&[message]).await }
        },
    )
    .await;
    let deleted = forget.expect("run again after the deadlock");
    assert!(deleted >= 1);
    let text = database_text(&h).await;
    assert!(!text.contains("4512"), "{text}");
    assert!(text.contains("the launch moved to Friday"));
}
}

postgres_test! {
/// A clear that PostgreSQL aborts to break a deadlock (another transaction holds the person's
/// facts, then asks for their entries, which the clear has deleted and holds) is run again
/// and goes through; another person's memory stays.
async fn a_clear_aborted_by_a_deadlock_is_run_again() {
    let url = crate::common::fresh_postgres_url().await;
    let h = harness_on(Some(url.clone()), false).await;
    let lab = group("lab");
    for (who, fact) in [("alice", "my locker code is 4512"), ("bob", "the launch moved to Friday")] {
        h.say_in(&lab, who, &format!("Engram, remember that {fact}"))
            .await
            .expect("answered");
    }
    let alice = h.person("alice").await;
    // The clear holds (has deleted) alice's entries and waits for her facts, which the other
    // holds; the other then asks for the entries.
    let clear = in_a_deadlock(
        &url,
        ("SELECT person_id FROM facts WHERE person_id = $1 FOR UPDATE", alice.0),
        "%DELETE FROM facts%",
        ("SELECT id FROM memory_entries WHERE person_id = $1 FOR UPDATE", alice.0),
        {
            let store = h.store.clone();
            async move { store.clear_entries(alice).await }
        },
    )
    .await;
    let removed = clear.expect("run again after the deadlock");
    assert!(removed >= 2, "her entry and her facts: {removed}");
    for table in ["memory_entries", "facts"] {
        assert_eq!(rows_of(&h, table, "4512").await, Vec::<String>::new());
        assert_eq!(rows_of(&h, table, "Friday").await.len(), 1, "{table}: bob's stays");
    }
}
}

/// `work`, run into a deadlock with another transaction on the database at `url`: the other
/// holds the rows `first` selects (at least one), `work` starts and waits for them (a
/// statement `like` that), then the other asks for the rows `second` selects, which `work`
/// holds. PostgreSQL aborts `work`, which waited first; the other commits. `work`'s outcome.
/// (Under load the other may ask only after `work`'s one deadlock check, at
/// `deadlock_timeout`, found nothing: then the other is the one aborted, and `work` goes
/// through without being run again.)
async fn in_a_deadlock<T: Send + 'static>(
    url: &str,
    (first, a): (&'static str, i64),
    like: &str,
    (second, b): (&'static str, i64),
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    use sqlx::Connection;
    let mut other = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut other).await.unwrap();
    let held = sqlx::query(first)
        .bind(a)
        .fetch_all(&mut other)
        .await
        .unwrap();
    assert!(!held.is_empty(), "the other holds a row: {first}");
    let work = tokio::spawn(work);
    waiting_for_a_lock(url, like).await;
    let end = match sqlx::query(second).bind(b).fetch_all(&mut other).await {
        Ok(_) => "COMMIT",
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("40P01") => {
            eprintln!("the other transaction was the one aborted: no run again this time");
            "ROLLBACK"
        }
        Err(e) => panic!("{e}"),
    };
    sqlx::raw_sql(end).execute(&mut other).await.unwrap();
    work.await.unwrap()
}

/// Waits until a statement of the database at `url` that is `like` (an SQL LIKE pattern)
/// waits for a lock.
async fn waiting_for_a_lock(url: &str, like: &str) {
    use sqlx::Connection;
    let mut watch = sqlx::PgConnection::connect(url).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND wait_event_type = 'Lock' AND query LIKE $1",
            )
            .bind(like)
            .fetch_one(&mut watch)
            .await
            .unwrap();
            if waiting > 0 {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("nothing like {like} waits for a lock"));
}

postgres_test! {
/// The episode search reads the messages of its postings by primary key, in the plan made for
/// the question's own values (PostgreSQL's first five runs of a statement on a connection)
/// and in the generic one: planned as a join, the custom plan hashed the whole messages
/// table, every chat's, for each question (14 ms against 3 at 30,000 messages).
async fn the_episode_search_never_reads_every_chats_messages() {
    use sqlx::Connection;
    let url = crate::common::fresh_postgres_url().await;
    let h = harness_on(Some(url.clone()), false).await;
    // Other chats' messages first (ids below the lab's: no walk of the primary key in id
    // order stops early), in their episode, many more than the question's postings.
    h.say_in(&group("office"), "bob", "hello").await;
    index(&h).await;
    exec(
        &url,
        "INSERT INTO messages (space_id, channel, scope, privacy, author_id, is_bot, external_id, text, sent_at, indexed, episode_id) \
         SELECT m.space_id, m.channel, m.scope, m.privacy, m.author_id, false, 'other-' || g, 'filler', m.sent_at, true, m.episode_id \
         FROM (SELECT * FROM messages LIMIT 1) m CROSS JOIN generate_series(1, 5000) g",
    )
    .await;
    let lab = group("lab");
    for n in 0..150 {
        h.say_in(&lab, "alice", &format!("printer {n} is out of paper"))
            .await;
    }
    // A second conversation later, of other words.
    h.clock.advance(chrono::Duration::hours(2));
    h.say_in(&lab, "bob", "lunch is ready").await;
    index(&h).await;
    h.clock.advance(chrono::Duration::hours(1));
    assert_eq!(indexer(&h).close_episodes().await.unwrap(), 3);
    exec(&url, "ANALYZE").await;
    let scope = h.space_scope("lab").await;
    assert_eq!(
        episodes_found(h.store.as_ref(), std::slice::from_ref(&scope), "printer")
            .await
            .len(),
        1,
        "the search finds the lab's episode"
    );
    // The statement as the store sent it, planned here with the values it was sent.
    let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
    let statement: String = sqlx::query_scalar(
        "SELECT query FROM pg_stat_activity WHERE datname = current_database() \
         AND query LIKE 'WITH k AS MATERIALIZED%' LIMIT 1",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    // The values as the store sent them: the question's terms and the scope.
    let list = |items: Vec<String>| format!("'{{{}}}'", items.join(",").replace('\'', "''"));
    let values = format!(
        "{}, {}",
        list(engram::store::query_terms("printer", 8)),
        list(vec![scope.key()])
    );
    for mode in ["force_custom_plan", "force_generic_plan"] {
        let plan = plan_of(&mut c, &statement, mode, &values).await;
        assert!(plan.contains("messages_pkey"), "{mode}: {plan}");
        assert!(!plan.contains("Seq Scan on messages"), "{mode}: {plan}");
    }
    // The positive control: the postings joined to their messages, as the search did before,
    // are planned here as a scan of every message.
    let joined = plan_of(
        &mut c,
        "SELECT t.term, m.episode_id, t.tf FROM message_terms t JOIN messages m ON m.id = t.message_id \
         WHERE t.term = ANY($1) AND t.scope = ANY($2) AND m.episode_id IS NOT NULL",
        "force_custom_plan",
        &values,
    )
    .await;
    assert!(joined.contains("Seq Scan on messages"), "{joined}");
}
}

postgres_test! {
/// Indexing writes each message's row once: it is marked indexed as it is put in its episode.
/// Every UPDATE leaves a dead version of the row, and of its entries in each index of
/// messages, which the searches of a chat's newest messages step over until a vacuum.
async fn indexing_writes_each_message_once() {
    use sqlx::Connection;
    let url = crate::common::fresh_postgres_url().await;
    let h = harness_on(Some(url.clone()), false).await;
    let lab = group("lab");
    for n in 0..3 {
        h.say_in(&lab, "alice", &format!("printer {n} is out of paper"))
            .await;
    }
    exec(&url, "CREATE EXTENSION IF NOT EXISTS pageinspect").await;
    let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
    // Every version of every row in the table's pages, live or dead (nothing is pruned in a
    // page this empty).
    let versions = "SELECT COUNT(*) FROM generate_series(0, \
                    pg_relation_size('messages') / current_setting('block_size')::int - 1) b, \
                    heap_page_items(get_raw_page('messages', b::int)) WHERE lp_flags = 1";
    let messages = count(&mut c, "SELECT COUNT(*) FROM messages").await;
    assert!(messages >= 3);
    assert_eq!(count(&mut c, versions).await, messages, "one version each, as stored");
    index(&h).await;
    let indexed = count(&mut c, "SELECT COUNT(*) FROM messages WHERE indexed").await;
    assert_eq!(indexed, messages, "every message is indexed");
    assert_eq!(
        count(&mut c, versions).await,
        2 * messages,
        "indexing writes a new version of each row, once"
    );
}
}

/// The one number `sql` selects.
async fn count(c: &mut sqlx::PgConnection, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(c).await.unwrap()
}

/// PostgreSQL's plan for `statement` with `values` (its parameters as SQL literals), planned
/// as `mode` says (`plan_cache_mode`).
async fn plan_of(c: &mut sqlx::PgConnection, statement: &str, mode: &str, values: &str) -> String {
    use sqlx::Row;
    // Plain statements: none of sqlx's own prepared ones on the connection are touched.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "SET plan_cache_mode = {mode}; PREPARE planned AS {statement}"
    )))
    .execute(&mut *c)
    .await
    .unwrap();
    let plan = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "EXPLAIN EXECUTE planned({values})"
    )))
    .fetch_all(&mut *c)
    .await
    .unwrap();
    sqlx::raw_sql("DEALLOCATE planned")
        .execute(&mut *c)
        .await
        .unwrap();
    plan.iter()
        .map(|row| row.get::<String, _>(0))
        .collect::<Vec<_>>()
        .join("\n")
}
