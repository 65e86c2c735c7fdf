//! Domain types at the bottom of the flow: people, places, privacy scopes and the one
//! `IncomingMessage` every platform adapter produces. Nothing here does I/O.

pub mod attachment;
pub mod budget;
pub mod clock;
pub mod command;
pub mod entry;
pub mod fills;
pub mod language;
pub mod link;
pub mod mention;
pub mod phrases;
pub mod secret;
pub mod status;
pub mod texts;
pub mod vector;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

pub use clock::{Clock, ManualClock, SystemClock};
pub use command::{Command, MemoryCommand, Subject};
pub use entry::{Category, DailyNote, Entry, EntryVersion, EntryWrite, NewEntry};
pub use vector::{Embedding, ModelIdentity, VectorSpaceId};

/// Internal id of a person; platform user ids map onto it through identities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PersonId(pub i64);

impl fmt::Display for PersonId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Internal id of a space (a guild, a group, or a private chat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SpaceId(pub i64);

impl fmt::Display for SpaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Row id of a stored chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MessageId(pub i64);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
/// The chat platforms Engram talks on.
pub enum Platform {
    /// The terminal (`engram chat` and scripts).
    Console,
    /// Discord.
    Discord,
    /// Telegram.
    Telegram,
    /// The memory API and MCP server: the accounts of the programs' own users.
    Api,
}

impl Platform {
    /// Every platform.
    pub const ALL: [Platform; 4] = [
        Platform::Console,
        Platform::Discord,
        Platform::Telegram,
        Platform::Api,
    ];

    /// The stored name: "console", "discord" or "telegram".
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Console => "console",
            Platform::Discord => "discord",
            Platform::Telegram => "telegram",
            Platform::Api => "api",
        }
    }

    /// The platform a stored name names.
    pub fn parse(s: &str) -> Option<Platform> {
        match s {
            "console" => Some(Platform::Console),
            "discord" => Some(Platform::Discord),
            "telegram" => Some(Platform::Telegram),
            "api" => Some(Platform::Api),
            _ => None,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of place a space is: a Discord guild, a Telegram group, or a private chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpaceKind {
    /// A Discord server.
    Guild,
    /// A Telegram group or supergroup.
    Group,
    /// A private chat with the bot.
    Private,
}

impl SpaceKind {
    /// The stored name: "guild", "group" or "private".
    pub fn as_str(self) -> &'static str {
        match self {
            SpaceKind::Guild => "guild",
            SpaceKind::Group => "group",
            SpaceKind::Private => "private",
        }
    }

    /// The kind a stored name names.
    pub fn parse(s: &str) -> Option<SpaceKind> {
        match s {
            "guild" => Some(SpaceKind::Guild),
            "group" => Some(SpaceKind::Group),
            "private" => Some(SpaceKind::Private),
            _ => None,
        }
    }
}

/// Privacy level of a memory item, from the place it was learned (README, "Privacy and forgetting").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Privacy {
    /// Learned in a private chat: surfaces only in that person's private chat.
    Dm,
    /// Learned in a channel not everyone in the guild can see: surfaces only in that channel.
    ChannelRestricted,
    /// Learned in a public channel: surfaces anywhere in the same guild.
    GuildPublic,
    /// Explicit, non-sensitive facts: surface anywhere, for that person.
    Global,
}

impl Privacy {
    /// The stored name of the level.
    pub fn as_str(self) -> &'static str {
        match self {
            Privacy::Dm => "dm",
            Privacy::ChannelRestricted => "channel_restricted",
            Privacy::GuildPublic => "guild_public",
            Privacy::Global => "global",
        }
    }

    /// The level a stored name names.
    pub fn parse(s: &str) -> Option<Privacy> {
        match s {
            "dm" => Some(Privacy::Dm),
            "channel_restricted" => Some(Privacy::ChannelRestricted),
            "guild_public" => Some(Privacy::GuildPublic),
            "global" => Some(Privacy::Global),
            _ => None,
        }
    }
}

/// The privacy boundary a memory item lives in. Facts blobs, messages and summaries are all
/// keyed by scope, so "may this surface here?" is one comparison of scope keys, done in the
/// store query rather than by filtering results afterwards.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Everywhere the person is: only what they chose to share (`/memory share`).
    Global,
    /// Public channels of one guild or group.
    Space(SpaceId),
    /// One restricted channel of a guild.
    Channel(SpaceId, String),
    /// The private chats of one person with the bot (on any platform).
    Dm(PersonId),
}

