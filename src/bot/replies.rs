//! What the bot says to commands: every answer it words itself, from the typed outcomes of
//! memory, linking and the limits. The rest of the bot decides what happened; this file says
//! it. (Conversation is the responder's: the model's answer, or its own words when there is no
//! model; an adapter words only its own failures.)

use crate::domain::Platform;
use crate::domain::budget::Admission;
use crate::domain::secret::SecretKind;
use crate::linking::{CODE_MINUTES, CodeRefused};
use crate::memory::entries::NeverKept;
use crate::memory::{
    CaptureOutcome, FactVerb, FactsFollowed, ForgetOutcome, MemoryError, Method, Moved,
};
use crate::store::{Account, LinkRedeem};

/// The commands, for "help".
pub const HELP: &str = "I remember things about the people here. Try:\n\
  remember that I love Rust\n\
  remember this about @bob: he plays chess (kept as what you told me)\n\
  forget that I love Rust\n\
  forget everything about me\n\
  what do you know about me / about @bob\n\
  note that / keep in mind … (goes into your MEMORY.md)\n\
  remember everywhere that … (known in every group and chat; /memory unshare <words> undoes)\n\
  /memory, /memory search <words>, /memory forget <topic>,\n\
  /memory pause, /memory resume, /memory clear, /memory export,\n\
  /memory share <words>, /memory unshare <words>\n\
  /memory link (join your Discord and Telegram memory), /memory links, /memory unlink\n\
Anything else is conversation.";

/// What the history keeps of an answer that only showed memory.
pub const SHOWN_MEMORY_NOTE: &str = "(showed memory here; not kept in the history)";

/// When the store failed: the message is kept, nothing else happened.
pub const STORE_FAILED: &str = "Something went wrong on my side; your message is saved, but I couldn't act on it. Please try again.";

/// A remember that changed nothing.
pub const ALREADY_KNEW: &str = "I already knew that.";

/// "remember everywhere" about someone else, or mentioning someone.
pub const EVERYWHERE_ONLY_ABOUT_ONESELF: &str = "Only the person a fact is about can have it known everywhere, and it may be about no one else, so I kept nothing. Without \"everywhere\" I keep it where you said it.";

/// `/memory pause`.
pub const PAUSED: &str = "Memory paused: nothing new about you is collected, summarized, extracted or written, by me or by anyone telling me about you. What I already know stays until you remove it. Say \"/memory resume\" to turn it back on.";

/// `/memory resume`.
pub const RESUMED: &str = "Memory is back on.";

/// `/memory clear`, asking for the "yes".
pub const CLEAR_ASK: &str = "This removes everything I have about you, everywhere: your MEMORY.md entries and their history, daily notes, what I know about you (with its history), what others told me about you and what you told me about others, and every message of yours I kept, with my replies to them (the platform keeps its own copy). Reply \"yes\" to confirm or \"no\" to keep it.";

/// `/memory clear`, done.
pub const CLEARED: &str = "Done, I've cleared everything I had about you.";

/// `/memory forget` without a topic.
pub const FORGET_WHAT: &str = "Forget what? Try \"/memory forget <topic>\".";

/// A "no" to a question the bot asked.
pub const NOTHING_CHANGED: &str = "OK, nothing was changed.";

/// `/memory share` while paused.
pub const SHARE_PAUSED: &str =
    "Your memory is paused, so I'm not changing where it is known. Say \"/memory resume\" first.";

/// `/memory share` of an entry that mentions someone.
pub const SHARE_MENTIONS_SOMEONE: &str = "That entry mentions someone else, and what is known everywhere may only be about you, so I left it where it is.";

/// `/memory links` or `/memory unlink` on an account that is not joined.
pub const NOT_LINKED: &str = "This account is not linked to another one.";

/// `/memory unlink` that cut nothing.
pub const NOTHING_UNLINKED: &str = "This account is not linked to another one, so nothing changed.";

/// What the person is told when an answer would spend over a limit.
pub fn limited(admission: Admission) -> Option<String> {
    match admission {
        Admission::Allowed => None,
        Admission::TooFast { retry_in } => Some(format!(
            "I'm getting more messages than I can answer right now. Yours is saved; ask me again in about {} seconds.",
            retry_in.as_secs().max(1)
        )),
        Admission::BudgetSpent => Some(
            "This place has used today's budget for my language model, so I can't chat until midnight UTC. Your message is saved, and remember/forget still work.".to_string(),
        ),
    }
}

