//! Hybrid retrieval on both backends (`sqlite::*`, `postgres::*`): the privacy filter against
//! every way to leak, hostile queries, BM25 parameters, the background indexer (vectors and
//! episodes), ADD/MERGE of episodic memories and time awareness. Vector parts use the local
//! all-MiniLM-L6-v2 from ENGRAM_TEST_MODEL_DIR (required in CI).

use crate::common::*;
use chrono::{DateTime, Duration, TimeZone, Utc};
use engram::config::Config;
use engram::domain::{ManualClock, PersonId, Place, Platform, Privacy, Scope, SpaceId, SpaceKind};
use engram::embed::{LocalEmbedder, Precision, SharedEmbedder};
use engram::retrieval::{Indexer, Retriever};
use engram::store::{Bm25, NewMessage, Store, query_terms};
use std::sync::Arc;

fn t(h: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 2, 9, 0, 0).single().unwrap() + Duration::hours(h)
}

/// The local model, or None outside CI when ENGRAM_TEST_MODEL_DIR is not set.
fn local_embedder() -> Option<SharedEmbedder> {
    let dir = std::env::var("ENGRAM_TEST_MODEL_DIR")
        .ok()
        .filter(|d| !d.is_empty());
    let Some(dir) = dir else {
        if in_ci() {
            panic!(
                "CI=true but ENGRAM_TEST_MODEL_DIR is not set: retrieval tests need the local model"
            );
        }
        eprintln!("ENGRAM_TEST_MODEL_DIR not set: vector parts of this test are skipped");
        return None;
    };
    Some(Arc::new(
        LocalEmbedder::load(std::path::Path::new(&dir), Precision::Int8, None, 128)
            .expect("model loads"),
    ))
}

struct World {
    store: Arc<dyn Store>,
    embedder: Option<SharedEmbedder>,
    clock: Arc<ManualClock>,
    alice: PersonId,
    bob: PersonId,
    guild_a: SpaceId,
    guild_b: SpaceId,
    alice_dm: SpaceId,
    bob_dm: SpaceId,
}

impl World {
    async fn new(store: Arc<dyn Store>) -> World {
        let p = |n: &'static str| {
            let s = store.clone();
            async move { s.resolve_person(Platform::Discord, n, n).await.unwrap() }
        };
        let sp = |n: &'static str, kind| {
            let s = store.clone();
            async move {
                s.resolve_space(Platform::Discord, n, kind, n)
                    .await
                    .unwrap()
            }
        };
        World {
            alice: p("alice").await,
            bob: p("bob").await,
            guild_a: sp("guild-a", SpaceKind::Group).await,
            guild_b: sp("guild-b", SpaceKind::Group).await,
            alice_dm: sp("dm-alice", SpaceKind::Private).await,
            bob_dm: sp("dm-bob", SpaceKind::Private).await,
            embedder: local_embedder(),
            clock: Arc::new(ManualClock::new(t(0))),
            store,
        }
    }

    fn settings(&self) -> engram::config::RetrievalConfig {
        Config::defaults().retrieval
    }

    fn retriever(&self) -> Retriever {
        Retriever::new(self.store.clone(), self.embedder.clone(), self.settings())
    }

    fn indexer(&self) -> Indexer {
        Indexer::new(
            self.store.clone(),
            self.embedder.clone(),
            self.clock.clone(),
            self.settings(),
            engram::config::Config::defaults().episodes.topic_rules(),
            32,
        )
    }

    fn dm(&self, who: PersonId) -> Place {
        let space = if who == self.alice {
            self.alice_dm
        } else {
            self.bob_dm
        };
        Place {
            platform: Platform::Discord,
            space,
            space_kind: SpaceKind::Private,
            channel: format!("dm-{}", who.0),
            privacy: Privacy::Dm,
            dm_owner: Some(who),
        }
    }

    fn channel(&self, space: SpaceId, channel: &str, privacy: Privacy) -> Place {
        Place {
            platform: Platform::Discord,
            space,
            space_kind: SpaceKind::Group,
            channel: channel.into(),
            privacy,
            dm_owner: None,
        }
    }

    /// The text of the best hit for `question` asked by `asker` in `place` (as Alice sees it),
    /// BM25 only, with `settings`.
    async fn top_without_vectors(
        &self,
        settings: engram::config::RetrievalConfig,
        place: &Place,
        question: &str,
        asker: Option<PersonId>,
    ) -> String {
        let found = self.scored_without_vectors(settings, place, question, asker);
        found.await.into_iter().next().expect("a result").0
    }

    /// Every result's text and score for `question` asked by `asker` in `place` (as Alice
    /// sees it), best first, as many as a reply takes, BM25 only, with `settings`.
    async fn scored_without_vectors(
        &self,
        settings: engram::config::RetrievalConfig,
        place: &Place,
        question: &str,
        asker: Option<PersonId>,
    ) -> Vec<(String, f64)> {
        Retriever::new(self.store.clone(), None, settings)
            .search(
                question,
                &place.visible_scopes(self.alice),
                asker,
                self.clock.now(),
                self.settings().items,
            )
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.message.text, r.score))
            .collect()
    }

    async fn say(&self, place: &Place, who: PersonId, ext: &str, text: &str, at: DateTime<Utc>) {
        self.said(place, who, false, ext, text, at).await;
    }

    /// Engram's own Discord account, and another bot's (a guild's music bot).
    async fn engram_and_another_bot(&self) -> (PersonId, PersonId) {
        let store = &self.store;
        let engram = store
            .resolve_person(Platform::Discord, engram::domain::SELF_ACCOUNT, "Engram")
            .await
            .unwrap();
        let other = store
            .resolve_person(Platform::Discord, "mee6", "MEE6")
            .await
            .unwrap();
        (engram, other)
    }

    async fn said(
        &self,
        place: &Place,
        who: PersonId,
        is_bot: bool,
        ext: &str,
        text: &str,
        at: DateTime<Utc>,
    ) {
        self.store
            .insert_message(&NewMessage {
                space: place.space,
                channel: place.channel.clone(),
                scope: place.home_scope(),
                privacy: place.privacy,
                author: who,
                is_bot,
                is_command: false,
                external_id: ext.into(),
                reply_to: None,
                text: text.into(),
                language: engram::domain::language::detect(text),
                sent_at: at,
                withheld: false,
            })
            .await
            .unwrap();
    }

    async fn found(
        &self,
        place: &Place,
        asker: PersonId,
        query: &str,
        limit: usize,
    ) -> Vec<String> {
        self.retriever()
            .search(
                query,
                &place.visible_scopes(asker),
                Some(asker),
                self.clock.now(),
                limit,
            )
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.message.text)
            .collect()
    }
}

