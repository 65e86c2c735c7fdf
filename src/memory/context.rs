//! Context assembly: `MemoryManager::context` builds one memory text per person (the 3-way
//! merge of facts, today and days 2–7, cached by content hash) and gathers what a reply needs
//! (`ContextBundle`: those texts, the working memory, recalled messages, notes). The responder
//! turns it into the prompt (`responder::prompt`).

use super::cache::hash_parts;
use super::offline;
use super::{MemoryError, MemoryManager, Method};
use crate::domain::{Entry, PersonId, Place, StoredMessage, day_of, mention};
use crate::llm::prompts::element;
use crate::retrieval::Retrieved;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Arc;

/// What the memory holds about one person, as it may surface in one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonMemory {
    /// Whose memory it is.
    pub person: PersonId,
    /// Their display name.
    pub name: String,
    /// The merged context (facts ⊕ today ⊕ history).
    pub text: Arc<str>,
    /// The explicit facts alone, visible here.
    pub facts: String,
    /// How `text` was produced; Offline when the LLM was not used or failed.
    pub method: Method,
}

impl PersonMemory {
    /// Whether nothing is known about them here.
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }
}

/// Everything memory contributes to one reply.
#[derive(Debug, Clone)]
pub struct ContextBundle {
    /// The speaker first, then the people mentioned.
    pub people: Vec<PersonMemory>,
    /// The latest messages of the channel, oldest first.
    pub working: Vec<StoredMessage>,
    /// The running summary and open loops of the channel's current episode, when it has
    /// some (of the place's own scope, like `working`).
    pub episode: Option<crate::store::WorkingMemory>,
    /// Earlier messages found for the current one (hybrid search in what may surface
    /// here), best first, none of them in `working`.
    pub retrieved: Vec<Retrieved>,
    /// The speaker's MEMORY.md entries that may surface here, those matching the current
    /// message first.
    pub notes: Vec<Entry>,
    /// Display names of the accounts mentioned by id in these messages ("<@123>" on
    /// Discord): the LLM sees names, the store keeps ids.
    pub names: HashMap<String, String>,
    /// Engram's own account on this platform (None: it has not spoken there yet). Its
    /// messages are the bot's; another bot's (a webhook, an integration, a Telegram channel
    /// posting) are someone else's, data like anyone's.
    pub bot: Option<PersonId>,
}

/// Display names of the accounts mentioned by id in `texts`, said in `space` (whose
/// platform the ids belong to).
pub async fn mention_names<'a>(
    store: &dyn crate::store::Store,
    space: crate::domain::SpaceId,
    texts: impl IntoIterator<Item = &'a str>,
) -> Result<HashMap<String, String>, crate::store::StoreError> {
    let mut ids: Vec<String> = texts.into_iter().flat_map(mention::ids_in).collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    ids.sort();
    ids.dedup();
    store.identity_names(space, &ids).await
}

/// Most MEMORY.md entries offered to a reply; the token budget decides how many fit.
const REPLY_NOTES: usize = 20;

#[derive(Deserialize)]
struct MergeAnswer {
    context: String,
}

impl MemoryManager {
    /// The memory about `person` that may surface in `place`, merged into one text.
    pub async fn person_memory(
        &self,
        person: PersonId,
        name: &str,
        place: &Place,
    ) -> Result<PersonMemory, MemoryError> {
        let now = self.clock.now();
        let mut facts = Vec::new();
        for scope in place.visible_scopes(person) {
            let record = self.facts(person, &scope).await?;
            if !record.text.trim().is_empty() {
                facts.push(record.text.trim().to_string());
            }
        }
        let facts = facts.join("\n");

        let mut today = Vec::new();
        let mut history = Vec::new();
        let mut degraded = !self.has_llm();
        for scope in place.summary_scopes(person) {
            if self.has_llm() {
                let map = self.day_summaries(&scope, day_of(now), now).await?;
                degraded |= map.degraded;
                if let Some(s) = map.by_person.get(&person) {
                    today.push(s.clone());
                }
                let (h, hist_degraded) = self.history_summary(&scope, person, name, now).await?;
                degraded |= hist_degraded;
                if !h.trim().is_empty() {
                    history.push(h.to_string());
                }
            } else {
                let (t, h) = self
                    .offline_person_summaries(&scope, person, name, now)
                    .await?;
                today.extend(Some(t).filter(|t| !t.is_empty()));
                history.extend(Some(h).filter(|h| !h.is_empty()));
            }
        }
        let (today, history) = (today.join("\n"), history.join("\n"));
        let (mut text, merged_by_llm) = self.merge(person, name, &facts, &today, &history).await;
        // What others said about them stays theirs: shown apart, never merged in.
        let told = self.hearsay_here(person, place).await?;
        if !told.is_empty() {
            let own = if text.trim().is_empty() {
                String::new()
            } else {
                format!("{}\n", text.trim_end())
            };
            text = Arc::from(format!(
                "{own}What others said about {name} (their words, not {name}'s):\n{}",
                super::hearsay::hearsay_lines(&told)
            ));
        }
        let method = if merged_by_llm || (!degraded && self.has_llm()) {
            Method::Llm
        } else {
            Method::Offline
        };
        Ok(PersonMemory {
            person,
            name: name.to_string(),
            text,
            facts,
            method,
        })
    }

