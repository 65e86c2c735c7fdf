//! Changing the embedding model, on SQLite and PostgreSQL, with the fake `/v1/embeddings`
//! server on 127.0.0.1 as two models of two sizes (384 and 256): search never compares the
//! new model's question with the old model's vectors, the new model embeds the backlog (newest
//! first) to 100%, a pass cut short by a crash goes on where it stopped without embedding
//! anything twice, the old vectors go, and the bot answers end to end on 256-dimension vectors.

use crate::common::*;
use engram::adapters::console::{ConsoleOptions, console_message};
use engram::config::{Config, Secrets};
use engram::domain::{MessageId, Scope};
use engram::embed::SharedEmbedder;
use engram::llm::fake::Behavior;
use engram::retrieval::{Backfill, Indexer, Retriever};
use engram::store::Store;
use std::sync::Arc;

/// The harness's config with the fake server's embeddings as `model` of `dims`.
fn with_model(h: &Harness, model: &str, dims: usize) -> (Config, SharedEmbedder) {
    let mut config = h.config.clone();
    config.embed.provider = "openai".into();
    config.embed.base_url = h.fake().base_url();
    config.embed.model = model.into();
    config.embed.dimensions = dims;
    let embedder = engram::app::embedder(&config, &Secrets::default())
        .unwrap()
        .expect("an embedder");
    (config, embedder)
}

/// The harness's config moved to `model` of `dims` (the fake server's), made the model in use:
/// with its embedder and how many messages it still lacks.
async fn switched_to(h: &Harness, model: &str, dims: usize) -> (Config, SharedEmbedder, i64) {
    let (config, embedder) = with_model(h, model, dims);
    let missing = engram::app::activate_vectors(h.store.as_ref(), Some(&embedder))
        .await
        .unwrap();
    (config, embedder, missing)
}

/// The bot's background indexer with `config`'s settings and `model`.
fn indexer_with(h: &Harness, config: &Config, model: &SharedEmbedder) -> Indexer {
    engram::app::indexer(
        config,
        h.store.clone(),
        Some(model.clone()),
        h.clock.clone(),
        &engram::domain::phrases::Phrases::built_in(),
    )
}

/// Five things Alice tells the bot in her private chat (each answered).
async fn alice_tells_five_things(h: &Harness) {
    for line in [
        "we went hiking in the alps last summer",
        "my sister plays the cello in an orchestra",
        "the garden needs new tomato plants",
        "I am reading a book about volcanoes",
        "our cat is called Pepper",
    ] {
        h.dm("alice", line).await;
    }
}

/// The texts the fake server was asked to embed for `model`, in order.
fn inputs_of(h: &Harness, model: &str) -> Vec<String> {
    h.fake()
        .requests()
        .iter()
        .filter(|r| r.task == "embeddings" && r.body["model"] == model)
        .flat_map(|r| match &r.body["input"] {
            serde_json::Value::Array(texts) => texts.clone(),
            one => vec![one.clone()],
        })
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect()
}

/// Indexes everything with `config`'s settings and `model` (the fake server's `name`), then
/// gives every text the server was asked to embed for it so far.
async fn indexed_texts(
    h: &Harness,
    config: &Config,
    model: &SharedEmbedder,
    name: &str,
) -> Vec<String> {
    indexer_with(h, config, model)
        .index_all(|_| {})
        .await
        .unwrap();
    inputs_of(h, name)
}

/// How many texts the fake server embedded for `model`.
fn embedded_by(h: &Harness, model: &str) -> usize {
    inputs_of(h, model).len()
}

/// (vector hits, all hits) of a search for `text` in `scope`.
async fn search(
    store: &Arc<dyn Store>,
    embedder: &SharedEmbedder,
    config: &Config,
    scope: &Scope,
    text: &str,
) -> (usize, usize) {
    let retriever = Retriever::new(
        store.clone(),
        Some(embedder.clone()),
        config.retrieval.clone(),
    );
    let found = retriever
        .search(
            text,
            std::slice::from_ref(scope),
            None,
            start_time() + chrono::Duration::days(1),
            10,
        )
        .await
        .unwrap();
    (
        found.iter().filter(|r| r.vector_rank.is_some()).count(),
        found.len(),
    )
}