/// The bot was addressed with nothing after its name.
pub fn yes(bot_name: &str) -> String {
    format!("Yes? Say \"{bot_name} help\" to see what I can do.")
}

/// A command over the length the bot acts on.
pub fn too_long_to_act(len: usize, limit: usize) -> String {
    format!(
        "That message is too long for me to act on ({len} characters; the limit is {limit}). I kept it in the chat history, but did nothing else with it."
    )
}

/// "remember everywhere that …", kept (`said` is the capture's answer).
pub fn known_everywhere(said: String, outcome: &CaptureOutcome) -> String {
    match outcome {
        CaptureOutcome::Saved { .. } => format!(
            "{said} I'll know it everywhere, in every group and private chat (\"/memory unshare\" takes it back)."
        ),
        _ => said,
    }
}

/// A text memory never keeps, refused.
pub fn never_kept(why: NeverKept) -> &'static str {
    match why {
        NeverKept::Code => "I don't keep code in memory; tell me about it in words instead.",
        NeverKept::Secret(SecretKind::Password) => {
            "That looks like a password or PIN, and I never keep those, so I didn't save it. I also left it out of the chat history I keep; you may want to delete your message and change it."
        }
        NeverKept::Secret(SecretKind::Key) => {
            "That looks like an API key or access token, and I never keep those, so I didn't save it. I also left it out of the chat history I keep; you may want to delete your message and revoke the key."
        }
        NeverKept::Secret(SecretKind::CardNumber) => {
            "That looks like a card number, and I never keep those, so I didn't save it. I also left it out of the chat history I keep; you may want to delete your message."
        }
    }
}

/// "remember that …" about oneself.
pub fn captured(outcome: &CaptureOutcome) -> String {
    match outcome {
        CaptureOutcome::Paused => "Your memory is paused, so I didn't save that. Say \"/memory resume\" to turn it back on.".to_string(),
        CaptureOutcome::TooLong { limit } => format!(
            "That is too long to remember (the limit is {limit} characters). Nothing was changed."
        ),
        CaptureOutcome::Refused(why) => never_kept(*why).to_string(),
        CaptureOutcome::Unchanged => ALREADY_KNEW.to_string(),
        CaptureOutcome::Saved {
            word_for_word: true,
        } => "Got it, I'll remember that (noted word for word: my language model is not available).".to_string(),
        CaptureOutcome::Saved {
            word_for_word: false,
        } => "Got it, I'll remember that.".to_string(),
    }
}

/// "remember this about @name: …", kept as the teller's words (`in_private`: in a DM).
pub fn told(name: &str, in_private: bool) -> String {
    if in_private {
        format!(
            "Got it, I'll keep that as what you told me about {name}, here in our private chat only."
        )
    } else {
        format!(
            "Got it, I'll keep that as what you told me about {name}. {name} can see it and remove it."
        )
    }
}

/// "forget that …".
pub fn forgot(outcome: &ForgetOutcome) -> String {
    match outcome {
        ForgetOutcome::Forgotten { .. } => "Done, I've forgotten that.".to_string(),
        ForgetOutcome::NotFound { method: Method::Llm } => {
            "I didn't find that in what I know, so nothing changed.".to_string()
        }
        ForgetOutcome::NotFound {
            method: Method::Offline,
        } => "I didn't find that wording in what I know, so nothing changed. Try the exact words you used when you told me.".to_string(),
    }
}

/// "forget everything about …" (`who`: "you" or a name), `n` things forgotten.
pub fn forgot_everything(who: &str, n: usize) -> String {
    match n {
        0 => format!("I had nothing about {who} here, so nothing changed."),
        _ => format!("Done, I've forgotten everything about {who} that I keep here."),
    }
}

/// "what do you know about …": `memory` is the text that may be shown here.
pub fn recall(who: &str, memory: Option<&str>) -> String {
    match memory {
        None => format!("I don't know anything about {who} yet."),
        Some(text) => format!("Here's what I know about {who}:\n{}", text.trim()),
    }
}

