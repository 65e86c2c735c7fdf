//! Hybrid retrieval, below memory and above the store and embedder: BM25 (each message with
//! its neighbours as context) and vector search over chat history and episodes, always inside
//! the asker's privacy scopes, fused with reciprocal rank fusion, favouring the time a question
//! names (`time`) and the people it names (`names`), and the background `indexer` that embeds
//! messages and builds episodic memories off the reply path.

pub mod fusion;
pub mod indexer;
pub mod names;
pub mod time;
pub mod topics;

use crate::config::RetrievalConfig;
use crate::domain::fills::Invalidations;
use crate::domain::language::{self, Quickly};
use crate::domain::{Embedding, MessageId, PersonId, Scope, StoredMessage, VectorSpaceId};
use crate::embed::SharedEmbedder;
use crate::store::{
    Bm25, EpisodeHit, Neighbours, SearchHit, Store, StoreError, WordPairs, plain_words,
    query_terms_in,
};
use chrono::{DateTime, Utc};
use std::collections::BTreeSet;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tracing::{debug, warn};

pub use indexer::{Backfill, IndexError, Indexer};

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
    /// From the time the question names, or telling about it soon after (`Window::is_about`).
    pub in_window: bool,
}

/// Hybrid search over what the asker may see.
pub struct Retriever {
    store: Arc<dyn Store>,
    embedder: Option<SharedEmbedder>,
    settings: RetrievalConfig,
    /// The embedder's vector space, looked up once.
    space: SpaceCell,
    /// Query vectors by text: the same question asked again costs no model call.
    query_vectors: moka::sync::Cache<String, Arc<Embedding>>,
    /// Who wrote in a set of scopes (by their keys), for a while: who a question may name,
    /// known before its search, so that it is embedded once, already in the first person
    /// (the first question in a set of scopes reads them beside its embedding).
    authors: moka::sync::Cache<Vec<String>, Arc<Vec<(PersonId, String)>>>,
    /// Counts `forget_cached`: what a fill read before one is not kept after it.
    fills: Invalidations,
}

/// How long the authors of a set of scopes are kept: a newcomer's name met only in the hits
/// meanwhile costs a second embedding and vector search, after the other searches.
const AUTHORS_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// The store's id of the embedder's vector space, looked up (and registered) on first use, so
/// every vector written or searched names the model that made it.
#[derive(Default)]
pub(crate) struct SpaceCell(tokio::sync::OnceCell<VectorSpaceId>);

