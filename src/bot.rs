//! The bot: ingest → route → memory command or responder → store the reply. One `handle` call
//! per incoming message, the same for every platform adapter.

use crate::config::Config;
use crate::domain::{IncomingMessage, PersonId, Platform};
use crate::ingest::{Ingested, Ingestor};
use crate::llm::ChatModel;
use crate::memory::{
    FactRequest, ForgetOutcome, MemoryError, MemoryManager, Method, RememberOutcome,
};
use crate::responder::Responder;
use crate::router::{Command, Subject, parse_command};
use crate::store::{Store, StoreError};
use std::sync::Arc;
use tracing::{error, info};

/// What the bot says back, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub platform: Platform,
    pub space_external_id: String,
    pub channel_external_id: String,
    pub in_reply_to: String,
    pub text: String,
}

pub struct Bot {
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
        let Some(ingested) = self.ingestor.ingest(msg).await? else {
            return Ok(None);
        };
        if !ingested.addressed {
            return Ok(None);
        }
        let text = match self.answer(msg, &ingested).await {
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
        match parse_command(text) {
            Command::Help => Ok(HELP.to_string()),
            Command::Chat => self.responder.reply(ingested).await,
            Command::Remember { subject, fact } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
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
