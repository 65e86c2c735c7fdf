//! Daily extraction of structured memory, in the memory tier: for each person with memory on,
//! their last 24 hours of messages in each place go to the LLM, whose structured updates are
//! validated and applied all at once with a daily note. One run per (person, place, day),
//! claimed through the store's job table; a run killed half-way is simply run again. In a
//! person's private chat, where their messages of the day are exactly what the day summary
//! reads, the same call writes the day summary too, so that one needs no call of its own.

use crate::domain::mention;
use crate::domain::{Category, Clock, DailyNote, Entry, NewEntry, PersonId, Scope, StoredMessage};
use crate::llm::prompts::{Prompts, element, fill};
use crate::llm::{ChatMessage, ChatModel, ChatRequest, LlmError, parse_json_answer};
use crate::memory::MemoryError;
use crate::memory::context::mention_names;
use crate::memory::entries::{never_kept, origin};
use crate::memory::offline::clip_chars;
use crate::memory::summaries::day_bounds;
use crate::store::{
    DaySummaryRecord, ExtractionApplied, ExtractionCounts, Finish, JobClaim, RangeStats, Store,
};
use chrono::{DateTime, Duration, NaiveDate, NaiveTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tracing::{info, warn};

pub mod episodes;

/// The job name of the daily extraction runs (one run per person, place and day).
pub const EXTRACT_JOB: &str = "extract";

/// The key of one run: (person, place, day).
pub fn run_key(person: PersonId, scope: &Scope, day: NaiveDate) -> String {
    format!("{}:{}:{}", person.0, scope.key(), day)
}

/// The `source` of the entries a run wrote.
pub fn run_source(run_key: &str) -> String {
    format!("job:{EXTRACT_JOB}:{run_key}")
}

/// The `source` of the daily-note block a run wrote in `scope` (one per day).
pub fn note_source(scope: &Scope) -> String {
    format!("job:{EXTRACT_JOB}:{}", scope.key())
}

/// The day whose run read a message sent at `sent_at`, when runs are due at `at` (a run of
/// day D reads the 24 hours before D at `at`).
pub fn run_day(sent_at: DateTime<Utc>, at: NaiveTime) -> NaiveDate {
    let day = sent_at.date_naive();
    if sent_at.time() >= at {
        day + Duration::days(1)
    } else {
        day
    }
}

/// One update as the model wrote it, before validation.
#[derive(Debug, Deserialize)]
struct RawUpdate {
    category: String,
    key: String,
    #[serde(default)]
    value: String,
    action: String,
    confidence: f64,
}

#[derive(Debug, Deserialize)]
struct RawAnswer {
    memory_updates: Vec<RawUpdate>,
    #[serde(default)]
    daily_notes: String,
    /// Only when asked (the combined pass in a private chat).
    #[serde(default)]
    day_summary: Option<String>,
}

/// A validated answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The entries to write or remove.
    pub updates: Vec<Update>,
    /// What goes to the daily notes.
    pub daily_notes: String,
    /// The day summary, when one was asked for.
    pub day_summary: Option<String>,
}

/// What an update does to its entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Adds or replaces it.
    Write,
    /// Removes it.
    Remove,
}

/// One validated update.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The MEMORY.md section.
    pub category: Category,
    /// The entry's key within it.
    pub key: String,
    /// Its new text.
    pub value: String,
    /// Write or remove.
    pub action: Action,
    /// How sure the model was (0 to 1).
    pub confidence: f64,
}