impl SpaceCell {
    /// The space of `embedder` in `store`.
    pub(crate) async fn get(
        &self,
        store: &dyn Store,
        embedder: &dyn crate::embed::Embedder,
    ) -> Result<VectorSpaceId, StoreError> {
        let model = embedder.identity();
        self.0
            .get_or_try_init(|| store.vector_space(&model))
            .await
            .copied()
    }
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
            space: SpaceCell::default(),
            query_vectors: moka::sync::Cache::new(1024),
            authors: moka::sync::Cache::builder()
                .max_capacity(1024)
                .time_to_live(AUTHORS_TTL)
                .build(),
            fills: Invalidations::default(),
        }
    }

    /// Drops the cached query vectors (questions may quote what was just forgotten) and the
    /// authors of scopes (a cleared person's name goes with them).
    pub fn forget_cached(&self) {
        self.fills.invalidated();
        self.query_vectors.invalidate_all();
        self.authors.invalidate_all();
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

    async fn query_vector(&self, text: &str) -> Result<Option<Arc<Embedding>>, StoreError> {
        let Some(embedder) = self.embedder.as_ref() else {
            return Ok(None);
        };
        let cached = self.query_vectors.get(text);
        crate::telemetry::cache_lookup("query_vectors", cached.is_some());
        if cached.is_some() {
            return Ok(cached);
        }
        let space = self
            .space
            .get(self.store.as_ref(), embedder.as_ref())
            .await?;
        let since = self.fills.begin_fill();
        let start = std::time::Instant::now();
        let embedded = embedder.embed(&[text.to_string()]).await;
        crate::telemetry::embedded("query", 1, start.elapsed());
        Ok(match embedded {
            Ok(mut v) if v.len() == 1 => {
                let v = Arc::new(Embedding {
                    space,
                    vector: v.remove(0),
                });
                self.fills
                    .fill(&self.query_vectors, since, text.to_string(), v.clone());
                Some(v)
            }
            Ok(_) => None,
            Err(e) => {
                // BM25 still answers; the outage is logged, not hidden as "no results".
                warn!(error = %e, "query embedding failed; searching with BM25 only");
                None
            }
        })
    }

    /// The `limit` messages of `scopes` that best match `text`, asked by `asker` at `now`.
    /// The scopes are the privacy filter and go into every store query. What the asker said
    /// is favoured (memory about a person comes from their own words), unless the question
    /// asks what the bot said. Hostile text (query syntax, SQL, huge or emoji-only input)
    /// gives results or an empty list, never an error.
    /// It only reads: a statement that met a connection the database had ended runs the
    /// search again.
    pub async fn search(
        &self,
        text: &str,
        scopes: &[Scope],
        asker: Option<PersonId>,
        now: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Retrieved>, StoreError> {
        crate::store::again_if_lost(|| self.search_once(text, scopes, asker, now, limit)).await
    }

    /// `search`, once.
    async fn search_once(
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
        let window = time::window(&text, now);
        // A time named by an event ("the week before the trip"), when no date is named.
        let event = window
            .is_none()
            .then(|| time::anchored(&text))
            .flatten()
            .filter(|_| self.settings.event_time_share > 0.0)
            .filter(|_| self.settings.window_weight > 0.0 || self.settings.time_weight > 0.0);
        // Asked what the bot said, its accounts are read beside the searches, not after them.
        let about_bot = asks_what_the_bot_said(&text);
        let own_accounts = async {
            if about_bot {
                Ok(self.store.own_accounts().await?.into_iter().collect())
            } else {
                Ok(HashSet::new())
            }
        };
        let (found, bot_accounts): (_, HashSet<PersonId>) = tokio::try_join!(
            self.candidates(&text, scopes, window, event.as_ref(), asker),
            own_accounts
        )?;
        let window = found.window;
        // A time found from an event counts its share of a date's.
        let time_share = match (window, &event) {
            (Some(_), Some(_)) => self.settings.event_time_share,
            _ => 1.0,
        };
        let c = self.settings.candidates;

        let mut messages: HashMap<i64, StoredMessage> = HashMap::new();
        let own: HashMap<i64, f64> = found
            .bm25_hits
            .iter()
            .map(|h| (h.message.id.0, h.score))
            .collect();
        // Vectors not trusted at all found nothing: the question was not embedded.
        let trust = found.vector_trust;
        if trust < 1.0 {
            debug!(trust, "the embedder knows few of the question's words");
        }
        let vector_ids: Vec<i64> = found.vector_hits.iter().map(|h| h.message.id.0).collect();
        let hits = found.bm25_hits.into_iter().chain(found.vector_hits);
        for m in hits.map(|h| h.message).chain(found.context_read) {
            messages.entry(m.id.0).or_insert(m);
        }
        for m in found.in_window.iter() {
            messages.entry(m.id.0).or_insert_with(|| m.clone());
        }
        let mut bm25_ids = found.bm25_in_context;
        // A neighbour on the list that was gone when read drops.
        bm25_ids.retain(|id| messages.contains_key(id));
        // The time the question names, its messages best BM25 first.
        let mut window_ids: Vec<i64> = found.in_window.iter().map(|m| m.id.0).collect();
        window_ids.sort_by(|a, b| {
            let score = |id: &i64| own.get(id).copied().unwrap_or(0.0);
            score(b).total_cmp(&score(a)).then(b.cmp(a))
        });
        window_ids.truncate(c);

        let k = self.settings.rrf_k;
        let episode_rank = episode_ranks(
            &found.episode_hits,
            &found.near_episodes,
            &episodes_in_order(&vector_ids, &messages),
            trust,
            k,
        );
        let mut scores = fusion::rrf(
            &[
                (self.settings.bm25_weight, &bm25_ids[..]),
                (self.settings.vector_weight * trust, &vector_ids[..]),
                (self.settings.window_weight * time_share, &window_ids[..]),
            ],
            k,
        );
        // Each scored message read once for the time it tells about.
        let of_window: HashSet<i64> = window.map_or_else(HashSet::new, |w| {
            scores
                .keys()
                .filter(|id| w.is_about(&messages[*id].text, messages[*id].sent_at))
                .copied()
                .collect()
        });
        let asked = Asked {
            asker,
            about_bot,
            own: &bot_accounts,
            named: &found.named,
            of_window: &of_window,
            time_share,
            when: self.settings.when_weight > 0.0 && time::asks_when(&text),
        };
        self.add_bonuses(
            &mut scores,
            &messages,
            &asked,
            &found.phrases,
            &episode_rank,
        );
        self.lift_neighbours_of_the_best(&mut scores, &mut messages, scopes)
            .await?;
        self.discount_questions(&mut scores, &messages, &asked);
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
                    in_window: of_window.contains(&id),
                    message,
                    score,
                }
            })
            .collect();
        Ok(fusion::dedup_by_key(results, limit, |r| {
            (r.message.scope.key(), r.message.text.trim().to_lowercase())
        }))
    }

    /// How much the vector lists count for `text`, 0 to 1: less when the embedder knows fewer
    /// than `vector_known_share` of its words (an English model asked in Russian places the
    /// question by word pieces, and its lists are mostly noise there).
    fn vector_trust(&self, text: &str) -> f64 {
        let s = &self.settings;
        match self.embedder.as_ref() {
            Some(embedder) if s.vector_known_share > 0.0 => {
                (embedder.known_share(text) / s.vector_known_share).min(1.0)
            }
            _ => 1.0,
        }
    }

    /// People's messages next to people's best results (`neighbour_top`) take a share of their
    /// scores (`fusion::neighbour_lifts`): the answer a turn or two after the best match
    /// ("Where did you get her?" "A year ago in Paris"). Commands and files' pieces are
    /// skipped over, and only what is in the asked scopes counts.
    async fn lift_neighbours_of_the_best(
        &self,
        scores: &mut HashMap<i64, f64>,
        messages: &mut HashMap<i64, StoredMessage>,
        scopes: &[Scope],
    ) -> Result<(), StoreError> {
        let s = &self.settings;
        if s.neighbour_top == 0 || (s.neighbour_share_1 == 0.0 && s.neighbour_share_2 == 0.0) {
            return Ok(());
        }
        // People's own words: not a bot's, not a file's pieces.
        let person = |m: &StoredMessage| !m.is_bot && m.attachment_of.is_none();
        let best: Vec<(i64, f64)> = fusion::ranked(scores)
            .into_iter()
            .take(s.neighbour_top)
            .filter(|(id, _)| messages.get(id).is_some_and(person))
            .collect();
        if best.is_empty() {
            return Ok(());
        }
        let ids: Vec<MessageId> = best.iter().map(|(id, _)| MessageId(*id)).collect();
        let gap = chrono::Duration::minutes(s.episode_gap_minutes);
        let around: HashMap<i64, fusion::Around> = self
            .store
            .nearby(&ids, gap)
            .await?
            .into_iter()
            .map(|n| (n.of.0, n.around.map(|m| m.map(|m| m.0))))
            .collect();
        // Read by id: only what is still in the asked scopes counts, as for the BM25 list.
        let unread: Vec<MessageId> = around
            .values()
            .flatten()
            .flatten()
            .filter(|id| !messages.contains_key(id))
            .map(|id| MessageId(*id))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        for m in self.store.messages_by_id(&unread).await? {
            if scopes.contains(&m.scope) {
                messages.insert(m.id.0, m);
            }
        }
        let lifts = fusion::neighbour_lifts(
            &best,
            &around,
            |id| messages.get(&id).is_some_and(person),
            s.neighbour_share_1,
            s.neighbour_share_2,
        );
        for (id, by) in lifts {
            if messages.contains_key(&id) {
                *scores.entry(id).or_insert(0.0) += by;
            }
        }
        Ok(())
    }

    /// The BM25 list with context: each message's score plus a share of its better
    /// neighbour's (`fusion::with_context`), best first, at most `candidates`.
    fn bm25_in_context(
        &self,
        own: &HashMap<i64, f64>,
        neighbours: &[Neighbours],
        lengths: &HashMap<i64, f64>,
    ) -> Vec<i64> {
        let length = |id: i64| lengths.get(&id).copied().unwrap_or(1.0);
        let id_of = |a: &Option<crate::store::Adjacent>| a.map(|a| a.id.0);
        // The hits' own neighbours first; a neighbour that is no hit knows only the hit beside
        // it (the message before an "after" is the hit, and the other way round).
        let mut context: HashMap<i64, fusion::InContext> = neighbours
            .iter()
            .map(|n| {
                let c = fusion::InContext {
                    before: id_of(&n.before),
                    after: id_of(&n.after),
                    length: length(n.id.0),
                };
                (n.id.0, c)
            })
            .collect();
        let alone = |id: i64| fusion::InContext {
            before: None,
            after: None,
            length: length(id),
        };
        for n in neighbours {
            if let Some(b) = id_of(&n.before) {
                let c = context.entry(b).or_insert_with(|| alone(b));
                c.after.get_or_insert(n.id.0);
            }
            if let Some(a) = id_of(&n.after) {
                let c = context.entry(a).or_insert_with(|| alone(a));
                c.before.get_or_insert(n.id.0);
            }
        }
        let scored = fusion::with_context(
            own,
            &context,
            self.settings.context_weight,
            self.settings.context_length,
        );
        let mut ids: Vec<i64> = fusion::ranked(&scored)
            .into_iter()
            .filter(|(_, s)| *s > 0.0)
            .map(|(id, _)| id)
            .collect();
        ids.truncate(self.settings.candidates);
        ids
    }
}

