//! Structured memory entries (the MEMORY.md tier): categories, one entry, and what a write did.
//! Domain types only; the store keeps them and `memory::entries` decides what to write.

// Public items here are not all documented yet (issue 16, point 6); the list of such
// files shrinks as each is documented: `grep -rl "not all documented" src`.
#![allow(missing_docs)]

use super::{PersonId, Scope};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Preference,
    WorkContext,
    PersonalContext,
    ReadingHistory,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Preference,
        Category::WorkContext,
        Category::PersonalContext,
        Category::ReadingHistory,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Preference => "preference",
            Category::WorkContext => "work_context",
            Category::PersonalContext => "personal_context",
            Category::ReadingHistory => "reading_history",
        }
    }

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
    pub id: i64,
    pub person: PersonId,
    pub scope: Scope,
    pub category: Category,
    pub key: String,
    pub value: String,
    pub confidence: f64,
    /// What wrote it: `message:ID`, `job:extract:DAY`, `tool:NAME`, `import`.
    pub source: String,
    /// Where it was learned, in words ("a private chat", "#general in Rustaceans").
    pub origin: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// An entry to write: added when (person, scope, category, key) is new, else updated, the
/// old value kept in the history.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    pub person: PersonId,
    pub scope: Scope,
    pub category: Category,
    pub key: String,
    pub value: String,
    pub confidence: f64,
    pub source: String,
    pub origin: String,
    pub at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryWrite {
    Added(i64),
    Updated(i64),
    /// Same value already stored: nothing changed.
    Unchanged(i64),
}

impl EntryWrite {
    pub fn id(self) -> i64 {
        match self {
            EntryWrite::Added(id) | EntryWrite::Updated(id) | EntryWrite::Unchanged(id) => id,
        }
    }
}

/// An earlier value of an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryVersion {
    pub entry_id: i64,
    pub value: String,
    pub confidence: f64,
    pub source: String,
    pub replaced_at: DateTime<Utc>,
    pub replaced_by: String,
}

/// One appended block of a person's daily notes.
#[derive(Debug, Clone, PartialEq)]
pub struct DailyNote {
    pub day: chrono::NaiveDate,
    pub scope: Scope,
    pub text: String,
    /// What wrote it (`message:ID`, `job:extract:SCOPE`, `import`): once per source and day.
    pub source: String,
    pub added_at: DateTime<Utc>,
}