async fn privacy_filter_holds_for_every_way_to_leak(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public_a = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let staff_a = w.channel(w.guild_a, "staff", Privacy::ChannelRestricted);
    let other_a = w.channel(w.guild_a, "random", Privacy::ChannelRestricted);
    let public_b = w.channel(w.guild_b, "general", Privacy::GuildPublic);
    let (dm_a, dm_b) = (w.dm(w.alice), w.dm(w.bob));
    w.say(
        &dm_a,
        w.alice,
        "1",
        "DM-ALICE my passport is hidden in the blue drawer",
        t(1),
    )
    .await;
    w.say(
        &dm_b,
        w.bob,
        "2",
        "DM-BOB my passport is hidden under the mattress",
        t(1),
    )
    .await;
    w.say(
        &public_a,
        w.bob,
        "3",
        "PUBLIC-A the passport office opens at nine",
        t(2),
    )
    .await;
    w.say(
        &staff_a,
        w.bob,
        "4",
        "STAFF-A passport scans of the team are on the share",
        t(2),
    )
    .await;
    w.say(
        &public_b,
        w.bob,
        "5",
        "PUBLIC-B lost my passport at the airport",
        t(3),
    )
    .await;
    // Many strong matches in one DM must not crowd the allowed ones out of a top-k cut.
    for i in 0..60 {
        w.say(
            &dm_b,
            w.bob,
            &format!("b{i}"),
            &format!("DM-BOB passport passport drawer hidden {i}"),
            t(4),
        )
        .await;
    }
    // Before indexing (BM25 only), then after (BM25 + vectors + episodes).
    for round in ["bm25", "hybrid"] {
        if round == "hybrid" {
            w.indexer().index_all(|_| {}).await.unwrap();
        }
        for query in ["where is my passport hidden?", "passport", "drawer"] {
            let tag = |v: &[String]| -> Vec<String> {
                let mut tags: Vec<String> = v
                    .iter()
                    .map(|t| t.split_whitespace().next().unwrap().to_string())
                    .collect();
                tags.sort();
                tags.dedup();
                tags
            };
            // Every tag found must be allowed there, and (the positive control) each allowed
            // message the query matches is found: an empty answer passes no check. "drawer"
            // matches only the two private chats' messages.
            let case = |name: &str, got: Vec<String>, allowed: &[&str]| {
                let found = tag(&got);
                for tag in &found {
                    assert!(
                        allowed.contains(&tag.as_str()),
                        "{round} {query:?} {name}: {tag} leaked ({got:?})"
                    );
                }
                for tag in allowed {
                    if query != "drawer" || tag.starts_with("DM-") {
                        assert!(
                            found.iter().any(|f| f == tag),
                            "{round} {query:?} {name}: {tag} is allowed here and not found ({got:?})"
                        );
                    }
                }
            };
            case(
                "alice's DM",
                w.found(&dm_a, w.alice, query, 5).await,
                &["DM-ALICE"],
            );
            case(
                "bob's DM",
                w.found(&dm_b, w.bob, query, 50).await,
                &["DM-BOB"],
            );
            case(
                "guild A public",
                w.found(&public_a, w.alice, query, 50).await,
                &["PUBLIC-A"],
            );
            case(
                "guild A staff",
                w.found(&staff_a, w.alice, query, 50).await,
                &["PUBLIC-A", "STAFF-A"],
            );
            case(
                "guild A other restricted",
                w.found(&other_a, w.alice, query, 50).await,
                &["PUBLIC-A"],
            );
            case(
                "guild B",
                w.found(&public_b, w.alice, query, 50).await,
                &["PUBLIC-B"],
            );
            // Bob asking in Alice's DM place is not Alice: nothing of hers (the first case is
            // the control: the same query finds her message for her).
            case(
                "bob in alice's DM",
                w.found(&dm_a, w.bob, query, 50).await,
                &[],
            );
        }
        // What is allowed is found despite 60 stronger matches elsewhere.
        let mine = w.found(&dm_a, w.alice, "passport drawer hidden", 3).await;
        assert!(
            mine.iter().any(|t| t.starts_with("DM-ALICE")),
            "{round}: {mine:?}"
        );
        let staff = w.found(&staff_a, w.alice, "passport scans", 3).await;
        assert!(
            staff.iter().any(|t| t.starts_with("STAFF-A")),
            "{round}: {staff:?}"
        );
    }
}

async fn hostile_queries_give_results_or_nothing(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    w.say(
        &public,
        w.alice,
        "1",
        "the postgres migration finished",
        t(1),
    )
    .await;
    w.indexer().index_all(|_| {}).await.unwrap();
    let long = "postgres ".repeat(1200) + &"x".repeat(10_000);
    for hostile in [
        "\"",
        "\"unbalanced",
        "a AND OR NOT",
        "NEAR(postgres migration, 2)",
        "((((",
        "text:postgres",
        "*",
        "'; DROP TABLE messages; --",
        "1) OR 1=1 --",
        "🦀🦀🦀",
        "",
        "   ",
        "-postgres",
        "postgres*",
        "^postgres",
        "\u{202e}gresql\u{200d}",
        "\0postgres",
        long.as_str(),
    ] {
        let r = w
            .retriever()
            .search(hostile, &public.visible_scopes(w.alice), None, t(2), 10)
            .await;
        assert!(r.is_ok(), "{hostile:?}: {r:?}");
    }
    let found = w
        .found(&public, w.alice, "'; DROP TABLE messages; -- postgres", 5)
        .await;
    assert_eq!(found, ["the postgres migration finished"]);
    assert_eq!(w.found(&public, w.alice, &long, 5).await.len(), 1);
}

async fn bm25_parameters_are_settings(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let long = format!("kayak kayak kayak {}", "filler words here ".repeat(30));
    w.say(&public, w.alice, "1", "kayak trip", t(1)).await;
    w.say(&public, w.alice, "2", &long, t(1)).await;
    for i in 0..5 {
        w.say(
            &public,
            w.alice,
            &format!("n{i}"),
            "unrelated chatter about lunch",
            t(1),
        )
        .await;
    }
    let scopes = public.visible_scopes(w.alice);
    let terms = query_terms("kayak", 8);
    let top = |bm25: Bm25| {
        let s = w.store.clone();
        let (scopes, terms) = (scopes.clone(), terms.clone());
        async move {
            s.search_messages(&scopes, &terms, bm25, 5).await.unwrap()[0]
                .message
                .text
                .clone()
        }
    };
    // Full length normalisation: the short message wins; none: three mentions win.
    assert_eq!(top(Bm25 { k1: 1.2, b: 1.0 }).await, "kayak trip");
    assert!(
        top(Bm25 { k1: 1.2, b: 0.0 })
            .await
            .starts_with("kayak kayak kayak")
    );
    let a = w
        .store
        .search_messages(&scopes, &terms, Bm25 { k1: 0.5, b: 0.75 }, 5)
        .await
        .unwrap();
    let b = w
        .store
        .search_messages(&scopes, &terms, Bm25 { k1: 2.0, b: 0.75 }, 5)
        .await
        .unwrap();
    assert_ne!(a[0].score, b[0].score, "k1 changes scores");
}

async fn pending_messages_are_found_by_bm25_and_indexed_ones_by_meaning(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let dm = w.dm(w.alice);
    w.say(
        &dm,
        w.alice,
        "1",
        "I adopted a golden retriever puppy named Biscuit",
        t(1),
    )
    .await;
    w.say(
        &dm,
        w.alice,
        "2",
        "the quarterly tax forms are due soon",
        t(1),
    )
    .await;
    // Not indexed yet: BM25 finds it at once.
    assert_eq!(
        w.found(&dm, w.alice, "Biscuit the retriever", 1).await,
        ["I adopted a golden retriever puppy named Biscuit"]
    );
    assert_eq!(w.store.unindexed_messages(10).await.unwrap().len(), 2);
    assert_eq!(w.indexer().index_all(|_| {}).await.unwrap(), 2);
    assert!(w.store.unindexed_messages(10).await.unwrap().is_empty());
    assert_eq!(
        w.indexer().index_all(|_| {}).await.unwrap(),
        0,
        "indexing again does nothing"
    );
    if w.embedder.is_some() {
        // No shared word: only the vectors can connect "dog" to the puppy.
        let found = w
            .found(&dm, w.alice, "what kind of dog do I have?", 1)
            .await;
        assert_eq!(found, ["I adopted a golden retriever puppy named Biscuit"]);
    }
}