impl Scope {
    /// The stored key: `global`, `space:ID`, `channel:ID:CHANNEL` or `dm:PERSON`.
    pub fn key(&self) -> String {
        match self {
            Scope::Global => "global".to_string(),
            Scope::Space(s) => format!("space:{}", s.0),
            Scope::Channel(s, c) => format!("chan:{}:{}", s.0, c),
            Scope::Dm(p) => format!("dm:{}", p.0),
        }
    }

    /// The scope a stored key names.
    pub fn parse(key: &str) -> Option<Scope> {
        if key == "global" {
            return Some(Scope::Global);
        }
        if let Some(rest) = key.strip_prefix("space:") {
            return rest.parse().ok().map(|n| Scope::Space(SpaceId(n)));
        }
        if let Some(rest) = key.strip_prefix("dm:") {
            return rest.parse().ok().map(|n| Scope::Dm(PersonId(n)));
        }
        if let Some(rest) = key.strip_prefix("chan:") {
            let (space, chan) = rest.split_once(':')?;
            return Some(Scope::Channel(
                SpaceId(space.parse().ok()?),
                chan.to_string(),
            ));
        }
        None
    }

    /// The privacy level of what lives in this scope.
    pub fn privacy(&self) -> Privacy {
        match self {
            Scope::Global => Privacy::Global,
            Scope::Space(_) => Privacy::GuildPublic,
            Scope::Channel(..) => Privacy::ChannelRestricted,
            Scope::Dm(_) => Privacy::Dm,
        }
    }
}

/// Where a message was said or a question is asked: enough to decide what may surface.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Place {
    /// The platform.
    pub platform: Platform,
    /// The space (guild, group or private chat).
    pub space: SpaceId,
    /// What kind of space it is.
    pub space_kind: SpaceKind,
    /// The channel's platform id (the chat id in a private chat).
    pub channel: String,
    /// Who may see what is said here.
    pub privacy: Privacy,
    /// The person whose private chat this is, for `Privacy::Dm` places.
    pub dm_owner: Option<PersonId>,
}

impl Place {
    /// The scope that a message said here, or a fact learned here, belongs to.
    pub fn home_scope(&self) -> Scope {
        match (self.privacy, self.dm_owner) {
            (Privacy::Global, _) => Scope::Global,
            (Privacy::Dm, Some(owner)) => Scope::Dm(owner),
            (Privacy::ChannelRestricted, _) => Scope::Channel(self.space, self.channel.clone()),
            _ => Scope::Space(self.space),
        }
    }

    /// Scopes whose memory about `subject` may surface in this place, broadest first.
    ///
    /// DM memory surfaces only in that same person's private chat; restricted-channel memory
    /// only in that channel; space memory anywhere in the same space; global anywhere.
    pub fn visible_scopes(&self, subject: PersonId) -> Vec<Scope> {
        let mut scopes = vec![Scope::Global];
        match self.privacy {
            Privacy::Dm => {
                if self.dm_owner == Some(subject) {
                    scopes.push(Scope::Dm(subject));
                }
            }
            Privacy::ChannelRestricted => {
                scopes.push(Scope::Space(self.space));
                scopes.push(Scope::Channel(self.space, self.channel.clone()));
            }
            Privacy::GuildPublic | Privacy::Global => scopes.push(Scope::Space(self.space)),
        }
        scopes
    }

    /// Scopes whose chatter is summarized for context in this place (all but global, which
    /// holds explicit facts only).
    pub fn summary_scopes(&self, subject: PersonId) -> Vec<Scope> {
        self.visible_scopes(subject)
            .into_iter()
            .filter(|s| *s != Scope::Global)
            .collect()
    }
}

/// A person as the memory knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The person's id, the same on every linked platform account.
    pub id: PersonId,
    /// The name shown for them.
    pub display_name: String,
}