/// A message's length in search words, for its share of its neighbours' scores, from its
/// length in characters: about 11 per search word in chat and in assistant answers alike
/// (measured on both dev sets: 9 to 14 for four messages in five).
fn context_length(chars: i64) -> f64 {
    chars as f64 / 11.0
}

/// A query as the bonuses read it.
struct Asked<'a> {
    /// Who asked.
    asker: Option<PersonId>,
    /// Whether it asks what the bot said.
    about_bot: bool,
    /// Engram's own accounts, when it asks what the bot said (another bot in the channel
    /// is not "you").
    own: &'a HashSet<PersonId>,
    /// The people it names.
    named: &'a HashSet<PersonId>,
    /// The scored messages from the time it names or telling about it (`Window::is_about`).
    of_window: &'a HashSet<i64>,
    /// How much being from that time counts: 1 for a date, `event_time_share` for a time
    /// named by an event.
    time_share: f64,
    /// Whether it asks when something happened (`time::asks_when`).
    when: bool,
}

impl Asked<'_> {
    /// Said by Engram itself: a bot message of one of its own accounts.
    fn by_engram(&self, m: &StoredMessage) -> bool {
        m.is_bot && self.own.contains(&m.author)
    }
}

impl Retriever {
    /// Adds to each fused score what the rest of the query says about the message: said by
    /// the asker (or by Engram, when the question asks what it said), said by someone the
    /// question names, word pairs of the query (BM25's best hits only), its episode's rank,
    /// the time the query names, and naming a time when the query asks when.
    fn add_bonuses(
        &self,
        scores: &mut HashMap<i64, f64>,
        messages: &HashMap<i64, StoredMessage>,
        asked: &Asked<'_>,
        phrases: &HashMap<i64, usize>,
        episode_rank: &HashMap<i64, usize>,
    ) {
        let k = self.settings.rrf_k;
        let speaker_bonus = self.settings.speaker_weight / (k + 1.0);
        let episode_k = if self.embedder.is_some() {
            self.settings.episode_rrf_k
        } else {
            self.settings.episode_rrf_k_bm25_only
        };
        let phrase_bonus = self.settings.phrase_weight / (k + 1.0);
        let author_bonus = self.settings.author_weight / (k + 1.0);
        for (id, score) in scores.iter_mut() {
            let m = &messages[id];
            let favoured = if asked.about_bot {
                asked.by_engram(m)
            } else {
                asked.asker == Some(m.author)
            };
            if favoured {
                *score += speaker_bonus;
            }
            if asked.named.contains(&m.author) {
                *score += author_bonus;
            }
            if let Some(shared) = phrases.get(id) {
                *score += phrase_bonus * *shared as f64;
            }
            if let Some(rank) = m.episode.and_then(|ep| episode_rank.get(&ep)) {
                *score += self.settings.episode_weight / (episode_k + *rank as f64);
            }
            if asked.of_window.contains(id) {
                *score += self.settings.time_weight * asked.time_share / (k + 1.0);
            }
            if asked.when && time::told_time(&m.text, m.sent_at).is_some() {
                *score += self.settings.when_weight / (k + 1.0);
            }
        }
    }
}

