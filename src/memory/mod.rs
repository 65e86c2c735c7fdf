//! The memory tier: `MemoryManager` owns facts (remember/forget), what others told (hearsay),
//! a person's entries kept in step with their facts (`entry_facts`), day and history
//! summaries, the 3-way merge into one context per person, forgetting, and the caches in front
//! of them, and the audit trail of every change. It sits between the bot and responder above
//! and the store and LLM below.

pub mod audit;
pub mod cache;
pub mod context;
pub mod entries;
pub mod entry_facts;
pub mod extraction;
pub mod facts;
pub mod forgetting;
pub mod hearsay;
pub mod offline;
pub mod summaries;
pub mod tokens;
pub mod tools;
pub mod working;

use crate::config::MemoryConfig;
use crate::domain::Clock;
use crate::llm::{ChatMessage, ChatModel, ChatRequest, LlmError, parse_json_answer};
use crate::retrieval::Retriever;
use crate::store::{Change, Store, StoreError};
use cache::MemoryCaches;
use std::sync::Arc;
use tracing::{debug, warn};

pub use context::{ContextBundle, PersonMemory};
pub use entry_facts::{CaptureOutcome, FactsFollowed, Moved};
pub use facts::{FactRequest, ForgetOutcome, RememberOutcome};

/// What a memory operation failed on. Each variant says what happened, typed; the chat layer
/// words the answer (`bot`), and a log shows this text.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A remember or forget with nothing after the command (a forget: nothing that names
    /// anything, "it"); nothing was changed.
    #[error("{verb:?} without a fact")]
    EmptyFact {
        /// What was asked.
        verb: FactVerb,
    },
    /// "remember that" with nothing after the phrase; nothing was changed.
    #[error("nothing to remember after the phrase")]
    EmptyCapture,
    /// A fact longer than the limit; nothing was changed.
    #[error("{verb:?} of {len} characters (the limit is {limit})")]
    FactTooLong {
        /// What was asked.
        verb: FactVerb,
        /// Its length in characters.
        len: usize,
        /// The most a fact may have.
        limit: usize,
    },
    /// The subject's facts text would outgrow its limit; nothing was changed.
    #[error("the facts about {subject} are full ({limit} characters)")]
    FactsFull {
        /// Whose facts, as shown.
        subject: String,
        /// The most the text may have.
        limit: usize,
    },
    /// Only the subject (or a moderator) may take this back; nothing was changed.
    #[error("only {subject} or a moderator may change this")]
    NotTheirs {
        /// Whose memory, as shown.
        subject: String,
    },
    /// The subject paused their memory: nothing new is kept about them.
    #[error("{subject} has paused their memory")]
    SubjectPaused {
        /// Whose memory, as shown.
        subject: String,
    },
    /// A text memory never keeps (code, a secret).
    #[error("never kept: {0:?}")]
    NeverKept(entries::NeverKept),
    /// No one of that name is known where the request was made.
    #[error("no one called {name} here")]
    UnknownPerson {
        /// The name used.
        name: String,
    },
    /// More than one person of that name is known there.
    #[error("more than one person called {name}")]
    AmbiguousPerson {
        /// The name used.
        name: String,
        /// Each of them, as shown.
        candidates: Vec<String>,
    },
    /// An import that is not a memory export of this person's; nothing was changed.
    #[error(transparent)]
    Import(#[from] entries::ImportError),
    /// Facts kept changing under us (many concurrent writers); nothing was lost, try again.
    #[error("memory is busy with other updates; try again")]
    Busy,
}

/// What a fact request asks, for the words of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactVerb {
    /// "remember …".
    Remember,
    /// "forget …".
    Forget,
}

impl MemoryError {
    /// Whether the same operation may succeed if tried again.
    pub fn is_retryable(&self) -> bool {
        match self {
            MemoryError::Store(e) => e.is_retryable(),
            MemoryError::Busy => true,
            _ => false,
        }
    }
}

/// How a memory change or view was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// By the model.
    Llm,
    /// Without a model (rules and word matching).
    Offline,
}

impl Method {
    /// "llm" or "offline", as logged and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Llm => "llm",
            Method::Offline => "offline",
        }
    }
}

/// The memory tier: facts, entries, summaries, context and forgetting over one store, with
/// this process's caches.
pub struct MemoryManager {
    store: Arc<dyn Store>,
    llm: Option<Arc<dyn ChatModel>>,
    clock: Arc<dyn Clock>,
    caches: MemoryCaches,
    settings: MemoryConfig,
    retriever: Arc<Retriever>,
    entries: Arc<entries::EntryBook>,
    tools: tools::ToolExecutor,
    changes_applied: tokio::sync::watch::Sender<u64>,
    prompts: Arc<crate::llm::prompts::Prompts>,
    episodes: crate::config::EpisodesConfig,
    /// Engram's own account per platform, once it has one (it never changes then).
    own_accounts: std::sync::Mutex<
        std::collections::HashMap<crate::domain::Platform, crate::domain::PersonId>,
    >,
}

