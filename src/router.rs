//! The router: reads what an addressed message asks for. Freeform memory commands
//! ("remember that …", "forget that …", "what do you know about @user") go to memory; anything
//! else is conversation for the responder. Pure parsing, tested directly.

pub use crate::domain::command::{Command, MemoryCommand, Subject};
use crate::domain::phrases::OPENING_MARKS;
pub use crate::domain::phrases::Phrases;

/// What `text` asks for: Engram's English grammar (`parse_command`), then the phrases of every
/// language of `phrases` ("запомни, что …", "vergiss, dass …", "sí"). A forget of something
/// that names nothing ("forget it", "vergiss es", "oublie ça": a never-mind) is conversation.
pub fn parse_command_with(text: &str, phrases: &Phrases) -> Command {
    let command = match parse_command(text) {
        Command::Chat => phrases.read(text).unwrap_or(Command::Chat),
        command => command,
    };
    match command {
        Command::Forget { fact, .. }
            if !fact.trim().is_empty() && !crate::domain::language::names_something(&fact) =>
        {
            Command::Chat
        }
        command => command,
    }
}

/// What a `/memory` request asks for, delivered as a command (a Discord slash command's
/// `request`, a Telegram `/memory` command's arguments): an answer to the bot's question
/// ("confirm", "cancel") or a subcommand.
pub fn memory_request(request: &str) -> Command {
    let lower = request.trim().to_lowercase();
    match lower.trim_end_matches(['.', '!']) {
        "confirm" | "yes" => Command::Confirm(true),
        "cancel" | "no" => Command::Confirm(false),
        _ => Command::Memory(memory_command(request)),
    }
}

fn memory_command(rest: &str) -> MemoryCommand {
    let rest = rest.trim();
    let (word, arg) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    match word.to_lowercase().as_str() {
        "" | "view" | "show" => MemoryCommand::View,
        "pause" => MemoryCommand::Pause,
        "resume" => MemoryCommand::Resume,
        "clear" => MemoryCommand::Clear,
        "forget" => MemoryCommand::Forget(arg.to_string()),
        "search" => MemoryCommand::Search(arg.to_string()),
        "export" => MemoryCommand::Export,
        "link" => MemoryCommand::Link(arg.to_string()),
        "links" | "accounts" => MemoryCommand::Links,
        "unlink" => MemoryCommand::Unlink(arg.to_string()),
        "share" => MemoryCommand::Share(arg.to_string()),
        "unshare" => MemoryCommand::Unshare(arg.to_string()),
        _ => MemoryCommand::Unknown(word.to_string()),
    }
}

/// `rest` after a case-insensitive `prefix` that ends at a word boundary.
fn after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    if !head.eq_ignore_ascii_case(prefix) {
        return None;
    }
    let rest = &text[prefix.len()..];
    if rest.chars().next().is_some_and(|c| c.is_alphanumeric()) {
        return None;
    }
    Some(rest.trim_start_matches([' ', ':', ',', '\t', '\n']))
}

fn subject_word(word: &str) -> Subject {
    let word = word.trim_end_matches([',', ':', '?', '!', '.']);
    match word.to_lowercase().as_str() {
        "me" | "myself" | "i" => Subject::Speaker,
        _ => Subject::Named(word.trim_start_matches('@').to_string()),
    }
}

/// For "remember that X": who X is about, and the fact text.
fn fact_subject(fact: &str) -> (Subject, String) {
    let first = fact.split_whitespace().next().unwrap_or("");
    if let Some(name) = first.strip_prefix('@').filter(|n| !n.is_empty()) {
        let name = name
            .trim_end_matches([',', ':', '\'', '’'])
            .trim_end_matches("'s");
        return (Subject::Named(name.to_string()), fact.replacen('@', "", 1));
    }
    let lower = first.to_lowercase();
    let pronoun =
        ["i", "i'm", "i’m", "my", "me", "i've", "i'd", "i'll", "mine"].contains(&lower.as_str());
    // A common word written in lower case ("the meeting is on friday") is the sentence's, not
    // a name: someone called "the" must not take every such fact (and its forget) as theirs.
    // Written as a name ("Will plays chess"), it may be one.
    let common = !crate::domain::language::names_something(first)
        && !first.chars().next().is_some_and(char::is_uppercase);
    if pronoun || common || first.is_empty() {
        return (Subject::Speaker, fact.to_string());
    }
    (
        Subject::MaybeNamed(
            first
                .trim_end_matches([',', ':'])
                .trim_end_matches("'s")
                .to_string(),
        ),
        fact.to_string(),
    )
}

