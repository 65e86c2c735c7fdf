//! Conversions every concern of the store shares: times as Unix milliseconds and scope keys.

use super::{StoreError, StoreResult};
use crate::domain::Scope;
use chrono::{DateTime, Utc};

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
