//! The bot: ingest → route → memory command or responder → store the reply. One `handle` call
//! per incoming message, the same for every platform adapter.

use crate::config::Config;
use crate::domain::{IncomingMessage, PersonId, Platform};
use crate::ingest::{Ingested, Ingestor};
use crate::llm::ChatModel;
use crate::memory::entries::Captured;
use crate::memory::{
    FactRequest, ForgetOutcome, MemoryError, MemoryManager, Method, RememberOutcome,
};
use crate::responder::Responder;
use crate::router::{Command, MemoryCommand, Subject, parse_command};
use crate::store::{Store, StoreError};
use std::sync::Arc;
use tracing::{error, info, warn};

/// What the bot says back, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub platform: Platform,
    pub space_external_id: String,
    pub channel_external_id: String,
    pub in_reply_to: String,
    pub text: String,
}

/// How long a `/memory link` code can be used.
const LINK_CODE_MINUTES: i64 = 10;

/// A one-time code like "K7QM-X2PD" (no 0/O or 1/I to misread).
fn new_link_code() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rng();
    let c: String = (0..8)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{}-{}", &c[..4], &c[4..])
}

/// Only this is stored: the code's SHA-256, whatever its case and dashes.
fn link_code_hash(code: &str) -> String {
    use sha2::{Digest, Sha256};
    let normal: String = code
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    hex::encode(Sha256::digest(normal.as_bytes()))
}

/// A destructive /memory request waiting for the person's "yes".
#[derive(Debug, Clone)]
enum Pending {
    Clear,
    /// The matching entries: id and value.
    Forget(Vec<(i64, String)>),
}

pub struct Bot {
    /// Keyed by (person, platform, space, channel): a "yes" counts only where it was asked.
    pending: moka::sync::Cache<(PersonId, String), Pending>,
    config: Config,
    store: Arc<dyn Store>,
    ingestor: Ingestor,
    memory: Arc<MemoryManager>,
    responder: Responder,
}

const HELP: &str = "I remember things about the people here. Try:\n\
  remember that I love Rust\n\
  remember this about @bob: he plays chess\n\
  forget that I love Rust\n\
  forget everything about me\n\
  what do you know about me / about @bob\n\
  note that / keep in mind … (goes into your MEMORY.md)\n\
  /memory, /memory search <words>, /memory forget <topic>,\n\
  /memory pause, /memory resume, /memory clear, /memory export\n\
  /memory link (join your Discord and Telegram memory), /memory unlink\n\
Anything else is conversation.";

impl Bot {
    pub fn new(
        config: Config,
        store: Arc<dyn Store>,
        memory: Arc<MemoryManager>,
        llm: Option<Arc<dyn ChatModel>>,
    ) -> Bot {
        let ingestor = Ingestor::new(store.clone(), &config.bot.name);
        let responder = Responder::new(memory.clone(), llm, &config);
        Bot {
            pending: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(std::time::Duration::from_secs(600))
                .build(),
            config,
            store,
            ingestor,
            memory,
            responder,
        }
    }