/// What the memory tier is built from. The composition root (`app::build_memory`, given the
/// retriever and the prompts) makes each part once and hands the same ones to whoever else
/// needs them (the bot's entries, the responder's tools).
pub struct MemoryParts {
    /// Where memory lives.
    pub store: Arc<dyn Store>,
    /// The model, when one is configured (None: every operation takes its offline path).
    pub llm: Option<Arc<dyn ChatModel>>,
    /// Memory's time: days, summaries, lapses.
    pub clock: Arc<dyn Clock>,
    /// `[memory]` settings.
    pub settings: MemoryConfig,
    /// What finds the retrieved part of every context.
    pub retriever: Arc<Retriever>,
    /// Structured entries (MEMORY.md, daily notes).
    pub entries: Arc<entries::EntryBook>,
    /// The memory tools, to apply changes a model staged.
    pub tools: tools::ToolExecutor,
    /// The prompts (built-in, or an operator's edited ones).
    pub prompts: Arc<crate::llm::prompts::Prompts>,
    /// `[episodes]` settings (the working memory of open episodes).
    pub episodes: crate::config::EpisodesConfig,
}

impl MemoryManager {
    /// The memory tier over its parts.
    pub fn new(parts: MemoryParts) -> MemoryManager {
        let MemoryParts {
            store,
            llm,
            clock,
            settings,
            retriever,
            entries,
            tools,
            prompts,
            episodes,
        } = parts;
        MemoryManager {
            caches: MemoryCaches::new(settings.cache_capacity),
            store,
            llm,
            clock,
            settings,
            retriever,
            entries,
            tools,
            changes_applied: tokio::sync::watch::channel(0).0,
            prompts,
            episodes,
            own_accounts: Default::default(),
        }
    }

    /// Engram's own account on `platform` (None until it has spoken there).
    async fn own_account(
        &self,
        platform: crate::domain::Platform,
    ) -> Result<Option<crate::domain::PersonId>, StoreError> {
        let known = self
            .own_accounts
            .lock()
            .expect("accounts lock")
            .get(&platform)
            .copied();
        if known.is_some() {
            return Ok(known);
        }
        let found = self
            .store
            .find_identity(platform, crate::domain::SELF_ACCOUNT)
            .await?;
        if let Some(id) = found {
            self.own_accounts
                .lock()
                .expect("accounts lock")
                .insert(platform, id);
        }
        Ok(found)
    }

    /// Adds a line to the audit log: `by` did `action` to `subject`'s memory.
    pub(crate) async fn audit(
        &self,
        by: &audit::By,
        action: audit::Action,
        subject: crate::domain::PersonId,
        count: usize,
    ) {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        audit::record(&*self.store, &*self.clock, by, action, subject, count).await;
    }

    /// How this process's caches have served since the last `reset_cache_stats`.
    pub fn cache_stats(&self) -> cache::CacheStats {
        self.caches.stats()
    }

    /// Starts counting cache hits and misses afresh.
    pub fn reset_cache_stats(&self) {
        self.caches.reset_stats()
    }

    /// Applies changes made by other processes to this process's caches, for as long as the
    /// store reports them. Call once at start-up, before serving messages.
    pub async fn follow_changes(self: &Arc<Self>) -> Result<(), MemoryError> {
        let Some(mut changes) = self.store.watch_changes().await? else {
            return Ok(());
        };
        let memory = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(change) = changes.recv().await {
                let Some(memory) = memory.upgrade() else {
                    break;
                };
                match change {
                    Change::Facts { person, scope } => {
                        memory.caches.invalidate_facts(person, scope.key())
                    }
                    Change::Hearsay { person } => memory.caches.invalidate_hearsay(person),
                    // Anything cached may hold what was forgotten (or, after a lost feed,
                    // anything may have changed): drop it all.
                    Change::Cleared { .. } | Change::Forgotten | Change::Unknown => {
                        memory.purge_caches()
                    }
                    Change::Marker => {}
                }
                memory.changes_applied.send_modify(|n| *n += 1);
            }
        });
        Ok(())
    }

    /// How many external changes this process has applied (tests wait on it).
    pub fn changes_applied(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes_applied.subscribe()
    }

    /// Whether a model is configured.
    pub(crate) fn has_llm(&self) -> bool {
        self.llm.is_some()
    }

    /// One JSON-answering LLM call at temperature 0 (all memory operations are deterministic).
    async fn ask_json<T: serde::de::DeserializeOwned>(
        &self,
        task: &'static str,
        system: String,
        user: String,
    ) -> Result<T, LlmError> {
        let llm = self.llm.as_ref().ok_or(LlmError::NotConfigured)?;
        let request = ChatRequest {
            task,
            messages: vec![ChatMessage::system(system), ChatMessage::user(user)],
            temperature: 0.0,
            json: true,
            max_tokens: None,
            tools: Vec::new(),
        };
        let response = llm.complete(&request).await?;
        parse_json_answer(&response.content)
    }

    /// Logs that `task` fell back to the offline path, and why.
    fn note_fallback(&self, task: &'static str, error: &LlmError) {
        match error {
            LlmError::NotConfigured => debug!(task, "no LLM configured: offline fallback"),
            LlmError::Limited => debug!(task, "over a spending limit: offline fallback"),
            _ => warn!(task, error = %error, "LLM unavailable: using the offline fallback"),
        }
    }
}