/// The one message shape every platform adapter produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingMessage {
    /// The platform it came from.
    pub platform: Platform,
    /// Platform id of the guild or group; for private chats, the chat id.
    pub space_external_id: String,
    /// What kind of space it was said in.
    pub space_kind: SpaceKind,
    /// The space's title (guild or group name), empty when it has none.
    pub space_title: String,
    /// Platform id of the channel (or thread/topic); the chat id again for private chats.
    pub channel_external_id: String,
    /// Who may see the channel.
    pub channel_privacy: Privacy,
    /// The author's platform id.
    pub author_external_id: String,
    /// The author's display name.
    pub author_display_name: String,
    /// The author's platform username (Telegram's @name), when they have one.
    pub author_username: Option<String>,
    /// Whether the author is a bot (the bot's own messages included).
    pub author_is_bot: bool,
    /// Platform id of this message, used to make ingestion idempotent.
    pub external_id: String,
    /// The text as the platform gave it.
    pub text: String,
    /// When it was sent.
    pub sent_at: DateTime<Utc>,
    /// The platform id of the message it replies to, if any.
    pub reply_to_external_id: Option<String>,
    /// Whether the message replies to one of the bot's own messages.
    pub replies_to_bot: bool,
    /// The accounts mentioned (by id, or by @username), each with its token in the text; the
    /// bot's own mention has `is_self`.
    pub mentions: Vec<Mention>,
    /// Its attachments, downloaded by the adapter within the limits.
    pub attachments: Vec<attachment::IncomingAttachment>,
    /// Whether the author moderates this space (may clear others' memory).
    pub author_is_moderator: bool,
    /// Only the author sees the answer (a Discord ephemeral reply): the message and the
    /// answer are kept in the author's private scope, never in the channel's history.
    pub private_answer: bool,
    /// What the platform delivered as a command for the bot (a Discord slash command, a
    /// Telegram "/command" for this bot): taken as it is; ingest does not read the text for it
    /// again.
    pub command: Option<Command>,
}

/// The account id Engram's own messages are stored under, on every platform (its replies are
/// stored by the bot, not read back from the platform).
pub const SELF_ACCOUNT: &str = "engram:self";

/// Someone mentioned in a message: by account id, or (Telegram's "@name") by username only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// Empty when only the username is known.
    pub external_id: String,
    /// The name the mention shows.
    pub display_name: String,
    /// The platform username, when known.
    pub username: Option<String>,
    /// The mention as the text writes it ("<@123>", "@dana_k"); empty when the text does not
    /// hold it (a Discord reply's ping).
    pub token: String,
    /// The bot itself: its token in the text stands for the bot's name.
    pub is_self: bool,
}

/// A message as stored in chat history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// The stored message's id.
    pub id: MessageId,
    /// The space it was said in.
    pub space: SpaceId,
    /// The channel's platform id.
    pub channel: String,
    /// The privacy scope it belongs to.
    pub scope: Scope,
    /// Who said it.
    pub author: PersonId,
    /// Their display name when it was stored.
    pub author_name: String,
    /// Whether the bot said it.
    pub is_bot: bool,
    /// The text, secrets already redacted.
    pub text: String,
    /// When it was sent.
    pub sent_at: DateTime<Utc>,
    /// The conversation (episode) the background indexer put it in; None until indexed.
    pub episode: Option<i64>,
    /// For the text of an attachment stored as a message of its own: the message that
    /// carried it (never shown as conversation, searchable where that one may surface).
    pub attachment_of: Option<MessageId>,
    /// The language its text was detected in (`language::detect`), `None` without letters.
    pub language: Option<language::Language>,
}

/// The UTC calendar day of a time; day summaries are per UTC day.
pub fn day_of(t: DateTime<Utc>) -> NaiveDate {
    t.date_naive()
}

/// One SHA-256 over several texts (length-prefixed, so ("ab","c") ≠ ("a","bc")): a cache key
/// of what a value depends on, or a key that names something without holding it.
pub fn hash_parts(parts: &[&str]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    h.finalize().into()
}

/// `text` in Unicode's composed form (NFC): "é" typed as "e" and a combining accent is the
/// one letter "é" a keyboard gives, so both are the same word (the combining mark is no
/// letter, and would split the word in two). Borrowed when it is so already.
pub fn composed(text: &str) -> std::borrow::Cow<'_, str> {
    use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};
    match is_nfc_quick(text.chars()) {
        IsNormalized::Yes => std::borrow::Cow::Borrowed(text),
        _ => std::borrow::Cow::Owned(text.nfc().collect()),
    }
}

