//! The ingestor: turns an `IncomingMessage` into stored chat history before anything else can
//! fail, resolves people and places, decides whether the bot was addressed and reads, once, what
//! it asks (the platform's command, else `router::parse_command` on the text), marking memory
//! commands (explicit triggers) so summaries do not treat them as chatter.
//! What a paused person says is stored withheld (nothing is derived from it); link codes are
//! taken out of stored text, and a code seen outside a private chat is revoked at once.

pub mod attachments;
pub mod describe;
pub mod pdf;

use crate::domain::attachment::AttachmentKind;
use crate::domain::language::{self, Language};
use crate::domain::{
    IncomingMessage, MessageId, PersonId, Place, Platform, Privacy, SpaceId, SpaceKind,
    StoredMessage,
};
use crate::domain::{link, secret};
use crate::router::{Command, Phrases, parse_command_with};
use crate::store::{NewMessage, Resolved, Store, StoreError, Stored};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::warn;

/// The link codes (their hashes) the tries at storing one message revoked.
type Revoked = std::sync::Mutex<std::collections::HashSet<String>>;

/// A stored incoming message with everything the router needs.
#[derive(Debug, Clone)]
pub struct Ingested {
    /// The message as stored.
    pub message: StoredMessage,
    /// Where it was said: space, channel, privacy.
    pub place: Place,
    /// The author's id on the platform.
    pub author_external_id: String,
    /// The people it mentions, as (person, display name), bots left out.
    pub mentions: Vec<(PersonId, String)>,
    /// Whether the bot was addressed: private chat, reply to the bot, its name first, @name, or
    /// a platform command.
    pub addressed: bool,
    /// The text with the bot's name or mention taken off.
    pub command_text: String,
    /// What it asks of the bot: the platform's command, or what the router read in
    /// `command_text` (`Chat` when not addressed).
    pub command: Command,
    /// Whether the author moderates the space.
    pub author_is_moderator: bool,
    /// The author's memory is paused: nothing is derived from this message.
    pub withheld: bool,
    /// An addressed memory command (not conversation), as stored.
    pub is_command: bool,
    /// Where the message and the bot's answer are kept: `place`, or for an answer only the
    /// author sees, their private scope.
    pub record: Place,
    /// The language to answer in: the message's own, or for a slash command (a few words
    /// of English whoever types them) the last language its author wrote in.
    pub language: Option<crate::domain::language::Language>,
    /// Stored now; false when the platform delivered it again (it keeps its id, and was
    /// counted when it came first).
    pub new: bool,
}

/// Stores every incoming message (resolving people, spaces and mentions) before anything else can fail.
pub struct Ingestor {
    store: Arc<dyn Store>,
    bot_name: String,
    max_mentions: usize,
    reply_seq: AtomicU64,
    /// Longest piece of an attached file's text, and most pieces per file.
    chunking: (usize, usize),
    /// The memory phrases of every language.
    phrases: Arc<Phrases>,
    /// Describes images and transcribes recordings, when a model for it is configured.
    describer: Option<Arc<describe::Describer>>,
    /// Reads PDFs' text (in a child process), or not at all.
    pdf: pdf::PdfReader,
}

/// Removes characters that have no business in chat text (NUL and other C0/C1 controls,
/// except newlines and tabs), composes accents (`domain::composed`) and trims. Everything
/// else, emoji and scripts alike, is kept.
pub fn sanitize(text: &str) -> String {
    crate::domain::composed(text)
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect::<String>()
        .trim()
        .to_string()
}

pub use crate::domain::prefix_len_ignore_case;

/// Where `needle` first occurs in `text` from byte `from` on, case aside, as a byte range of
/// `text` (always on character boundaries).
pub fn find_ignore_case(text: &str, needle: &str, from: usize) -> Option<(usize, usize)> {
    text.char_indices()
        .filter(|(i, _)| *i >= from)
        .find_map(|(i, _)| prefix_len_ignore_case(&text[i..], needle).map(|n| (i, i + n)))
}

/// Whether a command is a slash command ("/memory …"), whose words say nothing of the
/// language its author speaks.
fn is_slash_command(command_text: &str) -> bool {
    command_text.trim_start().starts_with('/')
}