/// Why an extraction answer was not applied.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// No answer (the call failed), or one that is not the JSON asked for.
    #[error(transparent)]
    Model(#[from] LlmError),
    /// Update `0` names a category that does not exist (what it wrote is not said: the
    /// error goes to logs and job records, which keep nothing a model wrote about people).
    #[error("update {0}: unknown category")]
    Category(usize),
    /// Update `0` has an action other than add, update or remove.
    #[error("update {0}: unknown action")]
    Action(usize),
    /// Update `0` has a confidence outside 0..1.
    #[error("update {0}: confidence {1} outside 0..1")]
    Confidence(usize, f64),
    /// Update `0` has no usable key.
    #[error("update {0}: empty key")]
    EmptyKey(usize),
    /// Update `0` writes an empty value or one over 500 characters.
    #[error("update {0}: value must be 1 to 500 characters")]
    ValueLength(usize),
}

impl AnswerError {
    /// The model answered, but not usably (not the JSON asked for, an update that breaks the
    /// rules, or a refusal of this very request: HTTP 400, 413, 422, as a content filter or
    /// an over-long prompt gets), as against not answering at all.
    pub fn is_unusable(&self) -> bool {
        match self {
            AnswerError::Model(LlmError::BadResponse(_)) => true,
            AnswerError::Model(LlmError::Http { status, .. }) => {
                matches!(status, 400 | 413 | 422)
            }
            AnswerError::Model(_) => false,
            _ => true,
        }
    }
}

/// The model's answer, validated as a whole: one bad update rejects the answer, so an answer
/// is applied completely or not at all.
pub fn parse_answer(content: &str) -> Result<Answer, AnswerError> {
    let raw: RawAnswer = parse_json_answer(content)?;
    let mut out = Vec::new();
    for (i, u) in raw.memory_updates.into_iter().enumerate() {
        let category = Category::parse(&u.category).ok_or(AnswerError::Category(i))?;
        let action = match u.action.as_str() {
            "add" | "update" => Action::Write,
            "remove" => Action::Remove,
            _ => return Err(AnswerError::Action(i)),
        };
        if !(0.0..=1.0).contains(&u.confidence) {
            return Err(AnswerError::Confidence(i, u.confidence));
        }
        let key: String = u
            .key
            .trim()
            .to_lowercase()
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { '_' })
            .take(64)
            .collect();
        if key.trim_matches('_').is_empty() {
            return Err(AnswerError::EmptyKey(i));
        }
        let value = u.value.trim().to_string();
        if action == Action::Write && (value.is_empty() || value.chars().count() > 500) {
            return Err(AnswerError::ValueLength(i));
        }
        out.push(Update {
            category,
            key,
            value,
            action,
            confidence: u.confidence,
        });
    }
    Ok(Answer {
        updates: out,
        daily_notes: raw.daily_notes.trim().to_string(),
        day_summary: raw
            .day_summary
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
    })
}

/// What one (person, place, day) run did: the run record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtractionRun {
    /// Whose memory (person id).
    pub person: i64,
    /// Which place (scope key).
    pub scope: String,
    /// Which day.
    pub day: NaiveDate,
    /// done, dry_run, already_done, held_by_other, failed
    pub status: String,
    /// The person's messages read.
    pub interactions: usize,
    /// Entries added.
    pub written: usize,
    /// Entries updated.
    pub updated: usize,
    /// Entries removed.
    pub removed: usize,
    /// Weaker updates that went to the daily notes only.
    pub noted: usize,
    /// Model tokens used.
    pub tokens: u64,
    /// How long it took.
    pub duration_ms: u64,
    /// Why it failed, for the operator (never shown in a chat).
    pub error: Option<String>,
    /// It failed on the model's answers (asked twice, neither usable), not on reaching the
    /// model: asking again later is likely to get the same.
    #[serde(skip)]
    pub unusable_answer: bool,
    /// The day summary of this place was written by the same call.
    pub day_summary: bool,
    /// A dry run: each change the run would make, entry by entry, and the daily note.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<PlannedChange>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// A dry run: the daily note it would write.
    pub daily_note: Option<String>,
}

