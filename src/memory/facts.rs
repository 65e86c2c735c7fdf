//! Track 1, explicit facts: "remember that …" and "forget that …" merged into a person's
//! third-person facts text per privacy scope, with the LLM at temperature 0 or the verbatim
//! offline fallback. Writes are optimistic (versioned), so concurrent updates are re-merged,
//! never lost, and every change lands in the version history.

use super::offline;
use super::{FactVerb, MemoryError, MemoryManager, Method};
use crate::domain::{MessageId, PersonId, Place, Scope};
use crate::llm::LlmError;
use crate::llm::prompts::element;
use crate::store::{FactChange, FactsRecord, StoreError};
use serde::Deserialize;
use std::sync::Arc;
use tracing::{debug, info, warn};

/// Why the model's merge or removal was not used (the offline fallback is, instead).
#[derive(Debug, thiserror::Error)]
enum ModelRefused {
    /// No answer: no model, or the call failed.
    #[error(transparent)]
    Call(#[from] LlmError),
    #[error("the model returned empty facts")]
    Empty,
    #[error("the model's merge dropped more than half of the existing facts")]
    MergeShrank,
    #[error("the model's removal dropped most of the facts for one request")]
    RemovalShrank,
}

/// A remember or forget request, as the router resolved it.
#[derive(Debug, Clone)]
pub struct FactRequest<'a> {
    /// Whom the fact is about.
    pub subject: PersonId,
    /// Their name, as shown.
    pub subject_name: &'a str,
    /// Who asked.
    pub actor: PersonId,
    /// Their name, as shown.
    pub actor_name: &'a str,
    /// Moderators may make the bot forget things about anyone.
    pub actor_is_moderator: bool,
    /// Where it was asked.
    pub place: &'a Place,
    /// The fact, as said.
    pub text: &'a str,
    /// The message that asked.
    pub source: Option<MessageId>,
}

/// What a remember did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RememberOutcome {
    /// Kept, by the model or offline.
    Saved {
        /// How.
        method: Method,
    },
    /// The facts already said it.
    AlreadyKnown,
}

/// What a forget did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForgetOutcome {
    /// Taken out, by the model or offline.
    Forgotten {
        /// How.
        method: Method,
    },
    /// Nothing like it was there.
    NotFound {
        /// How.
        method: Method,
    },
}

#[derive(Deserialize)]
struct MergedFacts {
    facts: String,
}

#[derive(Deserialize)]
struct ForgetAnswer {
    found: bool,
    facts: String,
}

const MAX_ATTEMPTS: usize = 8;

impl MemoryManager {
    /// Empties the facts of `req.subject` in `scope` (their history goes too); the sentences
    /// removed.
    pub(super) async fn empty_facts(
        &self,
        req: &FactRequest<'_>,
        scope: &Scope,
    ) -> Result<Vec<String>, MemoryError> {
        for _ in 0..MAX_ATTEMPTS {
            let current = self.store.facts(req.subject, scope).await?;
            if current.text.trim().is_empty() {
                return Ok(Vec::new());
            }
            if self
                .write_facts(
                    req,
                    scope,
                    current.version,
                    "",
                    "forget_everything",
                    "",
                    Method::Offline,
                )
                .await?
            {
                return Ok(offline::removed_sentences(&current.text, ""));
            }
        }
        Err(MemoryError::Busy)
    }

