//! Structured memory entries (the MEMORY.md tier): categories, one entry, and what a write did.
//! Domain types only; the store keeps them and `memory::entries` decides what to write.

use super::{PersonId, Scope};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
/// What an entry is about (the sections of MEMORY.md).
pub enum Category {
    /// Communication style, interests, likes and dislikes.
    Preference,
    /// Role, company, projects, tech stack, professional goals.
    WorkContext,
    /// Opinions, hobbies, side projects, learning goals, personal facts.
    PersonalContext,
    /// What they read, discussed, saved or reacted to.
    ReadingHistory,
}

impl Category {
    /// Every category, in MEMORY.md's order.
    pub const ALL: [Category; 4] = [
        Category::Preference,
        Category::WorkContext,
        Category::PersonalContext,
        Category::ReadingHistory,
    ];

    /// The stored name (`preference`, `work_context`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Preference => "preference",
            Category::WorkContext => "work_context",
            Category::PersonalContext => "personal_context",
            Category::ReadingHistory => "reading_history",
        }
    }

    /// The category a stored name names.
    pub fn parse(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The MEMORY.md section heading.
    pub fn heading(self) -> &'static str {
        match self {
            Category::Preference => "User Preferences",
            Category::WorkContext => "Work Context",
            Category::PersonalContext => "Personal Context",
            Category::ReadingHistory => "Reading History",
        }
    }
}

/// One entry as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The entry's id.
    pub id: i64,
    /// Whose memory it is.
    pub person: PersonId,
    /// Where it may surface.
    pub scope: Scope,
    /// What it is about.
    pub category: Category,
    /// Its key, unique per person, scope and category (`editor`, `city`).
    pub key: String,
    /// What is known.
    pub value: String,
    /// How sure (0 to 1); explicit captures are 1.
    pub confidence: f64,
    /// What wrote it: `message:ID`, `job:extract:DAY`, `tool:NAME`, `import`.
    pub source: String,
    /// Where it was learned, in words ("a private chat", "#general in Rustaceans").
    pub origin: String,
    /// When it was first written.
    pub created_at: DateTime<Utc>,
    /// When its value last changed.
    pub updated_at: DateTime<Utc>,
    /// When it stops being true, if it ever does.
    pub expires_at: Option<DateTime<Utc>>,
}

/// An entry to write: added when (person, scope, category, key) is new, else updated, the
/// old value kept in the history.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    /// Whose memory.
    pub person: PersonId,
    /// Where it may surface.
    pub scope: Scope,
    /// What it is about.
    pub category: Category,
    /// Its key.
    pub key: String,
    /// What is known.
    pub value: String,
    /// How sure (0 to 1).
    pub confidence: f64,
    /// What writes it (see `Entry::source`).
    pub source: String,
    /// Where it was learned, in words.
    pub origin: String,
    /// When.
    pub at: DateTime<Utc>,
    /// When it stops being true, if it ever does.
    pub expires_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// What a write did.
pub enum EntryWrite {
    /// A new entry, with its id.
    Added(i64),
    /// An existing entry got a new value.
    Updated(i64),
    /// Same value already stored: nothing changed.
    Unchanged(i64),
}

impl EntryWrite {
    /// The entry's id, whatever happened.
    pub fn id(self) -> i64 {
        match self {
            EntryWrite::Added(id) | EntryWrite::Updated(id) | EntryWrite::Unchanged(id) => id,
        }
    }
}

/// An earlier value of an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryVersion {
    /// The entry.
    pub entry_id: i64,
    /// The value it had.
    pub value: String,
    /// Its confidence then.
    pub confidence: f64,
    /// What had written it.
    pub source: String,
    /// When it was replaced.
    pub replaced_at: DateTime<Utc>,
    /// What replaced it (a source, or `delete`).
    pub replaced_by: String,
}

/// One appended block of a person's daily notes.
#[derive(Debug, Clone, PartialEq)]
pub struct DailyNote {
    /// The day it is about.
    pub day: chrono::NaiveDate,
    /// Where it may surface.
    pub scope: Scope,
    /// The note.
    pub text: String,
    /// What wrote it (`message:ID`, `job:extract:SCOPE`, `import`): once per source and day.
    pub source: String,
    /// When it was written.
    pub added_at: DateTime<Utc>,
}
