//! Hybrid retrieval, below memory and above the store and embedder: BM25 and vector search
//! over chat history and episodes, always inside the asker's privacy scopes, fused with
//! reciprocal rank fusion, favouring the time a question names (`time`), and the background
//! `indexer` that embeds messages and builds episodic memories off the reply path.

pub mod fusion;
pub mod indexer;
pub mod time;

use crate::config::RetrievalConfig;
use crate::domain::{PersonId, Scope, StoredMessage};
use crate::embed::SharedEmbedder;
use crate::store::{
    Bm25, EpisodeHit, SearchHit, Store, StoreError, WordPairs, plain_words, query_terms,
};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tracing::warn;

pub use indexer::{IndexError, Indexer};

/// BM25 hits checked for the question's word pairs (reading a message costs microseconds).
const PHRASE_CHECKS: usize = 50;

/// One retrieved message with its fused score and where the score came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved {
    /// The message.
    pub message: StoredMessage,
    /// Its fused score (higher is better).
    pub score: f64,
    /// Rank in the BM25 list, in the vector list, and of its episode (1 = best).
    pub bm25_rank: Option<usize>,
    /// Rank in the vector list.
    pub vector_rank: Option<usize>,
    /// Rank of its episode among the episodes found.
    pub episode_rank: Option<usize>,
    /// Inside the time window the question names.
    pub in_window: bool,
}

/// Hybrid search over what the asker may see.
pub struct Retriever {
    store: Arc<dyn Store>,
    embedder: Option<SharedEmbedder>,
    settings: RetrievalConfig,
    /// Query vectors by text: the same question asked again costs no model call.
    query_vectors: moka::sync::Cache<String, Arc<Vec<f32>>>,
}

impl Retriever {
    /// Search over `store`, with vectors when an embedder is given.
    pub fn new(
        store: Arc<dyn Store>,
        embedder: Option<SharedEmbedder>,
        settings: RetrievalConfig,
    ) -> Retriever {
        Retriever {
            store,
            embedder,
            settings,
            query_vectors: moka::sync::Cache::new(1024),
        }
    }

    /// Drops the cached query vectors (questions may quote what was just forgotten).
    pub fn forget_cached(&self) {
        self.query_vectors.invalidate_all();
    }

    /// The fusion settings in use.
    pub fn settings(&self) -> &RetrievalConfig {
        &self.settings
    }

    fn bm25(&self) -> Bm25 {
        Bm25 {
            k1: self.settings.k1,
            b: self.settings.b,
        }
    }

    async fn query_vector(&self, text: &str) -> Option<Arc<Vec<f32>>> {
        let embedder = self.embedder.as_ref()?;
        if let Some(v) = self.query_vectors.get(text) {
            return Some(v);
        }
        match embedder.embed(&[text.to_string()]).await {
            Ok(mut v) if v.len() == 1 => {
                let v = Arc::new(v.remove(0));
                self.query_vectors.insert(text.to_string(), v.clone());
                Some(v)
            }
            Ok(_) => None,
            Err(e) => {
                // BM25 still answers; the outage is logged, not hidden as "no results".
                warn!(error = %e, "query embedding failed; searching with BM25 only");
                None
            }
        }
    }

