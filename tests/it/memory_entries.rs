//! Structured memory through the whole bot: explicit capture, /memory view, search, forget and
//! clear with confirmation, pause, and who may see what, on SQLite and PostgreSQL.

use crate::common::*;
use engram::domain::{Category, DailyNote, NewEntry, PersonId, Scope};
use engram::memory::audit::By;
use engram::store::Store;
use std::sync::Arc;

async fn console_remember_view_forget_search(url: Option<String>) {
    let h = harness_on(url, false).await;
    let reply = h
        .dm(
            "alice",
            "remember that I'm presenting on database performance next week",
        )
        .await;
    assert!(reply.starts_with("Got it, I'll remember that"), "{reply}");

    let view = h.dm("alice", "/memory").await;
    let section = view
        .split("## Work Context\n")
        .nth(1)
        .expect("a Work Context section");
    assert!(
        section.starts_with("- I'm presenting on database performance next week"),
        "{view}"
    );

    let found = h.dm("alice", "/memory search presentation").await;
    assert!(found.contains("database performance"), "{found}");

    let known = h.dm("alice", "what do you know about me").await;
    assert!(known.contains("database performance"), "{known}");
    let asked = h.dm("alice", "/memory forget presentation").await;
    assert!(asked.contains("database performance"), "{asked}");
    assert!(asked.contains("yes"), "{asked}");
    // Nothing is removed before the confirmation.
    let alice = h.person("alice").await;
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 1);
    let done = h.dm("alice", "yes").await;
    assert!(done.contains("forgotten 1 entry"), "{done}");

    let found = h.dm("alice", "/memory search presentation").await;
    assert!(
        found.starts_with("Nothing in your memory matches"),
        "{found}"
    );
    assert!(h.store.entries(alice, None).await.unwrap().is_empty());
    assert!(h.store.entry_history(alice).await.unwrap().is_empty());
    // Forgotten in the facts too: the bot no longer knows it anywhere.
    let known = h.dm("alice", "what do you know about me").await;
    assert!(!known.contains("database performance"), "{known}");
}

async fn memory_shows_only_what_may_surface_where_asked(url: Option<String>) {
    let h = harness_on(url, false).await;
    h.dm("alice", "note that I prefer oolong over coffee").await;
    let mut public = group("rustaceans");
    public.speaker = "alice".into();
    let mut secret = restricted("rustaceans", "mods");
    secret.speaker = "alice".into();
    let reply = h
        .say_in(
            &public,
            "alice",
            "Engram, keep in mind I work at the payments team",
        )
        .await
        .unwrap();
    assert!(reply.starts_with("Got it"), "{reply}");
    h.say_in(
        &secret,
        "alice",
        "Engram, note that I'm interviewing at another company",
    )
    .await
    .unwrap();

    let shown = h.say_in(&public, "alice", "Engram, /memory").await.unwrap();
    assert!(shown.contains("payments team"), "{shown}");
    assert!(
        !shown.contains("oolong"),
        "a DM entry leaked into a channel: {shown}"
    );
    assert!(
        !shown.contains("interviewing"),
        "a restricted entry leaked: {shown}"
    );
    let found = h
        .say_in(
            &public,
            "alice",
            "Engram, /memory search interviewing company oolong",
        )
        .await
        .unwrap();
    assert!(found.starts_with("Nothing"), "search leaked: {found}");

    let in_mods = h.say_in(&secret, "alice", "Engram, /memory").await.unwrap();
    assert!(
        in_mods.contains("interviewing") && in_mods.contains("payments"),
        "{in_mods}"
    );
    assert!(!in_mods.contains("oolong"), "{in_mods}");

    // The private chat has the full view.
    let full = h.dm("alice", "/memory").await;
    for part in ["oolong", "payments", "interviewing"] {
        assert!(full.contains(part), "{part} missing from {full}");
    }

    // Bob sees none of Alice's entries and cannot forget them, even with her words.
    let mut bob_public = group("rustaceans");
    bob_public.speaker = "bob".into();
    let bob_view = h.dm("bob", "/memory").await;
    assert!(bob_view.contains("no notes"), "{bob_view}");
    let forget = h.dm("bob", "/memory forget payments").await;
    assert!(forget.contains("nothing changed"), "{forget}");
    // Bob's "yes" does not confirm Alice's pending forget in the same channel.
    let asked = h
        .say_in(&public, "alice", "Engram, /memory forget payments")
        .await
        .unwrap();
    assert!(asked.contains("payments"), "{asked}");
    h.say_in(&bob_public, "bob", "Engram, yes").await;
    let alice = h.person("alice").await;
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 3);
    // Moving on cancels the question: a later "yes" changes nothing.
    h.say_in(&public, "alice", "Engram, what's up?").await;
    h.say_in(&public, "alice", "Engram, yes").await;
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 3);
}

