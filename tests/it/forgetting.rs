//! Forgetting forgets, on SQLite and PostgreSQL, offline and with the fake LLM: `forget that
//! X`, `/memory clear`, a paused person, and deleted or edited platform messages leave nothing
//! that comes back: no row of any table holds it (postings, summaries, episodes, notes,
//! histories), no vector is left, search does not find it, and no reply or prompt shows it.
//! Each check has its positive control: the same look finds the thing before it is forgotten.

use crate::common::*;
use engram::adapters::console::{ConsoleOptions, console_message};
use engram::config::Secrets;
use engram::domain::{MessageId, Platform, Scope};
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
        config.episodes.topic_rules(),
        64,
    );
    indexer.index_all(|_| {}).await.unwrap();
    h.clock.advance(chrono::Duration::hours(1));
    indexer.close_episodes().await.unwrap();
}

/// The daily extraction of the test's first day, run now (with the fake LLM).
async fn extract_today(h: &Harness) -> Vec<engram::memory::extraction::ExtractionRun> {
    let clock: Arc<dyn Clock> = h.clock.clone();
    let llm = engram::app::chat_model(&h.config, &Secrets::default(), clock.clone())
        .unwrap()
        .expect("the fake LLM");
    let extractor = engram::app::extractor(
        &h.config,
        h.store.clone(),
        Some(llm),
        clock,
        "t".into(),
        h.memory.prompts.clone(),
    )
    .unwrap()
    .unwrap();
    extractor
        .extract_all(start_time().date_naive(), false, |_, _| {})
        .await
        .unwrap()
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

/// What the model was shown, or (offline) what the bot answered, when `who` said `text` in
/// private: where a forgotten thing would show up again.
async fn seen_for(h: &Harness, who: &str, text: &str) -> String {
    let from = h.fake.as_ref().map_or(0, |f| f.total());
    let reply = h.dm(who, text).await;
    if h.fake.is_some() {
        let prompts = prompts_since(h, from);
        assert!(!prompts.is_empty(), "a reply is made with the model");
        prompts.join("\n")
    } else {
        reply
    }
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
        assert_eq!(vectors_in_any_space(&h.store, &stated).await.len(), 2);
    }
    assert!(
        h.store
            .entries(alice, None)
            .await
            .unwrap()
            .iter()
            .any(|e| e.value.contains("90k"))
    );
    let seen = seen_for(&h, "alice", "hello, what should I negotiate?").await;
    assert!(seen.contains("90k"), "{seen}");

    let reply = h.dm("alice", "forget that my salary is 90k").await;
    assert!(reply.contains("forgotten"), "{reply}");
    let seen = seen_for(&h, "alice", "hello, what should I negotiate?").await;
    assert!(!seen.contains("90k"), "{seen}");
    let recall = h.dm("alice", "what do you know about me").await;
    assert!(!recall.contains("90k"), "{recall}");
    assert!(recall.contains("Rust"), "the rest stays: {recall}");
    assert!(
        search_texts(&h, &place, alice, "salary 90k")
            .await
            .iter()
            .all(|t| !t.contains("90k"))
    );
    assert!(vectors_in_any_space(&h.store, &stated).await.is_empty());
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
    index(&h).await;
    let said: Vec<MessageId> = h
        .store
        .author_messages(alice, None)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(
        vectors_in_any_space(&h.store, &said).await.len(),
        said.len(),
        "her messages have vectors"
    );
    let secret_in = |text: &str| {
        ["divorce", "job hunting", "bikes"]
            .into_iter()
            .find(|s| text.contains(s))
    };
    assert!(
        h.fake()
            .requests()
            .iter()
            .any(|r| secret_in(&r.text()).is_some()),
        "positive control: prompts held her words before"
    );

    assert!(h.dm("alice", "/memory clear").await.contains("yes"));
    assert!(h.dm("alice", "yes").await.starts_with("Done"));
    let cleared_at = h.fake().total();
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
    // Nothing re-derives it: the 23:00 extraction, the next day's summaries and history.
    h.clock.set(
        start_time()
            .date_naive()
            .and_hms_opt(23, 30, 0)
            .unwrap()
            .and_utc(),
    );
    extract_today(&h).await;
    h.clock.advance(chrono::Duration::hours(12));
    h.say_in(&lab, "bob", "Engram, what do you know about @alice")
        .await;
    h.dm("alice", "what do you know about me").await;
    let prompts = prompts_since(&h, cleared_at);
    assert!(prompts.len() >= 2, "{}", prompts.len());
    for p in prompts {
        assert!(secret_in(&p).is_none(), "a prompt after the clear: {p}");
    }
    assert!(vectors_in_any_space(&h.store, &said).await.is_empty());
    for gone in ["divorce", "job hunting", "hunting", "bikes"] {
        let left = rows_holding(&h, gone).await;
        assert!(left.is_empty(), "{gone} still stored: {left:#?}");
    }
    assert!(h.store.entries(alice, None).await.unwrap().is_empty());
    assert!(h.store.hearsay(alice, None).await.unwrap().is_empty());
}

