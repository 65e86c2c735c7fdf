//! Daily extraction against the fake LLM, on SQLite and PostgreSQL: entries and daily notes for
//! active people, nobody paused, one run per person and day, garbled answers retried once and
//! never half-applied, and a run killed half-way that ends like an uninterrupted one.

use crate::common::*;
use engram::domain::PersonId;
use engram::jobs::JobOutcome;
use engram::llm::fake::Behavior;
use engram::memory::extraction::ExtractionRun;

/// Alice talks in her private chat, Bob in a group, Carol pauses her memory and talks.
async fn a_day_of_chat(h: &Harness) -> (PersonId, PersonId, PersonId) {
    h.dm("alice", "I work at the payments team").await;
    h.dm("alice", "I like oolong tea").await;
    h.dm("alice", "I will maybe learn Zig").await;
    let mut lab = group("lab");
    lab.speaker = "bob".into();
    assert!(
        h.say_in(&lab, "bob", "I'm moving to Lisbon")
            .await
            .is_none()
    );
    h.dm("carol", "/memory pause").await;
    h.dm("carol", "I love chess").await;
    // Extraction time (23:00) has come.
    h.clock.set(start_time() + chrono::Duration::hours(14));
    (
        h.person("alice").await,
        h.person("bob").await,
        h.person("carol").await,
    )
}

fn day() -> chrono::NaiveDate {
    start_time().date_naive()
}

async fn state(h: &Harness, people: &[PersonId]) -> Vec<String> {
    let mut out = Vec::new();
    for p in people {
        for e in h.store.entries(*p, None).await.unwrap() {
            out.push(format!(
                "{p} {} {} {} {}",
                e.scope.key(),
                e.category.as_str(),
                e.key,
                e.value
            ));
        }
        for n in h.store.daily_notes(*p, None).await.unwrap() {
            out.push(format!("{p} {} {} {}", n.day, n.source, n.text));
        }
    }
    out.sort();
    out
}

async fn extraction_writes_once_per_person_and_day(url: Option<String>) {
    let h = harness_on(url, true).await;
    let (alice, bob, carol) = a_day_of_chat(&h).await;
    let ex = h.extractor("p1");
    let mut progress = Vec::new();
    let runs = ex
        .extract_all(day(), false, |done, total| progress.push((done, total)))
        .await
        .unwrap();
    // Carol's messages were said while her memory was paused: withheld, they are not read at
    // all, so only alice and bob are gone through.
    assert_eq!(progress.last(), Some(&(2, 2)), "{progress:?}");
    let by =
        |p: PersonId| -> Vec<&ExtractionRun> { runs.iter().filter(|r| r.person == p.0).collect() };
    assert_eq!(by(alice).len(), 1);
    assert_eq!(by(alice)[0].status, "done");
    assert_eq!(by(alice)[0].interactions, 3);
    assert_eq!((by(alice)[0].written, by(alice)[0].noted), (2, 1));
    assert!(by(alice)[0].tokens > 0);
    assert_eq!(by(bob)[0].written, 1);
    assert!(by(carol).is_empty());

    let entries = h.store.entries(alice, None).await.unwrap();
    assert_eq!(entries.len(), 2);
    assert!(
        entries
            .iter()
            .any(|e| e.value == "I work at the payments team"
                && e.category == engram::domain::Category::WorkContext)
    );
    let notes = h.store.daily_notes(alice, None).await.unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.text.contains("Maybe (0.5): I will maybe learn Zig"))
    );
    // Bob's entry stays where he said it: the group, not a private scope.
    let bobs = h.store.entries(bob, None).await.unwrap();
    assert!(matches!(bobs[0].scope, engram::domain::Scope::Space(_)));
    assert!(h.store.entries(carol, None).await.unwrap().is_empty());

    // The run records.
    let records = h.store.job_runs("extract").await.unwrap();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.status == "done"));
    assert!(
        records
            .iter()
            .any(|r| r.detail.contains("\"interactions\":3"))
    );

    // Again the same day (another process, too): nothing new, no LLM call.
    let before = state(&h, &[alice, bob, carol]).await;
    let calls = h.fake().count("extract");
    let again = h
        .extractor("p2")
        .extract_all(day(), false, |_, _| {})
        .await
        .unwrap();
    assert!(
        again
            .iter()
            .all(|r| r.status == "already_done" && r.written == 0),
        "{again:?}"
    );
    assert_eq!(h.fake().count("extract"), calls);
    assert_eq!(state(&h, &[alice, bob, carol]).await, before);

    // A dry run asks but writes nothing.
    let before = state(&h, &[alice]).await;
    let dry = ex.extract_person(alice, day(), true).await.unwrap();
    assert_eq!(dry[0].status, "dry_run");
    assert_eq!(state(&h, &[alice]).await, before);
}