async fn pause_clear_and_resume(url: Option<String>) {
    let h = harness_on(url, false).await;
    h.dm("alice", "remember that my timezone is CET").await;
    let mut lab = group("lab");
    lab.speaker = "alice".into();
    h.say_in(&lab, "alice", "Engram, remember that I like cats")
        .await
        .unwrap();
    h.dm("alice", "note that I like short answers").await;
    let alice = h.person("alice").await;
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 3);
    assert!(
        h.dm("alice", "/memory")
            .await
            .contains("## Key Facts\n- my timezone is CET")
    );

    let paused = h.dm("alice", "/memory pause").await;
    assert!(paused.contains("paused"), "{paused}");
    let refused = h.dm("alice", "note that I'm moving to Lisbon").await;
    assert!(refused.contains("paused"), "{refused}");
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 3);
    assert!(h.store.memory_paused(alice).await.unwrap());

    let asked = h.dm("alice", "/memory clear").await;
    assert!(asked.contains("yes"), "{asked}");
    assert_eq!(h.dm("alice", "no").await, "OK, nothing was changed.");
    assert_eq!(h.store.entries(alice, None).await.unwrap().len(), 3);
    h.dm("alice", "/memory clear").await;
    let done = h.dm("alice", "yes").await;
    assert!(done.contains("cleared"), "{done}");
    assert!(h.store.entries(alice, None).await.unwrap().is_empty());
    assert!(h.store.daily_notes(alice, None).await.unwrap().is_empty());
    let recall = h.dm("alice", "what do you know about me").await;
    assert!(!recall.contains("CET"), "facts survived a clear: {recall}");
    let recall = h
        .say_in(&lab, "alice", "Engram, what do you know about me")
        .await
        .unwrap();
    assert!(
        !recall.contains("cats"),
        "group facts survived a clear: {recall}"
    );
    let lab_scope = h.space_scope("lab").await;
    for scope in [Scope::Dm(alice), lab_scope] {
        assert!(
            h.store
                .fact_history(alice, &scope)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(h.store.facts(alice, &scope).await.unwrap().text.is_empty());
    }

    h.dm("alice", "/memory resume").await;
    assert!(!h.store.memory_paused(alice).await.unwrap());
    assert!(
        h.dm("alice", "note that I'm moving to Lisbon")
            .await
            .starts_with("Got it")
    );
}

async fn odd_input_changes_nothing(url: Option<String>) {
    let h = harness_on(url, false).await;
    for text in [
        "note that",
        "/memory forget",
        "/memory search \"' OR 1=1 --",
        "/memory search 🦀",
        "/memory frobnicate",
        "note that ```rust\nfn main() { let x = 1; }\n```",
    ] {
        let reply = h.dm("alice", text).await;
        assert!(!reply.is_empty(), "{text}");
    }
    let alice = h.person("alice").await;
    assert!(h.store.entries(alice, None).await.unwrap().is_empty());
}

