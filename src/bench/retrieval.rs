//! `engram bench retrieval`: conversations with questions (one JSON record per line: `Record`
//! below, sessions of dated turns and questions naming their evidence turns) through the
//! real ingest path and the same hybrid search the bot uses for replies; reports R@5, R@10
//! and nDCG@10 at turn and session level, per category and overall, query latency and
//! indexing time.

use crate::config::RetrievalConfig;
use crate::domain::{
    IncomingMessage, MessageId, PersonId, Place, Platform, Privacy, Scope, SpaceKind, StoredMessage,
};
use crate::embed::{EmbedError, Embedder, SharedEmbedder};
use crate::ingest::Ingestor;
use crate::retrieval::{IndexError, Indexer, Retrieved, Retriever};
use crate::store::{Store, StoreError};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Deserialize)]
/// One conversation with its questions: a line of the data file.
pub struct Record {
    /// The conversation's id.
    pub conversation_id: String,
    /// The people of a group conversation (empty for a chat between a user and the
    /// assistant).
    #[serde(default)]
    pub speakers: Vec<String>,
    /// Its sessions, in any order (they are sorted by date).
    pub sessions: Vec<Session>,
    /// The questions asked about it.
    pub questions: Vec<Question>,
}

#[derive(Deserialize)]
/// One session of a conversation.
pub struct Session {
    /// The session's id.
    pub session_id: String,
    /// When it took place (`parse_date`'s formats).
    pub date: String,
    /// Its turns, in order.
    pub turns: Vec<Turn>,
}

#[derive(Deserialize)]
/// One turn of a session.
pub struct Turn {
    /// The turn's id, which questions name as evidence.
    pub turn_id: String,
    /// "user" or "assistant", or in a group conversation the name of the person who said it.
    pub speaker: String,
    /// What was said.
    pub text: String,
}

#[derive(Deserialize)]
/// A question about a conversation.
pub struct Question {
    /// The question's id.
    pub question_id: String,
    /// What is asked.
    pub question: String,
    /// Its category (scores are also reported per category).
    pub category: String,
    /// When it is asked.
    pub question_date: String,
    #[serde(default)]
    /// The turns that hold the answer.
    pub evidence_turn_ids: Vec<String>,
    #[serde(default)]
    /// The sessions that hold the answer.
    pub evidence_session_ids: Vec<String>,
}

/// Why the benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The data file could not be opened.
    #[error("{}: {cause}", path.display())]
    Open {
        /// The data file.
        path: PathBuf,
        /// The I/O error.
        cause: std::io::Error,
    },
    /// A line of the data file could not be read, or is not a record.
    #[error("{}: line {line}: {cause}", path.display())]
    Line {
        /// The data file.
        path: PathBuf,
        /// Its line, from 1.
        line: usize,
        /// What the reader said.
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A session or question date in neither of the formats `parse_date` reads.
    #[error("cannot read the date {0:?}")]
    Date(String),
    /// Storing or searching failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Indexing (embedding, episodes) failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Finishing episodes (their details and search keys) failed.
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
}

/// Reads `.jsonl` or `.jsonl.gz`, one record per line.
pub fn read_records(path: &Path) -> Result<Vec<Record>, BenchError> {
    let file = std::fs::File::open(path).map_err(|cause| BenchError::Open {
        path: path.to_path_buf(),
        cause,
    })?;
    let reader: Box<dyn BufRead> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(std::io::BufReader::new(flate2::read::GzDecoder::new(file)))
    } else {
        Box::new(std::io::BufReader::new(file))
    };
    let mut records = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let bad = |cause: Box<dyn std::error::Error + Send + Sync>| BenchError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            cause,
        };
        let line = line.map_err(|e| bad(e.into()))?;
        if line.trim().is_empty() {
            continue;
        }
        records.push(serde_json::from_str(&line).map_err(|e| bad(e.into()))?);
    }
    Ok(records)
}

/// "2023/05/20 (Sat) 02:21" (the data's format), or RFC 3339.
pub fn parse_date(s: &str) -> Result<DateTime<Utc>, BenchError> {
    if let Ok(t) = NaiveDateTime::parse_from_str(s.trim(), "%Y/%m/%d (%a) %H:%M") {
        return Ok(t.and_utc());
    }
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| BenchError::Date(s.to_string()))
}

