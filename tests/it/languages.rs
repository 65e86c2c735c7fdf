//! Memory requests in the languages of `phrases/` (Russian, German, Spanish, French,
//! Portuguese), through the whole bot on SQLite and PostgreSQL, offline: a fact said with the
//! language's "remember" is kept word for word and shown by /memory; its "forget" takes it back
//! (answered with the language's yes when the bot asks); the same words without the phrase are
//! chatter. A community's own file adds a language.

use crate::common::*;

/// (remember …, forget …, yes, the fact) per language.
const SAID: [(&str, &str, &str, &str); 5] = [
    (
        "запомни, что я люблю зелёный чай",
        "забудь, что я люблю зелёный чай",
        "да",
        "я люблю зелёный чай",
    ),
    (
        "Merk dir, dass ich in Köln wohne",
        "Vergiss, dass ich in Köln wohne",
        "ja",
        "ich in Köln wohne",
    ),
    (
        "recuerda que mi perro se llama Toby",
        "olvida que mi perro se llama Toby",
        "sí",
        "mi perro se llama Toby",
    ),
    (
        "Souviens-toi que je joue du violon",
        "oublie que je joue du violon",
        "oui",
        "je joue du violon",
    ),
    (
        "lembre que eu trabalho no hospital",
        "esqueça que eu trabalho no hospital",
        "sim",
        "eu trabalho no hospital",
    ),
];

async fn remember_and_forget_in_five_languages(url: Option<String>) {
    let h = harness_on(url, false).await;
    for (i, (remember, forget, yes, fact)) in SAID.iter().enumerate() {
        let who = format!("person{i}");
        // Without the phrase it is chatter: nothing is kept.
        h.dm(&who, fact).await;
        let shown = h.dm(&who, "/memory").await;
        assert!(!shown.contains(fact), "{who}: kept chatter: {shown}");
        let reply = h.dm(&who, remember).await;
        assert!(reply.starts_with("Got it"), "{remember}: {reply}");
        let shown = h.dm(&who, "/memory").await;
        assert!(shown.contains(fact), "{remember}: {shown}");
        let reply = h.dm(&who, forget).await;
        let reply = if reply.contains("forgotten") {
            reply
        } else {
            h.dm(&who, yes).await
        };
        assert!(reply.contains("forgotten"), "{forget}: {reply}");
        let shown = h.dm(&who, "/memory").await;
        assert!(!shown.contains(fact), "{forget}: still shown: {shown}");
    }
}

/// In a group, the bot's question is answered by a plain "да" from the person it asked.
async fn a_plain_yes_in_another_language_answers_in_a_group(url: Option<String>) {
    let h = harness_on(url, false).await;
    let lab = group("lab");
    for fact in ["я люблю чай", "я играю в шахматы"] {
        let said = format!("Engram, запомни, что {fact}");
        let reply = h.say_in(&lab, "anna", &said).await.unwrap();
        assert!(reply.starts_with("Got it"), "{reply}");
    }
    let asked = h
        .say_in(&lab, "anna", "Engram, /memory forget чай")
        .await
        .unwrap();
    assert!(asked.contains("Reply \"yes\""), "{asked}");
    // Someone else's plain "да" is chatter.
    assert_eq!(h.say_in(&lab, "boris", "да").await, None);
    let done = h.say_in(&lab, "anna", "да").await.expect("answered");
    assert!(done.contains("forgotten 1"), "{done}");
    let shown = h.dm("anna", "/memory").await;
    assert!(
        !shown.contains("люблю чай") && shown.contains("шахматы"),
        "{shown}"
    );
}

/// A message that opens with a language's topic marker (from its phrases file: "übrigens" is
/// in no config) starts a new episode; the word in the middle of a message does not.
async fn a_marker_from_a_phrases_file_starts_an_episode(url: Option<String>) {
    let h = harness_on(url, false).await;
    let lab = group("lab");
    for said in [
        "wir planen das Sommerfest im Garten",
        "ich bringe übrigens den Grill mit",
        "der Garten braucht noch Lampions",
        "übrigens, mein Auto ist kaputt",
    ] {
        h.say_in(&lab, "klaus", said).await;
    }
    let clock: std::sync::Arc<dyn engram::domain::Clock> = h.clock.clone();
    let phrases = engram::app::phrases(&h.config).unwrap();
    engram::app::indexer(&h.config, h.store.clone(), None, clock, &phrases)
        .index_all(|_| {})
        .await
        .unwrap();
    let place = h.place(&lab, "klaus").await;
    let (episode, messages) = h
        .store
        .open_episode(place.space, &place.channel, &place.home_scope(), 50)
        .await
        .unwrap()
        .expect("an open episode");
    assert_eq!(episode.started_by, "marker");
    let texts: Vec<&str> = messages.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["übrigens, mein Auto ist kaputt"]);
    // The one before it held the rest, the mid-sentence "übrigens" included.
    let episodes = database_rows_at(&h.config.store.url)
        .await
        .into_iter()
        .filter(|r| r.starts_with("episodes: "))
        .count();
    assert_eq!(episodes, 2, "two episodes");
}

/// Conversation goes to the model with the person's words as they wrote them and the
/// instruction to answer in their language; a Russian speaker and a German one in one group
/// each get a request whose marked speaker line is theirs.
async fn the_model_is_asked_to_answer_in_the_speakers_language(url: Option<String>) {
    let h = harness_on(url, true).await;
    let lab = group("lab");
    for (who, said) in [
        ("olga", "Engram, как дела у нашего проекта?"),
        ("klaus", "Engram, wie läuft unser Projekt?"),
    ] {
        let reply = h.say_in(&lab, who, said).await;
        assert!(reply.is_some(), "{said}");
        let prompt = h.fake().prompts("reply").last().cloned().unwrap();
        let words = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("in the language of that message"),
            "{prompt}"
        );
        let asked = said.trim_start_matches("Engram, ");
        assert!(prompt.contains(asked), "{asked} not in {prompt}");
    }
}

/// A phrases file in `phrases.dir` adds a language the build does not have.
async fn a_community_file_adds_a_language(url: Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cs.toml"),
        "language = \"cs\"\nremember = [\"zapamatuj si, že\"]\n",
    )
    .unwrap();
    let phrases = dir.path().display().to_string();
    let h = Harness::build(false, |c| {
        if let Some(url) = url {
            c.store.url = url;
        }
        c.phrases.dir = phrases;
    })
    .await;
    let reply = h.dm("jana", "zapamatuj si, že mám ráda čaj").await;
    assert!(reply.starts_with("Got it"), "{reply}");
    assert!(h.dm("jana", "/memory").await.contains("mám ráda čaj"));
    // The built-in languages are still there.
    let reply = h.dm("jana", "запомни, что я из Праги").await;
    assert!(reply.starts_with("Got it"), "{reply}");
}

on_both_harnesses!(
    remember_and_forget_in_five_languages,
    a_community_file_adds_a_language,
    a_plain_yes_in_another_language_answers_in_a_group,
    a_marker_from_a_phrases_file_starts_an_episode,
    the_model_is_asked_to_answer_in_the_speakers_language,
);