/// What an indexing batch wrote is in the SQLite file itself, not only in its write-ahead log
/// (SQLite moves the log every 1,000 pages on its own): a chat's first question after its
/// history was indexed reads it through the memory map. A copy of the file alone, taken while
/// the store is open, holds the indexed message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indexed_batch_is_moved_from_the_log_into_the_file() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("t.db");
    let w = World::new(open_url(&format!("sqlite://{}", live.display())).await).await;
    let dm = w.dm(w.alice);
    w.say(&dm, w.alice, "1", "I adopted a puppy named Biscuit", t(1))
        .await;
    // The indexed messages of the database file at `db` (and of its log, when it has one).
    let indexed = |db: std::path::PathBuf| async move {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM messages WHERE indexed")
            .fetch_one(&mut c)
            .await
            .map_err(|e| e.to_string())
    };
    assert_eq!(indexed(live.clone()).await, Ok(0));
    assert_eq!(w.indexer().index_all(|_| {}).await.unwrap(), 1);
    assert_eq!(
        indexed(live.clone()).await,
        Ok(1),
        "the open store sees it indexed"
    );
    let copy = dir.path().join("copy.db");
    std::fs::copy(&live, &copy).unwrap();
    assert_eq!(indexed(copy).await, Ok(1), "the file alone holds it");
}

async fn episodes_split_on_pauses_and_merge_only_within_a_scope(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let staff = w.channel(w.guild_a, "staff", Privacy::ChannelRestricted);
    let topic = [
        "we should plan the summer hiking trip to the alps",
        "the alps hiking trip needs train tickets",
    ];
    for (i, text) in topic.iter().enumerate() {
        w.say(
            &public,
            w.alice,
            &format!("p{i}"),
            text,
            t(0) + Duration::minutes(i as i64),
        )
        .await;
        // The same talk in a restricted channel: a different privacy level, never merged.
        w.say(
            &staff,
            w.alice,
            &format!("s{i}"),
            text,
            t(0) + Duration::minutes(i as i64),
        )
        .await;
    }
    // A long pause, then the same conversation again in the public channel.
    for (i, text) in topic.iter().enumerate() {
        w.say(
            &public,
            w.bob,
            &format!("q{i}"),
            text,
            t(5) + Duration::minutes(i as i64),
        )
        .await;
    }
    w.indexer().index_all(|_| {}).await.unwrap();
    let first = w.store.unindexed_messages(1).await.unwrap();
    assert!(first.is_empty());
    // The store's own BM25 list (the retriever shows a repeated text once).
    let public_episodes = || {
        let store = w.store.clone();
        let scopes = public.visible_scopes(w.alice);
        async move {
            let hits = store
                .search_messages(&scopes, &query_terms("alps hiking", 8), Bm25::default(), 10)
                .await
                .unwrap();
            assert_eq!(hits.len(), 4);
            hits.iter()
                .filter_map(|h| h.message.episode)
                .collect::<std::collections::BTreeSet<i64>>()
        }
    };
    assert_eq!(
        public_episodes().await.len(),
        2,
        "a pause of hours starts a new episode"
    );
    // Close everything: quiet for longer than the gap.
    w.clock.set(t(8));
    let closed = w.indexer().close_episodes().await.unwrap();
    assert_eq!(closed, 3);
    assert_eq!(
        w.indexer().close_episodes().await.unwrap(),
        0,
        "closing again changes nothing"
    );
    let episodes = public_episodes().await;
    let staff_hits = w
        .retriever()
        .search(
            "alps hiking",
            &staff.visible_scopes(w.alice),
            None,
            t(8),
            10,
        )
        .await
        .unwrap();
    let staff_episodes: std::collections::BTreeSet<i64> = staff_hits
        .iter()
        .filter(|h| matches!(h.message.scope, Scope::Channel(..)))
        .filter_map(|h| h.message.episode)
        .collect();
    assert_eq!(staff_episodes.len(), 1);
    assert!(
        staff_episodes.is_disjoint(&episodes),
        "never merged across privacy levels"
    );
    let stored = w
        .store
        .episodes(&episodes.iter().copied().collect::<Vec<_>>())
        .await
        .unwrap();
    assert!(
        stored
            .iter()
            .all(|e| e.closed && e.summary.as_deref().is_some_and(|s| s.contains("alps")))
    );
    if w.embedder.is_some() {
        // The second talk is the same topic (similarity ≥ 0.85): MERGE, one episodic memory.
        assert_eq!(episodes.len(), 1, "{episodes:?}");
        assert_eq!(stored[0].messages, 4);
        // Once it is finished (its final details made), the same talk again is an episode of
        // its own, finished with its own messages: merged in, they would never be in any
        // episode's details.
        while engram::memory::extraction::episodes::finish_offline(w.store.as_ref())
            .await
            .unwrap()
            > 0
        {}
        for (i, text) in topic.iter().enumerate() {
            w.say(
                &public,
                w.bob,
                &format!("r{i}"),
                text,
                t(10) + Duration::minutes(i as i64),
            )
            .await;
        }
        w.indexer().index_all(|_| {}).await.unwrap();
        w.clock.set(t(14));
        assert_eq!(w.indexer().close_episodes().await.unwrap(), 1);
        let after: std::collections::BTreeSet<i64> = w
            .store
            .search_messages(
                &public.visible_scopes(w.alice),
                &query_terms("alps hiking", 8),
                Bm25::default(),
                10,
            )
            .await
            .unwrap()
            .iter()
            .filter_map(|h| h.message.episode)
            .collect();
        assert_eq!(
            after.len(),
            2,
            "not merged into a finished episode: {after:?}"
        );
        assert_eq!(
            w.store.episodes_to_finish(10).await.unwrap().len(),
            1,
            "the new one waits for its own details"
        );
    } else {
        assert_eq!(episodes.len(), 2, "without vectors every episode is ADDed");
    }
}

async fn a_named_time_is_favoured(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let dm = w.dm(w.alice);
    // Same words, one from last week and one from today.
    w.say(
        &dm,
        w.alice,
        "old",
        "we went to the italian restaurant downtown",
        t(-24 * 7),
    )
    .await;
    w.say(
        &dm,
        w.alice,
        "new",
        "we went to the italian restaurant by the river",
        t(0),
    )
    .await;
    w.indexer().index_all(|_| {}).await.unwrap();
    let scopes = dm.visible_scopes(w.alice);
    let r = w.retriever();
    // t(0) is Monday 2026-11-02; "last week" is Oct 26 – Nov 1.
    let last_week = r
        .search(
            "which restaurant did we go to last week?",
            &scopes,
            None,
            t(1),
            2,
        )
        .await
        .unwrap();
    assert_eq!(
        last_week[0].message.text,
        "we went to the italian restaurant downtown"
    );
    assert!(last_week[0].in_window);
    let today = r
        .search(
            "which restaurant did we go to today?",
            &scopes,
            None,
            t(1),
            2,
        )
        .await
        .unwrap();
    assert_eq!(
        today[0].message.text,
        "we went to the italian restaurant by the river"
    );
}

