//! The responder: conversation that is not a memory command. Asks `MemoryManager` for the
//! context of the speaker (and people mentioned), renders the prompt within the token budget,
//! and calls the chat model; without one, it says so and shows the memory it would have used.

use crate::config::Config;
use crate::domain::StoredMessage;
use crate::domain::texts::{Say, Texts};
use crate::ingest::Ingested;
use crate::llm::prompts::{Prompts, fill};
use crate::llm::{ChatMessage, ChatModel, ChatRequest, LlmError};
use crate::memory::tokens::TokenCounter;
use crate::memory::tools::{Caller, StagedChange, ToolExecutor, run_with_tools};
use crate::memory::{ContextBundle, MemoryError, MemoryManager};
use prompt::{new_notes, render_prompt};
use std::sync::Arc;
use tracing::{info, warn};

pub mod prompt;

/// What the responder answers: the text, and memory changes the model asked for that wait for
/// the person's confirmation.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The reply text.
    pub text: String,
    /// Memory changes that wait for the person's yes.
    pub staged: Vec<StagedChange>,
    /// The answer only shows memory (a recall, a listing, the offline dump): it is not
    /// conversation, so it is kept in the history as a short note, never searched or recalled.
    pub shows_memory: bool,
}

impl From<String> for Answer {
    fn from(text: String) -> Answer {
        Answer {
            text,
            staged: Vec::new(),
            shows_memory: false,
        }
    }
}

impl Answer {
    /// An answer that shows memory rather than says something (see `shows_memory`).
    pub fn showing_memory(text: String) -> Answer {
        Answer {
            shows_memory: true,
            ..Answer::from(text)
        }
    }
}

/// Answers conversation: memory context for the people in it, then the model (or the offline answer).
pub struct Responder {
    memory: Arc<MemoryManager>,
    /// Its own words (no model, a failing model) in each language.
    texts: Arc<Texts>,
    llm: Option<Arc<dyn ChatModel>>,
    /// What the prompt is measured with.
    tokens: TokenCounter,
    /// The memory tools a reply may use (staging what needs the person's "yes").
    tools: ToolExecutor,
    /// The reply prompt with the bot's name filled in, and what is added with the tools.
    system: String,
    tools_prompt: String,
    budget: usize,
    temperature: f32,
    max_tokens: u32,
    /// Rounds of memory tool calls allowed per reply; 0 offers no tools.
    tool_rounds: usize,
}

/// The memory part of an offline answer, readable by a person, in `say`'s language: the
/// labels are the catalogue's (the prompt's own, which the model reads, stay as they are).
pub fn describe_memory(bundle: &ContextBundle, say: &Say) -> String {
    let people: Vec<String> = bundle
        .people
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| {
            let about = say.with("memory-about", &[("name", p.name.as_str().into())]);
            format!("{about}\n{}", localized_labels(p.text.trim(), say))
        })
        .collect();
    let mut parts = people;
    if let Some(speaker) = bundle.people.first() {
        let notes: Vec<String> = new_notes(speaker, &bundle.notes)
            .map(|e| format!("- {}", e.value))
            .collect();
        if !notes.is_empty() {
            let heading = say.with(
                "memory-notes-about",
                &[("name", speaker.name.as_str().into())],
            );
            parts.push(format!("{heading}\n{}", notes.join("\n")));
        }
    }
    if parts.is_empty() {
        say.text("memory-nobody-yet")
    } else {
        parts.join("\n\n")
    }
}

