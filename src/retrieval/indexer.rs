//! The background indexer, off the reply path: embeds new messages in batches (a short one
//! with the message before it as context), puts them in episodes, and closes quiet episodes as
//! episodic memories (summary, supporting dialogue, embedding), merging one into a
//! near-identical older memory of the same scope (same privacy level) instead of adding a
//! duplicate; and embeds again the messages whose context was forgotten. Every step can be
//! re-run after a crash: messages stay pending until their batch commits, and closing twice
//! changes nothing.

use super::SpaceCell;
use super::topics::{Topic, TopicRules, Turn, Verdict};
use crate::config::RetrievalConfig;
use crate::domain::{Clock, Embedding, MessageId, SpaceId, StoredMessage, VectorSpaceId};
use crate::embed::{self, EmbedError, SharedEmbedder};
use crate::store::{
    Episode, EpisodeClose, EpisodeEnd, EpisodeStart, EpisodeVector, IndexedMessage, Store,
    StoreError,
};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
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

impl IndexError {
    /// How long the embedding API asked to wait (Retry-After), if it did.
    fn retry_after(&self) -> Option<Duration> {
        match self {
            IndexError::Embed(EmbedError::Http { retry_after, .. }) => *retry_after,
            _ => None,
        }
    }
}

/// The longest pause between rounds that fail, and the longest wait a Retry-After is taken
/// for (a provider asking for a day is asked again sooner).
const MAX_PAUSE: Duration = Duration::from_secs(300);
const MAX_ASKED: Duration = Duration::from_secs(900);

/// The first pause after a batch of a model change's backlog failed; it doubles with each
/// failure in a row, as the indexer's own rounds' (`pause_after`).
const BACKLOG_PAUSE: Duration = Duration::from_secs(2);

/// A model change's backlog after batches that failed: how many in a row, and when it may be
/// tried again.
#[derive(Debug, Default)]
struct BacklogPause {
    failures: u32,
    until: Option<DateTime<Utc>>,
}

/// The pause after the `failures`-th round in a row that failed: `idle` doubling with each
/// (at most `MAX_PAUSE`), and at least what the API asked for (at most `MAX_ASKED`), so an
/// embedding API that is down or rate-limits is not asked again at the indexer's pace.
pub fn pause_after(failures: u32, idle: Duration, asked: Option<Duration>) -> Duration {
    let doubled = idle
        .saturating_mul(1u32 << failures.saturating_sub(1).min(16))
        .min(MAX_PAUSE)
        .max(idle);
    asked.map_or(doubled, |a| doubled.max(a.min(MAX_ASKED)))
}

/// Embeds new messages in batches and groups them into episodes, off the reply path.
pub struct Indexer {
    store: Arc<dyn Store>,
    embedder: Option<SharedEmbedder>,
    /// The embedder's vector space, looked up once.
    space: SpaceCell,
    clock: Arc<dyn Clock>,
    settings: RetrievalConfig,
    topics: TopicRules,
    batch: usize,
    /// Vectors of other models stay once the embedder's space covers every message (an
    /// operator may switch back).
    keep_old_vectors: bool,
    /// Where this process's pass over older messages without a vector of the embedder's
    /// model stands: below this id (newest first); None once it has covered them all. Each
    /// process starts from the top, and what earlier passes embedded is skipped, so a pass
    /// cut short by a crash goes on where it stopped.
    backfill_below: std::sync::Mutex<Option<MessageId>>,
    /// The backlog's own back-off: its batches fail apart from new messages' (which go on).
    backlog_pause: std::sync::Mutex<BacklogPause>,
}

/// Where an embedder's pass over older messages stands (`Indexer::backfill_batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backfill {
    /// Embedded this many older messages; more may wait.
    Embedded(usize),
    /// Every message has a vector of the embedder's model.
    Done,
}

impl Backfill {
    /// How many messages this batch embedded.
    pub fn count(self) -> usize {
        match self {
            Backfill::Embedded(n) => n,
            Backfill::Done => 0,
        }
    }
}

