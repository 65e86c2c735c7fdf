//! The working memory of open episodes: each channel's current conversation keeps a running
//! summary and its open loops (questions not answered, things people said they would do),
//! refreshed off the reply path every few messages with at most one LLM call (extractive
//! without a model, or when it fails), and none when nothing changed. A reply reads the one of
//! its place (`context`).

use super::{MemoryError, MemoryManager, offline};
use crate::domain::StoredMessage;
use crate::llm::LlmError;
use crate::llm::prompts::{element, fill};
use crate::store::{Episode, EpisodeEnd, RefreshDue, WorkingMemory};
use serde::Deserialize;
use tracing::debug;

/// Most messages of one episode read for a refresh (its newest).
const EPISODE_MESSAGES: usize = 1000;
/// Most new messages shown to the model in one refresh (the newest), and their longest text.
const NEW_MESSAGES: usize = 200;
const MESSAGE_CHARS: usize = 500;
/// Longest open loop (characters).
const LOOP_CHARS: usize = 160;

/// Beginnings of a promise to do something, lowercase.
const PROMISES: &[&str] = &[
    "i'll ",
    "i will ",
    "i'm going to ",
    "i am going to ",
    "let me ",
    "we should ",
    "we need to ",
    "todo",
    "remind me",
];

/// An extractive working memory of an episode's `messages` (oldest first): its opening, where
/// people say what it is about, and its open loops, found by their form: a question that no one
/// else spoke after, and a promise ("I'll send the slides"). Costs no LLM call.
pub fn extractive(messages: &[StoredMessage], max_chars: usize, max_loops: usize) -> WorkingMemory {
    let summary = offline::clip_chars(
        &crate::retrieval::indexer::extractive_summary(messages),
        max_chars,
    );
    let mut loops = Vec::new();
    for (i, m) in messages.iter().enumerate().filter(|(_, m)| !m.is_bot) {
        let text = m.text.split_whitespace().collect::<Vec<_>>().join(" ");
        let lower = text.to_lowercase();
        let question = text.ends_with('?')
            && !messages[i + 1..]
                .iter()
                .any(|n| n.author != m.author && !n.text.trim().is_empty());
        let promise = PROMISES
            .iter()
            .any(|p| lower.starts_with(p) || lower.contains(&format!(" {p}")));
        if question || promise {
            loops.push(offline::clip_chars(
                &format!("{}: {text}", m.author_name),
                LOOP_CHARS,
            ));
        }
    }
    let skip = loops.len().saturating_sub(max_loops);
    WorkingMemory {
        summary,
        open_loops: loops.into_iter().skip(skip).collect(),
    }
}