async fn garbled_answers_are_retried_once_then_skipped(url: Option<String>) {
    let h = harness_on(url, true).await;
    let (alice, _, _) = a_day_of_chat(&h).await;
    let ex = h.extractor("p1");
    // One garbled answer: retried, applied.
    h.fake().push_once(Behavior::InvalidJson);
    let runs = ex.extract_person(alice, day(), false).await.unwrap();
    assert_eq!(runs[0].status, "done", "{runs:?}");
    assert_eq!(h.fake().count("extract"), 2);
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 2);

    // Bob: two answers that are JSON but invalid (an unknown category): nothing applied.
    let bob = h.person("bob").await;
    let bad = r#"{"memory_updates": [{"category": "work_context", "key": "k", "value": "ok", "action": "add", "confidence": 0.9}, {"category": "secrets", "key": "k", "value": "v", "action": "add", "confidence": 0.9}], "daily_notes": "x"}"#;
    h.fake().push_once(Behavior::Content(bad.into()));
    h.fake().push_once(Behavior::Content(bad.into()));
    let runs = ex.extract_person(bob, day(), false).await.unwrap();
    assert_eq!(runs[0].status, "failed");
    // Which update and why, not what the model wrote.
    let error = runs[0].error.as_deref().unwrap();
    assert!(
        error.contains("update 1: unknown category") && !error.contains("secrets"),
        "{error}"
    );
    assert!(h.store.entries(bob, None).await.unwrap().is_empty());
    assert!(h.store.daily_notes(bob, None).await.unwrap().is_empty());
    // A failed run is tried again later, and then succeeds.
    let runs = ex.extract_person(bob, day(), false).await.unwrap();
    assert_eq!(runs[0].status, "done");
    assert_eq!(h.store.entries(bob, None).await.unwrap().len(), 1);
}

async fn a_killed_run_ends_like_an_uninterrupted_one(url: Option<String>) {
    // The reference: one uninterrupted pass.
    let reference = harness_on(url.clone(), true).await;
    let people = a_day_of_chat(&reference).await;
    reference
        .extractor("p1")
        .extract_all(day(), false, |_, _| {})
        .await
        .unwrap();
    let people = [people.0, people.1, people.2];
    let expected = state(&reference, &people).await;

    let second = match url {
        Some(_) => Some(fresh_postgres_url().await),
        None => None,
    };
    let h = harness_on(second, true).await;
    let (alice, bob, carol) = a_day_of_chat(&h).await;
    // The first pass is killed while the model is thinking about the first person.
    h.fake().set_behavior(Behavior::Hang);
    let ex = std::sync::Arc::new(h.extractor("p1"));
    let asked = h.fake().seen();
    let running = {
        let ex = ex.clone();
        tokio::spawn(async move { ex.extract_all(day(), false, |_, _| {}).await })
    };
    // Until the model has the first request, and no longer than 10 seconds.
    h.fake()
        .wait_seen(asked + 1, std::time::Duration::from_secs(10))
        .await;
    assert_eq!(h.fake().count("extract"), 1);
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    h.fake().set_behavior(Behavior::Smart);
    // Another process takes over once the dead holder's lease has run out.
    h.clock.advance(chrono::Duration::seconds(
        h.config.jobs.lease_secs as i64 + 1,
    ));
    let runs = h
        .extractor("p2")
        .extract_all(day(), false, |_, _| {})
        .await
        .unwrap();
    assert!(runs.iter().all(|r| r.status == "done"), "{runs:?}");
    let got = state(&h, &[alice, bob, carol]).await;
    // Same entries and notes (person ids are the same: both databases saw the same people in
    // the same order).
    assert_eq!(got, expected);
}

/// The day summary prompts sent after the first `skip`.
fn summaries_asked_since(h: &Harness, skip: usize) -> Vec<String> {
    h.fake()
        .requests()
        .into_iter()
        .filter(|r| r.task == "day_summary")
        .skip(skip)
        .map(|r| r.text())
        .collect()
}