/// A member whose display name is a common word ("the") cannot make their forget reach the
/// bot's answers to others that hold those words (only answers to them, or naming them), nor
/// take others' facts that begin with that word as about them.
#[tokio::test]
async fn a_name_made_of_common_words_does_not_reach_others_answers() {
    let h = Harness::with_llm().await;
    let phrase = "the meeting is on friday";
    // The fake model's answers repeat the question: the bot's answer to alice says it.
    let answer = h.dm("alice", &format!("{phrase}?")).await;
    assert!(answer.contains(phrase), "{answer}");
    let bots_in_alices_chat = |rows: &[String]| {
        rows.iter()
            .filter(|r| {
                r.starts_with("messages:") && r.contains(" | dm:alice | ") && r.contains("reply:")
            })
            .count()
    };
    assert_eq!(
        bots_in_alices_chat(&rows_holding(&h, phrase).await),
        1,
        "the control"
    );
    // Named with a function word, or with a word of the phrase itself: their forget, with
    // the phrase in their own memory first, reaches only their own.
    for name in ["the", "Friday"] {
        h.dm(name, &format!("remember that {phrase}")).await;
        h.dm(name, &format!("forget that {phrase}")).await;
        let theirs = h.person(name).await;
        let facts = h.store.facts(theirs, &Scope::Dm(theirs)).await.unwrap();
        assert!(
            !facts.text.contains(phrase),
            "{name}: their own forget went through: {facts:?}"
        );
        let left = rows_holding(&h, phrase).await;
        assert_eq!(bots_in_alices_chat(&left), 1, "{name}: {left:#?}");
    }
    // Facts that begin with their word are the speaker's own.
    h.dm("bob", "remember that the bus leaves at noon").await;
    let bob = h.person("bob").await;
    let facts = h.store.facts(bob, &Scope::Dm(bob)).await.unwrap();
    assert!(facts.text.contains("the bus leaves at noon"), "{facts:?}");
    let theirs = h.person("the").await;
    assert!(h.store.hearsay(theirs, None).await.unwrap().is_empty());
    // The control: Alice's own forget reaches her answer.
    h.dm("alice", &format!("forget that {phrase}")).await;
    let left = rows_holding(&h, phrase).await;
    assert_eq!(bots_in_alices_chat(&left), 0, "{left:#?}");
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
    let withheld = messages_holding(&h, "alice", "secretly").await;
    let before = messages_holding(&h, "alice", "Alps").await;
    assert_eq!((withheld.len(), before.len()), (1, 1));
    assert!(vectors_in_any_space(&h.store, &withheld).await.is_empty());
    assert_eq!(
        vectors_in_any_space(&h.store, &before).await.len(),
        1,
        "positive control: her words from before the pause have a vector"
    );
    // The 23:00 extraction reads nothing of hers.
    let from = h.fake().total();
    h.clock.set(
        start_time()
            .date_naive()
            .and_hms_opt(23, 30, 0)
            .unwrap()
            .and_utc(),
    );
    let runs = extract_today(&h).await;
    assert!(runs.iter().all(|r| r.person != alice.0), "{runs:?}");
    for p in prompts_since(&h, from) {
        assert!(!p.contains("secretly"), "{p}");
    }
    // Stored (nothing is lost), and only as the message itself.
    let left = rows_holding(&h, "secret").await;
    assert!(
        !left.is_empty() && left.iter().all(|l| l.starts_with("messages:")),
        "{left:#?}"
    );
    // Resumed: new words are memory again.
    h.clock.advance(chrono::Duration::hours(1));
    h.dm("alice", "/memory resume").await;
    h.say_in(&lab, "alice", "I adopted a greyhound").await;
    assert!(!search_texts(&h, &place, bob, "greyhound").await.is_empty());
    // The day's extraction, run again now: hers is read (the control of the empty run above)
    // and what she said while paused stays out of it.
    let from = h.fake().total();
    let runs = extract_today(&h).await;
    assert!(runs.iter().any(|r| r.person == alice.0), "{runs:?}");
    let prompts = prompts_since(&h, from);
    assert!(prompts.iter().any(|p| p.contains("Alps")), "{prompts:#?}");
    for p in prompts {
        assert!(!p.contains("secretly"), "{p}");
    }
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
    let old: Vec<MessageId> = [
        messages_holding(&h, "alice", "Porto").await,
        messages_holding(&h, "alice", "balcony").await,
        messages_holding(&h, "alice", "Miso").await,
    ]
    .concat();
    assert_eq!(vectors_in_any_space(&h.store, &old).await.len(), 3);
    for word in ["porto", "balcony", "miso"] {
        assert!(
            rows_holding(&h, word)
                .await
                .iter()
                .any(|l| l.starts_with("message_terms")),
            "positive control: {word} is posted"
        );
    }

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
    assert!(vectors_in_any_space(&h.store, &old).await.is_empty());
    for gone in ["porto", "balcony", "miso"] {
        let left = rows_holding(&h, gone).await;
        assert!(left.is_empty(), "{gone} still stored: {left:#?}");
    }
    let stored = rows_holding(&h, "mochi").await;
    assert!(
        stored.iter().any(|l| l.starts_with("message_terms")),
        "the edit is stored and indexed: {stored:#?}"
    );
}

