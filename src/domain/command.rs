//! What a message asks of the bot, as the router reads it from text or an adapter receives it
//! from the platform (a Discord slash command, a Telegram /command for this bot): the commands
//! and whom they are about.

/// Whom a command is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// The person speaking ("me", "I", or no one named).
    Speaker,
    /// Someone named with @ or by a "about NAME" phrase.
    Named(String),
    /// The fact starts with a word that may be a known person ("gruzilkin is Sergey"):
    /// that person if the bot knows them, else the speaker.
    MaybeNamed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// What an addressed message asks for.
pub enum Command {
    /// "remember that …": a fact kept where it was said.
    Remember {
        /// Whom it is about.
        subject: Subject,
        /// The fact, as said.
        fact: String,
    },
    /// "remember everywhere that …": an explicit fact the speaker chooses to have known in
    /// every place (the `global` scope).
    RememberEverywhere {
        /// Whom it is about.
        subject: Subject,
        /// The fact, as said.
        fact: String,
    },
    /// "forget that …": one thing taken back.
    Forget {
        /// Whom it is about.
        subject: Subject,
        /// What to forget, as said.
        fact: String,
    },
    /// "forget everything about …".
    ForgetEverything {
        /// Whom it is about.
        subject: Subject,
    },
    /// "what do you know about …?".
    Recall {
        /// Whom it is about.
        subject: Subject,
    },
    /// `/memory …`: the person's structured memory.
    Memory(MemoryCommand),
    /// "yes" / "no" to a question the bot asked (clear, forget).
    Confirm(bool),
    /// "help" or "/help".
    Help,
    /// Anything else: conversation for the responder.
    Chat,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// The `/memory` subcommands.
pub enum MemoryCommand {
    /// `/memory` or `/memory view`: the person's MEMORY.md.
    View,
    /// `/memory pause`: keep nothing new about them.
    Pause,
    /// `/memory resume`.
    Resume,
    /// `/memory clear`: everything kept about them (asks first).
    Clear,
    /// `/memory forget <words>`: the matching entries (asks first).
    Forget(String),
    /// `/memory search <words>`.
    Search(String),
    /// `/memory export`.
    Export,
    /// `/memory link` (a code is made) or `/memory link CODE` (the code is used).
    Link(String),
    /// `/memory links`: the accounts that share this memory.
    Links,
    /// `/memory unlink [platform]`.
    Unlink(String),
    /// `/memory share <words>`: the matching entry becomes known everywhere (global).
    Share(String),
    /// `/memory unshare <words>`: the matching global entry is known only here again.
    Unshare(String),
    /// `/memory something-else`: says what the subcommands are.
    Unknown(String),
}
