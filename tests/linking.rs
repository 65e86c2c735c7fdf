//! `/memory link` and `/memory unlink` across Discord and Telegram, on SQLite and PostgreSQL:
//! a one-time code made in a private chat on one platform joins the account on the other, so
//! private and global memory follow the person; codes are single-use, expire, are refused in
//! public, and unlink gives the account its own memory back.

#[macro_use]
mod common;
use common::*;
use engram::domain::{IncomingMessage, Platform, Privacy, SpaceKind};
use std::sync::atomic::{AtomicU64, Ordering};

static SEQ: AtomicU64 = AtomicU64::new(1);

fn message(platform: Platform, user: &str, text: &str, public: bool) -> IncomingMessage {
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let (space, kind, channel, privacy) = if public {
        (
            "guild-1".to_string(),
            SpaceKind::Group,
            "general",
            Privacy::GuildPublic,
        )
    } else {
        (format!("dm:{user}"), SpaceKind::Private, "dm", Privacy::Dm)
    };
    IncomingMessage {
        platform,
        space_external_id: space,
        space_kind: kind,
        space_title: "test".into(),
        channel_external_id: channel.into(),
        channel_privacy: privacy,
        author_external_id: user.into(),
        author_display_name: user.into(),
        author_is_bot: false,
        external_id: format!("m{seq}"),
        text: text.into(),
        sent_at: start_time(),
        reply_to_external_id: None,
        replies_to_bot: false,
        mentions: vec![],
        attachments: vec![],
        author_is_moderator: false,
    }
}

async fn say(h: &Harness, platform: Platform, user: &str, text: &str, public: bool) -> String {
    h.bot
        .handle(&message(platform, user, text, public))
        .await
        .unwrap()
        .expect("an answer")
        .text
}

fn code_in(reply: &str) -> String {
    reply
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .find(|w| {
            w.len() == 9
                && w.as_bytes()[4] == b'-'
                && w.chars()
                    .all(|c| c == '-' || c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .unwrap_or_else(|| panic!("no code in {reply}"))
        .to_string()
}

async fn linking_joins_private_memory_across_platforms(url: Option<String>) {
    use Platform::{Discord, Telegram};
    let h = harness_on(url, false).await;
    assert!(
        say(&h, Discord, "d-alice", "remember that I love Rust", false)
            .await
            .starts_with("Got it")
    );
    say(
        &h,
        Discord,
        "d-alice",
        "@Engram remember that I like cats",
        true,
    )
    .await;
    let before = say(&h, Telegram, "t-alice", "what do you know about me", false).await;
    assert!(!before.contains("Rust"), "{before}");

    // Codes are made and used in private chats only.
    let refused = say(&h, Discord, "d-alice", "@Engram /memory link", true).await;
    assert!(refused.contains("private chat"), "{refused}");
    let made = say(&h, Discord, "d-alice", "/memory link", false).await;
    let code = code_in(&made);
    let public = say(
        &h,
        Telegram,
        "t-alice",
        &format!("@Engram /memory link {code}"),
        true,
    )
    .await;
    assert!(public.contains("won't use"), "{public}");
    assert!(
        say(&h, Telegram, "t-alice", "/memory link ABCD-EFGH", false)
            .await
            .contains("unknown")
    );
    let same = say(
        &h,
        Discord,
        "d-alice",
        &format!("/memory link {code}"),
        false,
    )
    .await;
    assert!(same.contains("other one"), "{same}");

    let linked = say(
        &h,
        Telegram,
        "t-alice",
        &format!("/memory link {}", code.to_lowercase()),
        false,
    )
    .await;
    assert!(linked.starts_with("Linked"), "{linked}");
    let after = say(&h, Telegram, "t-alice", "what do you know about me", false).await;
    assert!(after.contains("Rust"), "private memory followed: {after}");
    assert!(
        !after.contains("cats"),
        "the guild's memory stays in the guild: {after}"
    );
    // What is said on Telegram now is the same person's memory on Discord.
    say(
        &h,
        Telegram,
        "t-alice",
        "remember that I live in Lisbon",
        false,
    )
    .await;
    let discord = say(&h, Discord, "d-alice", "what do you know about me", false).await;
    assert!(discord.contains("Lisbon"), "{discord}");

    // Used up: nobody else can take it; a new code expires after 10 minutes.
    assert!(
        say(
            &h,
            Telegram,
            "t-bob",
            &format!("/memory link {code}"),
            false
        )
        .await
        .contains("unknown")
    );
    let second = code_in(&say(&h, Discord, "d-alice", "/memory link", false).await);
    h.clock.advance(chrono::Duration::minutes(11));
    assert!(
        say(
            &h,
            Telegram,
            "t-bob",
            &format!("/memory link {second}"),
            false
        )
        .await
        .contains("expired")
    );
    let bob = say(&h, Telegram, "t-bob", "what do you know about me", false).await;
    assert!(!bob.contains("Rust"), "{bob}");

    // Unlink: the Telegram account has its own memory again.
    assert!(
        say(&h, Telegram, "t-alice", "/memory unlink", false)
            .await
            .starts_with("Unlinked")
    );
    let own = say(&h, Telegram, "t-alice", "what do you know about me", false).await;
    assert!(!own.contains("Rust"), "{own}");
    assert!(
        say(&h, Telegram, "t-alice", "/memory unlink", false)
            .await
            .contains("not linked")
    );
    let discord = say(&h, Discord, "d-alice", "what do you know about me", false).await;
    assert!(
        discord.contains("Rust") && discord.contains("Lisbon"),
        "{discord}"
    );
}

on_both_harnesses!(linking_joins_private_memory_across_platforms);
