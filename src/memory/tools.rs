//! The memory tool-calling API, in the memory tier: the six
//! tools as OpenAI tool schemas, and the executor that runs a model's tool call for the person
//! and place the code says it is for. The model never names whose memory it touches: the
//! caller is fixed by the executor, and anything outside the caller's memory visible in that
//! place is an error result, never data. When staging (`ToolExecutor::staging`, as for
//! replies), a call that deletes or rewrites an existing entry is not done but kept for the
//! person to confirm: what others wrote in the conversation can sway a model, not the memory.

use crate::domain::{Category, Clock, DailyNote, Entry, NewEntry, PersonId, Place};
use crate::llm::{ChatMessage, ChatModel, ChatRequest, LlmError};
use crate::memory::entries::{EntryBook, never_kept, origin, rank_entries, render_memory_md};
use crate::store::Store;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::Arc;

/// The tools as offered to the model, and what a staged call's result tells it: the
/// `prompts/memory_tools.json` of this build (model-facing text lives in `prompts/`).
struct ToolTexts {
    tools: Vec<Value>,
    awaiting_confirmation: String,
}

static TOOL_TEXTS: std::sync::LazyLock<ToolTexts> = std::sync::LazyLock::new(|| {
    let file: Value = serde_json::from_str(crate::llm::prompts::MEMORY_TOOLS)
        .expect("prompts/memory_tools.json is JSON (checked by a test)");
    ToolTexts {
        tools: file["tools"].as_array().cloned().unwrap_or_default(),
        awaiting_confirmation: file["awaiting_confirmation"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
});

/// The six tools as OpenAI `tools` entries.
pub fn tool_schemas() -> Vec<Value> {
    TOOL_TEXTS.tools.clone()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    key: String,
    value: String,
    category: Category,
    durability: String,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    expires_at: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    category: Category,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    category: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    key: String,
    value: String,
    #[serde(default)]
    category: Option<Category>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteArgs {
    key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextArgs {
    topic: String,
    #[serde(default)]
    max_tokens: Option<usize>,
}

/// Whose memory a tool call acts on, and where: set by the code that runs the model.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Whose memory.
    pub person: PersonId,
    /// Where the conversation is: what the tools may see and write.
    pub place: Place,
}

/// Runs the memory tools a model calls (search, write, rewrite, delete entries; notes) for
/// one caller; in a group, changes wait for the person's confirmation.
pub struct ToolExecutor {
    store: Arc<dyn Store>,
    book: Arc<EntryBook>,
    clock: Arc<dyn Clock>,
    durable: f64,
    max_words: usize,
    /// When set, deletions and rewrites wait here for the person's confirmation.
    staged: Option<std::sync::Mutex<Vec<StagedChange>>>,
}

/// A change to an existing entry that a model asked for, waiting for the person's "yes".
#[derive(Debug, Clone, PartialEq)]
pub enum StagedChange {
    /// An entry to delete.
    Delete {
        /// The entry.
        id: i64,
        /// Its value, to show.
        value: String,
    },
    /// A new entry (in a group, where others' words reach the model too).
    Write {
        /// The entry.
        entry: NewEntry,
    },
    /// A daily-note line (likewise).
    Note {
        /// The note.
        note: DailyNote,
    },
    /// An entry rewritten.
    Rewrite {
        /// The entry it replaces, and that entry's category (a new category moves it).
        replaces: i64,
        /// Its category before.
        old_category: Category,
        /// Its value before.
        old_value: String,
        /// The new entry.
        entry: NewEntry,
    },
}

impl StagedChange {
    /// `entry` in place of `old`.
    fn rewrite(old: &Entry, entry: &NewEntry) -> StagedChange {
        StagedChange::Rewrite {
            replaces: old.id,
            old_category: old.category,
            old_value: old.value.clone(),
            entry: entry.clone(),
        }
    }

    /// In words, for the question to the person.
    pub fn describe(&self) -> String {
        match self {
            StagedChange::Delete { value, .. } => format!("forget \"{value}\""),
            StagedChange::Write { entry } => format!("remember \"{}\"", entry.value),
            StagedChange::Note { note } => format!(
                "note \"{}\"",
                note.text
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim_start_matches("- ")
            ),
            StagedChange::Rewrite {
                old_value, entry, ..
            } => format!("change \"{old_value}\" to \"{}\"", entry.value),
        }
    }
}

fn error(message: impl Into<String>) -> Value {
    json!({ "error": message.into() })
}

/// A store failure, as the model sees it: no database detail (the model may repeat it in a
/// chat); the log has it.
fn unavailable(e: impl std::fmt::Display) -> Value {
    tracing::warn!(error = %e, "a memory tool failed");
    error("memory is unavailable right now; try later")
}

fn args<T: DeserializeOwned>(arguments: &str) -> Result<T, Value> {
    serde_json::from_str(arguments).map_err(|e| {
        error(format!(
            "invalid arguments ({e}); this tool acts only on the current user's memory"
        ))
    })
}

fn show(e: &Entry) -> Value {
    json!({"key": e.key, "value": e.value, "category": e.category.as_str(),
           "confidence": e.confidence, "updated_at": e.updated_at.to_rfc3339()})
}

/// A copy over the same store and entries: a staging executor's copy stages too (with a list
/// of its own), so no copy ever does at once what waits for a person's "yes".
impl Clone for ToolExecutor {
    fn clone(&self) -> ToolExecutor {
        ToolExecutor {
            store: self.store.clone(),
            book: self.book.clone(),
            clock: self.clock.clone(),
            durable: self.durable,
            max_words: self.max_words,
            staged: self
                .staged
                .as_ref()
                .map(|_| std::sync::Mutex::new(Vec::new())),
        }
    }
}

impl ToolExecutor {
    /// The tools over `store` and `book`; entries below `durable` confidence go to the daily
    /// notes, and a MEMORY.md shows at most `max_words` words.
    pub fn new(
        store: Arc<dyn Store>,
        book: Arc<EntryBook>,
        clock: Arc<dyn Clock>,
        durable: f64,
        max_words: usize,
    ) -> ToolExecutor {
        ToolExecutor {
            store,
            book,
            clock,
            durable,
            max_words,
            staged: None,
        }
    }

    /// The same tools for one reply, keeping deletions and rewrites for confirmation instead
    /// of doing them (`take_staged`).
    pub fn staging(&self) -> ToolExecutor {
        ToolExecutor {
            staged: Some(std::sync::Mutex::new(Vec::new())),
            ..self.clone()
        }
    }

    /// The changes kept for confirmation so far.
    pub fn take_staged(&self) -> Vec<StagedChange> {
        self.staged
            .as_ref()
            .map(|s| std::mem::take(&mut *s.lock().expect("staged changes")))
            .unwrap_or_default()
    }

    /// Keeps `change` for confirmation when staging; the tool result says so.
    fn stage(&self, change: StagedChange) -> Option<Value> {
        let staged = self.staged.as_ref()?;
        let what = change.describe();
        staged.lock().expect("staged changes").push(change);
        Some(
            json!({"ok": false, "status": "awaiting the user's confirmation",
            "note": TOOL_TEXTS.awaiting_confirmation.replace("{change}", &what)}),
        )
    }

    /// Applies changes `person` confirmed; returns how many were applied, or `None` when
    /// something of theirs was forgotten or cleared since `read_epoch` (their `forget_epoch`
    /// when the changes were proposed): then nothing is applied. All of it is one
    /// transaction that checks that epoch (`Entries::apply_confirmed`), so a clear in
    /// another process cannot slip between the check and the writes.
    pub async fn apply_staged(
        &self,
        person: PersonId,
        changes: &[StagedChange],
        read_epoch: i64,
    ) -> Result<Option<usize>, crate::store::StoreError> {
        let (mut deletions, mut replaced, mut notes, mut writes) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for change in changes {
            match change {
                StagedChange::Delete { id, .. } => deletions.push(*id),
                StagedChange::Write { entry } if entry.person == person => {
                    writes.push(entry.clone())
                }
                StagedChange::Note { note } => notes.push(note.clone()),
                StagedChange::Rewrite {
                    replaces,
                    old_category,
                    entry,
                    ..
                } if entry.person == person => {
                    // A new category moves it: the entry under the old one goes, wherever it
                    // is now.
                    if *old_category != entry.category {
                        replaced.push(*replaces);
                    }
                    writes.push(entry.clone());
                }
                StagedChange::Write { .. } | StagedChange::Rewrite { .. } => {}
            }
        }
        self.store
            .apply_confirmed(
                person,
                &deletions,
                &replaced,
                &notes,
                &writes,
                read_epoch,
                self.clock.now(),
            )
            .await
    }

    /// Runs one tool call for `caller`. The result is JSON for the model: data, or
    /// `{"error": …}` (bad arguments, another person's key, an unknown tool). A store failure
    /// is an error result too, and the model is told to try later.
    pub async fn execute(&self, caller: &Caller, name: &str, arguments: &str) -> Value {
        let result = match name {
            "write_memory" => self.write(caller, arguments).await,
            "read_memory" => self.read(caller, arguments).await,
            "search_memory" => self.search(caller, arguments).await,
            "update_memory" => self.update(caller, arguments).await,
            "delete_memory" => self.delete(caller, arguments).await,
            "get_memory_context" => self.context(caller, arguments).await,
            other => Err(error(format!("unknown tool {other:?}"))),
        };
        // A change made (not one waiting for the person's "yes": that is audited when
        // confirmed).
        if matches!(name, "write_memory" | "update_memory" | "delete_memory")
            && matches!(&result, Ok(v) if v["ok"] == json!(true))
        {
            let by = super::audit::By {
                actor: Some(caller.person),
                label: format!("tool:{name}"),
                scope: Some(caller.place.home_scope()),
                message: None,
            };
            let action = super::audit::Action::ModelChange;
            super::audit::record(&*self.store, &*self.clock, &by, action, caller.person, 1).await;
        }
        result.unwrap_or_else(|e| e)
    }

    async fn visible(&self, caller: &Caller) -> Result<Vec<Entry>, Value> {
        self.book
            .visible(caller.person, &caller.place)
            .await
            .map_err(unavailable)
    }

    /// The caller's entry with `key` that may be seen here; other people's keys are simply
    /// not there.
    async fn own(&self, caller: &Caller, key: &str) -> Result<Entry, Value> {
        self.visible(caller)
            .await?
            .into_iter()
            .find(|e| e.key == key)
            .ok_or_else(|| error(format!("no entry {key:?} in this user's memory here")))
    }

    async fn write(&self, caller: &Caller, arguments: &str) -> Result<Value, Value> {
        let a: WriteArgs = args(arguments)?;
        let value = a.value.trim();
        if value.is_empty() || a.key.trim().is_empty() || value.chars().count() > 1000 {
            return Err(error(
                "key and value must be non-empty (value at most 1000 characters)",
            ));
        }
        if never_kept(value).is_some() {
            return Err(error("code and secrets are never stored in memory"));
        }
        let confidence = a.confidence.unwrap_or(0.8);
        if !(0.0..=1.0).contains(&confidence) {
            return Err(error("confidence must be within 0..1"));
        }
        let now = self.clock.now();
        let expires_at = match a.expires_at.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(parse_expiry(text).filter(|t| *t > now).ok_or_else(|| {
                error("expires_at must be a future date (YYYY-MM-DD or RFC 3339)")
            })?),
        };
        self.not_paused(caller).await?;
        let source = format!("tool:write_memory:{}", a.source.unwrap_or_default());
        // In a group, other people's words reach the model too: what it writes there waits
        // for the speaker's "yes".
        let in_group = caller.place.privacy != crate::domain::Privacy::Dm;
        if a.durability == "daily" || confidence < self.durable {
            let note = DailyNote {
                day: now.date_naive(),
                scope: caller.place.home_scope(),
                text: format!("## Notes\n- {value}"),
                source: format!("tool:{}:{}", a.key.trim(), now.timestamp_millis()),
                added_at: now,
            };
            if in_group && let Some(pending) = self.stage(StagedChange::Note { note: note.clone() })
            {
                return Ok(pending);
            }
            let noted = self
                .store
                .append_daily_note(caller.person, &note)
                .await
                .map_err(unavailable)?;
            return Ok(json!({"ok": true, "written_to": "daily_notes", "new": noted}));
        }
        let entry = NewEntry {
            person: caller.person,
            scope: caller.place.home_scope(),
            category: a.category,
            key: a.key.trim().to_string(),
            value: value.to_string(),
            confidence,
            source,
            origin: origin(&caller.place.home_scope()),
            at: now,
            expires_at,
        };
        let existing =
            self.visible(caller).await?.into_iter().find(|e| {
                e.key == entry.key && e.category == entry.category && e.scope == entry.scope
            });
        if let Some(old) = existing.as_ref().filter(|e| e.value != entry.value)
            && let Some(pending) = self.stage(StagedChange::rewrite(old, &entry))
        {
            return Ok(pending);
        }
        if in_group
            && existing.is_none()
            && let Some(pending) = self.stage(StagedChange::Write {
                entry: entry.clone(),
            })
        {
            return Ok(pending);
        }
        let w = self.store.write_entry(&entry).await.map_err(unavailable)?;
        Ok(json!({"ok": true, "written_to": "MEMORY.md", "result": format!("{w:?}")}))
    }

    /// A person who paused their memory gets nothing new written about them.
    async fn not_paused(&self, caller: &Caller) -> Result<(), Value> {
        match self.store.memory_paused(caller.person).await {
            Ok(false) => Ok(()),
            Ok(true) => Err(error(
                "the user has paused their memory: nothing new may be written",
            )),
            Err(e) => Err(unavailable(e)),
        }
    }

    async fn read(&self, caller: &Caller, arguments: &str) -> Result<Value, Value> {
        let a: ReadArgs = args(arguments)?;
        let entries: Vec<Value> = self
            .visible(caller)
            .await?
            .iter()
            .filter(|e| e.category == a.category)
            .take(a.limit.unwrap_or(20).min(100))
            .map(show)
            .collect();
        Ok(json!({ "entries": entries }))
    }

    async fn search(&self, caller: &Caller, arguments: &str) -> Result<Value, Value> {
        let a: SearchArgs = args(arguments)?;
        let filter = match a.category.as_deref() {
            None | Some("all") => None,
            Some(c) => {
                Some(Category::parse(c).ok_or_else(|| error(format!("unknown category {c:?}")))?)
            }
        };
        let entries: Vec<Entry> = self
            .visible(caller)
            .await?
            .into_iter()
            .filter(|e| filter.is_none_or(|c| e.category == c))
            .collect();
        let found: Vec<Value> = rank_entries(entries, &a.query, a.limit.unwrap_or(5).min(50))
            .iter()
            .map(|(e, score)| {
                let mut v = show(e);
                v["score"] = json!(score);
                v
            })
            .collect();
        Ok(json!({ "results": found }))
    }

    async fn update(&self, caller: &Caller, arguments: &str) -> Result<Value, Value> {
        let a: UpdateArgs = args(arguments)?;
        let old = self.own(caller, a.key.trim()).await?;
        self.not_paused(caller).await?;
        let value = a.value.trim();
        if value.is_empty() || never_kept(value).is_some() {
            return Err(error(
                "the new value must be non-empty natural language, without code or secrets",
            ));
        }
        let category = a.category.unwrap_or(old.category);
        let entry = NewEntry {
            person: caller.person,
            scope: old.scope.clone(),
            category,
            key: old.key.clone(),
            value: value.to_string(),
            confidence: old.confidence,
            source: "tool:update_memory".into(),
            origin: old.origin.clone(),
            at: self.clock.now(),
            expires_at: old.expires_at,
        };
        if (old.value != entry.value || category != old.category)
            && let Some(pending) = self.stage(StagedChange::rewrite(&old, &entry))
        {
            return Ok(pending);
        }
        if category != old.category {
            self.store
                .begin_forgetting(caller.person, self.clock.now())
                .await
                .map_err(unavailable)?;
            self.store
                .delete_entries(caller.person, &[old.id])
                .await
                .map_err(unavailable)?;
        }
        let w = self.store.write_entry(&entry).await.map_err(unavailable)?;
        Ok(json!({"ok": true, "result": format!("{w:?}")}))
    }

    async fn delete(&self, caller: &Caller, arguments: &str) -> Result<Value, Value> {
        let a: DeleteArgs = args(arguments)?;
        let old = self.own(caller, a.key.trim()).await?;
        if let Some(pending) = self.stage(StagedChange::Delete {
            id: old.id,
            value: old.value.clone(),
        }) {
            return Ok(pending);
        }
        // Counted first: a job's answer that would write it again stays out.
        self.store
            .begin_forgetting(caller.person, self.clock.now())
            .await
            .map_err(unavailable)?;
        let n = self
            .store
            .delete_entries(caller.person, &[old.id])
            .await
            .map_err(unavailable)?;
        Ok(json!({"ok": true, "deleted": n}))
    }

    async fn context(&self, caller: &Caller, arguments: &str) -> Result<Value, Value> {
        let a: ContextArgs = args(arguments)?;
        let entries = self.visible(caller).await?;
        let on_topic: Vec<String> = rank_entries(entries.clone(), &a.topic, 10)
            .into_iter()
            .map(|(e, _)| format!("- {}", e.value))
            .collect();
        let mut text = String::new();
        if !on_topic.is_empty() {
            text.push_str(&format!(
                "## About {}\n{}\n\n",
                a.topic.trim(),
                on_topic.join("\n")
            ));
        }
        text.push_str(&render_memory_md(&entries, self.max_words));
        // About four characters per token; whole lines only.
        let budget = a.max_tokens.unwrap_or(1500).clamp(50, 8000) * 4;
        let mut out = String::new();
        for line in text.lines() {
            if out.len() + line.len() + 1 > budget {
                break;
            }
            out.push_str(line);
            out.push('\n');
        }
        Ok(json!({ "context": out }))
    }
}

/// An expiry given as a date (the end of that day, UTC) or an RFC 3339 time.
fn parse_expiry(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    if let Ok(day) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return day.and_hms_opt(23, 59, 59).map(|t| t.and_utc());
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// A conversation with the memory tools: the model's final answer and each call it made
/// (tool, arguments, result).
#[derive(Debug, Clone)]
pub struct ToolConversation {
    /// The model's final answer.
    pub answer: String,
    /// Each call: tool, arguments, result.
    pub calls: Vec<(String, String, Value)>,
}

/// Runs `request` with the memory tools offered: each call the model makes is executed for
/// `caller` (never for whoever the model names) and its result sent back, until the model
/// answers. More than `max_rounds` rounds of calls is a bad answer.
pub async fn run_with_tools(
    llm: &dyn ChatModel,
    mut request: ChatRequest,
    tools: &ToolExecutor,
    caller: &Caller,
    max_rounds: usize,
) -> Result<ToolConversation, LlmError> {
    request.tools = tool_schemas();
    let mut calls = Vec::new();
    for round in 0..=max_rounds {
        let response = llm.complete(&request).await?;
        if response.tool_calls.is_empty() {
            return Ok(ToolConversation {
                answer: response.content,
                calls,
            });
        }
        if round == max_rounds {
            break;
        }
        request.messages.push(ChatMessage::assistant_calls(
            response.content,
            response.tool_calls.clone(),
        ));
        for call in response.tool_calls {
            let result = tools
                .execute(caller, &call.function.name, &call.function.arguments)
                .await;
            request
                .messages
                .push(ChatMessage::tool_result(&call.id, result.to_string()));
            calls.push((call.function.name, call.function.arguments, result));
        }
    }
    Err(LlmError::BadResponse(format!(
        "the model kept calling tools after {max_rounds} rounds"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_file_offers_the_six_tools_with_this_builds_categories() {
        let names: Vec<&str> = TOOL_TEXTS
            .tools
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "write_memory",
                "read_memory",
                "search_memory",
                "update_memory",
                "delete_memory",
                "get_memory_context"
            ]
        );
        let categories: Vec<&str> = crate::domain::Category::ALL
            .iter()
            .map(|c| c.as_str())
            .collect();
        let mut enums = 0;
        for tool in &TOOL_TEXTS.tools {
            let category = &tool["function"]["parameters"]["properties"]["category"]["enum"];
            if let Some(listed) = category.as_array() {
                let listed: Vec<&str> = listed.iter().filter_map(Value::as_str).collect();
                let expected: Vec<&str> = if tool["function"]["name"] == "search_memory" {
                    categories.iter().copied().chain(["all"]).collect()
                } else {
                    categories.clone()
                };
                assert_eq!(listed, expected, "{tool}");
                enums += 1;
            }
        }
        assert_eq!(enums, 4);
        assert!(TOOL_TEXTS.awaiting_confirmation.contains("{change}"));
    }
}