    /// Writes `text` as the new facts if they are still at version `expected`, with the change
    /// in the history; false when someone else wrote first (re-read and merge again).
    #[allow(clippy::too_many_arguments)]
    async fn write_facts(
        &self,
        req: &FactRequest<'_>,
        scope: &Scope,
        expected: i64,
        text: &str,
        op: &str,
        request: &str,
        method: Method,
    ) -> Result<bool, MemoryError> {
        // A forget drops the earlier versions (they hold what is forgotten) and does not
        // record what was asked.
        let forgetting = op != "remember";
        let change = FactChange {
            op: op.into(),
            request: if forgetting {
                String::new()
            } else {
                request.into()
            },
            method: method.as_str().into(),
            changed_by: Some(req.actor),
            source_message: if forgetting { None } else { req.source },
            at: self.clock.now(),
            drop_history: forgetting,
        };
        match self
            .store
            .update_facts(req.subject, scope, expected, text, &change)
            .await
        {
            Ok(version) => {
                self.caches.invalidate_facts(req.subject, scope.key());
                info!(subject = %req.subject, scope = %scope.key(), version, op, method = method.as_str(), "facts changed");
                Ok(true)
            }
            Err(StoreError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

impl MemoryManager {
    /// The current facts of `person` in `scope` (cached; every write here invalidates it).
    pub async fn facts(
        &self,
        person: PersonId,
        scope: &Scope,
    ) -> Result<Arc<FactsRecord>, MemoryError> {
        let key = (person, scope.key());
        if let Some(hit) = self.caches.get("facts", &self.caches.facts, &key) {
            return Ok(hit);
        }
        let since = self.caches.begin_fill();
        let record = Arc::new(self.store.facts(person, scope).await?);
        self.caches
            .fill(&self.caches.facts, since, key, record.clone());
        Ok(record)
    }

    pub(super) fn check_fact_text(
        &self,
        text: &str,
        verb: FactVerb,
    ) -> Result<String, MemoryError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(MemoryError::EmptyFact { verb });
        }
        let len = text.chars().count();
        if len > self.settings.max_fact_chars {
            return Err(MemoryError::FactTooLong {
                verb,
                len,
                limit: self.settings.max_fact_chars,
            });
        }
        Ok(text.to_string())
    }

    /// Merges a new fact about `req.subject` into the facts of the scope where it was said.
    pub async fn remember(&self, req: &FactRequest<'_>) -> Result<RememberOutcome, MemoryError> {
        let fact = self.check_fact_text(req.text, FactVerb::Remember)?;
        let scope = req.place.home_scope();
        for _ in 0..MAX_ATTEMPTS {
            let current = self.store.facts(req.subject, &scope).await?;
            let (text, method) = match self.merge_fact_llm(req, &current.text, &fact).await {
                Ok(t) => (t, Method::Llm),
                Err(why) => {
                    if self.has_llm() {
                        debug!(subject = %req.subject, reason = %why, "remember: offline fallback (verbatim)");
                    }
                    match offline::remember_verbatim(
                        &current.text,
                        req.subject_name,
                        req.actor_name,
                        &fact,
                    ) {
                        Some(t) => (t, Method::Offline),
                        None => return Ok(RememberOutcome::AlreadyKnown),
                    }
                }
            };
            if text.trim() == current.text.trim() {
                return Ok(RememberOutcome::AlreadyKnown);
            }
            if text.chars().count() > self.settings.max_facts_chars {
                return Err(MemoryError::FactsFull {
                    subject: req.subject_name.to_string(),
                    limit: self.settings.max_facts_chars,
                });
            }
            if self
                .write_facts(
                    req,
                    &scope,
                    current.version,
                    &text,
                    "remember",
                    &fact,
                    method,
                )
                .await?
            {
                return Ok(RememberOutcome::Saved { method });
            }
        }
        Err(MemoryError::Busy)
    }

    /// Asks the model about `req.subject`'s current facts and one request (as XML data).
    async fn ask_about_facts<T: serde::de::DeserializeOwned>(
        &self,
        task: &'static str,
        prompt: &str,
        req: &FactRequest<'_>,
        current: &str,
        request_xml: String,
    ) -> Result<T, ModelRefused> {
        let user = [
            element(
                "subject",
                &[("id", &req.subject.to_string())],
                req.subject_name,
            ),
            element("facts", &[], current),
            request_xml,
        ]
        .join("\n");
        self.ask_json(task, prompt.to_string(), user)
            .await
            .map_err(|e| {
                self.note_fallback(task, &e);
                ModelRefused::Call(e)
            })
    }

    /// The LLM merge, checked: a merge that is empty or drops much of what was there is
    /// refused, so a garbled answer can never shrink memory.
    async fn merge_fact_llm(
        &self,
        req: &FactRequest<'_>,
        current: &str,
        fact: &str,
    ) -> Result<String, ModelRefused> {
        let answer: MergedFacts = self
            .ask_about_facts(
                "remember",
                &self.prompts.remember,
                req,
                current,
                element("new_fact", &[("told_by", req.actor_name)], fact),
            )
            .await?;
        let merged = answer.facts.trim().to_string();
        if merged.is_empty() {
            warn!(subject = %req.subject, "the model returned empty facts: refused");
            return Err(ModelRefused::Empty);
        }
        if merged.chars().count() * 2 < current.trim().chars().count() {
            warn!(subject = %req.subject, "the model's merge dropped more than half of the existing facts: refused");
            return Err(ModelRefused::MergeShrank);
        }
        Ok(merged)
    }

    /// Takes `req.text` out of what is known about `req.subject` everywhere (the global
    /// scope's facts) and nowhere else: `/memory unshare`. Whether it was there.
    pub async fn forget_shared(&self, req: &FactRequest<'_>) -> Result<bool, MemoryError> {
        Ok(self.forget_in_scope(req, &Scope::Global, req.text).await?.0)
    }

    /// Removes what matches `target` from the facts of `req.subject` in `scope` (the earlier
    /// versions go too). Whether anything matched, how, and the sentences removed.
    pub(super) async fn forget_in_scope(
        &self,
        req: &FactRequest<'_>,
        scope: &Scope,
        target: &str,
    ) -> Result<(bool, Method, Vec<String>), MemoryError> {
        for _ in 0..MAX_ATTEMPTS {
            let current = self.store.facts(req.subject, scope).await?;
            if current.text.trim().is_empty() {
                return Ok((false, Method::Offline, Vec::new()));
            }
            let (found, text, method) = match self.forget_llm(req, &current.text, target).await {
                Ok((found, text)) => (found, text, Method::Llm),
                Err(why) => {
                    if self.has_llm() {
                        debug!(subject = %req.subject, reason = %why, "forget: offline fallback (exact wording)");
                    }
                    let (text, found) = offline::forget_matching(&current.text, target);
                    (found, text, Method::Offline)
                }
            };
            if !found {
                return Ok((false, method, Vec::new()));
            }
            if self
                .write_facts(req, scope, current.version, &text, "forget", target, method)
                .await?
            {
                return Ok((
                    true,
                    method,
                    offline::removed_sentences(&current.text, &text),
                ));
            }
        }
        Err(MemoryError::Busy)
    }

    /// The LLM removal, checked: "found" must shrink the text, and a removal of most of a
    /// longer text for one narrow request is refused as garbled.
    async fn forget_llm(
        &self,
        req: &FactRequest<'_>,
        current: &str,
        target: &str,
    ) -> Result<(bool, String), ModelRefused> {
        let answer: ForgetAnswer = self
            .ask_about_facts(
                "forget",
                &self.prompts.forget,
                req,
                current,
                element("forget", &[("asked_by", req.actor_name)], target),
            )
            .await?;
        let remaining = answer.facts.trim().to_string();
        if !answer.found {
            return Ok((false, current.to_string()));
        }
        let (old_len, new_len) = (current.trim().chars().count(), remaining.chars().count());
        if new_len >= old_len {
            return Ok((false, current.to_string()));
        }
        let sentences = current
            .split_inclusive(['.', '\n'])
            .filter(|s| !s.trim().is_empty())
            .count();
        if sentences >= 3 && new_len * 3 < old_len {
            warn!(subject = %req.subject, "the model's removal dropped most of the facts for one request: refused");
            return Err(ModelRefused::RemovalShrank);
        }
        Ok((true, remaining))
    }
}
