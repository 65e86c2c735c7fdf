//! Track 2, transient memory: one day summary per scope and day for all active people (one LLM
//! call), refreshed at most hourly for today and computed once for past days; a history summary
//! per person over days 2–7. Without an LLM, per-person extractive summaries stand in.

use super::cache::DaySummaries;
use super::context::mention_names;
use super::offline;
use super::{MemoryError, MemoryManager};
use crate::domain::mention;
use crate::domain::{PersonId, Scope, StoredMessage, day_of};
use crate::llm::LlmError;
use crate::llm::prompts::{element, fill};
use crate::store::{DaySummaryRecord, RangeStats};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tracing::info;

/// The absolute hour a time falls in (hours since the Unix epoch): today's summaries are
/// refreshed at most once per bucket.
pub fn hour_bucket(t: DateTime<Utc>) -> i64 {
    t.timestamp().div_euclid(3600)
}

/// The first and last instant of `day` (UTC).
pub fn day_bounds(day: NaiveDate) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = day.and_hms_opt(0, 0, 0).expect("midnight").and_utc();
    (start, start + Duration::days(1))
}

#[derive(Deserialize)]
struct DayAnswer {
    summaries: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct HistoryAnswer {
    summary: String,
}

/// Extractive summaries for every author in `messages`.
fn offline_day_map(messages: &[StoredMessage], max_chars: usize) -> BTreeMap<PersonId, String> {
    let mut by_author: BTreeMap<PersonId, (String, Vec<&str>)> = BTreeMap::new();
    for m in messages.iter().filter(|m| !m.is_bot) {
        by_author
            .entry(m.author)
            .or_insert_with(|| (m.author_name.clone(), Vec::new()))
            .1
            .push(&m.text);
    }
    by_author
        .into_iter()
        .map(|(id, (name, texts))| (id, offline::extractive_summary(&name, &texts, max_chars)))
        .collect()
}

impl MemoryManager {
    /// Summaries of everyone active in `scope` on `day`, as seen at `now`.
    ///
    /// Today: at most one LLM call per scope per hour bucket, and none when nothing new was
    /// said. Past days: computed once after the day ended, stored, never recomputed.
    // Over 80 lines: the cache, the stored summaries, the model and the offline fallback, in
    // the order they are tried, each writing back to the caches that hold its result.
    pub async fn day_summaries(
        &self,
        scope: &Scope,
        day: NaiveDate,
        now: DateTime<Utc>,
    ) -> Result<Arc<DaySummaries>, MemoryError> {
        let since = self.caches.begin_fill();
        let today = day_of(now);
        let is_past = day < today;
        let scope_key = scope.key();
        let hour_key = (scope_key.clone(), day, hour_bucket(now));
        if is_past
            && let Some(hit) = self.caches.get(
                "past_days",
                &self.caches.past_days,
                &(scope_key.clone(), day),
            )
        {
            return Ok(hit);
        }
        if let Some(hit) = self.caches.get("today", &self.caches.today, &hour_key) {
            return Ok(hit);
        }
        let remember = |value: Arc<DaySummaries>, permanent: bool| {
            if permanent {
                self.caches.fill(
                    &self.caches.past_days,
                    since,
                    (scope_key.clone(), day),
                    value.clone(),
                );
            } else {
                self.caches
                    .fill(&self.caches.today, since, hour_key.clone(), value.clone());
            }
            value
        };

        // Read first: a summary made from what a forget meanwhile removes is not kept.
        let epoch = self.store.summary_epoch(scope).await?;
        let (from, to) = day_bounds(day);
        let stats = self.store.chatter_stats(scope, from, to).await?;
        if let Some(value) = self
            .stored_day_summaries(scope, day, (now, epoch), &stats)
            .await?
        {
            return Ok(remember(value, is_past));
        }
        if stats.count == 0 {
            return Ok(remember(Arc::new(DaySummaries::default()), is_past));
        }

        let messages = self
            .store
            .chatter_in_range(scope, from, to, self.settings.max_summary_messages)
            .await?;
        match self.summarize_day_llm(&messages).await {
            Ok(by_person) => {
                let record = DaySummaryRecord {
                    summaries: by_person.clone(),
                    through_message: stats.last_message,
                    message_count: stats.count,
                    is_final: is_past,
                    computed_at: now,
                };
                if !self
                    .store
                    .put_day_summary(scope, day, &record, Some(epoch))
                    .await?
                {
                    // Something it read was forgotten meanwhile: made again without the
                    // model from what is left, and not kept.
                    let messages = self
                        .store
                        .chatter_in_range(scope, from, to, self.settings.max_summary_messages)
                        .await?;
                    return Ok(Arc::new(DaySummaries {
                        by_person: offline_day_map(&messages, self.settings.day_summary_chars),
                        degraded: true,
                    }));
                }
                info!(scope = %scope_key, %day, people = by_person.len(), messages = stats.count, final_ = is_past, "day summary computed");
                Ok(remember(
                    Arc::new(DaySummaries {
                        by_person,
                        degraded: false,
                    }),
                    is_past,
                ))
            }
            Err(e) => {
                self.note_fallback("day_summary", &e);
                let by_person = offline_day_map(&messages, self.settings.day_summary_chars);
                // Degraded results stay at most an hour, so the LLM gets another chance later;
                // one made only because this answer was over its limit is not kept for others.
                if !matches!(e, LlmError::Limited) {
                    self.caches.fill(
                        &self.caches.today,
                        since,
                        hour_key.clone(),
                        Arc::new(DaySummaries {
                            by_person: by_person.clone(),
                            degraded: true,
                        }),
                    );
                }
                Ok(Arc::new(DaySummaries {
                    by_person,
                    degraded: true,
                }))
            }
        }
    }