    /// The `limit` messages of `scopes` that best match `text`, asked by `asker` at `now`.
    /// The scopes are the privacy filter and go into every store query. What the asker said
    /// is favoured (memory about a person comes from their own words), unless the question
    /// asks what the bot said. Hostile text (query syntax, SQL, huge or emoji-only input)
    /// gives results or an empty list, never an error.
    pub async fn search(
        &self,
        text: &str,
        scopes: &[Scope],
        asker: Option<PersonId>,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Retrieved>, StoreError> {
        if scopes.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        // Long pastes: the first part carries the question; the embedder cuts anyway.
        let text: String = text.chars().take(4000).collect();
        let Candidates {
            bm25_hits,
            episode_hits,
            vector_hits,
            near_episodes,
        } = self.candidates(&text, scopes).await?;

        let mut messages: HashMap<i64, StoredMessage> = HashMap::new();
        let bm25_ids: Vec<i64> = bm25_hits.iter().map(|h| h.message.id.0).collect();
        let vector_ids: Vec<i64> = vector_hits.iter().map(|h| h.message.id.0).collect();
        for h in bm25_hits.into_iter().chain(vector_hits) {
            messages.entry(h.message.id.0).or_insert(h.message);
        }

        let k = self.settings.rrf_k;
        let episode_rank = episode_ranks(
            &episode_hits,
            &near_episodes,
            &episodes_in_order(&vector_ids, &messages),
            k,
        );

        let mut scores = fusion::rrf(
            &[
                (self.settings.bm25_weight, &bm25_ids[..]),
                (self.settings.vector_weight, &vector_ids[..]),
            ],
            k,
        );
        let window = time::window(&text, now);
        let asked = Asked {
            text: &text,
            asker,
            window,
        };
        self.add_bonuses(&mut scores, &messages, &asked, &bm25_ids, &episode_rank);
        let position = |list: &[i64], id: i64| list.iter().position(|x| *x == id).map(|p| p + 1);
        let results: Vec<Retrieved> = fusion::ranked(&scores)
            .into_iter()
            .map(|(id, score)| {
                let message = messages.remove(&id).expect("scored messages are known");
                Retrieved {
                    bm25_rank: position(&bm25_ids, id),
                    vector_rank: position(&vector_ids, id),
                    episode_rank: message
                        .episode
                        .and_then(|ep| episode_rank.get(&ep).copied()),
                    in_window: window.is_some_and(|w| w.contains(message.sent_at)),
                    message,
                    score,
                }
            })
            .collect();
        let mut results = fusion::dedup_by_key(results, |r| {
            (r.message.scope.key(), r.message.text.trim().to_lowercase())
        });
        results.truncate(limit);
        Ok(results)
    }
}

/// A query as the bonuses read it.
struct Asked<'a> {
    /// What was asked.
    text: &'a str,
    /// Who asked.
    asker: Option<PersonId>,
    /// The time it names, if any.
    window: Option<time::Window>,
}

impl Retriever {
    /// Adds to each fused score what the rest of the query says about the message: said by
    /// the asker (or by the bot, when the question asks what it said), word pairs of the
    /// query (BM25's best hits only), its episode's rank, and the time the query names.
    fn add_bonuses(
        &self,
        scores: &mut HashMap<i64, f64>,
        messages: &HashMap<i64, StoredMessage>,
        asked: &Asked<'_>,
        bm25_ids: &[i64],
        episode_rank: &HashMap<i64, usize>,
    ) {
        let k = self.settings.rrf_k;
        let about_bot = asks_what_the_bot_said(asked.text);
        let speaker_bonus = self.settings.speaker_weight / (k + 1.0);
        let episode_k = if self.embedder.is_some() {
            self.settings.episode_rrf_k
        } else {
            self.settings.episode_rrf_k_bm25_only
        };
        let pairs = WordPairs::of(asked.text);
        let lexical: HashSet<i64> = bm25_ids.iter().take(PHRASE_CHECKS).copied().collect();
        let phrase_bonus = self.settings.phrase_weight / (k + 1.0);
        for (id, score) in scores.iter_mut() {
            let m = &messages[id];
            let favoured = if about_bot {
                m.is_bot
            } else {
                asked.asker == Some(m.author)
            };
            if favoured {
                *score += speaker_bonus;
            }
            // A pair needs both its words, so only BM25's hits can hold one; its best half
            // is where a pair can still change the top of the ranking.
            if phrase_bonus > 0.0 && lexical.contains(id) {
                *score += phrase_bonus * pairs.shared_with(&m.text) as f64;
            }
            if let Some(rank) = m.episode.and_then(|ep| episode_rank.get(&ep)) {
                *score += self.settings.episode_weight / (episode_k + *rank as f64);
            }
            if asked.window.is_some_and(|w| w.contains(m.sent_at)) {
                *score += self.settings.time_weight / (k + 1.0);
            }
        }
    }
}

/// What the store found for one query, before fusion.
struct Candidates {
    /// BM25 over messages, best first.
    bm25_hits: Vec<SearchHit>,
    /// BM25 over whole episodes, best first.
    episode_hits: Vec<EpisodeHit>,
    /// Nearest messages by vector, best first (none without an embedder).
    vector_hits: Vec<SearchHit>,
    /// Nearest closed episodes by vector, best first.
    near_episodes: Vec<EpisodeHit>,
}