/// The stored messages (of anyone, the bot's too) that hold `needle`.
async fn stored_messages_holding(h: &Harness, needle: &str) -> Vec<String> {
    database_text(h)
        .await
        .lines()
        .filter(|l| l.starts_with("messages:") && l.contains(needle))
        .map(str::to_string)
        .collect()
}

/// How many stored messages holding `needle` each of `scopes` has (the scope is a column
/// of its row: matched as a whole field, so `space:1` is not `space:12`).
async fn held_in(h: &Harness, needle: &str, scopes: &[Scope]) -> Vec<usize> {
    let rows = stored_messages_holding(h, needle).await;
    scopes
        .iter()
        .map(|scope| {
            let key = scope.key();
            rows.iter()
                .filter(|l| l.split(['|', ',']).any(|field| field.trim() == key))
                .count()
        })
        .collect()
}

/// A deleted message's quotes in the bot's later answers go wherever it could have surfaced
/// (here a restricted channel of its space, in an answer to someone else). The bot's messages
/// holding the same words in another space are not its quotes: they stay. Nor are words the
/// bot said there before the message existed: a member who says them and deletes them wipes
/// none of the bot's answers that hold them ("happy to help").
async fn a_deleted_messages_quotes_go_where_it_surfaced_and_only_there(url: Option<String>) {
    let h = harness_on(url, true).await;
    let (lab, staff, home) = (group("lab"), restricted("lab", "staff"), group("home"));
    let text = "the offsite moves to Lisbon in March";
    let own = "the launch party is on Friday";
    // The fake model's answers repeat the question: the bot's own words, before mallory
    // says them here.
    let early = h
        .say_in(&lab, "dave", &format!("Engram, {own}?"))
        .await
        .unwrap();
    assert!(early.contains(own), "{early}");
    h.clock.advance(chrono::Duration::minutes(5));
    // The staff channel sees the public one: its answers to bob say the bot's own words
    // again (after mallory said them), and quote alice.
    let said = |who: &str, text: &str, id: &str| {
        let mut m = console_message(&lab, who, text, 0, h.clock.now(), false);
        m.external_id = id.into();
        m
    };
    h.bot.handle(&said("mallory", own, "echo")).await.unwrap();
    let again = h
        .say_in(&staff, "bob", &format!("Engram, {own}?"))
        .await
        .unwrap();
    assert!(again.contains(own) && !again.contains(text), "{again}");
    h.bot.handle(&said("alice", text, "offsite")).await.unwrap();
    h.clock.advance(chrono::Duration::minutes(5));
    let elsewhere = h
        .say_in(&home, "carol", &format!("Engram, {text}?"))
        .await
        .unwrap();
    assert!(elsewhere.contains(text), "{elsewhere}");
    let quoted = h
        .say_in(&staff, "bob", "Engram, where is the offsite?")
        .await
        .unwrap();
    assert!(quoted.contains(text), "{quoted}");
    let before = stored_messages_holding(&h, text).await;
    assert!(
        before.iter().any(|l| l.contains("where is the offsite")),
        "positive control: the staff answer is stored: {before:#?}"
    );

    h.bot
        .message_deleted(Platform::Console, "lab", "general", &["offsite".into()])
        .await
        .unwrap();
    let after = stored_messages_holding(&h, text).await;
    assert!(
        !after.iter().any(|l| l.contains("where is the offsite")),
        "the quote in the staff channel is gone: {after:#?}"
    );
    // Carol's question and the bot's answer to it, in the other space, stay; alice's
    // message and the quotes are gone.
    assert_eq!(after.len(), 2, "{before:#?}\n{after:#?}");
    assert!(after.iter().all(|l| l.contains("space:2")), "{after:#?}");
    let own_before = stored_messages_holding(&h, own).await;
    assert!(
        own_before.iter().any(|l| l.contains("reply:")),
        "the bot's answers holding its own words: {own_before:#?}"
    );
    h.bot
        .message_deleted(Platform::Console, "lab", "general", &["echo".into()])
        .await
        .unwrap();
    let own_after = stored_messages_holding(&h, own).await;
    assert_eq!(
        own_after.len(),
        own_before.len() - 1,
        "only mallory's own message goes: {own_before:#?}\n{own_after:#?}"
    );
    // A one-word message is no quote to look for: the bot's later answer holding that word
    // stays when it is deleted.
    let mut word = console_message(&lab, "erin", "Porto", 0, h.clock.now(), false);
    word.external_id = "word".into();
    h.bot.handle(&word).await.unwrap();
    h.say_in(&lab, "dave", "Engram, what about Porto then?")
        .await
        .unwrap();
    let porto = stored_messages_holding(&h, "Porto").await.len();
    h.bot
        .message_deleted(Platform::Console, "lab", "general", &["word".into()])
        .await
        .unwrap();
    assert_eq!(stored_messages_holding(&h, "Porto").await.len(), porto - 1);
}