async fn switching_models_never_mixes_vector_spaces(url: Option<String>) {
    let h = harness_on(url, true).await;
    alice_tells_five_things(&h).await;
    let alice = h.person("alice").await;
    let scope = Scope::Dm(alice);

    // Model A (384 dimensions) indexes everything.
    let (config_a, model_a, _) = switched_to(&h, "model-a", 384).await;
    let clock: Arc<dyn engram::domain::Clock> = h.clock.clone();
    let indexer_a = indexer_with(&h, &config_a, &model_a);
    let indexed = indexer_a.index_all(|_| {}).await.unwrap();
    // The conversation closes as an episodic memory with model A's vector.
    h.clock.advance(chrono::Duration::hours(2));
    assert!(indexer_a.close_episodes().await.unwrap() > 0);
    let near_episodes = |model: &SharedEmbedder, text: &str| {
        let (store, model, text, scope) = (
            h.store.clone(),
            model.clone(),
            text.to_string(),
            scope.clone(),
        );
        async move {
            let space = store.vector_space(&model.identity()).await.unwrap();
            let vector = model.embed(&[text]).await.unwrap().remove(0);
            let query = engram::domain::Embedding { space, vector };
            store
                .nearest_episodes(&[scope], &query, 5)
                .await
                .unwrap()
                .len()
        }
    };
    assert!(near_episodes(&model_a, "hiking in the alps").await > 0);
    let messages = h.store.vector_coverage().await.unwrap().messages as usize;
    assert_eq!(
        indexed, messages,
        "every message (with the bot's replies) indexed"
    );
    assert!(messages >= 10, "{messages}");
    // Positive control: model A's question finds model A's vectors.
    let (vector_hits, _) =
        search(&h.store, &model_a, &config_a, &scope, "hiking in the alps").await;
    assert!(vector_hits > 0);

    // The configuration moves to model B (256 dimensions): said at start, and the whole
    // history is B's backlog.
    let (config_b, model_b, missing) = switched_to(&h, "model-b", 256).await;
    assert_eq!(missing as usize, messages);
    // B's question is never compared with A's vectors: BM25 alone answers meanwhile.
    let (vector_hits, hits) =
        search(&h.store, &model_b, &config_b, &scope, "hiking in the alps").await;
    assert_eq!(vector_hits, 0, "no hit from model A's vectors");
    assert!(hits > 0, "BM25 still answers");
    assert_eq!(near_episodes(&model_b, "hiking in the alps").await, 0);

    // A pass over the backlog cut short after one batch (the process dies)...
    let small = Indexer::new(
        h.store.clone(),
        Some(model_b.clone()),
        clock.clone(),
        config_b.retrieval.clone(),
        config_b.episodes.topic_rules(),
        3,
    );
    assert_eq!(small.backfill_batch().await.unwrap(), Backfill::Embedded(3));
    drop(small);
    assert_eq!(
        embedded_by(&h, "model-b"),
        5,
        "three messages and the test's two questions"
    );
    let newest: Vec<MessageId> = {
        let coverage = h.store.vector_coverage().await.unwrap();
        let b = coverage
            .spaces
            .iter()
            .find(|s| s.model.model == "model-b")
            .unwrap();
        assert_eq!(b.vectors, 3);
        let all = h
            .store
            .vectors_missing(b.id, MessageId(i64::MAX), 1000)
            .await
            .unwrap();
        all.iter().map(|m| m.id).collect()
    };
    // ...newest first: what is left is the older part of the history.
    assert_eq!(newest.len(), messages - 3);
    assert!(newest.windows(2).all(|w| w[0] > w[1]));

    // ...goes on in the next process where it stopped: nothing is embedded twice.
    let again = indexer_with(&h, &config_b, &model_b);
    assert_eq!(again.index_all(|_| {}).await.unwrap(), messages - 3);
    assert_eq!(embedded_by(&h, "model-b"), messages + 2);
    assert_eq!(again.backfill_batch().await.unwrap(), Backfill::Done);

    // 100% B, and A's vectors are gone (embed.keep_old_vectors is off).
    let coverage = h.store.vector_coverage().await.unwrap();
    assert_eq!(coverage.spaces.len(), 1, "{coverage:?}");
    assert_eq!(coverage.spaces[0].model.model, "model-b");
    assert_eq!(coverage.spaces[0].model.dimensions, 256);
    assert_eq!(coverage.share(coverage.spaces[0].id), 1.0);
    let (vector_hits, _) =
        search(&h.store, &model_b, &config_b, &scope, "hiking in the alps").await;
    assert!(vector_hits > 0, "found by model B's vectors now");
    // The episode has its vector in B's space (the centroid of its messages' B vectors).
    let b = coverage.spaces[0].id;
    assert!(h.store.episodes_outside(b, 10).await.unwrap().is_empty());
    assert!(near_episodes(&model_b, "hiking in the alps").await > 0);

    // End to end on 256 dimensions: a bot with model B answers from the history.
    let built = engram::app::build_bot(
        &config_b,
        h.store.clone(),
        engram::app::chat_model(&config_b, &Secrets::default(), clock.clone()).unwrap(),
        Some(model_b.clone()),
        None,
        clock.clone(),
    )
    .unwrap();
    let question = console_message(
        &ConsoleOptions::private("alice"),
        "alice",
        "where did we go hiking?",
        9_999,
        h.clock.now(),
        false,
    );
    let reply = built.bot.handle(&question).await.unwrap();
    assert!(reply.is_some());
    let prompt = h
        .fake()
        .prompts("reply")
        .last()
        .cloned()
        .unwrap_or_default();
    assert!(prompt.contains("alps"), "{prompt}");
}