/// A message sent in the days after a named time that tells about it ("yesterday we tried …",
/// sent the day after) counts as from that time; one of those days that does not stays out.
async fn a_time_told_about_later_counts_as_that_time(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let dm = w.dm(w.alice);
    // t(0) is Monday 2026-11-02 09:00: t(-23) is Sunday 1 November, the day after the 31st.
    let told = "yesterday we tried the italian restaurant downtown";
    let other = "we tried the italian restaurant by the river";
    let later = "last month we tried the italian restaurant near the station";
    w.say(&dm, w.alice, "told", told, t(-23)).await;
    w.say(&dm, w.alice, "other", other, t(-22)).await;
    w.say(&dm, w.alice, "later", later, t(-21)).await;
    w.indexer().index_all(|_| {}).await.unwrap();
    let found = w
        .retriever()
        .search(
            "which italian restaurant did we try on 31 October?",
            &dm.visible_scopes(w.alice),
            None,
            t(24 * 4),
            3,
        )
        .await
        .unwrap();
    let in_window = |text: &str| {
        found
            .iter()
            .find(|r| r.message.text == text)
            .map(|r| r.in_window)
    };
    assert_eq!(found[0].message.text, told);
    assert_eq!(in_window(told), Some(true));
    // Same days, same words, no time (or another) named: not from the 31st.
    assert_eq!(in_window(other), Some(false));
    assert_eq!(in_window(later), Some(false));
    // A question with no word of them finds the one told about the 31st by its time alone
    // (no vectors here, so only the messages of that time can bring it).
    let by_time = Retriever::new(w.store.clone(), None, w.settings())
        .search(
            "what did we do on 31 October?",
            &dm.visible_scopes(w.alice),
            None,
            t(24 * 4),
            3,
        )
        .await
        .unwrap();
    let texts: Vec<&str> = by_time.iter().map(|r| r.message.text.as_str()).collect();
    assert_eq!(texts, [told]);
}

/// "The week before the trip": the time is read from the message that tells of the trip, in
/// the asked scopes, not from a question about it, a bot's words or the question itself (stored
/// before it is answered, with the bot's name), and its messages are found by that time alone.
/// "My trip" is told of by the asker only: another member cannot move it.
async fn a_time_named_by_an_event_is_read_from_the_event(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let general = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let (engram, _) = w.engram_and_another_bot().await;
    // t(0) is Monday 2 November 09:00; the trip began on Monday 26 October.
    let trip = "Off to Lisbon, the trip starts today";
    let backpack = "got a red backpack at the mall";
    let boots = "this week I will buy hiking boots";
    w.say(&general, w.alice, "trip", trip, t(-24 * 7)).await;
    w.say(&general, w.alice, "backpack", backpack, t(-24 * 10))
        .await;
    w.say(&general, w.alice, "boots", boots, t(-24 * 20)).await;
    // What could be read as the trip's time, and is not: a question, the bot's words, another
    // guild's trip (out of the asked scopes) and the question itself.
    w.say(&general, w.bob, "q", "how was the trip?", t(-24 * 30))
        .await;
    w.said(
        &general,
        engram,
        true,
        "bot",
        "Have a great trip!",
        t(-24 * 35),
    )
    .await;
    let elsewhere = w.channel(w.guild_b, "general", Privacy::GuildPublic);
    w.say(
        &elsewhere,
        w.bob,
        "b",
        "the trip, the trip, trip starts",
        t(-24 * 40),
    )
    .await;
    let question = "tell me what I got the week before the trip";
    let addressed = format!("@Engram {question}");
    w.say(&general, w.alice, "ask", &addressed, t(0)).await;
    w.indexer().index_all(|_| {}).await.unwrap();

    let found = |share: f64, question: &'static str| {
        let mut settings = w.settings();
        settings.event_time_share = share;
        let retriever = Retriever::new(w.store.clone(), None, settings);
        let scopes = general.visible_scopes(w.alice);
        async move {
            let found = retriever
                .search(question, &scopes, Some(w.alice), t(0), 10)
                .await
                .unwrap();
            found
                .into_iter()
                .map(|r| (r.message.text, r.in_window))
                .collect::<Vec<_>>()
        }
    };
    let with = found(1.0, question).await;
    // The backpack shares no word with the question: only its time brings it.
    assert!(with.contains(&(backpack.to_string(), true)), "{with:?}");
    assert!(with.contains(&(boots.to_string(), false)), "{with:?}");
    // With no weight on the list of that time's messages, being from it still counts.
    let mut settings = w.settings();
    settings.window_weight = 0.0;
    let by_words = Retriever::new(w.store.clone(), None, settings)
        .search(
            "the red backpack I got the week before the trip",
            &general.visible_scopes(w.alice),
            Some(w.alice),
            t(0),
            10,
        )
        .await
        .unwrap();
    let marked: Vec<(&str, bool)> = by_words
        .iter()
        .map(|r| (r.message.text.as_str(), r.in_window))
        .collect();
    assert!(marked.contains(&(backpack, true)), "{marked:?}");
    // Without reading times named by events it is not found (the positive control).
    let without = found(0.0, question).await;
    assert!(
        without.iter().all(|(text, _)| text != backpack),
        "{without:?}"
    );
    assert!(without.iter().any(|(text, _)| text == boots), "{without:?}");
    // An event nothing tells of names no time.
    let nothing = found(1.0, "what did I get the week after the wedding").await;
    assert!(
        nothing.iter().all(|(_, in_window)| !in_window),
        "{nothing:?}"
    );
    // Nor does one told of on days far apart: it is no one event.
    for (i, days) in [3, 12, 25].into_iter().enumerate() {
        let text = ["yoga class today", "yoga class again", "another yoga class"][i];
        w.say(&general, w.alice, &format!("y{i}"), text, t(-24 * days))
            .await;
        let before = t(-24 * days - 20);
        w.say(
            &general,
            w.alice,
            &format!("n{i}"),
            "a new water bottle",
            before,
        )
        .await;
    }
    w.indexer().index_all(|_| {}).await.unwrap();
    let habit = found(1.0, "what did I get the day before yoga class").await;
    assert!(habit.iter().all(|(_, in_window)| !in_window), "{habit:?}");

    // Nor does a question stored that names a time by another event ("the Lisbon trip").
    let reordered = "@Engram tell me what I got the week before the Lisbon trip";
    w.say(&general, w.alice, "ask2", reordered, t(0)).await;
    w.indexer().index_all(|_| {}).await.unwrap();
    let lisbon = found(1.0, "tell me what I got the week before the trip to Lisbon").await;
    assert!(lisbon.contains(&(backpack.to_string(), true)), "{lisbon:?}");

    // Bob tells of his own trip, days from Alice's: the trip is no one event now ...
    let bobs = "my trip, my trip starts today";
    w.say(&general, w.bob, "bobs", bobs, t(-24 * 45)).await;
    w.indexer().index_all(|_| {}).await.unwrap();
    let theirs = found(1.0, question).await;
    assert!(
        theirs.iter().all(|(text, _)| text != backpack),
        "{theirs:?}"
    );
    // ... but Alice's is still hers.
    let hers = found(1.0, "tell me what I got the week before my trip").await;
    assert!(hers.contains(&(backpack.to_string(), true)), "{hers:?}");
}

/// Someone else's question shares the words of a question asked now, but the answer is in the
/// reply: others' messages that mostly ask are discounted (`question_discount`), the asker's
/// own are not (what they asked tells about them).
async fn others_questions_yield_to_their_answers(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let asked = "Nice mod! What other programming languages have you worked with?";
    let answer = "Python and C++ mostly. I built a website and a few game mods.";
    w.say(&public, w.bob, "q", asked, t(1)).await;
    w.say(&public, w.alice, "a", answer, t(1)).await;
    for i in 0..5 {
        w.say(&public, w.bob, &format!("n{i}"), "lunch plans", t(2))
            .await;
    }
    let top = |discount: f64, asker: Option<PersonId>| {
        let mut settings = w.settings();
        settings.question_discount = discount;
        let question = "What programming languages has Alice worked with?";
        w.top_without_vectors(settings, &public, question, asker)
    };
    // Without the discount the question wins on its words; with it, the answer.
    assert_eq!(top(0.0, None).await, asked);
    assert_eq!(top(w.settings().question_discount, None).await, answer);
    // Asked by the one who asked it then: their own question stays first.
    assert_eq!(
        top(w.settings().question_discount, Some(w.bob)).await,
        asked
    );
}