/// A person's memory text with its section labels ("Facts:", "Today:", "Earlier this
/// week:", on lines of their own) in `say`'s language.
pub(crate) fn localized_labels(text: &str, say: &Say) -> String {
    text.lines()
        .map(|line| {
            match crate::memory::offline::LABELS
                .iter()
                .find(|(label, _)| line.strip_suffix(':') == Some(*label))
            {
                Some((_, id)) => format!("{}:", say.text(id)),
                None => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Responder {
    /// A responder over `memory`, with the chat model when one is configured; prompts are
    /// measured with `tokens`, and a reply may use `tools`.
    pub fn new(
        memory: Arc<MemoryManager>,
        llm: Option<Arc<dyn ChatModel>>,
        tokens: TokenCounter,
        tools: ToolExecutor,
        config: &Config,
        prompts: &Prompts,
        texts: Arc<Texts>,
    ) -> Responder {
        Responder {
            texts,
            memory,
            llm,
            tokens,
            tools,
            system: fill(&prompts.reply, &[("bot_name", &config.bot.name)]),
            tools_prompt: prompts.reply_tools.clone(),
            budget: config.memory.context_budget_tokens,
            temperature: config.llm.reply_temperature,
            max_tokens: config.llm.max_reply_tokens,
            tool_rounds: if config.llm.reply_tools {
                config.llm.max_tool_rounds
            } else {
                0
            },
        }
    }

    /// Whether a chat model is configured (without one, answers show memory instead).
    pub fn has_model(&self) -> bool {
        self.llm.is_some()
    }

    /// The answer to `msg`, an addressed message that is not a memory command.
    pub async fn reply(&self, msg: &Ingested) -> Result<Answer, MemoryError> {
        let say = Say::new(&self.texts, msg.language);
        let mut people = vec![(msg.message.author, msg.message.author_name.clone())];
        people.extend(msg.mentions.iter().cloned());
        let bundle = self
            .memory
            // The question as stored: a secret in it never reaches an embedding API.
            .context(
                &people,
                &msg.place,
                &crate::ingest::stored_form(&msg.command_text),
            )
            .await?;
        // The message answered carries the language to answer in: its own, or for one too
        // short to tell ("ok"), the speaker's last words that told.
        let current = StoredMessage {
            language: msg.language,
            ..msg.message.clone()
        };
        let prompt = render_prompt(&self.system, &bundle, &current, self.budget, &self.tokens);
        let Some(llm) = &self.llm else {
            return Ok(Answer::showing_memory(say.with(
                "no-model",
                &[
                    ("tokens", prompt.tokens.to_string().into()),
                    ("budget", self.budget.to_string().into()),
                    ("memory", describe_memory(&bundle, &say).into()),
                ],
            )));
        };
        let system = if self.tool_rounds > 0 {
            prompt.system + &self.tools_prompt
        } else {
            prompt.system
        };
        let request = ChatRequest {
            task: "reply",
            messages: vec![ChatMessage::system(system), ChatMessage::user(prompt.user)],
            temperature: self.temperature,
            json: false,
            max_tokens: Some(self.max_tokens),
            tools: Vec::new(),
        };
        let answer = if self.tool_rounds > 0 {
            // The tools act for the speaker, where they spoke, whatever the model asks; what
            // would delete or rewrite their memory waits for their own "yes".
            let tools = self.tools.staging();
            let caller = Caller {
                person: msg.message.author,
                place: msg.place.clone(),
            };
            run_with_tools(llm.as_ref(), request, &tools, &caller, self.tool_rounds)
                .await
                .map(|c| {
                    if !c.calls.is_empty() {
                        info!(calls = c.calls.len(), "reply used memory tools");
                    }
                    (c.answer, tools.take_staged())
                })
        } else {
            llm.complete(&request)
                .await
                .map(|a| (a.content, Vec::new()))
        };
        match answer {
            Ok((answer, staged)) => Ok(Answer {
                text: answer.trim().to_string(),
                staged,
                shows_memory: false,
            }),
            Err(e) => {
                // The provider's words (which may carry account ids) go to the log only.
                warn!(error = %e, "reply: LLM failed; answering from memory");
                let id = match e {
                    LlmError::CircuitOpen { .. } => "model-failing",
                    _ => "model-unreachable",
                };
                Ok(Answer::showing_memory(say.with(
                    id,
                    &[("memory", describe_memory(&bundle, &say).into())],
                )))
            }
        }
    }
}