/// An operator keeps the old model's vectors to switch back: they stay once the new model
/// covers everything, and switching back finds them without embedding the history again.
async fn old_vectors_kept_on_request_serve_a_switch_back(url: Option<String>) {
    let h = harness_on(url, true).await;
    for line in ["the boat is blue", "we sail on sundays", "lunch was fish"] {
        h.dm("bob", line).await;
    }
    let (mut config_a, model_a) = with_model(&h, "model-a", 384);
    config_a.embed.keep_old_vectors = true;
    let (mut config_b, model_b) = with_model(&h, "model-b", 256);
    config_b.embed.keep_old_vectors = true;
    engram::app::activate_vectors(h.store.as_ref(), Some(&model_a))
        .await
        .unwrap();
    indexer_with(&h, &config_a, &model_a)
        .index_all(|_| {})
        .await
        .unwrap();
    let messages = h.store.vector_coverage().await.unwrap().messages as usize;
    engram::app::activate_vectors(h.store.as_ref(), Some(&model_b))
        .await
        .unwrap();
    indexer_with(&h, &config_b, &model_b)
        .index_all(|_| {})
        .await
        .unwrap();
    let coverage = h.store.vector_coverage().await.unwrap();
    assert_eq!(coverage.spaces.len(), 2, "both kept: {coverage:?}");
    assert!(coverage.spaces.iter().all(|s| coverage.share(s.id) == 1.0));
    let before = embedded_by(&h, "model-a");
    let missing = engram::app::activate_vectors(h.store.as_ref(), Some(&model_a))
        .await
        .unwrap();
    assert_eq!(missing, 0);
    let again = indexer_with(&h, &config_a, &model_a)
        .index_all(|_| {})
        .await
        .unwrap();
    assert_eq!(again, 0);
    assert_eq!(embedded_by(&h, "model-a"), before, "nothing embedded again");
    assert_eq!(messages, coverage.messages as usize);
}

