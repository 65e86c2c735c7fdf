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

/// How the bot's confirmation of a fact kept (word for word: no model here) and its "done"
/// begin, per language of `SAID` (from the catalogues `phrases/*.ftl`).
const ANSWERED: [(&str, &str); 5] = [
    ("Понял, запомню (дословно", "Готово"),
    ("Alles klar, ich merke mir das (wörtlich", "Erledigt"),
    ("Entendido, lo recordaré (tal cual", "Hecho"),
    ("Compris, je m'en souviendrai (mot pour mot", "C'est fait"),
    ("Entendi, vou lembrar disso (ao pé da letra", "Pronto"),
];

async fn remember_and_forget_in_five_languages(url: Option<String>) {
    let h = harness_on(url, false).await;
    for (i, ((remember, forget, yes, fact), (kept, done))) in SAID.iter().zip(ANSWERED).enumerate()
    {
        let who = format!("person{i}");
        // Without the phrase it is chatter: nothing is kept.
        h.dm(&who, fact).await;
        let shown = h.dm(&who, "/memory").await;
        assert!(!shown.contains(fact), "{who}: kept chatter: {shown}");
        // Answered in the language it was said in.
        let reply = h.dm(&who, remember).await;
        assert!(reply.starts_with(kept), "{remember}: {reply}");
        let shown = h.dm(&who, "/memory").await;
        assert!(shown.contains(fact), "{remember}: {shown}");
        let reply = h.dm(&who, forget).await;
        let reply = if reply.starts_with(done) {
            reply
        } else {
            h.dm(&who, yes).await
        };
        assert!(reply.starts_with(done), "{forget}: {reply}");
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
        assert!(reply.starts_with("Понял, запомню"), "{reply}");
    }
    // A slash command is answered in the language its author last wrote in.
    let asked = h
        .say_in(&lab, "anna", "Engram, /memory forget чай")
        .await
        .unwrap();
    assert!(asked.contains("Ответьте «да»"), "{asked}");
    // Someone else's plain "да" is chatter.
    assert_eq!(h.say_in(&lab, "boris", "да").await, None);
    let done = h.say_in(&lab, "anna", "да").await.expect("answered");
    assert!(done.contains("забыто записей: 1"), "{done}");
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
    // The message answered names its language, even one too short to tell by ("ok"): the
    // speaker's last words that told. Another's message in the prompt names none.
    for (who, code) in [("olga", "ru"), ("klaus", "de")] {
        assert!(h.say_in(&lab, who, "Engram, ok").await.is_some());
        let prompt = h.fake().prompts("reply").last().cloned().unwrap();
        let named: Vec<&str> = prompt
            .lines()
            .filter(|l| l.contains("language=\""))
            .collect();
        assert_eq!(named.len(), 1, "{prompt}");
        assert!(
            named[0].contains("from=\"speaker\"")
                && named[0].contains(&format!("language=\"{code}\"")),
            "{who}: {prompt}"
        );
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
    std::fs::write(
        dir.path().join("cs.ftl"),
        "captured-word-for-word = Rozumím, zapamatuji si to doslova.\n",
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
    assert_eq!(reply, "Rozumím, zapamatuji si to doslova.");
    // What the community file does not say is said in English.
    let shown = h.dm("jana", "/memory").await;
    assert!(shown.contains("mám ráda čaj"), "{shown}");
    assert!(h.dm("jana", "zapamatuj si, že mám ráda čaj").await == "I already knew that.");
    // The built-in languages are still there.
    let reply = h.dm("jana", "запомни, что я из Праги").await;
    assert!(reply.starts_with("Понял, запомню"), "{reply}");
}

/// (who, what they said, a question with other forms of its words) per language, in one
/// mixed-language group.
const INFLECTED: [(&str, &str, &str); 6] = [
    (
        "olga",
        "Мы наконец переехали в Москву, квартира прямо у метро",
        "Кто теперь живёт в Москве?",
    ),
    (
        "jonas",
        "Ich habe mir gestern zwei Wohnungen in Leipzig angesehen",
        "Welche Wohnung hat Jonas besichtigt?",
    ),
    (
        "lucia",
        "Mis hermanas trabajan en un hospital de Valencia",
        "¿Dónde trabaja la hermana de Lucía?",
    ),
    (
        "claire",
        "On a voyagé en Bretagne avec les enfants",
        "Claire voyage où ?",
    ),
    (
        "joao",
        "Estou cozinhando feijoada para a família toda",
        "O que o João vai cozinhar?",
    ),
    (
        "tom",
        "I recommended three podcasts about gardening",
        "Which recommendations did Tom give?",
    ),
];

/// Search in each language meets other inflected forms of the words (the question's own forms
/// are not in the message), in a space where people write in six languages; each message is
/// stored with the language it was written in.
async fn search_meets_inflected_forms_in_each_language(url: Option<String>) {
    let h = harness_on(url, false).await;
    let intl = group("intl");
    for (who, said, _) in INFLECTED {
        assert_eq!(h.say_in(&intl, who, said).await, None);
    }
    // Distractors: the same languages, other topics, some of the same little words.
    for (who, said) in [
        ("olga", "В Казани сегодня дождь, а у нас солнце"),
        ("jonas", "Ich habe gestern zwei Stunden gelesen"),
        ("lucia", "Mi perro duerme en el sofá de la casa"),
        ("claire", "Les enfants sont à l'école avec leurs amis"),
        ("joao", "A família toda foi para a praia no domingo"),
        ("tom", "Three of my friends like gardening shows"),
    ] {
        h.say_in(&intl, who, said).await;
    }
    // Each message keeps the language it was written in.
    let languages: std::collections::BTreeMap<String, i64> = h
        .store
        .message_languages()
        .await
        .unwrap()
        .into_iter()
        .map(|(code, n)| (code.unwrap_or_default(), n))
        .collect();
    for code in ["ru", "de", "es", "fr", "pt", "en"] {
        assert_eq!(languages.get(code), Some(&2), "{code}: {languages:?}");
    }
    let words = |t: &str| {
        t.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() > 3)
            .map(str::to_string)
            .collect::<std::collections::HashSet<_>>()
    };
    // Asked by someone who said nothing there (the asker's own messages would be favoured).
    h.dm("zoe", "hi").await;
    let asker = h.person("zoe").await;
    let place = h.place(&intl, "zoe").await;
    for (_, said, question) in INFLECTED {
        // The long words of the question are not in the message as such: only stems meet.
        assert!(words(question).is_disjoint(&words(said)), "{question}");
        let found = search_texts(&h, &place, asker, question).await;
        assert_eq!(
            found.first().map(String::as_str),
            Some(said),
            "{question}: {found:?}"
        );
    }
}

/// One group, three languages: each person is answered in theirs, a slash command in the
/// language they last wrote in, and someone who never wrote anything in English.
async fn each_person_is_answered_in_their_language(url: Option<String>) {
    let h = harness_on(url, false).await;
    let lab = group("lab");
    // Each sees MEMORY.md's headings in their language (the file's own in English), and the
    // same liking is filed under preferences whatever the language it was said in.
    for (who, said, kept, only_here, headings) in [
        (
            "olga",
            "Engram, запомни, что я люблю зелёный чай",
            "Понял, запомню",
            "(Только то, что можно показать в этом канале",
            "# Память\n\n## Предпочтения\n",
        ),
        (
            "klaus",
            "Engram, merk dir, dass ich grünen Tee mag",
            "Alles klar, ich merke mir das",
            "(Nur was in diesem Kanal gezeigt werden darf",
            "# Gedächtnis\n\n## Vorlieben\n",
        ),
        (
            "tom",
            "Engram, remember that I like green tea",
            "Got it, I'll remember that",
            "(Only what may be shown in this channel",
            "# User Memory\n\n## User Preferences\n",
        ),
    ] {
        let reply = h.say_in(&lab, who, said).await.unwrap();
        assert!(reply.starts_with(kept), "{who}: {reply}");
        let shown = h.say_in(&lab, who, "Engram, /memory").await.unwrap();
        assert!(shown.contains(only_here), "{who}: {shown}");
        assert!(shown.starts_with(headings), "{who}: {shown}");
    }
    let found = h
        .say_in(&lab, "olga", "Engram, /memory search чай")
        .await
        .unwrap();
    assert_eq!(found, "1. я люблю зелёный чай (Предпочтения)");
    // The export is the file itself, headings and all, whoever asks.
    let exported = h.dm("olga", "/memory export").await;
    assert!(exported.starts_with("# User Memory"), "{exported}");
    assert!(exported.contains("## User Preferences"), "{exported}");
    // Still in their language after the others spoke (the last one in English): a person's
    // language, not the channel's.
    let shown = h.say_in(&lab, "olga", "Engram, /memory").await.unwrap();
    assert!(shown.contains("(Только то"), "{shown}");
    let shown = h.say_in(&lab, "klaus", "Engram, /memory").await.unwrap();
    assert!(shown.contains("(Nur was"), "{shown}");
    // The responder's own words too (no model here).
    let said = h
        .say_in(&lab, "olga", "Engram, как у нас дела с проектом?")
        .await
        .unwrap();
    assert!(
        said.starts_with("У меня не настроена языковая модель"),
        "{said}"
    );
    // The memory it shows is labelled in her language too.
    assert!(said.contains("\nПамять — olga:\nФакты:\n"), "{said}");
    assert!(!said.contains("Facts:"), "{said}");
    // A one-word answer is too short to tell: the language they last wrote in.
    let said = h.say_in(&lab, "klaus", "Engram, ok").await.unwrap();
    assert!(said.starts_with("Ich habe kein Sprachmodell"), "{said}");
    // A newcomer whose first words are a slash command: English.
    let shown = h.say_in(&lab, "zed", "Engram, /memory").await.unwrap();
    assert!(shown.starts_with("I have no notes about you"), "{shown}");
}

/// A Spanish fact the bot quoted in an English reply ("Shared: I'll know "…"") leaves with the
/// fact: the quote is looked for as the reply's language reads it, not only as Spanish does.
async fn a_fact_quoted_in_another_language_is_forgotten_with_it(url: Option<String>) {
    let h = harness_on(url, false).await;
    let fact = "mi hermana trabaja en el hospital de Valencia";
    let kept = h.dm("lucia", &format!("recuerda que {fact}")).await;
    assert!(kept.starts_with("Entendido"), "{kept}");
    // She goes on in English: the bot's answers follow her.
    h.dm("lucia", "I speak English at work, by the way").await;
    let asked = h.dm("lucia", "/memory share hermana hospital").await;
    assert!(
        asked.starts_with("Share") && asked.contains(fact),
        "{asked}"
    );
    let shared = h.dm("lucia", "yes").await;
    assert!(
        shared.starts_with("Shared:") && shared.contains(fact),
        "{shared}"
    );
    // Positive control: the quote is kept, searchable, in the bot's reply.
    let quoted = |rows: Vec<String>| {
        rows.into_iter()
            .filter(|r| r.starts_with("messages:") && r.contains("Shared:"))
            .count()
    };
    assert_eq!(quoted(rows_holding(&h, fact).await), 1);
    let asked = h.dm("lucia", "/memory forget hermana").await;
    assert!(asked.contains(fact), "{asked}");
    let done = h.dm("lucia", "yes").await;
    assert!(done.starts_with("Done"), "{done}");
    assert_eq!(quoted(rows_holding(&h, fact).await), 0, "the quote stayed");
}

on_both_harnesses!(
    a_fact_quoted_in_another_language_is_forgotten_with_it,
    each_person_is_answered_in_their_language,
    search_meets_inflected_forms_in_each_language,
    remember_and_forget_in_five_languages,
    a_community_file_adds_a_language,
    a_plain_yes_in_another_language_answers_in_a_group,
    a_marker_from_a_phrases_file_starts_an_episode,
    the_model_is_asked_to_answer_in_the_speakers_language,
);