impl Retriever {
    /// The candidate lists for `text` in `scopes`: the BM25 queries run while the query's
    /// vector is computed, then the vector queries.
    async fn candidates(&self, text: &str, scopes: &[Scope]) -> Result<Candidates, StoreError> {
        let terms = query_terms(text, self.settings.max_query_terms);
        let c = self.settings.candidates;
        let e = self.settings.episode_candidates;
        let bm25 = self.bm25();
        let vector_side = async {
            let vector = if text.trim().is_empty() {
                None
            } else {
                self.query_vector(text).await
            };
            match vector {
                Some(v) => tokio::try_join!(
                    self.store.nearest_messages(scopes, &v, c),
                    self.store.nearest_episodes(scopes, &v, e),
                ),
                None => Ok((Vec::new(), Vec::new())),
            }
        };
        let (bm25_hits, episode_hits, (vector_hits, near_episodes)) = tokio::try_join!(
            self.store.search_messages(scopes, &terms, bm25, c),
            self.store.search_episodes(scopes, &terms, bm25, e),
            vector_side,
        )?;
        Ok(Candidates {
            bm25_hits,
            episode_hits,
            vector_hits,
            near_episodes,
        })
    }
}

/// Each episode's rank (1 = best) from BM25 over whole conversations, their closed-memory
/// vectors, and the best message similarity inside each (`by_message_vector`), fused. (The
/// best BM25 message per episode was tried as a fourth list: no gain with vectors, a loss
/// without.)
fn episode_ranks(
    bm25: &[EpisodeHit],
    vector: &[EpisodeHit],
    by_message_vector: &[i64],
    k: f64,
) -> HashMap<i64, usize> {
    let ep_bm25: Vec<i64> = bm25.iter().map(|h| h.episode).collect();
    let ep_vec: Vec<i64> = vector.iter().map(|h| h.episode).collect();
    let episode_scores = fusion::rrf(
        &[
            (1.0, &ep_bm25[..]),
            (1.0, &ep_vec[..]),
            (1.0, by_message_vector),
        ],
        k,
    );
    fusion::ranked(&episode_scores)
        .into_iter()
        .enumerate()
        .map(|(i, (ep, _))| (ep, i + 1))
        .collect()
}

/// The episodes of ranked messages, each at the rank of its best message.
fn episodes_in_order(ranked: &[i64], messages: &HashMap<i64, StoredMessage>) -> Vec<i64> {
    let mut out: Vec<i64> = Vec::new();
    for ep in ranked.iter().filter_map(|id| messages.get(id)?.episode) {
        if !out.contains(&ep) {
            out.push(ep);
        }
    }
    out
}

/// Whether a question is about the bot's own words ("what did you recommend", "your list").
pub fn asks_what_the_bot_said(text: &str) -> bool {
    let words = plain_words(text);
    // Past tense only: "can you recommend …" asks for something new, not about old words.
    const VERBS: [&str; 10] = [
        "said",
        "told",
        "recommended",
        "suggested",
        "mentioned",
        "gave",
        "listed",
        "provided",
        "wrote",
        "shared",
    ];
    words.windows(2).any(|w| {
        (w[0] == "you" && VERBS.contains(&w[1].as_str()))
            || (w[0] == "your"
                && [
                    "answer",
                    "suggestion",
                    "suggestions",
                    "recommendation",
                    "recommendations",
                    "list",
                    "advice",
                    "response",
                ]
                .contains(&w[1].as_str()))
    }) || words
        .windows(3)
        .any(|w| w[0] == "you" && w[1] == "previously")
}

#[cfg(test)]
mod tests {
    use super::asks_what_the_bot_said;

    #[test]
    fn questions_about_the_bots_words() {
        assert!(asks_what_the_bot_said(
            "What was the book you recommended last time?"
        ));
        assert!(asks_what_the_bot_said("Remind me of your list of hikes"));
        assert!(!asks_what_the_bot_said(
            "What book did I say I was reading?"
        ));
        assert!(!asks_what_the_bot_said("Can you recommend a hotel?"));
        assert!(!asks_what_the_bot_said(""));
    }
}