/// A channel in one scope: space, channel id, scope key (where one episode is open).
type ChannelKey = (SpaceId, String, String);

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

/// Whether a message is short enough that its vector needs the message before it: fewer than
/// `words` words ("Yes! Last Friday.").
pub fn needs_context(text: &str, words: usize) -> bool {
    text.split_whitespace().count() < words
}

/// A person's own words: not the bot's, not a file's pieces.
fn by_a_person(m: &StoredMessage) -> bool {
    !m.is_bot && m.attachment_of.is_none()
}

/// Whether `message`'s vector is made with `before` (the message before it in its channel):
/// when it has fewer than `settings.context_vector_words` words, or, between two people's
/// messages, fewer than `settings.context_vector_words_people` (people's turns are pieces of
/// one conversation; a bot's reply is long and about many things, and would outweigh a short
/// message's own words).
pub fn takes_context(
    message: &StoredMessage,
    before: &StoredMessage,
    settings: &RetrievalConfig,
) -> bool {
    needs_context(&message.text, settings.context_vector_words)
        || (by_a_person(message)
            && by_a_person(before)
            && needs_context(&message.text, settings.context_vector_words_people))
}

/// Whether `message` is short enough that some message before it could be its context
/// (`takes_context`, whoever wrote that one): only such messages' neighbours are read.
fn may_take_context(message: &StoredMessage, settings: &RetrievalConfig) -> bool {
    let people = if by_a_person(message) {
        settings.context_vector_words_people
    } else {
        0
    };
    needs_context(&message.text, settings.context_vector_words.max(people))
}

/// The text a message's vector is made of: its own, then the message before it (when it has
/// one as context). Its own words come first, so a cut at the model's length keeps them.
pub fn vector_text(message: &StoredMessage, before: Option<&StoredMessage>) -> String {
    match before {
        Some(b) => format!("{}\n{}", message.text, b.text),
        None => message.text.clone(),
    }
}

/// `texts` embedded in one call; when the model refuses an input of the batch (not an outage,
/// nor a key or model it does not know: those wait), each text alone, and a text it refuses
/// then gets no vector: it stays searchable by BM25 and its episode goes on, instead of
/// holding back every message after it.
async fn embed_each_refused_alone(
    embedder: &dyn crate::embed::Embedder,
    texts: &[String],
) -> Result<Vec<Option<Vec<f32>>>, IndexError> {
    let refused = |e: EmbedError| {
        warn!(error = %e, "a message the embedding model refuses: kept without a vector");
    };
    match embedder.embed(texts).await {
        Ok(vectors) => return Ok(vectors.into_iter().map(Some).collect()),
        Err(e) if !e.refuses_input() => return Err(e.into()),
        Err(e) if texts.len() == 1 => {
            refused(e);
            return Ok(vec![None]);
        }
        Err(_) => {}
    }
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        out.push(match embedder.embed(std::slice::from_ref(text)).await {
            Ok(mut v) => v.pop(),
            Err(e) if !e.refuses_input() => return Err(e.into()),
            Err(e) => {
                refused(e);
                None
            }
        });
    }
    Ok(out)
}

impl Indexer {
    /// An indexer over `store` embedding `batch` messages per call, starting episodes by the
    /// time gap of `settings` and by `topics`.
    pub fn new(
        store: Arc<dyn Store>,
        embedder: Option<SharedEmbedder>,
        clock: Arc<dyn Clock>,
        settings: RetrievalConfig,
        topics: TopicRules,
        batch: usize,
    ) -> Indexer {
        Indexer {
            store,
            embedder,
            space: SpaceCell::default(),
            clock,
            settings,
            topics,
            batch: batch.max(1),
            keep_old_vectors: false,
            backfill_below: std::sync::Mutex::new(Some(MessageId(i64::MAX))),
            backlog_pause: std::sync::Mutex::new(BacklogPause::default()),
        }
    }

