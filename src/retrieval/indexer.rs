//! The background indexer, off the reply path: embeds new messages in batches, puts them in
//! episodes, and closes quiet episodes as episodic memories (summary, supporting dialogue,
//! embedding), merging one into a near-identical older memory of the same scope (same
//! privacy level) instead of adding a duplicate. Every step can be re-run after a crash:
//! messages stay pending until their batch commits, and closing twice changes nothing.

use crate::config::RetrievalConfig;
use crate::domain::{Clock, StoredMessage};
use crate::embed::{self, EmbedError, SharedEmbedder};
use crate::store::{Episode, EpisodeClose, IndexedMessage, Store, StoreError};
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

#[derive(Debug, thiserror::Error)]
/// Why indexing stopped.
pub enum IndexError {
    #[error(transparent)]
    /// Reading or writing the index failed.
    Store(#[from] StoreError),
    #[error(transparent)]
    /// Embedding failed.
    Embed(#[from] EmbedError),
}

/// Embeds new messages in batches and groups them into episodes, off the reply path.
pub struct Indexer {
    store: Arc<dyn Store>,
    embedder: Option<SharedEmbedder>,
    clock: Arc<dyn Clock>,
    settings: RetrievalConfig,
    batch: usize,
}

/// Longest summary of an episodic memory (characters).
const SUMMARY_CHARS: usize = 400;

/// An extractive topic summary: the opening of the conversation, where people usually say
/// what it is about. Costs no LLM call.
pub fn extractive_summary(messages: &[StoredMessage]) -> String {
    let mut out = String::new();
    for m in messages.iter().filter(|m| !m.text.trim().is_empty()) {
        let line = format!(
            "{}: {}",
            m.author_name,
            m.text.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        if !out.is_empty() {
            out.push_str(" / ");
        }
        out.push_str(&line);
        if out.chars().count() >= SUMMARY_CHARS {
            break;
        }
    }
    if out.chars().count() > SUMMARY_CHARS {
        out = out.chars().take(SUMMARY_CHARS - 1).collect::<String>() + "…";
    }
    out
}

impl Indexer {
    /// An indexer over `store` embedding `batch` messages per call.
    pub fn new(
        store: Arc<dyn Store>,
        embedder: Option<SharedEmbedder>,
        clock: Arc<dyn Clock>,
        settings: RetrievalConfig,
        batch: usize,
    ) -> Indexer {
        Indexer {
            store,
            embedder,
            clock,
            settings,
            batch: batch.max(1),
        }
    }

    fn gap(&self) -> chrono::Duration {
        chrono::Duration::minutes(self.settings.episode_gap_minutes)
    }

    /// Indexes one batch of pending messages; returns how many (0: nothing pending).
    pub async fn index_batch(&self) -> Result<usize, IndexError> {
        let pending = self.store.unindexed_messages(self.batch).await?;
        if pending.is_empty() {
            return Ok(0);
        }
        let vectors = match &self.embedder {
            Some(e) => {
                let texts: Vec<String> = pending.iter().map(|m| m.text.clone()).collect();
                e.embed(&texts).await?.into_iter().map(Some).collect()
            }
            None => vec![None; pending.len()],
        };
        let items: Vec<IndexedMessage> = pending
            .into_iter()
            .zip(vectors)
            .map(|(message, embedding)| IndexedMessage { message, embedding })
            .collect();
        self.store.index_messages(&items, self.gap()).await?;
        Ok(items.len())
    }

    /// Indexes until nothing is pending; `progress` hears the running total.
    pub async fn index_all(&self, mut progress: impl FnMut(usize)) -> Result<usize, IndexError> {
        let mut total = 0;
        loop {
            let n = self.index_batch().await?;
            if n == 0 {
                return Ok(total);
            }
            total += n;
            progress(total);
        }
    }

    /// Closes every episode that has been quiet for longer than the episode gap.
    pub async fn close_episodes(&self) -> Result<usize, IndexError> {
        let cutoff = self.clock.now() - self.gap();
        let mut closed = 0;
        loop {
            let due = self.store.episodes_to_close(cutoff, 100).await?;
            if due.is_empty() {
                return Ok(closed);
            }
            for episode in &due {
                self.close(episode).await?;
                closed += 1;
            }
        }
    }

    async fn close(&self, episode: &Episode) -> Result<(), IndexError> {
        let messages = self.store.episode_messages(episode.id, 200).await?;
        let summary = extractive_summary(&messages);
        let ids: Vec<_> = messages.iter().map(|m| m.id).collect();
        let vectors = self.store.message_vectors(&ids).await?;
        let embedding = embed::centroid(vectors.iter().map(|(_, v)| v.as_slice()));
        let close = match &embedding {
            Some(v) => match self
                .store
                .similar_episode(
                    &episode.scope,
                    v,
                    self.settings.episode_merge_similarity,
                    episode.id,
                )
                .await?
            {
                Some((into, similarity)) => {
                    info!(
                        episode = episode.id,
                        into, similarity, "episodic memory merged"
                    );
                    let older = self.store.episodes(&[into]).await?;
                    let older_summary = older
                        .first()
                        .and_then(|e| e.summary.clone())
                        .unwrap_or_default();
                    let merged = if older_summary.is_empty() {
                        summary
                    } else {
                        older_summary
                    };
                    EpisodeClose::Merge {
                        into,
                        summary: merged,
                        embedding: None,
                    }
                }
                None => EpisodeClose::Add { summary, embedding },
            },
            None => EpisodeClose::Add {
                summary,
                embedding: None,
            },
        };
        self.store.close_episode(episode.id, &close).await?;
        Ok(())
    }

    /// Runs until `stop` turns true: index what is pending, close quiet episodes, wait.
    pub async fn run_until(
        self: Arc<Self>,
        idle: Duration,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        loop {
            let work = async {
                let indexed = self.index_all(|_| {}).await?;
                let closed = self.close_episodes().await?;
                Ok::<_, IndexError>((indexed, closed))
            };
            if let Err(e) = work.await {
                warn!(error = %e, "indexing paused; pending messages stay searchable by BM25 and are retried");
            }
            tokio::select! {
                _ = tokio::time::sleep(idle) => {}
                _ = stop.changed() => {}
            }
            if *stop.borrow() {
                return;
            }
        }
    }
}