/// Recall of `evidence` in the first `k` of `ranked`.
pub fn recall_at(ranked: &[String], evidence: &[String], k: usize) -> f64 {
    if evidence.is_empty() {
        return 0.0;
    }
    let top = &ranked[..ranked.len().min(k)];
    evidence.iter().filter(|e| top.contains(e)).count() as f64 / evidence.len() as f64
}

/// nDCG@k with binary relevance and a log2 discount; ideal = all evidence first.
pub fn ndcg_at(ranked: &[String], evidence: &[String], k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, id)| evidence.contains(id))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..evidence.len().min(k))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

#[derive(Debug, Default, Clone, Serialize)]
/// Recall and nDCG: summed while counting, means in the report.
pub struct Scores {
    /// Questions counted.
    pub questions: usize,
    /// Recall in the top 5.
    pub r_at_5: f64,
    /// Recall in the top 10.
    pub r_at_10: f64,
    /// nDCG of the top 10.
    pub ndcg_at_10: f64,
}

impl Scores {
    fn add(&mut self, ranked: &[String], evidence: &[String]) {
        self.questions += 1;
        self.r_at_5 += recall_at(ranked, evidence, 5);
        self.r_at_10 += recall_at(ranked, evidence, 10);
        self.ndcg_at_10 += ndcg_at(ranked, evidence, 10);
    }

    fn mean(&self) -> Scores {
        let n = self.questions.max(1) as f64;
        let r = |x: f64| (x / n * 1000.0).round() / 1000.0;
        Scores {
            questions: self.questions,
            r_at_5: r(self.r_at_5),
            r_at_10: r(self.r_at_10),
            ndcg_at_10: r(self.ndcg_at_10),
        }
    }
}

#[derive(Debug, Serialize)]
/// Scores at one level (turn or session).
pub struct Level {
    /// Over every question.
    pub overall: Scores,
    /// Per question category.
    pub by_category: BTreeMap<String, Scores>,
}

#[derive(Debug, Serialize)]
/// What `engram bench retrieval` prints.
pub struct RetrievalReport {
    /// The data file.
    pub data: String,
    /// "sqlite" or "postgres".
    pub backend: String,
    /// The embedding model, or "none".
    pub embedder: String,
    /// Conversations read.
    pub records: usize,
    /// Turns in them.
    pub turns: usize,
    /// Questions scored.
    pub questions: usize,
    /// Questions left out because they name no evidence.
    pub skipped_without_evidence: usize,
    /// Scores of the evidence turns.
    pub turn: Level,
    /// Scores of the evidence sessions.
    pub session: Level,
    /// Search latency per question.
    pub query_latency: super::Latency,
    /// Time to store every turn (seconds).
    pub ingest_seconds: f64,
    /// Time to embed them and build episodes (seconds).
    pub index_seconds: f64,
    /// Per question: turn R@10 and session R@5 (to see which ones miss).
    pub per_question: Vec<QuestionResult>,
}

#[derive(Debug, Serialize)]
/// One question's outcome.
pub struct QuestionResult {
    /// The question's id.
    pub question_id: String,
    /// Its category.
    pub category: String,
    /// Recall of its evidence turns in the top 10.
    pub turn_r_at_10: f64,
    /// Recall of its evidence sessions in the top 5.
    pub session_r_at_5: f64,
    /// Where each evidence turn landed (null: not among the candidates at all).
    pub evidence: Vec<Option<HitTrace>>,
    /// Each evidence session's rank among the sessions (1 = first; null: none of its turns
    /// was among the candidates).
    pub evidence_session_ranks: Vec<Option<usize>>,
    /// How long its search took, in microseconds (the tail of `query_latency` by question).
    pub latency_us: f64,
    /// The top 10 as the retriever scored them, kept only when evidence is missing from it,
    /// to see what pushed it out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<HitTrace>,
}