impl Retriever {
    /// Lowers the score of others' messages that mostly ask (a question shares the words of
    /// the question asked now, but its answer is elsewhere): by `question_discount` times how
    /// much of the message past half is questions. The asker's own questions stay: what they
    /// asked tells about them ("do you think my road bike is ready for a century ride?"); so
    /// do the bot's when the question asks what the bot said.
    fn discount_questions(
        &self,
        scores: &mut HashMap<i64, f64>,
        messages: &HashMap<i64, StoredMessage>,
        asked: &Asked<'_>,
    ) {
        let d = self.settings.question_discount;
        if d <= 0.0 {
            return;
        }
        for (id, score) in scores.iter_mut() {
            let m = &messages[id];
            if asked.asker == Some(m.author) || (asked.about_bot && asked.by_engram(m)) {
                continue;
            }
            *score *= 1.0 - d * asking_past_half(&m.text);
        }
    }
}

/// How much of `text` asks, past half: 0 when at most half of it (in characters) is in
/// sentences ending with a question mark, rising to 1 when all of it is. (Measured on both dev
/// sets: starting at a third instead gave the same recall.)
fn asking_past_half(text: &str) -> f64 {
    ((asking_share(text) - 0.5) / 0.5).clamp(0.0, 1.0)
}

/// Whether `c` ends a sentence.
fn is_end(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…' | '。' | '！' | '？' | '؟')
}

/// Whether `c` asks.
fn is_question_mark(c: char) -> bool {
    matches!(c, '?' | '？' | '؟')
}

/// The share of `text` (in characters, outer spaces aside) that is in sentences ending with a
/// question mark: a run of end marks ("?!", "...") followed by a space, a closing quote or
/// the end ends a sentence, a question if the run holds a question mark; one inside a word
/// ("watch?v=", "3.5") does not.
fn asking_share(text: &str) -> f64 {
    // Most messages ask nothing: one look for a question mark, not a walk through sentences.
    if !text.contains(is_question_mark) {
        return 0.0;
    }
    let text = text.trim();
    let (mut asking, mut total) = (0usize, 0usize);
    let (mut sentence, mut asks) = (0usize, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        sentence += 1;
        let next = chars.peek().copied();
        if is_end(c) {
            asks |= is_question_mark(c);
            let closes = next.is_none_or(|n| {
                n.is_whitespace() || matches!(n, ')' | '"' | '\'' | '”' | '»' | '’')
            });
            if closes {
                asking += if asks { sentence } else { 0 };
                total += sentence;
                (sentence, asks) = (0, false);
            } else if !next.is_some_and(is_end) {
                asks = false;
            }
        } else if next.is_none() {
            total += sentence;
        }
    }
    if total == 0 {
        0.0
    } else {
        asking as f64 / total as f64
    }
}

/// What the store found for one query, before fusion.
struct Candidates {
    /// BM25 over messages, best first (more than `candidates`: context spreads their scores).
    bm25_hits: Vec<SearchHit>,
    /// The BM25 list read in context (`Retriever::bm25_in_context`), best first.
    bm25_in_context: Vec<i64>,
    /// The messages on that list that were no hit (neighbours), read by id.
    context_read: Vec<StoredMessage>,
    /// How many of the question's word pairs each of the best BM25 hits has side by side.
    phrases: HashMap<i64, usize>,
    /// BM25 over whole episodes, best first.
    episode_hits: Vec<EpisodeHit>,
    /// Nearest messages by vector, best first (none without an embedder).
    vector_hits: Vec<SearchHit>,
    /// Nearest closed episodes by vector, best first.
    near_episodes: Vec<EpisodeHit>,
    /// Messages from the time the question names, newest first, then those of the days after
    /// it that tell about it.
    in_window: Vec<StoredMessage>,
    /// That time: the date the question names, or the time of the event it names.
    window: Option<time::Window>,
    /// The people the question names, among the authors found.
    named: HashSet<PersonId>,
    /// How much the vector lists count (`Retriever::vector_trust` of the question); at 0 the
    /// question was not embedded.
    vector_trust: f64,
}

/// BM25 hits fetched per candidate kept: one below the cut still makes the list when a hit
/// beside it among the best `context_hits` shares its score with it. (3 gave the same recall
/// on both dev sets and cost 2-5 ms more a query.)
const CONTEXT_FETCH: usize = 2;

/// BM25 hits of an event's name read for the one that tells of it (`event_window`): past the
/// questions about it and the bot's replies.
const EVENT_HITS: usize = 10;
/// The same for an event of the asker's own ("my trip"), of which only their words tell.
const EVENT_HITS_OWN: usize = 40;

/// Most of the best this many messages that tell of an event must be from days at most
/// `EVENT_SPREAD_DAYS` from the best one's for it to be one event.
const EVENT_TELLING: usize = 3;
const EVENT_SPREAD_DAYS: i64 = 3;