/// A forget asked in a group reaches what may surface there, not what was said elsewhere: the
/// same fact told in her private chat stays there, message and memory.
async fn a_forget_in_a_group_leaves_the_private_chat(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    let told = "remember that I like green tea";
    h.dm("alice", told).await;
    h.say_in(&lab, "alice", &format!("Engram, {told}")).await;
    // The bot quotes it in both places, in answers to her.
    let scopes = [
        Scope::Dm(h.person("alice").await),
        h.space_scope("lab").await,
    ];
    h.dm("alice", "which tea should I buy?").await;
    h.say_in(&lab, "alice", "Engram, which tea should I buy?")
        .await;
    let before = stored_messages_holding(&h, told).await;
    assert!(
        before.iter().any(|l| l.contains("dm:")) && before.iter().any(|l| l.contains("space:")),
        "positive control: told in both places: {before:#?}"
    );
    let quotes = held_in(&h, "I like green tea", &scopes).await;
    assert!(
        quotes[0] >= 2 && quotes[1] >= 2,
        "positive control: quoted in both places: {quotes:?}"
    );
    h.say_in(&lab, "alice", "Engram, forget that I like green tea")
        .await;
    let after = stored_messages_holding(&h, told).await;
    assert!(!after.iter().any(|l| l.contains("space:")), "{after:#?}");
    assert!(after.iter().any(|l| l.contains("dm:")), "{after:#?}");
    assert_eq!(
        held_in(&h, "I like green tea", &scopes).await,
        [quotes[0], 0],
        "the quotes go in the group only"
    );
    let recalled = h.dm("alice", "what do you know about me").await;
    assert!(recalled.contains("green tea"), "{recalled}");
}