impl ExtractionRun {
    /// A run over `interactions` messages that has done nothing yet.
    fn new(person: PersonId, scope: &Scope, day: NaiveDate, interactions: usize) -> Self {
        ExtractionRun {
            person: person.0,
            scope: scope.key(),
            day,
            status: "done".into(),
            interactions,
            written: 0,
            updated: 0,
            removed: 0,
            noted: 0,
            tokens: 0,
            duration_ms: 0,
            error: None,
            unusable_answer: false,
            day_summary: false,
            changes: Vec::new(),
            daily_note: None,
        }
    }
}

/// One change an extraction would make to a person's memory.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PlannedChange {
    /// "add", "update", "unchanged", "delete", "note" (too weak for MEMORY.md: the daily
    /// notes only), or "skip" (a delete of an entry that is not there).
    pub action: &'static str,
    /// The MEMORY.md section.
    pub category: &'static str,
    /// The entry's key.
    pub key: String,
    /// The value it would have.
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The value it has now, for an update.
    pub old_value: Option<String>,
    /// How sure the model was.
    pub confidence: f64,
}

impl PlannedChange {
    /// One line for people: "+ [Work Context] employer: Acme (0.90)".
    pub fn line(&self) -> String {
        let mark = match self.action {
            "add" => "+",
            "update" => "~",
            "delete" => "-",
            "note" => "n",
            _ => "=",
        };
        let value = match &self.old_value {
            Some(old) if self.action == "update" => format!("{old} -> {}", self.value),
            _ => self.value.clone(),
        };
        format!(
            "{mark} {} [{}] {}: {value} ({:.2})",
            self.action, self.category, self.key, self.confidence
        )
    }
}

/// What applying `writes`, `removals` and `weak` to `existing` would change, entry by entry.
pub fn planned_changes(
    existing: &[crate::domain::Entry],
    writes: &[NewEntry],
    removals: &[(Scope, Category, String)],
    weak: &[Update],
) -> Vec<PlannedChange> {
    let find = |scope: &Scope, category: Category, key: &str| {
        existing
            .iter()
            .find(|e| &e.scope == scope && e.category == category && e.key == key)
    };
    let mut out = Vec::new();
    for w in writes {
        let old = find(&w.scope, w.category, &w.key);
        out.push(PlannedChange {
            action: match old {
                None => "add",
                Some(e) if e.value == w.value => "unchanged",
                Some(_) => "update",
            },
            category: w.category.heading(),
            key: w.key.clone(),
            value: w.value.clone(),
            old_value: old.filter(|e| e.value != w.value).map(|e| e.value.clone()),
            confidence: w.confidence,
        });
    }
    for (scope, category, key) in removals {
        let old = find(scope, *category, key);
        out.push(PlannedChange {
            action: if old.is_some() { "delete" } else { "skip" },
            category: category.heading(),
            key: key.clone(),
            value: old.map(|e| e.value.clone()).unwrap_or_default(),
            old_value: None,
            confidence: old.map_or(0.0, |e| e.confidence),
        });
    }
    for u in weak {
        out.push(PlannedChange {
            action: "note",
            category: u.category.heading(),
            key: u.key.clone(),
            value: u.value.clone(),
            old_value: None,
            confidence: u.confidence,
        });
    }
    out
}

/// Settings of the extraction (from `[memory]`).
#[derive(Debug, Clone)]
pub struct ExtractionSettings {
    /// Least confidence of a durable entry.
    pub durable: f64,
    /// Most messages of a person's day a run reads.
    pub max_messages: usize,
    /// When the daily run is due (UTC).
    pub at: NaiveTime,
    /// Longest day summary written by the combined pass (characters).
    pub day_summary_chars: usize,
    /// Longest message text in the prompt (characters), as for the summaries.
    pub max_message_chars: usize,
    /// How many days back a missed run (downtime, a model outage) is still made up.
    pub catch_up_days: u32,
    /// A closed episode with fewer people's messages gets extractive details, no model call
    /// (the daily extraction still reads what they said).
    pub episode_min_messages: usize,
}