impl Retriever {
    /// The candidate lists for `text` in `scopes`, as three lines of work that wait for no
    /// other: BM25 over messages, then their neighbours (and the list in context with the
    /// neighbours on it read) and the question's word pairs in the best of them, beside BM25
    /// over episodes; the messages of `window` (or of the time of `event`, found first); and
    /// the vector side:
    /// the question embedded as the people it names among the scopes' authors would ask it,
    /// then its nearest messages and episodes. (A name only the hits show is asked again
    /// after them.)
    async fn candidates(
        &self,
        text: &str,
        scopes: &[Scope],
        window: Option<time::Window>,
        event: Option<&time::Anchored>,
        asker: Option<PersonId>,
    ) -> Result<Candidates, StoreError> {
        let c = self.settings.candidates;
        let e = self.settings.episode_candidates;
        let bm25 = self.bm25();
        // The messages of that time, and those of the days after it that tell about it.
        let in_window = async {
            let window = match (window, event) {
                (Some(w), _) => Some(w),
                (None, Some(event)) => self.event_window(event, asker, scopes, bm25).await?,
                (None, None) => None,
            };
            // Being from that time still counts when its list weighs nothing.
            let Some(w) = window.filter(|_| self.settings.window_weight > 0.0) else {
                return Ok((window, Vec::new()));
            };
            let after = w.told_soon_after();
            let (mut during, told) = tokio::try_join!(
                self.store.messages_between(scopes, w.from, w.to, c),
                self.store.messages_between(scopes, after.from, after.to, c),
            )?;
            during.extend(told.into_iter().filter(|m| w.is_about(&m.text, m.sent_at)));
            Ok((Some(w), during))
        };
        let lexical = async {
            // The question's language (its words are read in it: BM25's terms, word pairs).
            // Its script or function words tell it here at once. When only lingua's n-grams
            // can, they run on a thread of their own while the searches start in English
            // (`NgramsToRead::likely`), and run again in theirs when it is another: a short
            // question in another language pays for the English searches first. (Waiting for
            // the n-grams held the searches 2-7 ms behind them on 2 cores, beside the
            // embedding: 10 of dev60's 60 questions, PostgreSQL.)
            match language::detect_quickly(text) {
                Quickly::Told(language) => self.lexical(text, language, scopes, bm25).await,
                Quickly::ByNgrams(start) => {
                    let likely = start.likely();
                    let detected = async {
                        // As a call in place would: a panic in detection goes on as that panic.
                        tokio::task::spawn_blocking(move || start.detect())
                            .await
                            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
                    };
                    let (found, language) =
                        tokio::join!(self.lexical(text, likely, scopes, bm25), detected);
                    if language == likely {
                        found
                    } else {
                        self.lexical(text, language, scopes, bm25).await
                    }
                }
            }
        };
        // How much the vectors count, read in the question as asked (the first person the
        // vector side may put in for a name is English whatever the question's language).
        let vector_trust = self.vector_trust(text);
        // The vector side asks as the people the question names among the scopes' authors
        // ("What did James adopt?" as James would ask it: "What did I adopt?"). The authors
        // are kept a while; when they are not known yet they are read beside the embedding
        // of the question as written, which is made again only if it names one of them.
        let authors_key = self.embedder.as_ref().map(|_| scopes_key(scopes));
        let known = authors_key.as_ref().and_then(|k| {
            let cached = self.authors.get(k);
            crate::telemetry::cache_lookup("scope_authors", cached.is_some());
            cached
        });
        let vector_side = async {
            let mut asked = AskedAs::new(text);
            if let Some(authors) = &known {
                asked.also_naming(&names::named(text, names::of(authors)));
            }
            // A question the embedder reads none of is not embedded: its vectors would count
            // for nothing.
            if text.trim().is_empty() || vector_trust <= 0.0 {
                return Ok::<_, StoreError>((asked, Vec::new(), Vec::new()));
            }
            let read_authors = async {
                match (&authors_key, &known) {
                    (Some(key), None) => {
                        let since = self.fills.begin_fill();
                        let authors = Arc::new(self.store.authors_in(scopes).await?);
                        self.fills
                            .fill(&self.authors, since, key.clone(), authors.clone());
                        Ok(Some(authors))
                    }
                    _ => Ok(None),
                }
            };
            // What the vector search must know of the scopes is read meanwhile too. Only a
            // cache is warmed: a failure there is the search's to meet (or not, when the
            // question's vector fails too and BM25 answers alone).
            let ready = async {
                if self.embedder.is_some()
                    && let Err(e) = self.store.ready_nearest(scopes).await
                {
                    warn!(error = %e, "reading ahead for the vector search failed");
                }
                Ok(())
            };
            let (mut vector, authors, ()) =
                tokio::try_join!(self.query_vector(&asked.text), read_authors, ready)?;
            if let Some(authors) = authors
                && asked.also_naming(&names::named(text, names::of(&authors)))
            {
                vector = self.query_vector(&asked.text).await?;
            }
            let (near, near_episodes) = self.nearest(scopes, vector.as_deref(), c, e).await?;
            Ok((asked, near, near_episodes))
        };
        let (found, (window, in_window), (mut asked, mut vector_hits, mut near_episodes)) =
            tokio::try_join!(lexical, in_window, vector_side)?;
        let named = names::named(
            text,
            found
                .hits
                .iter()
                .map(|h| &h.message)
                .chain(in_window.iter())
                .filter(|m| !m.is_bot)
                .map(|m| (m.author, m.author_name.as_str())),
        );
        // A name the hits show and the authors did not (a newcomer since they were read)
        // costs a second embedding and vector search.
        if self.embedder.is_some() && vector_trust > 0.0 && asked.also_naming(&named) {
            let vector = self.query_vector(&asked.text).await?;
            (vector_hits, near_episodes) = self.nearest(scopes, vector.as_deref(), c, e).await?;
        }
        Ok(Candidates {
            bm25_hits: found.hits,
            bm25_in_context: found.in_context,
            context_read: found.read,
            phrases: found.phrases,
            episode_hits: found.episodes,
            vector_hits,
            near_episodes,
            in_window,
            window,
            named: named.into_keys().collect(),
            vector_trust,
        })
    }