/// Forgetting a fact removes every message in the forget's reach that said it, not only the
/// one that asked to remember it; a message that did not say it stays.
async fn a_forget_removes_every_message_that_said_it(url: Option<String>) {
    let h = harness_on(url, false).await;
    let lab = group("lab");
    h.say_in(&lab, "alice", "Engram, remember that my salary is 90k")
        .await;
    h.say_in(&lab, "alice", "between us, my salary is 90k now")
        .await;
    h.say_in(&lab, "alice", "the 90k budget for the offsite is approved")
        .await;
    // The same words, not in the same order: said all the same.
    h.say_in(&lab, "alice", "90k, that is what my salary is")
        .await;
    assert_eq!(
        stored_messages_holding(&h, "90k").await.len(),
        4,
        "positive control"
    );
    h.say_in(&lab, "alice", "Engram, forget that my salary is 90k")
        .await;
    let left = stored_messages_holding(&h, "90k").await;
    assert_eq!(left.len(), 1, "{left:#?}");
    assert!(left[0].contains("offsite"), "{left:#?}");
}

/// Alice's entries, and the stored messages holding what she said.
async fn held(h: &Harness) -> (usize, usize, usize) {
    let alice = h.person("alice").await;
    let entries = h.store.entries(alice, None).await.unwrap().len();
    let mut said = 0;
    for words in ["rains", "what it is", "kalt"] {
        said += stored_messages_holding(h, words).await.len();
    }
    (
        entries,
        said,
        stored_messages_holding(h, "kalt").await.len(),
    )
}

/// A never-mind ("forget it", "vergiss es", "oublie ça", "забудь это", …) names nothing: it
/// forgets nothing, though every message and entry of hers holds those words; a forget that
/// names the thing (the positive control) forgets it.
async fn a_never_mind_forgets_nothing(url: Option<String>) {
    let h = harness_on(url, false).await;
    h.dm("alice", "remember that I love it when it rains").await;
    for said in [
        "it is what it is",
        "es ist kalt, ça va, это всё, eso es, isso aí",
    ] {
        h.dm("alice", said).await;
    }
    let before = held(&h).await;
    assert_eq!((before.0, before.2), (1, 1), "her entry, her words");
    assert!(before.1 >= 3, "{before:?}");
    for never_mind in [
        "forget it",
        "forget it!",
        "ok forget it",
        "Vergiss es",
        "Oublie ça",
        "Забудь это",
        "Olvida eso",
        "Esquece isso",
        // Her name alone: every line about her would match.
        "forget alice",
    ] {
        h.dm("alice", never_mind).await;
        assert_eq!(held(&h).await, before, "{never_mind}");
        assert!(
            !rows_of(&h, "facts", "rains").await.is_empty(),
            "{never_mind}"
        );
    }
    let reply = h.dm("alice", "forget that it").await;
    assert_eq!(held(&h).await, before, "{reply}");
    let reply = h.dm("alice", "forget that I love it when it rains").await;
    assert!(reply.contains("forgotten"), "{reply}");
    assert_eq!(held(&h).await.0, 0, "the positive control forgets");
}