    pub fn memory(&self) -> &Arc<MemoryManager> {
        &self.memory
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Handles one message: always stored first; a reply when the bot was addressed.
    pub async fn handle(&self, msg: &IncomingMessage) -> Result<Option<Reply>, StoreError> {
        self.handle_with(msg, std::future::pending()).await
    }

    /// `handle`, running `while_answering` (a platform's typing indicator) only while an
    /// answer is being made: not for chatter, and dropped as soon as the answer is ready.
    pub async fn handle_with(
        &self,
        msg: &IncomingMessage,
        while_answering: impl std::future::Future<Output = ()>,
    ) -> Result<Option<Reply>, StoreError> {
        let Some(ingested) = self.ingestor.ingest(msg).await? else {
            return Ok(None);
        };
        if !ingested.addressed {
            return Ok(None);
        }
        let answer = self.answer(msg, &ingested);
        tokio::pin!(answer);
        let answer = tokio::select! {
            biased;
            done = &mut answer => done,
            // The indicator stopped early (it failed): the answer still comes.
            _ = while_answering => answer.await,
        };
        let text = match answer {
            Ok(text) => text,
            Err(MemoryError::Invalid(why)) | Err(MemoryError::NotAllowed(why)) => why,
            Err(MemoryError::Busy) => {
                "Memory is busy with other updates right now; please try again.".to_string()
            }
            Err(MemoryError::Store(e)) => {
                error!(error = %e, "memory store failed while answering");
                "Something went wrong on my side; your message is saved, but I couldn't act on it. Please try again.".to_string()
            }
        };
        let now = self.memory.clock().now().max(ingested.message.sent_at);
        self.ingestor
            .ingest_reply(msg.platform, &ingested.place, &text, &ingested.message, now)
            .await?;
        Ok(Some(Reply {
            platform: msg.platform,
            space_external_id: msg.space_external_id.clone(),
            channel_external_id: msg.channel_external_id.clone(),
            in_reply_to: msg.external_id.clone(),
            text,
        }))
    }

    async fn answer(
        &self,
        msg: &IncomingMessage,
        ingested: &Ingested,
    ) -> Result<String, MemoryError> {
        let text = ingested.command_text.trim();
        if text.is_empty() {
            return Ok(format!(
                "Yes? Say \"{} help\" to see what I can do.",
                self.config.bot.name
            ));
        }
        let len = text.chars().count();
        if len > self.config.bot.max_command_chars {
            return Ok(format!(
                "That message is too long for me to act on ({len} characters; the limit is {}). I kept it in the chat history, but did nothing else with it.",
                self.config.bot.max_command_chars
            ));
        }
        let moderator = ingested.author_is_moderator
            || self
                .config
                .is_moderator(msg.platform, &ingested.author_external_id);
        let command = parse_command(text);
        if !matches!(command, Command::Confirm(_)) {
            // A question the bot asked lapses once the person moves on.
            self.pending.invalidate(&Self::pending_key(ingested));
        }
        match command {
            Command::Help => Ok(HELP.to_string()),
            Command::Chat => self.responder.reply(ingested).await,
            Command::Memory(cmd) => self.memory_command(ingested, cmd).await,
            Command::Confirm(yes) => match self.confirm(ingested, yes).await? {
                Some(answer) => Ok(answer),
                None => self.responder.reply(ingested).await,
            },
            Command::Remember { subject, fact } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
                if subject == ingested.message.author {
                    return self.capture(ingested, &fact).await;
                }
                let req = self.fact_request(ingested, subject, &name, moderator, &fact);
                info!(actor = %ingested.message.author, subject = %subject, "remember");
                Ok(match self.memory.remember(&req).await? {
                    RememberOutcome::Saved {
                        method: Method::Llm,
                    } => format!(
                        "Got it, I'll remember that about {}.",
                        self.who(ingested, subject, &name)
                    ),
                    RememberOutcome::Saved {
                        method: Method::Offline,
                    } => format!(
                        "Got it, I'll remember that about {} (noted word for word: my language model is not available).",
                        self.who(ingested, subject, &name)
                    ),
                    RememberOutcome::AlreadyKnown => "I already knew that.".to_string(),
                })
            }
            Command::Forget { subject, fact } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
                let req = self.fact_request(ingested, subject, &name, moderator, &fact);
                info!(actor = %ingested.message.author, subject = %subject, "forget");
                Ok(match self.memory.forget(&req).await? {
                    ForgetOutcome::Forgotten { .. } => "Done, I've forgotten that.".to_string(),
                    ForgetOutcome::NotFound { method: Method::Llm } => "I didn't find that in what I know, so nothing changed.".to_string(),
                    ForgetOutcome::NotFound { method: Method::Offline } => {
                        "I didn't find that wording in what I know, so nothing changed. Try the exact words you used when you told me.".to_string()
                    }
                })
            }
            Command::ForgetEverything { subject } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
                let req = self.fact_request(ingested, subject, &name, moderator, "");
                Ok(match self.memory.forget_everything(&req).await? {
                    0 => format!(
                        "I had no facts about {} here, so nothing changed.",
                        self.who(ingested, subject, &name)
                    ),
                    _ => format!(
                        "Done, I've forgotten every fact about {} that I keep here.",
                        self.who(ingested, subject, &name)
                    ),
                })
            }
            Command::Recall { subject } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
                let memory = self
                    .memory
                    .person_memory(subject, &name, &ingested.place)
                    .await?;
                let who = self.who(ingested, subject, &name);
                Ok(if memory.is_empty() {
                    format!("I don't know anything about {who} yet.")
                } else {
                    format!("Here's what I know about {who}:\n{}", memory.text.trim())
                })
            }
        }
    }

    fn pending_key(ingested: &Ingested) -> (PersonId, String) {
        (
            ingested.message.author,
            ingested.place.home_scope().key() + "/" + &ingested.place.channel,
        )
    }

    /// "remember that …" about oneself: a structured entry (MEMORY.md) and the facts text.
    async fn capture(&self, ingested: &Ingested, fact: &str) -> Result<String, MemoryError> {
        let person = ingested.message.author;
        let entries = self.memory.entries();
        if entries.paused(person).await? {
            return Ok("Your memory is paused, so I didn't save that. Say \"/memory resume\" to turn it back on.".to_string());
        }
        if fact.chars().count() > self.memory.settings().max_fact_chars {
            return Err(MemoryError::Invalid(format!(
                "That is too long to remember (the limit is {} characters). Nothing was changed.",
                self.memory.settings().max_fact_chars
            )));
        }
        info!(actor = %person, "capture");
        match entries
            .capture(person, &ingested.place, fact, ingested.message.id.0)
            .await?
        {
            Captured::Refused(why) => Ok(why),
            Captured::Written(crate::domain::EntryWrite::Unchanged(_)) => {
                Ok("I already knew that.".to_string())
            }
            Captured::Written(_) => {
                // The facts text feeds the merged per-person context; a failure there is
                // logged and never undoes the entry.
                let name = ingested.message.author_name.clone();
                let req = self.fact_request(ingested, person, &name, false, fact);
                Ok(match self.memory.remember(&req).await {
                    Ok(RememberOutcome::Saved {
                        method: Method::Offline,
                    }) => "Got it, I'll remember that (noted word for word: my language model is not available).".to_string(),
                    Ok(_) => "Got it, I'll remember that.".to_string(),
                    Err(e) => {
                        error!(error = %e, "facts update after capture failed; the entry is kept");
                        "Got it, I'll remember that.".to_string()
                    }
                })
            }
        }
    }

    async fn memory_command(
        &self,
        ingested: &Ingested,
        cmd: MemoryCommand,
    ) -> Result<String, MemoryError> {
        let person = ingested.message.author;
        let place = &ingested.place;
        let entries = self.memory.entries();
        let private = place.privacy == crate::domain::Privacy::Dm;
        Ok(match cmd {
            MemoryCommand::View => {
                let md = entries.memory_md(person, place).await?;
                let paused = if entries.paused(person).await? {
                    "\n(Memory is paused: nothing new is collected. /memory resume turns it back on.)"
                } else {
                    ""
                };
                if md.lines().count() <= 1 {
                    format!("I have no notes about you that I may show here.{paused}")
                } else if private {
                    format!("{md}{paused}")
                } else {
                    format!(
                        "{md}(Only what may be shown in this channel; ask me in a private chat for all of it.){paused}"
                    )
                }
            }
            MemoryCommand::Pause => {
                entries.set_paused(person, true).await?;
                "Memory paused: I won't collect or extract anything new about you. Say \"/memory resume\" to turn it back on.".to_string()
            }
            MemoryCommand::Resume => {
                entries.set_paused(person, false).await?;
                "Memory is back on.".to_string()
            }
            MemoryCommand::Clear => {
                self.pending
                    .insert(Self::pending_key(ingested), Pending::Clear);
                "This removes everything I have derived about you, everywhere: your MEMORY.md entries, their history, daily notes, and what I know about you (with its history). Reply \"yes\" to confirm or \"no\" to keep it.".to_string()
            }
            MemoryCommand::Forget(topic) => {
                if topic.trim().is_empty() {
                    return Err(MemoryError::Invalid(
                        "Forget what? Try \"/memory forget <topic>\".".into(),
                    ));
                }
                let found = entries.search(person, place, &topic, 20).await?;
                if found.is_empty() {
                    format!(
                        "I have nothing about \"{}\" that I may show here, so nothing changed.",
                        topic.trim()
                    )
                } else {
                    let list: Vec<String> = found
                        .iter()
                        .map(|(e, _)| format!("- {}", e.value))
                        .collect();
                    self.pending.insert(
                        Self::pending_key(ingested),
                        Pending::Forget(
                            found.iter().map(|(e, _)| (e.id, e.value.clone())).collect(),
                        ),
                    );
                    format!(
                        "This matches:\n{}\nReply \"yes\" to forget it, or \"no\" to keep it.",
                        list.join("\n")
                    )
                }
            }
            MemoryCommand::Search(query) => {
                let found = entries.search(person, place, &query, 10).await?;
                if found.is_empty() {
                    format!("Nothing in your memory matches \"{}\".", query.trim())
                } else {
                    let list: Vec<String> = found
                        .iter()
                        .enumerate()
                        .map(|(i, (e, _))| {
                            format!("{}. {} ({})", i + 1, e.value, e.category.heading())
                        })
                        .collect();
                    list.join("\n")
                }
            }
            MemoryCommand::Export => entries.memory_md(person, place).await?,
            MemoryCommand::Link(code) => self.link(ingested, &code).await?,
            MemoryCommand::Unlink => {
                let platform = place.platform;
                if self
                    .store
                    .unlink_identity(platform, &ingested.author_external_id)
                    .await?
                {
                    info!(actor = %person, platform = platform.as_str(), "identity unlinked");
                    format!(
                        "Unlinked: this {} account has its own memory again.",
                        platform.as_str()
                    )
                } else {
                    "This account is not linked to another one, so nothing changed.".to_string()
                }
            }
            MemoryCommand::Unknown(word) => format!(
                "I don't know \"/memory {word}\". Try /memory, /memory search <words>, /memory forget <topic>, /memory pause, /memory resume, /memory clear, /memory export, /memory link or /memory unlink."
            ),
        })
    }

    /// `/memory link`: makes a one-time code (private chats only, as anyone who sees it could
    /// use it), or with a code made on another platform, joins this account to that person.
    async fn link(&self, ingested: &Ingested, code: &str) -> Result<String, MemoryError> {
        let place = &ingested.place;
        if place.privacy != crate::domain::Privacy::Dm {
            return Ok(if code.trim().is_empty() {
                "Ask me for a link code in a private chat: anyone who sees a code can use it."
                    .to_string()
            } else {
                "I won't use a code posted here: anyone could have seen it. Make a new one with \"/memory link\" in a private chat.".to_string()
            });
        }
        let now = self.memory.clock().now();
        if code.trim().is_empty() {
            let code = new_link_code();
            self.store
                .create_link_code(
                    &link_code_hash(&code),
                    ingested.message.author,
                    place.platform,
                    now,
                    now + chrono::Duration::minutes(LINK_CODE_MINUTES),
                )
                .await?;
            info!(actor = %ingested.message.author, platform = place.platform.as_str(), "link code made");
            return Ok(format!(
                "Your link code is {code}. Within {LINK_CODE_MINUTES} minutes, send \"/memory link {code}\" to me in a private chat on your other platform (Discord or Telegram). It works once; that account then shares your memory from here: what you told me in private and what I know about you everywhere."
            ));
        }
        use crate::store::LinkRedeem;
        Ok(
            match self
                .store
                .redeem_link_code(
                    &link_code_hash(code),
                    place.platform,
                    &ingested.author_external_id,
                    now,
                )
                .await?
            {
                LinkRedeem::Linked { person } => {
                    info!(from = %ingested.message.author, to = %person, platform = place.platform.as_str(), "identity linked");
                    format!(
                        "Linked: this {} account now shares your memory. \"/memory unlink\" undoes it.",
                        place.platform.as_str()
                    )
                }
                LinkRedeem::Unknown => "That code is unknown or has expired. Make a new one with \"/memory link\" on the other platform.".to_string(),
                LinkRedeem::SamePlatform => "That code was made on this platform: use it on the other one.".to_string(),
                LinkRedeem::AlreadyLinked => "This account is already linked to that one.".to_string(),
            },
        )
    }

    async fn confirm(&self, ingested: &Ingested, yes: bool) -> Result<Option<String>, MemoryError> {
        let key = Self::pending_key(ingested);
        let Some(pending) = self.pending.remove(&key) else {
            return Ok(None);
        };
        if !yes {
            return Ok(Some("OK, nothing was changed.".to_string()));
        }
        let person = ingested.message.author;
        let entries = self.memory.entries();
        Ok(Some(match pending {
            Pending::Forget(found) => {
                let ids: Vec<i64> = found.iter().map(|(id, _)| *id).collect();
                let n = entries.delete(person, &ids).await?;
                // What was said when it was captured is also in the facts text: forget it
                // there too, or the bot would still know it. The entries are gone either way.
                let name = ingested.message.author_name.clone();
                for (_, value) in &found {
                    let req = self.fact_request(ingested, person, &name, false, value);
                    if let Err(e) = self.memory.forget(&req).await {
                        warn!(error = %e, "forgetting a deleted entry in the facts failed");
                    }
                }
                info!(actor = %person, entries = n, "memory forget");
                format!(
                    "Done, I've forgotten {n} {}.",
                    if n == 1 { "entry" } else { "entries" }
                )
            }
            Pending::Clear => {
                let n = self.memory.clear_person(person).await?;
                info!(actor = %person, rows = n, "memory clear");
                "Done, I've cleared everything I had derived about you.".to_string()
            }
        }))
    }

    fn who(&self, ingested: &Ingested, subject: PersonId, name: &str) -> String {
        if subject == ingested.message.author {
            "you".to_string()
        } else {
            name.to_string()
        }
    }

    fn fact_request<'a>(
        &self,
        ingested: &'a Ingested,
        subject: PersonId,
        name: &'a str,
        moderator: bool,
        text: &'a str,
    ) -> FactRequest<'a> {
        FactRequest {
            subject,
            subject_name: name,
            actor: ingested.message.author,
            actor_name: &ingested.message.author_name,
            actor_is_moderator: moderator,
            place: &ingested.place,
            text,
            source: Some(ingested.message.id),
        }
    }

    /// The person a command is about: the speaker, someone mentioned, or a known name.
    async fn resolve_subject(
        &self,
        msg: &IncomingMessage,
        ingested: &Ingested,
        subject: &Subject,
    ) -> Result<(PersonId, String), MemoryError> {
        let speaker = (
            ingested.message.author,
            ingested.message.author_name.clone(),
        );
        let name = match subject {
            Subject::Speaker => return Ok(speaker),
            Subject::Named(name) | Subject::MaybeNamed(name) => name,
        };
        if name.eq_ignore_ascii_case(&ingested.message.author_name)
            || name.eq_ignore_ascii_case(&ingested.author_external_id)
        {
            return Ok(speaker);
        }
        if let Some((id, shown)) = ingested
            .mentions
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
        {
            return Ok((*id, shown.clone()));
        }
        let found = match self.store.find_identity(msg.platform, name).await? {
            Some(id) => Some(id),
            None => self.store.find_person_by_name(msg.platform, name).await?,
        };
        match (found, subject) {
            (Some(id), _) => {
                let shown = self
                    .store
                    .person(id)
                    .await?
                    .map(|p| p.display_name)
                    .unwrap_or_else(|| name.clone());
                Ok((id, shown))
            }
            (None, Subject::MaybeNamed(_)) => Ok(speaker),
            (None, _) => Err(MemoryError::Invalid(format!(
                "I don't know anyone called {name} here yet. Nothing was changed."
            ))),
        }
    }
}