    /// The lexical line of `candidates`, `text` read in `language`: BM25 over messages, then
    /// their neighbours (and the list in context with the neighbours on it read) and the
    /// question's word pairs in the best of them, beside BM25 over episodes.
    async fn lexical(
        &self,
        text: &str,
        language: Option<language::Language>,
        scopes: &[Scope],
        bm25: Bm25,
    ) -> Result<Lexical, StoreError> {
        let terms = query_terms_in(text, self.settings.max_query_terms, language);
        let messages = async {
            let hits = self
                .store
                .search_messages(
                    scopes,
                    &terms,
                    bm25,
                    self.settings.candidates * CONTEXT_FETCH,
                )
                .await?;
            let in_context = async {
                let neighbours = self.neighbours_of(&hits).await?;
                self.read_in_context(&hits, &neighbours, scopes).await
            };
            let (in_context, phrases) =
                tokio::join!(in_context, self.phrases_in(text, language, &hits));
            let (in_context, read) = in_context?;
            Ok::<_, StoreError>((hits, in_context, read, phrases))
        };
        let episodes =
            self.store
                .search_episodes(scopes, &terms, bm25, self.settings.episode_candidates);
        let ((hits, in_context, read, phrases), episodes) = tokio::try_join!(messages, episodes)?;
        Ok(Lexical {
            hits,
            in_context,
            read,
            phrases,
            episodes,
        })
    }

    /// The time of `event`, asked by `asker`: read from the best of the event's BM25 hits that
    /// tells of it (`Anchored::around`): a person's message (the asker's, when the event is
    /// theirs: "my trip", when the asker is known) that mostly does not ask and names no time
    /// by an event itself (as the question does, stored before it is answered, with or
    /// without "?" or the bot's name; "I bought it the week before the trip" tells of another
    /// time too). None when nothing tells of it, or when the best that do are from days far
    /// apart.
    /// The time phrases are English; so are the event's words.
    async fn event_window(
        &self,
        event: &time::Anchored,
        asker: Option<PersonId>,
        scopes: &[Scope],
        bm25: Bm25,
    ) -> Result<Option<time::Window>, StoreError> {
        let terms = query_terms_in(
            &event.event,
            self.settings.max_query_terms,
            Some(language::Language::English),
        );
        if terms.is_empty() {
            return Ok(None);
        }
        // Others' messages about a trip of theirs may come first: more are read for one's own.
        let limit = if event.own {
            EVENT_HITS_OWN
        } else {
            EVENT_HITS
        };
        let hits = self
            .store
            .search_messages(scopes, &terms, bm25, limit)
            .await?;
        let telling: Vec<&StoredMessage> = hits
            .iter()
            .map(|h| &h.message)
            .filter(|m| {
                !m.is_bot
                    && (!event.own || asker.is_none_or(|a| a == m.author))
                    && asking_share(&m.text) <= 0.5
                    // Naming a time by an event, it tells of another time than the event's.
                    && time::anchored(&m.text).is_none()
            })
            .take(EVENT_TELLING)
            .collect();
        // Told of on days far apart, it is no one event ("during her yoga practice"): most
        // of the best that tell of it are from the days around the best one.
        let Some(best) = telling.first() else {
            return Ok(None);
        };
        let near = chrono::Duration::days(EVENT_SPREAD_DAYS);
        let agreeing = telling
            .iter()
            .filter(|m| (m.sent_at - best.sent_at).abs() <= near)
            .count();
        debug!(
            event = %event.event,
            told = telling.len(),
            agreeing,
            "time named by an event"
        );
        if agreeing * 2 <= telling.len() {
            return Ok(None);
        }
        Ok(telling.first().map(|m| event.around(&m.text, m.sent_at)))
    }

    /// The neighbours of the best `context_hits` BM25 hits in their channels (none when
    /// context weighs nothing). A hit further down takes a share only from one of those
    /// beside it (found from that one's side); two such hits side by side share nothing.
    async fn neighbours_of(&self, hits: &[SearchHit]) -> Result<Vec<Neighbours>, StoreError> {
        if self.settings.context_weight <= 0.0 {
            return Ok(Vec::new());
        }
        let ids: Vec<MessageId> = hits
            .iter()
            .take(self.settings.context_hits)
            .map(|h| h.message.id)
            .collect();
        let gap = chrono::Duration::minutes(self.settings.episode_gap_minutes);
        self.store.neighbours(&ids, gap).await
    }