/// Changes the model asked for, waiting for the person's "yes" after its `text`.
pub fn confirm_changes(text: &str, changes: &[String]) -> String {
    let list: Vec<String> = changes.iter().map(|c| format!("- {c}")).collect();
    format!(
        "{text}\n\nBefore I change your memory: should I\n{}\nReply \"yes\" to do it or \"no\" to keep it as it is.",
        list.join("\n")
    )
}

/// `/memory`: the MEMORY.md that may be shown here (`md`), what others told (their lines),
/// whether memory is paused, and whether this is their private chat.
pub fn memory_view(md: &str, told: &str, paused: bool, private: bool) -> String {
    let told = if told.is_empty() {
        String::new()
    } else {
        format!(
            "\n## What others told me about you\n{told}\n(Their words, not yours: \"/memory forget <words>\" removes one.)\n"
        )
    };
    let paused = if paused {
        "\n(Memory is paused: nothing new is collected. /memory resume turns it back on.)"
    } else {
        ""
    };
    if md.lines().count() <= 1 && told.is_empty() {
        format!("I have no notes about you that I may show here.{paused}")
    } else if private {
        format!("{md}{told}{paused}")
    } else {
        format!(
            "{md}{told}(Only what may be shown in this channel; ask me in a private chat for all of it.){paused}"
        )
    }
}

/// `/memory forget <topic>` that matched nothing.
pub fn nothing_to_forget(topic: &str) -> String {
    format!(
        "I have nothing about \"{}\" that I may show here, so nothing changed.",
        topic.trim()
    )
}

/// `/memory forget <topic>`: what matched (entries, then what others said), asking for "yes".
pub fn forget_ask(entries: &[&str], told: &[(&str, &str)]) -> String {
    let mut list: Vec<String> = entries.iter().map(|v| format!("- {v}")).collect();
    list.extend(told.iter().map(|(text, by)| format!("- {by} says: {text}")));
    format!(
        "This matches:\n{}\nReply \"yes\" to forget it, or \"no\" to keep it.",
        list.join("\n")
    )
}

/// `/memory forget`, done: `n` entries and statements gone.
pub fn forgot_entries(n: usize) -> String {
    format!("Done, I've forgotten {n} {}.", entries_word(n))
}

/// Staged changes confirmed: `n` applied.
pub fn changed_entries(n: usize) -> String {
    format!("Done: {n} {} changed.", entries_word(n))
}

fn entries_word(n: usize) -> &'static str {
    if n == 1 { "entry" } else { "entries" }
}

/// `/memory search <words>`: the entries found (value, category heading), best first.
pub fn search_results(query: &str, found: &[(&str, &str)]) -> String {
    if found.is_empty() {
        return format!("Nothing in your memory matches \"{}\".", query.trim());
    }
    let list: Vec<String> = found
        .iter()
        .enumerate()
        .map(|(i, (value, heading))| format!("{}. {value} ({heading})", i + 1))
        .collect();
    list.join("\n")
}

/// `/memory <word>` the bot does not know.
pub fn unknown_memory_command(word: &str) -> String {
    format!(
        "I don't know \"/memory {word}\". Try /memory, /memory search <words>, /memory forget <topic>, /memory pause, /memory resume, /memory clear, /memory export, /memory share <words>, /memory unshare <words>, /memory link, /memory links or /memory unlink."
    )
}

/// `/memory share` or `/memory unshare` without words.
pub fn which_entry(everywhere: bool) -> String {
    let usage = if everywhere {
        "/memory share <words of the entry>"
    } else {
        "/memory unshare <words of the entry>"
    };
    format!("Which entry? Try \"{usage}\".")
}

/// `/memory share` or `/memory unshare` that matched no entry.
pub fn no_entry_to_share(words: &str, everywhere: bool) -> String {
    if everywhere {
        format!(
            "None of your entries that I may show here has all of \"{}\" (and is not shared already).",
            words.trim()
        )
    } else {
        format!(
            "None of your shared entries has all of \"{}\".",
            words.trim()
        )
    }
}