/// In a private chat the extraction call writes the day summary too: after midnight that day
/// is final without a summary call of its own, while the group still gets one.
async fn a_private_chats_day_summary_comes_with_its_extraction(url: Option<String>) {
    let h = harness_on(url, true).await;
    let (alice, bob, _) = a_day_of_chat(&h).await;
    let runs = h
        .extractor("p1")
        .extract_all(day(), false, |_, _| {})
        .await
        .unwrap();
    let run_of = |p: PersonId| runs.iter().find(|r| r.person == p.0).unwrap();
    assert!(run_of(alice).day_summary, "{runs:?}");
    assert!(!run_of(bob).day_summary, "a group is summarized on its own");
    let dm = engram::domain::Scope::Dm(alice);
    let stored = h.store.day_summary(&dm, day()).await.unwrap().unwrap();
    assert!(stored.summaries[&alice].contains("oolong"), "{stored:?}");
    assert!(!stored.is_final);
    let records = h.store.job_runs("extract").await.unwrap();
    assert!(
        records
            .iter()
            .any(|r| r.detail.contains("\"day_summary\":true"))
    );

    // Past midnight: the scheduled pass finalizes yesterday.
    h.clock
        .set(start_time() + chrono::Duration::hours(15) + chrono::Duration::minutes(10));
    let scheduler = engram::jobs::Scheduler::new(
        h.memory.manager.clone(),
        h.store.clone(),
        h.clock.clone(),
        "p1".into(),
        chrono::Duration::minutes(15),
        chrono::NaiveTime::from_hms_opt(0, 5, 0).unwrap(),
        h.config.memory.daily_notes_days,
    );
    let calls_before = h.fake().count("day_summary");
    scheduler.run_due().await.unwrap();
    let asked = summaries_asked_since(&h, calls_before);
    assert!(
        asked.iter().all(|t| !t.contains("oolong")),
        "the DM was summarized again: {asked:?}"
    );
    assert!(
        asked.iter().any(|t| t.contains("Lisbon")),
        "the group needs its own: {asked:?}"
    );
    let final_ = h.store.day_summary(&dm, day()).await.unwrap().unwrap();
    assert!(final_.is_final);
    assert_eq!(final_.summaries, stored.summaries);

    // Something said after the extraction makes it stale: recomputed as before.
    let h2 = harness_on(None, true).await;
    let (alice2, _, _) = a_day_of_chat(&h2).await;
    h2.extractor("p1")
        .extract_all(day(), false, |_, _| {})
        .await
        .unwrap();
    h2.clock
        .set(start_time() + chrono::Duration::hours(14) + chrono::Duration::minutes(30));
    h2.dm("alice", "I also adopted a cat").await;
    h2.clock
        .set(start_time() + chrono::Duration::hours(15) + chrono::Duration::minutes(10));
    let dm2 = engram::domain::Scope::Dm(alice2);
    let calls_before = h2.fake().count("day_summary");
    h2.memory
        .manager
        .day_summaries(&dm2, day(), h2.clock.now())
        .await
        .unwrap();
    let asked = summaries_asked_since(&h2, calls_before);
    assert!(
        asked.iter().any(|t| t.contains("adopted a cat")),
        "{asked:?}"
    );
    assert!(
        h2.store
            .day_summary(&dm2, day())
            .await
            .unwrap()
            .unwrap()
            .is_final
    );
}

/// The scheduler of `h`'s process, with the daily extraction and a 5-minute retry backoff.
fn scheduler(h: &Harness) -> engram::jobs::Scheduler {
    engram::jobs::Scheduler::new(
        h.memory.manager.clone(),
        h.store.clone(),
        h.clock.clone(),
        "p1".into(),
        chrono::Duration::minutes(15),
        chrono::NaiveTime::from_hms_opt(0, 5, 0).unwrap(),
        h.config.memory.daily_notes_days,
    )
    .with_extractor(Some(h.extractor("p1")))
    .with_retry_backoff(chrono::Duration::minutes(5))
}