    /// The BM25 list read in context (`bm25_in_context`) from `hits` and their `neighbours`,
    /// and the messages on it that were no hit, read by id: on the BM25 side of the search,
    /// while the question may still be being embedded. Only what is still in the asked scopes
    /// counts (an id freed by a forget can be another scope's message by now).
    async fn read_in_context(
        &self,
        hits: &[SearchHit],
        neighbours: &[Neighbours],
        scopes: &[Scope],
    ) -> Result<(Vec<i64>, Vec<StoredMessage>), StoreError> {
        let own: HashMap<i64, f64> = hits.iter().map(|h| (h.message.id.0, h.score)).collect();
        // Lengths in search words, for each message's share of its neighbours' scores.
        let mut lengths: HashMap<i64, f64> = HashMap::new();
        for n in neighbours {
            for a in n.before.iter().chain(n.after.iter()) {
                lengths.insert(a.id.0, context_length(a.chars));
            }
        }
        for h in hits {
            let chars = h.message.text.chars().count() as i64;
            lengths.insert(h.message.id.0, context_length(chars));
        }
        let listed = self.bm25_in_context(&own, neighbours, &lengths);
        let unread: Vec<MessageId> = listed
            .iter()
            .filter(|id| !own.contains_key(id))
            .map(|id| MessageId(*id))
            .collect();
        let mut read = self.store.messages_by_id(&unread).await?;
        read.retain(|m| scopes.contains(&m.scope));
        Ok((listed, read))
    }

    /// How many of the question's word pairs each of the best `PHRASE_CHECKS` BM25 hits has
    /// side by side (a pair needs both its words, so only BM25's hits can hold one; its best
    /// half is where a pair can still change the top of the ranking), worked out on a thread
    /// of its own while the other searches run.
    async fn phrases_in(
        &self,
        text: &str,
        language: Option<crate::domain::language::Language>,
        hits: &[SearchHit],
    ) -> HashMap<i64, usize> {
        if self.settings.phrase_weight <= 0.0 || hits.is_empty() {
            return HashMap::new();
        }
        let text = text.to_string();
        let best: Vec<(i64, String, Option<crate::domain::language::Language>)> = hits
            .iter()
            .take(PHRASE_CHECKS)
            .map(|h| (h.message.id.0, h.message.text.clone(), h.message.language))
            .collect();
        let count = move || {
            let pairs = WordPairs::of_in(&text, language);
            best.into_iter()
                .map(|(id, text, language)| (id, pairs.shared_with(&text, language)))
                .collect()
        };
        tokio::task::spawn_blocking(count)
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }

    /// The nearest messages and closed episodes to `vector` in `scopes` (none without one).
    async fn nearest(
        &self,
        scopes: &[Scope],
        vector: Option<&Embedding>,
        messages: usize,
        episodes: usize,
    ) -> Result<(Vec<SearchHit>, Vec<EpisodeHit>), StoreError> {
        match vector {
            Some(v) => tokio::try_join!(
                self.store.nearest_messages(scopes, v, messages),
                self.store.nearest_episodes(scopes, v, episodes),
            ),
            None => Ok((Vec::new(), Vec::new())),
        }
    }
}

/// What BM25 found for a question (`Retriever::candidates`).
struct Lexical {
    /// BM25 over messages, best first.
    hits: Vec<SearchHit>,
    /// The hits read in context (`Candidates::bm25_in_context`).
    in_context: Vec<i64>,
    /// The messages on that list that were no hit.
    read: Vec<StoredMessage>,
    /// The question's word pairs side by side in the best hits (`Retriever::phrases_in`).
    phrases: HashMap<i64, usize>,
    /// BM25 over episodes, best first.
    episodes: Vec<EpisodeHit>,
}

/// The question the vector side asks: in the first person of the people it names.
struct AskedAs {
    /// The question as written.
    question: String,
    /// The name words it was put in the first person for.
    words: BTreeSet<String>,
    /// The question so put.
    text: String,
}

impl AskedAs {
    /// `question` as written, naming no one yet.
    fn new(question: &str) -> AskedAs {
        AskedAs {
            question: question.to_string(),
            words: BTreeSet::new(),
            text: question.to_string(),
        }
    }

    /// Adds the words of `named` and puts the question in the first person again: whether
    /// its text changed (it must be embedded again).
    fn also_naming(&mut self, named: &HashMap<PersonId, BTreeSet<String>>) -> bool {
        let before = self.words.len();
        self.words.extend(named.values().flatten().cloned());
        if self.words.len() == before {
            return false;
        }
        let text = names::in_first_person(&self.question, &self.words);
        let changed = text != self.text;
        self.text = text;
        changed
    }
}

/// The key of a set of scopes in the authors cache (the same set in any order).
fn scopes_key(scopes: &[Scope]) -> Vec<String> {
    let mut key: Vec<String> = scopes.iter().map(Scope::key).collect();
    key.sort();
    key
}

/// Each episode's rank (1 = best) from BM25 over whole conversations, their closed-memory
/// vectors, and the best message similarity inside each (`by_message_vector`), fused, the two
/// vector lists weighing `trust` (`Retriever::vector_trust`). (The
/// best BM25 message per episode was tried as a fourth list: no gain with vectors, a loss
/// without.)
fn episode_ranks(
    bm25: &[EpisodeHit],
    vector: &[EpisodeHit],
    by_message_vector: &[i64],
    trust: f64,
    k: f64,
) -> HashMap<i64, usize> {
    let ep_bm25: Vec<i64> = bm25.iter().map(|h| h.episode).collect();
    let ep_vec: Vec<i64> = vector.iter().map(|h| h.episode).collect();
    let episode_scores = fusion::rrf(
        &[
            (1.0, &ep_bm25[..]),
            (trust, &ep_vec[..]),
            (trust, by_message_vector),
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
    }) || words.windows(3).any(|w| {
        (w[0] == "you" && w[1] == "previously")
            // "what did you recommend?": the past through "did".
            || (w[0] == "did" && w[1] == "you" && ASKED_BASE.contains(&w[2].as_str()))
    })
}