/// Someone who takes back what they told about another person in one group takes back that
/// group's statement and the bot's quotes of it there; the same words told in another group,
/// and the bot's quotes of them there, stay.
async fn a_statement_taken_back_in_one_group_stays_in_another(url: Option<String>) {
    let h = harness_on(url, true).await;
    let (lab, home) = (group("lab"), group("home"));
    let quoted = "alice says: he plays chess";
    for place in [&lab, &home] {
        h.say_in(
            place,
            "alice",
            "Engram, remember this about @bob: he plays chess",
        )
        .await;
        let shown = h
            .say_in(place, "carol", "Engram, what games does @bob play?")
            .await
            .unwrap();
        assert!(shown.contains(quoted), "positive control: {shown}");
    }
    let scopes = [h.space_scope("lab").await, h.space_scope("home").await];
    let quotes = held_in(&h, quoted, &scopes).await;
    assert!(
        quotes[0] >= 1 && quotes[1] >= 1,
        "positive control: {quotes:?}"
    );
    h.say_in(
        &lab,
        "alice",
        "Engram, forget this about @bob: he plays chess",
    )
    .await;
    assert_eq!(held_in(&h, quoted, &scopes).await, [0, quotes[1]]);
    let bob = h.person("bob").await;
    let left = h.store.hearsay(bob, None).await.unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// A message deleted on the platform while the bot is answering it: the delete found the
/// message but not yet the reply, which goes when the answer ends; nothing is sent to the
/// message that is gone.
async fn a_message_deleted_while_answered_leaves_no_reply(url: Option<String>) {
    let h = harness_on(url, true).await;
    let fake = h.fake();
    let lab = group("lab");
    let ask =
        |seq: u64, text: &str| console_message(&lab, "alice", text, seq, h.clock.now(), false);
    let msg = ask(9_100_001, "Engram, how do I open the locker room?");
    fake.hold();
    let answering = tokio::spawn({
        let (bot, msg) = (h.bot.clone(), msg.clone());
        async move { bot.handle(&msg).await }
    });
    fake.wait_seen(1, std::time::Duration::from_secs(20)).await;
    let removed = h
        .bot
        .message_deleted(
            Platform::Console,
            &msg.space_external_id,
            &msg.channel_external_id,
            std::slice::from_ref(&msg.external_id),
        )
        .await
        .unwrap();
    assert_eq!(removed, 1, "stored before the model was asked");
    fake.release();
    let reply = answering.await.unwrap().unwrap();
    assert!(reply.is_none(), "{reply:?}");
    let left = rows_holding(&h, "locker room").await;
    assert!(left.is_empty(), "{left:#?}");
    let text = database_text(&h).await;
    assert!(!text.lines().any(|l| l.starts_with("messages:")), "{text}");
    // The positive control: not deleted, it is answered and kept with its reply.
    let reply = h
        .bot
        .handle(&ask(9_100_002, "Engram, how do I open the locker room?"))
        .await
        .unwrap();
    assert!(reply.is_some());
    let text = database_text(&h).await;
    assert_eq!(
        text.lines().filter(|l| l.starts_with("messages:")).count(),
        2,
        "{text}"
    );
}

/// An edit the database fails to store (a trigger refuses its text here, as a full disk or
/// a lost connection would) leaves the old text where it was, never neither; the edit sent
/// again replaces it.
async fn an_edit_that_cannot_be_stored_keeps_the_old_text(url: Option<String>) {
    let h = harness_on(url, false).await;
    let lab = group("lab");
    let say = |text: &str| said_as(&h, &lab, "alice", text, "m1");
    h.bot.handle(&say("the launch is on Monday")).await.unwrap();
    let alice = h.person("alice").await;
    let place = h.place(&lab, "alice").await;
    let launch = || search_texts(&h, &place, alice, "launch");
    assert_eq!(launch().await, ["the launch is on Monday"]);
    let db = &h.config.store.url;
    let (refuse, allow) = if db.starts_with("postgres") {
        (
            "CREATE FUNCTION refuse_friday() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             IF NEW.text LIKE '%Friday%' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$; \
             CREATE TRIGGER refuse_friday BEFORE INSERT ON messages FOR EACH ROW \
             EXECUTE FUNCTION refuse_friday();",
            "DROP TRIGGER refuse_friday ON messages; DROP FUNCTION refuse_friday();",
        )
    } else {
        (
            "CREATE TRIGGER refuse_friday BEFORE INSERT ON messages WHEN NEW.text LIKE '%Friday%' \
             BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            "DROP TRIGGER refuse_friday;",
        )
    };
    let forgets = || async {
        let lines = h.store.audit_log(Some(alice), 10).await.unwrap();
        lines.iter().filter(|l| l.change.action == "forget").count()
    };
    assert_eq!(forgets().await, 0);
    exec(db, refuse).await;
    let edit = say("the launch moved to Friday");
    assert!(h.bot.message_edited(&edit).await.is_err(), "refused");
    assert_eq!(launch().await, ["the launch is on Monday"]);
    // What was made from the old text went all the same: that is audited.
    assert_eq!(forgets().await, 1);
    exec(db, allow).await;
    h.bot.message_edited(&edit).await.unwrap();
    assert_eq!(launch().await, ["the launch moved to Friday"]);
    assert!(rows_holding(&h, "monday").await.is_empty());
    assert_eq!(forgets().await, 2);
}

on_both_harnesses!(
    an_edit_that_cannot_be_stored_keeps_the_old_text,
    a_never_mind_forgets_nothing,
    a_message_deleted_while_answered_leaves_no_reply,
    a_statement_taken_back_in_one_group_stays_in_another,
    a_forget_removes_every_message_that_said_it,
    a_forget_in_a_group_leaves_the_private_chat,
    a_deleted_messages_quotes_go_where_it_surfaced_and_only_there,
    forget_leaves_nothing_offline,
    forget_leaves_nothing_with_the_llm,
    clear_leaves_nothing,
    pause_is_honoured_everywhere,
    deleted_and_edited_messages_leave_memory,
);

/// A message deleted while the model writes an answer that shows it: the forget looked for
/// the bot's messages quoting it before the answer was stored, so the answer is kept only as
/// the short note a shown memory leaves (withheld), and nothing says it afterwards. The
/// control: the same question answered with nothing forgotten meanwhile keeps its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_made_while_what_it_shows_is_forgotten_is_not_kept() {
    // The model waits for the forget: long enough not to time out meanwhile.
    let h = Harness::build(true, |c| c.llm.timeout_secs = 60.0).await;
    answered_across_a_forget(&h, &h, h.fake()).await;
}

