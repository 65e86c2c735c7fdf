//! Copying a deployment between backends (`engram migrate`): the table specs both backends
//! dump and load, canonical row values, and per-table counts and checksums computed the same
//! way on both sides.

use super::{Store, StoreError};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// A canonical column value: what both backends agree a row holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// An integer (booleans as 0/1).
    Int(i64),
    /// Text.
    Text(String),
    /// A float.
    Real(Float),
}

/// A float column value (REAL in SQLite, DOUBLE PRECISION in PostgreSQL: both 8-byte IEEE,
/// so it crosses unchanged); equal when the bits are.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(transparent)]
pub struct Float(pub f64);

impl PartialEq for Float {
    fn eq(&self, other: &Float) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Float {}

/// How a column is stored: booleans are INTEGER 0/1 in SQLite and BOOLEAN in PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// INTEGER / BIGINT.
    Int,
    /// TEXT.
    Text,
    /// A boolean.
    Bool,
    /// A nullable integer.
    NullInt,
    /// A nullable text.
    NullText,
    /// REAL / DOUBLE PRECISION.
    Real,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The tables `engram migrate` copies.
pub enum Table {
    /// `people`
    People,
    /// `identities`
    Identities,
    /// `spaces`
    Spaces,
    /// `messages`
    Messages,
    /// `facts`
    Facts,
    /// `fact_versions`
    FactVersions,
    /// `day_summaries`
    DaySummaries,
    /// `history_summaries`
    HistorySummaries,
    /// `job_runs`
    JobRuns,
    /// `memory_entries`
    MemoryEntries,
    /// `memory_entry_history`
    MemoryEntryHistory,
    /// `daily_notes`
    DailyNotes,
    /// `memory_settings`
    MemorySettings,
    /// `hearsay`
    Hearsay,
    /// `audit_log`
    AuditLog,
    /// `llm_usage_days`
    LlmUsageDays,
    /// `attachments`
    Attachments,
    /// `message_attachments`
    MessageAttachments,
    /// `deleted_messages`: what the platform deleted stays out after a move.
    DeletedMessages,
    /// `forgotten_messages`: what was forgotten on request stays out after a move.
    ForgottenMessages,
    /// `channel_cursors`: a Discord catch-up after the move reads only what is new.
    ChannelCursors,
}

/// A table's name and columns, as both backends hold them.
pub struct TableSpec {
    /// The table's name.
    pub name: &'static str,
    /// Its columns, each with how it is stored.
    pub columns: &'static [(&'static str, Kind)],
    /// ORDER BY for a stable dump.
    pub order_by: &'static str,
    /// Whether `id` is generated (its sequence is moved after a load).
    pub has_identity: bool,
}

use Kind::*;

impl Table {
    /// In dependency order: loading in this order satisfies the foreign keys.
    pub const ALL: [Table; 21] = [
        Table::People,
        Table::Identities,
        Table::Spaces,
        Table::Messages,
        Table::Facts,
        Table::FactVersions,
        Table::DaySummaries,
        Table::HistorySummaries,
        Table::JobRuns,
        Table::MemoryEntries,
        Table::MemoryEntryHistory,
        Table::DailyNotes,
        Table::MemorySettings,
        Table::Hearsay,
        Table::AuditLog,
        Table::LlmUsageDays,
        Table::Attachments,
        Table::MessageAttachments,
        Table::DeletedMessages,
        Table::ForgottenMessages,
        Table::ChannelCursors,
    ];