/// One retrieved turn and why it ranked where it did.
#[derive(Debug, Serialize)]
pub struct HitTrace {
    /// The turn's id.
    pub turn_id: String,
    /// Its rank (1 = first).
    pub rank: usize,
    /// Whether it is evidence for the question.
    pub evidence: bool,
    /// Its fused score.
    pub score: f64,
    /// Its rank in the BM25 list.
    pub bm25_rank: Option<usize>,
    /// Its rank in the vector list.
    pub vector_rank: Option<usize>,
    /// Its episode's rank.
    pub episode_rank: Option<usize>,
    /// Whether it falls in the time window the question names.
    pub in_window: bool,
    /// The start of its text.
    pub text: String,
}

/// Vectors remembered on disk by text hash, so re-running the benchmark (or tuning fusion)
/// does not re-embed 30,000 turns. Stands in front of any embedder.
pub struct CachedEmbedder {
    inner: SharedEmbedder,
    /// Part of every key: vectors of texts cut at another length are different vectors.
    variant: String,
    path: PathBuf,
    cache: Mutex<HashMap<[u8; 32], Vec<f32>>>,
}

impl CachedEmbedder {
    /// The cache in `path` (created on the first new vector) in front of `inner`; `variant`
    /// names what else shapes a vector (the cut length).
    pub fn open(inner: SharedEmbedder, variant: String, path: PathBuf) -> Self {
        let dims = inner.dimensions();
        let mut cache = HashMap::new();
        if let Ok(bytes) = std::fs::read(&path) {
            for rec in bytes.chunks_exact(32 + dims * 4) {
                let key: [u8; 32] = rec[..32].try_into().expect("32 bytes");
                cache.insert(key, crate::domain::vector::from_bytes(&rec[32..]));
            }
        }
        CachedEmbedder {
            inner,
            variant,
            path,
            cache: Mutex::new(cache),
        }
    }

    fn key(&self, text: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.inner.identity().to_string().as_bytes());
        h.update([0]);
        h.update(self.variant.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
        h.finalize().into()
    }
}

#[async_trait]
impl Embedder for CachedEmbedder {
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn identity(&self) -> crate::domain::ModelIdentity {
        self.inner.identity()
    }
    fn known_share(&self, text: &str) -> f64 {
        self.inner.known_share(text)
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| self.key(t)).collect();
        let missing: Vec<usize> = {
            let cache = self.cache.lock().expect("cache lock");
            (0..texts.len())
                .filter(|&i| !cache.contains_key(&keys[i]))
                .collect()
        };
        if !missing.is_empty() {
            let batch: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
            let vectors = self.inner.embed(&batch).await?;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| EmbedError::Model(e.to_string()))?;
            let mut cache = self.cache.lock().expect("cache lock");
            for (&i, v) in missing.iter().zip(vectors) {
                let mut rec = keys[i].to_vec();
                rec.extend(crate::domain::vector::to_bytes(&v));
                file.write_all(&rec)
                    .map_err(|e| EmbedError::Model(e.to_string()))?;
                cache.insert(keys[i], v);
            }
        }
        let cache = self.cache.lock().expect("cache lock");
        Ok(keys.iter().map(|k| cache[k].clone()).collect())
    }
}

/// What `run` measures on.
pub struct RetrievalBenchOptions {
    /// The data file.
    pub data: PathBuf,
    /// A new, empty store.
    pub store: Arc<dyn Store>,
    /// Its backend's name, for the report.
    pub backend: String,
    /// The embedder questions are embedded with (never cached: its latency is measured);
    /// none: BM25 only.
    pub embedder: Option<SharedEmbedder>,
    /// The embedder messages are indexed with: the same, or one that keeps vectors between
    /// runs (`CachedEmbedder`).
    pub index_embedder: Option<SharedEmbedder>,
    /// The embedder's name, for the report.
    pub embedder_name: String,
    /// The fusion settings.
    pub settings: RetrievalConfig,
    /// Where episodes begin besides the time gap (`[episodes]`).
    pub topics: crate::retrieval::topics::TopicRules,
    /// Messages the indexer embeds per round (`EmbedConfig::index_batch`).
    pub index_batch: usize,
    /// Only the first N records.
    pub records: Option<usize>,
}

