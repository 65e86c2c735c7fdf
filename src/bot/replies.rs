//! What the bot says to commands: every answer it words itself, from the typed outcomes of
//! memory, linking and the limits, in the language of the message answered (the texts are the
//! message catalogues of `phrases/*.ftl`; English where a language lacks one). The rest of the
//! bot decides what happened; this file says it. (Conversation is the responder's: the model's
//! answer, or its own words when there is no model; an adapter words only its own failures.)

use crate::domain::Platform;
use crate::domain::budget::Admission;
use crate::domain::entry::Category;
use crate::domain::secret::SecretKind;
use crate::domain::texts::Say;
use crate::linking::{CODE_MINUTES, CodeRefused};
use crate::memory::entries::{KEY_FACTS_HEADING, MEMORY_MD_TITLE, NeverKept};
use crate::memory::{
    CaptureOutcome, FactVerb, FactsFollowed, ForgetOutcome, MemoryError, Method, Moved,
};
use crate::store::{Account, LinkRedeem};

/// What the history keeps of an answer that only showed memory (not shown to anyone: the
/// same in every language).
pub const SHOWN_MEMORY_NOTE: &str = "(showed memory here; not kept in the history)";

/// One item per line, "- " before each.
fn bullets<T: AsRef<str>>(items: &[T]) -> String {
    items
        .iter()
        .map(|i| format!("- {}", i.as_ref()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the person is told when an answer would spend over a limit.
pub fn limited(t: &Say, admission: Admission) -> Option<String> {
    match admission {
        Admission::Allowed => None,
        Admission::TooFast { retry_in } => Some(t.with(
            "too-fast",
            &[("seconds", retry_in.as_secs().max(1).to_string().into())],
        )),
        Admission::BudgetSpent => Some(t.text("budget-spent")),
    }
}

/// The bot was addressed with nothing after its name.
pub fn yes(t: &Say, bot_name: &str) -> String {
    t.with("addressed-only", &[("bot", bot_name.into())])
}

/// A command over the length the bot acts on.
pub fn too_long_to_act(t: &Say, len: usize, limit: usize) -> String {
    t.with(
        "too-long-to-act",
        &[
            ("len", len.to_string().into()),
            ("limit", limit.to_string().into()),
        ],
    )
}

/// "remember everywhere that …", kept (`said` is the capture's answer).
pub fn known_everywhere(t: &Say, said: String, outcome: &CaptureOutcome) -> String {
    match outcome {
        CaptureOutcome::Saved { .. } => t.with("known-everywhere", &[("said", said.into())]),
        _ => said,
    }
}

/// A text memory never keeps, refused.
pub fn never_kept(t: &Say, why: NeverKept) -> String {
    t.text(match why {
        NeverKept::Code => "never-kept-code",
        NeverKept::Secret(SecretKind::Password) => "never-kept-password",
        NeverKept::Secret(SecretKind::Key) => "never-kept-key",
        NeverKept::Secret(SecretKind::CardNumber) => "never-kept-card",
    })
}

/// "remember that …" about oneself.
pub fn captured(t: &Say, outcome: &CaptureOutcome) -> String {
    match outcome {
        CaptureOutcome::Paused => t.text("capture-paused"),
        CaptureOutcome::TooLong { limit } => {
            t.with("capture-too-long", &[("limit", limit.to_string().into())])
        }
        CaptureOutcome::Refused(why) => never_kept(t, *why),
        CaptureOutcome::Unchanged => t.text("already-knew"),
        CaptureOutcome::Saved {
            word_for_word: true,
        } => t.text("captured-word-for-word"),
        CaptureOutcome::Saved {
            word_for_word: false,
        } => t.text("captured"),
    }
}

/// "remember this about @name: …", kept as the teller's words (`in_private`: in a DM).
pub fn told(t: &Say, name: &str, in_private: bool) -> String {
    let id = if in_private {
        "told-private"
    } else {
        "told-public"
    };
    t.with(id, &[("name", name.into())])
}

/// "forget that …".
pub fn forgot(t: &Say, outcome: &ForgetOutcome) -> String {
    t.text(match outcome {
        ForgetOutcome::Forgotten { .. } => "forgotten",
        ForgetOutcome::NotFound {
            method: Method::Llm,
        } => "forget-not-found",
        ForgetOutcome::NotFound {
            method: Method::Offline,
        } => "forget-not-found-offline",
    })
}

/// The person spoken to, as "about …" names them ("you").
pub fn you(t: &Say) -> String {
    t.text("you")
}

/// "forget everything about …" (`who`: `you` or a name), `n` things forgotten.
pub fn forgot_everything(t: &Say, who: &str, n: usize) -> String {
    let id = if n == 0 {
        "forgot-everything-none"
    } else {
        "forgot-everything"
    };
    t.with(id, &[("who", who.into())])
}

/// "what do you know about …": `memory` is the text that may be shown here.
pub fn recall(t: &Say, who: &str, memory: Option<&str>) -> String {
    match memory {
        None => t.with("recall-nothing", &[("who", who.into())]),
        Some(text) => t.with(
            "recall",
            &[
                ("who", who.into()),
                (
                    "memory",
                    crate::responder::localized_labels(text.trim(), t).into(),
                ),
            ],
        ),
    }
}

/// Changes the model asked for, waiting for the person's "yes" after its `text`.
pub fn confirm_changes(t: &Say, text: &str, changes: &[String]) -> String {
    t.with(
        "confirm-changes",
        &[("text", text.into()), ("list", bullets(changes).into())],
    )
}

/// `/memory`: the MEMORY.md that may be shown here (`md`), what others told (their lines),
/// whether memory is paused, and whether this is their private chat.
pub fn memory_view(t: &Say, md: &str, told: &str, paused: bool, private: bool) -> String {
    let told = if told.is_empty() {
        String::new()
    } else {
        format!(
            "\n## {}\n{told}\n{}\n",
            t.text("memory-told-heading"),
            t.text("memory-told-note")
        )
    };
    let paused = if paused {
        format!("\n{}", t.text("memory-paused-note"))
    } else {
        String::new()
    };
    if md.lines().count() <= 1 && told.is_empty() {
        return format!("{}{paused}", t.text("memory-empty"));
    }
    let md = localized_md(t, md);
    if private {
        format!("{md}{told}{paused}")
    } else {
        format!("{md}{told}{}{paused}", t.text("memory-only-here"))
    }
}

/// A category's name in the reader's language.
fn category(t: &Say, c: Category) -> String {
    t.text(&format!("category-{}", c.as_str()))
}

/// MEMORY.md (`md`) with its title and section headings in the reader's language (what
/// `/memory export` gives keeps the file's own, which it reads back).
fn localized_md(t: &Say, md: &str) -> String {
    md.split_inclusive('\n')
        .map(|raw| {
            let line = raw.trim_end_matches('\n');
            let end = &raw[line.len()..];
            let heading = line.strip_prefix("## ");
            if line == MEMORY_MD_TITLE {
                format!("# {}{end}", t.text("memory-title"))
            } else if heading == Some(KEY_FACTS_HEADING) {
                format!("## {}{end}", t.text("memory-key-facts"))
            } else if let Some(c) =
                heading.and_then(|h| Category::ALL.into_iter().find(|c| c.heading() == h))
            {
                format!("## {}{end}", category(t, c))
            } else {
                raw.to_string()
            }
        })
        .collect()
}

/// `/memory forget <topic>` that matched nothing.
pub fn nothing_to_forget(t: &Say, topic: &str) -> String {
    t.with("nothing-to-forget", &[("topic", topic.trim().into())])
}

/// `/memory forget <topic>`: what matched (entries, then what others said), asking for "yes".
pub fn forget_ask(t: &Say, entries: &[&str], told: &[(&str, &str)]) -> String {
    let mut items: Vec<String> = entries.iter().map(|v| v.to_string()).collect();
    items.extend(told.iter().map(|(text, by)| {
        t.with(
            "someone-says",
            &[("by", (*by).into()), ("text", (*text).into())],
        )
    }));
    t.with("forget-ask", &[("list", bullets(&items).into())])
}

/// `/memory forget`, done: `n` entries and statements gone.
pub fn forgot_entries(t: &Say, n: usize) -> String {
    t.with("forgot-entries", &[("n", n.into())])
}

/// Staged changes confirmed: `n` applied.
pub fn changed_entries(t: &Say, n: usize) -> String {
    t.with("changed-entries", &[("n", n.into())])
}

/// `/memory search <words>`: the entries found (value, category heading), best first.
pub fn search_results(t: &Say, query: &str, found: &[(&str, Category)]) -> String {
    if found.is_empty() {
        return t.with("search-nothing", &[("query", query.trim().into())]);
    }
    let list: Vec<String> = found
        .iter()
        .enumerate()
        .map(|(i, (value, c))| format!("{}. {value} ({})", i + 1, category(t, *c)))
        .collect();
    list.join("\n")
}

/// `/memory <word>` the bot does not know.
pub fn unknown_memory_command(t: &Say, word: &str) -> String {
    t.with("unknown-memory-command", &[("word", word.into())])
}

/// `/memory share` or `/memory unshare` without words.
pub fn which_entry(t: &Say, everywhere: bool) -> String {
    t.text(if everywhere {
        "which-entry-share"
    } else {
        "which-entry-unshare"
    })
}

/// `/memory share` or `/memory unshare` that matched no entry.
pub fn no_entry_to_share(t: &Say, words: &str, everywhere: bool) -> String {
    let id = if everywhere {
        "no-entry-to-share"
    } else {
        "no-entry-to-unshare"
    };
    t.with(id, &[("words", words.trim().into())])
}

/// `/memory share` or `/memory unshare` that matched several entries.
pub fn several_entries(t: &Say, values: &[&str]) -> String {
    t.with("several-entries", &[("list", bullets(values).into())])
}

/// `/memory share`, asking for the "yes": the entry and where it was learned.
pub fn share_ask(t: &Say, value: &str, learned: &str) -> String {
    t.with(
        "share-ask",
        &[("value", value.into()), ("learned", learned.into())],
    )
}

/// An entry moved (shared or unshared), or not.
pub fn moved(t: &Say, outcome: &Moved, value: &str) -> String {
    let id = match outcome {
        Moved::Gone => "moved-gone",
        Moved::Shared => "shared",
        Moved::Unshared(FactsFollowed::Yes) => "unshared",
        Moved::Unshared(FactsFollowed::NotFound) => "unshared-not-found",
        Moved::Unshared(FactsFollowed::Failed) => "unshared-failed",
    };
    t.with(id, &[("value", value.into())])
}

/// The minutes a question or a link code lasts, as a message's variable.
fn minutes() -> (&'static str, crate::domain::texts::Arg) {
    ("minutes", CODE_MINUTES.to_string().into())
}

/// A question the bot asked that lapsed before the answer.
pub fn lapsed(t: &Say) -> String {
    t.with("lapsed", &[minutes()])
}

/// `/memory link` outside a private chat (`with_code`: a code was posted here).
pub fn link_only_in_private(t: &Say, with_code: bool) -> String {
    t.text(if with_code {
        "code-posted-here"
    } else {
        "link-in-private"
    })
}

/// `/memory link`: a new code.
pub fn link_code(t: &Say, code: &str) -> String {
    t.with("link-code", &[("code", code.into()), minutes()])
}

/// `/memory link <code>` that cannot be used.
pub fn code_refused(t: &Say, why: CodeRefused) -> String {
    match why {
        CodeRefused::TooManyTries => t.with("too-many-tries", &[minutes()]),
        CodeRefused::Unknown => t.text("code-unknown"),
        CodeRefused::SamePlatform => t.text("same-platform"),
        CodeRefused::AlreadyLinked => t.text("already-linked"),
    }
}

/// `/memory link <code>`, asking for the "yes": this account (platform, name, id) and the
/// accounts it would join, shown with usernames and ids (names can be faked).
pub fn link_ask(t: &Say, platform: Platform, name: &str, id: &str, others: &[Account]) -> String {
    let others: Vec<String> = others.iter().map(account_line).collect();
    t.with(
        "link-ask",
        &[
            ("platform", platform.to_string().into()),
            ("name", name.into()),
            ("id", id.into()),
            ("others", others.join(", ").into()),
        ],
    )
}

/// A link code redeemed after the "yes", or not.
pub fn redeemed(t: &Say, outcome: &LinkRedeem, platform: Platform) -> String {
    match outcome {
        LinkRedeem::Linked { .. } => t.with("linked", &[("platform", platform.to_string().into())]),
        LinkRedeem::Unknown => t.text("code-expired"),
        LinkRedeem::SamePlatform => t.text("same-platform"),
        LinkRedeem::AlreadyLinked => t.text("already-linked"),
    }
}

/// `/memory links`: the accounts that share this memory.
pub fn links(t: &Say, accounts: &[Account]) -> String {
    if accounts.len() <= 1 {
        return t.text("not-linked");
    }
    let lines: Vec<String> = accounts.iter().map(account_line).collect();
    t.with("links", &[("list", bullets(&lines).into())])
}

/// `/memory unlink <word>` where the word is not a platform.
pub fn not_a_platform(t: &Say, which: &str) -> String {
    t.with("not-a-platform", &[("which", which.into())])
}

/// `/memory unlink`: the accounts cut off.
pub fn unlinked(t: &Say, cut: &[Account]) -> String {
    if cut.is_empty() {
        return t.text("nothing-unlinked");
    }
    let names: Vec<String> = cut
        .iter()
        .map(|a| format!("{} on {}", a.display_name, a.platform))
        .collect();
    let and = format!(" {} ", t.text("and"));
    t.with("unlinked", &[("names", names.join(&and).into())])
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
pub fn refusal(t: &Say, e: &MemoryError) -> String {
    match e {
        MemoryError::EmptyFact { verb } => t.text(match verb {
            FactVerb::Remember => "remember-what",
            FactVerb::Forget => "forget-what-fact",
        }),
        MemoryError::EmptyCapture => t.text("capture-what"),
        MemoryError::FactTooLong { verb, len, limit } => t.with(
            match verb {
                FactVerb::Remember => "fact-too-long-remember",
                FactVerb::Forget => "fact-too-long-forget",
            },
            &[
                ("len", len.to_string().into()),
                ("limit", limit.to_string().into()),
            ],
        ),
        MemoryError::FactsFull { subject, limit } => t.with(
            "facts-full",
            &[
                ("subject", subject.as_str().into()),
                ("limit", limit.to_string().into()),
            ],
        ),
        MemoryError::NotTheirs { subject } => {
            t.with("not-theirs", &[("subject", subject.as_str().into())])
        }
        MemoryError::SubjectPaused { subject } => {
            t.with("subject-paused", &[("subject", subject.as_str().into())])
        }
        MemoryError::NeverKept(why) => never_kept(t, *why),
        MemoryError::UnknownPerson { name } => {
            t.with("unknown-person", &[("name", name.as_str().into())])
        }
        MemoryError::AmbiguousPerson { name, candidates } => t.with(
            "ambiguous-person",
            &[
                ("name", name.as_str().into()),
                ("candidates", candidates.join(", ").into()),
            ],
        ),
        MemoryError::Import(why) => why.to_string(),
        MemoryError::Busy => t.text("busy"),
        MemoryError::Store(_) => t.text("store-failed"),
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::texts::Texts;

    /// The message ids in `source`: string literals shaped like ids (lowercase words joined by
    /// dashes) that are not a variable's name (those follow a parenthesis: `("name", …)`),
    /// or, with `calls_only`, those passed to `text(`/`with(` or given by a match arm.
    fn ids(source: &str, calls_only: bool) -> Vec<String> {
        let mut found = Vec::new();
        let mut rest = source;
        while let Some(start) = rest.find('"') {
            let before = rest[..start].trim_end();
            let after = &rest[start + 1..];
            let Some(end) = after.find('"') else { break };
            let literal = &after[..end];
            rest = &after[end + 1..];
            let shaped =
                !literal.is_empty() && literal.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            let called =
                before.ends_with("text(") || before.ends_with("with(") || before.ends_with("=>");
            let is_id = if calls_only {
                called
            } else {
                !before.ends_with('(') || called
            };
            if shaped && is_id {
                found.push(literal.to_string());
            }
        }
        found
    }

    #[test]
    fn every_text_the_bot_says_is_in_the_english_catalogue() {
        let texts = Texts::built_in();
        let mut checked = 0;
        for (source, calls_only) in [
            (include_str!("replies.rs"), false),
            (include_str!("mod.rs"), true),
            (include_str!("../responder/mod.rs"), true),
        ] {
            // This test's own literals are not ids, nor are comments' quotes.
            let code: String = source
                .split("#[cfg(test)]")
                .next()
                .unwrap()
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let source = code.as_str();
            for id in ids(source, calls_only) {
                assert!(texts.has("en", &id), "\"{id}\" is not in phrases/en.ftl");
                checked += 1;
            }
        }
        // Positive control: the scan finds the ids (a change that hides them fails here).
        assert!(checked > 60, "{checked}");
        assert!(ids("t.text(\"captured\"); (\"name\", x)", false) == ["captured"]);
    }

    #[test]
    fn memory_headings_are_shown_in_the_readers_language() {
        use super::{Category, localized_md, search_results};
        use crate::domain::language::Language;
        use crate::domain::texts::Say;
        let texts = Texts::built_in();
        // Ids made at run time, which the scan above cannot see.
        for c in Category::ALL {
            assert!(
                texts.has("en", &format!("category-{}", c.as_str())),
                "{c:?}"
            );
        }
        for (_, id) in crate::memory::offline::LABELS {
            assert!(texts.has("en", id), "{id}");
        }
        let md = "# User Memory\n\n## User Preferences\n- green tea\n\n## Key Facts\n- ## Work Context is a band\n## Elsewhere\n";
        let ru = Say::new(&texts, Some(Language::Russian));
        assert_eq!(
            localized_md(&ru, md),
            "# Память\n\n## Предпочтения\n- green tea\n\n## Главное\n- ## Work Context is a band\n## Elsewhere\n"
        );
        // English is the file as it is.
        let en = Say::new(&texts, Some(Language::English));
        assert_eq!(localized_md(&en, md), md);
        assert_eq!(localized_md(&ru, "# User Memory"), "# Память");
        assert_eq!(
            search_results(&ru, "чай", &[("зелёный чай", Category::Preference)]),
            "1. зелёный чай (Предпочтения)"
        );
        // "What do you know about me?": the memory's part labels too.
        let known = "Facts:\n- you: green tea\nToday:\nyou said: hi";
        let shown = super::recall(&ru, "вас", Some(known));
        assert!(
            shown.ends_with("Факты:\n- you: green tea\nСегодня:\nyou said: hi"),
            "{shown}"
        );
        assert!(super::recall(&en, "you", Some(known)).ends_with(known));
    }

    #[test]
    fn each_catalogue_names_only_messages_english_has() {
        // A translated message English lacks could never be said (English is the list of
        // what the bot says); a typo in an id would hide a translation.
        let texts = Texts::built_in();
        for (code, file) in [
            ("ru", include_str!("../../phrases/ru.ftl")),
            ("de", include_str!("../../phrases/de.ftl")),
            ("es", include_str!("../../phrases/es.ftl")),
            ("fr", include_str!("../../phrases/fr.ftl")),
            ("pt", include_str!("../../phrases/pt.ftl")),
        ] {
            let ids: Vec<&str> = file
                .lines()
                .filter(|l| !l.starts_with([' ', '#']) && l.contains('='))
                .map(|l| l.split('=').next().unwrap().trim())
                .collect();
            assert!(ids.len() > 30, "{code}: {}", ids.len());
            for id in &ids {
                assert!(texts.has("en", id), "{code}: \"{id}\" is not in en.ftl");
                assert!(texts.has(code, id), "{code}: {id}");
            }
            // And the other way: each of these languages says all that English says (the
            // README promises it), so none of its people meets an English text by omission.
            let english = include_str!("../../phrases/en.ftl")
                .lines()
                .filter(|l| !l.starts_with([' ', '#']) && l.contains('='))
                .map(|l| l.split('=').next().unwrap().trim());
            for id in english {
                assert!(ids.contains(&id), "{code}.ftl lacks \"{id}\"");
            }
        }
    }
}