async fn export_import_export_is_identical(url: Option<String>) {
    let h = harness_on(url, false).await;
    for text in [
        "remember that I'm presenting on database performance next week",
        "note that my timezone is CET",
        "keep in mind I prefer short answers",
        "for future reference I'm reading Dune",
        "note that my cat is called Tom",
    ] {
        assert!(h.dm("alice", text).await.starts_with("Got it"), "{text}");
    }
    let mut public = group("rustaceans");
    public.speaker = "alice".into();
    h.say_in(
        &public,
        "alice",
        "Engram, note that I work at the payments team",
    )
    .await
    .unwrap();
    let alice = h.person("alice").await;
    let book = &h.memory.entries;
    let first = book.export(alice).await.unwrap();
    assert_eq!(first[0].0, "MEMORY.md");
    assert!(
        first
            .iter()
            .any(|(p, _)| p.starts_with("memory/") && p.ends_with(".md"))
    );
    assert!(first[0].1.split_whitespace().count() <= 2000);

    // The export names the person and carries each entry's scope.
    assert!(
        first[0]
            .1
            .contains("person 1, \"alice\"; accounts: console:alice"),
        "{}",
        first[0].1
    );
    let scopes = |h: &Harness| {
        let store = h.store.clone();
        async move {
            let mut s: Vec<(String, String)> = store
                .entries(alice, None)
                .await
                .unwrap()
                .into_iter()
                .map(|e| (e.value, e.scope.key()))
                .collect();
            s.sort();
            s
        }
    };
    let before = scopes(&h).await;
    assert!(
        before
            .iter()
            .any(|(v, s)| v.contains("payments") && s.starts_with("space:"))
    );
    let place = h.place(&public, "alice").await;
    let shown_in_public = book.memory_md(alice, &place).await.unwrap();
    assert!(
        shown_in_public.contains("payments team"),
        "positive control: {shown_in_public}"
    );

    // Into an emptied memory, then again: the same files, and the second import adds nothing.
    assert!(h.memory.manager.clear_person(alice).await.unwrap() > 0);
    let (entries, notes) = book.import(alice, &first).await.unwrap();
    assert_eq!((entries, notes), (6, 6));
    // Each entry is back where it was learned: the group's still shows in the group.
    assert_eq!(scopes(&h).await, before);
    assert_eq!(
        book.memory_md(alice, &place).await.unwrap(),
        shown_in_public
    );
    assert_eq!(book.import(alice, &first).await.unwrap(), (0, 0));
    let second = book.export(alice).await.unwrap();
    assert_eq!(first, second);

    // A malformed file is refused whole; so is one that would put an entry into another
    // person's private scope.
    let bad = vec![("MEMORY.md".to_string(), "## Secrets\n- x\n".to_string())];
    assert!(book.import(alice, &bad).await.is_err());
    let other = r#"## Key Facts
- planted <!-- {"scope":"dm:999","key":"planted","confidence":0.9,"origin":"x"} -->
"#;
    let bad = vec![("MEMORY.md".to_string(), other.to_string())];
    let err = book.import(alice, &bad).await.unwrap_err().to_string();
    assert!(err.contains("another person"), "{err}");
    // A MEMORY.md written by hand (no details) goes to the private scope (positive control).
    let plain = vec![(
        "MEMORY.md".to_string(),
        "## Key Facts\n- hand written\n".to_string(),
    )];
    assert_eq!(book.import(alice, &plain).await.unwrap(), (1, 0));
    let hand = h.store.entries(alice, None).await.unwrap();
    let hand = hand.iter().find(|e| e.value == "hand written").unwrap();
    assert_eq!(hand.scope, engram::domain::Scope::Dm(alice));
    book.delete(alice, &[hand.id]).await.unwrap();
    assert_eq!(book.export(alice).await.unwrap(), first);
}

/// Entries reach replies (here the offline answer, which shows the memory it would have
/// used), only where they may surface.
async fn replies_use_the_entries_that_may_surface_there(url: Option<String>) {
    let h = harness_on(url, false).await;
    let mut lab = group("lab");
    lab.speaker = "alice".into();
    h.say_in(&lab, "alice", "hi all").await;
    let alice = h.person("alice").await;
    let lab_scope = h.space_scope("lab").await;
    for (scope, key, value) in [
        (lab_scope.clone(), "team", "Works on the payments team"),
        (
            Scope::Dm(alice),
            "health",
            "Has a dentist appointment on Monday",
        ),
    ] {
        let mut e = entry(alice, key, value, 0);
        e.scope = scope;
        e.category = Category::WorkContext;
        h.store.write_entry(&e).await.unwrap();
    }
    let reply = h
        .say_in(&lab, "alice", "Engram, what should I work on today?")
        .await
        .unwrap();
    assert!(reply.contains("payments team"), "{reply}");
    assert!(
        !reply.contains("dentist"),
        "a DM entry leaked into a group: {reply}"
    );
    let reply = h.dm("alice", "what is on my calendar?").await;
    assert!(reply.contains("dentist"), "{reply}");
    assert!(
        !reply.contains("payments"),
        "a group entry surfaced in a DM: {reply}"
    );
    // Bob, in the same group, never sees Alice's entries.
    let reply = h
        .say_in(&lab, "bob", "Engram, what should I work on today?")
        .await
        .unwrap();
    assert!(!reply.contains("payments"), "{reply}");
}