    /// The stored summaries of `day` in `scope`, when they still hold at `now` for the
    /// chatter `stats` describe: final, up to date, or (today) made this hour, and read from
    /// no message since deleted or forgotten. A past day's summaries made while it was today,
    /// with nothing said since, become final as they are.
    async fn stored_day_summaries(
        &self,
        scope: &Scope,
        day: NaiveDate,
        (now, epoch): (DateTime<Utc>, i64),
        stats: &RangeStats,
    ) -> Result<Option<Arc<DaySummaries>>, MemoryError> {
        let Some(stored) = self.store.day_summary(scope, day).await? else {
            return Ok(None);
        };
        let is_past = day < day_of(now);
        let same_hour = hour_bucket(stored.computed_at) == hour_bucket(now);
        let up_to_date = stored.through_message >= stats.last_message;
        // Fewer messages than it read: some were deleted or forgotten since, and it may
        // quote them. Never kept, final or not.
        let shrunk =
            stats.count < stored.message_count || stats.last_message < stored.through_message;
        if shrunk || !(stored.is_final || up_to_date || (!is_past && same_hour)) {
            return Ok(None);
        }
        if is_past && !stored.is_final {
            let mut finished = stored.clone();
            finished.is_final = true;
            // Dropped by a forget since it was read: made again.
            if !self
                .store
                .put_day_summary(scope, day, &finished, Some(epoch))
                .await?
            {
                return Ok(None);
            }
        }
        Ok(Some(Arc::new(DaySummaries {
            by_person: stored.summaries,
            degraded: false,
        })))
    }

    async fn summarize_day_llm(
        &self,
        messages: &[StoredMessage],
    ) -> Result<BTreeMap<PersonId, String>, LlmError> {
        if self.llm.is_none() {
            return Err(LlmError::NotConfigured);
        }
        // A failed lookup only leaves ids where names would be: not worth failing the summary.
        let names = match messages.first() {
            Some(m) => mention_names(
                self.store.as_ref(),
                m.space,
                messages.iter().map(|m| m.text.as_str()),
            )
            .await
            .inspect_err(|e| tracing::warn!(error = %e, "mention names unavailable; ids shown"))
            .unwrap_or_default(),
            None => HashMap::new(),
        };
        let mut people: BTreeMap<PersonId, &str> = BTreeMap::new();
        let mut lines = Vec::with_capacity(messages.len());
        for m in messages.iter().filter(|m| !m.is_bot) {
            people.entry(m.author).or_insert(&m.author_name);
            let text = offline::clip_chars(
                &mention::display(&m.text, &names),
                self.settings.max_message_chars_in_prompt,
            );
            lines.push(element(
                "message",
                &[
                    ("author_id", &m.author.to_string()),
                    ("author", &m.author_name),
                    ("time", &m.sent_at.format("%H:%M").to_string()),
                ],
                &text,
            ));
        }
        if people.is_empty() {
            return Ok(BTreeMap::new());
        }
        let people_xml: Vec<String> = people
            .iter()
            .map(|(id, name)| element("person", &[("id", &id.to_string())], name))
            .collect();
        let user = format!(
            "<people>\n{}\n</people>\n<messages>\n{}\n</messages>",
            people_xml.join("\n"),
            lines.join("\n")
        );
        let system = fill(
            &self.prompts.day_summary,
            &[("max_chars", &self.settings.day_summary_chars.to_string())],
        );
        let answer: DayAnswer = self.ask_json("day_summary", system, user).await?;
        let limit = self.settings.day_summary_chars * 2;
        let mut out = BTreeMap::new();
        for (key, summary) in answer.summaries {
            let Ok(id) = key.trim().parse::<i64>() else {
                continue;
            };
            let id = PersonId(id);
            if people.contains_key(&id) && !summary.trim().is_empty() {
                out.insert(id, offline::clip_chars(summary.trim(), limit));
            }
        }
        if out.is_empty() {
            return Err(LlmError::BadResponse(
                "the day summary names none of the active people".into(),
            ));
        }
        // Anyone the model skipped still gets an extractive line rather than nothing.
        let missing: Vec<StoredMessage> = messages
            .iter()
            .filter(|m| !out.contains_key(&m.author))
            .cloned()
            .collect();
        out.extend(offline_day_map(&missing, self.settings.day_summary_chars));
        Ok(out)
    }