/// The background indexer hears a stop after each round, and closes quiet episodes between
/// rounds: a model change's backlog (hours with an API model) holds up neither a shutdown nor
/// episodic memory. Stopped before it starts, it does one round: the new conversation is
/// indexed and closed, and most of the backlog waits for the next start.
async fn a_model_changes_backlog_holds_up_neither_a_stop_nor_episodes(url: Option<String>) {
    let h = harness_on(url, true).await;
    alice_tells_five_things(&h).await;
    let (config_a, model_a, _) = switched_to(&h, "model-a", 384).await;
    let clock: Arc<dyn engram::domain::Clock> = h.clock.clone();
    let indexer_a = indexer_with(&h, &config_a, &model_a);
    indexer_a.index_all(|_| {}).await.unwrap();
    let (config_b, model_b, missing) = switched_to(&h, "model-b", 256).await;
    assert!(missing >= 10, "{missing}");
    // A new conversation, quiet since: due to close once it is indexed.
    h.clock.advance(chrono::Duration::hours(3));
    h.dm("alice", "the train to Porto leaves at nine").await;
    h.clock.advance(chrono::Duration::hours(2));
    let indexer_b = Arc::new(Indexer::new(
        h.store.clone(),
        Some(model_b.clone()),
        clock.clone(),
        config_b.retrieval.clone(),
        config_b.episodes.topic_rules(),
        2,
    ));
    let (stop, stopped) = tokio::sync::watch::channel(true);
    // A guard, not a wait: a run that does not hear the stop never returns.
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        indexer_b
            .clone()
            .run_until(std::time::Duration::from_secs(3600), stopped),
    )
    .await
    .expect("the stop is heard after a round");
    drop(stop);
    let coverage = h.store.vector_coverage().await.unwrap();
    let b = coverage
        .spaces
        .iter()
        .find(|s| s.model.model == "model-b")
        .expect("model B's space");
    let share = coverage.share(b.id);
    assert!(
        share > 0.0 && share < 0.5,
        "one round of the backlog, not all of it: {share}"
    );
    let place = h.place(&ConsoleOptions::private("alice"), "alice").await;
    let newest = h
        .store
        .recent_messages(place.space, &place.channel, None, 50)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.text.contains("train to Porto"))
        .expect("the new message");
    let episode = newest.episode.expect("indexed in the first round");
    let closed = h.store.episodes(&[episode]).await.unwrap();
    assert!(closed[0].closed, "closed between rounds: {closed:?}");
    // Positive control: run on, it embeds the rest.
    assert!(indexer_b.index_all(|_| {}).await.unwrap() > 0);
    let coverage = h.store.vector_coverage().await.unwrap();
    assert_eq!(coverage.spaces.len(), 1, "{coverage:?}");
    assert_eq!(coverage.share(coverage.spaces[0].id), 1.0);
}