/// "What did you recommend?" favours what Engram itself said, not another bot's words in the
/// same channel (a guild's music or moderation bot is a bot too, and not "you").
async fn what_you_said_is_engrams_not_another_bots(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let (engram, other) = w.engram_and_another_bot().await;
    let ours = "I recommended the sushi place on Main Street";
    let theirs = "I recommended the ramen place on Main Street";
    w.said(&public, engram, true, "e", ours, t(1)).await;
    w.said(&public, other, true, "o", theirs, t(1)).await;
    // Stored under Engram's account but not as the bot's (no platform, API or console
    // account may be it): not its words either.
    let posing = "I recommended the noodle place on Main Street, my place of places";
    w.said(&public, engram, false, "p", posing, t(1)).await;
    let top = |speaker_weight: f64| {
        let mut settings = w.settings();
        settings.speaker_weight = speaker_weight;
        let question = "Which place did you recommend?";
        w.top_without_vectors(settings, &public, question, Some(w.alice))
    };
    assert_eq!(top(w.settings().speaker_weight).await, ours);
    // Positive control: without the bonus Engram's own words do not win.
    assert_ne!(top(0.0).await, ours);
}

/// Asked what the bot said, Engram's own questions keep their score (what it asked is what
/// it said), while another bot's question is discounted like anyone's.
async fn engrams_own_questions_are_what_it_said(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let (engram, other) = w.engram_and_another_bot().await;
    let ours = "Did you try the sushi place on Main Street that I recommended?";
    let theirs = "Did you try the ramen place on Main Street that I recommended?";
    w.said(&public, engram, true, "e", ours, t(1)).await;
    w.said(&public, other, true, "o", theirs, t(1)).await;
    let top = |discount: f64| {
        let mut settings = w.settings();
        settings.question_discount = discount;
        // No bonus for who said it: only the discount tells them apart.
        settings.speaker_weight = 0.0;
        let question = "Which place did you recommend?";
        w.top_without_vectors(settings, &public, question, Some(w.alice))
    };
    assert_eq!(top(w.settings().question_discount).await, ours);
    // Positive control: without the discount the newer one wins the tie.
    assert_eq!(top(0.0).await, theirs);
}

async fn words_side_by_side_are_favoured(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let apart = "school starts high up";
    let together = "I loved my high school years: the debate team, the long bus rides home";
    w.say(&public, w.alice, "1", apart, t(1)).await;
    w.say(&public, w.alice, "2", together, t(1)).await;
    for i in 0..5 {
        w.say(&public, w.bob, &format!("n{i}"), "lunch plans", t(1))
            .await;
    }
    let top = |phrase_weight: f64| {
        let mut settings = w.settings();
        settings.phrase_weight = phrase_weight;
        let question = "going to my high school reunion?";
        w.top_without_vectors(settings, &public, question, Some(w.alice))
    };
    // Plain BM25 prefers the short message; the pair "high school" turns it round.
    assert_eq!(top(0.0).await, apart);
    assert_eq!(top(0.5).await, together);
}

/// Episode boundaries without vectors, exactly: a message off topic and back is no boundary
/// (hysteresis), two in a row start an episode at the first of them, even across indexer
/// batches; a marker starts one at once; a pause starts one. Replaced episodes close at once.
async fn episodes_begin_at_topic_shifts_and_markers(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let script = [
        "the garden tomatoes need more water this summer",
        "water the tomatoes in the garden every morning",
        "garden tomatoes grow faster with morning water",
        // Off topic once, then back: no boundary.
        "my laptop battery drains quickly these days",
        "tomatoes in the garden love morning water",
        // Off topic twice: the episode starts at the first (the second is in the next batch).
        "the football match tonight starts late",
        "football tickets for the match tonight sold out",
        "tonight the football match will be great",
        // A marker, on the same topic even: a new episode at once.
        "By the way, the football match tonight is on television",
    ];
    for (i, text) in script.iter().enumerate() {
        let who = if i % 2 == 0 { w.alice } else { w.bob };
        w.say(
            &public,
            who,
            &format!("m{i}"),
            text,
            t(0) + Duration::minutes(i as i64),
        )
        .await;
    }
    // Two hours later: a pause.
    w.say(
        &public,
        w.alice,
        "late",
        "football highlights later tonight",
        t(2),
    )
    .await;
    let indexer = Indexer::new(
        w.store.clone(),
        None,
        w.clock.clone(),
        w.settings(),
        Config::defaults().episodes.topic_rules(),
        6,
    );
    indexer.index_all(|_| {}).await.unwrap();
    let mut messages = w
        .store
        .recent_messages(w.guild_a, "general", None, 100)
        .await
        .unwrap();
    messages.sort_by_key(|m| (m.sent_at, m.id));
    let mut runs: Vec<(i64, Vec<usize>)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let ep = m.episode.expect("indexed");
        match runs.last_mut() {
            Some((e, v)) if *e == ep => v.push(i),
            _ => runs.push((ep, vec![i])),
        }
    }
    let parts: Vec<Vec<usize>> = runs.iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(
        parts,
        vec![vec![0, 1, 2, 3, 4], vec![5, 6, 7], vec![8], vec![9]],
        "episodes: {runs:?}"
    );
    let ids: Vec<i64> = runs.iter().map(|(e, _)| *e).collect();
    let episodes = w.store.episodes(&ids).await.unwrap();
    let started: Vec<&str> = ids
        .iter()
        .map(|id| {
            episodes
                .iter()
                .find(|e| e.id == *id)
                .unwrap()
                .started_by
                .as_str()
        })
        .collect();
    assert_eq!(started, vec!["gap", "topic", "marker", "gap"]);
    let counts: Vec<i64> = ids
        .iter()
        .map(|id| episodes.iter().find(|e| e.id == *id).unwrap().messages)
        .collect();
    assert_eq!(
        counts,
        vec![5, 3, 1, 1],
        "the moved message is counted where it went"
    );
    // The clock is at the start: only the replaced episodes are due to close.
    assert_eq!(indexer.close_episodes().await.unwrap(), 2);
    let closed: Vec<bool> = w
        .store
        .episodes(&ids)
        .await
        .unwrap()
        .iter()
        .map(|e| e.closed)
        .collect();
    assert_eq!(closed, vec![true, true, false, false]);
}