/// The scheduled 23:00 run: a day missed while the bot was down is made up the next morning,
/// once; today's run comes at its time; nothing runs twice.
async fn a_missed_day_is_extracted_later_once(url: Option<String>) {
    let h = harness_on(url, true).await;
    let (alice, _, _) = a_day_of_chat(&h).await;
    // Down from before 23:00 until 10:00 the next day.
    h.clock.set(start_time() + chrono::Duration::hours(25));
    let s = scheduler(&h);
    h.fake().clear();
    let outcome = s.run_extraction().await.unwrap();
    assert_eq!(
        outcome,
        JobOutcome::Ran {
            run_key: day().to_string(),
            scopes: 2,
            degraded: 0
        },
        "the missed day, made up"
    );
    let calls = h.fake().count("extract");
    assert_eq!(calls, 2, "alice's private chat and bob's group");
    let entries = h.store.entries(alice, None).await.unwrap();
    assert!(
        entries.iter().any(|e| e.value.contains("oolong")),
        "{entries:?}"
    );
    // Ticks later that morning change nothing.
    h.clock.advance(chrono::Duration::minutes(1));
    assert_eq!(
        s.run_extraction().await.unwrap(),
        JobOutcome::AlreadyDone {
            run_key: day().to_string()
        }
    );
    assert_eq!(h.fake().count("extract"), calls);
    // That evening, the new day runs (nobody spoke: nothing to ask), and the old one is not
    // run again.
    h.clock.set(start_time() + chrono::Duration::hours(38));
    let outcome = s.run_extraction().await.unwrap();
    assert!(
        matches!(&outcome, JobOutcome::Ran { run_key, scopes: 0, .. } if *run_key == (day() + chrono::Duration::days(1)).to_string()),
        "{outcome:?}"
    );
    assert_eq!(h.fake().count("extract"), calls);
    // Four days later the missed day would be too old to make up; here it is simply done.
    h.clock.advance(chrono::Duration::days(1));
    s.run_extraction().await.unwrap();
    assert_eq!(h.fake().count("extract"), calls);
}

/// An outage at 23:00: the failed run waits out its backoff (doubling) instead of asking the
/// model on every tick, then succeeds once the model is back, and is not run again.
async fn a_failed_run_backs_off_then_succeeds_once(url: Option<String>) {
    let h = harness_on(url, true).await;
    let (alice, _, _) = a_day_of_chat(&h).await;
    let s = scheduler(&h);
    h.fake().set_behavior(Behavior::Status(500));
    let outcome = s.run_extraction().await.unwrap();
    assert!(
        matches!(outcome, JobOutcome::Ran { degraded: 2, .. }),
        "{outcome:?}"
    );
    let failing_calls = h.fake().count("extract");
    assert!(failing_calls >= 2);
    // Ticks within the backoff ask nothing.
    for _ in 0..4 {
        h.clock.advance(chrono::Duration::minutes(1));
        let outcome = s.run_extraction().await.unwrap();
        assert!(
            matches!(outcome, JobOutcome::RetryLater { .. }),
            "{outcome:?}"
        );
    }
    assert_eq!(h.fake().count("extract"), failing_calls);
    // After 5 minutes it is tried again and fails again: the next wait is 10 minutes.
    h.clock.advance(chrono::Duration::minutes(1));
    s.run_extraction().await.unwrap();
    let twice = h.fake().count("extract");
    assert!(twice > failing_calls);
    h.clock.advance(chrono::Duration::minutes(9));
    assert!(matches!(
        s.run_extraction().await.unwrap(),
        JobOutcome::RetryLater { .. }
    ));
    assert_eq!(h.fake().count("extract"), twice);
    // The model is back: the next try works, and the day is done.
    h.fake().set_behavior(Behavior::Smart);
    h.clock.advance(chrono::Duration::minutes(1));
    let outcome = s.run_extraction().await.unwrap();
    assert!(
        matches!(outcome, JobOutcome::Ran { degraded: 0, .. }),
        "{outcome:?}"
    );
    let entries = h.store.entries(alice, None).await.unwrap();
    assert!(
        entries.iter().any(|e| e.value.contains("oolong")),
        "{entries:?}"
    );
    let done = h.fake().count("extract");
    h.clock.advance(chrono::Duration::minutes(30));
    assert!(matches!(
        s.run_extraction().await.unwrap(),
        JobOutcome::AlreadyDone { .. }
    ));
    assert_eq!(h.fake().count("extract"), done);
}