/// A model change's backlog waits when the embedding API fails or asks to wait (a 429's
/// Retry-After), as the indexer's own failed rounds do, instead of asking again every round;
/// new messages are indexed meanwhile. In the foreground (`index_all`, as `engram reindex`
/// runs it) a failed batch ends the run with the error instead of a partial "done".
async fn a_backlog_the_api_rate_limits_waits_as_asked(url: Option<String>) {
    let h = harness_on(url, true).await;
    alice_tells_five_things(&h).await;
    let (config_a, model_a, _) = switched_to(&h, "model-a", 384).await;
    indexer_with(&h, &config_a, &model_a)
        .index_all(|_| {})
        .await
        .unwrap();
    let (config_b, model_b, missing) = switched_to(&h, "model-b", 256).await;
    assert!(missing >= 10, "{missing}");
    // Two messages a batch: the backlog outlasts the rounds below.
    let indexer = Indexer::new(
        h.store.clone(),
        Some(model_b.clone()),
        h.clock.clone(),
        config_b.retrieval.clone(),
        config_b.episodes.topic_rules(),
        2,
    );
    let calls = || h.fake().total();

    // Rate-limited: "come back in a minute".
    h.fake().push_once(Behavior::RetryAfter("60".into()));
    let before = calls();
    assert_eq!(indexer.round().await.unwrap(), 0);
    assert_eq!(calls(), before + 1, "asked once");
    // Within the minute no round asks again, while a new message is indexed as usual.
    h.clock.advance(chrono::Duration::seconds(30));
    h.dm("alice", "the ferry to Lisbon leaves at noon").await;
    let before = calls();
    assert_eq!(
        indexer.round().await.unwrap(),
        2,
        "the new message and the answer"
    );
    assert_eq!(calls(), before + 1, "their own embedding only");
    h.clock.advance(chrono::Duration::seconds(29));
    let before = calls();
    assert_eq!(indexer.round().await.unwrap(), 0);
    assert_eq!(calls(), before, "the backlog still waits");
    // Positive control: past the minute the backlog goes on.
    h.clock.advance(chrono::Duration::seconds(2));
    assert!(indexer.round().await.unwrap() > 0, "the backlog again");

    // Failures in a row wait longer each time (2 s, then 4 s).
    h.fake().push_once(Behavior::Status(503));
    assert_eq!(indexer.round().await.unwrap(), 0);
    h.fake().push_once(Behavior::Status(503));
    h.clock.advance(chrono::Duration::seconds(2));
    assert_eq!(indexer.round().await.unwrap(), 0);
    h.clock.advance(chrono::Duration::seconds(3));
    let before = calls();
    assert_eq!(indexer.round().await.unwrap(), 0);
    assert_eq!(calls(), before, "the second pause is longer than the first");
    h.clock.advance(chrono::Duration::seconds(1));
    assert!(indexer.round().await.unwrap() > 0);

    // In the foreground the failure is the answer, not a silent partial pass.
    h.fake().push_once(Behavior::Status(503));
    let failed = indexer.index_all(|_| {}).await;
    assert!(
        matches!(
            failed,
            Err(engram::retrieval::IndexError::Embed(
                engram::embed::EmbedError::Http { status: 503, .. }
            ))
        ),
        "{failed:?}"
    );
    // Run again, it goes on to the end.
    indexer.index_all(|_| {}).await.unwrap();
    let coverage = h.store.vector_coverage().await.unwrap();
    assert_eq!(coverage.spaces.len(), 1, "{coverage:?}");
    assert_eq!(coverage.share(coverage.spaces[0].id), 1.0);
}

/// Between people, a turn of fewer than `context_vector_words_people` (50) words is embedded
/// with the turn before it (its own words first): in a group, "That is wonderful news…" is
/// about the puppy only with Alice's line. After the bot's reply only a message shorter than
/// `context_vector_words` (15) takes it (a long reply about many things would outweigh the
/// person's words), and the bot's reply takes the person's message before it on the same
/// terms. Forgetting the turn before makes the vector again without it. Set to 0, the
/// people's limit is off and the same turn is embedded alone.
async fn a_chat_turn_is_embedded_with_the_turn_before_it(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    let adopted = "we adopted a puppy from the shelter in Stamford last week";
    let answer = "That is wonderful news, what did you name him and how is he settling in \
                  with the rest of your family so far?";
    assert!((15..50).contains(&answer.split_whitespace().count()));
    assert_eq!(h.say_in(&lab, "alice", adopted).await, None);
    assert_eq!(h.say_in(&lab, "bob", answer).await, None);
    // In her private chat, each of Alice's lines comes after the bot's reply, and each reply
    // (a turn of 15 to 49 words too) after one of hers.
    let reply = "Thank you for telling me, I will keep that in mind the next time we talk \
                 about your family and your home";
    assert!((15..50).contains(&reply.split_whitespace().count()));
    h.fake().set_behavior(Behavior::Content(reply.into()));
    h.dm("alice", "our cat is called Pepper and she sleeps all day")
        .await;
    let medium = "I also wanted to tell you that my sister moved to Lisbon in the spring \
                  and she loves the food there";
    assert!((15..50).contains(&medium.split_whitespace().count()));
    h.dm("alice", medium).await;
    let short = "and she plays the cello";
    h.dm("alice", short).await;
    h.fake().set_behavior(Behavior::Smart);

    let (config, model, _) = switched_to(&h, "model-a", 384).await;
    let texts = indexed_texts(&h, &config, &model, "model-a").await;
    assert!(
        texts.contains(&format!("{answer}\n{adopted}")),
        "with the turn before it: {texts:#?}"
    );
    assert!(texts.contains(&medium.to_string()), "alone: {texts:#?}");
    assert!(
        texts.contains(&reply.to_string()),
        "the bot's reply: {texts:#?}"
    );
    assert!(
        !texts.iter().any(|t| t.starts_with(&format!("{reply}\n"))),
        "the bot's reply takes no person's turn: {texts:#?}"
    );
    assert!(
        texts.contains(&format!("{short}\n{reply}")),
        "a short message takes the bot's reply before it: {texts:#?}"
    );

    // Alice's line forgotten: Bob's turn is embedded again, alone.
    assert!(!texts.contains(&answer.to_string()), "{texts:#?}");
    let place = h.place(&lab, "alice").await;
    let said = h
        .store
        .recent_messages(place.space, &lab.channel, None, 50)
        .await
        .unwrap();
    let alices = said.iter().find(|m| m.text == adopted).unwrap();
    h.store.delete_messages(&[alices.id]).await.unwrap();
    let texts = indexed_texts(&h, &config, &model, "model-a").await;
    assert!(texts.contains(&answer.to_string()), "alone: {texts:#?}");

    let (mut config, model, _) = switched_to(&h, "model-b", 256).await;
    config.retrieval.context_vector_words_people = 0;
    let texts = indexed_texts(&h, &config, &model, "model-b").await;
    assert!(texts.contains(&answer.to_string()), "alone: {texts:#?}");
}