/// A file's text is no turn of the conversation: the pieces of a long file on another topic
/// never start an episode, and the boundaries are the same however the indexer's batches fall
/// (before, pieces indexed in the same batch filled the topic's window, while a batch that
/// began after them rebuilt the topic without them).
async fn a_files_text_never_moves_an_episode_boundary(s: Arc<dyn Store>) {
    for batch in [64, 4] {
        let w = World::new(s.clone()).await;
        let public = w.channel(w.guild_a, &format!("files{batch}"), Privacy::GuildPublic);
        let garden = [
            "the garden tomatoes need more water this summer",
            "water the tomatoes in the garden every morning",
            "garden tomatoes grow faster with morning water",
        ];
        for (i, text) in garden.iter().enumerate() {
            w.say(
                &public,
                w.alice,
                &format!("g{batch}.{i}"),
                text,
                t(0) + Duration::minutes(i as i64),
            )
            .await;
        }
        // A file on football, in twelve pieces, carried by a message on the garden.
        let at = t(0) + Duration::minutes(3);
        let message = |ext: String, text: String| NewMessage {
            space: public.space,
            channel: public.channel.clone(),
            scope: public.home_scope(),
            privacy: public.privacy,
            author: w.bob,
            is_bot: false,
            is_command: false,
            external_id: ext,
            reply_to: None,
            language: engram::domain::language::detect(&text),
            text,
            sent_at: at,
            withheld: false,
        };
        let file = engram::store::NewAttachment {
            scope: public.home_scope(),
            sha256: format!("{batch:064}"),
            kind: "file".into(),
            name: "league.txt".into(),
            mime: "text/plain".into(),
            size: 100,
            at,
        };
        let compose = |ids: &[i64]| {
            let carrier = message(
                format!("f{batch}"),
                format!("tomatoes for the garden, see\n[file#{} league.txt]", ids[0]),
            );
            let pieces = (0..12)
                .map(|n| {
                    let mut piece = message(
                        format!("f{batch}#a{}.{n}", ids[0]),
                        format!("[file#{} league.txt, part {}/12] football match tickets league goals striker referee stadium {n}", ids[0], n + 1),
                    );
                    piece.is_command = true;
                    piece
                })
                .collect();
            (carrier, pieces)
        };
        w.store
            .insert_with_attachments(&[file], &compose, &[])
            .await
            .unwrap();
        for (i, text) in [
            "tomatoes in the garden love morning water",
            "morning water keeps the garden tomatoes green",
            "the garden needs water for the tomatoes",
        ]
        .iter()
        .enumerate()
        {
            w.say(
                &public,
                w.alice,
                &format!("h{batch}.{i}"),
                text,
                at + Duration::minutes(1 + i as i64),
            )
            .await;
        }
        let indexer = Indexer::new(
            w.store.clone(),
            None,
            w.clock.clone(),
            w.settings(),
            Config::defaults().episodes.topic_rules(),
            batch,
        );
        indexer.index_all(|_| {}).await.unwrap();
        let episodes: std::collections::BTreeSet<i64> = w
            .store
            .recent_messages(w.guild_a, &public.channel, None, 100)
            .await
            .unwrap()
            .iter()
            .map(|m| m.episode.expect("indexed"))
            .collect();
        assert_eq!(episodes.len(), 1, "batches of {batch}: {episodes:?}");
    }
}

/// A question that names someone in the space is embedded once, already in that person's
/// first person ("What did I adopt?"), while BM25 runs, once the people who wrote in the asked
/// scopes are known (read beside the first question's search, which costs the second
/// embedding as before). A name known only from the hits (a newcomer since the authors were
/// read) costs a second embedding; the authors of one set of scopes never shape a question
/// asked in another.
async fn a_question_is_embedded_once_in_the_named_persons_first_person(s: Arc<dyn Store>) {
    let (fake, w) = with_fake_embedder(s).await;
    let general = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let elsewhere = w.channel(w.guild_b, "general", Privacy::GuildPublic);
    let person = |n: &'static str| {
        let s = w.store.clone();
        async move { s.resolve_person(Platform::Discord, n, n).await.unwrap() }
    };
    let (carol, dave) = (person("carol").await, person("dave").await);
    w.say(
        &general,
        w.alice,
        "n1",
        "I adopted a puppy named Rex last week",
        t(1),
    )
    .await;
    w.say(&general, w.bob, "n2", "Congrats on the new pup!", t(1))
        .await;
    w.say(&elsewhere, dave, "n3", "I repaired the old bicycle", t(1))
        .await;
    w.indexer().index_all(|_| {}).await.unwrap();
    let retriever = w.retriever();
    let asked = |question: &'static str, place: &Place| {
        let (retriever, fake, scopes) = (&retriever, &fake, place.visible_scopes(w.bob));
        let now = t(2);
        async move {
            let before = fake.requests().len();
            let hits = retriever
                .search(question, &scopes, Some(w.bob), now, 5)
                .await
                .unwrap();
            let inputs: Vec<String> = fake.requests()[before..]
                .iter()
                .map(|r| r.body["input"][0].as_str().unwrap_or_default().to_string())
                .collect();
            (
                inputs,
                hits.into_iter().map(|h| h.message.text).collect::<Vec<_>>(),
            )
        }
    };
    // The first question in these scopes: as asked, then (its hits show Alice) as she would.
    let (inputs, hits) = asked("What did Alice adopt?", &general).await;
    assert_eq!(inputs, ["What did Alice adopt?", "What did I adopt?"]);
    assert!(
        hits.iter()
            .any(|h| h == "I adopted a puppy named Rex last week"),
        "{hits:?}"
    );
    // The authors are known now: once.
    let (inputs, _) = asked("What else did Alice adopt?", &general).await;
    assert_eq!(inputs, ["What else did I adopt?"]);
    // Naming no one: the question as asked.
    let (inputs, _) = asked("Where is the new pup from?", &general).await;
    assert_eq!(inputs, ["Where is the new pup from?"]);
    // Dave wrote only in another space: his name changes nothing here.
    let (inputs, _) = asked("What did Dave repair?", &general).await;
    assert_eq!(inputs, ["What did Dave repair?"]);
    // Nor do this space's authors change a question asked in that one (its authors known
    // too by the second time).
    for question in ["What did Alice adopt there?", "What did Alice buy there?"] {
        let (inputs, _) = asked(question, &elsewhere).await;
        assert_eq!(inputs, [question]);
    }
    let (inputs, _) = asked("What did Dave fix?", &elsewhere).await;
    assert_eq!(inputs, ["What did I fix?"]);
    // Carol writes after the authors were read: met in the hits, she costs a second call.
    w.say(
        &general,
        carol,
        "n4",
        "I planted tomatoes on the balcony",
        t(1),
    )
    .await;
    w.indexer().index_all(|_| {}).await.unwrap();
    let (inputs, hits) = asked("What did Carol plant?", &general).await;
    assert_eq!(inputs, ["What did Carol plant?", "What did I plant?"]);
    assert!(
        hits.iter()
            .any(|h| h == "I planted tomatoes on the balcony"),
        "{hits:?}"
    );
    // The authors are read again after a forget (which clears them): then once.
    retriever.forget_cached();
    asked("What did Carol grow?", &general).await;
    let (inputs, _) = asked("What else did Carol plant?", &general).await;
    assert_eq!(inputs, ["What else did I plant?"]);
}

/// A world whose questions and messages are embedded by a fake server's model.
async fn with_fake_embedder(s: Arc<dyn Store>) -> (engram::llm::fake::FakeLlmServer, World) {
    let fake = engram::llm::fake::FakeLlmServer::start().await.unwrap();
    let mut config = Config::defaults().embed;
    config.provider = "openai".into();
    config.base_url = fake.base_url();
    let embedder: SharedEmbedder =
        Arc::new(engram::embed::OpenAiEmbedder::new(&config, Some("sk-test".into())).unwrap());
    let mut w = World::new(s).await;
    w.embedder = Some(embedder);
    (fake, w)
}