/// If `text` addresses the bot by name at the start ("Engram, …", "@Engram …", "engram: …")
/// or by an @mention anywhere, the text without that address.
pub fn strip_address(text: &str, bot_name: &str) -> Option<String> {
    for prefix in [format!("@{bot_name}"), bot_name.to_string()] {
        if let Some(len) = prefix_len_ignore_case(text, &prefix)
            && text[len..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_')
        {
            let rest = &text[len..];
            return Some(
                rest.trim_start_matches([',', ':', '!', ' ', '\t', '\n'])
                    .trim()
                    .to_string(),
            );
        }
    }
    let mention = format!("@{bot_name}");
    let mut out = Vec::new();
    let mut found = false;
    for word in text.split(' ') {
        let bare = word.trim_end_matches([',', ':', '!', '?', '.']);
        if prefix_len_ignore_case(bare, &mention) == Some(bare.len()) {
            found = true;
        } else {
            out.push(word);
        }
    }
    found.then(|| out.join(" ").trim().to_string())
}

/// The message's text as the bot keeps it: sanitized, and each mention of the bot itself
/// ("<@123>", "@engram_bot") written as its name ("@Engram"), so addressing reads the same on
/// every platform and a model reading history sees a name.
pub fn message_text(msg: &IncomingMessage, bot_name: &str) -> String {
    let mut text = sanitize(&msg.text);
    let name = format!("@{bot_name}");
    for token in msg
        .mentions
        .iter()
        .filter(|m| m.is_self && !m.token.is_empty())
        .map(|m| m.token.as_str())
    {
        // A token that ends in a word character stands for the bot only where the word ends
        // ("@engram_bot", not "@engram_bots").
        let word = token.ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        while let Some(start) = text[at..].find(token).map(|i| at + i) {
            let end = start + token.len();
            let ends = !word
                || text[end..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            out.push_str(&text[at..start]);
            out.push_str(if ends { &name } else { token });
            at = end;
        }
        out.push_str(&text[at..]);
        text = out;
    }
    text
}

/// Whether a message sent at `sent_at` was sent before its author's memory was cleared (at
/// `cleared_at`): at least a second before, as platforms give times in whole seconds
/// (Telegram), so a message written right after a clear is never taken for one before it.
pub fn sent_before_clear(sent_at: DateTime<Utc>, cleared_at: Option<DateTime<Utc>>) -> bool {
    cleared_at.is_some_and(|cleared| sent_at + chrono::Duration::seconds(1) <= cleared)
}

/// The author of `msg` as shown: by their name, or (no name left once cleaned) by their
/// account id.
fn shown_name(msg: &IncomingMessage) -> String {
    Some(sanitize(&msg.author_display_name))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| msg.author_external_id.clone())
}

/// Where `msg` was said, by `author` in `space`: a private space or a DM channel is the
/// author's private chat.
pub fn place_of(msg: &IncomingMessage, space: SpaceId, author: PersonId) -> Place {
    let private = msg.space_kind == SpaceKind::Private || msg.channel_privacy == Privacy::Dm;
    Place {
        platform: msg.platform,
        space,
        space_kind: msg.space_kind,
        channel: msg.channel_external_id.clone(),
        privacy: if private {
            Privacy::Dm
        } else {
            msg.channel_privacy
        },
        dm_owner: private.then_some(author),
    }
}

/// Where `msg`, said at `place` by `author`, is kept: an answer only the author sees is kept
/// with them (a channel of its own in their private scope, out of the channel's history and
/// everyone else's search); anything else where it was said.
fn kept_at(msg: &IncomingMessage, place: &Place, author: PersonId) -> Place {
    if msg.private_answer && place.privacy != Privacy::Dm {
        Place {
            channel: format!("private:{}", msg.author_external_id),
            privacy: Privacy::Dm,
            dm_owner: Some(author),
            ..place.clone()
        }
    } else {
        place.clone()
    }
}

/// What an addressed message asks, read once.
struct Asked {
    /// Whether it was said to the bot.
    addressed: bool,
    /// The text without the bot's name in front.
    command_text: String,
    /// What it asks for.
    command: Command,
}

/// The one reading of what `msg` (whose text is `text`) asks: the platform's command as it
/// came, else the text said to the bot (by name, in a private chat, or as a reply to it).
/// A bot's message asks nothing.
fn asked(
    msg: &IncomingMessage,
    text: &str,
    bot_name: &str,
    private: bool,
    phrases: &Phrases,
) -> Asked {
    let stripped = strip_address(text, bot_name).filter(|_| !msg.author_is_bot);
    let addressed = !msg.author_is_bot
        && (stripped.is_some() || msg.command.is_some() || private || msg.replies_to_bot);
    let command_text = stripped.unwrap_or_else(|| text.to_string());
    let command = match &msg.command {
        Some(command) if !msg.author_is_bot => command.clone(),
        _ if addressed => parse_command_with(&command_text, phrases),
        _ => Command::Chat,
    };
    Asked {
        addressed,
        command_text,
        command,
    }
}

impl Ingestor {
    /// An ingestor on `store`; `bot_name` is how people address the bot, `max_mentions` the most people one message may mention.
    pub fn new(store: Arc<dyn Store>, bot_name: &str, max_mentions: usize) -> Ingestor {
        Ingestor {
            store,
            bot_name: bot_name.to_string(),
            max_mentions,
            reply_seq: AtomicU64::new(0),
            chunking: (1200, 20),
            phrases: Arc::new(Phrases::built_in()),
            describer: None,
            pdf: pdf::PdfReader::off(),
        }
    }

    /// Reads the text of attached PDFs with `reader` (without one, a PDF is kept by name).
    pub fn with_pdf_reader(mut self, reader: pdf::PdfReader) -> Ingestor {
        self.pdf = reader;
        self
    }

    /// Describes images and transcribes recordings with `describer` (`describe`).
    pub fn with_describer(mut self, describer: Option<describe::Describer>) -> Ingestor {
        self.describer = describer.map(Arc::new);
        self
    }

    /// Whether `describe` has something to do for `msg`: an image or a recording it was
    /// sent with, read, and a model for it.
    pub fn describes(&self, msg: &IncomingMessage) -> bool {
        self.describer
            .as_ref()
            .is_some_and(|d| msg.attachments.iter().any(|a| d.reads(a)))
    }

    /// The kinds of file a model describes here (none without a describer).
    pub fn described_kinds(&self) -> Vec<AttachmentKind> {
        self.describer.as_ref().map_or_else(Vec::new, |d| d.kinds())
    }

    /// After `msg` is stored (`ingested`): what a model makes of its images (a description
    /// and the text they show) and recordings (a transcript) joins it, one model call per
    /// file (none for a file described before: the same bytes get the same surrogate). The
    /// file's line in the message's text gets the gist ("[image#12 shot.png] a screenshot
    /// of …"; `ingested` sees it too) and the rest is stored in pieces in the message's
    /// scope, like a text file's. A file the model fails on (or that is not what it says)
    /// keeps its bare line, and the log says why; a paused person's files are not sent.
    /// Before each model call but the first, `may_ask_again` (the limits) is asked: when it
    /// says no, the rest keep their bare lines.
    pub async fn describe(
        &self,
        msg: &IncomingMessage,
        ingested: &mut Ingested,
        may_ask_again: impl Fn() -> bool,
    ) -> Result<(), StoreError> {
        let Some(describer) = self.describer.as_ref().filter(|_| !ingested.withheld) else {
            return Ok(());
        };
        let records = self.store.message_attachments(ingested.message.id).await?;
        let mut done = std::collections::BTreeSet::new();
        let mut asked = 0;
        for a in msg.attachments.iter().filter(|a| describer.reads(a)) {
            let Ok(bytes) = &a.content else { continue };
            let sha = attachments::sha256_hex(bytes);
            let Some(record) = records.iter().find(|r| r.sha256 == sha) else {
                continue;
            };
            if !done.insert(record.id) {
                continue;
            }
            let cached = record
                .surrogate
                .as_deref()
                .and_then(|s| serde_json::from_str::<describe::Surrogate>(s).ok());
            // Redacted for this place (made elsewhere, a link code it shows is seen here now).
            let surrogate = match cached {
                Some(s) => self.redacted(s, &ingested.place).await?,
                None => {
                    // Each file is a model call: the first is the message's, each other one
                    // is paid on its own, and over the limits the rest keep their bare lines.
                    if asked > 0 && !may_ask_again() {
                        warn!(
                            platform = msg.platform.as_str(),
                            kind = a.kind.as_str(),
                            attachment = record.id,
                            "attachment not described: over the limits"
                        );
                        continue;
                    }
                    asked += 1;
                    match describer.describe(a).await {
                        Ok(s) => self.redacted(s, &ingested.place).await?,
                        Err(why) => {
                            warn!(platform = msg.platform.as_str(), kind = a.kind.as_str(),
                                attachment = record.id, reason = %why.reason(), "attachment not described");
                            continue;
                        }
                    }
                }
            };
            let name = attachments::kept_name(&a.name);
            let files = msg.attachments.len();
            // The text's language again: a photo without a caption is in the language of
            // its description now.
            let rewrite = |text: &str| {
                attachments::with_gist(text, record.id, &surrogate.gist, files).map(|t| {
                    let l = language::detect(&t);
                    (t, l)
                })
            };
            let m = &ingested.message;
            let pieces: Vec<NewMessage> = surrogate
                .pieces
                .iter()
                .enumerate()
                .map(|(n, (label, text))| NewMessage {
                    space: m.space,
                    channel: m.channel.clone(),
                    scope: m.scope.clone(),
                    privacy: ingested.record.privacy,
                    author: m.author,
                    is_bot: m.is_bot,
                    // Not something a person said: kept out of summaries and extraction.
                    is_command: true,
                    // Apart from a text file's pieces ("#a12.0"): a file read both ways
                    // keeps both.
                    external_id: format!("{}#a{}.d{n}", msg.external_id, record.id),
                    reply_to: None,
                    text: attachments::piece(a.kind, record.id, &name, label, text),
                    language: language::detect(text),
                    sent_at: m.sent_at,
                    withheld: false,
                })
                .collect();
            let json = serde_json::to_string(&surrogate).expect("a surrogate is JSON");
            match self
                .store
                .describe_attachment(m.id, record.id, &json, &rewrite, &pieces)
                .await?
            {
                Some(text) => ingested.message.text = text,
                // Forgotten meanwhile: nothing more to add.
                None => break,
            }
        }
        Ok(())
    }

    /// `s` with secrets and link codes taken out, as of any text kept from `place`.
    async fn redacted(
        &self,
        s: describe::Surrogate,
        place: &Place,
    ) -> Result<describe::Surrogate, StoreError> {
        let none = Revoked::default();
        let gist = self.without_link_codes(&s.gist, place, &none).await?;
        let mut pieces = Vec::with_capacity(s.pieces.len());
        for (label, text) in s.pieces {
            pieces.push((label, self.without_link_codes(&text, place, &none).await?));
        }
        Ok(describe::Surrogate { gist, pieces })
    }

    /// Reads memory requests with `phrases` (default: the built-in files).
    pub fn with_phrases(mut self, phrases: Arc<Phrases>) -> Ingestor {
        self.phrases = phrases;
        self
    }

    /// The memory phrases it reads requests with.
    pub fn phrases(&self) -> &Phrases {
        &self.phrases
    }

    /// Keeps the text of attached files in pieces of at most `chars` characters, at most
    /// `max` pieces per file (`[attachments]`).
    pub fn with_chunking(mut self, chars: usize, max: usize) -> Ingestor {
        self.chunking = (chars, max);
        self
    }

    /// Stores the message and resolves who and where. `None` for a message with no text.
    pub async fn ingest(&self, msg: &IncomingMessage) -> Result<Option<Ingested>, StoreError> {
        self.ingest_replacing(msg, &[]).await
    }

    /// `ingest`, with the messages `replaced` deleted in the transaction that stores it (an
    /// edit: never neither version). `None`, and nothing deleted, for a message with no text.
    ///
    /// Run again when a statement met a connection the database had ended (it ran nothing
    /// there): the message is stored once under its platform id, as when a platform delivers
    /// it again, instead of being lost.
    pub async fn ingest_replacing(
        &self,
        msg: &IncomingMessage,
        replaced: &[MessageId],
    ) -> Result<Option<Ingested>, StoreError> {
        let revoked = Revoked::default();
        crate::store::again_if_lost(|| self.ingest_once(msg, replaced, &revoked)).await
    }

    /// `ingest_replacing`, once; `revoked` holds the link codes earlier tries revoked.
    async fn ingest_once(
        &self,
        msg: &IncomingMessage,
        replaced: &[MessageId],
        revoked: &Revoked,
    ) -> Result<Option<Ingested>, StoreError> {
        let text = message_text(msg, &self.bot_name);
        if text.is_empty() && msg.attachments.is_empty() {
            return Ok(None);
        }
        let author_name = shown_name(msg);
        // One read: who wrote it, and whether their memory is paused (then it is withheld).
        let (resolved, place) = self.resolve_named(msg, &author_name).await?;
        let (author, withheld, space) = (resolved.person, resolved.paused, place.space);
        let Asked {
            addressed,
            command_text,
            command,
        } = asked(
            msg,
            &text,
            &self.bot_name,
            place.privacy == Privacy::Dm,
            &self.phrases,
        );
        let is_command = !matches!(command, Command::Chat);
        let stored_text = self.without_link_codes(&text, &place, revoked).await?;
        let record = kept_at(msg, &place, author);
        let new = NewMessage {
            space,
            channel: record.channel.clone(),
            scope: record.home_scope(),
            privacy: record.privacy,
            author,
            is_bot: msg.author_is_bot,
            is_command,
            external_id: msg.external_id.clone(),
            reply_to: msg.reply_to_external_id.clone(),
            text: stored_text.clone(),
            // Read below, from the text as stored (with its files' lines, if any).
            language: None,
            sent_at: msg.sent_at,
            withheld,
        };
        let inserted = if msg.attachments.is_empty() {
            let written_in = language::detect(&stored_text);
            let new = NewMessage {
                language: written_in,
                ..new
            };
            let stored = if replaced.is_empty() {
                self.store.insert_message(&new).await
            } else {
                self.store.replace_messages(replaced, &new).await
            };
            stored.map(|id| (id, stored_text, written_in))
        } else {
            self.insert_with_attachments(msg, new, &place, replaced, revoked)
                .await
        };
        let (stored, stored_text, written_in) = match inserted {
            // Another's message under this id: this is not it, and it stays theirs.
            Err(StoreError::TakenId { .. }) => {
                warn!(platform = msg.platform.as_str(), space = %space.0,
                    "a message under another author's id: not kept");
                return Ok(None);
            }
            other => other?,
        };
        let id = stored.id;
        let mentions = self.mentioned(msg).await?;
        let language = match language::tells(&command_text) {
            // Chatter is not answered: no language to choose.
            _ if !addressed => written_in,
            Some(l) if !is_slash_command(&command_text) => Some(l),
            // "/memory …" is English whoever types it, and "no" or "ok" could be any
            // language: the last words of theirs here that told.
            _ => self
                .store
                .recent_languages(author, space, id, 20)
                .await?
                .into_iter()
                .find_map(|(text, _)| {
                    let said = strip_address(&text, &self.bot_name).unwrap_or(text);
                    (!is_slash_command(&said))
                        .then(|| language::tells(&said))
                        .flatten()
                }),
        };
        Ok(Some(Ingested {
            message: StoredMessage {
                id,
                space,
                channel: record.channel.clone(),
                scope: record.home_scope(),
                author,
                author_name,
                is_bot: msg.author_is_bot,
                language: written_in,
                text: stored_text,
                sent_at: msg.sent_at,
                episode: None,
                attachment_of: None,
            },
            place,
            author_external_id: msg.author_external_id.clone(),
            mentions,
            addressed,
            command_text,
            command,
            author_is_moderator: msg.author_is_moderator,
            withheld,
            is_command,
            record,
            language,
            new: stored.new,
        }))
    }

    /// Stores `new` (the message as it would be stored without attachments) with a line per
    /// attachment at the end of its text and the pieces of their text as messages of their
    /// own; the id and the text stored. An attachment that could not be read is kept by name,
    /// and the log says why. `revoked` as for `without_link_codes`.
    async fn insert_with_attachments(
        &self,
        msg: &IncomingMessage,
        new: NewMessage,
        place: &Place,
        replaced: &[MessageId],
        revoked: &Revoked,
    ) -> Result<(Stored, String, Option<Language>), StoreError> {
        let (chars, max) = self.chunking;
        let mut reads = Vec::with_capacity(msg.attachments.len());
        for a in &msg.attachments {
            // A PDF is read in a child process: a hostile one costs that process only.
            let pdf = match &a.content {
                Ok(bytes) if attachments::is_pdf(&a.name, a.mime.as_deref()) => {
                    let text = self.pdf.read(bytes).await;
                    if let Err(why) = &text {
                        warn!(platform = msg.platform.as_str(), reason = %why, "a PDF's text was not read");
                    }
                    Some(text)
                }
                _ => None,
            };
            // Read on a blocking thread: CPU work over up to `attachments.max_bytes`.
            let a = a.clone();
            let mut r = tokio::task::spawn_blocking(move || attachments::read(&a, pdf, chars, max))
                .await
                .unwrap_or_else(|_| attachments::Read {
                    gist: "not read: unreadable".into(),
                    chunks: Vec::new(),
                });
            // A file's text is kept like a message's: secrets and link codes out.
            r.gist = self.without_link_codes(&r.gist, place, revoked).await?;
            for chunk in &mut r.chunks {
                *chunk = self.without_link_codes(chunk, place, revoked).await?;
            }
            // Each part's language, as kept, on a blocking thread: a long file has many parts.
            let chunks = r.chunks.clone();
            let languages = tokio::task::spawn_blocking(move || language::detect_all(&chunks))
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            reads.push((r, languages));
        }
        let names: Vec<String> = msg
            .attachments
            .iter()
            .map(|a| attachments::kept_name(&a.name))
            .collect();
        let mut kept = Vec::new();
        // For each attachment, its place among those kept (with an id), if it is.
        let mut slot = Vec::new();
        for ((a, (r, _)), name) in msg.attachments.iter().zip(&reads).zip(&names) {
            match &a.content {
                Ok(bytes) => {
                    slot.push(Some(kept.len()));
                    kept.push(crate::store::NewAttachment {
                        scope: new.scope.clone(),
                        sha256: attachments::sha256_hex(bytes),
                        kind: a.kind.as_str().to_string(),
                        name: name.clone(),
                        mime: a
                            .mime
                            .clone()
                            .unwrap_or_else(|| "application/octet-stream".into()),
                        size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
                        at: msg.sent_at,
                    });
                }
                Err(_) => slot.push(None),
            }
            if r.gist.starts_with("not read") {
                tracing::warn!(platform = msg.platform.as_str(), kind = a.kind.as_str(),
                    reason = %r.gist, "attachment kept by name only");
            }
        }
        // The message's language is read here, not inside the store's transaction, from its
        // text as composed below but for the ids (digits, which no language counts; past the
        // 400 bytes detection reads, the cut falls a few bytes apart).
        let language = language::detect(&with_lines(
            &new.text,
            msg.attachments
                .iter()
                .zip(&reads)
                .zip(&names)
                .map(|((a, (r, _)), name)| attachments::line(a.kind, None, name, &r.gist)),
        ));
        let text = std::sync::Mutex::new(String::new());
        let compose = |ids: &[i64]| {
            let mut lines = Vec::new();
            let mut parts = Vec::new();
            for (i, ((a, (r, languages)), at)) in
                msg.attachments.iter().zip(&reads).zip(&slot).enumerate()
            {
                let id = at.map(|i| ids[i]);
                lines.push(attachments::line(a.kind, id, &names[i], &r.gist));
                let Some(id) = id else { continue };
                for (n, (chunk, language)) in r.chunks.iter().zip(languages).enumerate() {
                    parts.push(NewMessage {
                        // Not something a person said: kept out of summaries and extraction.
                        is_command: true,
                        external_id: format!("{}#a{id}.{n}", new.external_id),
                        reply_to: None,
                        text: attachments::piece(
                            a.kind,
                            id,
                            &names[i],
                            &format!("part {}/{}", n + 1, r.chunks.len()),
                            chunk,
                        ),
                        language: *language,
                        ..new.clone()
                    });
                }
            }
            let full = with_lines(&new.text, lines);
            *text.lock().expect("text lock") = full.clone();
            (
                NewMessage {
                    text: full,
                    language,
                    ..new.clone()
                },
                parts,
            )
        };
        let stored = self
            .store
            .insert_with_attachments(&kept, &compose, replaced)
            .await?;
        let text = text.into_inner().expect("text lock");
        Ok((stored, text, language))
    }

    /// Who wrote `msg` and where, made on first sight, without storing it.
    pub async fn resolve(&self, msg: &IncomingMessage) -> Result<(PersonId, Place), StoreError> {
        let (resolved, place) = self.resolve_named(msg, &shown_name(msg)).await?;
        Ok((resolved.person, place))
    }

    async fn resolve_named(
        &self,
        msg: &IncomingMessage,
        author_name: &str,
    ) -> Result<(Resolved, Place), StoreError> {
        let resolved = self
            .store
            .resolve_account(
                msg.platform,
                &msg.author_external_id,
                author_name,
                msg.author_username.as_deref(),
            )
            .await?;
        let space = self
            .store
            .resolve_space(
                msg.platform,
                &msg.space_external_id,
                msg.space_kind,
                &msg.space_title,
            )
            .await?;
        Ok((resolved, place_of(msg, space, resolved.person)))
    }

    /// `text` as stored: secrets redacted and link codes taken out, however they are spelled
    /// out. A code seen outside a private chat is dead at once, as anyone there could use it.
    /// `revoked`: the codes earlier tries at this message revoked (one that then met a lost
    /// connection): found no more, they are taken out all the same.
    async fn without_link_codes(
        &self,
        text: &str,
        place: &Place,
        revoked: &Revoked,
    ) -> Result<String, StoreError> {
        let spans = link::code_spans(text);
        if spans.is_empty() {
            return Ok(stored_form(text));
        }
        let private = place.privacy == Privacy::Dm;
        let hashes: Vec<String> = spans.iter().map(|(c, _)| link::code_hash(c)).collect();
        let mut codes = self.store.seen_link_codes(&hashes, !private).await?;
        {
            let mut earlier = revoked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            codes.extend(earlier.iter().filter(|h| hashes.contains(h)).cloned());
            earlier.extend(codes.iter().cloned());
        }
        if codes.is_empty() {
            return Ok(stored_form(text));
        }
        if !private {
            warn!(
                platform = place.platform.as_str(),
                "a link code was posted outside a private chat: revoked"
            );
        }
        let seen: Vec<std::ops::Range<usize>> = spans
            .into_iter()
            .zip(hashes)
            .filter(|(_, h)| codes.contains(h))
            .map(|((_, r), _)| r)
            .collect();
        Ok(stored_form(&link::redact_spans(text, &seen)))
    }

    /// The people `msg` is about, with their names: each once, the bot aside, at most
    /// `max_mentions` of them (a message naming hundreds builds memory for a bounded few).
    async fn mentioned(
        &self,
        msg: &IncomingMessage,
    ) -> Result<Vec<(PersonId, String)>, StoreError> {
        let mut mentions = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let about = msg
            .mentions
            .iter()
            .filter(|m| !m.is_self && !crate::domain::same_name(&m.display_name, &self.bot_name))
            .filter(|m| seen.insert((m.external_id.clone(), m.username.clone())))
            .take(self.max_mentions);
        for m in about {
            if m.external_id.is_empty() {
                // Known by username only ("@dana_k" on Telegram): someone the bot has seen,
                // shown by their name.
                let found = match &m.username {
                    Some(u) => self.store.find_username(msg.platform, u).await?,
                    None => None,
                };
                if let Some(id) = found {
                    let name = self.store.person(id).await?.map(|p| p.display_name);
                    mentions.push((id, name.unwrap_or_else(|| m.display_name.clone())));
                }
            } else {
                let id = self
                    .store
                    .resolve_account(
                        msg.platform,
                        &m.external_id,
                        &sanitize(&m.display_name),
                        m.username.as_deref(),
                    )
                    .await?
                    .person;
                mentions.push((id, m.display_name.clone()));
            }
        }
        Ok(mentions)
    }

    /// Stores the bot's own reply in the same place (before it is sent), link codes taken out;
    /// a reply to a paused person is withheld like their message, and an answer to a memory
    /// command is marked as one. With `unless_forgotten` (the count of forgets read before
    /// the answer was made, and what may be kept instead), a forget counted since keeps the
    /// other (`Messages::insert_reply`).
    #[allow(clippy::too_many_arguments)]
    pub async fn ingest_reply(
        &self,
        platform: Platform,
        place: &Place,
        kept: KeptReply<'_>,
        in_reply_to: &StoredMessage,
        at: DateTime<Utc>,
        is_command: bool,
        unless_forgotten: Option<(i64, KeptReply<'_>)>,
    ) -> Result<MessageId, StoreError> {
        let bot = self
            .store
            .resolve_person(platform, crate::domain::SELF_ACCOUNT, &self.bot_name)
            .await?;
        let seq = self.reply_seq.fetch_add(1, Ordering::Relaxed);
        let message = |kept: KeptReply<'_>| {
            let stored = stored_form(kept.text);
            NewMessage {
                space: place.space,
                channel: place.channel.clone(),
                scope: place.home_scope(),
                privacy: place.privacy,
                author: bot,
                is_bot: true,
                is_command,
                external_id: format!("reply:{}:{seq}", in_reply_to.id.0),
                reply_to: Some(in_reply_to.id.0.to_string()),
                language: language::detect(&stored),
                text: stored,
                sent_at: at,
                withheld: kept.withheld,
            }
        };
        let stored = match unless_forgotten {
            Some((forgets, instead)) => {
                self.store
                    .insert_reply(&message(kept), &message(instead), forgets)
                    .await?
            }
            None => self.store.insert_message(&message(kept)).await?,
        };
        if stored.new {
            crate::telemetry::message_stored(platform.as_str(), true);
        }
        Ok(stored.id)
    }
}

/// What of the bot's reply is kept in the history.
#[derive(Debug, Clone, Copy)]
pub struct KeptReply<'a> {
    /// The text.
    pub text: &'a str,
    /// Withheld from search and summaries (a note that memory was shown, a reply to a paused
    /// person).
    pub withheld: bool,
}