    /// The summary of `person` in `scope` over the days before today (days 2..=history_days+1).
    pub async fn history_summary(
        &self,
        scope: &Scope,
        person: PersonId,
        name: &str,
        now: DateTime<Utc>,
    ) -> Result<(Arc<str>, bool), MemoryError> {
        let since = self.caches.begin_fill();
        let today = day_of(now);
        let end = today - Duration::days(1);
        let key = (scope.key(), person, end);
        if let Some(hit) = self.caches.get("history", &self.caches.history, &key) {
            return Ok((hit, false));
        }
        let degraded_key = format!("history:{}:{}:{end}", scope.key(), person);
        if let Some(hit) = self
            .caches
            .get("degraded", &self.caches.degraded, &degraded_key)
        {
            return Ok((hit, true));
        }
        // Read before what the summary is made of (not before the caches: a hit reads nothing,
        // and a query here cost every warm build ~100 µs): a summary made from what a forget
        // meanwhile removes is not kept.
        let epoch = self.store.summary_epoch(scope).await?;
        if let Some(stored) = self.store.history_summary(scope, person, end).await? {
            let value: Arc<str> = Arc::from(stored);
            self.caches
                .fill(&self.caches.history, since, key, value.clone());
            return Ok((value, false));
        }
        let mut days = Vec::new();
        let mut degraded = false;
        let mut limited = false;
        for back in (1..=self.settings.history_days as i64).rev() {
            let day = today - Duration::days(back);
            let map = self.day_summaries(scope, day, now).await?;
            degraded |= map.degraded;
            if let Some(s) = map.by_person.get(&person) {
                days.push((day, s.clone()));
            }
        }
        let max = self.settings.history_summary_chars;
        let joined = offline::history_text(&days);
        let text = if joined.chars().count() <= max {
            // Short enough as it is (or nothing at all): no LLM call needed.
            joined
        } else {
            match self.summarize_history_llm(person, name, &days).await {
                Ok(t) => t,
                Err(e) => {
                    self.note_fallback("history_summary", &e);
                    degraded = true;
                    limited = matches!(e, LlmError::Limited);
                    offline::clip_chars(&joined, max)
                }
            }
        };
        let value: Arc<str> = Arc::from(text.as_str());
        if limited {
            // Made offline only because this answer was over its limit: not kept for others.
        } else if degraded {
            self.caches
                .fill(&self.caches.degraded, since, degraded_key, value.clone());
        } else {
            if !days.is_empty()
                && !self
                    .store
                    .put_history_summary(scope, person, end, &text, now, Some(epoch))
                    .await?
            {
                // Made from days something was forgotten of meanwhile: not shown this once
                // (the next answer makes it again from what is left).
                return Ok((Arc::from(""), true));
            }
            self.caches
                .fill(&self.caches.history, since, key, value.clone());
        }
        Ok((value, degraded))
    }

    async fn summarize_history_llm(
        &self,
        person: PersonId,
        name: &str,
        days: &[(NaiveDate, String)],
    ) -> Result<String, LlmError> {
        let days_xml: Vec<String> = days
            .iter()
            .map(|(d, s)| element("day", &[("date", &d.to_string())], s))
            .collect();
        let user = format!(
            "{}\n<days>\n{}\n</days>",
            element("subject", &[("id", &person.to_string())], name),
            days_xml.join("\n")
        );
        let system = fill(
            &self.prompts.history_summary,
            &[(
                "max_chars",
                &self.settings.history_summary_chars.to_string(),
            )],
        );
        let answer: HistoryAnswer = self.ask_json("history_summary", system, user).await?;
        let text = answer.summary.trim();
        if text.is_empty() {
            return Err(LlmError::BadResponse("empty history summary".into()));
        }
        Ok(offline::clip_chars(
            text,
            self.settings.history_summary_chars * 2,
        ))
    }

    /// Offline (no LLM configured): today's and the history's extractive summaries of one
    /// person, straight from their own messages (two indexed queries, nothing cached).
    pub async fn offline_person_summaries(
        &self,
        scope: &Scope,
        person: PersonId,
        name: &str,
        now: DateTime<Utc>,
    ) -> Result<(String, String), MemoryError> {
        let today = day_of(now);
        let (today_start, _) = day_bounds(today);
        let todays = self
            .store
            .author_chatter_in_range(scope, person, today_start, now + Duration::seconds(1), 60)
            .await?;
        let texts: Vec<&str> = todays.iter().map(|m| m.text.as_str()).collect();
        let today_text = offline::extractive_summary(name, &texts, self.settings.day_summary_chars);
        let history_start = today_start - Duration::days(self.settings.history_days as i64);
        let earlier = self
            .store
            .author_chatter_in_range(scope, person, history_start, today_start, 300)
            .await?;
        let mut by_day: BTreeMap<NaiveDate, Vec<&str>> = BTreeMap::new();
        for m in &earlier {
            by_day.entry(day_of(m.sent_at)).or_default().push(&m.text);
        }
        let days: Vec<(NaiveDate, String)> = by_day
            .into_iter()
            .map(|(d, texts)| {
                (
                    d,
                    offline::extractive_summary(name, &texts, self.settings.day_summary_chars),
                )
            })
            .collect();
        Ok((
            today_text,
            offline::history_concat(&days, self.settings.history_summary_chars),
        ))
    }
}