postgres_test! {
/// An answer stored while a forget runs, after the forget looked for the bot's quotes and
/// before it was counted as done: another session holds the message's row, so the forget
/// waits at its deletion; meanwhile a question is answered from the message still there and
/// stored with the forget count as it stands. Once the deletion goes through, the forget
/// finds that answer and it goes too. For a platform delete and for "forget that …".
async fn an_answer_stored_while_a_forget_deletes_goes_too() {
    use engram::memory::FactRequest;
    use sqlx::Connection;
    use std::sync::atomic::{AtomicBool, Ordering};
    for asked in [false, true] {
        let url = fresh_postgres_url().await;
        let h = harness_on(Some(url.clone()), true).await;
        h.dm("alice", "my locker code is 4512").await;
        let alice = h.person("alice").await;
        let said = h.store.author_messages(alice, None).await.unwrap();
        let (told, _) = said.iter().find(|(_, t)| t.contains("4512")).unwrap();
        let told = h.store.messages_by_id(&[*told]).await.unwrap().remove(0);
        let place = h.place(&ConsoleOptions::private("alice"), "alice").await;
        let req = FactRequest {
            subject: alice,
            subject_name: "alice",
            actor: alice,
            actor_name: "alice",
            actor_is_moderator: false,
            place: &place,
            text: "my locker code is 4512",
            source: None,
        };
        let mut hold = sqlx::PgConnection::connect(&url).await.unwrap();
        let holder: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut hold)
            .await
            .unwrap();
        let mut held = hold.begin().await.unwrap();
        // Not a key lock: the answer's rows may still point at the message.
        sqlx::query("SELECT id FROM messages WHERE id = $1 FOR NO KEY UPDATE")
            .bind(told.id.0)
            .fetch_all(&mut *held)
            .await
            .unwrap();
        let done = AtomicBool::new(false);
        let forget = async {
            let manager = &h.memory.manager;
            let forgot = if asked {
                manager.forget(&req).await.map(|_| ())
            } else {
                manager.forget_message(&told, None).await.map(|_| ())
            };
            done.store(true, Ordering::SeqCst);
            forgot
        };
        let meanwhile = async {
            until_held_up_by(&url, holder, || done.load(Ordering::SeqCst)).await;
            assert!(!done.load(Ordering::SeqCst), "the forget did not wait at its deletion");
            let answer = h.dm("alice", "what was my locker code again?").await;
            held.commit().await.unwrap();
            answer
        };
        let (forgot, answer) = tokio::join!(forget, meanwhile);
        forgot.unwrap();
        assert!(
            answer.contains("4512"),
            "the control: made from the message still there ({asked}): {answer}"
        );
        let left = rows_holding(&h, "4512").await;
        assert!(left.is_empty(), "forget asked: {asked}: {left:#?}");
    }
}
}