/// The verbs of `asks_what_the_bot_said` as "did you …" asks them.
const ASKED_BASE: [&str; 10] = [
    "say",
    "tell",
    "recommend",
    "suggest",
    "mention",
    "give",
    "list",
    "provide",
    "write",
    "share",
];

#[cfg(test)]
mod tests {
    use super::{
        AskedAs, asking_past_half, asking_share, asks_what_the_bot_said, episode_ranks, names,
    };
    use crate::domain::PersonId;
    use crate::store::EpisodeHit;

    #[test]
    fn episodes_found_by_vectors_count_as_much_as_the_vectors_are_trusted() {
        let hits = |eps: &[i64]| -> Vec<EpisodeHit> {
            eps.iter()
                .map(|&episode| EpisodeHit {
                    episode,
                    score: 1.0,
                })
                .collect()
        };
        // BM25 puts episode 1 first; both vector lists put episode 2 first.
        let (bm25, vector) = (hits(&[1, 2]), hits(&[2, 1]));
        let by_message_vector = [2, 1];
        let first = |trust: f64| {
            let ranks = episode_ranks(&bm25, &vector, &by_message_vector, trust, 10.0);
            *ranks.iter().find(|(_, rank)| **rank == 1).unwrap().0
        };
        assert_eq!(first(1.0), 2);
        assert_eq!(first(0.4), 1);
    }

    #[test]
    fn the_vector_side_asks_again_only_when_its_text_changes() {
        let authors = vec![
            (PersonId(1), "James".to_string()),
            (PersonId(2), "Maria".into()),
        ];
        let question = "What did James adopt after Maria moved?";
        // Nothing known: as written.
        let mut asked = AskedAs::new(question);
        assert_eq!(asked.text, question);
        // The authors read meanwhile name James: asked again, in his first person.
        let only_james = &authors[..1];
        assert!(asked.also_naming(&names::named(question, names::of(only_james))));
        assert_eq!(asked.text, "What did I adopt after Maria moved?");
        // The same names again: nothing to ask again.
        assert!(!asked.also_naming(&names::named(question, names::of(only_james))));
        assert!(!asked.also_naming(&Default::default()));
        assert_eq!(asked.text, "What did I adopt after Maria moved?");
        // A name met later (in the hits) changes it once more.
        assert!(asked.also_naming(&names::named(question, names::of(&authors))));
        assert_eq!(asked.text, "What did I adopt after I moved?");
        // Known from the start: already in the first person, and nothing more to ask.
        let mut known = AskedAs::new(question);
        known.also_naming(&names::named(question, names::of(&authors)));
        assert_eq!(known.text, asked.text);
        assert!(!known.also_naming(&names::named(question, names::of(&authors))));
    }

    #[test]
    fn how_much_a_message_asks() {
        assert_eq!(asking_share("What's their name?"), 1.0);
        assert_eq!(asking_share("Their name is Luna."), 0.0);
        assert_eq!(asking_share(""), 0.0);
        // "Cool, James!" is 12 characters of 62; the question (with its leading space) 50.
        let mostly = "Cool, James! What kind of games are you excited to play on it?";
        assert!((asking_share(mostly) - 50.0 / 62.0).abs() < 1e-9);
        // A run of end marks with a question mark asks; a tail without one counts as telling.
        assert_eq!(asking_share("Really?!"), 1.0);
        assert_eq!(asking_share("Really?? ok"), 8.0 / 11.0);
        assert_eq!(asking_share("Sure... really? "), 1.0 - 7.0 / 15.0);
        assert_eq!(asking_share("お名前は？"), 1.0);
        assert_eq!(asking_share("هل أنت بخير؟"), 1.0);
        // A question mark inside a link is no question.
        assert_eq!(asking_share("look: youtube.com/watch?v=abc"), 0.0);
        assert_eq!(asking_share("(did you see it?)"), 16.0 / 17.0);
        // Telling with a question at the end asks less than half: no discount.
        let tells =
            "I've tried three Korean restaurants recently, each with its own style. Have you?";
        assert_eq!(asking_past_half(tells), 0.0);
        assert_eq!(asking_past_half("What's their name?"), 1.0);
        assert!((asking_past_half(mostly) - (50.0 / 62.0 - 0.5) / 0.5).abs() < 1e-9);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        #[test]
        fn any_text_asks_a_share_between_none_and_all(t in "\\PC{0,40}|[a-z?!. …？؟\"'’)]{0,40}") {
            let share = asking_share(&t);
            proptest::prop_assert!((0.0..=1.0).contains(&share), "{t:?}: {share}");
            proptest::prop_assert!((0.0..=1.0).contains(&asking_past_half(&t)));
            if !t.contains(super::is_question_mark) {
                proptest::prop_assert_eq!(share, 0.0);
            }
            // Positive control: a text ending in a question mark asks something.
            proptest::prop_assert!(asking_share(&format!("{t}?")) > 0.0, "{t:?}");
        }
    }

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
        assert!(asks_what_the_bot_said("What did you recommend for dinner?"));
        assert!(asks_what_the_bot_said("which book did you suggest"));
        assert!(!asks_what_the_bot_said("Did you sleep well?"));
        assert!(!asks_what_the_bot_said("What did I recommend to Bob?"));
        assert!(!asks_what_the_bot_said(""));
    }
}
