//! What the bot remembers about each person, besides the facts text: MEMORY.md entries and
//! their earlier values, daily notes, what others said about them (hearsay), the extraction
//! runs that write them, and clearing or pruning all of it.

use super::rows::{from_ms, ms, parse_scope};
use super::{Change, StoreError, StoreResult};
use crate::domain::{
    DailyNote, Entry, EntryVersion, EntryWrite, MessageId, NewEntry, PersonId, Scope,
};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};

/// Entries, daily notes and hearsay of each person.
#[async_trait]
pub trait Entries: Send + Sync {
    /// Writes a structured memory entry: added when (person, scope, category, key) is new,
    /// updated (the old value kept in the history) when its value changed, else unchanged.
    async fn write_entry(&self, entry: &NewEntry) -> StoreResult<EntryWrite>;
    /// A person's entries in `scopes` (every scope when `None`), newest first.
    async fn entries(&self, person: PersonId, scopes: Option<&[Scope]>) -> StoreResult<Vec<Entry>>;
    /// Earlier values of a person's entries, oldest first.
    async fn entry_history(&self, person: PersonId) -> StoreResult<Vec<EntryVersion>>;
    /// Deletes these entries of `person` and their history (and what unfinished closes of
    /// episodes they wrote in came to: their prompts showed the entries); ids of others are
    /// left alone.
    async fn delete_entries(&self, person: PersonId, ids: &[i64]) -> StoreResult<u64>;
    /// Takes back what `source` (a job's run) wrote among `person`'s entries, wherever they
    /// are now (shared or not since): an entry it made goes with its history; one it changed
    /// gets back the last value before it that was not its own (a value the person asked
    /// for stays theirs); what it wrote that was replaced since leaves the history, the
    /// value before it then counted as replaced by what came after. How many entries went or
    /// were given back.
    async fn take_back_entries(&self, person: PersonId, source: &str) -> StoreResult<u64>;
    /// Moves an entry of `person` (with its history) to `scope` (sharing it everywhere, or
    /// back); when `scope` holds an entry of the same category and key, the moved one keeps
    /// both by taking the key `key_ID`. False when `person` has no such entry.
    async fn move_entry(&self, person: PersonId, id: i64, scope: &Scope) -> StoreResult<bool>;
    /// Appends a block to a person's daily notes; false (nothing written) when a block of the
    /// same source and day is there already.
    async fn append_daily_note(&self, person: PersonId, note: &DailyNote) -> StoreResult<bool>;
    /// Replaces the text of the daily-note block of (day, source), or deletes it (`None`).
    async fn rewrite_daily_note(
        &self,
        person: PersonId,
        day: NaiveDate,
        source: &str,
        text: Option<&str>,
    ) -> StoreResult<()>;
    /// Keeps what `told_by` said about `subject`; false when the same was kept already.
    async fn add_hearsay(&self, h: &NewHearsay) -> StoreResult<bool>;
    /// What others said about `subject` in `scopes` (every scope when `None`), oldest first.
    async fn hearsay(
        &self,
        subject: PersonId,
        scopes: Option<&[Scope]>,
    ) -> StoreResult<Vec<Hearsay>>;
    /// Deletes these statements about `subject`; ids about others are left alone.
    async fn delete_hearsay(&self, subject: PersonId, ids: &[i64]) -> StoreResult<u64>;
    /// One extraction run's result, all or nothing: entry writes, removals by (scope,
    /// category, key), and its daily note, which also marks the run as applied. Nothing is
    /// written when that note exists already (the run was applied before), or when
    /// `read_epoch` is given and something of `person`'s was forgotten since the run read
    /// it (`forget_epoch`; a forget under way waits for this to commit, then removes it).
    async fn apply_extraction(
        &self,
        person: PersonId,
        writes: &[NewEntry],
        removals: &[(Scope, crate::domain::Category, String)],
        note: &DailyNote,
        read_epoch: Option<i64>,
    ) -> StoreResult<ExtractionApplied>;
    /// Changes `person` confirmed (the model's proposal they said "yes" to), all or
    /// nothing, in this order: their entries `deletions` (with their history, counted as a
    /// forget, as `begin_forgetting` then `delete_entries` do); then, unless their memory is
    /// paused, the entries `replaced` (a rewrite into another category: removed as
    /// `delete_entries` does, not counted), daily notes and entry writes. Nothing at all is
    /// done when something of `person`'s was forgotten or cleared since `read_epoch`
    /// (`forget_epoch`, read when the changes were proposed; a forget under way waits for
    /// this to commit, then removes what it wrote): `None`. Else how many deletions, notes
    /// and writes were applied.
    #[allow(clippy::too_many_arguments)]
    async fn apply_confirmed(
        &self,
        person: PersonId,
        deletions: &[i64],
        replaced: &[i64],
        notes: &[DailyNote],
        writes: &[NewEntry],
        read_epoch: i64,
        at: DateTime<Utc>,
    ) -> StoreResult<Option<usize>>;
    /// A person's daily notes in `scopes` (every scope when `None`), by day, then as appended.
    async fn daily_notes(
        &self,
        person: PersonId,
        scopes: Option<&[Scope]>,
    ) -> StoreResult<Vec<DailyNote>>;
    /// People with entries or daily notes, by id.
    async fn people_with_memory(&self) -> StoreResult<Vec<PersonId>>;
    /// Deletes everything derived about `person`: entries and their versions, daily notes, the
    /// facts texts of every scope with their versions, their history summaries and their part
    /// of the day summaries, what others said about them and what they said about others,
    /// and their link codes (other processes are told). Their messages go with
    /// `delete_messages`. Returns rows removed.
    async fn clear_entries(&self, person: PersonId) -> StoreResult<u64>;
    /// Deletes entries whose expiry has passed at `now` and daily notes of days before
    /// `notes_before`, with the history of those entries; returns the rows removed.
    async fn prune_memory(&self, now: DateTime<Utc>, notes_before: NaiveDate) -> StoreResult<u64>;
}

