//! A person's own entries (MEMORY.md) and their facts text, changed together: capturing
//! "remember that …", deleting entries, moving one between private and everywhere, applying
//! the changes a model staged, and clearing a person with the accounts joined to them. The
//! one place the bot's commands change both; the model's own notes (the memory tools, the
//! daily extraction) are entries alone.

use super::audit::{Action, By};
use super::entries::{Captured, NeverKept};
use super::tools::StagedChange;
use super::{FactRequest, MemoryError, MemoryManager, Method, RememberOutcome};
use crate::domain::{EntryWrite, PersonId, Place, Privacy, Scope};
use tracing::{error, info, warn};

/// What capturing "remember that …" about oneself did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureOutcome {
    /// Their memory is paused: nothing was kept.
    Paused,
    /// Longer than `limit` characters: nothing was kept.
    TooLong {
        /// The most a fact may have.
        limit: usize,
    },
    /// A text memory never keeps.
    Refused(NeverKept),
    /// The entry said it already.
    Unchanged,
    /// Kept as an entry, and in the facts text (or, when that could not be updated, in the
    /// entry all the same).
    Saved {
        /// The facts text took it word for word: the model was not available.
        word_for_word: bool,
    },
}

/// What moving an entry between private and everywhere did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moved {
    /// The entry is gone (deleted meanwhile): nothing changed.
    Gone,
    /// Known everywhere now, entry and fact.
    Shared,
    /// Known only in their private chat now; how the facts text known everywhere followed.
    Unshared(FactsFollowed),
}

/// Whether the facts text known everywhere let go of an unshared entry's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactsFollowed {
    /// Taken out of what is known everywhere, and kept privately.
    Yes,
    /// Those words were not found in what is known everywhere.
    NotFound,
    /// The facts text could not be updated (logged); the entry moved all the same.
    Failed,
}

/// These operations change a person's own memory, asked by them: anyone else (another
/// member, a moderator) is refused, whoever calls.
fn own(req: &FactRequest<'_>) -> Result<PersonId, MemoryError> {
    if req.actor != req.subject {
        return Err(MemoryError::NotTheirs {
            subject: req.subject_name.to_string(),
        });
    }
    Ok(req.subject)
}

impl MemoryManager {
    /// "remember that …" about oneself (`req.subject` is the speaker, and asked): a structured entry,
    /// then the facts text. A failure of the facts text is logged and never undoes the entry.
    pub async fn capture(&self, req: &FactRequest<'_>) -> Result<CaptureOutcome, MemoryError> {
        let person = own(req)?;
        if self.entries.paused(person).await? {
            return Ok(CaptureOutcome::Paused);
        }
        if req.text.chars().count() > self.settings.max_fact_chars {
            return Ok(CaptureOutcome::TooLong {
                limit: self.settings.max_fact_chars,
            });
        }
        info!(actor = %person, "capture");
        let source = req.source.map(|m| m.0).unwrap_or_default();
        match self
            .entries
            .capture(person, req.place, req.text, source)
            .await?
        {
            Captured::Refused(why) => Ok(CaptureOutcome::Refused(why)),
            Captured::Written(EntryWrite::Unchanged(_)) => Ok(CaptureOutcome::Unchanged),
            Captured::Written(_) => {
                self.audit(&By::request(req), Action::Remember, person, 1)
                    .await;
                let word_for_word = match self.remember(req).await {
                    Ok(RememberOutcome::Saved { method }) => method == Method::Offline,
                    Ok(_) => false,
                    Err(MemoryError::FactsFull { .. }) => {
                        warn!(person = %person, "facts text full; only the entry was written");
                        false
                    }
                    Err(e) => {
                        error!(error = %e, "facts update after capture failed; the entry is kept");
                        false
                    }
                };
                Ok(CaptureOutcome::Saved { word_for_word })
            }
        }
    }

    /// Deletes entries of the speaker (id and text) and the statements others made about
    /// them (`told`, ids), and forgets what the entries said everywhere else it is kept
    /// (facts, notes, messages, the bot's answers); asked `by` them or an operator. Returns
    /// the entries and statements gone.
    pub async fn delete_entries(
        &self,
        req: &FactRequest<'_>,
        entries: &[(i64, String)],
        told: &[i64],
        by: &By,
    ) -> Result<usize, MemoryError> {
        let person = own(req)?;
        self.begin_forgetting(person).await?;
        let ids: Vec<i64> = entries.iter().map(|(id, _)| *id).collect();
        let mut n = self.entries.delete(person, &ids).await? as usize;
        // What others said goes with what told and showed it, and nothing of theirs is taken
        // for the person's own words.
        n += self.forget_statements(person, told).await? as usize;
        self.forget_everywhere(req, entries.iter().map(|(_, v)| v.as_str()))
            .await;
        self.audit(by, Action::Delete, person, n).await;
        info!(actor = %person, entries = n, "memory forget");
        Ok(n)
    }