/// A question's vector is cached (the same question again costs no model call), but not one
/// whose embedding was under way when a forget dropped the caches: the question may quote what
/// was forgotten. Asked again, it is embedded again; then cached (the control).
async fn a_question_vector_made_across_a_forget_is_not_cached(s: Arc<dyn Store>) {
    let (fake, w) = with_fake_embedder(s).await;
    let general = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    w.say(&general, w.alice, "n1", "my locker code is 4512", t(1))
        .await;
    w.indexer().index_all(|_| {}).await.unwrap();
    let retriever = w.retriever();
    let scopes = general.visible_scopes(w.bob);
    let question = "what is the code 4512 for?";
    let embedded = |fake: &engram::llm::fake::FakeLlmServer| {
        fake.requests()
            .iter()
            .filter(|r| r.body["input"][0].as_str() == Some(question))
            .count()
    };
    let ask = || retriever.search(question, &scopes, Some(w.bob), t(2), 5);
    // The model holds the question's embedding while the caches are dropped.
    let seen = fake.total();
    fake.hold_after(0);
    let (hits, ()) = tokio::join!(ask(), async {
        fake.wait_seen(seen + 1, std::time::Duration::from_secs(20))
            .await;
        retriever.forget_cached();
        fake.release();
    });
    hits.unwrap();
    assert_eq!(embedded(&fake), 1);
    ask().await.unwrap();
    assert_eq!(
        embedded(&fake),
        2,
        "a vector made across the forget was cached"
    );
    ask().await.unwrap();
    assert_eq!(embedded(&fake), 2, "the control: cached since");
}

/// Between people the answer is often a turn or two after the best match: people's messages
/// next to the best results take a share of their scores (`neighbour_top`), the bot's neither
/// lift nor are lifted, and nothing comes from a scope the asker cannot see.
async fn an_answer_near_the_best_match_is_found(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let public = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let answer = "A year ago in Paris, from a breeder near the river.";
    let opening = "Meet my snake Seraphim! She sleeps all day.";
    w.say(&public, w.alice, "1", opening, t(1)).await;
    w.say(&public, w.bob, "2", "Wow, where did you get her?", t(1))
        .await;
    // In the same channel, of a restricted scope, between the question and the answer: never
    // near anything public (the answer after it, public, is the positive control).
    let staff = w.channel(w.guild_a, "general", Privacy::ChannelRestricted);
    let hidden = "Last spring in Rome, from the staff's own breeder.";
    w.say(&staff, w.bob, "h", hidden, t(1)).await;
    w.say(&public, w.alice, "3", answer, t(1)).await;
    // The same exchange with the bot answering: its answer is not lifted.
    let (engram, _) = w.engram_and_another_bot().await;
    let bots = w.channel(w.guild_a, "bots", Privacy::GuildPublic);
    let bot_answer = "From a breeder in Lyon, I believe.";
    w.say(&bots, w.alice, "4", "My snake Seraphim is shedding.", t(2))
        .await;
    w.said(&bots, engram, true, "5", "Where did you buy her?", t(2))
        .await;
    w.said(&bots, engram, true, "6", bot_answer, t(2)).await;
    // Other matches of the question's words, each alone.
    for (i, text) in [
        "Where can I buy a cheap lamp?",
        "Alice, did you buy the tickets?",
        "buy buy",
    ]
    .iter()
    .enumerate()
    {
        w.say(&public, w.bob, &format!("f{i}"), text, t(10 + i as i64 * 2))
            .await;
    }
    let (w, public) = (&w, &public);
    // Every result's text and score, best first, as many as a reply takes.
    let found = |top: usize| {
        let mut settings = w.settings();
        settings.neighbour_top = top;
        let question = "Where did Alice buy her snake Seraphim?";
        w.scored_without_vectors(settings, public, question, Some(w.bob))
    };
    let score = |found: &[(String, f64)], text: &str| {
        found.iter().find(|(t, _)| t == text).map(|(_, s)| *s)
    };
    let lifted = found(w.settings().neighbour_top).await;
    let plain = found(0).await;
    // Found two turns after the best match; without the lift, not at all (positive control).
    assert!(score(&lifted, answer).is_some(), "{lifted:?}");
    assert_eq!(score(&plain, answer), None, "{plain:?}");
    // The bot's answer keeps the score it has without the lift (its neighbour's words give it
    // one: the context of the BM25 list), and the restricted channel is never read.
    let bots_own = score(&plain, bot_answer);
    assert!(bots_own.is_some(), "{plain:?}");
    assert_eq!(score(&lifted, bot_answer), bots_own);
    assert_eq!(score(&lifted, hidden), None);
}

/// A short turn takes a share of the score of the hit before it in its channel ("Yes! Last
/// Friday." after the hiking it answers), when that hit is among the best `context_hits`
/// BM25 hits, whose neighbours are read (the lift of `neighbour_top` off).
async fn a_short_turn_is_found_by_the_words_it_answers(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let general = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let random = w.channel(w.guild_a, "random", Privacy::GuildPublic);
    let short = "Yes! Last Friday.";
    w.say(
        &general,
        w.alice,
        "1",
        "We went hiking in the Dolomites",
        t(1),
    )
    .await;
    w.say(&general, w.bob, "2", short, t(1)).await;
    // A better match alone, elsewhere: the hiking turn is BM25's second.
    w.say(
        &random,
        w.bob,
        "3",
        "hiking hiking Dolomites Dolomites",
        t(5),
    )
    .await;
    let (w, general) = (&w, &general);
    let found = |hits: usize, weight: f64| {
        let mut settings = w.settings();
        settings.context_hits = hits;
        settings.context_weight = weight;
        // Not lifted as the answer after a best match either: context alone.
        settings.neighbour_top = 0;
        let question = "Did we go hiking in the Dolomites?";
        async move {
            let found = w.scored_without_vectors(settings, general, question, Some(w.bob));
            found
                .await
                .into_iter()
                .map(|(text, _)| text)
                .collect::<Vec<_>>()
        }
    };
    let weight = w.settings().context_weight;
    let read = found(w.settings().context_hits, weight).await;
    assert!(read.contains(&short.to_string()), "{read:?}");
    assert!(found(2, weight).await.contains(&short.to_string()));
    // Only the best hit's neighbours read, or no context at all: the short turn has no words
    // of the question.
    let best_only = found(1, weight).await;
    assert!(!best_only.contains(&short.to_string()), "{best_only:?}");
    assert!(!found(2, 0.0).await.contains(&short.to_string()));
    assert!(
        best_only.len() >= 2,
        "the hits themselves stay: {best_only:?}"
    );
}