impl Record {
    /// A group conversation: its speakers are people's names, not "user" and "assistant".
    pub fn is_group(&self) -> bool {
        !self.speakers.is_empty()
            || self
                .sessions
                .iter()
                .flat_map(|s| &s.turns)
                .any(|t| t.speaker != "user" && t.speaker != "assistant")
    }

    /// Its sessions in time order, with their dates.
    fn sessions_in_order(&self) -> Result<Vec<(DateTime<Utc>, &Session)>, BenchError> {
        let mut sessions = Vec::new();
        for s in &self.sessions {
            sessions.push((parse_date(&s.date)?, s));
        }
        sessions.sort_by_key(|(at, _)| *at);
        Ok(sessions)
    }
}

/// Where a record's turns are said: the user's private chat with the bot, or for a group
/// conversation (`group`) the public channel of a group of its own.
fn message(record: &Record, group: bool, turn: &Turn, at: DateTime<Utc>) -> IncomingMessage {
    let conv = &record.conversation_id;
    let (space, kind, channel, privacy) = if group {
        (
            format!("group:{conv}"),
            SpaceKind::Group,
            "general".to_string(),
            Privacy::GuildPublic,
        )
    } else {
        (
            format!("dm:{conv}"),
            SpaceKind::Private,
            format!("dm:{conv}"),
            Privacy::Dm,
        )
    };
    let (author, name) = if group {
        (format!("{conv}:{}", turn.speaker), turn.speaker.clone())
    } else {
        (format!("user:{conv}"), "user".to_string())
    };
    IncomingMessage {
        platform: Platform::Console,
        space_external_id: space,
        space_kind: kind,
        space_title: String::new(),
        channel_external_id: channel,
        channel_privacy: privacy,
        author_external_id: author,
        author_display_name: name,
        author_username: None,
        author_is_bot: false,
        external_id: turn.turn_id.clone(),
        text: turn.text.clone(),
        sent_at: at,
        reply_to_external_id: None,
        replies_to_bot: false,
        mentions: Vec::new(),
        attachments: Vec::new(),
        author_is_moderator: false,
        private_answer: false,
        command: None,
    }
}

/// Which stored message is which turn (turn id, session id), and who asks the questions where.
#[derive(Default)]
struct IngestedRecord<'r> {
    turn_of: HashMap<MessageId, (&'r str, &'r str)>,
    scopes: Vec<Scope>,
    asker: Option<PersonId>,
    turns: usize,
}

/// Ingests every turn of `record`, sessions in time order, through the normal path.
async fn ingest_record<'r>(
    ingestor: &Ingestor,
    store: &dyn Store,
    record: &'r Record,
) -> Result<IngestedRecord<'r>, BenchError> {
    if record.is_group() {
        ingest_group(ingestor, store, record).await
    } else {
        ingest_assistant_chat(ingestor, record).await
    }
}

/// A group conversation: every speaker is a person writing in one public channel of a group,
/// and the questions are asked there by another member, who said nothing.
async fn ingest_group<'r>(
    ingestor: &Ingestor,
    store: &dyn Store,
    record: &'r Record,
) -> Result<IngestedRecord<'r>, BenchError> {
    let mut out = IngestedRecord::default();
    let conv = &record.conversation_id;
    let asker = store
        .resolve_person(Platform::Console, &format!("{conv}:asker"), "Member")
        .await?;
    out.asker = Some(asker);
    for (at, s) in record.sessions_in_order()? {
        for (i, turn) in s.turns.iter().enumerate() {
            out.turns += 1;
            let t = at + chrono::Duration::seconds(i as i64);
            let Some(ing) = ingestor.ingest(&message(record, true, turn, t)).await? else {
                continue;
            };
            out.turn_of.insert(
                ing.message.id,
                (turn.turn_id.as_str(), s.session_id.as_str()),
            );
            if out.scopes.is_empty() {
                out.scopes = ing.place.visible_scopes(asker);
            }
        }
    }
    Ok(out)
}

