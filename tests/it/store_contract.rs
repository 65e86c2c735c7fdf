//! The store contract, written once and run against SQLite and PostgreSQL (`sqlite::*` and
//! `postgres::*`). PostgreSQL runs when built with ENGRAM_TEST_POSTGRES=1 (always in CI).

use crate::common::*;
use chrono::{Duration, TimeZone, Utc};
use engram::domain::{
    Embedding, MessageId, ModelIdentity, PersonId, Platform, Scope, SpaceId, SpaceKind,
    StoredMessage, VectorSpaceId,
};
use engram::store::copy::{copy_all, summarize};
use engram::store::{
    Among, Bm25, DaySummaryRecord, DetailsSaved, FactChange, Finish, JobClaim, NewMessage, Store,
    StoreError, query_terms, query_terms_in,
};
use std::collections::BTreeMap;
use std::sync::Arc;

fn t(h: i64) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0)
        .single()
        .unwrap()
        + Duration::hours(h)
}

fn change(by: PersonId, op: &str) -> FactChange {
    FactChange {
        op: op.into(),
        request: "r".into(),
        method: "offline".into(),
        changed_by: Some(by),
        source_message: None,
        at: t(1),
        drop_history: false,
    }
}

async fn identities_map_to_one_person(s: Arc<dyn Store>) {
    let a = s
        .resolve_person(Platform::Discord, "111", "Alice")
        .await
        .unwrap();
    assert_eq!(
        s.resolve_person(Platform::Discord, "111", "Alice")
            .await
            .unwrap(),
        a
    );
    let renamed = s
        .resolve_person(Platform::Discord, "111", "Alicia")
        .await
        .unwrap();
    assert_eq!(renamed, a);
    assert_eq!(s.person(a).await.unwrap().unwrap().display_name, "Alicia");
    let other = s
        .resolve_person(Platform::Telegram, "111", "Alice")
        .await
        .unwrap();
    assert_ne!(other, a, "identities are per platform");
    let found = s
        .find_people(Platform::Discord, "ALICIA", Among::Everyone)
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].person, a);
    // Case aside in every script, on both backends.
    let olga = s
        .resolve_person(Platform::Discord, "112", "Ольга")
        .await
        .unwrap();
    let jurgen = s
        .resolve_person(Platform::Discord, "113", "Jürgen Weiß")
        .await
        .unwrap();
    for (name, who) in [
        ("@ольга", Some(olga)),
        ("ОЛЬГА", Some(olga)),
        ("JÜRGEN WEIß", Some(jurgen)),
        ("ольгa", None), // a Latin "a" at the end: someone else
        ("оля", None),
    ] {
        let found: Vec<_> = s
            .find_people(Platform::Discord, name, Among::Everyone)
            .await
            .unwrap()
            .iter()
            .map(|m| m.person)
            .collect();
        assert_eq!(found, who.into_iter().collect::<Vec<_>>(), "{name}");
    }
    // Usernames: kept, found case-insensitively, and one account's at a time.
    let dana = s
        .resolve_account(Platform::Telegram, "7", "Dana", Some("dana_k"))
        .await
        .unwrap()
        .person;
    assert_eq!(
        s.find_username(Platform::Telegram, "@Dana_K")
            .await
            .unwrap(),
        Some(dana)
    );
    assert_eq!(
        s.find_people(Platform::Telegram, "dana_k", Among::Everyone)
            .await
            .unwrap()
            .iter()
            .map(|m| m.person)
            .collect::<Vec<_>>(),
        vec![dana]
    );
    // Dana renames herself; someone else takes the old username: it is theirs now.
    s.resolve_account(Platform::Telegram, "7", "Dana", Some("dana_new"))
        .await
        .unwrap();
    let taker = s
        .resolve_account(Platform::Telegram, "8", "Mallory", Some("dana_k"))
        .await
        .unwrap()
        .person;
    assert_eq!(
        s.find_username(Platform::Telegram, "dana_k").await.unwrap(),
        Some(taker)
    );
    assert_eq!(
        s.find_username(Platform::Telegram, "dana_new")
            .await
            .unwrap(),
        Some(dana)
    );
    // Without a username, the known one stays.
    s.resolve_person(Platform::Telegram, "7", "Dana")
        .await
        .unwrap();
    assert_eq!(
        s.find_username(Platform::Telegram, "dana_new")
            .await
            .unwrap(),
        Some(dana)
    );
    assert_eq!(
        s.find_identity(Platform::Discord, "999").await.unwrap(),
        None
    );
}