/// "about @X: fact" / "about X that fact" → (X, fact).
fn about_clause(rest: &str) -> Option<(Subject, String)> {
    let rest = after(rest, "about")?;
    let mut parts = rest.splitn(2, char::is_whitespace);
    let who = parts.next().filter(|w| !w.is_empty())?;
    let fact = parts
        .next()
        .unwrap_or("")
        .trim_start_matches([':', ',', ' ']);
    let fact = after(fact, "that").unwrap_or(fact);
    Some((subject_word(who), fact.trim().to_string()))
}

/// Words that open anything ("hey, remember me?"), gone before a request is read like
/// courtesies, though they ask nothing.
const OPENERS: [&str; 5] = ["hey", "ok", "okay", "also", "and"];

/// After "remember", words that make it a question about the past, not a request to keep
/// something ("remember when we met?").
const QUESTION_WORDS: [&str; 10] = [
    "what", "when", "where", "who", "whom", "which", "how", "why", "if", "whether",
];

/// Reads what `text` (the bot's name already taken off) asks for.
// Over 80 lines: the forms are tried in order (courtesies, "remember everywhere", capture
// phrases, remember/forget/recall forms, yes/no) and the order is the meaning; split up, the
// precedence would hide in the calls.
pub fn parse_command(text: &str) -> Command {
    // The lists are the built-in `phrases/en.toml`'s: courtesies, capture phrases, answers.
    let english = crate::domain::phrases::english();
    let mut text = text.trim().trim_start_matches(OPENING_MARKS);
    let (mut asked, mut requested) = (false, false);
    while let Some((courtesy, rest)) = english
        .courtesies
        .iter()
        .map(|c| (true, c.as_str()))
        .chain(OPENERS.iter().map(|o| (false, *o)))
        .find_map(|(courtesy, c)| after(text, c).map(|rest| (courtesy, rest)))
    {
        if rest.is_empty() {
            break;
        }
        text = rest.trim_start_matches(OPENING_MARKS);
        asked = true;
        requested |= courtesy;
    }
    let text_was_question = text.trim_end().ends_with('?');
    if asked {
        // "can you remember that I like tea, please?": the request, not its question mark.
        text = text.trim_end_matches(['?', '!', ' ']);
        for tail in [", please", " please", " pls"] {
            if text.len() > tail.len()
                && text.is_char_boundary(text.len() - tail.len())
                && text[text.len() - tail.len()..].eq_ignore_ascii_case(tail)
            {
                text = &text[..text.len() - tail.len()];
            }
        }
    }
    if text.eq_ignore_ascii_case("help") || text == "?" {
        return Command::Help;
    }
    // Answers first: "/memory confirm" typed as text is one.
    let lower = text.to_lowercase();
    let lower = lower.trim_end_matches(['.', '!']);
    if english.yes.iter().any(|y| y == lower) {
        return Command::Confirm(true);
    }
    if english.no.iter().any(|n| n == lower) {
        return Command::Confirm(false);
    }
    for prefix in ["/memory", "memory"] {
        if let Some(rest) = after(text, prefix)
            && (prefix == "/memory" || rest.is_empty())
        {
            return Command::Memory(memory_command(rest));
        }
    }
    // The other explicit-capture phrases (the seed's, and the file's), read as "remember
    // that …" is: a fact that opens with @bob is what the speaker tells about Bob.
    for phrase in &english.remember {
        if let Some(rest) = after(text, phrase) {
            let fact = if phrase.ends_with(" that") {
                rest
            } else {
                after(rest, "that").unwrap_or(rest)
            };
            let (subject, fact) = fact_subject(fact.trim());
            return Command::Remember { subject, fact };
        }
    }
    if let Some(rest) = after(text, "remember") {
        // A question ("remember when we met?", "can you remember my birthday?") is
        // conversation; a request says what to keep ("remember that …", "remember where I
        // parked: level 3").
        // Without a courtesy, a question is conversation whatever follows ("remember that
        // night in Paris?"); with one, "can you remember that …?" asks to keep it.
        let next = rest.split_whitespace().next().unwrap_or("").to_lowercase();
        let asks = text.trim_end().ends_with('?') || (asked && text_was_question);
        if asks && (!requested || !["that", "this", "about", "everywhere"].contains(&next.as_str()))
            || (QUESTION_WORDS.contains(&next.as_str()) && text.trim_end().ends_with('?'))
        {
            return Command::Chat;
        }
        if let Some(fact) = after(rest, "everywhere") {
            let fact = after(fact, "that").unwrap_or(fact).trim();
            let (subject, fact) = fact_subject(fact);
            return Command::RememberEverywhere { subject, fact };
        }
        let rest = after(rest, "this").unwrap_or(rest);
        if let Some((subject, fact)) = about_clause(rest) {
            return Command::Remember { subject, fact };
        }
        let fact = after(rest, "that").unwrap_or(rest).trim();
        let (subject, fact) = fact_subject(fact);
        return Command::Remember { subject, fact };
    }
    if let Some(rest) = after(text, "forget") {
        for everything in ["everything about", "all about", "everything you know about"] {
            if let Some(who) = after(rest, everything) {
                let who = who.split_whitespace().next().unwrap_or("me");
                return Command::ForgetEverything {
                    subject: subject_word(who),
                };
            }
        }
        // "forget this about @bob: …", as it was remembered.
        let about = after(rest, "this").unwrap_or(rest);
        if let Some((subject, fact)) = about_clause(about).filter(|(_, f)| !f.is_empty()) {
            return Command::Forget { subject, fact };
        }
        let fact = after(rest, "that").unwrap_or(rest).trim();
        let (subject, fact) = fact_subject(fact);
        return Command::Forget { subject, fact };
    }
    for ask in [
        "what do you know about",
        "what do you remember about",
        "what do you know of",
    ] {
        if let Some(rest) = after(text, ask) {
            let who = rest.split_whitespace().next().unwrap_or("me");
            return Command::Recall {
                subject: subject_word(who.trim_end_matches('?')),
            };
        }
    }
    if [
        "who am i",
        "who am i?",
        "what do you know",
        "what do you know?",
    ]
    .contains(&text.to_lowercase().as_str())
    {
        return Command::Recall {
            subject: Subject::Speaker,
        };
    }
    Command::Chat
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(s: &str) -> Subject {
        Subject::Named(s.into())
    }

    #[test]
    fn help_forms() {
        assert_eq!(parse_command("help"), Command::Help);
        assert_eq!(parse_command("?"), Command::Help);
        assert_eq!(parse_command("HELP"), Command::Help);
    }

    /// A polite request's trailing "please" goes, whatever script the fact is written in (the
    /// cut is at a character boundary counted from the end).
    #[test]
    fn a_trailing_please_goes_in_any_script() {
        let fact = "я люблю пить зелёный чай по утрам и читать книги";
        let Command::Remember { fact: kept, .. } =
            parse_command(&format!("can you remember that {fact} please?"))
        else {
            panic!("a request to remember");
        };
        assert_eq!(kept, fact);
    }

    #[test]
    fn remember_forms() {
        assert_eq!(
            parse_command("remember that I love Rust"),
            Command::Remember {
                subject: Subject::Speaker,
                fact: "I love Rust".into()
            }
        );
        assert_eq!(
            parse_command("Remember this about @bob: he plays chess"),
            Command::Remember {
                subject: named("bob"),
                fact: "he plays chess".into()
            }
        );
        assert_eq!(
            parse_command("remember about bob that he likes tea"),
            Command::Remember {
                subject: named("bob"),
                fact: "he likes tea".into()
            }
        );
        assert_eq!(
            parse_command("remember that @bob likes tea"),
            Command::Remember {
                subject: named("bob"),
                fact: "bob likes tea".into()
            }
        );
        assert_eq!(
            parse_command("remember that gruzilkin is Sergey"),
            Command::Remember {
                subject: Subject::MaybeNamed("gruzilkin".into()),
                fact: "gruzilkin is Sergey".into()
            }
        );
        // A common word is the sentence's, unless written as a name.
        assert_eq!(
            parse_command("remember that the meeting is on friday"),
            Command::Remember {
                subject: Subject::Speaker,
                fact: "the meeting is on friday".into()
            }
        );
        assert_eq!(
            parse_command("forget that Will plays chess"),
            Command::Forget {
                subject: Subject::MaybeNamed("Will".into()),
                fact: "Will plays chess".into()
            }
        );
        assert_eq!(
            parse_command("remember that"),
            Command::Remember {
                subject: Subject::Speaker,
                fact: "".into()
            }
        );
        assert_eq!(parse_command("remembering things is hard"), Command::Chat);
    }

    #[test]
    fn forget_and_recall_forms() {
        assert_eq!(
            parse_command("forget that I love Rust"),
            Command::Forget {
                subject: Subject::Speaker,
                fact: "I love Rust".into()
            }
        );
        assert_eq!(
            parse_command("forget this about @bob: he plays chess"),
            Command::Forget {
                subject: named("bob"),
                fact: "he plays chess".into()
            }
        );
        assert_eq!(
            parse_command("forget everything about @bob"),
            Command::ForgetEverything {
                subject: named("bob")
            }
        );
        assert_eq!(
            parse_command("Forget everything about me"),
            Command::ForgetEverything {
                subject: Subject::Speaker
            }
        );
        assert_eq!(
            parse_command("forget that @bob likes pizza"),
            Command::Forget {
                subject: named("bob"),
                fact: "bob likes pizza".into()
            }
        );
        assert_eq!(
            parse_command("what do you know about me?"),
            Command::Recall {
                subject: Subject::Speaker
            }
        );
        assert_eq!(
            parse_command("What do you know about @alice"),
            Command::Recall {
                subject: named("alice")
            }
        );
        assert_eq!(
            parse_command("who am I"),
            Command::Recall {
                subject: Subject::Speaker
            }
        );
        assert_eq!(parse_command("how are you?"), Command::Chat);
        assert_eq!(
            parse_command("note that I'm vegetarian"),
            Command::Remember {
                subject: Subject::Speaker,
                fact: "I'm vegetarian".into()
            }
        );
        assert_eq!(
            parse_command("/memory forget presentation"),
            Command::Memory(MemoryCommand::Forget("presentation".into()))
        );
        assert_eq!(
            parse_command("/memory"),
            Command::Memory(MemoryCommand::View)
        );
        assert_eq!(
            parse_command("/memory search db perf"),
            Command::Memory(MemoryCommand::Search("db perf".into()))
        );
        assert_eq!(parse_command("memory is hard"), Command::Chat);
        assert_eq!(parse_command("Yes."), Command::Confirm(true));
        assert_eq!(parse_command("/memory confirm"), Command::Confirm(true));
        assert_eq!(parse_command("/memory cancel"), Command::Confirm(false));
        assert_eq!(parse_command("cancel"), Command::Confirm(false));
        assert_eq!(parse_command(""), Command::Chat);
    }

    #[test]
    fn capture_phrases_are_remember_about_the_speaker() {
        let speaker = |fact: &str| Command::Remember {
            subject: Subject::Speaker,
            fact: fact.into(),
        };
        assert_eq!(
            parse_command("remember that I'm presenting on database performance next week"),
            speaker("I'm presenting on database performance next week")
        );
        assert_eq!(
            parse_command("Note that: my timezone is CET"),
            speaker("my timezone is CET")
        );
        assert_eq!(
            parse_command("keep in mind I hate long answers"),
            speaker("I hate long answers")
        );
        assert_eq!(
            parse_command("For future reference, the wifi is slow"),
            speaker("the wifi is slow")
        );
        // A capture phrase reads its subject as "remember that" does.
        assert_eq!(
            parse_command("remind yourself that @bob likes tea"),
            Command::Remember {
                subject: Subject::Named("bob".into()),
                fact: "bob likes tea".into()
            }
        );
        assert_eq!(
            parse_command("note that that movie was long"),
            speaker("that movie was long")
        );
        // Every list of the English file is read where the grammar reads it.
        let english = crate::domain::phrases::english();
        assert!(english.remember.len() >= 10 && english.courtesies.len() >= 9);
        for phrase in &english.remember {
            assert_eq!(
                parse_command(&format!("{phrase} my timezone is CET")),
                speaker("my timezone is CET"),
                "{phrase}"
            );
        }
        for courtesy in &english.courtesies {
            assert_eq!(
                parse_command(&format!("{courtesy} remember that my timezone is CET")),
                speaker("my timezone is CET"),
                "{courtesy}"
            );
        }
        for yes in &english.yes {
            assert_eq!(parse_command(yes), Command::Confirm(true), "{yes}");
        }
        for no in &english.no {
            assert_eq!(parse_command(no), Command::Confirm(false), "{no}");
        }
        assert_eq!(parse_command("remembering is hard"), Command::Chat);
        assert_eq!(parse_command("notes from today"), Command::Chat);
        assert_eq!(parse_command("what do you remember"), Command::Chat);
        assert_eq!(parse_command("remember"), speaker(""));
        for request in [
            "remember where I parked: level 3",
            "remember when I ask for code, use Rust",
        ] {
            assert!(
                matches!(parse_command(request), Command::Remember { .. }),
                "{request}"
            );
        }
        // Natural variants are requests too, not conversation.
        for ask in [
            "please remember that I like tea",
            "Can you remember that I like tea?",
            "could you please remember I like tea",
            "don't forget that I like tea",
            "Don’t forget that I like tea",
            "pls note that I like tea",
            "ok, also remember that I like tea, please",
        ] {
            assert_eq!(parse_command(ask), speaker("I like tea"), "{ask}");
        }
        assert_eq!(
            parse_command("please remember everywhere that my timezone is CET"),
            Command::RememberEverywhere {
                subject: Subject::Speaker,
                fact: "my timezone is CET".into()
            }
        );
        assert_eq!(
            parse_command("/memory share timezone"),
            Command::Memory(MemoryCommand::Share("timezone".into()))
        );
        // Questions about the past are conversation.
        for ask in [
            "remember when we met?",
            "can you remember what I said yesterday?",
            "do you remember my birthday?",
            "Can you remember my birthday?",
            "hey, remember me?",
            "please",
            "Remember that night in Paris?",
            "hey, remember that guy from the conference?",
        ] {
            assert_eq!(parse_command(ask), Command::Chat, "{ask}");
        }
    }

    /// A never-mind names nothing to forget: conversation, in every language; a forget that
    /// names the thing is one (the positive control), and so is one with nothing after it
    /// (asked what to forget).
    #[test]
    fn a_never_mind_is_conversation() {
        let p = Phrases::built_in();
        for never_mind in [
            "forget it",
            "ok, forget it!",
            "forget this",
            "Vergiss es",
            "Oublie ça",
            "Забудь это",
            "Olvida eso",
            "Esquece isso",
            "Oublie pas !",
        ] {
            assert_eq!(
                parse_command_with(never_mind, &p),
                Command::Chat,
                "{never_mind}"
            );
        }
        for (forget, fact) in [
            ("forget it was my birthday", "it was my birthday"),
            ("Vergiss es, Paris", "es, Paris"),
            ("forget", ""),
        ] {
            assert!(
                matches!(parse_command_with(forget, &p), Command::Forget { fact: f, .. } if f == fact),
                "{forget}"
            );
        }
    }

    #[test]
    fn odd_input_never_panics() {
        for s in [
            "remember",
            "forget",
            "forget about",
            "remember this about",
            "ⓡemember",
            "remember\u{0301} x",
            "🦀",
            "what do you know about",
        ] {
            let _ = parse_command(s);
        }
    }
}
