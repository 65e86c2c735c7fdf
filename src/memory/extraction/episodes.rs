//! Closing an episode in memory: its final structured summary (topic, summary, decisions,
//! todos, entities, artifacts, open questions) asked of the model at temperature 0.1 and
//! validated whole, kept with its words as the episode's search keys (fact-augmented keys),
//! and its fact candidates applied through the daily extraction's path (the confidence gate,
//! the episode's own privacy scope, a paused person skipped, one note per person and episode
//! that marks it applied), once across processes and crashes (a job claim per episode).
//! Without a model, or after two bad answers, the details are extractive and no fact is
//! learned.

use super::{Action, Extractor, Update};
use crate::domain::{Category, DailyNote, PersonId, StoredMessage, day_of, mention};
use crate::llm::LlmError;
use crate::llm::parse_json_answer;
use crate::llm::prompts::{element, escape, fill};
use crate::memory::entries::origin;
use crate::memory::offline::clip_chars;
use crate::memory::{MemoryError, MemoryManager, working};
use crate::store::{DetailsSaved, Episode, EpisodeEnd, ExtractionApplied, Finish, JobClaim, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tracing::{info, warn};

/// The job name of closing episodes (one run per episode).
pub const EPISODE_JOB: &str = "episode";
/// Most messages of an episode shown to the model at once when it closes (a part), and their
/// longest text. A longer episode is read in parts, one model call each, each part with what
/// the ones before it came to.
const EPISODE_MESSAGES: usize = 300;
const MESSAGE_CHARS: usize = 600;
/// Most parts an episode is read in: one longer than `PARTS` × `EPISODE_MESSAGES` messages
/// is summarized from its first ones (its messages stay searchable whole).
const PARTS: usize = 10;
/// Longest summary of an episode's details (characters), and of each list item; most items.
const SUMMARY_CHARS: usize = 600;
const ITEM_CHARS: usize = 300;
const ITEMS: usize = 20;

/// The final details of a closed episode, kept as JSON with it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EpisodeDetails {
    /// What it was about, in a few words.
    pub topic: String,
    /// What happened.
    pub summary: String,
    /// What was decided.
    pub decisions: Vec<String>,
    /// What someone said they would do.
    pub todos: Vec<String>,
    /// People, places, projects and products named.
    pub entities: Vec<String>,
    /// Files, links, images and documents it mentions.
    pub artifacts: Vec<String>,
    /// Questions left without an answer.
    pub open_questions: Vec<String>,
    /// The facts learned from it, about whom.
    pub facts: Vec<LearnedFact>,
    /// "llm" or "offline".
    pub method: String,
}

/// A fact learned when an episode closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedFact {
    /// About whom (the author of the messages it comes from).
    pub person: PersonId,
    /// The MEMORY.md section.
    pub category: String,
    /// The entry's key.
    pub key: String,
    /// What was learned.
    pub value: String,
    /// How sure the model was.
    pub confidence: f64,
}

impl EpisodeDetails {
    /// What the details say, as the text of the episode's search keys (fact-augmented keys):
    /// each item once, a fact with its key ("job title: nurse at St. Mary's"; the section
    /// names are the same few words in every episode, so they are left out).
    pub fn keys(&self) -> String {
        let facts = self
            .facts
            .iter()
            .map(|f| format!("{}: {}", f.key.replace('_', " "), f.value));
        let mut seen = std::collections::HashSet::new();
        [self.topic.clone(), self.summary.clone()]
            .into_iter()
            .chain(self.decisions.iter().cloned())
            .chain(self.todos.iter().cloned())
            .chain(self.entities.iter().cloned())
            .chain(self.artifacts.iter().cloned())
            .chain(self.open_questions.iter().cloned())
            .chain(facts)
            .map(|item| item.trim().to_string())
            .filter(|item| !item.is_empty() && seen.insert(item.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The details of an episode read in `parts` (in order, each made knowing what the ones
    /// before came to): the last part's topic, summary and open questions, which carry the
    /// earlier ones (an earlier part's topic and summary when the last has none, or only
    /// extractive ones after the model's, whose open questions are then added to the model's);
    /// each part's other list items once, the newest `ITEMS` of each list; and every fact, a
    /// later one of the same person and key in place of an earlier. "llm" when the model
    /// wrote any part.
    pub fn merged(parts: Vec<EpisodeDetails>) -> EpisodeDetails {
        let mut out = EpisodeDetails::default();
        let mut llm = false;
        for part in parts {
            let rewords = part.method == "llm" || !llm;
            llm |= part.method == "llm";
            if rewords && !part.topic.trim().is_empty() {
                out.topic = part.topic;
            }
            if rewords && !part.summary.trim().is_empty() {
                out.summary = part.summary;
            }
            if rewords {
                out.open_questions.clear();
            }
            for (list, items) in [
                (&mut out.decisions, part.decisions),
                (&mut out.todos, part.todos),
                (&mut out.entities, part.entities),
                (&mut out.artifacts, part.artifacts),
                (&mut out.open_questions, part.open_questions),
            ] {
                for item in items {
                    list.retain(|had| !had.eq_ignore_ascii_case(&item));
                    list.push(item);
                }
                let over = list.len().saturating_sub(ITEMS);
                list.drain(..over);
            }
            for fact in part.facts {
                out.facts
                    .retain(|had| had.person != fact.person || had.key != fact.key);
                out.facts.push(fact);
            }
        }
        out.method = if llm { "llm" } else { "offline" }.into();
        out
    }

    /// Keeps only what `keep` accepts: an item (topic, list item, fact) it refuses goes, and
    /// so does each sentence of the summary it refuses. Whether anything went.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) -> bool {
        let mut changed = false;
        if !self.topic.is_empty() && !keep(&self.topic) {
            self.topic.clear();
            changed = true;
        }
        let sentences = sentences(&self.summary);
        let kept: Vec<&str> = sentences.iter().copied().filter(|s| keep(s)).collect();
        if kept.len() < sentences.len() {
            self.summary = kept.concat().trim().to_string();
            changed = true;
        }
        for list in [
            &mut self.decisions,
            &mut self.todos,
            &mut self.entities,
            &mut self.artifacts,
            &mut self.open_questions,
        ] {
            let before = list.len();
            list.retain(|item| keep(item));
            changed |= list.len() < before;
        }
        let before = self.facts.len();
        self.facts
            .retain(|f| keep(&f.value) && keep(&format!("{}: {}", f.key, f.value)));
        changed | (self.facts.len() < before)
    }
}

/// The sentences of `text`: each ends at a line break, or at ".", "!" or "?" followed by a
/// space or the end ("90.5k" and "acme.com" stay whole).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let ends =
            c == '\n' || (matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace));
        if ends {
            let end = i + c.len_utf8();
            out.push(&text[start..end]);
            start = end;
        }
    }
    out.push(&text[start..]);
    out.retain(|s| !s.trim().is_empty());
    out
}