/// A chat between a user and the assistant: the user's turns as messages in one private chat,
/// the assistant's as the bot's replies to them.
async fn ingest_assistant_chat<'r>(
    ingestor: &Ingestor,
    record: &'r Record,
) -> Result<IngestedRecord<'r>, BenchError> {
    let mut out = IngestedRecord::default();
    let mut last_user: Option<(Place, StoredMessage)> = None;
    // Assistant turns that come before any user turn wait until the chat exists.
    let mut waiting: Vec<(&Turn, DateTime<Utc>, &str)> = Vec::new();
    for (at, s) in record.sessions_in_order()? {
        for (i, turn) in s.turns.iter().enumerate() {
            let t = at + chrono::Duration::seconds(i as i64);
            out.turns += 1;
            let ids = (turn.turn_id.as_str(), s.session_id.as_str());
            if turn.speaker == "user" {
                let Some(ing) = ingestor.ingest(&message(record, false, turn, t)).await? else {
                    continue;
                };
                out.turn_of.insert(ing.message.id, ids);
                if out.scopes.is_empty() {
                    out.scopes = ing.place.visible_scopes(ing.message.author);
                    out.asker = Some(ing.message.author);
                }
                for (wt, wat, sid) in waiting.drain(..) {
                    let id = reply(ingestor, &ing.place, &ing.message, &wt.text, wat).await?;
                    out.turn_of.insert(id, (wt.turn_id.as_str(), sid));
                }
                last_user = Some((ing.place, ing.message));
            } else if let Some((place, user_msg)) = &last_user {
                if turn.text.trim().is_empty() {
                    continue;
                }
                let id = reply(ingestor, place, user_msg, &turn.text, t).await?;
                out.turn_of.insert(id, ids);
            } else {
                waiting.push((turn, t, s.session_id.as_str()));
            }
        }
    }
    Ok(out)
}

/// An assistant turn, stored as the bot's reply to `to`.
async fn reply(
    ingestor: &Ingestor,
    place: &Place,
    to: &StoredMessage,
    text: &str,
    at: DateTime<Utc>,
) -> Result<MessageId, StoreError> {
    ingestor
        .ingest_reply(
            Platform::Console,
            place,
            crate::ingest::KeptReply {
                text,
                withheld: false,
            },
            to,
            at,
            false,
            None,
        )
        .await
}

/// Recall and nDCG summed over the questions, overall and per category, at one level.
#[derive(Default)]
struct Tally {
    all: Scores,
    by_category: BTreeMap<String, Scores>,
}

impl Tally {
    fn add(&mut self, category: &str, ranked: &[String], evidence: &[String]) {
        if evidence.is_empty() {
            return;
        }
        self.all.add(ranked, evidence);
        self.by_category
            .entry(category.to_string())
            .or_default()
            .add(ranked, evidence);
    }

    fn level(&self) -> Level {
        Level {
            overall: self.all.mean(),
            by_category: self
                .by_category
                .iter()
                .map(|(k, v)| (k.clone(), v.mean()))
                .collect(),
        }
    }
}

/// The turns and the sessions in the order the hits rank them (each session once).
fn ranked_ids(
    hits: &[Retrieved],
    turn_of: &HashMap<MessageId, (&str, &str)>,
) -> (Vec<String>, Vec<String>) {
    let mut turns = Vec::new();
    let mut sessions: Vec<String> = Vec::new();
    for (turn, session) in hits.iter().filter_map(|h| turn_of.get(&h.message.id)) {
        turns.push(turn.to_string());
        if !sessions.iter().any(|x| x == session) {
            sessions.push(session.to_string());
        }
    }
    (turns, sessions)
}