    /// The table's name and columns.
    // Over 80 lines: one entry per table of the schema, a table kept whole so a new column
    // is added next to its neighbours.
    pub fn spec(self) -> TableSpec {
        match self {
            Table::People => TableSpec {
                name: "people",
                columns: &[("id", Int), ("display_name", Text), ("created_at", Int)],
                order_by: "id",
                has_identity: true,
            },
            Table::Identities => TableSpec {
                name: "identities",
                columns: &[
                    ("platform", Text),
                    ("external_id", Text),
                    ("person_id", Int),
                    ("display_name", Text),
                    ("created_at", Int),
                    ("own_person_id", NullInt),
                    ("username", NullText),
                ],
                order_by: "platform, external_id",
                has_identity: false,
            },
            Table::Spaces => TableSpec {
                name: "spaces",
                columns: &[
                    ("id", Int),
                    ("platform", Text),
                    ("external_id", Text),
                    ("kind", Text),
                    ("title", Text),
                    ("created_at", Int),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::Messages => TableSpec {
                name: "messages",
                columns: &[
                    ("id", Int),
                    ("space_id", Int),
                    ("channel", Text),
                    ("scope", Text),
                    ("privacy", Text),
                    ("author_id", Int),
                    ("is_bot", Bool),
                    ("is_command", Bool),
                    ("external_id", Text),
                    ("reply_to", NullText),
                    ("text", Text),
                    ("sent_at", Int),
                    ("withheld", Bool),
                    ("attachment_of", NullInt),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::Facts => TableSpec {
                name: "facts",
                columns: &[
                    ("person_id", Int),
                    ("scope", Text),
                    ("text", Text),
                    ("version", Int),
                    ("updated_at", Int),
                ],
                order_by: "person_id, scope",
                has_identity: false,
            },
            Table::FactVersions => TableSpec {
                name: "fact_versions",
                columns: &[
                    ("id", Int),
                    ("person_id", Int),
                    ("scope", Text),
                    ("version", Int),
                    ("op", Text),
                    ("request", Text),
                    ("text", Text),
                    ("method", Text),
                    ("changed_by", NullInt),
                    ("source_message_id", NullInt),
                    ("created_at", Int),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::DaySummaries => TableSpec {
                name: "day_summaries",
                columns: &[
                    ("scope", Text),
                    ("day", Text),
                    ("summaries", Text),
                    ("through_message_id", Int),
                    ("message_count", Int),
                    ("is_final", Bool),
                    ("computed_at", Int),
                ],
                order_by: "scope, day",
                has_identity: false,
            },
            Table::HistorySummaries => TableSpec {
                name: "history_summaries",
                columns: &[
                    ("scope", Text),
                    ("person_id", Int),
                    ("end_day", Text),
                    ("summary", Text),
                    ("computed_at", Int),
                ],
                order_by: "scope, person_id, end_day",
                has_identity: false,
            },
            Table::JobRuns => TableSpec {
                name: "job_runs",
                columns: &[
                    ("job", Text),
                    ("run_key", Text),
                    ("holder", Text),
                    ("status", Text),
                    ("lease_until", Int),
                    ("attempts", Int),
                    ("started_at", Int),
                    ("finished_at", NullInt),
                    ("detail", Text),
                ],
                order_by: "job, run_key",
                has_identity: false,
            },
            Table::MemoryEntries => TableSpec {
                name: "memory_entries",
                columns: &[
                    ("id", Int),
                    ("person_id", Int),
                    ("scope", Text),
                    ("category", Text),
                    ("key", Text),
                    ("value", Text),
                    ("confidence", Real),
                    ("source", Text),
                    ("origin", Text),
                    ("created_at", Int),
                    ("updated_at", Int),
                    ("expires_at", NullInt),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::MemoryEntryHistory => TableSpec {
                name: "memory_entry_history",
                columns: &[
                    ("id", Int),
                    ("entry_id", Int),
                    ("person_id", Int),
                    ("value", Text),
                    ("confidence", Real),
                    ("source", Text),
                    ("replaced_at", Int),
                    ("replaced_by", Text),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::DailyNotes => TableSpec {
                name: "daily_notes",
                columns: &[
                    ("id", Int),
                    ("person_id", Int),
                    ("day", Text),
                    ("scope", Text),
                    ("text", Text),
                    ("source", Text),
                    ("added_at", Int),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::MemorySettings => TableSpec {
                name: "memory_settings",
                columns: &[
                    ("person_id", Int),
                    ("paused", Bool),
                    ("updated_at", Int),
                    ("cleared_at", NullInt),
                ],
                order_by: "person_id",
                has_identity: false,
            },
            Table::Hearsay => TableSpec {
                name: "hearsay",
                columns: &[
                    ("id", Int),
                    ("subject_id", Int),
                    ("scope", Text),
                    ("told_by", Int),
                    ("text", Text),
                    ("source_message_id", NullInt),
                    ("created_at", Int),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::Attachments => TableSpec {
                name: "attachments",
                columns: &[
                    ("id", Int),
                    ("scope", Text),
                    ("sha256", Text),
                    ("kind", Text),
                    ("name", Text),
                    ("mime", Text),
                    ("size", Int),
                    ("created_at", Int),
                    ("surrogate", NullText),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::MessageAttachments => TableSpec {
                name: "message_attachments",
                columns: &[("message_id", Int), ("attachment_id", Int)],
                order_by: "message_id, attachment_id",
                has_identity: false,
            },
            Table::AuditLog => TableSpec {
                name: "audit_log",
                columns: &[
                    ("id", Int),
                    ("at", Int),
                    ("actor_id", NullInt),
                    ("actor", Text),
                    ("action", Text),
                    ("subject_id", NullInt),
                    ("scope", NullText),
                    ("message_id", NullInt),
                    ("count", Int),
                ],
                order_by: "id",
                has_identity: true,
            },
            Table::LlmUsageDays => TableSpec {
                name: "llm_usage_days",
                columns: &[
                    ("day", Text),
                    ("calls", Int),
                    ("failures", Int),
                    ("prompt_tokens", Int),
                    ("completion_tokens", Int),
                ],
                order_by: "day",
                has_identity: false,
            },
            Table::DeletedMessages => TableSpec {
                name: "deleted_messages",
                columns: &[
                    ("platform", Text),
                    ("space_external_id", Text),
                    ("channel", Text),
                    ("external_id", Text),
                    ("deleted_at", Int),
                ],
                order_by: "platform, space_external_id, channel, external_id",
                has_identity: false,
            },
            Table::ForgottenMessages => TableSpec {
                name: "forgotten_messages",
                columns: &[("key", Text), ("forgotten_at", Int)],
                order_by: "key",
                has_identity: false,
            },
            Table::ChannelCursors => TableSpec {
                name: "channel_cursors",
                columns: &[
                    ("platform", Text),
                    ("space_external_id", Text),
                    ("channel", Text),
                    ("seen_through", Int),
                    ("seen_at", Int),
                ],
                order_by: "platform, space_external_id, channel",
                has_identity: false,
            },
        }
    }

    /// The table's name.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

/// Rows and a SHA-256 over the canonical rows in key order: equal on both sides iff the
/// tables hold the same data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TableSummary {
    /// The table's name.
    pub table: &'static str,
    /// Rows in it.
    pub rows: u64,
    /// SHA-256 of its canonical rows, in key order.
    pub checksum: String,
}

const PAGE: i64 = 2000;

/// Counts and checksums every table of `store`.
pub async fn summarize(store: &dyn Store) -> Result<Vec<TableSummary>, StoreError> {
    let mut out = Vec::new();
    for table in Table::ALL {
        let mut hasher = Sha256::new();
        let mut rows = 0u64;
        let mut offset = 0;
        loop {
            let page = store.dump_rows(table, offset, PAGE).await?;
            for row in &page {
                hasher.update(serde_json::to_vec(row).expect("values serialize"));
                hasher.update(b"\n");
            }
            rows += page.len() as u64;
            if (page.len() as i64) < PAGE {
                break;
            }
            offset += PAGE;
        }
        out.push(TableSummary {
            table: table.name(),
            rows,
            checksum: hex::encode(hasher.finalize()),
        });
    }
    Ok(out)
}

/// Copies every table from `from` to `to` (rows already there are kept), calling `progress`
/// with (table, rows copied so far) after each page.
pub async fn copy_all(
    from: &dyn Store,
    to: &dyn Store,
    mut progress: impl FnMut(&str, u64),
) -> Result<u64, StoreError> {
    let mut added = 0;
    for table in Table::ALL {
        let mut offset = 0;
        let mut seen = 0u64;
        loop {
            let page = from.dump_rows(table, offset, PAGE).await?;
            if !page.is_empty() {
                added += to.load_rows(table, &page).await?;
            }
            seen += page.len() as u64;
            progress(table.name(), seen);
            if (page.len() as i64) < PAGE {
                break;
            }
            offset += PAGE;
        }
    }
    to.finish_load().await?;
    Ok(added)
}
