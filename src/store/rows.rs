//! Conversions both backends share: times as Unix milliseconds, scope keys, and the row shapes
//! of fact history, day summaries and job runs. SQL stays in each backend; what a row means is
//! decided once, here.

use super::{Hearsay, StoreError, StoreResult};
use crate::domain::{MessageId, PersonId, Scope};
use chrono::{DateTime, NaiveDate, Utc};

pub fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub fn from_ms(v: i64) -> StoreResult<DateTime<Utc>> {
    DateTime::from_timestamp_millis(v)
        .ok_or_else(|| StoreError::Corrupt(format!("timestamp {v} out of range")))
}

pub fn parse_scope(key: &str) -> StoreResult<Scope> {
    Scope::parse(key).ok_or_else(|| StoreError::Corrupt(format!("unknown scope {key:?}")))
}

/// id, person_id, scope, category, key, value, confidence, source, origin, created_at,
/// updated_at, expires_at
pub type EntryRow = (
    i64,
    i64,
    String,
    String,
    String,
    String,
    f64,
    String,
    String,
    i64,
    i64,
    Option<i64>,
);

pub const ENTRY_COLUMNS: &str = "id, person_id, scope, category, key, value, confidence, source, origin, created_at, updated_at, expires_at";

pub fn entries(rows: Vec<EntryRow>) -> StoreResult<Vec<crate::domain::Entry>> {
    rows.into_iter()
        .map(
            |(id, person, scope, category, key, value, confidence, source, origin, c, u, e)| {
                Ok(crate::domain::Entry {
                    id,
                    person: PersonId(person),
                    scope: parse_scope(&scope)?,
                    category: crate::domain::Category::parse(&category).ok_or_else(|| {
                        StoreError::Corrupt(format!("unknown entry category {category:?}"))
                    })?,
                    key,
                    value,
                    confidence,
                    source,
                    origin,
                    created_at: from_ms(c)?,
                    updated_at: from_ms(u)?,
                    expires_at: e.map(from_ms).transpose()?,
                })
            },
        )
        .collect()
}

/// entry_id, value, confidence, source, replaced_at, replaced_by
pub type EntryVersionRow = (i64, String, f64, String, i64, String);

pub fn entry_versions(rows: Vec<EntryVersionRow>) -> StoreResult<Vec<crate::domain::EntryVersion>> {
    rows.into_iter()
        .map(|(entry_id, value, confidence, source, at, by)| {
            Ok(crate::domain::EntryVersion {
                entry_id,
                value,
                confidence,
                source,
                replaced_at: from_ms(at)?,
                replaced_by: by,
            })
        })
        .collect()
}

/// day, scope, text, source, added_at
pub type DailyNoteRow = (String, String, String, String, i64);

pub fn daily_notes(rows: Vec<DailyNoteRow>) -> StoreResult<Vec<crate::domain::DailyNote>> {
    rows.into_iter()
        .map(|(day, scope, text, source, at)| {
            Ok(crate::domain::DailyNote {
                day: NaiveDate::parse_from_str(&day, "%Y-%m-%d")
                    .map_err(|e| StoreError::Corrupt(format!("daily note day {day:?}: {e}")))?,
                scope: parse_scope(&scope)?,
                text,
                source,
                added_at: from_ms(at)?,
            })
        })
        .collect()
}

/// id, subject_id, scope, told_by, teller's name, text, source_message_id, created_at
pub type HearsayRow = (i64, i64, String, i64, String, String, Option<i64>, i64);

pub const HEARSAY_COLUMNS: &str = "h.id, h.subject_id, h.scope, h.told_by, p.display_name, h.text, h.source_message_id, h.created_at";

pub fn hearsay(rows: Vec<HearsayRow>) -> StoreResult<Vec<Hearsay>> {
    rows.into_iter()
        .map(|(id, subject, scope, by, name, text, source, at)| {
            Ok(Hearsay {
                id,
                subject: PersonId(subject),
                scope: parse_scope(&scope)?,
                told_by: PersonId(by),
                told_by_name: name,
                text,
                source_message: source.map(MessageId),
                at: from_ms(at)?,
            })
        })
        .collect()
}