/// One question's scores, with the ranks of its evidence and, when a turn was missed, the top
/// ten hits.
fn question_result(
    q: &Question,
    hits: &[Retrieved],
    turn_of: &HashMap<MessageId, (&str, &str)>,
    turns: &[String],
    sessions: &[String],
    latency_us: f64,
) -> QuestionResult {
    let turn_r_at_10 = recall_at(turns, &q.evidence_turn_ids, 10);
    let trace = |rank: usize, h: &Retrieved| {
        let (turn, _) = turn_of.get(&h.message.id)?;
        Some(HitTrace {
            turn_id: turn.to_string(),
            rank,
            evidence: q.evidence_turn_ids.iter().any(|e| e == turn),
            score: h.score,
            bm25_rank: h.bm25_rank,
            vector_rank: h.vector_rank,
            episode_rank: h.episode_rank,
            in_window: h.in_window,
            text: h.message.text.chars().take(160).collect(),
        })
    };
    let top = if turn_r_at_10 < 1.0 {
        hits.iter()
            .take(10)
            .enumerate()
            .filter_map(|(i, h)| trace(i + 1, h))
            .collect()
    } else {
        Vec::new()
    };
    let evidence = q
        .evidence_turn_ids
        .iter()
        .map(|e| {
            hits.iter()
                .enumerate()
                .find_map(|(i, h)| trace(i + 1, h).filter(|t| &t.turn_id == e))
        })
        .collect();
    QuestionResult {
        question_id: q.question_id.clone(),
        category: q.category.clone(),
        turn_r_at_10,
        session_r_at_5: recall_at(sessions, &q.evidence_session_ids, 5),
        evidence,
        evidence_session_ranks: q
            .evidence_session_ids
            .iter()
            .map(|e| sessions.iter().position(|s| s == e).map(|p| p + 1))
            .collect(),
        top,
        latency_us: (latency_us * 10.0).round() / 10.0,
    }
}

/// Runs the benchmark; `progress` hears a line per record done.
pub async fn run(
    opts: RetrievalBenchOptions,
    mut progress: impl FnMut(&str),
) -> Result<RetrievalReport, BenchError> {
    let mut records = read_records(&opts.data)?;
    if let Some(n) = opts.records {
        records.truncate(n);
    }
    let store = opts.store.clone();
    let ingestor = Ingestor::new(store.clone(), "Engram", usize::MAX);
    let clock = Arc::new(crate::domain::ManualClock::new(
        DateTime::from_timestamp(0, 0).expect("epoch"),
    ));
    let indexer = Indexer::new(
        store.clone(),
        opts.index_embedder.clone(),
        clock.clone(),
        opts.settings.clone(),
        opts.topics.clone(),
        opts.index_batch,
    );
    let retriever = Retriever::new(store.clone(), opts.embedder.clone(), opts.settings.clone());
    let (mut turn_tally, mut session_tally) = (Tally::default(), Tally::default());
    let (mut latencies, mut ingest_s, mut index_s) = (Vec::new(), 0.0, 0.0);
    let (mut turns_total, mut questions, mut skipped) = (0, 0, 0);
    let mut maintained_at = 0;
    let mut per_question = Vec::new();
    let total = records.len();
    for (n, record) in records.iter().enumerate() {
        let started = Instant::now();
        let ingested = ingest_record(&ingestor, store.as_ref(), record).await?;
        turns_total += ingested.turns;
        ingest_s += started.elapsed().as_secs_f64();
        let started = Instant::now();
        indexer.index_all(|_| {}).await?;
        // Planner statistics as a running bot has them (the daily upkeep job, and PostgreSQL's
        // autovacuum soon after a table grew by a share of its size): without, the first
        // questions race the server's own ANALYZE and are timed on plans made without
        // statistics. Each time the stored turns doubled, as autovacuum's threshold scales.
        if turns_total >= 2 * maintained_at {
            store.maintain().await?;
            maintained_at = turns_total.max(1);
        }
        index_s += started.elapsed().as_secs_f64();

        for q in &record.questions {
            let asked = parse_date(&q.question_date)?;
            clock.set(asked);
            let started = Instant::now();
            indexer.close_episodes().await?;
            // As the bot's episode job does without a model: details, and their search keys.
            while crate::memory::extraction::episodes::finish_offline(store.as_ref()).await? > 0 {}
            index_s += started.elapsed().as_secs_f64();
            if q.evidence_turn_ids.is_empty() && q.evidence_session_ids.is_empty() {
                skipped += 1;
                continue;
            }
            questions += 1;
            let started = Instant::now();
            let hits = retriever
                .search(&q.question, &ingested.scopes, ingested.asker, asked, 200)
                .await?;
            let latency_us = started.elapsed().as_secs_f64() * 1e6;
            latencies.push(latency_us);
            let (turns, sessions) = ranked_ids(&hits, &ingested.turn_of);
            turn_tally.add(&q.category, &turns, &q.evidence_turn_ids);
            session_tally.add(&q.category, &sessions, &q.evidence_session_ids);
            per_question.push(question_result(
                q,
                &hits,
                &ingested.turn_of,
                &turns,
                &sessions,
                latency_us,
            ));
        }
        progress(&format!(
            "record {}/{total} ({})",
            n + 1,
            record.conversation_id
        ));
    }
    Ok(RetrievalReport {
        data: opts.data.display().to_string(),
        backend: opts.backend,
        embedder: opts.embedder_name,
        records: total,
        turns: turns_total,
        questions,
        skipped_without_evidence: skipped,
        turn: turn_tally.level(),
        session: session_tally.level(),
        query_latency: super::latency(latencies),
        ingest_seconds: (ingest_s * 10.0).round() / 10.0,
        index_seconds: (index_s * 10.0).round() / 10.0,
        per_question,
    })
}