on_both_harnesses!(
    a_chat_turn_is_embedded_with_the_turn_before_it,
    a_backlog_the_api_rate_limits_waits_as_asked,
    a_model_changes_backlog_holds_up_neither_a_stop_nor_episodes,
    switching_models_never_mixes_vector_spaces,
    old_vectors_kept_on_request_serve_a_switch_back,
    a_text_the_model_refuses_holds_back_nothing,
);

/// `engram reindex` embeds the whole history with the configured model in the foreground and
/// says how far it got; a second model's run says the model changed; `engram status` shows each
/// model's share. A 512-dimension model through the binary, on both databases.
async fn reindex_and_status_through_the_binary(url: Option<String>) {
    let h = harness_on(url, true).await;
    for line in ["the boat is blue", "we sail on sundays", "lunch was fish"] {
        h.dm("bob", line).await;
    }
    let db = h.config.store.url.clone();
    let base = h.fake().base_url();
    let run = |args: &[&str], model: &str, dims: &str| {
        engram(
            h.dir.path(),
            args,
            "",
            &[
                ("ENGRAM__STORE__URL", db.as_str()),
                ("ENGRAM__EMBED__PROVIDER", "openai"),
                ("ENGRAM__EMBED__BASE_URL", base.as_str()),
                ("ENGRAM__EMBED__MODEL", model),
                ("ENGRAM__EMBED__DIMENSIONS", dims),
                ("ENGRAM_EMBED_API_KEY", "test-key"),
            ],
        )
    };
    let (out, err, ok) = run(&["reindex"], "model-c", "512");
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let messages = report["messages"].as_i64().unwrap();
    assert!(messages >= 6, "{report}");
    assert_eq!(report["embedded"].as_i64(), Some(messages), "{report}");
    assert_eq!(report["share_embedded"], 1.0, "{report}");
    assert_eq!(report["model"]["dimensions"], 512);
    assert!(!err.contains("the embedding model changed"), "{err}");
    assert_eq!(embedded_by(&h, "model-c"), messages as usize);

    // Another model: the run says so, and embeds everything again for it.
    let (out, err, ok) = run(&["reindex"], "model-d", "384");
    assert!(ok, "{err}");
    assert!(err.contains("the embedding model changed"), "{err}");
    assert!(err.contains("model-c") && err.contains("model-d"), "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["share_embedded"], 1.0, "{report}");

    let (out, err, ok) = run(&["status"], "model-d", "384");
    assert!(ok, "{err}");
    let status: serde_json::Value = serde_json::from_str(&out).unwrap();
    let models = status["vectors"]["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "model-c's vectors went: {status}");
    assert_eq!(models[0]["model"]["model"], "model-d");
    assert_eq!(models[0]["active"], true);
    assert_eq!(models[0]["share"], 1.0);
}

mod cli {
    on_both_harnesses!(reindex_and_status_through_the_binary);
    use super::*;
}

/// A text the embedding model refuses (a 400 for an input it cannot take) is kept without a
/// vector, searchable by BM25, and holds back nothing: the messages around it are embedded
/// and indexed in the same pass.
async fn a_text_the_model_refuses_holds_back_nothing(url: Option<String>) {
    let h = harness_on(url, true).await;
    h.fake().refuse_embedding_of("UNEMBEDDABLE");
    // Said in passing in a group (no answers), the refused one last: a short message is
    // embedded with the one before it.
    let lab = group("lab");
    for line in [
        "we went hiking in the alps last summer",
        "our cat is called Pepper",
        "UNEMBEDDABLE the zeppelin manual runs to nine hundred pages",
    ] {
        assert_eq!(h.say_in(&lab, "alice", line).await, None);
    }
    let scope = h.space_scope("lab").await;
    let (config, model, _) = switched_to(&h, "model-a", 384).await;
    let indexer = indexer_with(&h, &config, &model);
    let indexed = indexer.index_all(|_| {}).await.unwrap();
    assert!(indexed >= 3, "{indexed}");
    assert_eq!(h.store.unindexed_messages(100).await.unwrap(), vec![]);
    let (vector_hits, all) = search(&h.store, &model, &config, &scope, "hiking in the alps").await;
    assert!(vector_hits > 0 && all > 0, "the others have vectors");
    let (_, all) = search(&h.store, &model, &config, &scope, "zeppelin manual").await;
    assert!(all > 0, "the refused one is found by its words");
    // The refusal is kept: nothing is left for the model to embed, and it counts as done.
    let space = h.store.vector_space(&model.identity()).await.unwrap();
    let left = h
        .store
        .vectors_missing(space, MessageId(i64::MAX), 100)
        .await
        .unwrap();
    assert_eq!(left, vec![], "a refused text is not asked again");
    let coverage = h.store.vector_coverage().await.unwrap();
    assert_eq!(coverage.spaces[0].refused, 1, "{coverage:?}");
    assert_eq!(coverage.share(space), 1.0);

    // A new model that refuses it too still covers everything: the old model's vectors go
    // (one refused message used to keep them for good).
    let (config_b, model_b, _) = switched_to(&h, "model-b", 256).await;
    let indexer_b = indexer_with(&h, &config_b, &model_b);
    assert!(indexer_b.index_all(|_| {}).await.unwrap() > 0);
    let coverage = h.store.vector_coverage().await.unwrap();
    assert_eq!(
        coverage.spaces.len(),
        1,
        "model A's vectors went: {coverage:?}"
    );
    assert_eq!(coverage.spaces[0].model.model, "model-b");
    assert_eq!(coverage.spaces[0].refused, 1, "{coverage:?}");
    assert_eq!(coverage.share(coverage.spaces[0].id), 1.0);
    // Forgetting the refused message takes its refusal too.
    let zeppelin = h
        .store
        .recent_messages(h.place(&lab, "alice").await.space, &lab.channel, None, 50)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.text.contains("UNEMBEDDABLE"))
        .unwrap();
    h.store.delete_messages(&[zeppelin.id]).await.unwrap();
    let coverage = h.store.vector_coverage().await.unwrap();
    assert_eq!(coverage.spaces[0].refused, 0, "{coverage:?}");
    assert!(rows_of(&h, "vector_refusals", "").await.is_empty());

    // A model that refuses every text (a wrong setting, not the texts): nothing is kept as
    // refused, and model B's vectors stay.
    h.fake().refuse_embedding_of("");
    let (config_c, model_c, _) = switched_to(&h, "model-c", 128).await;
    let indexer_c = indexer_with(&h, &config_c, &model_c);
    indexer_c.index_all(|_| {}).await.unwrap();
    let coverage = h.store.vector_coverage().await.unwrap();
    assert!(
        rows_of(&h, "vector_refusals", "").await.is_empty(),
        "{coverage:?}"
    );
    assert!(
        coverage
            .spaces
            .iter()
            .any(|s| s.model.model == "model-b" && s.vectors > 0),
        "model B's vectors are kept: {coverage:?}"
    );
}