/// A model whose answers for one run stay unusable (asked twice at each attempt) while the
/// day's other run went through is given up at the fifth attempt: the day is done without it,
/// so it holds back no later day. A model that cannot be reached, or that answers no run
/// usably (a setting it refuses), is waited for (`nothing_usable_is_waited_for`).
async fn unusable_answers_are_given_up(url: Option<String>) {
    let (outcomes, last, details) = five_attempts(url, None, 2).await;
    for o in &outcomes {
        assert!(
            matches!(o, JobOutcome::Ran { degraded: 1, .. }),
            "{outcomes:?}"
        );
    }
    assert!(matches!(last, JobOutcome::AlreadyDone { .. }), "{last:?}");
    assert!(
        details
            .iter()
            .any(|d| d.contains("1 given up after 5 attempts")),
        "{details:?}"
    );
}

async fn nothing_usable_is_waited_for(url: Option<String>) {
    waited_for(url, Behavior::InvalidJson).await;
}

async fn an_outage_is_waited_for(url: Option<String>) {
    waited_for(url, Behavior::Status(500)).await;
}

/// Every call answers with `behavior`: every attempt runs again, none gives up.
async fn waited_for(url: Option<String>, behavior: Behavior) {
    let (outcomes, last, _) = five_attempts(url, Some(behavior.clone()), 0).await;
    for o in outcomes.iter().chain([&last]) {
        assert!(
            matches!(o, JobOutcome::Ran { degraded: 2, .. }),
            "{behavior:?}: {outcomes:?} {last:?}"
        );
    }
}

/// A day of chat whose extraction fails: every call with `behavior`, else the first `bad`
/// calls of each attempt answered with broken JSON (one run's two tries). Five attempts (at 0,
/// 5, 15, 35 and 75 minutes: the backoff doubles), then what a tick at 155 minutes did and
/// the job records' details.
async fn five_attempts(
    url: Option<String>,
    behavior: Option<Behavior>,
    bad: usize,
) -> (Vec<JobOutcome>, JobOutcome, Vec<String>) {
    let h = harness_on(url, true).await;
    a_day_of_chat(&h).await;
    let s = scheduler(&h);
    if let Some(b) = behavior {
        h.fake().set_behavior(b);
    }
    let mut outcomes = Vec::new();
    for wait in [0, 5, 10, 20, 40] {
        h.clock.advance(chrono::Duration::minutes(wait));
        for _ in 0..bad {
            h.fake().push_once(Behavior::InvalidJson);
        }
        outcomes.push(s.run_extraction().await.unwrap());
    }
    h.clock.advance(chrono::Duration::minutes(80));
    let last = s.run_extraction().await.unwrap();
    let details = h
        .store
        .job_runs(engram::jobs::EXTRACT_ALL)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.detail)
        .collect();
    (outcomes, last, details)
}