/// What `apply_extraction` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractionApplied {
    /// Written, with what changed.
    Applied(ExtractionCounts),
    /// The run's note exists: it was applied before, and nothing is written again.
    AlreadyApplied,
    /// Something of the person was forgotten since the run read: nothing is written.
    Forgotten,
}

/// What one applied extraction changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExtractionCounts {
    /// Entries added.
    pub added: usize,
    /// Entries whose value changed.
    pub updated: usize,
    /// Entries removed.
    pub removed: usize,
}

/// What someone said about another person, kept as theirs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hearsay {
    /// Its id (for deleting it).
    pub id: i64,
    /// Whom it is about.
    pub subject: PersonId,
    /// Where it was said: who may read it.
    pub scope: Scope,
    /// Who said it.
    pub told_by: PersonId,
    /// The teller's current display name.
    pub told_by_name: String,
    /// What they said.
    pub text: String,
    /// The message it was said in.
    pub source_message: Option<MessageId>,
    /// When.
    pub at: DateTime<Utc>,
}

/// A statement about `subject` by `told_by`, to keep as theirs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewHearsay {
    /// Whom it is about.
    pub subject: PersonId,
    /// Where it was said.
    pub scope: Scope,
    /// Who said it.
    pub told_by: PersonId,
    /// What they said.
    pub text: String,
    /// The message it was said in.
    pub source_message: Option<MessageId>,
    /// When.
    pub at: DateTime<Utc>,
}

