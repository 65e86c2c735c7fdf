//! Privacy boundaries: each test tries a way for memory to surface where it must not.

use crate::common::*;
use engram::adapters::console::console_message;

#[tokio::test]
async fn dm_facts_never_surface_in_a_group() {
    let h = Harness::offline().await;
    h.dm("alice", "remember that my salary is 90k").await;
    let lab = group("lab");
    let reply = h
        .say_in(&lab, "alice", "Engram, what do you know about me")
        .await
        .unwrap();
    assert!(!reply.contains("90k"), "{reply}");
    let reply = h
        .say_in(&lab, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(!reply.contains("90k"), "{reply}");
    let reply = h
        .say_in(&lab, "alice", "Engram, how are you?")
        .await
        .unwrap();
    assert!(!reply.contains("90k"), "{reply}");
    // Still there in her own private chat.
    assert!(
        h.dm("alice", "what do you know about me")
            .await
            .contains("90k")
    );
}

#[tokio::test]
async fn one_persons_dm_never_reaches_another_persons_dm() {
    let h = Harness::offline().await;
    h.dm(
        "alice",
        "remember that I am planning a surprise party for bob",
    )
    .await;
    let reply = h.dm("bob", "what do you know about @alice").await;
    assert!(!reply.contains("surprise"), "{reply}");
    let reply = h.dm("bob", "what do you know about me").await;
    assert!(!reply.contains("surprise"), "{reply}");
    let reply = h.dm("bob", "tell me about alice's plans").await;
    assert!(!reply.contains("surprise"), "{reply}");
    // Positive control: the same question finds it where it may surface, her own DM.
    let reply = h.dm("alice", "what do you know about me").await;
    assert!(reply.contains("surprise"), "{reply}");
}

#[tokio::test]
async fn group_facts_stay_in_their_group() {
    let h = Harness::offline().await;
    let lab = group("lab");
    let home = group("home");
    h.say_in(
        &lab,
        "alice",
        "Engram, remember that I am interviewing at another company",
    )
    .await;
    let reply = h
        .say_in(&home, "alice", "Engram, what do you know about me")
        .await
        .unwrap();
    assert!(!reply.contains("interviewing"), "{reply}");
    let reply = h
        .say_in(&home, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(!reply.contains("interviewing"), "{reply}");
    let reply = h.dm("alice", "what do you know about me").await;
    assert!(!reply.contains("interviewing"), "{reply}");
    let reply = h
        .say_in(&lab, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(reply.contains("interviewing"), "{reply}");
}

#[tokio::test]
async fn restricted_channel_facts_stay_in_that_channel() {
    let h = Harness::offline().await;
    let staff = restricted("lab", "staff");
    h.say_in(
        &staff,
        "alice",
        "Engram, remember that I am leaving in March",
    )
    .await;
    let public = group("lab");
    let reply = h
        .say_in(&public, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(!reply.contains("March"), "{reply}");
    let other = restricted("lab", "ops");
    let reply = h
        .say_in(&other, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(!reply.contains("March"), "{reply}");
    let reply = h
        .say_in(&staff, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(reply.contains("March"), "{reply}");
    // Public facts do reach the restricted channel of the same space.
    h.say_in(&public, "alice", "Engram, remember that I like tea")
        .await;
    let reply = h
        .say_in(&staff, "bob", "Engram, what do you know about @alice")
        .await
        .unwrap();
    assert!(reply.contains("tea"), "{reply}");
}

#[tokio::test]
async fn chatter_summaries_respect_the_same_boundaries() {
    let h = Harness::offline().await;
    h.dm("alice", "my divorce papers arrive tomorrow").await;
    h.say_in(
        &restricted("lab", "staff"),
        "alice",
        "the layoffs list is final",
    )
    .await;
    h.say_in(&group("home"), "alice", "we adopted a kitten")
        .await;
    let reply = h
        .say_in(
            &group("lab"),
            "bob",
            "Engram, what do you know about @alice",
        )
        .await
        .unwrap();
    for secret in ["divorce", "layoffs", "kitten"] {
        assert!(!reply.contains(secret), "{secret} leaked: {reply}");
    }
    // Positive controls: each is in the summary where it was said.
    for (opts, asker, said) in [
        (restricted("lab", "staff"), "bob", "layoffs"),
        (group("home"), "bob", "kitten"),
    ] {
        let reply = h
            .say_in(&opts, asker, "Engram, what do you know about @alice")
            .await
            .unwrap();
        assert!(
            reply.contains(said),
            "{said} missing where it was said: {reply}"
        );
    }
    let reply = h.dm("alice", "what do you know about me").await;
    assert!(reply.contains("divorce"), "{reply}");
}

#[tokio::test]
async fn dm_facts_stay_private_with_the_llm_too() {
    let h = Harness::with_llm().await;
    h.dm("alice", "remember that my salary is 90k").await;
    let before = h.fake().requests().len();
    h.say_in(&group("lab"), "alice", "Engram, how is everyone?")
        .await;
    h.say_in(&group("lab"), "bob", "Engram, what do you think of @alice?")
        .await;
    let in_group: Vec<String> = h.fake().requests()[before..]
        .iter()
        .map(|r| r.text())
        .collect();
    for asked in ["how is everyone", "think of"] {
        assert!(
            in_group.iter().any(|t| t.contains(asked)),
            "no prompt was made for {asked:?}: {in_group:#?}"
        );
    }
    for text in &in_group {
        assert!(
            !text.contains("salary") && !text.contains("90k"),
            "DM fact sent in a group's prompt: {text}"
        );
    }
    // The control: her private chat's prompt carries it.
    let before = h.fake().requests().len();
    h.dm("alice", "what should I negotiate?").await;
    assert!(
        h.fake().requests()[before..]
            .iter()
            .any(|r| r.task == "reply" && r.text().contains("90k")),
        "the DM's own prompt"
    );
}

#[tokio::test]
async fn replies_recall_old_messages_only_where_they_may_surface() {
    let h = Harness::with_llm().await;
    let lab = group("lab");
    let other = group("other");
    h.say_in(
        &lab,
        "alice",
        "our kayak club meets at the boathouse on pier 39",
    )
    .await;
    h.dm("bob", "my kayak is stored in the garage at 12 Elm Street")
        .await;
    // Enough later chatter that the kayak line has left the working memory.
    for i in 0..30 {
        h.clock.advance(chrono::Duration::minutes(1));
        h.say_in(&lab, "carol", &format!("lunch order number {i}"))
            .await;
    }
    h.clock.advance(chrono::Duration::days(3));
    let recalled = |h: &Harness| {
        h.fake()
            .requests()
            .into_iter()
            .rev()
            .find(|r| r.task == "reply")
            .unwrap()
            .text()
    };
    h.say_in(&lab, "bob", "Engram, where does the kayak club meet?")
        .await
        .unwrap();
    let prompt = recalled(&h);
    assert!(prompt.contains("<recalled"), "{prompt}");
    assert!(prompt.contains("pier 39"), "{prompt}");
    assert!(
        !prompt.contains("Elm Street"),
        "a DM leaked into a group: {prompt}"
    );
    h.say_in(&other, "bob", "Engram, where does the kayak club meet?")
        .await
        .unwrap();
    let prompt = recalled(&h);
    assert!(
        !prompt.contains("pier 39"),
        "another group's talk leaked: {prompt}"
    );
    assert!(!prompt.contains("Elm Street"), "{prompt}");
    h.dm("alice", "where is my kayak?").await;
    let prompt = recalled(&h);
    assert!(
        !prompt.contains("Elm Street"),
        "bob's DM in alice's: {prompt}"
    );
    h.dm("bob", "where is my kayak?").await;
    assert!(recalled(&h).contains("Elm Street"));
}

/// From a private chat a name counts only among people who share a space with the speaker:
/// a stranger's name is unknown there (no note about them, no list of who goes by it across
/// the platform), while someone the speaker meets in a group is found.
#[tokio::test]
async fn a_private_chat_names_only_people_the_speaker_shares_a_space_with() {
    let h = Harness::offline().await;
    let (lab, other) = (group("lab"), group("other"));
    h.say_in(&lab, "zed", "morning all").await;
    h.say_in(&lab, "alice", "morning zed").await;
    h.say_in(&other, "mallory", "anyone here?").await;
    // A second Zed in a third group: a list of both would tell who is where.
    let mut far = console_message(&group("far"), "zed2", "hi", 0, h.clock.now(), false);
    far.author_display_name = "Zed".into();
    h.bot.handle(&far).await.unwrap();
    let zed = h.person("zed").await;

    // The answer about a stranger is the answer about a name nobody has: nothing to learn.
    let probed = h.dm("mallory", "remember that Zed is a liar").await;
    let nobody = h.dm("mallory", "remember that Quux is a liar").await;
    assert_eq!(probed.replace("Zed", "Quux"), nobody);
    // An account id of a stranger is no way round it.
    let by_id = h.dm("mallory", "remember that zed2 is a liar").await;
    let no_id = h.dm("mallory", "remember that quux2 is a liar").await;
    assert_eq!(by_id.replace("zed2", "quux2"), no_id);
    let told = h.dm("alice", "remember that Zed is a great cook").await;
    let about_zed: Vec<String> = h
        .store
        .hearsay(zed, None)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.text)
        .collect();
    assert!(
        about_zed.iter().any(|t| t.contains("great cook")),
        "positive control: {told} / {about_zed:?}"
    );
    assert!(
        !about_zed.iter().any(|t| t.contains("liar")),
        "{about_zed:?}"
    );
    let zed2 = h.person("zed2").await;
    assert!(h.store.hearsay(zed2, None).await.unwrap().is_empty());
    // Someone who shares the far group with the second Zed finds that one.
    h.say_in(&group("far"), "carol", "hello").await;
    let found = h.dm("carol", "remember that Zed is my neighbour").await;
    assert!(!found.contains("don't know"), "{found}");
    let about_zed2 = h.store.hearsay(zed2, None).await.unwrap();
    assert!(
        about_zed2.iter().any(|s| s.text.contains("neighbour")),
        "{found}"
    );
    // Nor is a mention: found platform-wide as it comes, it names only someone who shares a
    // space with the speaker.
    h.dm("mallory", "remember that @zed2 is a liar").await;
    h.dm("mallory", "remember this about @zed2: a liar").await;
    let about_zed2 = h.store.hearsay(zed2, None).await.unwrap();
    assert!(
        !about_zed2.iter().any(|s| s.text.contains("liar")),
        "{about_zed2:?}"
    );
    h.dm("alice", "remember this about @zed: always kind").await;
    let about_zed = h.store.hearsay(zed, None).await.unwrap();
    assert!(
        about_zed.iter().any(|s| s.text.contains("kind")),
        "positive control"
    );
}