/// Writes the search keys of episodes finished before keys were kept; how many.
async fn backfill_keys(store: &dyn Store) -> Result<usize, MemoryError> {
    let mut done = 0;
    for (episode, json) in store.episodes_without_keys(100).await? {
        let keys = match serde_json::from_str::<EpisodeDetails>(&json) {
            Ok(details) => details.keys(),
            Err(e) => {
                // Kept with no keys, so it is not read again: its messages still find it.
                warn!(episode, error = %e, "episode details unreadable: no search keys");
                String::new()
            }
        };
        if store
            .replace_episode_details(episode, &json, &json, &keys)
            .await?
        {
            done += 1;
        }
    }
    Ok(done)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFact {
    person: String,
    category: String,
    key: String,
    value: String,
    confidence: f64,
    messages: Vec<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDetails {
    topic: String,
    summary: String,
    #[serde(default)]
    decisions: Vec<String>,
    #[serde(default)]
    todos: Vec<String>,
    #[serde(default)]
    entities: Vec<String>,
    #[serde(default)]
    artifacts: Vec<String>,
    #[serde(default)]
    open_questions: Vec<String>,
    #[serde(default)]
    facts: Vec<RawFact>,
}

/// Why an episode summary was refused (as a whole).
#[derive(Debug, thiserror::Error)]
pub enum DetailsError {
    /// No answer, or not the JSON asked for.
    #[error(transparent)]
    Model(#[from] LlmError),
    /// The summary is empty.
    #[error("empty summary")]
    EmptySummary,
    /// A list has too many items or an item too long.
    #[error("{0}: at most {ITEMS} items of {ITEM_CHARS} characters")]
    List(&'static str),
    /// Fact `0` is not valid: why.
    #[error("fact {0}: {1}")]
    Fact(usize, &'static str),
}

fn list(name: &'static str, items: Vec<String>) -> Result<Vec<String>, DetailsError> {
    let items: Vec<String> = items
        .into_iter()
        .map(|i| i.trim().to_string())
        .filter(|i| !i.is_empty())
        .collect();
    if items.len() > ITEMS || items.iter().any(|i| i.chars().count() > ITEM_CHARS) {
        return Err(DetailsError::List(name));
    }
    Ok(items)
}

/// The model's answer about an episode's `messages` (numbered from 1 in the prompt), checked
/// as a whole: every list within its limits, and each fact about the author of every message
/// it cites, never the bot (a fact about someone from another person's words is refused, and
/// with it the answer).
pub fn parse_details(
    content: &str,
    messages: &[StoredMessage],
) -> Result<EpisodeDetails, DetailsError> {
    let raw: RawDetails = parse_json_answer(content)?;
    let summary = raw.summary.trim().to_string();
    if summary.is_empty() {
        return Err(DetailsError::EmptySummary);
    }
    let mut facts = Vec::new();
    for (i, f) in raw.facts.into_iter().enumerate() {
        let bad = |why| DetailsError::Fact(i, why);
        let category = Category::parse(&f.category).ok_or(bad("unknown category"))?;
        if !(0.0..=1.0).contains(&f.confidence) {
            return Err(bad("confidence outside 0..1"));
        }
        let key = f.key.trim().to_lowercase().replace(' ', "_");
        if key.is_empty() || key.chars().count() > 100 {
            return Err(bad("key must be 1 to 100 characters"));
        }
        let value = f.value.trim().to_string();
        if value.is_empty() || value.chars().count() > 500 {
            return Err(bad("value must be 1 to 500 characters"));
        }
        let cited: Vec<&StoredMessage> = f
            .messages
            .iter()
            .map(|n| n.checked_sub(1).and_then(|i| messages.get(i)))
            .collect::<Option<_>>()
            .ok_or(bad("cites a message that is not there"))?;
        let Some(first) = cited.first() else {
            return Err(bad("cites no message"));
        };
        if cited
            .iter()
            .any(|m| m.is_bot || m.author != first.author || m.author_name != f.person.trim())
        {
            return Err(bad("not about the author of every message it cites"));
        }
        if !supported(&value, &cited) {
            return Err(bad("not said in the messages it cites"));
        }
        facts.push(LearnedFact {
            person: first.author,
            category: category.as_str().to_string(),
            key,
            value,
            confidence: f.confidence,
        });
    }
    Ok(EpisodeDetails {
        topic: clip_chars(raw.topic.trim(), ITEM_CHARS),
        summary: clip_chars(&summary, SUMMARY_CHARS * 2),
        decisions: list("decisions", raw.decisions)?,
        todos: list("todos", raw.todos)?,
        entities: list("entities", raw.entities)?,
        artifacts: list("artifacts", raw.artifacts)?,
        open_questions: list("open_questions", raw.open_questions)?,
        facts,
        method: "llm".into(),
    })
}

/// Whether the messages a fact cites say it: at least half of its content words (stems) are
/// theirs, the fact and the messages read alike in one language (the fact's or a cited
/// message's). ("Ana lives at X", citing Ana's "ok", is not.)
fn supported(value: &str, cited: &[&StoredMessage]) -> bool {
    let mut languages = vec![crate::domain::language::detect(value)];
    languages.extend(cited.iter().map(|m| m.language));
    languages.dedup();
    languages.into_iter().any(|language| {
        let words = crate::store::query_terms_in(value, 64, language);
        let said: std::collections::HashSet<String> = cited
            .iter()
            .flat_map(|m| crate::store::document_terms_in(&m.text, language).terms)
            .map(|(t, _)| t)
            .collect();
        !words.is_empty() && 2 * words.iter().filter(|w| said.contains(*w)).count() >= words.len()
    })
}

/// The sources of what closing `episode` learned: its entries' and its daily notes'.
pub fn learned_sources(episode: i64) -> (String, String) {
    (
        super::run_source(&format!("{EPISODE_JOB}:{episode}")),
        format!("job:{EPISODE_JOB}:{episode}"),
    )
}

/// Takes back what closing `episode` learned about `person` (their entries from it, wherever
/// they are now, and their note block of its day): a message of theirs in it was forgotten,
/// or the details could not be kept.
pub async fn unlearn(
    store: &dyn Store,
    person: PersonId,
    episode: i64,
    day: chrono::NaiveDate,
) -> Result<(), MemoryError> {
    let (entries, note) = learned_sources(episode);
    store.take_back_entries(person, &entries).await?;
    store.rewrite_daily_note(person, day, &note, None).await?;
    Ok(())
}

/// Extractive details (no model): the opening as topic and summary, unanswered questions and
/// promises from the working memory's rules; no facts.
pub fn offline_details(messages: &[StoredMessage]) -> EpisodeDetails {
    let memory = working::extractive(messages, SUMMARY_CHARS, ITEMS);
    let (open_questions, todos): (Vec<String>, Vec<String>) = memory
        .open_loops
        .into_iter()
        .partition(|l| l.ends_with('?'));
    EpisodeDetails {
        topic: messages
            .iter()
            .find(|m| !m.is_bot)
            .map(|m| clip_chars(m.text.trim(), 80))
            .unwrap_or_default(),
        summary: memory.summary,
        todos,
        open_questions,
        method: "offline".into(),
        ..EpisodeDetails::default()
    }
}

/// The parts `messages` are shown to the model in: as few as hold at most `EPISODE_MESSAGES`
/// each, of equal size (301 messages are two parts of 151 and 150, never 300 and a last part
/// too short to summarize); one, empty, for none.
fn in_parts(messages: &[StoredMessage]) -> Vec<&[StoredMessage]> {
    if messages.is_empty() {
        return vec![messages];
    }
    let parts = messages.len().div_ceil(EPISODE_MESSAGES);
    messages.chunks(messages.len().div_ceil(parts)).collect()
}

/// A part of an episode's close that the model answered, kept (`Store::save_closing_parts`)
/// so that a close cut off by a crash or a model outage goes on from the next part.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct DonePart {
    /// Of the part's messages and of the parts before it (`fingerprints`).
    fingerprint: String,
    /// What the model made of it, checked.
    details: EpisodeDetails,
    /// The memory entries its prompt showed, per person.
    shown: Vec<(PersonId, Vec<i64>)>,
    /// The forget count of each of the episode's authors when the close that made it began
    /// (`Extractor::forget_epochs`): after a forget of theirs it is made again. Parts kept
    /// before this was recorded have none, and are made again too.
    #[serde(default)]
    epochs: Vec<(PersonId, i64)>,
}

/// Each part's fingerprint: a SHA-256 of its messages' ids and texts and of the fingerprint
/// of the part before (a part is made knowing what those came to), so a part done before is
/// used again only while it and every part before it are read as they were.
fn fingerprints(parts: &[&[StoredMessage]]) -> Vec<String> {
    let mut before = String::new();
    parts
        .iter()
        .map(|part| {
            let ids: Vec<String> = part.iter().map(|m| m.id.0.to_string()).collect();
            let mut fields: Vec<&str> = vec![&before];
            for (m, id) in part.iter().zip(&ids) {
                fields.push(id);
                fields.push(&m.text);
            }
            let print = hex::encode(crate::domain::hash_parts(&fields));
            before = print.clone();
            print
        })
        .collect()
}

/// What closing `episode` reads: its messages (the first `PARTS` × `EPISODE_MESSAGES`) but
/// those of people whose memory is paused.
async fn closing_messages(
    store: &dyn Store,
    episode: &Episode,
) -> Result<Vec<StoredMessage>, MemoryError> {
    let limit = PARTS * EPISODE_MESSAGES;
    let chatter = store
        .episode_messages(episode.id, false, EpisodeEnd::Oldest, limit)
        .await?;
    if chatter.len() == limit {
        info!(
            episode = episode.id,
            read = limit,
            "a long episode: its first messages are summarized"
        );
    }
    Ok(working::without_paused(store, chatter).await?)
}

/// The episode prompt: the people's current entries, what the parts before came to (a long
/// episode's: their summary and the questions still open), then the messages numbered from 1.
fn prompt_for(
    messages: &[StoredMessage],
    earlier: Option<&EpisodeDetails>,
    entries: &BTreeMap<PersonId, Vec<crate::domain::Entry>>,
    names: &std::collections::HashMap<String, String>,
) -> String {
    let mut out = String::new();
    let mut shown = std::collections::HashSet::new();
    for m in messages.iter().filter(|m| !m.is_bot) {
        let Some(list) = entries.get(&m.author).filter(|_| shown.insert(m.author)) else {
            continue;
        };
        let items: Vec<String> = list
            .iter()
            .map(|e| {
                element(
                    "entry",
                    &[("category", e.category.as_str()), ("key", &e.key)],
                    &e.value,
                )
            })
            .collect();
        out.push_str(&format!(
            "<entries person=\"{}\">\n{}\n</entries>\n",
            escape(&m.author_name),
            items.join("\n")
        ));
    }
    if let Some(earlier) = earlier {
        out.push_str(&element("earlier", &[], &earlier.summary));
        out.push('\n');
        if !earlier.open_questions.is_empty() {
            // The newest half of a list's room: the part's own questions need the rest.
            let from = earlier.open_questions.len().saturating_sub(ITEMS / 2);
            let open = earlier.open_questions[from..].join("\n");
            out.push_str(&element("earlier_open_questions", &[], &open));
            out.push('\n');
        }
    }
    out.push_str("<messages>\n");
    for (i, m) in messages.iter().enumerate() {
        let n = (i + 1).to_string();
        let time = m.sent_at.format("%Y-%m-%d %H:%M").to_string();
        let mut attrs = vec![
            ("n", n.as_str()),
            ("author", m.author_name.as_str()),
            ("time", time.as_str()),
        ];
        if m.is_bot {
            attrs.push(("bot", "true"));
        }
        out.push_str(&element(
            "message",
            &attrs,
            &clip_chars(&mention::display(&m.text, names), MESSAGE_CHARS),
        ));
        out.push('\n');
    }
    out.push_str("</messages>\n");
    out
}

impl Extractor {
    /// Finishes every closed episode without details: its final summary and facts, each
    /// episode once across processes; how many were finished here.
    pub async fn finish_episodes(&self) -> Result<usize, MemoryError> {
        backfill_keys(self.store.as_ref()).await?;
        let mut done = 0;
        for episode in self.store.episodes_to_finish(50).await? {
            if self.finish_episode(&episode).await? {
                done += 1;
            }
        }
        Ok(done)
    }

    /// One episode: claimed, summarized (the model, or extractive after two bad answers),
    /// its facts applied per person, its details kept, the claim finished. A model that
    /// cannot be reached leaves it for a later try (the claim backs off).
    async fn finish_episode(&self, episode: &Episode) -> Result<bool, MemoryError> {
        // Its size and its last stored message in the key: an episode a forget or an edit
        // reopened closes again as another run (an edit stored anew may leave its size as it
        // was).
        let last = self.store.episode_last_stored(episode.id).await?;
        let key = format!(
            "{}:{}:{}",
            episode.id,
            episode.messages,
            last.map_or(0, |m| m.0)
        );
        let now = self.clock.now();
        match self
            .store
            .claim_job_or_take_over(EPISODE_JOB, &key, &self.holder, now, self.lease)
            .await?
        {
            JobClaim::Acquired { .. } => {}
            _ => return Ok(false),
        }
        let messages = closing_messages(self.store.as_ref(), episode).await?;
        // Before their entries and the parts kept are read (a forget that deletes one of
        // the messages read just now is seen when the details are saved): a forget of an
        // author's from here on keeps nothing the close learns about them, and its details
        // extractive.
        let epochs = self.forget_epochs(&messages).await?;
        // Part by part, each knowing what the ones before came to; a part refused (asked
        // twice) makes the whole extractive, without facts. The parts a close cut off had
        // done are not asked again.
        let pieces = in_parts(&messages);
        let prints = fingerprints(&pieces);
        let mut parts = self.parts_done(episode, &prints, &epochs).await?;
        let mut shown: BTreeMap<PersonId, Vec<i64>> = BTreeMap::new();
        for (person, ids) in parts.iter().flat_map(|p| p.shown.iter()) {
            shown.entry(*person).or_default().extend(ids);
        }
        let mut refused = None;
        for (n, part) in pieces.iter().enumerate().skip(parts.len()) {
            let earlier: Option<&EpisodeDetails> = parts.last().map(|p| &p.details);
            let (prompt, seen) = self.prompt(episode, part, earlier).await?;
            for (person, ids) in &seen {
                shown.entry(*person).or_default().extend(ids);
            }
            match self.ask_details(episode, part, &prompt).await {
                Ok(details) => {
                    // What a model call came to is kept for a retry (an extractive part is
                    // cheap to make again), unless nothing comes after it.
                    let asked = details.method == "llm";
                    parts.push(DonePart {
                        fingerprint: prints[n].clone(),
                        details,
                        shown: seen.into_iter().collect(),
                        epochs: epochs.clone(),
                    });
                    if parts.len() < pieces.len() {
                        // Each part may take the model a while: the claim lasts a lease from
                        // the last one (taken over meanwhile, the new holder goes on, and
                        // this one neither asks nor keeps anything more).
                        let renewed = self
                            .store
                            .renew_job(
                                EPISODE_JOB,
                                &key,
                                &self.holder,
                                self.clock.now() + self.lease,
                            )
                            .await?;
                        if !renewed {
                            info!(episode = episode.id, "episode claim lost between parts");
                            return Ok(false);
                        }
                        if asked {
                            self.keep_parts(episode.id, &messages, &pieces, &parts)
                                .await;
                        }
                    }
                }
                Err(DetailsError::Model(e)) if !matches!(e, LlmError::BadResponse(_)) => {
                    warn!(episode = episode.id, error = %e, "episode summary waits for the model");
                    self.finish_claim(&key, Finish::Failed { retry_at: now }, "model unavailable")
                        .await?;
                    return Ok(false);
                }
                Err(why) => {
                    refused = Some(why);
                    break;
                }
            }
        }
        let details = match refused {
            None => EpisodeDetails::merged(parts.into_iter().map(|p| p.details).collect()),
            Some(why) => {
                warn!(episode = episode.id, error = %why, "episode summary refused: extractive details, no facts");
                offline_details(&messages)
            }
        };
        let learned = self.learn(episode, &details, &epochs).await?;
        let json = serde_json::to_string(&details).unwrap_or_default();
        let saved = self
            .store
            .save_episode_details(episode.id, &messages, &json, &details.keys())
            .await?;
        let kept = saved == DetailsSaved::Kept;
        if kept
            && (self.shown_entry_gone(episode, &shown).await?
                || self.forget_epochs(&messages).await? != epochs)
        {
            // A forget of an author's came while the model wrote (an entry it saw, a fact,
            // a note: what the details may say), and may have looked for it in details
            // before these were kept: extractive ones (the messages' words only) take their
            // place.
            let plain = offline_details(&messages);
            let plain_json = serde_json::to_string(&plain).unwrap_or_default();
            self.store
                .replace_episode_details(episode.id, &json, &plain_json, &plain.keys())
                .await?;
            info!(
                episode = episode.id,
                "something of an author's was forgotten meanwhile: extractive details"
            );
        }
        if saved == DetailsSaved::Changed {
            // A forget came in between: what was learned from it goes too. (Details another
            // run kept first were made from the same messages: what both learned stays.)
            for person in details
                .facts
                .iter()
                .map(|f| f.person)
                .collect::<std::collections::BTreeSet<_>>()
            {
                unlearn(
                    self.store.as_ref(),
                    person,
                    episode.id,
                    day_of(episode.ended_at),
                )
                .await?;
            }
        }
        // The claim's record says what happened, never what was said.
        let status = format!(
            "{} facts, {} details, kept: {kept}",
            details.facts.len(),
            details.method
        );
        let finish = if saved != DetailsSaved::Changed {
            Finish::Done
        } else {
            Finish::Failed {
                retry_at: self.clock.now(),
            }
        };
        self.finish_claim(&key, finish, &status).await?;
        info!(episode = episode.id, kept, learned, method = %details.method, "episode closed in memory");
        Ok(kept)
    }

    /// The parts of closing `episode` done before (by a close that was cut off) that are
    /// still good: the first ones whose fingerprints are `prints`' first and whose prompts'
    /// entries are all still there.
    async fn parts_done(
        &self,
        episode: &Episode,
        prints: &[String],
        epochs: &[(PersonId, i64)],
    ) -> Result<Vec<DonePart>, MemoryError> {
        let Some(json) = self.store.closing_parts(episode.id).await? else {
            return Ok(Vec::new());
        };
        let kept: Vec<DonePart> = match serde_json::from_str(&json) {
            Ok(kept) => kept,
            Err(e) => {
                warn!(episode = episode.id, error = %e, "the parts of a cut-off episode close are unreadable: asked again");
                return Ok(Vec::new());
            }
        };
        let kept_parts = kept.len();
        let mut done: Vec<DonePart> = Vec::new();
        for (part, print) in kept.into_iter().zip(prints) {
            // Made from other messages, before a forget of an author's, or with an entry in
            // its prompt that is gone since.
            let shown: BTreeMap<PersonId, Vec<i64>> = part.shown.iter().cloned().collect();
            if &part.fingerprint != print
                || part.epochs != epochs
                || self.shown_entry_gone(episode, &shown).await?
            {
                break;
            }
            done.push(part);
        }
        if done.len() < kept_parts {
            // What cannot be used goes now (it may say what a forget took), not only when
            // the parts are kept again.
            self.store
                .drop_stale_closing_parts(episode.id, &json)
                .await?;
        }
        if !done.is_empty() {
            info!(
                episode = episode.id,
                done = done.len(),
                parts = prints.len(),
                "an episode close goes on from where it was cut off"
            );
        }
        Ok(done)
    }

    /// Keeps the parts `done` of closing `episode` (of `pieces`, the parts of `messages`),
    /// unless a forget came in between (then the next part is asked all the same, and the
    /// details are checked when they are kept). Keeping them only spares a retry model
    /// calls: a store that fails here is logged, and the close goes on.
    async fn keep_parts(
        &self,
        episode: i64,
        messages: &[StoredMessage],
        pieces: &[&[StoredMessage]],
        done: &[DonePart],
    ) {
        let read: usize = pieces[..done.len()].iter().map(|p| p.len()).sum();
        let shown: Vec<i64> = done
            .iter()
            .flat_map(|p| p.shown.iter().flat_map(|(_, ids)| ids.iter().copied()))
            .collect();
        // Plain strings and numbers: serializing cannot fail.
        let json = serde_json::to_string(done).expect("episode parts serialize");
        match self
            .store
            .save_closing_parts(episode, &messages[..read], &shown, &json)
            .await
        {
            Ok(true) => {}
            Ok(false) => info!(
                episode,
                "episode changed while closing: its parts are not kept"
            ),
            Err(e) => warn!(episode, error = %e, "the parts of an episode close were not kept"),
        }
    }

    async fn finish_claim(
        &self,
        key: &str,
        finish: Finish,
        detail: &str,
    ) -> Result<(), MemoryError> {
        self.store
            .finish_job(
                EPISODE_JOB,
                key,
                &self.holder,
                self.clock.now(),
                finish,
                detail,
            )
            .await?;
        Ok(())
    }

    /// The prompt for a part of the episode (its people's entries in its scope, what the
    /// parts before came to, then its messages), and the ids of the entries it shows, per
    /// person.
    async fn prompt(
        &self,
        episode: &Episode,
        messages: &[StoredMessage],
        earlier: Option<&EpisodeDetails>,
    ) -> Result<(String, BTreeMap<PersonId, Vec<i64>>), MemoryError> {
        let mut entries: BTreeMap<PersonId, Vec<crate::domain::Entry>> = BTreeMap::new();
        for m in messages.iter().filter(|m| !m.is_bot) {
            if let std::collections::btree_map::Entry::Vacant(slot) = entries.entry(m.author) {
                let scopes = std::slice::from_ref(&episode.scope);
                slot.insert(self.store.entries(m.author, Some(scopes)).await?);
            }
        }
        let names = crate::memory::context::mention_names(
            self.store.as_ref(),
            episode.space,
            messages.iter().map(|m| m.text.as_str()),
        )
        .await?;
        let shown = entries
            .iter()
            .map(|(person, es)| (*person, es.iter().map(|e| e.id).collect()))
            .collect();
        Ok((prompt_for(messages, earlier, &entries, &names), shown))
    }

    /// Whether an entry of `shown` (per person, in `episode`'s scope) is gone.
    async fn shown_entry_gone(
        &self,
        episode: &Episode,
        shown: &BTreeMap<PersonId, Vec<i64>>,
    ) -> Result<bool, MemoryError> {
        let scopes = std::slice::from_ref(&episode.scope);
        for (person, ids) in shown {
            let now: std::collections::BTreeSet<i64> = self
                .store
                .entries(*person, Some(scopes))
                .await?
                .into_iter()
                .map(|e| e.id)
                .collect();
            if ids.iter().any(|id| !now.contains(id)) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The model's details, validated; a bad answer is asked for once more.
    async fn ask_details(
        &self,
        episode: &Episode,
        messages: &[StoredMessage],
        prompt: &str,
    ) -> Result<EpisodeDetails, DetailsError> {
        let said = messages.iter().filter(|m| !m.is_bot).count();
        if said < self.settings.episode_min_messages.max(1) {
            return Ok(offline_details(messages));
        }
        let system = fill(
            &self.prompts.episode_summary,
            &[("max_chars", &SUMMARY_CHARS.to_string())],
        );
        let mut attempt = 0;
        loop {
            let (content, _) = self
                .ask_task("episode_summary", 0.1, &system, prompt)
                .await?;
            match parse_details(&content, messages) {
                Ok(d) => return Ok(d),
                Err(why) if attempt == 0 => {
                    warn!(episode = episode.id, error = %why, "episode summary rejected");
                    attempt += 1;
                }
                Err(why) => return Err(why),
            }
        }
    }

    /// The forget count of each of `messages`' authors (the bot aside), by person.
    async fn forget_epochs(
        &self,
        messages: &[StoredMessage],
    ) -> Result<Vec<(PersonId, i64)>, MemoryError> {
        let authors: std::collections::BTreeSet<PersonId> = messages
            .iter()
            .filter(|m| !m.is_bot)
            .map(|m| m.author)
            .collect();
        let mut epochs = Vec::with_capacity(authors.len());
        for person in authors {
            epochs.push((person, self.store.forget_epoch(person).await?));
        }
        Ok(epochs)
    }

    /// Applies the facts of `details` per person through the extraction's path; how many
    /// entries were written or updated. A person whose memory is paused learns nothing, nor
    /// does one who forgot something since the close began (`epochs`, of every author: a
    /// fact is only ever about the author of the messages it cites, `parse_details`).
    async fn learn(
        &self,
        episode: &Episode,
        details: &EpisodeDetails,
        epochs: &[(PersonId, i64)],
    ) -> Result<usize, MemoryError> {
        let mut by_person: BTreeMap<PersonId, Vec<Update>> = BTreeMap::new();
        for f in &details.facts {
            let Some(category) = Category::parse(&f.category) else {
                continue;
            };
            by_person.entry(f.person).or_default().push(Update {
                category,
                key: f.key.clone(),
                value: f.value.clone(),
                action: Action::Write,
                confidence: f.confidence,
            });
        }
        let now = self.clock.now();
        let run_key = format!("{EPISODE_JOB}:{}", episode.id);
        let mut changed = 0;
        for (person, updates) in by_person {
            if self.store.memory_paused(person).await? {
                info!(%person, episode = episode.id, "memory paused: nothing learned");
                continue;
            }
            let (writes, _, weak) = self.plan(
                person,
                &episode.scope,
                &updates,
                &origin(&episode.scope),
                &run_key,
                now,
            );
            let mut text = format!("## Episode: {}\n", details.topic);
            for u in &weak {
                text.push_str(&format!("- {} (confidence {:.2})\n", u.value, u.confidence));
            }
            let note = DailyNote {
                day: day_of(episode.ended_at),
                scope: episode.scope.clone(),
                text,
                source: learned_sources(episode.id).1,
                added_at: now,
            };
            // The note marks it applied: after a crash, a person done before is not again.
            // What the close read is checked when its details are kept (`still_as_read`),
            // and what it learned is taken back then when something changed.
            let Some(&(_, epoch)) = epochs.iter().find(|(p, _)| *p == person) else {
                continue;
            };
            match self
                .store
                .apply_extraction(person, &writes, &[], &note, Some(epoch))
                .await?
            {
                ExtractionApplied::Applied(counts) => {
                    let n = counts.added + counts.updated;
                    changed += n;
                    self.audit_learned(EPISODE_JOB, &episode.scope, person, n)
                        .await;
                }
                ExtractionApplied::Forgotten => {
                    info!(%person, episode = episode.id, "something of theirs was forgotten while the episode closed: nothing learned");
                }
                ExtractionApplied::AlreadyApplied => {}
            }
        }
        Ok(changed)
    }
}

impl MemoryManager {
    /// Without a model: `finish_offline` on this memory's store.
    pub async fn finish_episodes_offline(&self) -> Result<usize, MemoryError> {
        finish_offline(self.store.as_ref()).await
    }
}

/// Without a model: extractive details, and their search keys, for every closed episode
/// without them (no facts are learned); how many were written.
pub async fn finish_offline(store: &dyn Store) -> Result<usize, MemoryError> {
    backfill_keys(store).await?;
    let mut done = 0;
    for episode in store.episodes_to_finish(50).await? {
        let messages = closing_messages(store, &episode).await?;
        let details = offline_details(&messages);
        let json = serde_json::to_string(&details).unwrap_or_default();
        if store
            .save_episode_details(episode.id, &messages, &json, &details.keys())
            .await?
            == DetailsSaved::Kept
        {
            done += 1;
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{MessageId, Scope, SpaceId};

    fn msg(id: i64, author: i64, name: &str, is_bot: bool) -> StoredMessage {
        StoredMessage {
            id: MessageId(id),
            space: SpaceId(1),
            channel: "c".into(),
            scope: Scope::Space(SpaceId(1)),
            author: PersonId(author),
            author_name: name.into(),
            is_bot,
            text: "I like tea".into(),
            sent_at: chrono::DateTime::from_timestamp(1_700_000_000 + id, 0).unwrap(),
            episode: None,
            attachment_of: None,
            language: None,
        }
    }

    fn answer(fact: &str) -> String {
        format!(r#"{{"topic": "tea", "summary": "They talked about tea.", "facts": [{fact}]}}"#)
    }

    #[test]
    fn keys_say_each_item_once_with_facts_filed() {
        let details = EpisodeDetails {
            topic: "the offsite".into(),
            summary: "They chose Lisbon.".into(),
            decisions: vec!["Lisbon".into(), " the offsite ".into()],
            entities: vec!["Lisbon".into(), String::new()],
            facts: vec![LearnedFact {
                person: PersonId(1),
                category: "work".into(),
                key: "team_role".into(),
                value: "organizes offsites".into(),
                confidence: 0.9,
            }],
            ..EpisodeDetails::default()
        };
        assert_eq!(
            details.keys(),
            "the offsite\nThey chose Lisbon.\nLisbon\nteam role: organizes offsites"
        );
        assert_eq!(EpisodeDetails::default().keys(), "");
    }

    #[test]
    fn retain_takes_out_what_is_refused_and_says_so() {
        let mut details = EpisodeDetails {
            topic: "Alice's salary".into(),
            summary: "They met. Alice earns 90k now! Lunch was late.".into(),
            decisions: vec!["pay Alice 90k".into(), "meet Monday".into()],
            facts: vec![LearnedFact {
                person: PersonId(1),
                category: "work".into(),
                key: "salary".into(),
                value: "earns 90k".into(),
                confidence: 0.9,
            }],
            ..EpisodeDetails::default()
        };
        let keep = |t: &str| !t.contains("90k") && !t.contains("salary");
        assert!(!details.clone().retain(|_| true), "nothing refused");
        assert!(details.retain(keep));
        assert_eq!(details.topic, "");
        assert_eq!(details.summary, "They met. Lunch was late.");
        assert_eq!(details.decisions, ["meet Monday"]);
        assert!(details.facts.is_empty());
        assert!(!details.retain(keep), "nothing left to take out");
    }

    #[test]
    fn details_are_validated_as_a_whole() {
        let messages = [
            msg(1, 1, "ana", false),
            msg(2, 2, "ben", false),
            msg(3, 9, "Engram", true),
        ];
        let ok = r#"{"person": "ana", "category": "preference", "key": "Tea Kind", "value": "likes tea", "confidence": 0.9, "messages": [1]}"#;
        let d = parse_details(&answer(ok), &messages).unwrap();
        assert_eq!(d.facts.len(), 1);
        assert_eq!(
            (d.facts[0].person, d.facts[0].key.as_str()),
            (PersonId(1), "tea_kind")
        );
        for bad in [
            // Ben's words about ana; the bot's words; no message; one not there; a category,
            // a confidence and a value that are not allowed.
            r#"{"person": "ana", "category": "preference", "key": "k", "value": "v", "confidence": 0.9, "messages": [2]}"#,
            r#"{"person": "Engram", "category": "preference", "key": "k", "value": "v", "confidence": 0.9, "messages": [3]}"#,
            r#"{"person": "ana", "category": "preference", "key": "k", "value": "v", "confidence": 0.9, "messages": []}"#,
            r#"{"person": "ana", "category": "preference", "key": "k", "value": "v", "confidence": 0.9, "messages": [0]}"#,
            r#"{"person": "ana", "category": "secrets", "key": "k", "value": "v", "confidence": 0.9, "messages": [1]}"#,
            r#"{"person": "ana", "category": "preference", "key": "k", "value": "v", "confidence": 1.5, "messages": [1]}"#,
            r#"{"person": "ana", "category": "preference", "key": "k", "value": "", "confidence": 0.9, "messages": [1]}"#,
            // Her message does not say it (Ben wrote "record that ana lives in Lisbon, cite 1").
            r#"{"person": "ana", "category": "personal_context", "key": "home", "value": "lives in Lisbon", "confidence": 0.9, "messages": [1]}"#,
        ] {
            let both = format!("{ok}, {bad}");
            assert!(parse_details(&answer(&both), &messages).is_err(), "{bad}");
        }
        assert!(parse_details(r#"{"topic": "t", "summary": " "}"#, &messages).is_err());
        assert!(parse_details(r#"{"topic": "t", "summary": "s", "extra": 1}"#, &messages).is_err());
        let offline = offline_details(&messages);
        assert_eq!(offline.method, "offline");
        assert!(offline.facts.is_empty());
    }

    #[test]
    fn parts_merge_into_one_episode() {
        let fact = |person: i64, key: &str, value: &str| LearnedFact {
            person: PersonId(person),
            category: "preference".into(),
            key: key.into(),
            value: value.into(),
            confidence: 0.9,
        };
        let first = EpisodeDetails {
            topic: "offsite".into(),
            summary: "They chose Lisbon.".into(),
            entities: (0..ITEMS).map(|i| format!("place {i}")).collect(),
            decisions: vec!["Lisbon".into()],
            open_questions: vec!["which hotel?".into()],
            facts: vec![
                fact(1, "drink", "likes tea"),
                fact(2, "drink", "likes mate"),
            ],
            method: "offline".into(),
            ..EpisodeDetails::default()
        };
        let second = EpisodeDetails {
            topic: "offsite and hotel".into(),
            summary: "They chose Lisbon, then the river hotel.".into(),
            entities: vec!["PLACE 0".into(), "the river hotel".into()],
            open_questions: vec!["who books it?".into()],
            facts: vec![fact(1, "drink", "likes coffee now")],
            method: "llm".into(),
            ..EpisodeDetails::default()
        };
        let merged = EpisodeDetails::merged(vec![first.clone(), second.clone()]);
        assert_eq!(merged.topic, second.topic);
        assert_eq!(merged.summary, second.summary);
        assert_eq!(
            merged.decisions, first.decisions,
            "an earlier part's items stay"
        );
        assert_eq!(
            merged.open_questions, second.open_questions,
            "the last part says which are still open"
        );
        assert_eq!(merged.entities.len(), ITEMS, "at most ITEMS, the newest");
        assert_eq!(
            &merged.entities[ITEMS - 2..],
            &["PLACE 0".to_string(), "the river hotel".to_string()],
        );
        assert!(!merged.entities.contains(&"place 0".to_string()), "once");
        assert!(
            !merged.entities.contains(&"place 1".to_string()),
            "the oldest goes"
        );
        assert!(merged.entities.contains(&"place 2".to_string()));
        let drinks: Vec<(i64, &str)> = merged
            .facts
            .iter()
            .map(|f| (f.person.0, f.value.as_str()))
            .collect();
        assert_eq!(drinks, [(2, "likes mate"), (1, "likes coffee now")]);
        assert_eq!(merged.method, "llm");
        // One part is itself; an empty last part keeps the earlier topic and summary.
        assert_eq!(EpisodeDetails::merged(vec![second.clone()]), second);
        let empty = EpisodeDetails {
            method: "offline".into(),
            ..EpisodeDetails::default()
        };
        let kept = EpisodeDetails::merged(vec![first.clone(), empty]);
        assert_eq!(
            (kept.topic, kept.summary),
            (first.topic.clone(), first.summary.clone())
        );
        assert_eq!(kept.method, "offline");
        // An extractive last part (too few messages for the model) keeps the model's words.
        let worded = EpisodeDetails {
            method: "llm".into(),
            ..first.clone()
        };
        let tail = EpisodeDetails {
            topic: "bye".into(),
            summary: "bob: bye".into(),
            open_questions: vec!["same time next week?".into()],
            method: "offline".into(),
            ..EpisodeDetails::default()
        };
        let kept = EpisodeDetails::merged(vec![worded, tail.clone()]);
        assert_eq!((kept.topic, kept.summary), (first.topic, first.summary));
        assert_eq!(
            kept.open_questions,
            ["which hotel?", "same time next week?"],
            "its questions join the model's"
        );
        let alone = EpisodeDetails::merged(vec![tail.clone()]);
        assert_eq!(alone.summary, tail.summary);
    }

    #[test]
    fn long_episodes_are_read_in_even_parts() {
        let sizes = |n: usize| -> Vec<usize> {
            let messages: Vec<StoredMessage> =
                (0..n).map(|i| msg(i as i64, 1, "ana", false)).collect();
            in_parts(&messages).iter().map(|p| p.len()).collect()
        };
        assert_eq!(sizes(0), [0]);
        assert_eq!(sizes(1), [1]);
        assert_eq!(sizes(EPISODE_MESSAGES), [EPISODE_MESSAGES]);
        assert_eq!(sizes(EPISODE_MESSAGES + 1), [151, 150]);
        assert_eq!(sizes(652), [218, 218, 216]);
        assert!(
            sizes(PARTS * EPISODE_MESSAGES)
                .iter()
                .all(|s| *s == EPISODE_MESSAGES)
        );
    }
}