/// Why a run wrote nothing: something of the person's was forgotten while the model
/// answered (`ExtractionApplied::Forgotten`).
const FORGOTTEN: &str = "something was forgotten while the model answered";
/// Runs of one (person, place, day) tried in a row when a forget keeps the answer out.
const FORGOTTEN_ATTEMPTS: usize = 3;

/// What one run is about: whose, where, which day, under which job key, at what time, over
/// how many messages, and the forget counts read before them.
struct Target<'a> {
    person: PersonId,
    scope: &'a Scope,
    day: NaiveDate,
    key: &'a str,
    now: DateTime<Utc>,
    messages: usize,
    /// The person's forget count read before the messages (`Store::forget_epoch`).
    epoch: i64,
    /// The scope's forget count read before the messages (`Store::summary_epoch`).
    summary_epoch: i64,
}

/// The day summary to write with a run: the private chat's stats over what the run reads.
struct SummaryPlan {
    name: String,
    stats: RangeStats,
}

/// The daily extraction: reads each active person's day and keeps what is durable in
/// MEMORY.md and the rest in daily notes, once per person, place and day across processes.
pub struct Extractor {
    store: Arc<dyn Store>,
    llm: Arc<dyn ChatModel>,
    clock: Arc<dyn Clock>,
    holder: String,
    lease: Duration,
    settings: ExtractionSettings,
    prompts: Arc<Prompts>,
}

impl Extractor {
    /// An extractor over `store` with `llm`, claiming runs as `holder` for `lease` at a time.
    pub fn new(
        store: Arc<dyn Store>,
        llm: Arc<dyn ChatModel>,
        clock: Arc<dyn Clock>,
        holder: String,
        lease: Duration,
        settings: ExtractionSettings,
        prompts: Arc<Prompts>,
    ) -> Extractor {
        Extractor {
            store,
            llm,
            clock,
            holder,
            lease,
            settings,
            prompts,
        }
    }

    /// The 24 hours a run for `day` covers: up to the extraction time of that day.
    pub fn window(&self, day: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
        let end = day.and_time(self.settings.at).and_utc();
        (end - Duration::hours(24), end)
    }

    /// The days whose runs are due at `now`, oldest first: today once the extraction time has
    /// passed, and the `catch_up_days` before it (a run missed then is made up now; one that
    /// ran is not repeated, its claim says so).
    pub fn due_days(&self, now: DateTime<Utc>) -> Vec<NaiveDate> {
        let today = now.date_naive();
        (0..=i64::from(self.settings.catch_up_days))
            .rev()
            .map(|back| today - Duration::days(back))
            .filter(|day| now >= self.window(*day).1)
            .collect()
    }

    /// Whether anyone wrote in `day`'s window (a day without chatter has nothing to run).
    pub async fn has_chatter(&self, day: NaiveDate) -> Result<bool, MemoryError> {
        let (from, to) = self.window(day);
        Ok(!self.store.authors_in_range(from, to).await?.is_empty())
    }

    /// Whether the run over `messages` (the person's in their own private chat) can write the
    /// day summary of `day` as well: every message is from that day, nobody else spoke there,
    /// and no up-to-date summary exists. What is said later makes the summary stale, and it is
    /// then recomputed as usual.
    async fn summary_plan(
        &self,
        person: PersonId,
        scope: &Scope,
        day: NaiveDate,
        messages: &[StoredMessage],
    ) -> Result<Option<SummaryPlan>, MemoryError> {
        let (day_start, _) = day_bounds(day);
        let (_, end) = self.window(day);
        if *scope != Scope::Dm(person) || messages.iter().any(|m| m.sent_at < day_start) {
            return Ok(None);
        }
        let stats = self.store.chatter_stats(scope, day_start, end).await?;
        let day_messages = self
            .store
            .chatter_in_range(scope, day_start, end, self.settings.max_messages + 1)
            .await?;
        let humans: Vec<&StoredMessage> = day_messages.iter().filter(|m| !m.is_bot).collect();
        if humans.len() != messages.len() || humans.iter().any(|m| m.author != person) {
            return Ok(None);
        }
        if let Some(stored) = self.store.day_summary(scope, day).await?
            && (stored.is_final || stored.through_message >= stats.last_message)
        {
            return Ok(None);
        }
        Ok(Some(SummaryPlan {
            name: messages[0].author_name.clone(),
            stats,
        }))
    }