    /// Moves the speaker's entry `id` to `to` (global: shared; their private scope:
    /// unshared), and the fact `req.text` with it.
    pub async fn move_entry(
        &self,
        req: &FactRequest<'_>,
        id: i64,
        to: Scope,
    ) -> Result<Moved, MemoryError> {
        let person = own(req)?;
        let everywhere = to == Scope::Global;
        if !self.store.move_entry(person, id, &to).await? {
            return Ok(Moved::Gone);
        }
        let global_place = Place {
            privacy: Privacy::Global,
            dm_owner: None,
            ..req.place.clone()
        };
        let known_everywhere = FactRequest {
            place: &global_place,
            ..req.clone()
        };
        let moved = if everywhere {
            // The entry moved: a facts text that cannot follow is caught up by the next
            // remember; the entry is what is shown and searched.
            if let Err(e) = self.remember(&known_everywhere).await {
                warn!(error = %e, "share: the facts text was not updated");
            }
            Moved::Shared
        } else {
            // Out of what is known everywhere, into what is known in their private chat.
            let private = Place {
                privacy: Privacy::Dm,
                dm_owner: Some(person),
                ..req.place.clone()
            };
            let kept = FactRequest {
                place: &private,
                ..req.clone()
            };
            let followed = match self.forget_shared(&known_everywhere).await {
                Ok(found) => self.remember(&kept).await.map(|_| found),
                Err(e) => Err(e),
            };
            Moved::Unshared(match followed {
                Ok(true) => FactsFollowed::Yes,
                Ok(false) => FactsFollowed::NotFound,
                Err(e) => {
                    warn!(error = %e, "unshare: the facts text was not updated");
                    FactsFollowed::Failed
                }
            })
        };
        self.refresh_caches();
        let action = if everywhere {
            Action::Share
        } else {
            Action::Unshare
        };
        self.audit(&By::request(req), action, person, 1).await;
        info!(actor = %person, entry = id, everywhere, "entry scope changed");
        Ok(moved)
    }

    /// Applies the changes to the speaker's entries that a model staged and they confirmed,
    /// and forgets what deleted entries said everywhere else. Returns how many were applied,
    /// or `None` (nothing applied) when something of theirs was forgotten or cleared since
    /// `read_epoch`, their forget count when the changes were proposed.
    pub async fn apply_staged(
        &self,
        req: &FactRequest<'_>,
        changes: &[StagedChange],
        read_epoch: i64,
    ) -> Result<Option<usize>, MemoryError> {
        let person = own(req)?;
        let Some(n) = self.tools.apply_staged(person, changes, read_epoch).await? else {
            return Ok(None);
        };
        self.forget_everywhere(
            req,
            changes.iter().filter_map(|c| match c {
                StagedChange::Delete { value, .. } => Some(value.as_str()),
                _ => None,
            }),
        )
        .await;
        // Only a deletion forgets: new and rewritten entries lapse nothing waiting elsewhere.
        if changes
            .iter()
            .any(|c| matches!(c, StagedChange::Delete { .. }))
        {
            self.forget_done(person).await?;
        } else {
            self.purge_caches();
        }
        self.audit(&By::request(req), Action::ModelChange, person, n)
            .await;
        info!(actor = %person, changes = n, "memory changes confirmed");
        Ok(Some(n))
    }

    /// Clears everything about `person`, and the earlier memory the accounts joined to them
    /// brought along (it would come back on unlink): it is theirs too, asked `by` them or an
    /// operator. Returns the rows gone.
    pub async fn clear_with_joined(&self, person: PersonId, by: &By) -> Result<u64, MemoryError> {
        let mut n = self.clear_person(person).await?;
        let accounts = self.store.accounts(person).await?;
        for own in accounts.iter().filter_map(|a| a.own_person) {
            n += self.clear_person(own).await?;
        }
        self.audit(
            by,
            Action::Clear,
            person,
            usize::try_from(n).unwrap_or(usize::MAX),
        )
        .await;
        info!(actor = %person, rows = n, "memory clear");
        Ok(n)
    }

    /// Forgets what the speaker's deleted entries said, everywhere else it is kept (facts,
    /// notes, messages, the bot's answers). A failure is logged: the entries are gone anyway.
    async fn forget_everywhere<'a>(
        &self,
        req: &FactRequest<'_>,
        values: impl Iterator<Item = &'a str>,
    ) {
        for value in values {
            let forget = FactRequest {
                subject: req.actor,
                subject_name: req.actor_name,
                actor_is_moderator: false,
                text: value,
                ..req.clone()
            };
            if let Err(e) = self.forget_unaudited(&forget).await {
                warn!(error = %e, "forgetting a deleted entry everywhere failed");
            }
        }
    }
}