/// What a day's extraction learned is taken back when a message of that day goes, but an
/// entry it only changed gets back the value it replaced (one the person asked for), not
/// deleted with its history; and what the extraction wrote stays out of the history.
async fn taking_back_a_learned_change_restores_what_was_asked(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    let say = |who: &str, text: &str, id: &str| said_as(&h, &lab, who, text, id);
    let bot = &h.bot;
    let delete = |id: &str| {
        let ids = vec![id.to_string()];
        async move {
            bot.message_deleted(engram::domain::Platform::Console, "lab", "general", &ids)
                .await
        }
    };
    h.bot
        .handle(&say("alice", "Engram, remember that I work at Acme", "r1"))
        .await
        .unwrap();
    h.bot
        .handle(&say("alice", "the standup moved to ten tomorrow", "c1"))
        .await
        .unwrap();
    let alice = h.person("alice").await;
    let asked = h.store.entries(alice, None).await.unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let asked = asked[0].clone();
    assert!(asked.value.contains("Acme"), "{asked:?}");
    // The day's extraction changes that entry.
    h.clock.set(start_time() + chrono::Duration::hours(14));
    let answer = serde_json::json!({"memory_updates": [{"category": asked.category.as_str(),
        "key": asked.key, "value": "works at Globex", "action": "update", "confidence": 0.9}],
        "daily_notes": "standup at ten"});
    h.fake().push_once(Behavior::Content(answer.to_string()));
    let runs = h
        .extractor("p1")
        .extract_person(alice, day(), false)
        .await
        .unwrap();
    assert!(runs.iter().all(|r| r.status == "done"), "{runs:?}");
    let changed = h.store.entries(alice, None).await.unwrap();
    assert_eq!(
        changed[0].value, "works at Globex",
        "the control: {changed:?}"
    );
    // A message of that day goes: what the extraction learned goes, what she asked for stays.
    delete("c1").await.unwrap();
    let after = h.store.entries(alice, None).await.unwrap();
    assert_eq!(
        after
            .iter()
            .map(|e| (&e.key, &e.value, &e.source))
            .collect::<Vec<_>>(),
        vec![(&asked.key, &asked.value, &asked.source)]
    );
    let text = database_text(&h).await;
    assert!(!text.contains("Globex"), "{text}");

    // Bob's learned value was replaced since by one he asked for: it leaves the history.
    h.clock.set(start_time() + chrono::Duration::hours(1));
    h.bot
        .handle(&say(
            "bob",
            "Engram, remember that I work at Umbrella",
            "b-r1",
        ))
        .await
        .unwrap();
    h.bot
        .handle(&say("bob", "lunch is at noon", "b-c1"))
        .await
        .unwrap();
    let bob = h.person("bob").await;
    let asked = h.store.entries(bob, None).await.unwrap()[0].clone();
    h.clock.set(start_time() + chrono::Duration::hours(14));
    let answer = serde_json::json!({"memory_updates": [{"category": asked.category.as_str(),
        "key": asked.key, "value": "works at Initrode", "action": "update", "confidence": 0.9}],
        "daily_notes": "lunch at noon"});
    h.fake().push_once(Behavior::Content(answer.to_string()));
    h.extractor("p1")
        .extract_person(bob, day(), false)
        .await
        .unwrap();
    h.bot
        .handle(&say("bob", "Engram, remember that I work at Hooli", "b-r2"))
        .await
        .unwrap();
    let now = h.store.entries(bob, None).await.unwrap();
    assert!(now[0].value.contains("Hooli"), "{now:?}");
    assert!(
        database_text(&h).await.contains("Initrode"),
        "the control: in the history"
    );
    delete("b-c1").await.unwrap();
    let text = database_text(&h).await;
    assert!(!text.contains("Initrode"), "{text}");
    assert_eq!(h.store.entries(bob, None).await.unwrap(), now);
    // The message that asked for his first value goes: the value leaves the history too.
    assert!(text.contains("Umbrella"), "the control");
    delete("b-r1").await.unwrap();
    let text = database_text(&h).await;
    assert!(!text.contains("Umbrella"), "{text}");
    assert_eq!(h.store.entries(bob, None).await.unwrap(), now);
}

/// A message longer than the prompt limit is clipped in the extraction prompt, as in summaries.
async fn extraction_clips_each_message(url: Option<String>) {
    let h = harness_on(url, true).await;
    let long = format!(
        "I like oolong tea {} and the end marker",
        "very ".repeat(2000)
    );
    h.dm("alice", &long).await;
    h.clock.set(start_time() + chrono::Duration::hours(14));
    h.extractor("p1")
        .extract_all(day(), false, |_, _| {})
        .await
        .unwrap();
    let prompts = h.fake().prompts("extract");
    assert!(!prompts.is_empty());
    let limit = h.config.memory.max_message_chars_in_prompt;
    for prompt in &prompts {
        assert!(
            prompt.contains("I like oolong tea very"),
            "positive control"
        );
        assert!(
            !prompt.contains("end marker"),
            "the message was not clipped"
        );
        assert!(!prompt.contains(&"very ".repeat(limit / 5 + 1)));
    }
}