on_both_harnesses!(
    replies_use_the_entries_that_may_surface_there,
    console_remember_view_forget_search,
    memory_shows_only_what_may_surface_where_asked,
    pause_clear_and_resume,
    odd_input_changes_nothing,
    export_import_export_is_identical,
);

fn entry(person: PersonId, key: &str, value: &str, at_s: i64) -> NewEntry {
    NewEntry {
        person,
        scope: Scope::Dm(person),
        category: Category::Preference,
        key: key.into(),
        value: value.into(),
        confidence: 0.8,
        source: "job:extract:2026-11-21".into(),
        origin: "a private chat".into(),
        at: start_time() + chrono::Duration::seconds(at_s),
        expires_at: None,
    }
}

async fn entries_keep_history_and_delete_only_their_owners(s: Arc<dyn Store>) {
    use engram::domain::{EntryWrite, Platform};
    let alice = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let bob = s
        .resolve_person(Platform::Console, "bob", "bob")
        .await
        .unwrap();
    let first = s
        .write_entry(&entry(alice, "drink", "tea", 0))
        .await
        .unwrap();
    assert!(matches!(first, EntryWrite::Added(_)));
    assert_eq!(
        s.write_entry(&entry(alice, "drink", "tea", 1))
            .await
            .unwrap(),
        EntryWrite::Unchanged(first.id())
    );
    assert_eq!(
        s.write_entry(&entry(alice, "drink", "coffee", 2))
            .await
            .unwrap(),
        EntryWrite::Updated(first.id())
    );
    let history = s.entry_history(alice).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].value, "tea");
    let bobs = s
        .write_entry(&entry(bob, "drink", "water", 0))
        .await
        .unwrap();

    // Scopes filter; an empty scope list shows nothing.
    assert_eq!(
        s.entries(alice, Some(&[Scope::Dm(alice)]))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        s.entries(alice, Some(&[Scope::Global]))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.entries(alice, Some(&[])).await.unwrap().is_empty());

    // Alice cannot delete Bob's entry by id.
    assert_eq!(s.delete_entries(alice, &[bobs.id()]).await.unwrap(), 0);
    assert_eq!(s.entries(bob, None).await.unwrap().len(), 1);
    assert_eq!(s.delete_entries(alice, &[first.id()]).await.unwrap(), 1);
    assert!(s.entry_history(alice).await.unwrap().is_empty());

    // Daily notes append; clear removes only the person's rows.
    for (i, text) in ["one", "two"].iter().enumerate() {
        s.append_daily_note(
            alice,
            &DailyNote {
                day: start_time().date_naive(),
                scope: Scope::Dm(alice),
                text: text.to_string(),
                source: format!("test:{i}"),
                added_at: start_time() + chrono::Duration::seconds(i as i64),
            },
        )
        .await
        .unwrap();
    }
    let notes = s.daily_notes(alice, None).await.unwrap();
    assert_eq!(
        notes.iter().map(|n| n.text.as_str()).collect::<Vec<_>>(),
        ["one", "two"]
    );
    s.write_entry(&entry(alice, "food", "pasta", 3))
        .await
        .unwrap();
    // Summaries about her go too; Bob's part of the same day stays.
    let day = start_time().date_naive();
    let room = Scope::Global;
    let record = engram::store::DaySummaryRecord {
        summaries: [
            (alice, "Alice talked about pasta".to_string()),
            (bob, "Bob fixed CI".to_string()),
        ]
        .into_iter()
        .collect(),
        through_message: 1,
        message_count: 2,
        is_final: true,
        computed_at: start_time(),
    };
    s.put_day_summary(&room, day, &record, None).await.unwrap();
    for person in [alice, bob] {
        s.put_history_summary(&room, person, day, "a week of chat", start_time(), None)
            .await
            .unwrap();
    }
    assert_eq!(s.clear_entries(alice).await.unwrap(), 5);
    assert!(s.daily_notes(alice, None).await.unwrap().is_empty());
    assert_eq!(s.entries(bob, None).await.unwrap().len(), 1);
    let left = s.day_summary(&room, day).await.unwrap().unwrap();
    assert_eq!(left.summaries.keys().collect::<Vec<_>>(), [&bob]);
    assert_eq!(left.summaries[&bob], "Bob fixed CI");
    assert!(
        s.history_summary(&room, alice, day)
            .await
            .unwrap()
            .is_none()
    );
    assert!(s.history_summary(&room, bob, day).await.unwrap().is_some());

    // Pruning: an entry past its expiry (with its history) and notes older than the cut-off.
    let mut talk = entry(alice, "talk", "presenting on Friday", 0);
    talk.expires_at = Some(start_time() + chrono::Duration::hours(1));
    s.write_entry(&talk).await.unwrap();
    talk.value = "presenting on Saturday".into();
    s.write_entry(&talk).await.unwrap();
    s.write_entry(&entry(alice, "food", "pasta", 3))
        .await
        .unwrap();
    for (days_ago, text) in [(100, "old"), (10, "recent")] {
        s.append_daily_note(
            alice,
            &DailyNote {
                day: day - chrono::Duration::days(days_ago),
                scope: Scope::Dm(alice),
                text: text.into(),
                source: format!("test:{days_ago}"),
                added_at: start_time(),
            },
        )
        .await
        .unwrap();
    }
    let cut = day - chrono::Duration::days(90);
    assert_eq!(
        s.prune_memory(start_time(), cut).await.unwrap(),
        1,
        "only the old note"
    );
    let later = start_time() + chrono::Duration::hours(2);
    assert_eq!(
        s.prune_memory(later, cut).await.unwrap(),
        2,
        "the entry and its history"
    );
    let kept: Vec<String> = s
        .entries(alice, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.value)
        .collect();
    assert_eq!(kept, ["pasta"]);
    let notes: Vec<String> = s
        .daily_notes(alice, None)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.text)
        .collect();
    assert_eq!(notes, ["recent"]);
    assert_eq!(s.entries(bob, None).await.unwrap().len(), 1);
}