    /// merge(facts, today, history): the LLM's merge, cached by content; a single non-empty
    /// part needs no merge; without an LLM, the parts in priority order.
    async fn merge(
        &self,
        person: PersonId,
        name: &str,
        facts: &str,
        today: &str,
        history: &str,
    ) -> (Arc<str>, bool) {
        let since = self.caches.begin_fill();
        let parts = [facts, today, history];
        if parts.iter().filter(|p| !p.trim().is_empty()).count() <= 1 || !self.has_llm() {
            return (
                Arc::from(offline::concat_merge(facts, today, history).as_str()),
                false,
            );
        }
        let key = (person, hash_parts(&parts));
        if let Some(hit) = self.caches.get("merged", &self.caches.merged, &key) {
            return (hit, true);
        }
        let degraded_key = format!("merge:{}:{}", person, hex::encode(key.1));
        if let Some(hit) = self
            .caches
            .get("degraded", &self.caches.degraded, &degraded_key)
        {
            return (hit, false);
        }
        let user = [
            element("subject", &[("id", &person.to_string())], name),
            element("facts", &[], facts),
            element("today", &[], today),
            element("history", &[], history),
        ]
        .join("\n");
        match self
            .ask_json::<MergeAnswer>("merge_context", self.prompts.merge_context.clone(), user)
            .await
        {
            Ok(answer) if !answer.context.trim().is_empty() => {
                let value: Arc<str> = Arc::from(answer.context.trim());
                self.caches
                    .fill(&self.caches.merged, since, key, value.clone());
                (value, true)
            }
            other => {
                let error = match other {
                    Err(e) => e,
                    Ok(_) => crate::llm::LlmError::BadResponse("empty merged context".into()),
                };
                self.note_fallback("merge_context", &error);
                let value: Arc<str> =
                    Arc::from(offline::concat_merge(facts, today, history).as_str());
                // One made only because this answer was over its limit is not kept for others.
                if !matches!(error, crate::llm::LlmError::Limited) {
                    self.caches
                        .fill(&self.caches.degraded, since, degraded_key, value.clone());
                }
                (value, false)
            }
        }
    }

    /// Memory for the speaker (first in `people`) and the people mentioned, the working
    /// memory of the place, and what hybrid search finds for `query` among the messages the
    /// speaker may see here.
    pub async fn context(
        &self,
        people: &[(PersonId, String)],
        place: &Place,
        query: &str,
    ) -> Result<ContextBundle, MemoryError> {
        let mut seen = Vec::new();
        let mut memories = Vec::new();
        for (person, name) in people {
            if seen.contains(person) {
                continue;
            }
            seen.push(*person);
            memories.push(self.person_memory(*person, name, place).await?);
        }
        let working = self
            .store
            .recent_messages(
                place.space,
                &place.channel,
                Some(&place.home_scope()),
                self.settings.working_memory_messages,
            )
            .await?;
        let episode = self
            .store
            .working_memory(place.space, &place.channel, &place.home_scope())
            .await?;
        let notes = match people.first() {
            Some((speaker, _)) => {
                self.entries
                    .for_reply(*speaker, place, query, REPLY_NOTES)
                    .await?
            }
            None => Vec::new(),
        };
        let retrieved = match people.first() {
            Some((speaker, _)) if !query.trim().is_empty() => {
                let scopes = place.visible_scopes(*speaker);
                let items = self.retriever.settings().items;
                let found = self
                    .retriever
                    .search(
                        query,
                        &scopes,
                        Some(*speaker),
                        self.clock.now(),
                        items + working.len(),
                    )
                    .await?;
                let mut found: Vec<Retrieved> = found
                    .into_iter()
                    .filter(|r| !working.iter().any(|w| w.id == r.message.id))
                    .collect();
                found.truncate(items);
                found
            }
            _ => Vec::new(),
        };
        let texts = working
            .iter()
            .chain(retrieved.iter().map(|r| &r.message))
            .map(|m| m.text.as_str());
        let names = mention_names(
            self.store.as_ref(),
            place.space,
            texts.chain(std::iter::once(query)),
        )
        .await?;
        let bot = self.own_account(place.platform).await?;
        Ok(ContextBundle {
            people: memories,
            working,
            episode,
            retrieved,
            notes,
            names,
            bot,
        })
    }
}