async fn concurrent_first_sight_creates_one_person(s: Arc<dyn Store>) {
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move {
                s.resolve_person(Platform::Discord, "42", "Zed")
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let counts = s.table_counts().await.unwrap();
    assert_eq!(
        counts
            .iter()
            .find(|c| c.table == "identities")
            .unwrap()
            .rows,
        1
    );
}

async fn messages_are_idempotent_and_chatter_excludes_bot_and_commands(s: Arc<dyn Store>) {
    let space = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    assert_eq!(
        s.resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
            .await
            .unwrap(),
        space
    );
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let scope = Scope::Space(space);
    let stored = s
        .insert_message(&msg(space, scope.clone(), a, "m1", "hello", t(1)))
        .await
        .unwrap();
    assert!(stored.new, "stored now");
    let first = stored.id;
    // Delivered again: the same id, and the store says it was there (nothing counts twice).
    assert_eq!(
        s.insert_message(&msg(space, scope.clone(), a, "m1", "hello again", t(1)))
            .await
            .unwrap(),
        engram::store::Stored {
            id: first,
            new: false
        }
    );
    let mut bot = msg(space, scope.clone(), a, "m2", "bot says", t(2));
    bot.is_bot = true;
    let mut cmd = msg(space, scope.clone(), a, "m3", "remember that x", t(3));
    cmd.is_command = true;
    let ids = s
        .insert_messages(&[
            msg(space, scope.clone(), a, "m1", "redelivered", t(1)),
            bot,
            cmd,
            msg(space, scope.clone(), a, "m4", "later", t(4)),
            msg(
                space,
                scope.clone(),
                a,
                "m4",
                "later, twice in one batch",
                t(4),
            ),
        ])
        .await
        .unwrap();
    assert_eq!(ids.len(), 5);
    assert_eq!(ids[0], first, "a redelivered message keeps its id");
    assert_eq!(ids[3], ids[4], "one row per key, even within a batch");
    let ids = &ids[1..];
    let recent = s.recent_messages(space, "general", None, 10).await.unwrap();
    assert_eq!(
        recent.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["hello", "bot says", "remember that x", "later"]
    );
    assert_eq!(
        s.recent_messages(space, "general", None, 2).await.unwrap()[1].text,
        "later"
    );
    let chatter = s.chatter_in_range(&scope, t(0), t(24), 10).await.unwrap();
    assert_eq!(
        chatter.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["hello", "later"]
    );
    assert_eq!(
        s.author_chatter_in_range(&scope, a, t(0), t(2), 10)
            .await
            .unwrap()
            .len(),
        1
    );
    let stats = s.chatter_stats(&scope, t(0), t(24)).await.unwrap();
    assert_eq!((stats.count, stats.last_message), (2, ids[2].0));
    assert_eq!(
        s.chatter_in_range(&scope, t(0), t(24), 1).await.unwrap()[0].text,
        "later",
        "the latest are kept"
    );
    assert_eq!(
        s.active_scopes(t(0), t(24)).await.unwrap(),
        vec![scope.clone()]
    );
    assert!(s.active_scopes(t(5), t(24)).await.unwrap().is_empty());
    let odd = "🦀 \u{202e} ש \u{0301} \"quotes\" 'single' \\ ;DROP";
    let id = s
        .insert_message(&msg(space, scope, a, "m5", odd, t(5)))
        .await
        .unwrap()
        .id;
    assert!(
        s.recent_messages(space, "general", None, 1).await.unwrap()[0].text == odd
            && id.0 > first.0
    );
}

async fn fact_updates_are_versioned_and_conflicts_detected(s: Arc<dyn Store>) {
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let b = s
        .resolve_person(Platform::Console, "bob", "bob")
        .await
        .unwrap();
    let scope = Scope::Dm(a);
    assert_eq!(s.facts(a, &scope).await.unwrap().version, 0);
    assert_eq!(
        s.update_facts(a, &scope, 0, "loves Rust", &change(a, "remember"))
            .await
            .unwrap(),
        1
    );
    let stale = s
        .update_facts(a, &scope, 0, "other", &change(b, "remember"))
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    assert!(stale.unwrap_err().is_retryable());
    assert_eq!(
        s.update_facts(
            a,
            &scope,
            1,
            "loves Rust. Lives in Berlin.",
            &change(b, "remember")
        )
        .await
        .unwrap(),
        2
    );
    let current = s.facts(a, &scope).await.unwrap();
    assert_eq!(
        (current.text.as_str(), current.version),
        ("loves Rust. Lives in Berlin.", 2)
    );
    let history = s.fact_history(a, &scope).await.unwrap();
    assert_eq!(
        history
            .iter()
            .map(|v| (v.version, v.changed_by))
            .collect::<Vec<_>>(),
        [(1, Some(a)), (2, Some(b))]
    );
    assert!(
        s.facts(a, &Scope::Global).await.unwrap().text.is_empty(),
        "scopes are separate"
    );
}

async fn concurrent_fact_writers_never_overwrite_each_other(s: Arc<dyn Store>) {
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let scope = Scope::Global;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (s, scope) = (s.clone(), scope.clone());
            tokio::spawn(async move {
                loop {
                    let cur = s.facts(a, &scope).await.unwrap();
                    let text = format!("{} fact{i}.", cur.text).trim().to_string();
                    match s
                        .update_facts(a, &scope, cur.version, &text, &change(a, "remember"))
                        .await
                    {
                        Ok(_) => break,
                        Err(StoreError::Conflict { .. }) => continue,
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let text = s.facts(a, &scope).await.unwrap().text;
    for i in 0..8 {
        assert!(text.contains(&format!("fact{i}.")), "fact{i} lost: {text}");
    }
    assert_eq!(s.fact_history(a, &scope).await.unwrap().len(), 8);
}

async fn summaries_round_trip_and_final_days_stay_final(s: Arc<dyn Store>) {
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let scope = Scope::Space(SpaceId(7));
    let day = t(0).date_naive();
    assert_eq!(s.day_summary(&scope, day).await.unwrap(), None);
    let mut record = DaySummaryRecord {
        summaries: BTreeMap::from([(a, "alice was busy".to_string())]),
        through_message: 10,
        message_count: 3,
        is_final: false,
        computed_at: t(5),
    };
    s.put_day_summary(&scope, day, &record, None).await.unwrap();
    assert_eq!(s.day_summary(&scope, day).await.unwrap().unwrap(), record);
    record.is_final = true;
    record.through_message = 12;
    s.put_day_summary(&scope, day, &record, None).await.unwrap();
    let mut late = record.clone();
    late.is_final = false;
    late.summaries.insert(a, "overwritten".into());
    s.put_day_summary(&scope, day, &late, None).await.unwrap();
    assert_eq!(
        s.day_summary(&scope, day).await.unwrap().unwrap(),
        record,
        "a final day is never replaced"
    );
    s.put_history_summary(&scope, a, day, "a calm week", t(6), None)
        .await
        .unwrap();
    s.put_history_summary(&scope, a, day, "second writer", t(7), None)
        .await
        .unwrap();
    assert_eq!(
        s.history_summary(&scope, a, day).await.unwrap().as_deref(),
        Some("a calm week")
    );
}

async fn job_claims_are_exclusive_and_survive_a_crashed_holder(s: Arc<dyn Store>) {
    let lease = Duration::minutes(10);
    assert_eq!(
        s.claim_job("day_summaries", "2026-11-19", "p1", t(1), lease)
            .await
            .unwrap(),
        JobClaim::Acquired { attempt: 1 }
    );
    match s
        .claim_job("day_summaries", "2026-11-19", "p2", t(1), lease)
        .await
        .unwrap()
    {
        JobClaim::HeldByOther { holder, .. } => assert_eq!(holder, "p1"),
        other => panic!("{other:?}"),
    }
    // A holder still at work renews its claim: the run stays its own past the first lease.
    assert!(
        s.renew_job(
            "day_summaries",
            "2026-11-19",
            "p1",
            t(1) + Duration::minutes(11)
        )
        .await
        .unwrap()
    );
    assert!(
        !s.renew_job(
            "day_summaries",
            "2026-11-19",
            "p2",
            t(1) + Duration::minutes(30)
        )
        .await
        .unwrap(),
        "only its holder renews a claim"
    );
    assert!(matches!(
        s.claim_job(
            "day_summaries",
            "2026-11-19",
            "p2",
            t(1) + Duration::minutes(10),
            lease
        )
        .await
        .unwrap(),
        JobClaim::HeldByOther { .. }
    ));
    // p1 crashed; after its lease, p2 takes over and finishes; p1's late finish is refused.
    assert_eq!(
        s.claim_job(
            "day_summaries",
            "2026-11-19",
            "p2",
            t(1) + Duration::minutes(11),
            lease
        )
        .await
        .unwrap(),
        JobClaim::Acquired { attempt: 2 }
    );
    assert!(
        !s.finish_job("day_summaries", "2026-11-19", "p1", t(2), Finish::Done, "")
            .await
            .unwrap()
    );
    assert!(
        s.finish_job(
            "day_summaries",
            "2026-11-19",
            "p2",
            t(2),
            Finish::Done,
            "2 scopes"
        )
        .await
        .unwrap()
    );
    assert_eq!(
        s.claim_job("day_summaries", "2026-11-19", "p3", t(3), lease)
            .await
            .unwrap(),
        JobClaim::AlreadyDone
    );
    // A failed run may be retried from the time its finish says, not before.
    assert_eq!(
        s.claim_job("day_summaries", "2026-11-20", "p1", t(3), lease)
            .await
            .unwrap(),
        JobClaim::Acquired { attempt: 1 }
    );
    let retry_at = t(3) + Duration::minutes(5);
    assert!(
        s.finish_job(
            "day_summaries",
            "2026-11-20",
            "p1",
            t(3),
            Finish::Failed { retry_at },
            "llm down"
        )
        .await
        .unwrap()
    );
    assert_eq!(
        s.claim_job(
            "day_summaries",
            "2026-11-20",
            "p2",
            t(3) + Duration::minutes(4),
            lease
        )
        .await
        .unwrap(),
        JobClaim::RetryLater { at: retry_at }
    );
    assert_eq!(
        s.claim_job("day_summaries", "2026-11-20", "p2", retry_at, lease)
            .await
            .unwrap(),
        JobClaim::Acquired { attempt: 2 }
    );
    let runs = s.job_runs("day_summaries").await.unwrap();
    assert_eq!(
        runs.iter()
            .map(|r| (r.run_key.as_str(), r.status.as_str(), r.holder.as_str()))
            .collect::<Vec<_>>(),
        [
            ("2026-11-19", "done", "p2"),
            ("2026-11-20", "running", "p2")
        ]
    );
    // Counted by status, the latest the one started last (not the last by key: "99:5" comes
    // after "100:3" as text, and "100:3" started later).
    let summary = s.job_summary("day_summaries").await.unwrap();
    assert_eq!((summary.done, summary.failed, summary.running), (1, 0, 1));
    assert_eq!(summary.last.unwrap().run_key, "2026-11-20");
    for (key, at) in [("99:5", t(1)), ("100:3", t(2))] {
        s.claim_job("episode", key, "p1", at, lease).await.unwrap();
    }
    s.finish_job("episode", "99:5", "p1", t(3), Finish::Done, "")
        .await
        .unwrap();
    let summary = s.job_summary("episode").await.unwrap();
    assert_eq!((summary.done, summary.failed, summary.running), (1, 0, 1));
    assert_eq!(summary.last.unwrap().run_key, "100:3");
    let none = s.job_summary("never").await.unwrap();
    assert_eq!((none.done, none.running, none.last), (0, 0, None));
}

async fn concurrent_claims_have_one_winner(s: Arc<dyn Store>) {
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.claim_job("j", "k", &format!("p{i}"), t(1), Duration::minutes(5))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut winners = 0;
    for task in tasks {
        if matches!(task.await.unwrap(), JobClaim::Acquired { .. }) {
            winners += 1;
        }
    }
    assert_eq!(winners, 1);
}

async fn search_stays_in_scope_and_survives_hostile_queries(s: Arc<dyn Store>) {
    let lab = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    let home = s
        .resolve_space(Platform::Console, "home", SpaceKind::Group, "home")
        .await
        .unwrap();
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let b = s
        .resolve_person(Platform::Console, "bob", "bob")
        .await
        .unwrap();
    s.insert_messages(&[
        msg(
            lab,
            Scope::Space(lab),
            a,
            "1",
            "the postgres migration finished",
            t(1),
        ),
        msg(lab, Scope::Space(lab), a, "2", "lunch was good", t(2)),
        msg(
            home,
            Scope::Space(home),
            a,
            "3",
            "postgres at home too",
            t(3),
        ),
        msg(
            lab,
            Scope::Dm(b),
            b,
            "4",
            "my secret postgres password",
            t(4),
        ),
        msg(
            lab,
            Scope::Channel(lab, "staff".into()),
            a,
            "5",
            "postgres layoffs",
            t(5),
        ),
    ])
    .await
    .unwrap();
    let hits = s
        .search_messages(
            &[Scope::Global, Scope::Space(lab)],
            &query_terms("Postgres migration?", 16),
            Bm25::default(),
            10,
        )
        .await
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].message.text, "the postgres migration finished");
    let restricted = s
        .search_messages(
            &[Scope::Space(lab), Scope::Channel(lab, "staff".into())],
            &query_terms("postgres", 16),
            Bm25::default(),
            10,
        )
        .await
        .unwrap();
    assert_eq!(restricted.len(), 2);
    assert!(
        restricted
            .iter()
            .all(|h| !h.message.text.contains("secret") && !h.message.text.contains("home"))
    );
    for hostile in [
        "\"",
        "\"unbalanced",
        "a AND OR NOT",
        "NEAR(postgres migration, 2)",
        "((((",
        "text:postgres",
        "*",
        "'; DROP TABLE messages; --",
        "🦀🦀🦀",
        "",
        "   ",
        "-postgres",
        "postgres*",
        "^postgres",
    ] {
        let r = s
            .search_messages(
                &[Scope::Space(lab)],
                &query_terms(hostile, 16),
                Bm25::default(),
                10,
            )
            .await;
        assert!(r.is_ok(), "{hostile:?}: {r:?}");
    }
    let long = "postgres ".repeat(1200);
    assert_eq!(
        s.search_messages(
            &[Scope::Space(lab)],
            &query_terms(&long, 16),
            Bm25::default(),
            10
        )
        .await
        .unwrap()
        .len(),
        1
    );
    assert!(
        s.search_messages(&[], &query_terms("postgres", 16), Bm25::default(), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn dumps_copy_into_an_empty_store_with_equal_checksums(s: Arc<dyn Store>) {
    let space = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let mut m = msg(
        space,
        Scope::Space(space),
        a,
        "1",
        "hello 'world' \"x\" 🦀",
        t(1),
    );
    m.reply_to = Some("0".into());
    m.is_command = true;
    s.insert_messages(&[m, msg(space, Scope::Space(space), a, "2", "second", t(2))])
        .await
        .unwrap();
    let mut c = change(a, "remember");
    c.source_message = Some(MessageId(1));
    s.update_facts(a, &Scope::Space(space), 0, "facts", &c)
        .await
        .unwrap();
    s.put_day_summary(
        &Scope::Space(space),
        t(0).date_naive(),
        &DaySummaryRecord {
            summaries: BTreeMap::from([(a, "s".to_string())]),
            through_message: 2,
            message_count: 2,
            is_final: true,
            computed_at: t(3),
        },
        None,
    )
    .await
    .unwrap();
    s.claim_job("j", "k", "p", t(1), Duration::minutes(1))
        .await
        .unwrap();
    // Structured memory: an entry with an expiry and a changed value (so a history row), a
    // daily note, and a paused switch.
    let mut entry = engram::domain::NewEntry {
        person: a,
        scope: Scope::Space(space),
        category: engram::domain::Category::WorkContext,
        key: "talk".into(),
        value: "presenting on Friday".into(),
        confidence: 0.7,
        source: "message:1".into(),
        origin: "a public channel".into(),
        at: t(1),
        expires_at: Some(t(9)),
    };
    s.write_entry(&entry).await.unwrap();
    entry.value = "presenting on Saturday".into();
    entry.confidence = 0.123_456_789;
    s.write_entry(&entry).await.unwrap();
    s.append_daily_note(
        a,
        &engram::domain::DailyNote {
            day: t(0).date_naive(),
            scope: Scope::Space(space),
            text: "## Notes\n- 🦀".into(),
            source: "test".into(),
            added_at: t(2),
        },
    )
    .await
    .unwrap();
    s.set_memory_paused(a, true, t(3)).await.unwrap();
    // What must stay out after a move (a message forgotten on request, one the platform
    // deleted), and where a catch-up goes on from.
    s.keep_out(&[MessageId(2)], t(3), Duration::days(30))
        .await
        .unwrap();
    s.mark_deleted(
        Platform::Console,
        "lab",
        "general",
        &["9".into()],
        t(3),
        Duration::days(1),
    )
    .await
    .unwrap();
    s.saw_message(Platform::Discord, "g1", "c1", 42, t(3))
        .await
        .unwrap();
    // Cleared twice: the later clear stays, whichever comes last; bob was never cleared.
    s.resolve_person(Platform::Console, "bob", "bob")
        .await
        .unwrap();
    for at in [t(5), t(4)] {
        s.mark_memory_cleared(a, at).await.unwrap();
    }
    assert_eq!(
        s.account_cleared_at(Platform::Console, "alice")
            .await
            .unwrap(),
        Some(t(5))
    );
    assert_eq!(
        s.account_cleared_at(Platform::Console, "bob")
            .await
            .unwrap(),
        None
    );
    let dir = tempfile::tempdir().unwrap();
    let target = open_url(&format!(
        "sqlite://{}",
        dir.path().join("copy.db").display()
    ))
    .await;
    let added = copy_all(s.as_ref(), target.as_ref(), |_, _| {})
        .await
        .unwrap();
    assert!(added >= 12, "{added}");
    assert_eq!(
        target.entries(a, None).await.unwrap(),
        s.entries(a, None).await.unwrap()
    );
    assert_eq!(target.entry_history(a).await.unwrap().len(), 1);
    assert!(target.memory_paused(a).await.unwrap());
    for (id, forgotten) in [("2", true), ("1", false)] {
        assert_eq!(
            target
                .was_forgotten(Platform::Console, "lab", "general", id, t(0))
                .await
                .unwrap(),
            forgotten,
            "message {id}"
        );
    }
    for (id, deleted) in [("9", true), ("1", false)] {
        assert_eq!(
            target
                .was_deleted(Platform::Console, "lab", "general", id)
                .await
                .unwrap(),
            deleted,
            "message {id}"
        );
    }
    assert_eq!(
        target
            .account_cleared_at(Platform::Console, "alice")
            .await
            .unwrap(),
        Some(t(5))
    );
    assert!(target.memory_paused(a).await.unwrap(), "paused as before");
    let cursors = target
        .channels_seen_since(Platform::Discord, t(0))
        .await
        .unwrap();
    assert_eq!(
        cursors
            .iter()
            .map(|c| (
                c.space_external_id.as_str(),
                c.channel.as_str(),
                c.external_id
            ))
            .collect::<Vec<_>>(),
        [("g1", "c1", 42)]
    );
    assert_eq!(
        summarize(s.as_ref()).await.unwrap(),
        summarize(target.as_ref()).await.unwrap()
    );
    assert_eq!(
        copy_all(s.as_ref(), target.as_ref(), |_, _| {})
            .await
            .unwrap(),
        0,
        "a second copy adds nothing"
    );
    // Ids continue after the copied ones.
    let b = target
        .resolve_person(Platform::Console, "bob", "bob")
        .await
        .unwrap();
    assert!(b.0 > a.0);
}

async fn search_ranks_by_bm25(s: Arc<dyn Store>) {
    let lab = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let scope = Scope::Space(lab);
    let mut batch: Vec<NewMessage> = (0..8)
        .map(|i| {
            msg(
                lab,
                scope.clone(),
                a,
                &format!("c{i}"),
                &format!("coffee break number {i} with the team"),
                t(i),
            )
        })
        .collect();
    batch.push(msg(
        lab,
        scope.clone(),
        a,
        "rare",
        "coffee with kubernetes folks",
        t(9),
    ));
    batch.push(msg(
        lab,
        scope.clone(),
        a,
        "long",
        &format!("kubernetes {}", "filler words ".repeat(40)),
        t(10),
    ));
    s.insert_messages(&batch).await.unwrap();
    let hits = s
        .search_messages(
            std::slice::from_ref(&scope),
            &query_terms("coffee kubernetes", 16),
            Bm25::default(),
            5,
        )
        .await
        .unwrap();
    assert_eq!(
        hits[0].message.text, "coffee with kubernetes folks",
        "both terms, short: first"
    );
    assert!(
        hits[1].message.text.starts_with("kubernetes filler"),
        "the rare term outweighs the common one: {hits:?}"
    );
    assert!(
        hits.windows(2).all(|w| w[0].score >= w[1].score),
        "best first"
    );
    assert_eq!(hits.len(), 5);
}

/// Two group spaces, "lab" and "den", and a person, alice.
async fn lab_den_and_alice(s: &Arc<dyn Store>) -> (SpaceId, SpaceId, PersonId) {
    let lab = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    let den = s
        .resolve_space(Platform::Console, "den", SpaceKind::Group, "den")
        .await
        .unwrap();
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    (lab, den, a)
}

/// `msg`, its language English (not detected from a few words).
fn english_msg(
    space: SpaceId,
    scope: &Scope,
    author: PersonId,
    ext: &str,
    text: &str,
    at: chrono::DateTime<Utc>,
) -> NewMessage {
    NewMessage {
        language: Some(engram::domain::language::Language::English),
        ..msg(space, scope.clone(), author, ext, text, at)
    }
}

/// What a search found is what was expected: the same things in the same order, each score
/// the formula's to 1e-9.
fn assert_scores<K: PartialEq + std::fmt::Debug>(found: &[(K, f64)], expected: &[(K, f64)]) {
    assert_eq!(
        found.len(),
        expected.len(),
        "{found:?} against {expected:?}"
    );
    for ((key, score), (want_key, want)) in found.iter().zip(expected) {
        assert_eq!(key, want_key, "{found:?} against {expected:?}");
        assert!(
            (score - want).abs() < 1e-9,
            "{key:?}: {score} against {want}"
        );
    }
}

/// BM25's scores are the formula's (`Bm25::idf`, `Bm25::term_score`) with N, the average
/// length and each term's document frequency of the searched scopes alone: another scope full
/// of the same words changes no score, and none of its messages is found.
async fn bm25_scores_are_the_formulas_over_the_searched_scopes(s: Arc<dyn Store>) {
    use engram::domain::language::Language;
    let (lab, den, a) = lab_den_and_alice(&s).await;
    let (here, there) = (Scope::Space(lab), Scope::Space(den));
    // English words, none a stop word: a message's length is its number of words.
    let english = |space, scope: &Scope, ext: &str, text: &str, h| {
        english_msg(space, scope, a, ext, text, t(h))
    };
    let mut batch = vec![
        english(lab, &here, "h1", "coffee kubernetes", 1),
        english(lab, &here, "h2", "coffee coffee tea milk", 2),
        english(lab, &here, "h3", "walrus", 3),
    ];
    batch.extend((0..6).map(|i| {
        let text = format!("kubernetes coffee walrus harbour{i} lighthouse{i} anchor{i}");
        english(den, &there, &format!("d{i}"), &text, 4 + i)
    }));
    s.insert_messages(&batch).await.unwrap();
    let bm25 = Bm25 { k1: 1.5, b: 0.6 };
    let terms = query_terms_in("coffee kubernetes", 16, Some(Language::English));
    let hits = s
        .search_messages(std::slice::from_ref(&here), &terms, bm25, 10)
        .await
        .unwrap();
    let found: Vec<(&str, f64)> = hits
        .iter()
        .map(|h| (h.message.text.as_str(), h.score))
        .collect();
    // Three documents of 2, 4 and 1 words here: N = 3, average length 7/3; "coffee" in 2
    // (twice in one), "kubernetes" in 1.
    let (coffee, kubernetes) = (Bm25::idf(3.0, 2.0), Bm25::idf(3.0, 1.0));
    let avg = 7.0 / 3.0;
    let expected = [
        (
            "coffee kubernetes",
            bm25.term_score(coffee, 1.0, 2.0, avg) + bm25.term_score(kubernetes, 1.0, 2.0, avg),
        ),
        (
            "coffee coffee tea milk",
            bm25.term_score(coffee, 2.0, 4.0, avg),
        ),
    ];
    assert_scores(&found, &expected);
    // The control: the other scope's messages are found where they are.
    let theirs = s
        .search_messages(std::slice::from_ref(&there), &terms, bm25, 10)
        .await
        .unwrap();
    assert_eq!(theirs.len(), 6);
    assert!(theirs.iter().all(|h| h.message.scope == there));
}

/// Episode BM25's scores are the formula's too: an episode is its messages' words and its
/// details' search keys, with N and the average length of the searched scopes' episodes
/// alone. Another scope full of the same words changes no score, and none of its episodes is
/// found (the control finds them in their own scope).
async fn episode_bm25_scores_are_the_formulas_over_the_searched_scopes(s: Arc<dyn Store>) {
    use engram::domain::language::Language;
    let (lab, den, a) = lab_den_and_alice(&s).await;
    let (here, there) = (Scope::Space(lab), Scope::Space(den));
    // English words, none a stop word: a message's length is its number of words. Hours
    // apart, messages are episodes of their own (`index_pending` cuts after 30 minutes).
    let english = |space, scope: &Scope, ext: &str, text: &str, at| {
        english_msg(space, scope, a, ext, text, at)
    };
    let mut batch = vec![
        english(lab, &here, "h1", "coffee kubernetes", t(1)),
        english(lab, &here, "h2", "walrus", t(1) + Duration::minutes(1)),
        english(lab, &here, "h3", "coffee coffee tea milk", t(3)),
        english(lab, &here, "h4", "lighthouse", t(5)),
    ];
    batch.extend((0..6).map(|i| {
        let text = format!("kubernetes coffee walrus harbour{i} anchor{i}");
        english(den, &there, &format!("d{i}"), &text, t(7 + 2 * i))
    }));
    let ids = s.insert_messages(&batch).await.unwrap();
    index_pending(&s, |_| None).await;
    let episode_of = |m: &StoredMessage| m.episode.expect("indexed into an episode");
    let read = s.messages_by_id(&ids[..4]).await.unwrap();
    let (first, second) = (episode_of(&read[0]), episode_of(&read[2]));
    assert_eq!(first, episode_of(&read[1]), "a minute apart: one episode");
    // The third has search keys of 2 words, one of them a searched term.
    let (third, said) = closed_episode(&s, ids[3]).await;
    assert_eq!(
        s.save_episode_details(third, &said, "{}", "kubernetes harbour")
            .await
            .unwrap(),
        DetailsSaved::Kept
    );
    let bm25 = Bm25 { k1: 1.5, b: 0.6 };
    let terms = query_terms_in("coffee kubernetes", 16, Some(Language::English));
    let hits = s
        .search_episodes(std::slice::from_ref(&here), &terms, bm25, 10)
        .await
        .unwrap();
    // Three episodes of 3, 4 and 1 + 2 words here: N = 3, average length 10/3; "coffee" in
    // the first two (twice in the second), "kubernetes" in the first and the third's keys.
    let idf = Bm25::idf(3.0, 2.0);
    let avg = 10.0 / 3.0;
    let mut expected = [
        (
            first,
            bm25.term_score(idf, 1.0, 3.0, avg) + bm25.term_score(idf, 1.0, 3.0, avg),
        ),
        (second, bm25.term_score(idf, 2.0, 4.0, avg)),
        (third, bm25.term_score(idf, 1.0, 3.0, avg)),
    ];
    expected.sort_by(|x, y| y.1.total_cmp(&x.1));
    let found: Vec<(i64, f64)> = hits.iter().map(|h| (h.episode, h.score)).collect();
    assert_scores(&found, &expected);
    // At most `limit`, the best first.
    let best = s
        .search_episodes(std::slice::from_ref(&here), &terms, bm25, 1)
        .await
        .unwrap();
    assert_eq!(best.len(), 1);
    assert_eq!(best[0].episode, expected[0].0);
    // The control: the other scope's episodes are found where they are.
    let theirs = s
        .search_episodes(std::slice::from_ref(&there), &terms, bm25, 10)
        .await
        .unwrap();
    let mine: Vec<i64> = [first, second, third].into();
    assert_eq!(theirs.len(), 6, "{theirs:?}");
    assert!(theirs.iter().all(|h| !mine.contains(&h.episode)));
}

/// A unit vector of 384 numbers pointing mostly along axis `i`.
fn axis(i: usize) -> Vec<f32> {
    axis_of(384, i)
}

/// A unit vector of `dims` numbers pointing mostly along axis `i`.
fn axis_of(dims: usize, i: usize) -> Vec<f32> {
    let mut v = vec![0.01f32; dims];
    v[i % dims] = 1.0;
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

/// The identity of a test model making vectors of `dims`.
fn model(dims: usize) -> ModelIdentity {
    ModelIdentity {
        provider: "test".into(),
        model: format!("axes-{dims}"),
        dimensions: dims,
        revision: String::new(),
    }
}

/// Indexes every pending message (30-minute episodes), each with the vector `vector` gives it.
async fn index_pending(s: &Arc<dyn Store>, vector: impl Fn(&StoredMessage) -> Option<Embedding>) {
    let items: Vec<engram::store::IndexedMessage> = s
        .unindexed_messages(100)
        .await
        .unwrap()
        .into_iter()
        .map(|message| engram::store::IndexedMessage {
            embedding: vector(&message),
            message,
            context: None,
            start: Default::default(),
        })
        .collect();
    s.index_messages(&items, Duration::minutes(30))
        .await
        .unwrap();
}

/// A new message of `author` in #general of `lab`, indexed without a vector, and the same
/// indexing work with a vector of `space` (what the embedder writes later).
async fn indexed_without_vector(
    s: &Arc<dyn Store>,
    lab: SpaceId,
    author: PersonId,
    ext: &str,
    space: VectorSpaceId,
) -> (MessageId, engram::store::IndexedMessage) {
    let id = s
        .insert_message(&msg(
            lab,
            Scope::Space(lab),
            author,
            ext,
            "a secret plan",
            t(2),
        ))
        .await
        .unwrap()
        .id;
    let message = s.messages_by_id(&[id]).await.unwrap().remove(0);
    let item = engram::store::IndexedMessage {
        message,
        embedding: None,
        context: None,
        start: Default::default(),
    };
    s.index_messages(std::slice::from_ref(&item), Duration::minutes(30))
        .await
        .unwrap();
    let with_vector = engram::store::IndexedMessage {
        embedding: Some(Embedding {
            space,
            vector: axis(id.0 as usize % 384),
        }),
        ..item
    };
    (id, with_vector)
}

/// A forget and the background embedder at the same moment: whichever commits first, the
/// forgotten message keeps no vector (the embedder's write waits for the message row).
async fn a_vector_written_while_its_message_is_forgotten_goes_too(s: Arc<dyn Store>) {
    let (lab, author, _) = conversation(&s).await;
    let space = s.vector_space(&model(384)).await.unwrap();
    for round in 0..12 {
        let (id, with_vector) =
            indexed_without_vector(&s, lab, author, &format!("race-{round}"), space).await;
        let (writer, forgetter) = (s.clone(), s.clone());
        let write = tokio::spawn(async move { writer.add_vectors(&[with_vector]).await });
        let forget = tokio::spawn(async move { forgetter.delete_messages(&[id]).await });
        write.await.unwrap().unwrap();
        forget.await.unwrap().unwrap();
        assert!(
            vectors_in_any_space(&s, &[id]).await.is_empty(),
            "round {round}: the forgotten message kept a vector"
        );
    }
    // Positive control: without the forget, the same write keeps its vector.
    let (id, with_vector) = indexed_without_vector(&s, lab, author, "kept", space).await;
    assert_eq!(s.add_vectors(&[with_vector]).await.unwrap(), 1);
    assert_eq!(vectors_in_any_space(&s, &[id]).await.len(), 1);
}

/// Vectors of two models (of two sizes) in one database: a search in one space never sees the
/// other's vectors, the second model's backlog comes newest first and resumes where it stopped,
/// a forgotten message loses its vectors in both, and dropping the old space leaves the new.
async fn vector_spaces_never_mix(s: Arc<dyn Store>) {
    let (lab, _, ids) = conversation(&s).await;
    let scopes = [Scope::Space(lab)];
    let a = s.vector_space(&model(384)).await.unwrap();
    assert_eq!(
        s.vector_space(&model(384)).await.unwrap(),
        a,
        "registered once"
    );
    let b = s.vector_space(&model(256)).await.unwrap();
    assert_ne!(a, b);
    let in_a = |id: MessageId| Embedding {
        space: a,
        vector: axis_of(384, id.0 as usize),
    };
    let in_b = |id: MessageId| Embedding {
        space: b,
        vector: axis_of(256, id.0 as usize),
    };
    index_pending(&s, |m| Some(in_a(m.id))).await;
    let rained = ids[5];
    let found =
        |hits: Vec<engram::store::SearchHit>| hits.iter().map(|h| h.message.id).collect::<Vec<_>>();
    // Positive control: model A's question finds model A's vector.
    let hits = s.nearest_messages(&scopes, &in_a(rained), 3).await.unwrap();
    assert_eq!(found(hits)[0], rained);
    // Another model of A's very size has none: vectors of two models never meet.
    let mut twin = model(384);
    twin.model = "another-384".into();
    let twin = Embedding {
        space: s.vector_space(&twin).await.unwrap(),
        vector: axis_of(384, rained.0 as usize),
    };
    let hits = s.nearest_messages(&scopes, &twin, 3).await.unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    // Episodes likewise: closed with A's vectors, found by A, never by the twin model.
    let far = t(1) + Duration::days(2);
    for episode in s.episodes_to_close(far, 100).await.unwrap() {
        let close = engram::store::EpisodeClose::Add {
            summary: "a day out".into(),
            embedding: Some(engram::store::EpisodeVector {
                embedding: in_a(rained),
                made_from: Vec::new(),
            }),
        };
        let from = s
            .episode_messages(episode.id, true, engram::store::EpisodeEnd::Oldest, 200)
            .await
            .unwrap();
        s.close_episode(episode.id, &from, &close).await.unwrap();
    }
    let near_a = s.nearest_episodes(&scopes, &in_a(rained), 3).await.unwrap();
    assert!(!near_a.is_empty());
    assert!(
        s.nearest_episodes(&scopes, &twin, 3)
            .await
            .unwrap()
            .is_empty()
    );
    let lab_scope = Scope::Space(lab);
    assert!(
        s.similar_episode(&lab_scope, &in_a(rained), 0.5, -1)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        s.similar_episode(&lab_scope, &twin, 0.0, -1)
            .await
            .unwrap()
            .is_none()
    );
    // Model B has no vectors yet: nothing, and no error over the other size.
    let hits = s.nearest_messages(&scopes, &in_b(rained), 3).await.unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    assert!(s.message_vectors(b, &[rained]).await.unwrap().is_empty());

    // B's backlog: every indexed message that is not withheld, newest first, in batches.
    let expected: Vec<MessageId> = {
        let mut v: Vec<MessageId> = ids.iter().copied().filter(|&id| id != ids[2]).collect();
        v.reverse();
        v
    };
    let first = s.vectors_missing(b, MessageId(i64::MAX), 2).await.unwrap();
    let first_ids: Vec<MessageId> = first.iter().map(|m| m.id).collect();
    assert_eq!(first_ids, expected[..2]);
    let embed_b = |batch: Vec<StoredMessage>| {
        batch
            .into_iter()
            .map(|m| engram::store::IndexedMessage {
                embedding: Some(in_b(m.id)),
                message: m,
                context: None,
                start: Default::default(),
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(s.add_vectors(&embed_b(first)).await.unwrap(), 2);
    // Stopped here (a crash): asked again from the top, the embedded ones are not offered.
    let rest = s
        .vectors_missing(b, MessageId(i64::MAX), 100)
        .await
        .unwrap();
    assert_eq!(rest.iter().map(|m| m.id).collect::<Vec<_>>(), expected[2..]);
    s.add_vectors(&embed_b(rest)).await.unwrap();
    assert!(
        s.vectors_missing(b, MessageId(i64::MAX), 100)
            .await
            .unwrap()
            .is_empty()
    );
    let coverage = s.vector_coverage().await.unwrap();
    assert_eq!(coverage.messages, expected.len() as i64);
    assert_eq!(coverage.share(a), 1.0);
    assert_eq!(coverage.share(b), 1.0);
    let hits = s.nearest_messages(&scopes, &in_b(rained), 3).await.unwrap();
    assert_eq!(found(hits)[0], rained);
    // Each space answers with its own vectors only: A's question still finds by A.
    assert_eq!(
        s.message_vectors(a, &[rained]).await.unwrap()[0]
            .vector
            .len(),
        384
    );
    assert_eq!(
        s.message_vectors(b, &[rained]).await.unwrap()[0]
            .vector
            .len(),
        256
    );

    // A forgotten message loses its vectors in every space.
    s.delete_messages(&[rained]).await.unwrap();
    assert!(vectors_in_any_space(&s, &[rained]).await.is_empty());
    assert_eq!(vectors_in_any_space(&s, &[ids[0]]).await.len(), 2);

    // Dropping every space but B: A's vectors go, B's stay.
    let dropped = s.drop_other_vector_spaces(b).await.unwrap();
    assert_eq!(dropped, expected.len() as u64 - 1);
    let coverage = s.vector_coverage().await.unwrap();
    assert_eq!(
        coverage
            .spaces
            .iter()
            .map(|c| (c.id, c.vectors))
            .collect::<Vec<_>>(),
        [(b, expected.len() as i64 - 1)]
    );
    assert!(s.message_vectors(a, &[ids[0]]).await.unwrap().is_empty());
    let hits = s.nearest_messages(&scopes, &in_b(ids[0]), 3).await.unwrap();
    assert_eq!(found(hits)[0], ids[0]);
}

/// The group "lab" and Alice.
async fn lab_and_alice(s: &Arc<dyn Store>) -> (SpaceId, PersonId) {
    let lab = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    let a = s
        .resolve_person(Platform::Console, "alice", "Alice")
        .await
        .unwrap();
    (lab, a)
}

/// One conversation in #general of "lab" with the traps a neighbour must not come from: a
/// withheld message, another channel, a DM in the same channel, a long pause.
async fn conversation(s: &Arc<dyn Store>) -> (SpaceId, PersonId, Vec<MessageId>) {
    let (lab, a) = lab_and_alice(s).await;
    let m = |ext: &str, text: &str, minutes: i64| {
        msg(
            lab,
            Scope::Space(lab),
            a,
            ext,
            text,
            t(1) + Duration::minutes(minutes),
        )
    };
    let mut withheld = m("w", "withheld words", 2);
    withheld.withheld = true;
    let mut other_channel = m("o", "other channel", 1);
    other_channel.channel = "random".into();
    let mut dm = m("d", "a private word", 2);
    dm.scope = Scope::Dm(a);
    dm.privacy = dm.scope.privacy();
    let ids = s
        .insert_messages(&[
            m("1", "we went hiking", 0),
            m("2", "Yes! Last Friday.", 1),
            withheld,
            other_channel,
            dm,
            m("3", "it rained", 3),
            m("4", "much later", 180),
        ])
        .await
        .unwrap();
    (lab, a, ids)
}

/// Two places each side, with the same traps as `neighbours`: what a best match's neighbours
/// and theirs are, read with their texts.
async fn nearby_reads_two_places_each_side(s: Arc<dyn Store>) {
    let (lab, a, ids) = conversation(&s).await;
    let (first, short, withheld, other, dm, third, late) =
        (ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]);
    let places = |got: &[engram::store::Nearby], of: MessageId| {
        let places = [-2, -1, 1, 2];
        let n = got.iter().find(|n| n.of == of);
        n.map(|n| {
            let at = places.iter().zip(n.around);
            at.filter_map(|(p, m)| Some((*p, m?))).collect::<Vec<_>>()
        })
        .unwrap_or_default()
    };
    let got = s
        .nearby(&[third, short, MessageId(999_999)], Duration::minutes(30))
        .await
        .unwrap();
    // Positive controls: two before "it rained", one each side of the short answer.
    assert_eq!(places(&got, third), [(-2, first), (-1, short)]);
    assert_eq!(places(&got, short), [(-1, first), (1, third)]);
    for trap in [withheld, other, dm, late] {
        let near = |n: &engram::store::Nearby| n.around.contains(&Some(trap));
        assert!(!got.iter().any(near), "{trap:?} came: {got:?}");
    }
    assert!(places(&got, MessageId(999_999)).is_empty());
    // With a wider window the late message is two places after the short answer.
    let wide = s.nearby(&[short], Duration::hours(4)).await.unwrap();
    assert_eq!(places(&wide, short), [(-1, first), (1, third), (2, late)]);
    assert!(s.nearby(&[], Duration::hours(4)).await.unwrap().is_empty());
    // A command (a file's pieces are stored as one) is skipped over, though it is the next
    // message (the positive control: `neighbours` has it there).
    let mut command = msg(
        lab,
        Scope::Space(lab),
        a,
        "c",
        "/memory",
        t(1) + Duration::minutes(4),
    );
    command.is_command = true;
    let command = s.insert_message(&command).await.unwrap().id;
    let next = s.neighbours(&[third], Duration::hours(4)).await.unwrap();
    assert_eq!(next[0].after.map(|n| n.id), Some(command));
    let wide = s.nearby(&[third], Duration::hours(4)).await.unwrap();
    assert_eq!(places(&wide, third), [(-2, first), (-1, short), (1, late)]);
}

async fn neighbours_stay_in_channel_scope_and_time(s: Arc<dyn Store>) {
    let (_, _, ids) = conversation(&s).await;
    let (first, short, withheld, other, dm, third, late) =
        (ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]);
    let got = s
        .neighbours(
            &[short, first, late, MessageId(999_999)],
            Duration::minutes(30),
        )
        .await
        .unwrap();
    let of = |id: MessageId| got.iter().find(|n| n.id == id).copied();
    let n = of(short).expect("the short message has neighbours");
    // Positive controls: the message before and the next one in the same place.
    assert_eq!(n.before.map(|a| (a.id, a.chars)), Some((first, 14)));
    // Skipped: the withheld message, the other channel's, the DM in the same channel.
    assert_eq!(n.after.map(|a| a.id), Some(third), "{n:?}");
    for trap in [withheld, other, dm] {
        assert!(
            got.iter().all(
                |n| n.before.map(|a| a.id) != Some(trap) && n.after.map(|a| a.id) != Some(trap)
            ),
            "{trap:?} is no one's neighbour: {got:?}"
        );
    }
    let n = of(first).unwrap();
    assert_eq!((n.before, n.after.map(|a| a.id)), (None, Some(short)));
    // Three hours after "it rained": beyond the 30 minutes asked, alone.
    let n = of(late).unwrap();
    assert_eq!((n.before, n.after), (None, None));
    assert!(
        of(MessageId(999_999)).is_none(),
        "an unknown id has no entry"
    );
    // With a wider window the late message sees "it rained".
    let wide = s.neighbours(&[late], Duration::hours(4)).await.unwrap();
    assert_eq!(wide[0].before.map(|a| a.id), Some(third));
}

/// A neighbour's length is its text's in characters (not bytes), however long the text: for
/// one PostgreSQL keeps compressed, the length stored with it (migration 0031) is the text's.
async fn neighbour_lengths_are_characters_of_long_texts(s: Arc<dyn Store>) {
    let (lab, a) = lab_and_alice(&s).await;
    // 6,600 characters in 8,400 bytes, well past the 2 kB from which PostgreSQL compresses.
    let long = "über grüße ".repeat(600);
    let texts = [long.as_str(), "ja", "naïve café"];
    let ids = s
        .insert_messages(
            &texts
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let at = t(1) + Duration::minutes(i as i64);
                    msg(lab, Scope::Space(lab), a, &format!("c{i}"), text, at)
                })
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    let got = s
        .neighbours(&[ids[1]], Duration::minutes(30))
        .await
        .unwrap();
    let lengths = got.iter().map(|n| {
        let chars = |a: Option<engram::store::Adjacent>| a.map(|a| (a.id, a.chars));
        (chars(n.before), chars(n.after))
    });
    assert_eq!(
        lengths.collect::<Vec<_>>(),
        [(Some((ids[0], 6_600)), Some((ids[2], 10)))],
        "{} and {} bytes",
        texts[0].len(),
        texts[2].len()
    );
}

async fn messages_by_time_and_id_leave_withheld_and_other_scopes_out(s: Arc<dyn Store>) {
    let (lab, a, ids) = conversation(&s).await;
    let from = t(1);
    let to = t(1) + Duration::minutes(60);
    let got = s
        .messages_between(&[Scope::Space(lab)], from, to, 10)
        .await
        .unwrap();
    let texts: Vec<&str> = got.iter().map(|m| m.text.as_str()).collect();
    // Newest first (ties: the later stored first); the other channel is in the same scope,
    // so it is in the window too.
    assert_eq!(
        texts,
        [
            "it rained",
            "other channel",
            "Yes! Last Friday.",
            "we went hiking"
        ]
    );
    let dm_too = s
        .messages_between(&[Scope::Space(lab), Scope::Dm(a)], from, to, 10)
        .await
        .unwrap();
    assert_eq!(
        dm_too.len(),
        5,
        "the DM scope, when asked for, adds its message"
    );
    assert_eq!(
        s.messages_between(&[Scope::Space(lab)], from, to, 2)
            .await
            .unwrap()
            .len(),
        2,
        "the limit holds"
    );
    assert!(
        s.messages_between(&[Scope::Space(lab)], to, from, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let by_id = s
        .messages_by_id(&[ids[2], ids[0], MessageId(999_999)])
        .await
        .unwrap();
    let texts: Vec<&str> = by_id.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(
        texts,
        ["we went hiking"],
        "withheld and unknown ids are left out"
    );
}

/// Who wrote in the asked scopes (who a question may name): people with a message of their
/// own there that is not withheld, each once, by id; never the bot, someone only withheld,
/// someone of another scope or someone who never wrote, however many people there are.
async fn authors_are_the_people_who_wrote_in_the_scopes(s: Arc<dyn Store>) {
    let (lab, alice, _) = conversation(&s).await;
    let other = s
        .resolve_space(Platform::Console, "other", SpaceKind::Group, "other")
        .await
        .unwrap();
    let person = |name: &str| {
        let (s, name) = (s.clone(), name.to_string());
        async move {
            s.resolve_person(Platform::Console, &name.to_lowercase(), &name)
                .await
                .unwrap()
        }
    };
    // People the database knows who never wrote in the lab, between its authors' ids.
    let mut strangers = Vec::new();
    for i in 0..20 {
        strangers.push(person(&format!("Stranger{i:02}")).await);
    }
    let (bot, hidden, dana, eve, zed) = (
        person("Engram").await,
        person("Carl").await,
        person("Dana").await,
        person("Eve").await,
        person("Zed").await,
    );
    let at = |m: i64| t(5) + Duration::minutes(m);
    let mut said_by_bot = msg(lab, Scope::Space(lab), bot, "b1", "noted", at(0));
    said_by_bot.is_bot = true;
    let mut only_withheld = msg(lab, Scope::Space(lab), hidden, "c1", "paused words", at(1));
    only_withheld.withheld = true;
    let mut in_dana_dm = msg(lab, Scope::Dm(dana), dana, "d1", "a private line", at(2));
    in_dana_dm.privacy = in_dana_dm.scope.privacy();
    s.insert_messages(&[
        said_by_bot,
        only_withheld,
        in_dana_dm,
        msg(other, Scope::Space(other), eve, "e1", "elsewhere", at(3)),
        // The newest person writes first and again: listed once, in id order.
        msg(lab, Scope::Space(lab), zed, "z1", "hello lab", at(4)),
        msg(lab, Scope::Space(lab), zed, "z2", "hello again", at(5)),
    ])
    .await
    .unwrap();
    let authors = |scopes: Vec<Scope>| {
        let s = s.clone();
        async move { s.authors_in(&scopes).await.unwrap() }
    };
    let named = |ids: &[(PersonId, &str)]| -> Vec<(PersonId, String)> {
        ids.iter().map(|(p, n)| (*p, n.to_string())).collect()
    };
    // Alice wrote in the lab (her withheld line aside), Zed twice.
    assert_eq!(
        authors(vec![Scope::Space(lab)]).await,
        named(&[(alice, "Alice"), (zed, "Zed")])
    );
    assert_eq!(
        authors(vec![Scope::Dm(dana), Scope::Space(lab)]).await,
        named(&[(alice, "Alice"), (dana, "Dana"), (zed, "Zed")]),
        "each asked scope adds its authors"
    );
    assert_eq!(
        authors(vec![Scope::Space(lab), Scope::Dm(alice)]).await,
        named(&[(alice, "Alice"), (zed, "Zed")]),
        "someone who wrote in two asked scopes is named once"
    );
    assert_eq!(
        authors(vec![Scope::Space(other)]).await,
        named(&[(eve, "Eve")])
    );
    // Positive control for the withheld line: Carl, once he writes in the open, is found;
    // Alice (the lowest id) only withheld there and the bot are not.
    let mut alice_withheld = msg(other, Scope::Space(other), alice, "a9", "paused", at(6));
    alice_withheld.withheld = true;
    let mut bot_line = msg(other, Scope::Space(other), bot, "b9", "noted", at(6));
    bot_line.is_bot = true;
    s.insert_messages(&[
        alice_withheld,
        bot_line,
        msg(other, Scope::Space(other), hidden, "c2", "back", at(7)),
    ])
    .await
    .unwrap();
    assert_eq!(
        authors(vec![Scope::Space(other)]).await,
        named(&[(hidden, "Carl"), (eve, "Eve")])
    );
    assert!(authors(vec![]).await.is_empty());
    assert!(authors(vec![Scope::Dm(strangers[0])]).await.is_empty());
}

/// The bot's messages holding every word of a quote (an edited or deleted message's words),
/// in the asked scopes, space and time, with whom each answered; the bot's withheld ones
/// (which have no postings) always, for their text to be read; never a person's message.
async fn the_bots_quotes_are_found_by_their_words(s: Arc<dyn Store>) {
    use engram::store::BotMessageFilter;
    let (lab, alice, _) = conversation(&s).await;
    let other = s
        .resolve_space(Platform::Console, "other", SpaceKind::Group, "other")
        .await
        .unwrap();
    let bot = s
        .resolve_person(Platform::Console, "engram", "Engram")
        .await
        .unwrap();
    let at = |m: i64| t(5) + Duration::minutes(m);
    // Read as English, as the quote is below (each stored language is asked in turn).
    let english = Some(engram::domain::language::Language::English);
    let mut said = msg(
        lab,
        Scope::Space(lab),
        alice,
        "q1",
        "my locker code is 4417",
        at(0),
    );
    said.language = english;
    let bot_msg = |space, ext: &str, text: &str, m: i64| {
        let mut b = msg(space, Scope::Space(space), bot, ext, text, at(m));
        b.is_bot = true;
        b.language = english;
        b
    };
    let mut reply = bot_msg(lab, "r1", "Noted: your locker code is 4417.", 1);
    let mut withheld = bot_msg(lab, "r2", "a paused chat's reply", 2);
    withheld.withheld = true;
    let mut withheld_elsewhere = bot_msg(other, "r4", "another paused chat's reply", 4);
    withheld_elsewhere.withheld = true;
    let ids = s
        .insert_messages(&[
            said,
            bot_msg(lab, "r0", "a locker is a box", 0),
            withheld,
            bot_msg(other, "r3", "Elsewhere: locker code 4417.", 3),
            withheld_elsewhere,
        ])
        .await
        .unwrap();
    let (said, partial, withheld, elsewhere, withheld_elsewhere) =
        (ids[0], ids[1], ids[2], ids[3], ids[4]);
    reply.reply_to = Some(said.0.to_string());
    let reply = s.insert_message(&reply).await.unwrap().id;
    let terms = engram::store::query_terms_in("locker code 4417", 16, english);
    let found = async |filter: BotMessageFilter<'_>| -> Vec<(MessageId, Option<PersonId>)> {
        let got = s.bot_messages_with_terms(filter, &terms).await.unwrap();
        got.into_iter().map(|m| (m.id, m.answered)).collect()
    };
    let lab_only = [Scope::Space(lab)];
    assert_eq!(
        found(BotMessageFilter::in_scopes(Some(&lab_only))).await,
        [(withheld, None), (reply, Some(alice))],
        "in the lab: the reply with every word (not {partial:?}, which has one, nor Alice's \
         own line {said:?}), and the withheld one"
    );
    assert_eq!(
        found(BotMessageFilter::in_scopes(None)).await,
        [
            (withheld, None),
            (elsewhere, None),
            (withheld_elsewhere, None),
            (reply, Some(alice))
        ],
        "everywhere: the other space's quote and withheld reply too"
    );
    let later = BotMessageFilter {
        after: Some(elsewhere),
        ..BotMessageFilter::in_scopes(None)
    };
    assert_eq!(
        found(later).await,
        [(withheld_elsewhere, None), (reply, Some(alice))]
    );
    let in_other = BotMessageFilter {
        space: Some(other),
        ..BotMessageFilter::in_scopes(None)
    };
    assert_eq!(
        found(in_other).await,
        [(elsewhere, None), (withheld_elsewhere, None)]
    );
}

/// The languages of searchable messages, each once in code order; a language only withheld
/// messages are in is none of them until someone writes it in the open.
async fn languages_in_use_are_each_listed_once(s: Arc<dyn Store>) {
    use engram::domain::language::Language;
    let (lab, alice, _) = conversation(&s).await;
    let at = |m: i64| t(5) + Duration::minutes(m);
    let in_language = |ext: &str, language: Language, withheld: bool| {
        let mut m = msg(lab, Scope::Space(lab), alice, ext, "words", at(0));
        m.language = Some(language);
        m.withheld = withheld;
        m
    };
    s.insert_messages(&[
        in_language("l1", Language::Russian, false),
        in_language("l2", Language::German, false),
        in_language("l3", Language::Russian, false),
        in_language("l4", Language::French, true),
    ])
    .await
    .unwrap();
    let mut expected: Vec<String> = s
        .message_languages()
        .await
        .unwrap()
        .into_iter()
        .filter_map(|(code, _)| code)
        .collect();
    expected.sort();
    let got = s.languages_in_use().await.unwrap();
    assert!(got.contains(&"ru".to_string()) && got.contains(&"de".to_string()));
    assert!(!got.contains(&"fr".to_string()), "only withheld: {got:?}");
    assert_eq!(got, expected, "the same languages as the counts give");
    s.insert_message(&in_language("l5", Language::French, false))
        .await
        .unwrap();
    assert!(
        s.languages_in_use()
            .await
            .unwrap()
            .contains(&"fr".to_string())
    );
}

/// A short message's vector made with the one before as context: forgetting the context
/// drops the vector and queues the message to be embedded again without it.
async fn forgetting_a_context_message_remakes_the_vectors_made_with_it(s: Arc<dyn Store>) {
    let (lab, _, ids) = conversation(&s).await;
    let (first, short, third) = (ids[0], ids[1], ids[5]);
    let space = s.vector_space(&model(384)).await.unwrap();
    let axis = |i: usize| Embedding {
        space,
        vector: axis(i),
    };
    let unindexed = s.unindexed_messages(100).await.unwrap();
    let items: Vec<engram::store::IndexedMessage> = unindexed
        .into_iter()
        .map(|m| {
            let id = m.id;
            engram::store::IndexedMessage {
                message: m,
                embedding: Some(axis(id.0 as usize % 384)),
                context: (id == short).then_some(first),
                start: Default::default(),
            }
        })
        .collect();
    s.index_messages(&items, Duration::minutes(30))
        .await
        .unwrap();
    let stored =
        |v: Vec<engram::store::MessageVector>| v.into_iter().map(|v| v.message).collect::<Vec<_>>();
    assert_eq!(
        stored(
            s.message_vectors(space, &[first, short, third])
                .await
                .unwrap()
        ),
        [first, short, third]
    );
    assert!(s.vectors_to_redo(10).await.unwrap().is_empty());

    // Forgetting "it rained" (no one's context) leaves the short message's vector alone.
    s.delete_messages(&[third]).await.unwrap();
    assert!(s.vectors_to_redo(10).await.unwrap().is_empty());
    assert_eq!(
        stored(s.message_vectors(space, &[short]).await.unwrap()),
        [short]
    );

    // Positive control: found by its vector while its context lives.
    let near = |s: Arc<dyn Store>| async move {
        s.nearest_messages(&[Scope::Space(lab)], &axis(short.0 as usize % 384), 10)
            .await
            .unwrap()
            .iter()
            .any(|h| h.message.id == short)
    };
    assert!(near(s.clone()).await);

    // Forgetting its context takes it.
    s.delete_messages(&[first]).await.unwrap();
    assert!(s.message_vectors(space, &[short]).await.unwrap().is_empty());
    let redo = s.vectors_to_redo(10).await.unwrap();
    assert_eq!(redo.iter().map(|m| m.id).collect::<Vec<_>>(), [short]);
    // The nearest search no longer finds it by the old vector.
    assert!(!near(s.clone()).await);

    // Made again without context: stored, and off the list.
    let again = vec![engram::store::IndexedMessage {
        message: redo[0].clone(),
        embedding: Some(axis(7)),
        context: None,
        start: Default::default(),
    }];
    assert_eq!(s.redo_vectors(&again).await.unwrap(), 1);
    assert!(s.vectors_to_redo(10).await.unwrap().is_empty());
    assert_eq!(
        stored(s.message_vectors(space, &[short]).await.unwrap()),
        [short]
    );
    // A second run of the same work changes nothing (it was taken off the list).
    assert_eq!(s.redo_vectors(&again).await.unwrap(), 0);

    // A vector made while its context was being forgotten (the indexer read "much later",
    // then it went): not kept, and the message waits to be embedded again.
    let author = s.messages_by_id(&[short]).await.unwrap()[0].author;
    let ok = s
        .insert_message(&msg(lab, Scope::Space(lab), author, "5", "Ok.", t(4)))
        .await
        .unwrap()
        .id;
    s.delete_messages(&[ids[6]]).await.unwrap();
    let pending = s.unindexed_messages(10).await.unwrap();
    assert_eq!(pending.iter().map(|m| m.id).collect::<Vec<_>>(), [ok]);
    let stale = vec![engram::store::IndexedMessage {
        message: pending[0].clone(),
        embedding: Some(axis(9)),
        context: Some(ids[6]),
        start: Default::default(),
    }];
    s.index_messages(&stale, Duration::minutes(30))
        .await
        .unwrap();
    assert!(s.message_vectors(space, &[ok]).await.unwrap().is_empty());
    let redo = s.vectors_to_redo(10).await.unwrap();
    assert_eq!(redo.iter().map(|m| m.id).collect::<Vec<_>>(), [ok]);
}

/// Taking back what a job wrote (`take_back_entries`): an entry it made goes; one it changed
/// gets back the last value before it that was not its own, in whatever order jobs are taken
/// back and wherever the entry is now; its values replaced since leave the history, which
/// stays a chain.
async fn taking_back_a_jobs_entries_keeps_what_came_before(s: Arc<dyn Store>) {
    let a = s
        .resolve_person(Platform::Discord, "111", "Alice")
        .await
        .unwrap();
    let space = SpaceId(1);
    let write = |key: &str, value: &str, source: &str, at: i64| {
        let s = s.clone();
        let (key, value, source) = (key.to_string(), value.to_string(), source.to_string());
        async move {
            s.write_entry(&engram::domain::NewEntry {
                person: a,
                scope: Scope::Space(space),
                category: engram::domain::Category::WorkContext,
                key,
                value,
                confidence: 0.8,
                source,
                origin: "a public channel".into(),
                at: t(at),
                expires_at: None,
            })
            .await
            .unwrap();
        }
    };
    let value_of = |key: &'static str| {
        let s = s.clone();
        async move {
            s.entries(a, None)
                .await
                .unwrap()
                .into_iter()
                .find(|e| e.key == key)
                .map(|e| (e.value, e.source))
        }
    };
    let history = || {
        let s = s.clone();
        async move {
            s.entry_history(a)
                .await
                .unwrap()
                .into_iter()
                .map(|v| v.value)
                .collect::<Vec<_>>()
        }
    };
    // V0 asked for, job S changes it, job T changes it again; S then T taken back.
    write("employer", "V0", "message:1", 1).await;
    write("employer", "V1", "job:s", 2).await;
    write("employer", "V2", "job:t", 3).await;
    // A key job S made.
    write("hobby", "H1", "job:s", 2).await;
    assert_eq!(s.take_back_entries(a, "job:s").await.unwrap(), 1);
    assert_eq!(
        value_of("employer").await,
        Some(("V2".into(), "job:t".into()))
    );
    assert_eq!(value_of("hobby").await, None);
    assert_eq!(history().await, vec!["V0".to_string()]);
    assert_eq!(s.take_back_entries(a, "job:t").await.unwrap(), 1);
    assert_eq!(
        value_of("employer").await,
        Some(("V0".into(), "message:1".into()))
    );
    assert!(history().await.is_empty());

    // S, T, then S again: taking back S leaves T's value.
    write("team", "W0", "message:2", 4).await;
    write("team", "W1", "job:s2", 5).await;
    write("team", "W2", "job:t2", 6).await;
    write("team", "W3", "job:s2", 7).await;
    s.take_back_entries(a, "job:s2").await.unwrap();
    assert_eq!(value_of("team").await, Some(("W2".into(), "job:t2".into())));
    assert_eq!(history().await, vec!["W0".to_string()]);
    s.take_back_entries(a, "job:t2").await.unwrap();
    assert_eq!(
        value_of("team").await,
        Some(("W0".into(), "message:2".into()))
    );

    // Shared since (moved to global): still found, still given back.
    write("editor", "E0", "message:3", 8).await;
    write("editor", "E1", "job:s3", 9).await;
    let id = s
        .entries(a, None)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.key == "editor")
        .unwrap()
        .id;
    assert!(s.move_entry(a, id, &Scope::Global).await.unwrap());
    s.take_back_entries(a, "job:s3").await.unwrap();
    let shared = s.entries(a, Some(&[Scope::Global])).await.unwrap();
    assert_eq!(shared.len(), 1);
    assert_eq!(
        (shared[0].value.as_str(), shared[0].source.as_str()),
        ("E0", "message:3")
    );

    // A value asked for by a message, replaced by a job: the message is forgotten, its value
    // leaves the history (and the chain is broken there); taking the job back then gives the
    // value before it that is still kept.
    let lab = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    let said = s
        .insert_message(&msg(
            lab,
            Scope::Space(lab),
            a,
            "m-said",
            "my desk is by the door",
            t(10),
        ))
        .await
        .unwrap()
        .id;
    write("desk", "D0", "message:999999", 10).await;
    write("desk", "D1", &format!("message:{}", said.0), 11).await;
    write("desk", "D2", "job:s4", 12).await;
    assert!(history().await.contains(&"D1".to_string()), "the control");
    s.delete_messages(&[said]).await.unwrap();
    assert!(
        !history().await.contains(&"D1".to_string()),
        "{:?}",
        history().await
    );
    s.take_back_entries(a, "job:s4").await.unwrap();
    assert_eq!(
        value_of("desk").await,
        Some(("D0".into(), "message:999999".into()))
    );
}

on_both_backends!(
    identities_map_to_one_person,
    concurrent_first_sight_creates_one_person,
    messages_are_idempotent_and_chatter_excludes_bot_and_commands,
    fact_updates_are_versioned_and_conflicts_detected,
    concurrent_fact_writers_never_overwrite_each_other,
    summaries_round_trip_and_final_days_stay_final,
    job_claims_are_exclusive_and_survive_a_crashed_holder,
    concurrent_claims_have_one_winner,
    search_stays_in_scope_and_survives_hostile_queries,
    dumps_copy_into_an_empty_store_with_equal_checksums,
    search_ranks_by_bm25,
    bm25_scores_are_the_formulas_over_the_searched_scopes,
    episode_bm25_scores_are_the_formulas_over_the_searched_scopes,
    neighbours_stay_in_channel_scope_and_time,
    neighbour_lengths_are_characters_of_long_texts,
    nearby_reads_two_places_each_side,
    messages_by_time_and_id_leave_withheld_and_other_scopes_out,
    authors_are_the_people_who_wrote_in_the_scopes,
    the_bots_quotes_are_found_by_their_words,
    languages_in_use_are_each_listed_once,
    forgetting_a_context_message_remakes_the_vectors_made_with_it,
    vector_spaces_never_mix,
    a_vector_written_while_its_message_is_forgotten_goes_too,
    a_channels_scopes_never_share_working_memory_or_episodes,
    describing_an_attachment_rewrites_its_message_and_what_came_of_it,
    episode_keys_are_searched_in_scope_and_go_with_a_forget,
    an_episode_closed_from_a_forgotten_message_stays_open,
    an_episode_vector_made_with_a_forgotten_context_is_not_kept,
    tombstones_name_one_message_and_lapse,
    channel_cursors_keep_the_newest_seen,
    forgotten_messages_are_kept_out_for_a_time,
    taking_back_a_jobs_entries_keeps_what_came_before,
    a_deleted_messages_id_is_never_given_again,
    a_reply_made_across_a_forget_is_kept_as_the_other_text,
    confirmed_changes_lapse_when_something_was_forgotten_since,
);

/// Alice's entry `key` = `value` in the lab (a `category` one), made at `t(h)`.
fn lab_entry(
    lab: SpaceId,
    alice: PersonId,
    category: engram::domain::Category,
    key: &str,
    value: &str,
    h: i64,
) -> engram::domain::NewEntry {
    engram::domain::NewEntry {
        person: alice,
        scope: Scope::Space(lab),
        category,
        key: key.into(),
        value: value.into(),
        confidence: 0.9,
        source: "tool:write_memory".into(),
        origin: "a public channel".into(),
        at: t(h),
        expires_at: None,
    }
}

/// Alice's entries in the lab, as (category, key, value), and her daily notes' texts.
async fn entries_and_notes(
    s: &Arc<dyn Store>,
    alice: PersonId,
) -> (Vec<(String, String, String)>, Vec<String>) {
    let mut entries: Vec<(String, String, String)> = s
        .entries(alice, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.category.as_str().to_string(), e.key, e.value))
        .collect();
    entries.sort();
    let notes = s
        .daily_notes(alice, None)
        .await
        .unwrap()
        .into_iter()
        .map(|n| n.text)
        .collect();
    (entries, notes)
}

/// Changes a person confirmed are applied in one transaction against the forget count read
/// when they were proposed: after a clear (or any forget of theirs) nothing at all is
/// applied; else deletions (counted as a forget), notes, writes and moves to another
/// category; a paused memory takes the deletions only.
async fn confirmed_changes_lapse_when_something_was_forgotten_since(s: Arc<dyn Store>) {
    use engram::domain::Category::{PersonalContext, Preference};
    let (lab, alice) = lab_and_alice(&s).await;
    let cat = lab_entry(lab, alice, PersonalContext, "pet", "has a cat", 1);
    s.write_entry(&cat).await.unwrap();
    let cat_id = s.entries(alice, None).await.unwrap()[0].id;
    let note = engram::domain::DailyNote {
        day: t(2).date_naive(),
        scope: Scope::Space(lab),
        text: "## Notes\n- moving on Friday".into(),
        source: "tool:move:1".into(),
        added_at: t(2),
    };
    let tea = lab_entry(lab, alice, Preference, "drink", "likes tea", 2);
    let proposed = s.forgets_counted(alice).await.unwrap();
    s.mark_memory_cleared(alice, t(3)).await.unwrap();
    let before = entries_and_notes(&s, alice).await;
    let apply = |deletions: Vec<i64>, epoch: i64| {
        let (s, note, tea) = (s.clone(), note.clone(), tea.clone());
        async move {
            s.apply_confirmed(alice, &deletions, &[], &[note], &[tea], epoch, t(4))
                .await
                .unwrap()
        }
    };
    let cleared = s.forgets_counted(alice).await.unwrap();
    assert_eq!(cleared.of_person, proposed.of_person + 1);
    assert_eq!(apply(vec![cat_id], proposed.of_person).await, None);
    assert_eq!(
        entries_and_notes(&s, alice).await,
        before,
        "applied after a clear"
    );
    // Its deletion's count went with it.
    assert_eq!(s.forgets_counted(alice).await.unwrap(), cleared);

    // Control: proposed after the clear, all of it is applied, and the deletion counts.
    let now = s.forgets_counted(alice).await.unwrap();
    assert_eq!(apply(vec![cat_id], now.of_person).await, Some(3));
    let row = |c: &str, k: &str, v: &str| (c.to_string(), k.to_string(), v.to_string());
    assert_eq!(
        entries_and_notes(&s, alice).await,
        (
            vec![row("preference", "drink", "likes tea")],
            vec!["## Notes\n- moving on Friday".to_string()]
        )
    );
    let after = s.forgets_counted(alice).await.unwrap();
    assert_eq!(
        (after.all, after.of_person),
        (now.all + 1, now.of_person + 1)
    );

    // A move to another category: the entry under the old one goes, even shared since
    // (moved to another scope).
    let tea_id = s.entries(alice, None).await.unwrap()[0].id;
    assert!(s.move_entry(alice, tea_id, &Scope::Global).await.unwrap());
    let moved = lab_entry(lab, alice, PersonalContext, "drink", "likes green tea", 5);
    let n = s
        .apply_confirmed(alice, &[], &[tea_id], &[], &[moved], after.of_person, t(5))
        .await
        .unwrap();
    assert_eq!(n, Some(1));
    assert_eq!(
        entries_and_notes(&s, alice).await.0,
        [row("personal_context", "drink", "likes green tea")]
    );
    assert_eq!(
        s.forgets_counted(alice).await.unwrap(),
        after,
        "a move is no forget"
    );

    // Paused: the deletion goes through, nothing new is written.
    s.set_memory_paused(alice, true, t(6)).await.unwrap();
    let green = s.entries(alice, None).await.unwrap()[0].id;
    assert_eq!(apply(vec![green], after.of_person).await, Some(1));
    assert_eq!(
        entries_and_notes(&s, alice).await,
        (vec![], vec!["## Notes\n- moving on Friday".to_string()])
    );
}

/// Every forget is counted (anyone's: one begun, a memory cleared), and a reply stored with
/// the count read before it was made keeps its own text only while no forget came since;
/// else the other text it was given.
async fn a_reply_made_across_a_forget_is_kept_as_the_other_text(s: Arc<dyn Store>) {
    let (lab, alice) = lab_and_alice(&s).await;
    let bob = s
        .resolve_person(Platform::Console, "bob", "Bob")
        .await
        .unwrap();
    let reply = |ext: &str| {
        let mut m = msg(
            lab,
            Scope::Space(lab),
            alice,
            ext,
            "your code is 4512",
            t(2),
        );
        m.is_bot = true;
        m
    };
    let instead = |ext: &str| {
        let mut m = reply(ext);
        m.text = "(a note)".into();
        m.withheld = true;
        m
    };
    let text_of = |id: MessageId| {
        let s = s.clone();
        async move {
            s.messages_by_id(&[id])
                .await
                .unwrap()
                .first()
                .map(|m| m.text.clone())
        }
    };
    let before = s.forgets_counted(bob).await.unwrap().all;
    // Control: nothing forgotten since, the reply is kept as said.
    let kept = s
        .insert_reply(&reply("r1"), &instead("r1"), before)
        .await
        .unwrap();
    assert_eq!(text_of(kept.id).await.as_deref(), Some("your code is 4512"));
    // Someone else's forget counts too.
    s.begin_forgetting(bob, t(3)).await.unwrap();
    let counted = |who: PersonId| {
        let s = s.clone();
        async move { s.forgets_counted(who).await.unwrap() }
    };
    assert_eq!(counted(alice).await.all, before + 1);
    assert_eq!(
        (counted(alice).await.of_person, counted(bob).await.of_person),
        (0, 1)
    );
    let noted = s
        .insert_reply(&reply("r2"), &instead("r2"), before)
        .await
        .unwrap();
    // The note, withheld: not read back, not found by the reply's words (which find the
    // control), but stored.
    assert_eq!(text_of(noted.id).await, None);
    let found: Vec<MessageId> = s
        .search_messages(
            &[Scope::Space(lab)],
            &query_terms("4512", 16),
            Bm25::default(),
            10,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.message.id)
        .collect();
    assert_eq!(found, [kept.id]);
    assert_eq!(s.delete_messages(&[noted.id]).await.unwrap(), 1);
    s.mark_memory_cleared(bob, t(4)).await.unwrap();
    assert_eq!(
        counted(bob).await,
        engram::store::ForgetCounts {
            all: before + 2,
            of_person: 2
        }
    );
}

/// A public message deleted on its platform while the indexer holds it (read, then deleted
/// before the indexer writes), and a private chat's message stored right after: the indexer's
/// stale work puts nothing into the public conversation, least of all the private message,
/// which is indexed in its own right; and the deleted message's id is never another's.
async fn a_deleted_messages_id_is_never_given_again(s: Arc<dyn Store>) {
    let (lab, a) = lab_and_alice(&s).await;
    let minutes = |m: i64| t(1) + Duration::minutes(m);
    let docks = msg(
        lab,
        Scope::Space(lab),
        a,
        "p1",
        "we meet at the docks",
        minutes(0),
    );
    let first = s.insert_message(&docks).await.unwrap().id;
    index_pending(&s, |_| None).await;
    let map = msg(lab, Scope::Space(lab), a, "p2", "bring the map", minutes(1));
    let deleted = s.insert_message(&map).await.unwrap().id;
    let held = s.unindexed_messages(10).await.unwrap();
    assert_eq!(held.iter().map(|m| m.id).collect::<Vec<_>>(), [deleted]);
    assert_eq!(s.delete_messages(&[deleted]).await.unwrap(), 1);
    let pin = msg(
        lab,
        Scope::Dm(a),
        a,
        "d1",
        "my bank pin is 4321",
        minutes(2),
    );
    let private = s.insert_message(&pin).await.unwrap().id;
    let stale: Vec<engram::store::IndexedMessage> = held
        .into_iter()
        .map(|message| engram::store::IndexedMessage {
            message,
            embedding: None,
            context: None,
            start: Default::default(),
        })
        .collect();
    assert_eq!(
        s.index_messages(&stale, Duration::minutes(30))
            .await
            .unwrap(),
        0
    );
    let episode_of = |id: MessageId| {
        let s = s.clone();
        async move { s.messages_by_id(&[id]).await.unwrap().remove(0).episode }
    };
    let public = episode_of(first)
        .await
        .expect("the first message has its episode");
    let texts: Vec<String> = s
        .episode_messages(public, true, engram::store::EpisodeEnd::Oldest, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, ["we meet at the docks"], "the public conversation");
    assert_eq!(episode_of(private).await, None);
    let pending = s.unindexed_messages(10).await.unwrap();
    assert_eq!(pending.iter().map(|m| m.id).collect::<Vec<_>>(), [private]);
    index_pending(&s, |_| None).await;
    let own = episode_of(private).await;
    assert!(
        own.is_some() && own != Some(public),
        "{own:?} against {public}"
    );
    assert!(private.0 > deleted.0, "{private:?} after {deleted:?}");
}

/// A private word kept in a channel's id beside public chatter (a private chat's space named
/// as a group's, a private answer's channel): the place's working memory and its episodes
/// are per scope, never per channel id.
async fn a_channels_scopes_never_share_working_memory_or_episodes(s: Arc<dyn Store>) {
    let (lab, _, ids) = conversation(&s).await;
    let texts = |v: Vec<StoredMessage>| v.into_iter().map(|m| m.text).collect::<Vec<_>>();
    let all = texts(s.recent_messages(lab, "general", None, 10).await.unwrap());
    assert!(
        all.contains(&"a private word".to_string()),
        "the positive control: {all:?}"
    );
    let public = texts(
        s.recent_messages(lab, "general", Some(&Scope::Space(lab)), 10)
            .await
            .unwrap(),
    );
    assert!(
        public.contains(&"it rained".to_string())
            && !public.contains(&"a private word".to_string()),
        "{public:?}"
    );

    index_pending(&s, |_| None).await;
    let (yes, private, rained) = (ids[1], ids[4], ids[5]);
    let episode = |id: MessageId, found: &[StoredMessage]| {
        found.iter().find(|m| m.id == id).and_then(|m| m.episode)
    };
    let found = s.messages_by_id(&[yes, private, rained]).await.unwrap();
    let public_episode = episode(yes, &found);
    assert!(public_episode.is_some());
    assert_eq!(
        public_episode,
        episode(rained, &found),
        "the positive control: one conversation"
    );
    assert!(episode(private, &found).is_some());
    assert_ne!(episode(private, &found), public_episode);
}

/// Marks the database as migrated by a newer engram (an unknown migration 9999).
async fn add_future_migration(url: &str) {
    use sqlx::Connection;
    if url.starts_with("sqlite") {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (9999, 'future', TRUE, x'00', 0)")
            .execute(&mut c)
            .await
            .unwrap();
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (9999, 'future', TRUE, '\\x00', 0)")
            .execute(&mut c)
            .await
            .unwrap();
    }
}

async fn open_error(url: &str) -> String {
    match engram::app::open_store_url(url, &engram::config::Config::defaults().store).await {
        Ok(_) => panic!("{url} opened"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn sqlite_start_up_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    drop(open_url(&url).await);
    add_future_migration(&url).await;
    let err = open_error(&url).await;
    assert!(err.contains("newer engram"), "{err}");
    let err = open_error(&format!(
        "sqlite://{}/no/such/dir\0/x.db",
        dir.path().display()
    ))
    .await;
    assert!(err.contains("cannot open database"), "{err}");
}

postgres_test! {
async fn postgres_start_up_errors_are_clear() {
    let url = fresh_postgres_url().await;
    drop(open_url(&url).await);
    add_future_migration(&url).await;
    let err = open_error(&url).await;
    assert!(err.contains("newer engram"), "{err}");
    let (prefix, _) = url.rsplit_once('/').unwrap();
    let err = open_error(&format!("{prefix}/no_such_database")).await;
    assert!(
        err.contains("cannot open database") && err.contains("no_such_database"),
        "{err}"
    );
    let (_held, port) = crate::common::refused_port();
    let err = open_error(&format!(
        "postgres://engram:secret-pw@127.0.0.1:{port}/engram"
    ))
    .await;
    assert!(
        err.contains("cannot open database") && !err.contains("secret-pw"),
        "{err}"
    );
    // pgvector not enabled in the database, and a user who may not enable it.
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    let role = format!("engram_limited_{}", std::process::id());
    let db = format!("{role}_db");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE ROLE {role} LOGIN PASSWORD 'pw'"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE DATABASE {db} OWNER {role}"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let limited = format!(
        "postgres://{role}:pw@{}/{db}",
        prefix.rsplit_once('@').unwrap().1
    );
    let err = open_error(&limited).await;
    assert!(err.contains("CREATE EXTENSION vector"), "{err}");
    let mut super_in_db = sqlx::PgConnection::connect(&format!("{prefix}/{db}"))
        .await
        .unwrap();
    sqlx::query("CREATE EXTENSION vector")
        .execute(&mut super_in_db)
        .await
        .unwrap();
    drop(open_url(&limited).await);
    let err = open_error("postgres://[::1").await;
    assert!(err.contains("not a valid PostgreSQL URL"), "{err}");
}
}

/// A group space "lab" with alice's "secret plans here" (external id "1") and "public plans"
/// ("2"): its scope.
async fn lab_with_plans<S: Store + ?Sized>(s: &S) -> Scope {
    let lab = s
        .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
        .await
        .unwrap();
    let a = s
        .resolve_person(Platform::Console, "alice", "alice")
        .await
        .unwrap();
    let scope = Scope::Space(lab);
    s.insert_messages(&[
        msg(lab, scope.clone(), a, "1", "secret plans here", t(1)),
        msg(lab, scope.clone(), a, "2", "public plans", t(2)),
    ])
    .await
    .unwrap();
    scope
}

postgres_test! {
async fn postgres_deleted_messages_are_never_found() {
    let url = fresh_postgres_url().await;
    let s = open_url(&url).await;
    let scope = lab_with_plans(s.as_ref()).await;
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
    // Postings come from Engram's tokenizer: stop words dropped ("here"), stems kept.
    let terms: Vec<String> =
        sqlx::query_scalar("SELECT DISTINCT term FROM message_terms ORDER BY term")
            .fetch_all(&mut c)
            .await
            .unwrap();
    assert_eq!(terms, ["plan", "public", "secret"]);
    // Positive control: before the delete, the same search finds it.
    let found = s
        .search_messages(
            std::slice::from_ref(&scope),
            &query_terms("secret", 4),
            Bm25::default(),
            5,
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    sqlx::query("DELETE FROM messages WHERE external_id = '1'")
        .execute(&mut c)
        .await
        .unwrap();
    assert!(
        s.search_messages(&[scope], &query_terms("secret", 4), Bm25::default(), 5)
            .await
            .unwrap()
            .is_empty()
    );
}
}

postgres_test! {
/// BM25 over messages and over episodes, the hits' neighbours and the best results' run on
/// connections that plan each statement once (a generic plan), not once for each question's
/// terms, scopes and ids.
async fn postgres_lexical_searches_are_planned_once() {
    use engram::store::SearchIndex;
    let url = fresh_postgres_url().await;
    let s = postgres_store_of_4(&url).await;
    let scope = lab_with_plans(&s).await;
    let scopes = std::slice::from_ref(&scope);
    // The two messages are an hour apart: each is the other's neighbour.
    let gap = Duration::hours(2);
    for word in ["secret", "plans", "public"] {
        let terms = query_terms(word, 4);
        let hits = s.search_messages(scopes, &terms, Bm25::default(), 5).await.unwrap();
        assert_eq!(hits.len(), if word == "plans" { 2 } else { 1 });
        s.search_episodes(scopes, &terms, Bm25::default(), 5).await.unwrap();
        // Positive controls: the neighbours' statements ran and found the other message.
        let ids: Vec<MessageId> = hits.iter().map(|h| h.message.id).collect();
        for n in s.neighbours(&ids, gap).await.unwrap() {
            let beside = [n.before, n.after].map(|a| a.map(|a| a.id));
            assert_eq!(beside.iter().flatten().count(), 1, "{n:?}");
        }
        for n in s.nearby(&ids, gap).await.unwrap() {
            assert_eq!(n.around.iter().flatten().count(), 1, "{n:?}");
        }
    }
    // Every connection the searches may have used (the pool holds at most 2), at once.
    let (mut one, mut two) = (
        s.searches().acquire().await.unwrap(),
        s.searches().acquire().await.unwrap(),
    );
    let mut prepared: Vec<(String, i64, i64)> = Vec::new();
    for c in [&mut *one, &mut *two] {
        prepared.extend(
            sqlx::query_as(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements",
            )
            .fetch_all(c)
            .await
            .unwrap(),
        );
    }
    // Each statement ran three times, each time on its generic plan (a plan for its values
    // would count as custom); the episodes' also once on each connection as the store opened
    // (the messages' was planned at limit 1 then: a statement of its own).
    for (search, marker, expected) in [
        ("BM25 over messages", "o.message_id DESC LIMIT 5)", 3),
        ("BM25 over episodes", "episode_terms", 3 + 2),
        ("neighbours", "WITH adjacent AS MATERIALIZED", 3),
        ("nearby", "q.is_command ORDER BY q.sent_at, q.id LIMIT 1 OFFSET 1)", 3),
    ] {
        let runs: Vec<(i64, i64)> = prepared
            .iter()
            .filter(|(q, _, _)| q.contains(marker))
            .map(|(_, generic, custom)| (*generic, *custom))
            .collect();
        let generic: i64 = runs.iter().map(|r| r.0).sum();
        let custom: i64 = runs.iter().map(|r| r.1).sum();
        assert_eq!((generic, custom), (expected, 0), "{search}: {prepared:?}");
    }
    // Every other statement keeps plans for its values (the vector searches: see `connect`).
    let mode: String = sqlx::query_scalar("SELECT current_setting('plan_cache_mode')")
        .fetch_one(s.pool())
        .await
        .unwrap();
    assert_eq!(mode, "auto");
}
}

/// A PostgreSQL store on `url` whose pool holds 4 connections (its searches' pool: 2), each
/// pinged before every use.
async fn postgres_store_of_4(url: &str) -> engram::store::postgres::PostgresStore {
    postgres_store_of_4_pinging_after(url, std::time::Duration::ZERO).await
}

/// `postgres_store_of_4`, pinging a connection only after it sat idle `after`.
async fn postgres_store_of_4_pinging_after(
    url: &str,
    after: std::time::Duration,
) -> engram::store::postgres::PostgresStore {
    let settings = engram::store::postgres::PgSettings {
        max_connections: 4,
        acquire_timeout: std::time::Duration::from_secs(10),
        statement_timeout: std::time::Duration::from_secs(30),
        ping_after_idle: after,
    };
    engram::store::postgres::PostgresStore::open(url, &settings)
        .await
        .unwrap()
}

postgres_test! {
/// The connections a question uses at once are open before the first question (none is
/// opened on a question's path), and, pinged before every use (`store.ping_after_idle_ms =
/// 0`), one the server ended while it sat idle (a restart, an idle-session timeout) is
/// replaced when next asked for, not handed to a query.
async fn postgres_connections_are_open_from_the_start_and_replaced_when_ended() {
    let _alone = ENDING_CONNECTIONS.lock().await;
    let url = fresh_postgres_url().await;
    let s = postgres_store_of_4(&url).await;
    assert_eq!((s.pool().size(), s.searches().size()), (4, 2));
    let scope = lab_with_plans(&s).await;
    let asked = || asked_about_plans(&s, &scope);
    assert_eq!(asked().await.unwrap(), (2, 1));
    assert_eq!(
        end_every_connection(&url).await,
        6,
        "both pools' connections, all open, are ended"
    );
    assert_eq!(asked().await.unwrap(), (2, 1));
}
}

postgres_test! {
/// Opening a new database fails no statement on the server (each would be an ERROR in its
/// log at every first start): the search connections, open before the migrations made the
/// tables, are planned after them, not as they open.
async fn postgres_store_opens_a_new_database_without_a_failed_statement() {
    use sqlx::Connection;
    let _alone = ENDING_CONNECTIONS.lock().await;
    let url = fresh_postgres_url().await;
    let s = postgres_store_of_4(&url).await;
    // Positive control: a failed statement is counted.
    sqlx::query("SELECT * FROM no_such_table")
        .execute(s.pool())
        .await
        .unwrap_err();
    // Each connection's counts reach the server's statistics as it ends.
    end_every_connection(&url).await;
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    let failed: i64 = sqlx::query_scalar(
        "SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(failed, 1, "only the control's statement failed");
}
}

/// What the connection tests ask of `lab_with_plans`'s scope: BM25 over it (on the searches'
/// pool) and its authors (on the main pool).
async fn asked_about_plans(
    s: &engram::store::postgres::PostgresStore,
    scope: &Scope,
) -> Result<(usize, usize), StoreError> {
    use engram::store::SearchIndex;
    let scopes = std::slice::from_ref(scope);
    let found = s
        .search_messages(scopes, &query_terms("plans", 4), Bm25::default(), 5)
        .await?;
    let authors = s.authors_in(scopes).await?;
    Ok((found.len(), authors.len()))
}

/// Ends every client connection to `url`'s database but the caller's, each gone when this
/// returns: how many it ended. (A test that calls it holds `ENDING_CONNECTIONS`.)
async fn end_every_connection(url: &str) -> usize {
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(url).await.unwrap();
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() \
         AND backend_type = 'client backend'",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(ended.iter().all(|e| *e), "{ended:?}");
    ended.len()
}

postgres_test! {
/// Not pinged when used a moment ago, a connection the server ended fails the one statement
/// given it, as lost and with nothing run; every other connection released before that loss
/// is pinged before use, so the next call goes through.
async fn postgres_after_a_lost_connection_the_others_are_pinged() {
    let _alone = ENDING_CONNECTIONS.lock().await;
    let url = fresh_postgres_url().await;
    let s = postgres_store_of_4_pinging_after(&url, std::time::Duration::from_secs(600)).await;
    let scope = lab_with_plans(&s).await;
    let asked = || asked_about_plans(&s, &scope);
    assert_eq!(asked().await.unwrap(), (2, 1));
    assert_eq!(end_every_connection(&url).await, 6);
    let first = asked()
        .await
        .expect_err("used a moment ago, the search's connection is given unpinged");
    assert!(first.connection_lost(), "{first}");
    assert_eq!(asked().await.unwrap(), (2, 1));
}
}

postgres_test! {
/// A search that meets a connection the server ended runs again (it only reads) and finds
/// what it found before.
async fn postgres_a_search_outlives_its_lost_connection() {
    let _alone = ENDING_CONNECTIONS.lock().await;
    let url = fresh_postgres_url().await;
    let store = postgres_store_of_4_pinging_after(&url, std::time::Duration::from_secs(600)).await;
    let s: Arc<dyn Store> = Arc::new(store);
    let scope = lab_with_plans(s.as_ref()).await;
    let retriever = engram::retrieval::Retriever::new(
        s.clone(),
        None,
        engram::config::Config::defaults().retrieval,
    );
    let found = || async {
        let hits = retriever
            .search("plans", std::slice::from_ref(&scope), None, t(3), 5)
            .await
            .unwrap();
        hits.len()
    };
    assert_eq!(found().await, 2);
    assert_eq!(end_every_connection(&url).await, 6);
    assert_eq!(found().await, 2);
}
}

postgres_test! {
/// A connection used a moment ago is not pinged again before use (as by default; here for the
/// test's whole run): when the server ends every connection of a bot in full swing, the next
/// message still is stored and answered from memory (storing it and searching run again;
/// every connection released before that is pinged), and nothing is stored twice.
async fn postgres_a_bot_whose_connections_are_all_ended_loses_no_message() {
    let _alone = ENDING_CONNECTIONS.lock().await;
    let url = fresh_postgres_url().await;
    let h = Harness::build(false, |c| {
        c.store.url = url.clone();
        // None pinged for the test's whole run, however slow the machine.
        c.store.ping_after_idle_ms = 600_000;
    })
    .await;
    assert!(h.dm("ana", "remember that my desk is by the window").await.contains("remember"));
    let kept = h.message_count().await;
    assert!(end_every_connection(&url).await >= 4);
    let reply = h.dm("ana", "what do you know about me?").await;
    assert!(reply.contains("desk is by the window"), "{reply}");
    // The question and its answer, each once.
    assert_eq!(h.message_count().await, kept + 2);
}
}

/// In CI the PostgreSQL tests must run: a build that did not see ENGRAM_TEST_POSTGRES=1 would
/// list them as ignored, so it fails here instead.
#[test]
fn ci_builds_run_the_postgres_tests() {
    if crate::common::in_ci() && !cfg!(engram_postgres_tests) {
        panic!(
            "CI but the build did not see ENGRAM_TEST_POSTGRES=1: the PostgreSQL tests would be \
             ignored (scripts/pg-test-server.sh start exports it)"
        );
    }
    if crate::common::in_ci() && !cfg!(engram_browser_tests) {
        panic!(
            "CI but the build did not see ENGRAM_TEST_BROWSER=1: the admin page's browser test \
             would be ignored (.ci/run installs chromium and exports it)"
        );
    }
}

postgres_test! {
/// The race the concurrent test above can only hope to hit, made certain: a forget holds its
/// transaction open (vectors and message deleted, not committed) while the background embedder
/// writes the message's vector. The write waits for the forget, then keeps nothing.
async fn postgres_a_vector_write_waits_for_a_forget_in_progress() {
    use sqlx::Connection;
    let url = fresh_postgres_url().await;
    let s = open_url(&url).await;
    let (lab, author, _) = conversation(&s).await;
    let space = s.vector_space(&model(384)).await.unwrap();
    let (id, with_vector) = indexed_without_vector(&s, lab, author, "x", space).await;
    let mut forget = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut tx = forget.begin().await.unwrap();
    for sql in [
        "DELETE FROM message_vectors WHERE message_id = $1",
        "DELETE FROM message_terms WHERE message_id = $1",
        "DELETE FROM messages WHERE id = $1",
    ] {
        sqlx::query(sql).bind(id.0).execute(&mut *tx).await.unwrap();
    }
    let writer = s.clone();
    let write = tokio::spawn(async move { writer.add_vectors(&[with_vector]).await });
    // The write is waiting on the forget's lock (or, were it not, has finished already).
    until_waiting_on_locks(&url, 1, || write.is_finished()).await;
    tx.commit().await.unwrap();
    write.await.unwrap().unwrap();
    assert!(
        vectors_in_any_space(&s, &[id]).await.is_empty(),
        "the vector was written past the forget"
    );
}
}

/// Alice's confirmed change "drink": "likes tea" in the lab, proposed at `epoch`, applied
/// in a task of its own.
fn tea_confirmed(
    s: &Arc<dyn Store>,
    lab: SpaceId,
    alice: PersonId,
    epoch: i64,
) -> tokio::task::JoinHandle<Result<Option<usize>, StoreError>> {
    use engram::domain::Category::Preference;
    let tea = lab_entry(lab, alice, Preference, "drink", "likes tea", 2);
    let s = s.clone();
    tokio::spawn(async move {
        s.apply_confirmed(alice, &[], &[], &[], &[tea], epoch, t(2))
            .await
    })
}

postgres_test! {
/// A clear under way in another process (its count taken, not committed) while a person's
/// "yes" applies the changes proposed before it: the changes wait for the clear, then lapse.
/// (Her settings' row is there already: the changes wait at its lock, or at making it.)
async fn postgres_confirmed_changes_wait_for_a_clear_in_progress() {
    use engram::domain::Category::Preference;
    use sqlx::Connection;
    let url = fresh_postgres_url().await;
    let s = open_url(&url).await;
    let (lab, alice) = lab_and_alice(&s).await;
    s.begin_forgetting(alice, t(1)).await.unwrap();
    let proposed = s.forgets_counted(alice).await.unwrap().of_person;
    let mut clear = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut tx = clear.begin().await.unwrap();
    for sql in [
        "UPDATE forget_count SET n = n + 1 WHERE id = 1",
        "UPDATE memory_settings SET forget_epoch = forget_epoch + 1 WHERE person_id = $1",
    ] {
        sqlx::query(sql).bind(alice.0).execute(&mut *tx).await.unwrap();
    }
    let apply = tea_confirmed(&s, lab, alice, proposed);
    until_waiting_on_locks(&url, 1, || apply.is_finished()).await;
    tx.commit().await.unwrap();
    assert_eq!(apply.await.unwrap().unwrap(), None);
    assert!(s.entries(alice, None).await.unwrap().is_empty(), "written past the clear");
    // Control: with nothing under way, the same changes are applied.
    let tea = lab_entry(lab, alice, Preference, "drink", "likes tea", 2);
    let now = s.forgets_counted(alice).await.unwrap().of_person;
    assert_eq!(
        s.apply_confirmed(alice, &[], &[], &[], &[tea], now, t(3)).await.unwrap(),
        Some(1)
    );
    assert_eq!(s.entries(alice, None).await.unwrap().len(), 1);
}
}

postgres_test! {
/// The other way round: confirmed changes under way (their epoch read, their write waiting
/// on a row held elsewhere) hold the person's settings, so a clear counted meanwhile waits
/// for them to commit (and its deletion, which comes after its count, finds what they
/// wrote).
async fn postgres_a_clear_waits_for_confirmed_changes_in_progress() {
    use engram::domain::Category::Preference;
    use sqlx::Connection;
    let url = fresh_postgres_url().await;
    let s = open_url(&url).await;
    let (lab, alice) = lab_and_alice(&s).await;
    s.write_entry(&lab_entry(lab, alice, Preference, "drink", "likes coffee", 1))
        .await
        .unwrap();
    // Her settings' row is there already (a new one would hold the clear by itself).
    s.set_memory_paused(alice, false, t(1)).await.unwrap();
    let proposed = s.forgets_counted(alice).await.unwrap().of_person;
    let mut hold = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut held = hold.begin().await.unwrap();
    sqlx::query("SELECT id FROM memory_entries WHERE person_id = $1 FOR UPDATE")
        .bind(alice.0)
        .fetch_all(&mut *held)
        .await
        .unwrap();
    let apply = tea_confirmed(&s, lab, alice, proposed);
    until_waiting_on_locks(&url, 1, || apply.is_finished()).await;
    let clearing = s.clone();
    let clear = tokio::spawn(async move { clearing.mark_memory_cleared(alice, t(3)).await });
    until_waiting_on_locks(&url, 2, || clear.is_finished()).await;
    assert!(!clear.is_finished(), "the clear was counted while the changes were under way");
    held.commit().await.unwrap();
    assert_eq!(apply.await.unwrap().unwrap(), Some(1));
    clear.await.unwrap().unwrap();
    assert_eq!(s.forgets_counted(alice).await.unwrap().of_person, proposed + 1);
}
}

/// A message of "lab" whose postings wait in `message_terms_backlog`, as a copy or a
/// migration leaves them (`read_again`: its language is to be detected again too).
struct Queued {
    s: Arc<dyn Store>,
    id: MessageId,
    scope: String,
    /// Its postings as they were: (term, scope, tf, doc_len).
    postings: Vec<(String, String, i32, i32)>,
    /// Its length.
    len: i64,
    /// The scope's documents and total length without it.
    without_it: (i64, i64),
}

/// The scope's documents and total length (BM25's statistics).
async fn scope_stats(url: &str, scope: &str) -> (i64, i64) {
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query_as::<_, (i64, i64)>(
        "SELECT COALESCE(SUM(docs), 0)::BIGINT, COALESCE(SUM(total_len), 0)::BIGINT FROM scope_term_stats WHERE scope = $1",
    )
    .bind(scope)
    .fetch_one(&mut c)
    .await
    .unwrap()
}

async fn queued_for_postings(url: &str, read_again: bool) -> Queued {
    use sqlx::Connection;
    let s = open_url(url).await;
    let (lab, author, _) = conversation(&s).await;
    let scope = Scope::Space(lab).key();
    let id = s
        .insert_message(&msg(
            lab,
            Scope::Space(lab),
            author,
            "q",
            "the bunker code is swordfish",
            t(2),
        ))
        .await
        .unwrap()
        .id;
    let mut raw = sqlx::PgConnection::connect(url).await.unwrap();
    let with_it = scope_stats(url, &scope).await;
    // Positive control: the message has postings, and they are what the worker will write.
    let postings: Vec<(String, String, i32, i32)> = sqlx::query_as(
        "SELECT term, scope, tf, doc_len FROM message_terms WHERE message_id = $1 ORDER BY term",
    )
    .bind(id.0)
    .fetch_all(&mut raw)
    .await
    .unwrap();
    assert!(postings.iter().any(|p| p.0 == "swordfish"), "{postings:?}");
    let len: i64 = postings[0].3.into();
    let mut queue = vec![
        "DELETE FROM message_terms WHERE message_id = $1",
        "INSERT INTO message_terms_backlog (message_id) VALUES ($1)",
    ];
    if read_again {
        queue.push("UPDATE messages SET language = NULL WHERE id = $1");
    }
    for sql in queue {
        sqlx::query(sql).bind(id.0).execute(&mut raw).await.unwrap();
    }
    sqlx::query(
        "UPDATE scope_term_stats SET docs = docs - 1, total_len = total_len - $1 WHERE scope = $2",
    )
    .bind(len)
    .bind(&scope)
    .execute(&mut raw)
    .await
    .unwrap();
    let without_it = scope_stats(url, &scope).await;
    assert_eq!(without_it, (with_it.0 - 1, with_it.1 - len));
    Queued {
        s,
        id,
        scope,
        postings,
        len,
        without_it,
    }
}

postgres_test! {
/// A forget across two scopes and a batch of postings across the same two (the worker writing
/// queued postings, a bulk import) take the scopes' statistics rows in one order, scope by
/// scope: here the batch holds the first scope's and then takes the second's, while the
/// forget goes on. Neither waits for the other in a ring (PostgreSQL counts no deadlock).
async fn postgres_a_forget_and_postings_take_scope_statistics_in_one_order() {
    use sqlx::Connection;
    let url = fresh_postgres_url().await;
    let s = open_url(&url).await;
    let (lab, alice) = lab_and_alice(&s).await;
    let dm = Scope::Dm(alice);
    let mut scopes = [dm.key(), Scope::Space(lab).key()];
    scopes.sort();
    // The forget meets the later scope first: its message is the older one.
    let later = if scopes[1] == dm.key() { dm.clone() } else { Scope::Space(lab) };
    let earlier = if later == dm { Scope::Space(lab) } else { dm.clone() };
    let mut first = msg(lab, later.clone(), alice, "a", "the vault code is swordfish", t(1));
    first.privacy = later.privacy();
    let mut second = msg(lab, earlier.clone(), alice, "b", "the garden gate is blue", t(2));
    second.privacy = earlier.privacy();
    let ids = s.insert_messages(&[first, second]).await.unwrap();
    let deadlocks = |url: String| async move {
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query_scalar::<_, i64>(
            "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
        )
        .fetch_one(&mut c)
        .await
        .unwrap()
    };
    let before = deadlocks(url.clone()).await;
    let mut raw = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut batch = raw.begin().await.unwrap();
    let stats = "UPDATE scope_term_stats SET docs = docs + 0 WHERE scope = $1";
    sqlx::query(stats)
        .bind(&scopes[0])
        .execute(&mut *batch)
        .await
        .unwrap();
    let forgetter = s.clone();
    let forget = tokio::spawn(async move { forgetter.delete_messages(&ids).await });
    until_waiting_on_locks(&url, 1, || forget.is_finished()).await;
    sqlx::query(stats)
        .bind(&scopes[1])
        .execute(&mut *batch)
        .await
        .unwrap();
    batch.commit().await.unwrap();
    assert_eq!(forget.await.unwrap().unwrap(), 2);
    // The statistics are flushed as sessions end.
    drop(raw);
    drop(s);
    assert_eq!(deadlocks(url.clone()).await, before, "a deadlock was broken");
}
}

postgres_test! {
/// The worker that writes queued postings, run for real while a forget holds the message (it
/// locks the messages first, then their queue rows): the worker leaves that message alone
/// until the forget commits (before, it took the queue row and then waited to record the
/// message's language, while the forget waited for the queue row: a deadlock that failed
/// one of them), the forget goes through, and no posting of the message is left.
async fn postgres_queued_postings_and_a_forget_never_deadlock() {
    use sqlx::Connection;
    let url = fresh_postgres_url().await;
    let q = queued_for_postings(&url, true).await;
    let id = q.id.0;
    let mut raw = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut forget = raw.begin().await.unwrap();
    sqlx::query("SELECT id FROM messages WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_all(&mut *forget)
        .await
        .unwrap();
    let store = q.s.clone();
    let drain = tokio::spawn(async move { store.finish_load().await });
    // The worker has met the held message: waiting for it, or gone on past it.
    let mut watch = sqlx::PgConnection::connect(&url).await.unwrap();
    loop {
        let met: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND (wait_event_type = 'Lock' OR query LIKE 'SELECT COUNT(*) FROM message_terms_backlog%')",
        )
        .fetch_one(&mut watch)
        .await
        .unwrap();
        if met > 0 || drain.is_finished() {
            break;
        }
        tokio::task::yield_now().await;
    }
    // The forget goes on as `delete_in` does: the queue row, then the rows.
    for sql in [
        "SELECT message_id FROM message_terms_backlog WHERE message_id = $1 FOR UPDATE",
        "DELETE FROM message_terms_backlog WHERE message_id = $1",
        "DELETE FROM messages WHERE id = $1",
    ] {
        sqlx::query(sql)
            .bind(id)
            .execute(&mut *forget)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    forget.commit().await.unwrap();
    drain.await.unwrap().unwrap();
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM message_terms WHERE message_id = $1")
        .bind(id)
        .fetch_one(&mut watch)
        .await
        .unwrap();
    assert_eq!(left, 0, "the forgotten message's postings were written");
    assert_eq!(scope_stats(&url, &q.scope).await, q.without_it);
    // Positive control: the same worker writes a queued message no one holds.
    let other = queued_for_postings(&url, true).await;
    other.s.finish_load().await.unwrap();
    let written: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM message_terms WHERE message_id = $1")
        .bind(other.id.0)
        .fetch_one(&mut watch)
        .await
        .unwrap();
    assert_eq!(written as usize, other.postings.len());
    let _ = other.len;
}
}

postgres_test! {
/// A forget and a worker that writes queued postings (`engram migrate`'s copy, a migration's
/// re-index) taking the queue row without the message, as processes of earlier versions did
/// (one may still run during an upgrade), made certain: the worker has taken the message's
/// queue row and is writing its postings when the forget comes. The forget waits for it, then takes those postings out,
/// and the scope's statistics count the message no more.
async fn postgres_a_forget_waits_for_queued_postings_being_written() {
    use sqlx::Connection;
    let url = fresh_postgres_url().await;
    let Queued {
        s,
        id,
        scope,
        postings,
        len,
        without_it,
    } = queued_for_postings(&url, false).await;
    let mut raw = sqlx::PgConnection::connect(&url).await.unwrap();
    // The worker takes the row, as `drain_terms_backlog` does.
    let mut worker = raw.begin().await.unwrap();
    let taken: Vec<i64> = sqlx::query_scalar(
        "DELETE FROM message_terms_backlog WHERE message_id IN \
         (SELECT message_id FROM message_terms_backlog FOR UPDATE SKIP LOCKED) RETURNING message_id",
    )
    .fetch_all(&mut *worker)
    .await
    .unwrap();
    assert_eq!(taken, vec![id.0]);
    let forgetter = s.clone();
    let forget = tokio::spawn(async move { forgetter.delete_messages(&[id]).await });
    // The forget is waiting on the worker's lock (or, were it not, has finished already).
    until_waiting_on_locks(&url, 1, || forget.is_finished()).await;
    // The worker writes what it read before the forget, and commits.
    for (term, scope, tf, doc_len) in &postings {
        sqlx::query("INSERT INTO message_terms (term, scope, message_id, tf, doc_len) VALUES ($1, $2, $3, $4, $5)")
            .bind(term)
            .bind(scope)
            .bind(id.0)
            .bind(tf)
            .bind(doc_len)
            .execute(&mut *worker)
            .await
            .unwrap();
    }
    sqlx::query("UPDATE scope_term_stats SET docs = docs + 1, total_len = total_len + $1 WHERE scope = $2")
        .bind(len)
        .bind(&scope)
        .execute(&mut *worker)
        .await
        .unwrap();
    worker.commit().await.unwrap();
    assert_eq!(forget.await.unwrap().unwrap(), 1);
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM message_terms WHERE message_id = $1")
        .bind(id.0)
        .fetch_one(&mut raw)
        .await
        .unwrap();
    assert_eq!(left, 0, "the forgotten message's postings were written past the forget");
    assert_eq!(
        scope_stats(&url, &scope).await,
        without_it,
        "the scope still counts the forgotten message"
    );
}
}

/// What a model made of an image joins its message: the line's new text is searchable and the
/// old one's words stay findable once, the vector made from the old text is made again, the
/// pieces point at the message, the surrogate is kept with the file; doing it twice changes
/// nothing; a message deleted meanwhile gets nothing, and its pieces and the file go with it.
async fn describing_an_attachment_rewrites_its_message_and_what_came_of_it(s: Arc<dyn Store>) {
    let (lab, author, _) = conversation(&s).await;
    let scopes = [Scope::Space(lab)];
    let found = |s: Arc<dyn Store>, q: &'static str| {
        let scopes = scopes.clone();
        async move {
            s.search_messages(&scopes, &query_terms(q, 16), Bm25::default(), 10)
                .await
                .unwrap()
                .into_iter()
                .map(|h| h.message.text)
                .collect::<Vec<_>>()
        }
    };
    let file = engram::store::NewAttachment {
        scope: Scope::Space(lab),
        sha256: "ab".repeat(32),
        kind: "image".into(),
        name: "shot.png".into(),
        mime: "image/png".into(),
        size: 10,
        at: t(2),
    };
    let compose = |ids: &[i64]| {
        let text = format!("look at this\n[image#{} shot.png]", ids[0]);
        (
            msg(lab, Scope::Space(lab), author, "img", &text, t(2)),
            Vec::new(),
        )
    };
    let id = s
        .insert_with_attachments(&[file], &compose, &[])
        .await
        .unwrap()
        .id;
    let att = s.message_attachments(id).await.unwrap()[0].id;
    assert_eq!(s.message_attachments(id).await.unwrap()[0].surrogate, None);
    let space = s.vector_space(&model(384)).await.unwrap();
    index_pending(&s, |m| {
        Some(Embedding {
            space,
            vector: axis(m.id.0 as usize % 384),
        })
    })
    .await;
    assert_eq!(s.message_vectors(space, &[id]).await.unwrap().len(), 1);
    assert!(found(s.clone(), "frobnitz").await.is_empty());

    let described = format!("[image#{att} shot.png] a frobnitz error");
    let rewrite = |text: &str| {
        engram::ingest::attachments::with_gist(text, att, "a frobnitz error", 1)
            .map(|t| (t, Some(engram::domain::language::Language::English)))
    };
    let mut piece = msg(
        lab,
        Scope::Space(lab),
        author,
        "img#a1.0",
        "[image 1, text] ImportError frobnitz",
        t(2),
    );
    piece.is_command = true;
    let pieces = vec![piece];
    for _ in 0..2 {
        let text = s
            .describe_attachment(
                id,
                att,
                "{\"gist\":\"a frobnitz error\"}",
                &rewrite,
                &pieces,
            )
            .await
            .unwrap();
        assert_eq!(text, Some(format!("look at this\n{described}")));
        assert_eq!(s.attachment_parts(id).await.unwrap().len(), 1);
        let mut hits = found(s.clone(), "frobnitz").await;
        hits.sort();
        assert_eq!(
            hits,
            [
                "[image 1, text] ImportError frobnitz".to_string(),
                format!("look at this\n{described}"),
            ]
        );
        // The old words are found once, with the new text.
        assert_eq!(
            found(s.clone(), "look").await,
            [format!("look at this\n{described}")]
        );
    }
    assert_eq!(
        s.messages_by_id(&[id]).await.unwrap()[0].text,
        format!("look at this\n{described}")
    );
    assert_eq!(
        s.message_attachments(id).await.unwrap()[0]
            .surrogate
            .as_deref(),
        Some("{\"gist\":\"a frobnitz error\"}")
    );
    // The vector of the old text is gone and waits to be made again.
    assert!(s.message_vectors(space, &[id]).await.unwrap().is_empty());
    assert!(
        s.vectors_to_redo(10)
            .await
            .unwrap()
            .iter()
            .any(|m| m.id == id)
    );

    // Deleted: it goes with its pieces and the file, and a late description adds nothing.
    s.delete_messages(&[id]).await.unwrap();
    let late = s
        .describe_attachment(id, att, "{}", &rewrite, &pieces)
        .await
        .unwrap();
    assert_eq!(late, None);
    assert!(found(s.clone(), "frobnitz").await.is_empty());
    assert!(s.attachment_parts(id).await.unwrap().is_empty());
    assert!(s.message_attachments(id).await.unwrap().is_empty());
    let rows = |s: Arc<dyn Store>| async move {
        s.table_counts()
            .await
            .unwrap()
            .into_iter()
            .find(|t| t.table == "attachments")
            .unwrap()
            .rows
    };
    assert_eq!(rows(s.clone()).await, 0, "the file and what was made of it");

    // Described while the indexer embeds the old text: the old text's vector is not kept,
    // and the message waits to be embedded again.
    let compose = |ids: &[i64]| {
        let text = format!("[image#{} other.png]", ids[0]);
        (
            msg(lab, Scope::Space(lab), author, "img2", &text, t(3)),
            Vec::new(),
        )
    };
    let file = engram::store::NewAttachment {
        scope: Scope::Space(lab),
        sha256: "cd".repeat(32),
        kind: "image".into(),
        name: "other.png".into(),
        mime: "image/png".into(),
        size: 10,
        at: t(3),
    };
    assert_eq!(rows(s.clone()).await, 0);
    let id = s
        .insert_with_attachments(&[file], &compose, &[])
        .await
        .unwrap()
        .id;
    let att = s.message_attachments(id).await.unwrap()[0].id;
    let read = s.unindexed_messages(10).await.unwrap();
    assert_eq!(read.iter().map(|m| m.id).collect::<Vec<_>>(), [id]);
    let rewrite = |text: &str| {
        engram::ingest::attachments::with_gist(text, att, "a chart of sales", 1)
            .map(|t| (t, Some(engram::domain::language::Language::English)))
    };
    s.describe_attachment(id, att, "{}", &rewrite, &[])
        .await
        .unwrap();
    let stale: Vec<engram::store::IndexedMessage> = read
        .into_iter()
        .map(|message| engram::store::IndexedMessage {
            embedding: Some(Embedding {
                space,
                vector: axis(3),
            }),
            message,
            context: None,
            start: Default::default(),
        })
        .collect();
    s.index_messages(&stale, Duration::minutes(30))
        .await
        .unwrap();
    assert!(s.message_vectors(space, &[id]).await.unwrap().is_empty());
    let redo = s.vectors_to_redo(10).await.unwrap();
    let again: Vec<_> = redo.iter().filter(|m| m.id == id).collect();
    assert_eq!(again.len(), 1, "waits to be embedded again");
    assert_eq!(
        again[0].text,
        format!("[image#{att} other.png] a chart of sales")
    );
    // Positive control: made from the text as it is, the vector is kept.
    let fresh = engram::store::IndexedMessage {
        message: again[0].clone(),
        embedding: Some(Embedding {
            space,
            vector: axis(3),
        }),
        context: None,
        start: Default::default(),
    };
    assert_eq!(s.redo_vectors(&[fresh]).await.unwrap(), 1);
    assert_eq!(s.message_vectors(space, &[id]).await.unwrap().len(), 1);
}

/// The episode of `message`, closed, and its messages as the episode job reads them.
async fn closed_episode(s: &Arc<dyn Store>, message: MessageId) -> (i64, Vec<StoredMessage>) {
    let found = s.messages_by_id(&[message]).await.unwrap().remove(0);
    let episode = found.episode.expect("indexed into an episode");
    let from = s
        .episode_messages(episode, true, engram::store::EpisodeEnd::Oldest, 200)
        .await
        .unwrap();
    s.close_episode(
        episode,
        &from,
        &engram::store::EpisodeClose::Add {
            summary: found.text.clone(),
            embedding: None,
        },
    )
    .await
    .unwrap();
    (
        episode,
        s.episode_messages(episode, false, engram::store::EpisodeEnd::Oldest, 100)
            .await
            .unwrap(),
    )
}

/// An episode closed from messages one of which was forgotten after they were read (the
/// indexer embedding them meanwhile) stays open: its summary would hold what is gone. Closed
/// from what is left, it closes (the control).
async fn an_episode_closed_from_a_forgotten_message_stays_open(s: Arc<dyn Store>) {
    let (_, _, ids) = conversation(&s).await;
    index_pending(&s, |_| None).await;
    let episode = s.messages_by_id(&[ids[0]]).await.unwrap()[0]
        .episode
        .expect("indexed into an episode");
    let read = || async {
        s.episode_messages(episode, true, engram::store::EpisodeEnd::Oldest, 200)
            .await
            .unwrap()
    };
    let from = read().await;
    assert!(from.iter().any(|m| m.id == ids[1]), "{from:?}");
    let close = |from: &[StoredMessage]| engram::store::EpisodeClose::Add {
        summary: from
            .iter()
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        embedding: None,
    };
    s.delete_messages(&[ids[1]]).await.unwrap();
    s.close_episode(episode, &from, &close(&from))
        .await
        .unwrap();
    let open = &s.episodes(&[episode]).await.unwrap()[0];
    assert!(!open.closed && open.summary.is_none(), "{open:?}");
    let left = read().await;
    s.close_episode(episode, &left, &close(&left))
        .await
        .unwrap();
    let closed = &s.episodes(&[episode]).await.unwrap()[0];
    assert!(closed.closed, "the control: {closed:?}");
    assert!(
        !closed
            .summary
            .as_deref()
            .unwrap_or("")
            .contains("Last Friday"),
        "{closed:?}"
    );
}

/// An episode's vector is the centroid of its messages' vectors, and a short turn's vector
/// was made with the turn before it, which can sit in another episode. When that turn is
/// forgotten after the centroid was read (the indexer closing the episode, or giving it a new
/// model's vector), the centroid is not kept: the episode stays open, or keeps no vector,
/// until one is made from what is stored now (the controls).
async fn an_episode_vector_made_with_a_forgotten_context_is_not_kept(s: Arc<dyn Store>) {
    let (_, _, ids) = conversation(&s).await;
    let (context, short, third) = (ids[0], ids[1], ids[5]);
    let space = s.vector_space(&model(384)).await.unwrap();
    let items: Vec<engram::store::IndexedMessage> = s
        .unindexed_messages(100)
        .await
        .unwrap()
        .into_iter()
        .map(|m| engram::store::IndexedMessage {
            embedding: Some(Embedding {
                space,
                vector: axis(m.id.0 as usize % 384),
            }),
            context: (m.id == short).then_some(context),
            // "Yes! Last Friday." opens an episode of its own (a marker, in this test).
            start: if m.id == short {
                engram::store::EpisodeStart::Marker
            } else {
                Default::default()
            },
            message: m,
        })
        .collect();
    s.index_messages(&items, Duration::minutes(30))
        .await
        .unwrap();
    let of = |id: MessageId| {
        let s = s.clone();
        async move { s.messages_by_id(&[id]).await.unwrap()[0].episode.unwrap() }
    };
    let episode = of(short).await;
    assert_ne!(
        of(context).await,
        episode,
        "the context is in another episode"
    );
    let read = || async {
        let from = s
            .episode_messages(episode, true, engram::store::EpisodeEnd::Oldest, 200)
            .await
            .unwrap();
        let ids: Vec<MessageId> = from.iter().map(|m| m.id).collect();
        let vectors = s.message_vectors(space, &ids).await.unwrap();
        let vector = engram::store::EpisodeVector {
            embedding: Embedding {
                space,
                vector: vectors[0].vector.clone(),
            },
            made_from: vectors.iter().map(|v| (v.message, v.context)).collect(),
        };
        (from, vector)
    };
    let (from, stale) = read().await;
    assert_eq!(
        from.iter().map(|m| m.id).collect::<Vec<_>>(),
        [short, third]
    );
    assert!(
        stale.made_from.contains(&(short, Some(context))),
        "{stale:?}"
    );

    s.delete_messages(&[context]).await.unwrap();
    let close = |vector: Option<engram::store::EpisodeVector>| engram::store::EpisodeClose::Add {
        summary: "a day out".into(),
        embedding: vector,
    };
    s.close_episode(episode, &from, &close(Some(stale.clone())))
        .await
        .unwrap();
    let now = || async { s.episodes(&[episode]).await.unwrap().remove(0) };
    assert!(
        !now().await.closed,
        "closed with the forgotten context's vector"
    );
    // Control: the same messages without that vector close it.
    s.close_episode(episode, &from, &close(None)).await.unwrap();
    let closed = now().await;
    assert!(closed.closed, "{closed:?}");
    let outside = || async {
        s.episodes_outside(space, 100)
            .await
            .unwrap()
            .iter()
            .any(|e| e.id == episode)
    };
    assert!(outside().await, "closed without a vector");

    // A model's pass giving the closed episode its vector, read before the forget: not kept.
    s.set_episode_vector(&closed, space, Some(&stale))
        .await
        .unwrap();
    assert!(outside().await, "given the forgotten context's vector");
    // Control: made again from what is stored now (the short turn embedded again on its
    // own), it is kept.
    let redo = s.vectors_to_redo(10).await.unwrap();
    assert_eq!(redo.iter().map(|m| m.id).collect::<Vec<_>>(), [short]);
    let again = vec![engram::store::IndexedMessage {
        message: redo[0].clone(),
        embedding: Some(Embedding {
            space,
            vector: axis(7),
        }),
        context: None,
        start: Default::default(),
    }];
    assert_eq!(s.redo_vectors(&again).await.unwrap(), 1);
    let (_, fresh) = read().await;
    assert!(fresh.made_from.contains(&(short, None)), "{fresh:?}");
    s.set_episode_vector(&closed, space, Some(&fresh))
        .await
        .unwrap();
    assert!(!outside().await, "the fresh vector was not kept");
}

/// Fact-augmented keys: the words of an episode's details find it in its own scope only, are
/// written once, and go when one of its messages is forgotten (the details are redone).
async fn episode_keys_are_searched_in_scope_and_go_with_a_forget(s: Arc<dyn Store>) {
    let (lab, author, ids) = conversation(&s).await;
    index_pending(&s, |_| None).await;
    let (public, said) = closed_episode(&s, ids[1]).await;
    let (private, whispered) = closed_episode(&s, ids[4]).await;
    let (lab_scope, dm_scope) = ([Scope::Space(lab)], [Scope::Dm(author)]);
    assert!(
        episodes_found(s.as_ref(), &lab_scope, "zeppelin")
            .await
            .is_empty()
    );
    assert_eq!(
        s.save_episode_details(public, &said, "{}", "topic: a zeppelin ride")
            .await
            .unwrap(),
        DetailsSaved::Kept
    );
    assert_eq!(
        s.save_episode_details(private, &whispered, "{}", "a submarine tour")
            .await
            .unwrap(),
        DetailsSaved::Kept
    );
    // Written once: a second save (another process) changes nothing, and says so.
    assert_eq!(
        s.save_episode_details(public, &said, "{}", "an airship")
            .await
            .unwrap(),
        DetailsSaved::AlreadyKept
    );
    assert!(s.episodes_without_keys(10).await.unwrap().is_empty());
    assert_eq!(
        episodes_found(s.as_ref(), &lab_scope, "zeppelin rides").await,
        [public]
    );
    assert!(
        episodes_found(s.as_ref(), &lab_scope, "airship")
            .await
            .is_empty()
    );
    // A key of the private chat's episode never reaches the group; in its own scope it does.
    assert!(
        episodes_found(s.as_ref(), &lab_scope, "submarine")
            .await
            .is_empty()
    );
    assert_eq!(
        episodes_found(s.as_ref(), &dm_scope, "submarine").await,
        [private]
    );
    // Its message is still found by its own words (the positive control for the forget).
    assert_eq!(
        episodes_found(s.as_ref(), &lab_scope, "hiking").await,
        [public]
    );
    s.delete_messages(&[ids[1]]).await.unwrap();
    assert!(
        episodes_found(s.as_ref(), &lab_scope, "zeppelin")
            .await
            .is_empty()
    );
    assert_eq!(
        episodes_found(s.as_ref(), &lab_scope, "hiking").await,
        [public]
    );
}

/// A tombstone of a platform-deleted message names that message only (platform, space,
/// channel and id), and lapses after the time kept.
async fn tombstones_name_one_message_and_lapse(s: Arc<dyn Store>) {
    let day = Duration::days(1);
    let gone = |platform, space: &'static str, channel: &'static str, id: &'static str| {
        let s = s.clone();
        async move { s.was_deleted(platform, space, channel, id).await.unwrap() }
    };
    assert!(!gone(Platform::Discord, "g", "c", "1").await);
    s.mark_deleted(
        Platform::Discord,
        "g",
        "c",
        &["1".into(), "2".into(), "1".into()],
        t(0),
        day,
    )
    .await
    .unwrap();
    assert!(gone(Platform::Discord, "g", "c", "1").await);
    assert!(gone(Platform::Discord, "g", "c", "2").await);
    for (platform, space, channel, id) in [
        (Platform::Telegram, "g", "c", "1"),
        (Platform::Discord, "h", "c", "1"),
        (Platform::Discord, "g", "d", "1"),
        (Platform::Discord, "g", "c", "3"),
    ] {
        assert!(
            !gone(platform, space, channel, id).await,
            "{space} {channel} {id}"
        );
    }
    // Marked again within the day: the first ones stay; later than a day: they lapse.
    s.mark_deleted(Platform::Discord, "g", "c", &["4".into()], t(12), day)
        .await
        .unwrap();
    assert!(gone(Platform::Discord, "g", "c", "1").await);
    s.mark_deleted(
        Platform::Discord,
        "g",
        "c",
        &["3".into()],
        t(0) + day * 2,
        day,
    )
    .await
    .unwrap();
    assert!(!gone(Platform::Discord, "g", "c", "1").await);
    assert!(gone(Platform::Discord, "g", "c", "3").await);
}

/// A channel's cursor is the newest message seen there: a message seen late (an older id)
/// never moves it back, each (platform, space, channel) has its own, and only channels seen
/// within the asked time are listed.
async fn channel_cursors_keep_the_newest_seen(s: Arc<dyn Store>) {
    let seen = |space: &'static str, channel: &'static str, id: i64, at: i64| {
        let s = s.clone();
        async move {
            s.saw_message(Platform::Discord, space, channel, id, t(at))
                .await
                .unwrap()
        }
    };
    let listed = |since: i64| {
        let s = s.clone();
        async move {
            s.channels_seen_since(Platform::Discord, t(since))
                .await
                .unwrap()
                .into_iter()
                .map(|c| (c.space_external_id, c.channel, c.external_id))
                .collect::<Vec<_>>()
        }
    };
    seen("g", "c", 1_000_000_000_000_000_010, 0).await;
    seen("g", "c", 1_000_000_000_000_000_005, 1).await;
    seen("g", "d", 7, 1).await;
    s.saw_message(Platform::Telegram, "g", "c", 99, t(1))
        .await
        .unwrap();
    assert_eq!(
        listed(0).await,
        [
            ("g".into(), "c".into(), 1_000_000_000_000_000_010),
            ("g".into(), "d".into(), 7)
        ]
    );
    seen("g", "c", 1_000_000_000_000_000_011, 0).await;
    assert_eq!(
        listed(1).await,
        [
            ("g".into(), "c".into(), 1_000_000_000_000_000_011),
            ("g".into(), "d".into(), 7)
        ],
        "seen at the later time of the two"
    );
    assert!(listed(2).await.is_empty());
}

/// A message forgotten on request is known again by its platform ids (other bots' too), only
/// within the time asked, and only that one; a later forget drops keys older than its keep.
async fn forgotten_messages_are_kept_out_for_a_time(s: Arc<dyn Store>) {
    let space = s
        .resolve_space(Platform::Discord, "guild-7", SpaceKind::Group, "g")
        .await
        .unwrap();
    let person = s
        .resolve_person(Platform::Discord, "u1", "Ann")
        .await
        .unwrap();
    let mut ids = Vec::new();
    for (ext, is_bot) in [("m-1", false), ("m-2", true), ("m-3", false)] {
        let id = s
            .insert_message(&NewMessage {
                space,
                channel: "chan-9".into(),
                scope: Scope::Space(space),
                privacy: engram::domain::Privacy::GuildPublic,
                author: person,
                is_bot,
                is_command: false,
                external_id: ext.into(),
                reply_to: None,
                text: format!("said {ext}"),
                language: None,
                sent_at: t(0),
                withheld: false,
            })
            .await
            .unwrap()
            .id;
        ids.push(id);
    }
    let forgotten = |ext: &'static str, since: i64| {
        let s = s.clone();
        async move {
            s.was_forgotten(Platform::Discord, "guild-7", "chan-9", ext, t(since))
                .await
                .unwrap()
        }
    };
    assert!(!forgotten("m-1", 0).await);
    s.keep_out(&ids[..2], t(1), Duration::days(30))
        .await
        .unwrap();
    assert!(forgotten("m-1", 0).await);
    assert!(forgotten("m-2", 0).await, "another bot's message too");
    assert!(!forgotten("m-3", 0).await, "only those forgotten");
    assert!(!forgotten("m-1", 2).await, "not since a later time");
    assert!(
        !s.was_forgotten(Platform::Telegram, "guild-7", "chan-9", "m-1", t(0))
            .await
            .unwrap()
    );
    s.keep_out(&ids[2..], t(24 * 40), Duration::days(30))
        .await
        .unwrap();
    assert!(!forgotten("m-1", 0).await, "dropped after its keep");
    assert!(forgotten("m-3", 0).await);
}

/// What the searches' pool has planned, by connection (its backend's pid): the BM25 over
/// messages statement's executions by its limit, and the episodes' statement's executions (each
/// runs its generic plan: `plan_cache_mode = force_generic_plan`). The connections are
/// held together while read, so each is read once.
async fn planned_searches(
    s: &engram::store::postgres::PostgresStore,
) -> BTreeMap<i32, (BTreeMap<usize, i64>, i64)> {
    let mut held = Vec::new();
    for _ in 0..s.searches().size() {
        held.push(s.searches().acquire().await.unwrap());
    }
    let mut planned = BTreeMap::new();
    for conn in &mut held {
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut **conn)
            .await
            .unwrap();
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT statement, generic_plans FROM pg_prepared_statements")
                .fetch_all(&mut **conn)
                .await
                .unwrap();
        let (mut messages, mut episodes) = (BTreeMap::new(), 0);
        for (statement, plans) in rows {
            if let Some((_, rest)) = statement.split_once("o.message_id DESC LIMIT ") {
                let limit: String = rest.chars().take_while(char::is_ascii_digit).collect();
                messages.insert(limit.parse().unwrap(), plans);
            } else if statement.contains("FROM episode_terms") {
                episodes += plans;
            }
        }
        planned.insert(pid, (messages, episodes));
    }
    planned
}

postgres_test! {
/// The lexical searches are planned on every connection of their pool before a question
/// needs them: when the store opens on a new database (before any question, at limit 1: the
/// catalogs a question's statement reads), after the upkeep's ANALYZE made the plans stale,
/// and on a connection opened in place of one the server ended, at each limit asked so far.
async fn postgres_searches_are_planned_before_a_question_needs_them() {
    use engram::store::{Admin, SearchIndex};
    let _alone = ENDING_CONNECTIONS.lock().await;
    let url = fresh_postgres_url().await;
    let s = postgres_store_of_4(&url).await;
    let opened = planned_searches(&s).await;
    assert_eq!(opened.len(), 2, "{opened:?}");
    for (messages, episodes) in opened.values() {
        assert_eq!((messages, *episodes), (&BTreeMap::from([(1, 1)]), 1), "{opened:?}");
    }
    let scope = lab_with_plans(&s).await;
    let found = s
        .search_messages(&[scope], &query_terms("plans", 4), Bm25::default(), 7)
        .await
        .unwrap();
    assert_eq!(found.len(), 2);
    // The search's connection goes back to the pool on a task of its own (pinged first):
    // the upkeep plans the idle ones, so it waits until that one is back too.
    let all_idle = async {
        while s.searches().num_idle() < s.searches().size() as usize {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), all_idle)
        .await
        .expect("the search's connection came back to the pool");
    s.maintain().await.unwrap();
    let maintained = planned_searches(&s).await;
    assert_eq!(
        maintained.keys().collect::<Vec<_>>(),
        opened.keys().collect::<Vec<_>>()
    );
    for (messages, episodes) in maintained.values() {
        // Each connection planned the episodes' statement again and the messages' at the
        // limit asked (not again at 1, the stand-in before any was known); one of them
        // searched at 7 as well.
        assert_eq!((messages[&1], *episodes), (1, 2), "{maintained:?}");
        assert!([1, 2].contains(&messages[&7]), "{maintained:?}");
    }
    let searched: i64 = maintained.values().map(|(m, _)| m[&7]).sum();
    assert_eq!(searched, 3, "one search and one planning on each: {maintained:?}");
    assert_eq!(end_every_connection(&url).await, 6);
    let reopened = planned_searches(&s).await;
    assert_eq!(reopened.len(), 2, "{reopened:?}");
    for (pid, (messages, episodes)) in &reopened {
        assert!(!maintained.contains_key(pid), "{pid} was ended: {reopened:?}");
        assert_eq!((messages, *episodes), (&BTreeMap::from([(7, 1)]), 1), "{reopened:?}");
    }
}
}
