//! What people tell the bot about someone else ("remember this about @bob: …"), in the memory
//! tier: kept as the teller's words, in the scope where it was said, shown as such, and never
//! merged into what the person said about themselves. The person (or a moderator) can remove
//! it, and so can the teller; nothing is kept about someone whose memory is paused.

use super::audit::{Action, By};
use super::forgetting::place_scopes;
use super::{FactRequest, MemoryError, MemoryManager};
use crate::domain::{PersonId, Place};
use crate::memory::entries::never_kept;
use crate::store::{Hearsay, NewHearsay};
use std::sync::Arc;

impl MemoryManager {
    /// Keeps what `req.actor` said about `req.subject` at `req.place`; false when the same was
    /// kept already.
    pub async fn tell(&self, req: &FactRequest<'_>) -> Result<bool, MemoryError> {
        let text = self.check_fact_text(req.text, super::FactVerb::Remember)?;
        if self.store.memory_paused(req.subject).await? {
            return Err(MemoryError::SubjectPaused {
                subject: req.subject_name.to_string(),
            });
        }
        if let Some(why) = never_kept(&text) {
            return Err(MemoryError::NeverKept(why));
        }
        let added = self
            .store
            .add_hearsay(&NewHearsay {
                subject: req.subject,
                scope: req.place.home_scope(),
                told_by: req.actor,
                text,
                source_message: req.source,
                at: self.clock.now(),
            })
            .await?;
        self.caches.invalidate_hearsay(req.subject);
        if added {
            self.audit(&By::request(req), Action::Tell, req.subject, 1)
                .await;
        }
        Ok(added)
    }

    /// Everything others said about `person` (cached; every change here or, on PostgreSQL,
    /// in another process drops it).
    async fn all_hearsay(&self, person: PersonId) -> Result<Arc<Vec<Hearsay>>, MemoryError> {
        if let Some(hit) = self.caches.get("hearsay", &self.caches.hearsay, &person) {
            return Ok(hit);
        }
        let since = self.caches.begin_fill();
        let all = Arc::new(self.store.hearsay(person, None).await?);
        self.caches
            .fill(&self.caches.hearsay, since, person, all.clone());
        Ok(all)
    }

    /// What others said about `person` that may surface at `place` (in a private chat, also
    /// what its owner said there about them), oldest first.
    pub async fn hearsay_here(
        &self,
        person: PersonId,
        place: &Place,
    ) -> Result<Vec<Hearsay>, MemoryError> {
        let scopes = place_scopes(place, person);
        Ok(self
            .all_hearsay(person)
            .await?
            .iter()
            .filter(|h| scopes.contains(&h.scope))
            .cloned()
            .collect())
    }

    /// What others said about `person` that they may see in their own private chat: all of
    /// it but what someone keeps as a note in their own private chat, and what was said in a
    /// channel not everyone can see (`kept_from_subject`).
    pub async fn hearsay_about(&self, person: PersonId) -> Result<Vec<Hearsay>, MemoryError> {
        Ok(self
            .store
            .hearsay(person, None)
            .await?
            .into_iter()
            .filter(|h| !super::forgetting::kept_from_subject(h, person))
            .collect())
    }
}

/// Statements about a person as lines for a prompt or a chat: "- Bob says: …".
pub fn hearsay_lines(statements: &[Hearsay]) -> String {
    statements
        .iter()
        .map(|h| format!("- {} says: {}", h.told_by_name, h.text.replace('\n', " ")))
        .collect::<Vec<_>>()
        .join("\n")
}