/// Whether two names are the same, case aside in every script ("ольга" is "Ольга").
pub fn same_name(a: &str, b: &str) -> bool {
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

/// The words of `text` in order, lowercased, nothing dropped or stemmed (for phrase rules
/// such as "what did you recommend").
pub fn plain_words(text: &str) -> Vec<String> {
    composed(text)
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The length in bytes of the start of `text` that is `prefix`, case aside (each character
/// compared by its lowercase form, so characters whose lowercase is longer or shorter, like
/// 'İ' or the Kelvin sign, never shift what is cut). None when `text` does not start so.
pub fn prefix_len_ignore_case(text: &str, prefix: &str) -> Option<usize> {
    let mut want = prefix.chars().flat_map(char::to_lowercase);
    let mut len = 0;
    let mut pending: Vec<char> = Vec::new();
    for c in text.chars() {
        pending.clear();
        pending.extend(c.to_lowercase());
        for l in &pending {
            if want.next() != Some(*l) {
                return None;
            }
        }
        len += c.len_utf8();
        if want.clone().next().is_none() {
            return Some(len);
        }
    }
    want.next().is_none().then_some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(privacy: Privacy, owner: Option<i64>) -> Place {
        Place {
            platform: Platform::Console,
            space: SpaceId(1),
            space_kind: SpaceKind::Guild,
            channel: "general".into(),
            privacy,
            dm_owner: owner.map(PersonId),
        }
    }

    #[test]
    fn scope_keys_round_trip() {
        for s in [
            Scope::Global,
            Scope::Space(SpaceId(4)),
            Scope::Channel(SpaceId(4), "a:b".into()),
            Scope::Dm(PersonId(9)),
        ] {
            assert_eq!(Scope::parse(&s.key()), Some(s.clone()));
        }
        assert_eq!(Scope::parse("space:x"), None);
        assert_eq!(Scope::parse("nope"), None);
    }

    #[test]
    fn dm_memory_is_visible_only_in_the_owners_private_chat() {
        let alice = PersonId(1);
        let bob = PersonId(2);
        let alice_dm = place(Privacy::Dm, Some(1));
        assert!(alice_dm.visible_scopes(alice).contains(&Scope::Dm(alice)));
        // About Bob in Alice's chat: neither private chat, only what Bob wants known everywhere.
        assert_eq!(alice_dm.visible_scopes(bob), vec![Scope::Global]);
        let public = place(Privacy::GuildPublic, None);
        assert!(!public.visible_scopes(alice).contains(&Scope::Dm(alice)));
        assert!(
            public.visible_scopes(alice).contains(&Scope::Global),
            "the control"
        );
    }

    #[test]
    fn restricted_channel_memory_stays_in_its_channel() {
        let alice = PersonId(1);
        let restricted = place(Privacy::ChannelRestricted, None);
        let chan = Scope::Channel(SpaceId(1), "general".into());
        assert_eq!(restricted.home_scope(), chan);
        assert!(restricted.visible_scopes(alice).contains(&chan));
        let public = place(Privacy::GuildPublic, None);
        assert!(!public.visible_scopes(alice).contains(&chan));
        let mut other = restricted.clone();
        other.channel = "other".into();
        assert!(!other.visible_scopes(alice).contains(&chan));
        let mut other_space = public.clone();
        other_space.space = SpaceId(2);
        assert!(
            !other_space
                .visible_scopes(alice)
                .contains(&Scope::Space(SpaceId(1)))
        );
    }

    /// Where each kind of place keeps what is said there: "remember everywhere" (global) is
    /// global, a private chat is its owner's, a public channel is the space's.
    #[test]
    fn each_place_has_its_home_scope() {
        let space = Scope::Space(SpaceId(1));
        assert_eq!(place(Privacy::Global, None).home_scope(), Scope::Global);
        assert_eq!(place(Privacy::Global, Some(3)).home_scope(), Scope::Global);
        assert_eq!(
            place(Privacy::Dm, Some(3)).home_scope(),
            Scope::Dm(PersonId(3))
        );
        assert_eq!(place(Privacy::GuildPublic, None).home_scope(), space);
        for p in [
            Privacy::Global,
            Privacy::Dm,
            Privacy::GuildPublic,
            Privacy::ChannelRestricted,
        ] {
            assert_eq!(place(p, Some(3)).home_scope().privacy(), p);
        }
    }
}