/// The summary table printed after the JSON.
pub fn table(r: &RetrievalReport) -> String {
    let mut out = format!(
        "{} records, {} questions, embedder {}, backend {}\n\n| level | category | R@5 | R@10 | nDCG@10 |\n|---|---|---|---|---|\n",
        r.records, r.questions, r.embedder, r.backend
    );
    for (name, level) in [("turn", &r.turn), ("session", &r.session)] {
        for (cat, s) in &level.by_category {
            out.push_str(&format!(
                "| {name} | {cat} | {:.3} | {:.3} | {:.3} |\n",
                s.r_at_5, s.r_at_10, s.ndcg_at_10
            ));
        }
        let s = &level.overall;
        out.push_str(&format!(
            "| {name} | **overall** | {:.3} | {:.3} | {:.3} |\n",
            s.r_at_5, s.r_at_10, s.ndcg_at_10
        ));
    }
    out.push_str(&format!(
        "\nquery latency p50 {:.1} ms, p99 {:.1} ms; ingest {:.1} s, indexing (embeddings, episodes) {:.1} s\n",
        r.query_latency.p50_us / 1000.0,
        r.query_latency.p99_us / 1000.0,
        r.ingest_seconds,
        r.index_seconds
    ));
    out
}

/// One line per report (data file × embedder): the overall scores and the query latency.
pub fn side_by_side(reports: &[RetrievalReport]) -> String {
    let mut out = String::from(
        "| data | embedder | backend | turn R@5 | turn R@10 | turn nDCG@10 | session R@5 | session R@10 | p50 ms | p99 ms |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in reports {
        let name = Path::new(&r.data)
            .file_name()
            .map_or_else(|| r.data.clone(), |n| n.to_string_lossy().into_owned());
        let (t, s) = (&r.turn.overall, &r.session.overall);
        out.push_str(&format!(
            "| {name} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} |\n",
            r.embedder,
            r.backend,
            t.r_at_5,
            t.r_at_10,
            t.ndcg_at_10,
            s.r_at_5,
            s.r_at_10,
            r.query_latency.p50_us / 1000.0,
            r.query_latency.p99_us / 1000.0,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recall_and_ndcg() {
        let ranked = ids(&["a", "b", "c", "d"]);
        assert_eq!(recall_at(&ranked, &ids(&["a", "d"]), 2), 0.5);
        assert_eq!(recall_at(&ranked, &ids(&["a", "d"]), 10), 1.0);
        assert_eq!(ndcg_at(&ranked, &ids(&["a"]), 10), 1.0);
        let second = ndcg_at(&ranked, &ids(&["b"]), 10);
        assert!((second - 1.0 / 3f64.log2()).abs() < 1e-12);
        assert_eq!(ndcg_at(&ranked, &ids(&["z"]), 10), 0.0);
    }

    #[test]
    fn dates_in_the_data_format() {
        let t = parse_date("2023/05/20 (Sat) 02:21").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-05-20T02:21:00+00:00");
        assert!(parse_date("yesterday").is_err());
    }
}