/// An embedder that counts the texts it embeds, as `inner` embeds them.
struct Counting {
    inner: SharedEmbedder,
    texts: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl engram::embed::Embedder for Counting {
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn identity(&self) -> engram::domain::ModelIdentity {
        self.inner.identity()
    }
    fn known_share(&self, text: &str) -> f64 {
        self.inner.known_share(text)
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, engram::embed::EmbedError> {
        let counted = std::sync::atomic::Ordering::SeqCst;
        self.texts.fetch_add(texts.len(), counted);
        self.inner.embed(texts).await
    }
}

/// A question in words the embedder hardly knows weighs its vectors less: German to the
/// English MiniLM (half its words known) with the list trusted in proportion, each message the
/// vectors alone found scores lower than with the list at full weight; Russian (none known)
/// is not embedded at all, and only BM25's finds remain. An English question's scores are
/// the same either way.
async fn vectors_weigh_less_on_words_the_model_does_not_know(s: Arc<dyn Store>) {
    let w = World::new(s).await;
    let Some(local) = w.embedder.clone() else {
        return;
    };
    let counting = Arc::new(Counting {
        inner: local,
        texts: Default::default(),
    });
    let embedder: SharedEmbedder = counting.clone();
    let embedded = || counting.texts.load(std::sync::atomic::Ordering::SeqCst);
    let dm = w.dm(w.alice);
    for (i, text) in [
        "Анна ходит на занятия испанским по средам и пятницам",
        "Игорь купил новый велосипед",
        "Jonas hat seine Führerscheinprüfung im Mai bestanden",
        "Wir fahren am Wochenende an die Ostsee",
        "I adopted a golden retriever puppy named Biscuit",
        "the quarterly tax forms are due soon",
    ]
    .iter()
    .enumerate()
    {
        w.say(&dm, w.alice, &i.to_string(), text, t(1)).await;
    }
    w.indexer().index_all(|_| {}).await.unwrap();
    let w = &w;
    // Each result's text, score, and whether the vectors found it, and BM25.
    let scored = |known: f64, question: &'static str| {
        let mut settings = w.settings();
        settings.vector_known_share = known;
        let retriever = Retriever::new(w.store.clone(), Some(embedder.clone()), settings);
        let scopes = w.dm(w.alice).visible_scopes(w.alice);
        async move {
            let found = retriever
                .search(question, &scopes, Some(w.alice), w.clock.now(), 10)
                .await
                .unwrap();
            found
                .into_iter()
                .map(|r| {
                    let score = (r.score * 1e9).round() as i64;
                    let lists = (r.vector_rank.is_some(), r.bm25_rank.is_some());
                    (r.message.text, (score, lists))
                })
                .collect::<std::collections::BTreeMap<_, _>>()
        }
    };
    type Found = std::collections::BTreeMap<String, (i64, (bool, bool))>;
    let by_vectors = |found: &Found| -> Vec<String> {
        let found = found
            .iter()
            .filter(|(_, (_, lists))| *lists == (true, false));
        found.map(|(t, _)| t.clone()).collect()
    };
    // Half the words known, trusted in proportion to a whole: each score lower.
    let german = "Wann hat Jonas seine Führerscheinprüfung bestanden?";
    let full = scored(0.0, german).await;
    let half = scored(1.0, german).await;
    assert!(!by_vectors(&full).is_empty(), "{full:?}");
    for text in by_vectors(&full) {
        assert!(half[&text].0 < full[&text].0, "{text}: {half:?} {full:?}");
    }
    // None known: the vectors find nothing; BM25's finds stay.
    let russian = "В какие дни недели у Анны занятия испанским языком?";
    let full = scored(0.0, russian).await;
    let before = embedded();
    let none = scored(0.5, russian).await;
    assert_eq!(embedded(), before, "not embedded");
    assert!(full.values().any(|(_, (vector, _))| *vector), "{full:?}");
    assert!(none.values().all(|(_, (vector, _))| !vector), "{none:?}");
    let lexical = "Анна ходит на занятия испанским по средам и пятницам";
    assert!(none[lexical].1.1, "{none:?}");
    // A name among the hits asks again as that person would: not when none of the question
    // is known (a search beside it, in a channel where Анна wrote). With the list trusted
    // fully, the same question is embedded.
    let anna = w.store.resolve_person(Platform::Discord, "anna", "Анна");
    let anna = anna.await.unwrap();
    let general = w.channel(w.guild_a, "general", Privacy::GuildPublic);
    let yoga = "Я хожу на йогу по вторникам";
    w.say(&general, anna, "g1", yoga, t(2)).await;
    let in_general = |known: f64| {
        let mut settings = w.settings();
        settings.vector_known_share = known;
        let retriever = Retriever::new(w.store.clone(), Some(embedder.clone()), settings);
        let scopes = general.visible_scopes(w.alice);
        async move {
            let question = "Что Анна говорила про йогу и вторники?";
            let found = retriever.search(question, &scopes, Some(w.alice), w.clock.now(), 10);
            let found = found.await.unwrap();
            found
                .into_iter()
                .map(|r| r.message.text)
                .collect::<Vec<_>>()
        }
    };
    let before = embedded();
    assert_eq!(in_general(0.5).await, [yoga]);
    assert_eq!(embedded(), before, "not embedded");
    assert_eq!(in_general(0.0).await, [yoga]);
    assert!(embedded() > before, "embedded");
    // All known: the same.
    let english = "what kind of dog do I have?";
    let full = scored(0.0, english).await;
    assert!(!by_vectors(&full).is_empty(), "{full:?}");
    let before = embedded();
    assert_eq!(scored(1.0, english).await, full);
    assert_eq!(embedded(), before + 1, "embedded");
}

/// A question whose language only lingua's n-grams tell (no function words) is searched in
/// that language, although the searches start in English before lingua answers: the German
/// question finds the German message only by German stems. Its English terms find nothing
/// (the control: a search left in English would miss it), and an English question of the
/// same kind is found as before.
async fn a_question_only_ngrams_tell_is_searched_in_their_language(s: Arc<dyn Store>) {
    use engram::domain::language::{self, Language, Quickly};
    let w = World::new(s).await;
    let dm = w.dm(w.alice);
    let german = "Jonas hat seine Führerscheinprüfungen endlich bestanden, sagt er";
    let english = "my sister finally passed her driving tests yesterday";
    w.say(&dm, w.alice, "1", german, t(1)).await;
    w.say(&dm, w.alice, "2", english, t(2)).await;
    let question = "Führerscheinprüfung bestanden?";
    let Quickly::ByNgrams(start) = language::detect_quickly(question) else {
        panic!("the function words told {question:?}: it must need the n-grams");
    };
    assert_eq!(start.detect(), Some(Language::German));
    assert_eq!(start.likely(), Some(Language::English));
    let in_english = engram::store::query_terms_in(question, 32, Some(Language::English));
    let scopes = dm.visible_scopes(w.alice);
    let found = w
        .store
        .search_messages(&scopes, &in_english, Bm25::default(), 10);
    assert!(
        found.await.unwrap().is_empty(),
        "English terms {in_english:?}"
    );
    let best = async |retriever: &Retriever, asked: &str| {
        let found = retriever.search(asked, &scopes, Some(w.alice), w.clock.now(), 10);
        let found = found.await.unwrap();
        found.into_iter().next().map(|r| r.message.text)
    };
    // The English one: the searches begun in English are the answer.
    let asked = "sister driving tests?";
    let Quickly::ByNgrams(start) = language::detect_quickly(asked) else {
        panic!("the function words told {asked:?}: it must need the n-grams");
    };
    assert_eq!(start.detect(), Some(Language::English));
    for retriever in [
        w.retriever(),
        Retriever::new(w.store.clone(), None, w.settings()),
    ] {
        assert_eq!(best(&retriever, question).await.as_deref(), Some(german));
        assert_eq!(best(&retriever, asked).await.as_deref(), Some(english));
    }
}

on_both_backends!(
    vectors_weigh_less_on_words_the_model_does_not_know,
    a_question_only_ngrams_tell_is_searched_in_their_language,
    an_answer_near_the_best_match_is_found,
    a_short_turn_is_found_by_the_words_it_answers,
    a_question_is_embedded_once_in_the_named_persons_first_person,
    a_question_vector_made_across_a_forget_is_not_cached,
    episodes_begin_at_topic_shifts_and_markers,
    a_files_text_never_moves_an_episode_boundary,
    words_side_by_side_are_favoured,
    privacy_filter_holds_for_every_way_to_leak,
    hostile_queries_give_results_or_nothing,
    bm25_parameters_are_settings,
    pending_messages_are_found_by_bm25_and_indexed_ones_by_meaning,
    episodes_split_on_pauses_and_merge_only_within_a_scope,
    a_named_time_is_favoured,
    a_time_told_about_later_counts_as_that_time,
    a_time_named_by_an_event_is_read_from_the_event,
    others_questions_yield_to_their_answers,
    what_you_said_is_engrams_not_another_bots,
    engrams_own_questions_are_what_it_said,
);