/// A message deleted while the model summarizes the day that read it: the forget dropped the
/// day's summaries before this one was kept, so it is not kept (nor cached), and what is shown
/// is made from what is left. The control: the same day summarized with nothing forgotten
/// meanwhile is kept and says what was said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_summary_made_while_a_message_is_forgotten_is_not_kept() {
    // The model waits for the forget: long enough not to time out meanwhile.
    let h = Harness::build(true, |c| c.llm.timeout_secs = 60.0).await;
    let mut lab = group("lab");
    for (who, text) in [
        ("alice", "my locker code is 4512"),
        ("bob", "the standup moved to Tuesday"),
    ] {
        lab.speaker = who.into();
        h.say_in(&lab, who, text).await;
    }
    let alice = h.person("alice").await;
    let said = h.store.author_messages(alice, None).await.unwrap();
    let (told, _) = said.iter().find(|(_, t)| t.contains("4512")).unwrap();
    let told = h.store.messages_by_id(&[*told]).await.unwrap().remove(0);
    let scope = told.scope.clone();
    let day = told.sent_at.date_naive();
    // The control.
    let now = h.clock.now();
    let control = h
        .memory
        .manager
        .day_summaries(&scope, day, now)
        .await
        .unwrap();
    assert!(format!("{control:?}").contains("4512"), "{control:?}");
    let stored = h.store.day_summary(&scope, day).await.unwrap();
    assert!(format!("{stored:?}").contains("4512"), "{stored:?}");
    // Said since, an hour later: the next look summarizes the day again, with the model.
    h.clock.advance(chrono::Duration::hours(1));
    lab.speaker = "bob".into();
    h.say_in(&lab, "bob", "and the retro is on Friday").await;

    let seen = h.fake().total();
    h.fake().hold_after(0);
    let now = h.clock.now();
    let (summaries, ()) = tokio::join!(h.memory.manager.day_summaries(&scope, day, now), async {
        h.fake()
            .wait_seen(seen + 1, std::time::Duration::from_secs(20))
            .await;
        h.memory.manager.forget_message(&told, None).await.unwrap();
        h.fake().release();
    });
    let summaries = summaries.unwrap();
    assert!(!format!("{summaries:?}").contains("4512"), "{summaries:?}");
    assert!(format!("{summaries:?}").contains("retro"), "{summaries:?}");
    let left = rows_holding(&h, "4512").await;
    assert!(left.is_empty(), "{left:#?}");
}