/// `/memory share` or `/memory unshare` that matched several entries.
pub fn several_entries(values: &[&str]) -> String {
    let list: Vec<String> = values.iter().map(|v| format!("- {v}")).collect();
    format!(
        "Several entries match; say which one with more of its words:\n{}",
        list.join("\n")
    )
}

/// `/memory share`, asking for the "yes": the entry and where it was learned.
pub fn share_ask(value: &str, learned: &str) -> String {
    format!(
        "Share \"{value}\" (learned in {learned}) everywhere, in every group and private chat where I am? Reply \"yes\" to share it or \"no\" to keep it where it is."
    )
}

/// An entry moved (shared or unshared), or not.
pub fn moved(outcome: &Moved, value: &str) -> String {
    match outcome {
        Moved::Gone => "That entry is gone meanwhile, so nothing changed.".to_string(),
        Moved::Shared => format!(
            "Shared: I'll know \"{value}\" everywhere, in every group and private chat. \"/memory unshare\" takes it back."
        ),
        Moved::Unshared(FactsFollowed::Yes) => format!(
            "Unshared: \"{value}\" is no longer known everywhere, only in our private chat."
        ),
        Moved::Unshared(FactsFollowed::NotFound) => format!(
            "Unshared: the entry \"{value}\" is known only in our private chat now, but I couldn't find those words in what I know about you everywhere; if I say it elsewhere, tell me \"forget that …\" there."
        ),
        Moved::Unshared(FactsFollowed::Failed) => format!(
            "Unshared: the entry \"{value}\" is known only in our private chat now, but I couldn't update what I know about you everywhere; try \"/memory unshare\" again later."
        ),
    }
}

/// A question the bot asked that lapsed before the answer.
pub fn lapsed() -> String {
    format!(
        "I asked that more than {CODE_MINUTES} minutes ago, so it has lapsed and nothing was changed; ask me again if you still want it."
    )
}

/// `/memory link` outside a private chat (`with_code`: a code was posted here).
pub fn link_only_in_private(with_code: bool) -> String {
    if with_code {
        "I won't use a code posted here: anyone could have seen it, so it no longer works. Make a new one with \"/memory link\" in a private chat.".to_string()
    } else {
        "Ask me for a link code in a private chat: anyone who sees a code can use it.".to_string()
    }
}

/// `/memory link`: a new code.
pub fn link_code(code: &str) -> String {
    format!(
        "Your link code is {code}. Within {CODE_MINUTES} minutes, send \"/memory link {code}\" to me in a private chat on your other platform (Discord or Telegram). It works once; that account then shares your memory from here: what you told me in private and what I know about you everywhere. Never post it anywhere else."
    )
}

/// `/memory link <code>` that cannot be used.
pub fn code_refused(why: CodeRefused) -> String {
    match why {
        CodeRefused::TooManyTries => format!(
            "Too many wrong codes. Wait {CODE_MINUTES} minutes, then make a new code on the other platform."
        ),
        CodeRefused::Unknown => "That code is unknown or has expired. Make a new one with \"/memory link\" on the other platform.".to_string(),
        CodeRefused::SamePlatform => SAME_PLATFORM.to_string(),
        CodeRefused::AlreadyLinked => ALREADY_LINKED.to_string(),
    }
}

const SAME_PLATFORM: &str = "That code was made on this platform: use it on the other one.";
const ALREADY_LINKED: &str = "This account is already linked to that one.";

/// `/memory link <code>`, asking for the "yes": this account (platform, name, id) and the
/// accounts it would join, shown with usernames and ids (names can be faked).
pub fn link_ask(platform: Platform, name: &str, id: &str, others: &[Account]) -> String {
    let others: Vec<String> = others.iter().map(account_line).collect();
    format!(
        "This joins this {platform} account ({name}, id {id}) with {}: your private memory and what I know about you everywhere will be shared between them. Only say yes if that is your own account. Reply \"yes\" to link them or \"no\" to cancel.",
        others.join(", ")
    )
}

/// A link code redeemed after the "yes", or not.
pub fn redeemed(outcome: &LinkRedeem, platform: Platform) -> String {
    match outcome {
        LinkRedeem::Linked { .. } => format!(
            "Linked: this {platform} account now shares your memory. \"/memory links\" lists the accounts, \"/memory unlink\" undoes it."
        ),
        LinkRedeem::Unknown => "That code has expired meanwhile. Make a new one with \"/memory link\" on the other platform.".to_string(),
        LinkRedeem::SamePlatform => SAME_PLATFORM.to_string(),
        LinkRedeem::AlreadyLinked => ALREADY_LINKED.to_string(),
    }
}