/// A dry run lists each change (add, update with the old value, delete, note) and writes
/// nothing; the same answer applied for real makes exactly those changes.
async fn a_dry_run_shows_each_change_and_writes_nothing(url: Option<String>) {
    let h = harness_on(url, true).await;
    h.dm("alice", "remember that my timezone is UTC+1").await;
    h.dm("alice", "remember that I like green tea").await;
    h.dm("alice", "I moved to Lisbon, new job at Acme").await;
    h.clock.set(start_time() + chrono::Duration::hours(14));
    let alice = h.person("alice").await;
    let entries = h.store.entries(alice, None).await.unwrap();
    let tea = entries
        .iter()
        .find(|e| e.value.contains("green tea"))
        .unwrap();
    let answer = serde_json::json!({
        "memory_updates": [
            {"category": "personal_context", "key": "timezone", "value": "my timezone is UTC+0", "action": "update", "confidence": 0.9},
            {"category": "work_context", "key": "employer", "value": "works at Acme", "action": "add", "confidence": 0.9},
            {"category": tea.category.as_str(), "key": tea.key, "value": "", "action": "remove", "confidence": 0.9},
            {"category": "personal_context", "key": "city", "value": "maybe lives in Lisbon", "action": "add", "confidence": 0.4}
        ],
        "daily_notes": "moved house"
    })
    .to_string();
    let ex = h.extractor("p1");
    let before = state(&h, &[alice]).await;
    h.fake().push_once(Behavior::Content(answer.clone()));
    let dry = ex.extract_person(alice, day(), true).await.unwrap();
    assert_eq!(state(&h, &[alice]).await, before, "a dry run wrote");
    assert!(
        h.store
            .daily_notes(alice, None)
            .await
            .unwrap()
            .iter()
            .all(|n| !n.text.contains("moved house"))
    );
    let run = &dry[0];
    assert_eq!(
        (
            run.status.as_str(),
            run.written,
            run.updated,
            run.removed,
            run.noted
        ),
        ("dry_run", 1, 1, 1, 1),
        "{run:?}"
    );
    let shown: Vec<String> = run.changes.iter().map(|c| c.line()).collect();
    for expected in [
        "~ update [Personal Context] timezone: my timezone is UTC+1 -> my timezone is UTC+0",
        "+ add [Work Context] employer: works at Acme",
        "- delete [User Preferences]",
        "I like green tea",
        "n note [Personal Context] city: maybe lives in Lisbon",
    ] {
        assert!(
            shown.iter().any(|l| l.contains(expected)),
            "{expected:?} not in {shown:#?}"
        );
    }
    assert!(run.daily_note.as_deref().unwrap().contains("moved house"));
    // Applied for real, the same answer does what the dry run said.
    h.fake().push_once(Behavior::Content(answer));
    let done = ex.extract_person(alice, day(), false).await.unwrap();
    assert_eq!(
        (done[0].written, done[0].updated, done[0].removed),
        (1, 1, 1),
        "{done:?}"
    );
    let values: Vec<String> = h
        .store
        .entries(alice, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.value)
        .collect();
    assert!(
        values.contains(&"my timezone is UTC+0".to_string())
            && values.contains(&"works at Acme".to_string()),
        "{values:?}"
    );
    assert!(
        !values.iter().any(|v| v.contains("green tea")),
        "{values:?}"
    );
}

/// The running bot's own scheduler, as `engram run` starts it (`app::start_scheduler`, a tick
/// a second): once 23:00 has come, the day's extraction runs with no call from anyone. (That it
/// waits for 23:00 and runs a day once is `a_missed_day_is_extracted_later_once`.)
async fn the_running_bot_extracts_the_day_at_23_00(url: Option<String>) {
    let h = harness_on(url, true).await;
    let (alice, bob, _) = a_day_of_chat(&h).await;
    let mut config = h.config.clone();
    config.jobs.tick_secs = 1;
    let clock: std::sync::Arc<dyn Clock> = h.clock.clone();
    let llm = engram::app::chat_model(&config, &Default::default(), clock.clone()).unwrap();
    let asked = h.fake().seen();
    let (task, stop) =
        engram::app::start_scheduler(&config, &h.memory, h.store.clone(), clock, llm).unwrap();
    // Alice's private chat and Bob's group: two extraction requests.
    h.fake()
        .wait_seen(asked + 2, std::time::Duration::from_secs(30))
        .await;
    // Stopping waits for the tick in hand.
    stop.send(true).unwrap();
    task.await.unwrap();
    assert_eq!(h.fake().count("extract"), 2, "one run per place, once");
    let runs = h.store.job_runs(engram::jobs::EXTRACT_ALL).await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(
        entry_values(&h, alice)
            .await
            .iter()
            .any(|v| v.contains("oolong")),
        "alice's day was extracted"
    );
    assert!(
        entry_values(&h, bob)
            .await
            .iter()
            .any(|v| v.contains("Lisbon")),
        "bob's day was extracted"
    );
}