/// A message's text followed by its attachments' surrogate lines, one per line.
fn with_lines(text: &str, lines: impl IntoIterator<Item = String>) -> String {
    let lines: Vec<String> = lines.into_iter().collect();
    if text.is_empty() {
        lines.join("\n")
    } else {
        format!("{text}\n{}", lines.join("\n"))
    }
}

/// A message's text as stored: without link codes (as the bot writes them) and secrets.
pub fn stored_form(text: &str) -> String {
    secret::redact_secrets(&link::redact(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link code posted in a group is revoked by the first try at storing the message; a
    /// try after a lost connection finds no code any more, and still takes it out.
    #[tokio::test]
    async fn a_second_try_still_takes_out_a_code_the_first_revoked() {
        let store: Arc<dyn Store> = Arc::new(
            crate::store::sqlite::SqliteStore::in_memory()
                .await
                .unwrap(),
        );
        let ana = store
            .resolve_person(Platform::Console, "ana", "ana")
            .await
            .unwrap();
        let lab = store
            .resolve_space(Platform::Console, "lab", SpaceKind::Group, "lab")
            .await
            .unwrap();
        let code = link::new_code();
        let now = Utc::now();
        store
            .create_link_code(
                &link::code_hash(&code),
                ana,
                Platform::Console,
                now,
                now + chrono::Duration::hours(1),
            )
            .await
            .unwrap();
        let ingestor = Ingestor::new(store, "Engram", 10);
        let place = Place {
            platform: Platform::Console,
            space: lab,
            space_kind: SpaceKind::Group,
            channel: "general".into(),
            privacy: Privacy::GuildPublic,
            dm_owner: None,
        };
        // Spelled otherwise than the bot writes codes (which the stored form takes out anyway).
        let spelled = code.to_lowercase().replace('-', " ");
        let text = format!("my code is {spelled}");
        let tries = Revoked::default();
        let first = ingestor
            .without_link_codes(&text, &place, &tries)
            .await
            .unwrap();
        assert!(!first.contains(&spelled), "{first}");
        // Revoked by the first: the same text is no longer taken for a code...
        let plain = ingestor
            .without_link_codes(&text, &place, &Revoked::default())
            .await
            .unwrap();
        assert!(plain.contains(&spelled), "{plain}");
        // ...but a second try at one message takes it out all the same.
        let again = ingestor
            .without_link_codes(&text, &place, &tries)
            .await
            .unwrap();
        assert_eq!(again, first);
    }

    #[test]
    fn what_was_sent_before_a_clear() {
        let cleared = DateTime::from_timestamp_millis(1_700_000_000_500).unwrap();
        let at = |ms: i64| DateTime::from_timestamp_millis(ms).unwrap();
        assert!(
            !sent_before_clear(at(1_699_000_000_000), None),
            "never cleared"
        );
        assert!(sent_before_clear(at(1_699_000_000_000), Some(cleared)));
        assert!(
            sent_before_clear(at(1_699_999_999_500), Some(cleared)),
            "a second before"
        );
        // In the second of the clear (a platform's whole-second time), or after: kept.
        assert!(!sent_before_clear(at(1_700_000_000_000), Some(cleared)));
        assert!(!sent_before_clear(at(1_699_999_999_501), Some(cleared)));
        assert!(!sent_before_clear(at(1_700_000_001_000), Some(cleared)));
    }

    #[test]
    fn addressing_by_name_or_mention() {
        assert_eq!(
            strip_address("Engram, remember that x", "Engram").as_deref(),
            Some("remember that x")
        );
        assert_eq!(strip_address("engram: hi", "Engram").as_deref(), Some("hi"));
        assert_eq!(
            strip_address("@Engram what's up", "Engram").as_deref(),
            Some("what's up")
        );
        assert_eq!(
            strip_address("hey @engram, hi", "Engram").as_deref(),
            Some("hey hi")
        );
        assert_eq!(strip_address("Engrams are neat", "Engram"), None);
        assert_eq!(strip_address("I like engram", "Engram"), None);
        assert_eq!(strip_address("Engram", "Engram").as_deref(), Some(""));
    }

    #[test]
    fn case_folding_that_changes_length_never_breaks_a_cut() {
        // 'İ' lowercases to two characters (3 bytes), the Kelvin sign to 'k' (1 byte).
        assert_eq!(
            strip_address("Engram, İİİİİİİİ", "Engram").as_deref(),
            Some("İİİİİİİİ")
        );
        assert_eq!(strip_address("\u{212A} @engram_bot", "Engram"), None);
        assert_eq!(
            strip_address("@Engram \u{212A}", "Engram").as_deref(),
            Some("\u{212A}")
        );
        assert_eq!(strip_address("İ", "Engram"), None);
        assert_eq!(prefix_len_ignore_case("\u{212A}elvin", "kelvin"), Some(8));
        assert_eq!(prefix_len_ignore_case("ab", "abc"), None);
        assert_eq!(
            find_ignore_case("xx\u{212A}ELVIN yy", "kelvin", 0),
            Some((2, 10))
        );
        assert_eq!(find_ignore_case("İİ engram", "ENGRAM", 0), Some((5, 11)));
    }

    #[test]
    fn sanitize_drops_controls_keeps_unicode() {
        assert_eq!(
            sanitize("  a\u{0}b\u{7}c\n🦀 ש\u{200d} "),
            "abc\n🦀 ש\u{200d}"
        );
        assert_eq!(sanitize("\u{0}\u{1}  "), "");
    }
}