    /// Keeps the vectors of other models once the embedder's covers everything (default:
    /// they are deleted then).
    pub fn keeping_old_vectors(mut self, keep: bool) -> Indexer {
        self.keep_old_vectors = keep;
        self
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
        let mut items = self.embed(pending).await?;
        self.mark_boundaries(&mut items).await?;
        self.store.index_messages(&items, self.gap()).await?;
        self.note_refused(&items).await?;
        Ok(items.len())
    }

    /// Records the messages of `items` the model refused (no vector although there is an
    /// embedder): they count as done for its pass, so they never hold the old model's vectors.
    async fn note_refused(&self, items: &[IndexedMessage]) -> Result<(), IndexError> {
        let Some(space) = self.space().await? else {
            return Ok(());
        };
        // When no text of the call got a vector, that says more about the model or its
        // settings (a wrong size, an answer that is not JSON) than about the texts: nothing
        // is kept as refused, and they are tried again at the next start.
        if items.iter().all(|i| i.embedding.is_none()) {
            return Ok(());
        }
        let refused: Vec<MessageId> = items
            .iter()
            .filter(|i| i.embedding.is_none())
            .map(|i| i.message.id)
            .collect();
        self.store.refuse_vectors(space, &refused).await?;
        Ok(())
    }

    /// Judges each message against the topic of its channel's open episode, in the order
    /// episodes are built, and marks those that start a new one (by topic or marker).
    async fn mark_boundaries(&self, items: &mut [IndexedMessage]) -> Result<(), IndexError> {
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| (items[i].message.sent_at, items[i].message.id));
        let mut topics: HashMap<ChannelKey, (Topic, Option<DateTime<Utc>>)> = HashMap::new();
        for i in order {
            let m = &items[i].message;
            // The text of an attachment is no turn of the conversation: it joins the episode
            // of the message that carried it and has no say in the topic. (The topic rebuilt
            // from an open episode leaves it out too, so the boundaries are the same however
            // the batches fall.)
            if m.attachment_of.is_some() {
                items[i].start = EpisodeStart::Continue;
                continue;
            }
            let key = (m.space, m.channel.clone(), m.scope.key());
            if !topics.contains_key(&key) {
                let open = self.open_topic(m).await?;
                topics.insert(key.clone(), open);
            }
            let (topic, last) = topics.get_mut(&key).expect("inserted above");
            // After a pause the store starts a new episode: a new topic too.
            if last.is_some_and(|t| m.sent_at - t > self.gap()) {
                *topic = Topic::new();
            }
            *last = Some(last.map_or(m.sent_at, |t| t.max(m.sent_at)));
            let verdict = topic.judge(
                &self.topics,
                Turn {
                    id: m.id,
                    text: &m.text,
                    vector: items[i].embedding.as_ref().map(|e| e.vector.as_slice()),
                    is_bot: m.is_bot,
                },
            );
            items[i].start = match verdict {
                Verdict::Shift { from } => EpisodeStart::Topic { from },
                Verdict::Marker => EpisodeStart::Marker,
                Verdict::Same | Verdict::Suspect => EpisodeStart::Continue,
            };
        }
        Ok(())
    }

    /// The topic of the open episode `m` would join, rebuilt from its last turns (replayed
    /// through the rules, so a suspect from an earlier batch is one still), and its last time.
    async fn open_topic(
        &self,
        m: &StoredMessage,
    ) -> Result<(Topic, Option<DateTime<Utc>>), IndexError> {
        let Some((_, tail)) = self
            .store
            .open_episode(m.space, &m.channel, &m.scope, 2 * self.topics.window.max(1))
            .await?
        else {
            return Ok((Topic::new(), None));
        };
        let vectors: HashMap<MessageId, Vec<f32>> = match self.space().await? {
            Some(space) => {
                let ids: Vec<MessageId> = tail.iter().map(|t| t.id).collect();
                self.store
                    .message_vectors(space, &ids)
                    .await?
                    .into_iter()
                    .map(|v| (v.message, v.vector))
                    .collect()
            }
            None => HashMap::new(),
        };
        let mut topic = Topic::new();
        for t in &tail {
            topic.judge(
                &self.topics,
                Turn {
                    id: t.id,
                    text: &t.text,
                    vector: vectors.get(&t.id).map(Vec::as_slice),
                    is_bot: t.is_bot,
                },
            );
        }
        Ok((topic, tail.last().map(|t| t.sent_at)))
    }

    /// Embeds again one batch of the messages whose vector was made with a message since
    /// forgotten; returns how many (0: none waiting, or embeddings are off).
    pub async fn redo_batch(&self) -> Result<usize, IndexError> {
        if self.embedder.is_none() {
            return Ok(0);
        }
        let waiting = self.store.vectors_to_redo(self.batch).await?;
        if waiting.is_empty() {
            return Ok(0);
        }
        let n = waiting.len();
        let items = self.embed(waiting).await?;
        self.store.redo_vectors(&items).await?;
        self.note_refused(&items).await?;
        Ok(n)
    }

    /// The embedder's vector space (None without an embedder).
    async fn space(&self) -> Result<Option<VectorSpaceId>, IndexError> {
        match &self.embedder {
            Some(e) => Ok(Some(self.space.get(self.store.as_ref(), e.as_ref()).await?)),
            None => Ok(None),
        }
    }

    /// Embeds one batch of older messages that have no vector of the embedder's model (after
    /// a model change, or when embeddings were off), newest first, so the recent past is
    /// searchable by meaning again first. When none are left, the closed episodes get their
    /// vectors in the new space and, unless kept, the other models' vectors go.
    pub async fn backfill_batch(&self) -> Result<Backfill, IndexError> {
        let Some(space) = self.space().await? else {
            return Ok(Backfill::Done);
        };
        let Some(below) = *self.backfill_below.lock().expect("backfill lock") else {
            return Ok(Backfill::Done);
        };
        let missing = self.store.vectors_missing(space, below, self.batch).await?;
        let Some(last) = missing.last().map(|m| m.id) else {
            // Done before the episodes' vectors are made: they are complete now (or as
            // complete as the model allows).
            *self.backfill_below.lock().expect("backfill lock") = None;
            if let Err(e) = self.finish_backfill(space).await {
                *self.backfill_below.lock().expect("backfill lock") = Some(below);
                return Err(e);
            }
            return Ok(Backfill::Done);
        };
        let n = missing.len();
        // A text the model refuses (not a passing outage) stays without a vector of it,
        // searchable by BM25, and the pass goes on past it.
        let items = self.embed(missing).await?;
        self.store.add_vectors(&items).await?;
        self.note_refused(&items).await?;
        *self.backfill_below.lock().expect("backfill lock") = Some(last);
        Ok(Backfill::Embedded(n))
    }

    /// After a pass: closed episodes get their vector in `space` (the centroid of their
    /// messages'), then the other spaces' vectors go unless they are kept.
    async fn finish_backfill(&self, space: VectorSpaceId) -> Result<(), IndexError> {
        loop {
            let episodes = self.store.episodes_outside(space, 100).await?;
            if episodes.is_empty() {
                break;
            }
            for episode in &episodes {
                let messages = self
                    .store
                    .episode_messages(episode.id, true, EpisodeEnd::Oldest, 200)
                    .await?;
                let embedding = self.episode_vector(space, &messages).await?;
                self.store
                    .set_episode_vector(episode, space, embedding.as_ref())
                    .await?;
            }
        }
        if !self.keep_old_vectors {
            let dropped = self.store.drop_other_vector_spaces(space).await?;
            if dropped > 0 {
                info!(
                    vectors = dropped,
                    "every message has a vector of the configured model: other models' vectors deleted"
                );
            }
        }
        Ok(())
    }

    /// The centroid of the vectors in `space` of an episode's `messages`.
    async fn episode_vector(
        &self,
        space: VectorSpaceId,
        messages: &[StoredMessage],
    ) -> Result<Option<EpisodeVector>, IndexError> {
        let ids: Vec<_> = messages.iter().map(|m| m.id).collect();
        let vectors = self.store.message_vectors(space, &ids).await?;
        // While older messages are still being embedded by this model, a centroid of the part
        // done would stay as the episode's vector: it gets none, and one when the pass ends.
        let passing = self.backfill_below.lock().expect("backfill lock").is_some();
        if passing && vectors.len() < ids.len() {
            return Ok(None);
        }
        Ok(
            embed::centroid(vectors.iter().map(|v| v.vector.as_slice())).map(|vector| {
                EpisodeVector {
                    embedding: Embedding { space, vector },
                    made_from: vectors.iter().map(|v| (v.message, v.context)).collect(),
                }
            }),
        )
    }

    /// The vectors of `messages` (none without an embedder): a short message (`takes_context`)
    /// is embedded with the message before it in its channel (same scope, within the episode
    /// gap), whose id the vector keeps.
    async fn embed(&self, messages: Vec<StoredMessage>) -> Result<Vec<IndexedMessage>, IndexError> {
        let (Some(embedder), Some(space)) = (&self.embedder, self.space().await?) else {
            return Ok(messages
                .into_iter()
                .map(|message| IndexedMessage {
                    message,
                    embedding: None,
                    context: None,
                    start: EpisodeStart::Continue,
                })
                .collect());
        };
        let short: Vec<MessageId> = messages
            .iter()
            .filter(|m| may_take_context(m, &self.settings))
            .map(|m| m.id)
            .collect();
        let before_of: HashMap<MessageId, MessageId> = self
            .store
            .neighbours(&short, self.gap())
            .await?
            .into_iter()
            .filter_map(|n| Some((n.id, n.before?.id)))
            .collect();
        let ids: Vec<MessageId> = before_of.values().copied().collect();
        let texts: HashMap<MessageId, StoredMessage> = self
            .store
            .messages_by_id(&ids)
            .await?
            .into_iter()
            .map(|m| (m.id, m))
            .collect();
        // Read in a second statement: a context counts only if it is still in the message's own
        // scope and channel (an id freed by a forget can belong to another place by now).
        let place: HashMap<MessageId, &StoredMessage> =
            messages.iter().map(|m| (m.id, m)).collect();
        let before: HashMap<MessageId, StoredMessage> = before_of
            .into_iter()
            .filter_map(|(id, b)| {
                let (m, b) = (place.get(&id)?, texts.get(&b)?);
                (b.scope == m.scope
                    && b.channel == m.channel
                    && b.space == m.space
                    && takes_context(m, b, &self.settings))
                .then(|| (id, b.clone()))
            })
            .collect();
        let texts: Vec<String> = messages
            .iter()
            .map(|m| vector_text(m, before.get(&m.id)))
            .collect();
        let start = std::time::Instant::now();
        let vectors = embed_each_refused_alone(embedder.as_ref(), &texts).await?;
        crate::telemetry::embedded("index", texts.len(), start.elapsed());
        Ok(messages
            .into_iter()
            .zip(vectors)
            .map(|(message, v)| IndexedMessage {
                context: before.get(&message.id).map(|b| b.id),
                message,
                embedding: v.map(|vector| Embedding { space, vector }),
                start: EpisodeStart::Continue,
            })
            .collect())
    }

    /// One round of indexing: a batch of new messages, a batch of vectors to make again and
    /// a batch of a model change's backlog; returns how many (0: nothing pending).
    pub async fn round(&self) -> Result<usize, IndexError> {
        // Each round all three: vectors to make again never wait behind steady new traffic,
        // and new messages go first, one batch of a model change's backlog after them; a
        // backlog batch that fails (the API down or rate-limiting) never holds up the rest,
        // and the backlog waits as a failed round would (`pause_after`, Retry-After heard).
        let n = self.index_batch().await? + self.redo_batch().await?;
        let now = self.clock.now();
        if self
            .backlog_pause
            .lock()
            .expect("backlog lock")
            .until
            .is_some_and(|until| now < until)
        {
            return Ok(n);
        }
        let older = match self.backfill_batch().await {
            Ok(done) => {
                *self.backlog_pause.lock().expect("backlog lock") = BacklogPause::default();
                done.count()
            }
            Err(e) => {
                let mut paused = self.backlog_pause.lock().expect("backlog lock");
                paused.failures = paused.failures.saturating_add(1);
                let pause = pause_after(paused.failures, BACKLOG_PAUSE, e.retry_after());
                // From when the call failed (a timeout takes a while), not from before it.
                let failed_at = self.clock.now();
                paused.until = chrono::Duration::from_std(pause)
                    .ok()
                    .and_then(|p| failed_at.checked_add_signed(p));
                warn!(error = %e, failures = paused.failures, retry_in_s = pause.as_secs_f64(),
                    "embedding older messages paused; tried again later");
                0
            }
        };
        Ok(n + older)
    }

    /// Indexes until nothing is pending (new messages, vectors to make again, a model
    /// change's backlog), in the foreground: a batch that fails ends it with the error (what
    /// was done stays; running it again goes on from there). `progress` hears the total.
    pub async fn index_all(&self, mut progress: impl FnMut(usize)) -> Result<usize, IndexError> {
        let mut total = 0;
        loop {
            let n = self.index_batch().await?
                + self.redo_batch().await?
                + self.backfill_batch().await?.count();
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
        let messages = self
            .store
            .episode_messages(episode.id, true, EpisodeEnd::Oldest, 200)
            .await?;
        let summary = extractive_summary(&messages);
        let embedding = match self.space().await? {
            Some(space) => self.episode_vector(space, &messages).await?,
            None => None,
        };
        let close = match &embedding {
            Some(v) => match self
                .store
                .similar_episode(
                    &episode.scope,
                    &v.embedding,
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
        self.store
            .close_episode(episode.id, &messages, &close)
            .await?;
        Ok(())
    }

    /// Runs until `stop` turns true: index a round of what is pending, close quiet episodes,
    /// and again at once while there was work, else after `idle`. The stop is heard after
    /// each round, and episodes close between rounds: a model change's backlog (hours with an
    /// API model) holds up neither a shutdown nor episodic memory.
    pub async fn run_until(
        self: Arc<Self>,
        idle: Duration,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut failures = 0u32;
        loop {
            let work = async {
                crate::telemetry::index_backlog(self.store.index_backlog().await?);
                let indexed = self.round().await?;
                let closed = self.close_episodes().await?;
                Ok::<_, IndexError>(indexed + closed)
            };
            let pause = match work.await {
                Ok(done) => {
                    failures = 0;
                    (done == 0).then_some(idle)
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    let pause = pause_after(failures, idle, e.retry_after());
                    warn!(error = %e, failures, retry_in_s = pause.as_secs_f64(), "indexing paused; pending messages stay searchable by BM25 and are retried");
                    Some(pause)
                }
            };
            if *stop.borrow() {
                return;
            }
            let Some(pause) = pause else {
                tokio::task::yield_now().await;
                continue;
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.changed() => {}
            }
            if *stop.borrow() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_rounds_wait_longer_and_as_long_as_asked() {
        let idle = Duration::from_secs(2);
        let secs =
            |f, asked: Option<u64>| pause_after(f, idle, asked.map(Duration::from_secs)).as_secs();
        assert_eq!([1, 2, 3, 4].map(|f| secs(f, None)), [2, 4, 8, 16]);
        assert_eq!(secs(30, None), 300, "at most five minutes");
        assert_eq!(secs(u32::MAX, None), 300);
        assert_eq!(secs(1, Some(60)), 60, "Retry-After: 60");
        assert_eq!(
            secs(7, Some(1)),
            128,
            "a short Retry-After never shortens the pause"
        );
        assert_eq!(secs(1, Some(86_400)), 900, "a day asked: fifteen minutes");
        assert_eq!(pause_after(1, Duration::ZERO, None), Duration::ZERO);
        let limited = IndexError::Embed(EmbedError::Http {
            status: 429,
            detail: "Too Many Requests".into(),
            retry_after: Some(Duration::from_secs(7)),
        });
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(
            IndexError::Embed(EmbedError::Connect("down".into())).retry_after(),
            None
        );
    }
}