/// Two people in one group on one day: each one's entries come from their own words only
/// (the other's never reach their prompt, whatever the phrasing), and each has theirs.
async fn each_persons_extraction_reads_only_their_own_words(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    let said = [
        ("alice", "I drink green tea every morning"),
        ("bob", "weekends are for chess tournaments"),
        ("alice", "the new office is near the river"),
        ("bob", "my brother Tom lives in Porto"),
    ];
    for (who, text) in said {
        assert!(h.say_in(&lab, who, text).await.is_none(), "chatter: {text}");
    }
    h.clock.set(start_time() + chrono::Duration::hours(14));
    let (alice, bob) = (h.person("alice").await, h.person("bob").await);
    h.extractor("p1")
        .extract_all(day(), false, |_, _| {})
        .await
        .unwrap();
    let prompts = h.fake().prompts("extract");
    assert_eq!(prompts.len(), 2, "one run per person");
    for (person, name) in [(alice, "alice"), (bob, "bob")] {
        let values = entry_values(&h, person).await;
        let prompt = prompts
            .iter()
            .find(|p| p.contains(said.iter().find(|(w, _)| *w == name).unwrap().1))
            .expect("a prompt with their words");
        for (who, text) in said {
            let theirs = who == name;
            assert_eq!(
                values.iter().any(|v| v == text),
                theirs,
                "{name}'s entries and {who}'s {text:?}: {values:?}"
            );
            assert_eq!(prompt.contains(text), theirs, "{name}'s prompt: {prompt}");
        }
    }
}

/// A message deleted on its platform while the model reads the day that showed it: the
/// forget found nothing of the run's to take yet, so the run's answer is kept out, and the
/// run reads the day again without the message and asks again, writing what the rest says.
/// The control: a dry run of the same day, asked just before, would write it.
async fn a_message_deleted_while_the_model_reads_stays_out(url: Option<String>) {
    let h = harness_on(url, true).await;
    h.dm("alice", "I work at the payments team").await;
    h.dm("alice", "I like oolong tea").await;
    h.clock.set(start_time() + chrono::Duration::hours(14));
    let alice = h.person("alice").await;
    let said = h.store.author_messages(alice, None).await.unwrap();
    let (oolong, _) = said.iter().find(|(_, t)| t.contains("oolong")).unwrap();
    let oolong = h.store.messages_by_id(&[*oolong]).await.unwrap().remove(0);
    let dry = h
        .extractor("a")
        .extract_person(alice, day(), true)
        .await
        .unwrap();
    assert!(
        dry[0]
            .changes
            .iter()
            .any(|c| format!("{c:?}").contains("oolong")),
        "the control: {:?}",
        dry[0].changes
    );

    let seen = h.fake().total();
    let asked = h.fake().count("extract");
    h.fake().hold_after(0);
    let running = tokio::spawn({
        let extractor = h.extractor("a");
        async move { extractor.extract_person(alice, day(), false).await }
    });
    h.fake()
        .wait_seen(seen + 1, std::time::Duration::from_secs(20))
        .await;
    h.memory
        .manager
        .forget_message(&oolong, None)
        .await
        .unwrap();
    h.fake().release();
    let runs = running.await.unwrap().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].status, "done", "{runs:?}");
    assert_eq!(h.fake().count("extract"), asked + 2, "asked again");
    let entries = state(&h, &[alice]).await;
    assert!(
        entries.iter().any(|e| e.contains("payments team")),
        "{entries:#?}"
    );
    let left = rows_holding(&h, "oolong").await;
    assert!(left.is_empty(), "{left:#?}");
}

on_both_harnesses!(
    the_running_bot_extracts_the_day_at_23_00,
    a_message_deleted_while_the_model_reads_stays_out,
    each_persons_extraction_reads_only_their_own_words,
    a_dry_run_shows_each_change_and_writes_nothing,
    a_missed_day_is_extracted_later_once,
    a_failed_run_backs_off_then_succeeds_once,
    unusable_answers_are_given_up,
    nothing_usable_is_waited_for,
    an_outage_is_waited_for,
    taking_back_a_learned_change_restores_what_was_asked,
    extraction_clips_each_message,
    a_private_chats_day_summary_comes_with_its_extraction,
    extraction_writes_once_per_person_and_day,
    garbled_answers_are_retried_once_then_skipped,
    a_killed_run_ends_like_an_uninterrupted_one,
);