/// id, person_id, scope, category, key, value, confidence, source, origin, created_at,
/// updated_at, expires_at
type EntryRow = (
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

const ENTRY_COLUMNS: &str = "id, person_id, scope, category, key, value, confidence, source, origin, created_at, updated_at, expires_at";

fn entries(rows: Vec<EntryRow>) -> StoreResult<Vec<crate::domain::Entry>> {
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
type EntryVersionRow = (i64, String, f64, String, i64, String);

fn entry_versions(rows: Vec<EntryVersionRow>) -> StoreResult<Vec<crate::domain::EntryVersion>> {
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
type DailyNoteRow = (String, String, String, String, i64);

fn daily_notes(rows: Vec<DailyNoteRow>) -> StoreResult<Vec<crate::domain::DailyNote>> {
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
type HearsayRow = (i64, i64, String, i64, String, String, Option<i64>, i64);

fn hearsay(rows: Vec<HearsayRow>) -> StoreResult<Vec<Hearsay>> {
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

on_both_backends! {
    #[async_trait]
    impl Entries for Backend {
        async fn write_entry(&self, e: &NewEntry) -> StoreResult<EntryWrite> {
            let mut tx = self.write_tx().await?;
            let write = write_entry_in(&mut tx, e).await?;
            tx.commit().await.map_err(db_err)?;
            Ok(write)
        }

        async fn entries(&self, person: PersonId, scopes: Option<&[Scope]>) -> StoreResult<Vec<Entry>> {
            let keys: Option<Vec<String>> = scopes.map(|s| s.iter().map(Scope::key).collect());
            let sql = format!(
                concat!(
                    "SELECT {} FROM memory_entries WHERE person_id = $1 AND ",
                    in_list_or_all!("scope", 2),
                    " ORDER BY updated_at DESC, id DESC"
                ),
                ENTRY_COLUMNS
            );
            let rows: Vec<EntryRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(person.0)
                .bind(keys.as_deref().map(list))
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
            entries(rows)
        }

        async fn entry_history(&self, person: PersonId) -> StoreResult<Vec<EntryVersion>> {
            let rows: Vec<EntryVersionRow> = sqlx::query_as(
                "SELECT entry_id, value, confidence, source, replaced_at, replaced_by \
                 FROM memory_entry_history WHERE person_id = $1 ORDER BY id",
            )
            .bind(person.0)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            entry_versions(rows)
        }

        async fn delete_entries(&self, person: PersonId, ids: &[i64]) -> StoreResult<u64> {
            crate::store::again_if_aborted(|| self.delete_entries_once(person, ids)).await
        }

        async fn take_back_entries(&self, person: PersonId, source: &str) -> StoreResult<u64> {
            crate::store::again_if_aborted(|| self.take_back_entries_once(person, source)).await
        }

        async fn move_entry(&self, person: PersonId, id: i64, scope: &Scope) -> StoreResult<bool> {
            let moved = sqlx::query(
                "UPDATE memory_entries SET scope = $1, key = CASE WHEN EXISTS (SELECT 1 FROM memory_entries o \
                 WHERE o.person_id = $2 AND o.scope = $1 AND o.category = memory_entries.category AND o.key = memory_entries.key AND o.id <> $3) \
                 THEN key || '_' || id ELSE key END WHERE person_id = $2 AND id = $3",
            )
            .bind(scope.key())
            .bind(person.0)
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            Ok(moved.rows_affected() > 0)
        }

        async fn append_daily_note(&self, person: PersonId, note: &DailyNote) -> StoreResult<bool> {
            let mut conn = self.pool().acquire().await.map_err(db_err)?;
            append_note_in(&mut conn, person, note).await
        }

        async fn rewrite_daily_note(
            &self,
            person: PersonId,
            day: NaiveDate,
            source: &str,
            text: Option<&str>,
        ) -> StoreResult<()> {
            sqlx::query(match text {
                Some(_) => "UPDATE daily_notes SET text = $4 WHERE person_id = $1 AND day = $2 AND source = $3",
                None => "DELETE FROM daily_notes WHERE person_id = $1 AND day = $2 AND source = $3 AND CAST($4 AS TEXT) IS NULL",
            })
            .bind(person.0)
            .bind(day.format("%Y-%m-%d").to_string())
            .bind(source)
            .bind(text)
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            Ok(())
        }

        async fn add_hearsay(&self, h: &NewHearsay) -> StoreResult<bool> {
            let mut tx = self.write_tx().await?;
            let done = sqlx::query(
                "INSERT INTO hearsay (subject_id, scope, told_by, text, source_message_id, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (subject_id, scope, told_by, text) DO NOTHING",
            )
            .bind(h.subject.0)
            .bind(h.scope.key())
            .bind(h.told_by.0)
            .bind(&h.text)
            .bind(h.source_message.map(|m| m.0))
            .bind(ms(h.at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            changed(&mut tx, &Change::Hearsay { person: h.subject }).await?;
            tx.commit().await.map_err(db_err)?;
            Ok(done.rows_affected() == 1)
        }

        async fn hearsay(
            &self,
            subject: PersonId,
            scopes: Option<&[Scope]>,
        ) -> StoreResult<Vec<Hearsay>> {
            let keys: Option<Vec<String>> = scopes.map(|s| s.iter().map(Scope::key).collect());
            let rows: Vec<HearsayRow> = sqlx::query_as(concat!(
                "SELECT h.id, h.subject_id, h.scope, h.told_by, p.display_name, h.text, h.source_message_id, h.created_at \
                 FROM hearsay h JOIN people p ON p.id = h.told_by WHERE h.subject_id = $1 AND ",
                in_list_or_all!("h.scope", 2),
                " ORDER BY h.id"
            ))
                .bind(subject.0)
                .bind(keys.as_deref().map(list))
                .fetch_all(self.pool())
                .await
                .map_err(db_err)?;
            hearsay(rows)
        }

        async fn delete_hearsay(&self, subject: PersonId, ids: &[i64]) -> StoreResult<u64> {
            if ids.is_empty() {
                return Ok(0);
            }
            let mut tx = self.write_tx().await?;
            let deleted = sqlx::query(concat!("DELETE FROM hearsay WHERE subject_id = $1 AND id ", in_list!(2)))
                .bind(subject.0)
                .bind(list(ids))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?
                .rows_affected();
            changed(&mut tx, &Change::Hearsay { person: subject }).await?;
            tx.commit().await.map_err(db_err)?;
            Ok(deleted)
        }

        async fn apply_extraction(
            &self,
            person: PersonId,
            writes: &[NewEntry],
            removals: &[(Scope, crate::domain::Category, String)],
            note: &DailyNote,
            read_epoch: Option<i64>,
        ) -> StoreResult<ExtractionApplied> {
            let mut tx = self.write_tx().await?;
            if let Some(epoch) = read_epoch
                && lock_settings(&mut tx, person, note.added_at).await?.forget_epoch != epoch
            {
                return Ok(ExtractionApplied::Forgotten);
            }
            // The note first: when it exists, this run was applied already.
            if !append_note_in(&mut tx, person, note).await? {
                return Ok(ExtractionApplied::AlreadyApplied);
            }
            let mut counts = ExtractionCounts::default();
            for e in writes {
                match write_entry_in(&mut tx, e).await? {
                    EntryWrite::Added(_) => counts.added += 1,
                    EntryWrite::Updated(_) => counts.updated += 1,
                    EntryWrite::Unchanged(_) => {}
                }
            }
            for (scope, category, key) in removals {
                let gone: Vec<(i64,)> = sqlx::query_as(
                    "DELETE FROM memory_entries WHERE person_id = $1 AND scope = $2 AND category = $3 AND key = $4 RETURNING id",
                )
                .bind(person.0)
                .bind(scope.key())
                .bind(category.as_str())
                .bind(key)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
                for (id,) in gone {
                    sqlx::query("DELETE FROM memory_entry_history WHERE entry_id = $1")
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    counts.removed += 1;
                }
            }
            tx.commit().await.map_err(db_err)?;
            Ok(ExtractionApplied::Applied(counts))
        }

        async fn apply_confirmed(
            &self,
            person: PersonId,
            deletions: &[i64],
            replaced: &[i64],
            notes: &[DailyNote],
            writes: &[NewEntry],
            read_epoch: i64,
            at: DateTime<Utc>,
        ) -> StoreResult<Option<usize>> {
            crate::store::again_if_aborted(|| {
                self.apply_confirmed_once(person, deletions, replaced, notes, writes, read_epoch, at)
            })
            .await
        }

        async fn daily_notes(
            &self,
            person: PersonId,
            scopes: Option<&[Scope]>,
        ) -> StoreResult<Vec<DailyNote>> {
            let keys: Option<Vec<String>> = scopes.map(|s| s.iter().map(Scope::key).collect());
            let rows: Vec<DailyNoteRow> = sqlx::query_as(concat!(
                "SELECT day, scope, text, source, added_at FROM daily_notes WHERE person_id = $1 AND ",
                in_list_or_all!("scope", 2),
                " ORDER BY day, id"
            ))
            .bind(person.0)
            .bind(keys.as_deref().map(list))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            daily_notes(rows)
        }

        async fn people_with_memory(&self) -> StoreResult<Vec<PersonId>> {
            let rows: Vec<(i64,)> = sqlx::query_as(
                "SELECT person_id FROM memory_entries UNION SELECT person_id FROM daily_notes ORDER BY 1",
            )
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows.into_iter().map(|r| PersonId(r.0)).collect())
        }

        async fn clear_entries(&self, person: PersonId) -> StoreResult<u64> {
            crate::store::again_if_aborted(|| self.clear_entries_once(person)).await
        }

        async fn prune_memory(&self, now: DateTime<Utc>, notes_before: NaiveDate) -> StoreResult<u64> {
            let mut tx = self.write_tx().await?;
            let mut removed = sqlx::query(
                "DELETE FROM memory_entry_history WHERE entry_id IN \
                 (SELECT id FROM memory_entries WHERE expires_at IS NOT NULL AND expires_at <= $1)",
            )
            .bind(ms(now))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            removed += sqlx::query(
                "DELETE FROM memory_entries WHERE expires_at IS NOT NULL AND expires_at <= $1",
            )
            .bind(ms(now))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            removed += sqlx::query("DELETE FROM daily_notes WHERE day < $1")
                .bind(notes_before.to_string())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?
                .rows_affected();
            tx.commit().await.map_err(db_err)?;
            Ok(removed)
        }
    }

    /// `write_entry` inside the caller's transaction.
    async fn write_entry_in(conn: &mut Conn, e: &NewEntry) -> StoreResult<EntryWrite> {
        // Row lock: two writers of the same key queue up instead of both inserting.
        let old: Option<(i64, String, f64, String)> = sqlx::query_as(concat!(
            "SELECT id, value, confidence, source FROM memory_entries \
             WHERE person_id = $1 AND scope = $2 AND category = $3 AND key = $4",
            for_update!()
        ))
        .bind(e.person.0)
        .bind(e.scope.key())
        .bind(e.category.as_str())
        .bind(&e.key)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_err)?;
        let write = match old {
            Some((id, value, _, _)) if value == e.value => EntryWrite::Unchanged(id),
            Some((id, value, confidence, source)) => {
                sqlx::query(
                    "INSERT INTO memory_entry_history (entry_id, person_id, value, confidence, source, replaced_at, replaced_by) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(id)
                .bind(e.person.0)
                .bind(value)
                .bind(confidence)
                .bind(source)
                .bind(ms(e.at))
                .bind(&e.source)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
                sqlx::query(
                    "UPDATE memory_entries SET value = $1, confidence = $2, source = $3, origin = $4, updated_at = $5, expires_at = $6 WHERE id = $7",
                )
                .bind(&e.value)
                .bind(e.confidence)
                .bind(&e.source)
                .bind(&e.origin)
                .bind(ms(e.at))
                .bind(e.expires_at.map(ms))
                .bind(id)
                .execute(&mut *conn)
                .await
                .map_err(db_err)?;
                EntryWrite::Updated(id)
            }
            None => {
                let row: Option<(i64,)> = sqlx::query_as(
                    "INSERT INTO memory_entries (person_id, scope, category, key, value, confidence, source, origin, created_at, updated_at, expires_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10) \
                     ON CONFLICT (person_id, scope, category, key) DO NOTHING RETURNING id",
                )
                .bind(e.person.0)
                .bind(e.scope.key())
                .bind(e.category.as_str())
                .bind(&e.key)
                .bind(&e.value)
                .bind(e.confidence)
                .bind(&e.source)
                .bind(&e.origin)
                .bind(ms(e.at))
                .bind(e.expires_at.map(ms))
                .fetch_optional(&mut *conn)
                .await
                .map_err(db_err)?;
                match row {
                    Some((id,)) => EntryWrite::Added(id),
                    None => {
                        return Err(StoreError::Conflict {
                            what: format!("memory entry {}", e.key),
                        });
                    }
                }
            }
        };
        Ok(write)
    }

    /// Deletes `person`'s entries `ids` and their history; the entries deleted. What
    /// unfinished closes of episodes they wrote in came to was made with their entries in the
    /// prompt: it goes (first: episode rows before entry rows, as a forget locks them), and
    /// those parts are asked again.
    async fn remove_entries_in(conn: &mut Conn, person: PersonId, ids: &[i64]) -> StoreResult<u64> {
        drop_closing_parts(&mut *conn, person.0).await?;
        drop_entry_history(&mut *conn, person, ids).await?;
        Ok(sqlx::query(concat!("DELETE FROM memory_entries WHERE person_id = $1 AND id ", in_list!(2)))
            .bind(person.0)
            .bind(list(ids))
            .execute(&mut *conn)
            .await
            .map_err(db_err)?
            .rows_affected())
    }

    /// A person's memory settings as they stand.
    struct Settings {
        forget_epoch: i64,
        paused: bool,
    }

    /// The person's settings row, made when missing and locked: a forget counted after this
    /// waits until the transaction is committed (and then finds what it wrote).
    async fn lock_settings(conn: &mut Conn, person: PersonId, at: DateTime<Utc>) -> StoreResult<Settings> {
        sqlx::query(
            "INSERT INTO memory_settings (person_id, paused, updated_at) VALUES ($1, false, $2) \
             ON CONFLICT (person_id) DO NOTHING",
        )
        .bind(person.0)
        .bind(ms(at))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        let (forget_epoch, paused): (i64, bool) = sqlx::query_as(concat!(
            "SELECT forget_epoch, paused FROM memory_settings WHERE person_id = $1",
            for_update!()
        ))
        .bind(person.0)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(Settings { forget_epoch, paused })
    }

    /// Appends a daily-note block unless one of the same source and day exists.
    async fn append_note_in(
        conn: &mut Conn,
        person: PersonId,
        note: &DailyNote,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "INSERT INTO daily_notes (person_id, day, scope, text, source, added_at) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (person_id, day, source) DO NOTHING",
        )
        .bind(person.0)
        .bind(note.day.format("%Y-%m-%d").to_string())
        .bind(note.scope.key())
        .bind(&note.text)
        .bind(&note.source)
        .bind(ms(note.added_at))
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(done.rows_affected() == 1)
    }

    impl Backend {
        /// `clear_entries`, tried once.
        async fn clear_entries_once(&self, person: PersonId) -> StoreResult<u64> {
            let mut tx = self.write_tx().await?;
            let mut removed = 0;
            for table in [
                "memory_entry_history",
                "memory_entries",
                "daily_notes",
                "fact_versions",
                "facts",
                "history_summaries",
                "link_codes",
            ] {
                let sql = format!("DELETE FROM {table} WHERE person_id = $1");
                removed += sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(person.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?
                    .rows_affected();
            }
            removed += sqlx::query("DELETE FROM hearsay WHERE subject_id = $1 OR told_by = $1")
                .bind(person.0)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?
                .rows_affected();
            // Day summaries are one JSON map per scope and day: only this person's part goes.
            removed += sqlx::query(
                per_dialect!(
                    sqlite: "UPDATE day_summaries SET summaries = json_remove(summaries, '$.\"' || $1 || '\"') \
                             WHERE json_type(summaries, '$.\"' || $1 || '\"') IS NOT NULL",
                    postgres: "UPDATE day_summaries SET summaries = (summaries::jsonb - $1)::text \
                               WHERE summaries::jsonb ? $1",
                ),
            )
            .bind(person.0.to_string())
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            // Other processes drop their cached copies at commit.
            changed(&mut tx, &Change::Cleared { person }).await?;
            tx.commit().await.map_err(db_err)?;
            Ok(removed)
        }

        /// `take_back_entries`, tried once.
        async fn take_back_entries_once(&self, person: PersonId, source: &str) -> StoreResult<u64> {
            // Most forgotten messages taught the job nothing kept: no write, and the unfinished
            // closes' parts stay.
            let written: i64 = sqlx::query_scalar(
                "SELECT (SELECT COUNT(*) FROM memory_entries WHERE person_id = $1 AND source = $2) \
                      + (SELECT COUNT(*) FROM memory_entry_history WHERE person_id = $1 AND source = $2)",
            )
            .bind(person.0)
            .bind(source)
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
            if written == 0 {
                return Ok(0);
            }
            let mut tx = self.write_tx().await?;
            // Its entries were in the prompts of unfinished closes, as for a delete.
            drop_closing_parts(&mut tx, person.0).await?;
            let ids: Vec<i64> = sqlx::query_scalar(concat!(
                "SELECT id FROM memory_entries WHERE person_id = $1 AND source = $2 ORDER BY id",
                for_update!()
            ))
            .bind(person.0)
            .bind(source)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            for id in &ids {
                // The last value before its own that is still kept (what it replaced the last
                // time it wrote, or before that, if that one was forgotten since).
                let before: Option<(i64, String, f64, String)> = sqlx::query_as(
                    "SELECT id, value, confidence, source FROM memory_entry_history \
                     WHERE entry_id = $1 AND source <> $2 ORDER BY id DESC LIMIT 1",
                )
                .bind(id)
                .bind(source)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
                // From that value on, the history goes (all of it when the job made the entry).
                let from = before.as_ref().map_or(i64::MIN, |b| b.0);
                sqlx::query("DELETE FROM memory_entry_history WHERE entry_id = $1 AND id >= $2")
                    .bind(id)
                    .bind(from)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                match before {
                    Some((_, value, confidence, was)) => sqlx::query(
                        "UPDATE memory_entries SET value = $1, confidence = $2, source = $3 WHERE id = $4",
                    )
                    .bind(value)
                    .bind(confidence)
                    .bind(was)
                    .bind(id),
                    // It made the entry: the entry goes.
                    None => sqlx::query("DELETE FROM memory_entries WHERE id = $1").bind(id),
                }
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            // What it wrote that something else replaced since, oldest first: the value
            // before each was replaced by what replaced it.
            let written: Vec<(i64, i64, String)> = sqlx::query_as(
                "SELECT id, entry_id, replaced_by FROM memory_entry_history \
                 WHERE person_id = $1 AND source = $2 ORDER BY id",
            )
            .bind(person.0)
            .bind(source)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            for (row, entry, replaced_by) in written {
                sqlx::query(
                    "UPDATE memory_entry_history SET replaced_by = $1 \
                     WHERE entry_id = $2 AND id < $3 AND replaced_by = $4",
                )
                .bind(&replaced_by)
                .bind(entry)
                .bind(row)
                .bind(source)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                sqlx::query("DELETE FROM memory_entry_history WHERE id = $1")
                    .bind(row)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            tx.commit().await.map_err(db_err)?;
            Ok(ids.len() as u64)
        }

        /// `apply_confirmed`, tried once.
        #[allow(clippy::too_many_arguments)]
        async fn apply_confirmed_once(
            &self,
            person: PersonId,
            deletions: &[i64],
            replaced: &[i64],
            notes: &[DailyNote],
            writes: &[NewEntry],
            read_epoch: i64,
            at: DateTime<Utc>,
        ) -> StoreResult<Option<usize>> {
            let mut tx = self.write_tx().await?;
            if !deletions.is_empty() {
                // In `begin_forgetting`'s order: the count's row, then the person's.
                count_forget(&mut tx).await?;
            }
            let settings = lock_settings(&mut tx, person, at).await?;
            if settings.forget_epoch != read_epoch {
                return Ok(None);
            }
            let mut applied = 0;
            if !deletions.is_empty() {
                sqlx::query("UPDATE memory_settings SET forget_epoch = forget_epoch + 1 WHERE person_id = $1")
                    .bind(person.0)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                applied += remove_entries_in(&mut tx, person, deletions).await? as usize;
            }
            if !settings.paused {
                if !replaced.is_empty() {
                    remove_entries_in(&mut tx, person, replaced).await?;
                }
                for note in notes {
                    append_note_in(&mut tx, person, note).await?;
                }
                for entry in writes {
                    write_entry_in(&mut tx, entry).await?;
                }
                applied += notes.len() + writes.len();
            }
            tx.commit().await.map_err(db_err)?;
            Ok(Some(applied))
        }

        /// `delete_entries`, tried once.
        async fn delete_entries_once(&self, person: PersonId, ids: &[i64]) -> StoreResult<u64> {
            if ids.is_empty() {
                return Ok(0);
            }
            let mut tx = self.write_tx().await?;
            let removed = remove_entries_in(&mut tx, person, ids).await?;
            tx.commit().await.map_err(db_err)?;
            Ok(removed)
        }
    }
}