/// `/memory links`: the accounts that share this memory.
pub fn links(accounts: &[Account]) -> String {
    if accounts.len() <= 1 {
        return NOT_LINKED.to_string();
    }
    let list: Vec<String> = accounts
        .iter()
        .map(|a| format!("- {}", account_line(a)))
        .collect();
    format!(
        "These accounts share your memory:\n{}\n\"/memory unlink\" separates them (\"/memory unlink discord\" or \"/memory unlink telegram\" cuts that one).",
        list.join("\n")
    )
}

/// `/memory unlink <word>` where the word is not a platform.
pub fn not_a_platform(which: &str) -> String {
    format!(
        "\"{which}\" is not a platform: say \"/memory unlink discord\" or \"/memory unlink telegram\"."
    )
}

/// `/memory unlink`: the accounts cut off.
pub fn unlinked(cut: &[Account]) -> String {
    if cut.is_empty() {
        return NOTHING_UNLINKED.to_string();
    }
    let names: Vec<String> = cut
        .iter()
        .map(|a| format!("{} on {}", a.display_name, a.platform))
        .collect();
    format!(
        "Unlinked: {} has its own memory again.",
        names.join(" and ")
    )
}

/// An account as shown to its owner: "Alice (@alice_w, id 1001) on telegram".
fn account_line(a: &Account) -> String {
    match &a.username {
        Some(u) => format!(
            "{} (@{u}, id {}) on {}",
            a.display_name, a.external_id, a.platform
        ),
        None => format!(
            "{} (id {}) on {}",
            a.display_name, a.external_id, a.platform
        ),
    }
}

/// Someone of a name, as listed when the name fits several people.
pub fn candidate(shown: &str, username: Option<&str>) -> String {
    match username {
        Some(u) => format!("{shown} (@{u})"),
        None => shown.to_string(),
    }
}

/// The answer to a request memory refused, in the chat's words (nothing was changed).
pub fn refusal(e: &MemoryError) -> String {
    match e {
        MemoryError::EmptyFact { verb } => {
            let (what, example) = match verb {
                FactVerb::Remember => ("Remember", "remember"),
                FactVerb::Forget => ("Forget", "forget"),
            };
            format!("{what} what? Say it after the command, e.g. \"{example} that I love Rust\".")
        }
        MemoryError::EmptyCapture => {
            "Remember what? Say it after the phrase, e.g. \"remember that I prefer short answers\"."
                .to_string()
        }
        MemoryError::FactTooLong { verb, len, limit } => {
            let what = match verb {
                FactVerb::Remember => "remember",
                FactVerb::Forget => "forget",
            };
            format!(
                "That is too long to {what} as a fact ({len} characters; the limit is {limit}). Nothing was changed."
            )
        }
        MemoryError::FactsFull { subject, limit } => format!(
            "I already keep a lot about {subject} here ({limit} characters at most). Ask me to forget something first; nothing was changed."
        ),
        MemoryError::NotTheirs { subject } => format!(
            "Only {subject} (or a moderator) can make me forget things about {subject}; you can take back only what you told me yourself. Nothing was changed."
        ),
        MemoryError::SubjectPaused { subject } => format!(
            "{subject} has paused their memory, so I'm not keeping anything new about them. Nothing was changed."
        ),
        MemoryError::NeverKept(why) => never_kept(*why).to_string(),
        MemoryError::UnknownPerson { name } => {
            format!("I don't know anyone called {name} here yet. Nothing was changed.")
        }
        MemoryError::AmbiguousPerson { name, candidates } => format!(
            "More than one person here goes by {name}: {}. Mention the one you mean with @ (or reply to their message). Nothing was changed.",
            candidates.join(", ")
        ),
        MemoryError::Import(why) => why.to_string(),
        MemoryError::Busy => {
            "Memory is busy with other updates right now; please try again.".to_string()
        }
        MemoryError::Store(_) => STORE_FAILED.to_string(),
    }
}
