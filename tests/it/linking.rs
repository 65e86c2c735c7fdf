//! `/memory link` and `/memory unlink` across Discord and Telegram, on SQLite and PostgreSQL:
//! a one-time code made in a private chat on one platform joins the account on the other, so
//! private and global memory follow the person; codes are single-use, expire, are refused in
//! public, and unlink gives the account its own memory back.

use crate::common::*;
use engram::domain::Platform;

async fn say(h: &Harness, platform: Platform, user: &str, text: &str, public: bool) -> String {
    h.bot
        .handle(&platform_message(platform, user, text, public))
        .await
        .unwrap()
        .expect("an answer")
        .text
}

/// Redeems `code` as `user` on `platform` in a private chat and confirms with "yes".
async fn link(h: &Harness, platform: Platform, user: &str, code: &str) -> String {
    let asked = say(h, platform, user, &format!("/memory link {code}"), false).await;
    if !asked.contains("Reply \"yes\"") {
        return asked;
    }
    say(h, platform, user, "yes", false).await
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
    let public_code = code_in(&made);
    let code = public_code.clone();
    let public = say(
        &h,
        Telegram,
        "t-alice",
        &format!("@Engram /memory link {code}"),
        true,
    )
    .await;
    assert!(public.contains("won't use"), "{public}");
    // Seen in public, it is dead: nobody who saw it can use it.
    let stolen = link(&h, Telegram, "t-mallory", &code).await;
    assert!(
        stolen.contains("unknown"),
        "a code seen in public still works: {stolen}"
    );
    assert!(
        say(&h, Telegram, "t-alice", "/memory link ABCD-EFGH", false)
            .await
            .contains("unknown")
    );

    let code = code_in(&say(&h, Discord, "d-alice", "/memory link", false).await);
    let same = say(
        &h,
        Discord,
        "d-alice",
        &format!("/memory link {code}"),
        false,
    )
    .await;
    assert!(same.contains("other one"), "{same}");
    // Redeeming names both accounts and waits for a yes; "no" leaves the code unused.
    let asked = say(
        &h,
        Telegram,
        "t-alice",
        &format!("/memory link {}", code.to_lowercase()),
        false,
    )
    .await;
    assert!(
        asked.contains("t-alice")
            && asked.contains("d-alice (id d-alice) on discord")
            && asked.contains("yes"),
        "{asked}"
    );
    assert!(
        say(&h, Telegram, "t-alice", "no", false)
            .await
            .contains("nothing was changed")
    );
    let still = say(&h, Telegram, "t-alice", "what do you know about me", false).await;
    assert!(!still.contains("Rust"), "linked without a yes: {still}");
    let linked = link(&h, Telegram, "t-alice", &code).await;
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
    // Both sides list the accounts.
    for (platform, user) in [(Discord, "d-alice"), (Telegram, "t-alice")] {
        let list = say(&h, platform, user, "/memory links", false).await;
        assert!(
            list.contains("d-alice (id d-alice) on discord")
                && list.contains("t-alice (id t-alice) on telegram"),
            "{list}"
        );
    }
    // In a group the accounts are neither listed nor cut: the other platform's account would
    // be shown to everyone there, and kept in the group's searchable history.
    for text in [
        "@Engram /memory links",
        "@Engram /memory unlink",
        "@Engram /memory unlink telegram",
    ] {
        let public = say(&h, Discord, "d-alice", text, true).await;
        assert!(public.contains("private chat"), "{text}: {public}");
        assert!(!public.contains("t-alice"), "{text}: {public}");
    }
    let kept = say(&h, Discord, "d-alice", "/memory links", false).await;
    assert!(kept.contains("t-alice (id t-alice) on telegram"), "{kept}");

    // Used up: nobody else can take it; a new code expires after 10 minutes.
    assert!(link(&h, Telegram, "t-bob", &code).await.contains("unknown"));
    let second = code_in(&say(&h, Discord, "d-alice", "/memory link", false).await);
    h.clock.advance(chrono::Duration::minutes(11));
    assert!(
        link(&h, Telegram, "t-bob", &second)
            .await
            .contains("expired")
    );
    let bob = say(&h, Telegram, "t-bob", "what do you know about me", false).await;
    assert!(!bob.contains("Rust"), "{bob}");
    // Guessing is limited: after five wrong codes even the right one is refused for a while.
    let third = code_in(&say(&h, Discord, "d-alice", "/memory link", false).await);
    for i in 0..5 {
        say(
            &h,
            Telegram,
            "t-bob",
            &format!("/memory link ZZZZ-ZZZ{}", i + 2),
            false,
        )
        .await;
    }
    let limited = link(&h, Telegram, "t-bob", &third).await;
    assert!(limited.contains("Too many"), "{limited}");
    let bob = say(&h, Telegram, "t-bob", "what do you know about me", false).await;
    assert!(!bob.contains("Rust"), "{bob}");

    // No code is ever kept in the history or the search index (its halves are words).
    for c in [&public_code, &code, &second, &third] {
        let dump = all_text(&h).await;
        assert!(
            !dump.to_lowercase().contains(&c.to_lowercase()),
            "code {c} stored: {dump}"
        );
        for half in c.split('-') {
            // As a word: four random characters may be part of a stored hash by chance.
            let half = half.to_lowercase();
            let left: Vec<String> = rows_holding(&h, &half)
                .await
                .into_iter()
                .filter(|r| {
                    r.to_lowercase()
                        .split(|c: char| !c.is_alphanumeric())
                        .any(|w| w == half)
                })
                .collect();
            assert!(left.is_empty(), "{half} of {c} stored: {left:#?}");
        }
    }
    // Positive control: ordinary words of those messages are stored and posted, and the
    // messages that carried the codes are kept, with the code's place marked.
    assert!(!rows_holding(&h, "cats").await.is_empty());
    let marked = rows_holding(&h, "[link code]").await;
    assert!(
        marked
            .iter()
            .any(|r| r.contains("/memory link [link code]")),
        "{marked:#?}"
    );

    // Unlink from the side that was joined: the Discord account cuts the Telegram one.
    let cut = say(&h, Discord, "d-alice", "/memory unlink telegram", false).await;
    assert!(
        cut.starts_with("Unlinked") && cut.contains("t-alice"),
        "{cut}"
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
    // And from the joining side.
    let fourth = code_in(&say(&h, Discord, "d-alice", "/memory link", false).await);
    assert!(
        link(&h, Telegram, "t-alice", &fourth)
            .await
            .starts_with("Linked")
    );
    assert!(
        say(&h, Telegram, "t-alice", "/memory unlink", false)
            .await
            .starts_with("Unlinked")
    );
    let own = say(&h, Telegram, "t-alice", "what do you know about me", false).await;
    assert!(!own.contains("Rust"), "{own}");
}

/// Every message text in the store (the history as it is kept).
async fn all_text(h: &Harness) -> String {
    let mut out = String::new();
    let mut offset = 0;
    loop {
        let rows = h
            .store
            .dump_rows(engram::store::Table::Messages, offset, 500)
            .await
            .unwrap();
        if rows.is_empty() {
            return out;
        }
        offset += rows.len() as i64;
        for row in rows {
            out.push_str(&format!("{row:?}\n"));
        }
    }
}

/// `/memory clear` on a joined person also clears what each joined account knew before the
/// join (it would come back on unlink); a code typed in any form in a private chat is never
/// stored either.
async fn clear_reaches_joined_accounts(url: Option<String>) {
    use Platform::{Discord, Telegram};
    let h = harness_on(url, false).await;
    say(
        &h,
        Telegram,
        "t-carol",
        "remember that I like oolong tea",
        false,
    )
    .await;
    say(&h, Discord, "d-carol", "remember that I work nights", false).await;
    let code = code_in(&say(&h, Discord, "d-carol", "/memory link", false).await);
    // Typed her own way in a private chat: still taken out of the stored text.
    let spaced = code.replace('-', " ").to_lowercase();
    say(
        &h,
        Discord,
        "d-carol",
        &format!("note to self: {spaced}"),
        false,
    )
    .await;
    assert!(
        link(&h, Telegram, "t-carol", &code)
            .await
            .starts_with("Linked")
    );
    let both = say(&h, Telegram, "t-carol", "what do you know about me", false).await;
    assert!(both.contains("nights"), "{both}");
    for half in code.split('-') {
        let left = rows_holding(&h, half).await;
        assert!(left.is_empty(), "{half} stored: {left:#?}");
    }
    let noted = rows_holding(&h, "note to self").await;
    assert!(
        noted
            .iter()
            .any(|r| r.contains("note to self: [link code]")),
        "kept, without the code: {noted:#?}"
    );
    assert!(
        say(&h, Discord, "d-carol", "/memory clear", false)
            .await
            .contains("yes")
    );
    assert!(
        say(&h, Discord, "d-carol", "yes", false)
            .await
            .starts_with("Done")
    );
    say(&h, Telegram, "t-carol", "/memory unlink", false).await;
    let own = say(&h, Telegram, "t-carol", "what do you know about me", false).await;
    assert!(!own.contains("oolong") && !own.contains("nights"), "{own}");
    assert!(rows_holding(&h, "oolong").await.is_empty());
}

/// `say`, sent now (by the harness clock) rather than at the start.
async fn say_now(h: &Harness, platform: Platform, user: &str, text: &str) -> String {
    let mut msg = platform_message(platform, user, text, false);
    msg.sent_at = h.clock.now();
    h.bot.handle(&msg).await.unwrap().expect("an answer").text
}

/// A private message of `user` sent at `at` that reaches the bot only now.
async fn arrives_late(
    h: &Harness,
    platform: Platform,
    user: &str,
    text: &str,
    at: chrono::DateTime<chrono::Utc>,
) {
    let mut msg = platform_message(platform, user, text, false);
    msg.sent_at = at;
    h.bot.handle(&msg).await.unwrap();
}

/// A clear keeps out what its person sent before it and the bot gets only later, from every
/// account joined to them then; an account joined only after the clear was never cleared,
/// and what it sent before the clear is kept.
async fn a_clear_keeps_out_late_messages_of_the_accounts_it_cleared(url: Option<String>) {
    use Platform::{Discord, Telegram};
    let h = harness_on(url, false).await;
    let half_past = start_time() + chrono::Duration::minutes(30);
    // Erin's accounts were joined before her clear.
    say(
        &h,
        Telegram,
        "t-erin",
        "remember that I like oolong tea",
        false,
    )
    .await;
    let code = code_in(&say(&h, Telegram, "t-erin", "/memory link", false).await);
    assert!(
        link(&h, Discord, "d-erin", &code)
            .await
            .starts_with("Linked")
    );
    h.clock.advance(chrono::Duration::hours(1));
    assert!(
        say_now(&h, Telegram, "t-erin", "/memory clear")
            .await
            .contains("yes")
    );
    assert!(
        say_now(&h, Telegram, "t-erin", "yes")
            .await
            .starts_with("Done")
    );
    arrives_late(&h, Discord, "d-erin", "my locker code is 4512", half_past).await;
    assert!(
        rows_holding(&h, "4512").await.is_empty(),
        "sent before her clear"
    );
    say_now(&h, Discord, "d-erin", "my desk is by the window").await;
    assert!(
        !rows_holding(&h, "by the window").await.is_empty(),
        "sent after it"
    );
    // Frank cleared his Telegram memory, then joined his Discord account to it.
    assert!(
        say_now(&h, Telegram, "t-frank", "/memory clear")
            .await
            .contains("yes")
    );
    assert!(
        say_now(&h, Telegram, "t-frank", "yes")
            .await
            .starts_with("Done")
    );
    let code = code_in(&say_now(&h, Telegram, "t-frank", "/memory link").await);
    assert!(
        link(&h, Discord, "d-frank", &code)
            .await
            .starts_with("Linked")
    );
    arrives_late(&h, Discord, "d-frank", "my bike is the red one", half_past).await;
    assert!(
        !rows_holding(&h, "bike is the red one").await.is_empty(),
        "his Discord account was not joined when he cleared"
    );
    arrives_late(&h, Telegram, "t-frank", "my sailboat is teal", half_past).await;
    assert!(
        rows_holding(&h, "sailboat").await.is_empty(),
        "his Telegram account was"
    );
}

on_both_harnesses!(
    linking_joins_private_memory_across_platforms,
    clear_reaches_joined_accounts,
    a_clear_keeps_out_late_messages_of_the_accounts_it_cleared,
);