on_both_backends!(entries_keep_history_and_delete_only_their_owners);

/// The memory layer's own-memory operations (capture, delete, share, staged changes) act for
/// the person alone: asked by anyone else they refuse and change nothing, whoever calls them.
#[tokio::test]
async fn own_memory_operations_refuse_anyone_else() {
    use engram::adapters::console::ConsoleOptions;
    use engram::memory::tools::StagedChange;
    use engram::memory::{CaptureOutcome, FactRequest, MemoryError};
    let h = Harness::offline().await;
    h.dm("alice", "remember that I like green tea").await;
    h.dm("bob", "hello").await;
    let (alice, bob) = (h.person("alice").await, h.person("bob").await);
    let place = h.place(&ConsoleOptions::private("alice"), "alice").await;
    let kept = h.store.entries(alice, None).await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let entry = kept[0].clone();
    let ask = |actor: PersonId, actor_name: &'static str, text: &'static str| FactRequest {
        subject: alice,
        subject_name: "alice",
        actor,
        actor_name,
        actor_is_moderator: false,
        place: &place,
        text,
        source: None,
    };
    let memory = &h.memory.manager;
    let by_bob = ask(bob, "bob", "I hate tea");
    let refused = |r: Result<(), MemoryError>| matches!(r, Err(MemoryError::NotTheirs { .. }));
    assert!(refused(memory.capture(&by_bob).await.map(|_| ())));
    let listed = [(entry.id, entry.value.clone())];
    assert!(refused(
        memory
            .delete_entries(&by_bob, &listed, &[], &By::request(&by_bob))
            .await
            .map(|_| ())
    ));
    assert!(refused(
        memory
            .move_entry(&by_bob, entry.id, Scope::Global)
            .await
            .map(|_| ())
    ));
    let delete = [StagedChange::Delete {
        id: entry.id,
        value: entry.value.clone(),
    }];
    assert!(refused(
        memory.apply_staged(&by_bob, &delete, 0).await.map(|_| ())
    ));
    assert_eq!(h.store.entries(alice, None).await.unwrap(), kept);

    // Positive controls: Alice herself captures, and deletes.
    let by_alice = ask(alice, "alice", "I walk to work");
    assert!(matches!(
        memory.capture(&by_alice).await.unwrap(),
        CaptureOutcome::Saved { .. }
    ));
    assert_eq!(
        memory
            .delete_entries(&by_alice, &listed, &[], &By::request(&by_alice))
            .await
            .unwrap(),
        1
    );
    let left: Vec<String> = h
        .store
        .entries(alice, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.value)
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].contains("walk to work"), "{left:?}");
}