    /// Runs for everyone who wrote in the window and has memory on; `progress` hears
    /// (done, total) after each person.
    pub async fn extract_all(
        &self,
        day: NaiveDate,
        dry_run: bool,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<Vec<ExtractionRun>, MemoryError> {
        let (from, to) = self.window(day);
        let people = self.store.authors_in_range(from, to).await?;
        let mut runs = Vec::new();
        for (n, person) in people.iter().enumerate() {
            runs.extend(self.extract_person(*person, day, dry_run).await?);
            progress(n + 1, people.len());
        }
        Ok(runs)
    }

    /// Runs for one person: one run per place they wrote in. A paused person gets none.
    pub async fn extract_person(
        &self,
        person: PersonId,
        day: NaiveDate,
        dry_run: bool,
    ) -> Result<Vec<ExtractionRun>, MemoryError> {
        if self.store.memory_paused(person).await? {
            info!(%person, "memory paused: no extraction");
            return Ok(Vec::new());
        }
        let (from, to) = self.window(day);
        let mut runs = Vec::new();
        for scope in self.store.author_scopes(person, from, to).await? {
            // A forget of theirs while the model answered keeps the answer out: read again
            // and asked again, a few times, before the run is left to the next pass.
            for attempt in 1..=FORGOTTEN_ATTEMPTS {
                // Read first: a forget counted after them keeps this run's writes out.
                let epochs = (
                    self.store.forget_epoch(person).await?,
                    self.store.summary_epoch(&scope).await?,
                );
                // Commands to the bot are not what a person tells about themselves.
                let messages = self
                    .store
                    .author_chatter_in_range(&scope, person, from, to, self.settings.max_messages)
                    .await?;
                if messages.is_empty() {
                    break;
                }
                let summary = self.summary_plan(person, &scope, day, &messages).await?;
                let run = self
                    .run_one(person, &scope, day, &messages, (summary, epochs), dry_run)
                    .await?;
                let again = run.error.as_deref() == Some(FORGOTTEN) && attempt < FORGOTTEN_ATTEMPTS;
                if !again {
                    runs.push(run);
                    break;
                }
            }
        }
        Ok(runs)
    }

    /// One (person, place, day) run: claimed (unless a dry run), the model asked, its answer
    /// applied whole or not at all (not when something of the person's was forgotten since
    /// `epoch`, read before `messages`), the run finished with its record.
    async fn run_one(
        &self,
        person: PersonId,
        scope: &Scope,
        day: NaiveDate,
        messages: &[StoredMessage],
        (summary, (epoch, summary_epoch)): (Option<SummaryPlan>, (i64, i64)),
        dry_run: bool,
    ) -> Result<ExtractionRun, MemoryError> {
        let started = std::time::Instant::now();
        let key = run_key(person, scope, day);
        let mut run = ExtractionRun::new(person, scope, day, messages.len());
        let now = self.clock.now();
        if !dry_run && let Some(status) = self.claim(&key, now).await? {
            run.status = status.into();
            return Ok(run);
        }
        let existing = self
            .store
            .entries(person, Some(std::slice::from_ref(scope)))
            .await?;
        let names = match messages.first() {
            Some(m) => {
                mention_names(
                    self.store.as_ref(),
                    m.space,
                    messages.iter().map(|m| m.text.as_str()),
                )
                .await?
            }
            None => std::collections::HashMap::new(),
        };
        let prompt = prompt_for(messages, &existing, &names, self.settings.max_message_chars);
        let applied = match self
            .answer(person, &self.system_prompt(&summary), &prompt, &mut run)
            .await
        {
            Ok(answer) => {
                let target = Target {
                    person,
                    scope,
                    day,
                    key: &key,
                    now,
                    messages: messages.len(),
                    epoch,
                    summary_epoch,
                };
                self.apply(
                    &target,
                    &existing,
                    summary.as_ref(),
                    answer,
                    dry_run,
                    &mut run,
                )
                .await?;
                Ok(())
            }
            Err(why) => Err(why),
        };
        if let Err(why) = applied {
            run.status = "failed".into();
            run.unusable_answer = why.is_unusable();
            run.error = Some(why.to_string());
        }
        run.duration_ms = started.elapsed().as_millis() as u64;
        if !dry_run {
            self.finish(&key, &run).await?;
            if run.status == "done" {
                let changed = run.written + run.updated + run.removed;
                self.audit_learned(EXTRACT_JOB, scope, person, changed)
                    .await;
            }
        }
        info!(%person, scope = %run.scope, %day, status = %run.status, written = run.written,
              updated = run.updated, tokens = run.tokens, "extraction run");
        Ok(run)
    }

    /// Claims the run (or takes over a dead holder's); the status to stop with when it is not
    /// this process's to do.
    async fn claim(
        &self,
        key: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<&'static str>, MemoryError> {
        Ok(
            match self
                .store
                .claim_job_or_take_over(EXTRACT_JOB, key, &self.holder, now, self.lease)
                .await?
            {
                JobClaim::Acquired { .. } => None,
                JobClaim::AlreadyDone => Some("already_done"),
                JobClaim::HeldByOther { .. } => Some("held_by_other"),
                JobClaim::RetryLater { .. } => Some("retry_later"),
            },
        )
    }

    /// The extraction prompt, with the day-summary request when this run writes one.
    fn system_prompt(&self, summary: &Option<SummaryPlan>) -> String {
        match summary {
            Some(plan) => {
                self.prompts.extract.clone()
                    + &fill(
                        &self.prompts.extract_day_summary,
                        &[
                            ("max_chars", &self.settings.day_summary_chars.to_string()),
                            ("name", &plan.name),
                        ],
                    )
            }
            None => self.prompts.extract.clone(),
        }
    }

    /// The model's answer, checked. Malformed output is asked for once more; the tokens spent
    /// are counted in `run`.
    async fn answer(
        &self,
        person: PersonId,
        system: &str,
        prompt: &str,
        run: &mut ExtractionRun,
    ) -> Result<Answer, AnswerError> {
        let mut attempt = 0;
        loop {
            let why = match self.ask(system, prompt).await {
                Ok((content, tokens)) => {
                    run.tokens = run.tokens.saturating_add(tokens);
                    match parse_answer(&content) {
                        Ok(answer) => return Ok(answer),
                        Err(why) => {
                            warn!(%person, attempt, error = %why, "extraction answer rejected");
                            why
                        }
                    }
                }
                Err(e @ LlmError::BadResponse(_)) => AnswerError::Model(e),
                Err(e) => return Err(AnswerError::Model(e)),
            };
            attempt += 1;
            if attempt == 2 {
                return Err(why);
            }
        }
    }

    /// Applies a checked answer in one transaction (entries, removals, the daily note), then
    /// the person's day summary when one was asked for; a dry run only records the plan.
    async fn apply(
        &self,
        t: &Target<'_>,
        existing: &[Entry],
        summary: Option<&SummaryPlan>,
        answer: Answer,
        dry_run: bool,
        run: &mut ExtractionRun,
    ) -> Result<(), MemoryError> {
        let Answer {
            updates,
            daily_notes: notes,
            day_summary,
        } = answer;
        let (writes, removals, weak) =
            self.plan(t.person, t.scope, &updates, &origin(t.scope), t.key, t.now);
        run.noted = weak.len();
        let note = DailyNote {
            day: t.day,
            scope: t.scope.clone(),
            text: daily_text(&notes, &weak, t.messages),
            source: note_source(t.scope),
            added_at: t.now,
        };
        if dry_run {
            run.status = "dry_run".into();
            let changes = planned_changes(existing, &writes, &removals, &weak);
            let count = |a: &str| changes.iter().filter(|c| c.action == a).count();
            (run.written, run.updated, run.removed) =
                (count("add"), count("update"), count("delete"));
            run.changes = changes;
            run.daily_note = Some(note.text.clone());
            return Ok(());
        }
        match self
            .store
            .apply_extraction(t.person, &writes, &removals, &note, Some(t.epoch))
            .await?
        {
            ExtractionApplied::Applied(ExtractionCounts {
                added,
                updated,
                removed,
            }) => {
                run.written = added;
                run.updated = updated;
                run.removed = removed;
            }
            ExtractionApplied::AlreadyApplied => run.status = "already_done".into(),
            // The answer came from what is forgotten now: the next run reads again.
            ExtractionApplied::Forgotten => {
                run.status = "failed".into();
                run.error = Some(FORGOTTEN.into());
                return Ok(());
            }
        }
        if let (Some(plan), Some(text)) = (summary, day_summary) {
            let text: String = text
                .chars()
                .take(self.settings.day_summary_chars * 2)
                .collect();
            let record = DaySummaryRecord {
                summaries: [(t.person, text)].into_iter().collect(),
                through_message: plan.stats.last_message,
                message_count: plan.stats.count,
                is_final: false,
                computed_at: t.now,
            };
            // Not when a message of the day was forgotten since it was read.
            run.day_summary = self
                .store
                .put_day_summary(t.scope, t.day, &record, Some(t.summary_epoch))
                .await?;
        }
        Ok(())
    }

    /// An audit line: job `job` changed `n` of `person`'s entries in `scope` (none when 0).
    async fn audit_learned(&self, job: &'static str, scope: &Scope, person: PersonId, n: usize) {
        if n == 0 {
            return;
        }
        let by = super::audit::By {
            scope: Some(scope.clone()),
            ..super::audit::By::job(job)
        };
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let (store, clock) = (&*self.store, &*self.clock);
        super::audit::record(store, clock, &by, super::audit::Action::Learned, person, n).await;
    }

    /// Records the run as finished. A failed run of one person may be tried again at once (by
    /// the next pass or `engram extract`); the scheduled pass is what backs off.
    async fn finish(&self, key: &str, run: &ExtractionRun) -> Result<(), MemoryError> {
        let detail = serde_json::to_string(run).unwrap_or_default();
        let finish = match run.error {
            None => Finish::Done,
            Some(_) => Finish::Failed {
                retry_at: self.clock.now(),
            },
        };
        self.store
            .finish_job(
                EXTRACT_JOB,
                key,
                &self.holder,
                self.clock.now(),
                finish,
                &detail,
            )
            .await?;
        Ok(())
    }

    async fn ask(&self, system: &str, prompt: &str) -> Result<(String, u64), LlmError> {
        self.ask_task("extract", 0.0, system, prompt).await
    }

    /// One JSON-answering call for `task` at `temperature`: the answer and the tokens spent.
    async fn ask_task(
        &self,
        task: &'static str,
        temperature: f32,
        system: &str,
        prompt: &str,
    ) -> Result<(String, u64), LlmError> {
        let response = self
            .llm
            .complete(&ChatRequest {
                task,
                messages: vec![
                    ChatMessage::system(system.to_string()),
                    ChatMessage::user(prompt.to_string()),
                ],
                temperature,
                json: true,
                max_tokens: None,
                tools: Vec::new(),
            })
            .await?;
        Ok((
            response.content,
            response
                .prompt_tokens
                .saturating_add(response.completion_tokens),
        ))
    }

    /// Durable writes, removals, and the weaker updates that only go to the daily notes.
    #[allow(clippy::type_complexity)]
    fn plan(
        &self,
        person: PersonId,
        scope: &Scope,
        updates: &[Update],
        origin: &str,
        run_key: &str,
        now: DateTime<Utc>,
    ) -> (Vec<NewEntry>, Vec<(Scope, Category, String)>, Vec<Update>) {
        let (mut writes, mut removals, mut weak) = (Vec::new(), Vec::new(), Vec::new());
        for u in updates {
            match u.action {
                Action::Remove => removals.push((scope.clone(), u.category, u.key.clone())),
                Action::Write if never_kept(&u.value).is_some() => {}
                Action::Write if u.confidence < self.settings.durable => weak.push(u.clone()),
                Action::Write => writes.push(NewEntry {
                    person,
                    scope: scope.clone(),
                    category: u.category,
                    key: u.key.clone(),
                    value: u.value.clone(),
                    confidence: u.confidence,
                    source: run_source(run_key),
                    origin: origin.to_string(),
                    at: now,
                    expires_at: None,
                }),
            }
        }
        (writes, removals, weak)
    }
}

fn prompt_for(
    messages: &[StoredMessage],
    existing: &[crate::domain::Entry],
    names: &std::collections::HashMap<String, String>,
    max_message_chars: usize,
) -> String {
    let mut out = String::from("<current_entries>\n");
    for e in existing {
        out.push_str(&element(
            "entry",
            &[("category", e.category.as_str()), ("key", &e.key)],
            &e.value,
        ));
        out.push('\n');
    }
    out.push_str("</current_entries>\n<messages>\n");
    for m in messages {
        out.push_str(&element(
            "message",
            &[("at", &m.sent_at.format("%Y-%m-%d %H:%M").to_string())],
            &clip_chars(&mention::display(&m.text, names), max_message_chars),
        ));
        out.push('\n');
    }
    out.push_str("</messages>\n");
    out
}

fn daily_text(notes: &str, weak: &[Update], interactions: usize) -> String {
    let mut out = format!("## Extracted Insights\n- {interactions} messages read\n");
    for u in weak {
        out.push_str(&format!(
            "- Maybe ({:.1}): {}\n",
            u.confidence,
            u.value.replace('\n', " ")
        ));
    }
    if !notes.is_empty() && never_kept(notes).is_none() {
        out.push_str("\n## Discussions\n");
        out.push_str(notes);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_validated_as_a_whole() {
        let ok = r#"{"memory_updates": [{"category": "work_context", "key": "Role", "value": "Backend engineer", "action": "add", "confidence": 0.9}], "daily_notes": "- talked"}"#;
        let answer = parse_answer(ok).unwrap();
        assert_eq!(answer.updates[0].key, "role");
        assert_eq!(answer.daily_notes, "- talked");
        assert_eq!(answer.day_summary, None);
        for bad in [
            "not json",
            r#"{"memory_updates": [{"category": "secrets", "key": "k", "value": "v", "action": "add", "confidence": 0.9}]}"#,
            r#"{"memory_updates": [{"category": "preference", "key": "k", "value": "v", "action": "merge", "confidence": 0.9}]}"#,
            r#"{"memory_updates": [{"category": "preference", "key": "k", "value": "v", "action": "add", "confidence": 7}]}"#,
            r#"{"memory_updates": [{"category": "preference", "key": "  ", "value": "v", "action": "add", "confidence": 0.9}]}"#,
            r#"{"memory_updates": [{"category": "preference", "key": "k", "value": "", "action": "add", "confidence": 0.9}]}"#,
            r#"{"daily_notes": "x"}"#,
        ] {
            assert!(parse_answer(bad).is_err(), "{bad}");
        }
    }
}