/// `messages` without those of people whose memory is paused: nothing of theirs is
/// summarized or learned from.
pub(crate) async fn without_paused(
    store: &dyn crate::store::Store,
    messages: Vec<StoredMessage>,
) -> Result<Vec<StoredMessage>, crate::store::StoreError> {
    let mut paused = std::collections::HashMap::new();
    let mut kept = Vec::with_capacity(messages.len());
    for m in messages {
        let is_paused = match paused.get(&m.author) {
            Some(p) => *p,
            None => {
                let p = !m.is_bot && store.memory_paused(m.author).await?;
                paused.insert(m.author, p);
                p
            }
        };
        if !is_paused {
            kept.push(m);
        }
    }
    Ok(kept)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkingAnswer {
    summary: String,
    open_loops: Vec<String>,
}

impl MemoryManager {
    /// Refreshes the working memory of the open episodes that are due (enough new messages
    /// or words since the last refresh), at most 50 in one pass (the next tick takes the
    /// rest); how many were refreshed.
    pub async fn refresh_working_memory(&self) -> Result<usize, MemoryError> {
        let due = RefreshDue {
            messages: self.episodes.refresh_messages,
            words: self.episodes.refresh_words,
        };
        let mut refreshed = 0;
        for episode in self.store.episodes_to_refresh(due, 50).await? {
            if self.refresh_episode(&episode).await? {
                refreshed += 1;
            }
        }
        Ok(refreshed)
    }

    /// One refresh: the model's summary of what came since the last one (or the extractive
    /// one of the episode's newest messages), kept only while every message it was made from
    /// is still in the episode and no forget cleared the summary it built on. Nothing new to
    /// read (memory commands, attachments' pieces): the summary stays, without a model call.
    async fn refresh_episode(&self, episode: &Episode) -> Result<bool, MemoryError> {
        let all = self
            .store
            .episode_messages(episode.id, false, EpisodeEnd::Newest, EPISODE_MESSAGES)
            .await?;
        // What a paused person says is covered (so it does not keep the refresh due) but
        // never summarized; so is an episode of memory commands only (nothing to read).
        let messages = without_paused(self.store.as_ref(), all.clone()).await?;
        let (chars, loops) = (self.episodes.summary_chars, self.episodes.open_loops);
        let before = self.store.episode_working_memory(episode.id).await?;
        // The messages since the last refresh: stored after the newest it was made from (the
        // paused left out).
        let new: Vec<StoredMessage> = messages
            .iter()
            .filter(|m| episode.summarized_through.is_none_or(|t| m.id > t))
            .cloned()
            .collect();
        let memory = if new.is_empty() {
            if before.is_empty() {
                extractive(&messages, chars, loops)
            } else {
                before.clone()
            }
        } else {
            match self.working_memory_llm(&before, &new).await {
                Ok(m) => m,
                // No model: the extractive version is the design.
                Err(LlmError::NotConfigured) => extractive(&messages, chars, loops),
                Err(e) => {
                    self.note_fallback("working_memory", &e);
                    // The model is out (unreachable, 5xx, 429): the summary kept stays and the
                    // refresh stays due, so the messages since reach the model once it answers
                    // again (an extractive one saved now would pass them by for good). With no
                    // summary yet, or an error that will not pass (a refused request, an answer
                    // of the wrong shape), the extractive one stands in.
                    if e.is_retryable() && !before.is_empty() {
                        return Ok(false);
                    }
                    extractive(&messages, chars, loops)
                }
            }
        };
        let was = (before.summary.as_str(), episode.summarized_through);
        let kept = self
            .store
            .save_working_memory(episode.id, &all, was, &memory)
            .await?;
        debug!(
            episode = episode.id,
            messages = messages.len(),
            kept,
            "working memory refreshed"
        );
        Ok(kept)
    }

    /// The model's working memory: the summary so far (`before`) and the messages since
    /// (`new`), as data.
    async fn working_memory_llm(
        &self,
        before: &WorkingMemory,
        new: &[StoredMessage],
    ) -> Result<WorkingMemory, LlmError> {
        if !self.has_llm() {
            return Err(LlmError::NotConfigured);
        }
        let new = &new[new.len().saturating_sub(NEW_MESSAGES)..];
        let lines: Vec<String> = new
            .iter()
            .map(|m| {
                element(
                    "message",
                    &[
                        ("author", &m.author_name),
                        ("time", &m.sent_at.format("%Y-%m-%d %H:%M").to_string()),
                    ],
                    &offline::clip_chars(&m.text, MESSAGE_CHARS),
                )
            })
            .collect();
        let user = format!(
            "{}\n{}\n<messages>\n{}\n</messages>",
            element("summary", &[], &before.summary),
            element("open_loops", &[], &before.open_loops.join("\n")),
            lines.join("\n")
        );
        let system = fill(
            &self.prompts.working_memory,
            &[
                ("max_chars", &self.episodes.summary_chars.to_string()),
                ("max_loops", &self.episodes.open_loops.to_string()),
            ],
        );
        let answer: WorkingAnswer = self.ask_json("working_memory", system, user).await?;
        if answer.summary.trim().is_empty() {
            return Err(LlmError::BadResponse("empty running summary".into()));
        }
        Ok(WorkingMemory {
            summary: offline::clip_chars(answer.summary.trim(), self.episodes.summary_chars * 2),
            open_loops: answer
                .open_loops
                .iter()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty())
                .take(self.episodes.open_loops)
                .map(|l| offline::clip_chars(l, LOOP_CHARS))
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{MessageId, PersonId, Scope, SpaceId};
    use chrono::TimeZone;

    fn msg(id: i64, author: i64, name: &str, text: &str) -> StoredMessage {
        StoredMessage {
            id: MessageId(id),
            space: SpaceId(1),
            channel: "general".into(),
            scope: Scope::Space(SpaceId(1)),
            author: PersonId(author),
            author_name: name.into(),
            is_bot: false,
            text: text.into(),
            sent_at: chrono::Utc.timestamp_opt(1_700_000_000 + id, 0).unwrap(),
            episode: None,
            attachment_of: None,
            language: None,
        }
    }

    #[test]
    fn open_loops_are_unanswered_questions_and_promises() {
        let messages = [
            msg(1, 1, "Ana", "Where do we meet for the release party?"),
            msg(2, 2, "Ben", "At the office, 7pm."),
            msg(3, 2, "Ben", "I'll bring the speakers."),
            msg(4, 1, "Ana", "Who is ordering the food?"),
            msg(5, 1, "Ana", "Anyone?"),
        ];
        let m = extractive(&messages, 600, 5);
        assert_eq!(
            m.open_loops,
            vec![
                "Ben: I'll bring the speakers.",
                "Ana: Who is ordering the food?",
                "Ana: Anyone?"
            ]
        );
        assert!(
            m.summary.starts_with("Ana: Where do we meet"),
            "{}",
            m.summary
        );
        // The newest loops are kept when there are too many.
        assert_eq!(
            extractive(&messages, 600, 1).open_loops,
            vec!["Ana: Anyone?"]
        );
    }
}
