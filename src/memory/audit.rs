//! The audit trail of memory changes: who changed whose memory, in what way, where and from
//! which message, one line per change (`store::Oversight` keeps it, without the text; a line
//! that removes memory keeps no message either). A failed audit write is logged and never
//! undoes the change it describes.

use super::FactRequest;
use crate::domain::{Clock, MessageId, PersonId, Scope};
use crate::store::{NewAudit, Store};
use tracing::error;

/// Who made a change, and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct By {
    /// The person, when a person did.
    pub actor: Option<PersonId>,
    /// Their name then, or what did it ("admin:ops", "job:extract").
    pub label: String,
    /// Where it was asked.
    pub scope: Option<Scope>,
    /// The message that asked.
    pub message: Option<MessageId>,
}

impl By {
    /// The asker of a fact request, where and in which message they asked.
    pub fn request(req: &FactRequest<'_>) -> By {
        By {
            actor: Some(req.actor),
            label: req.actor_name.to_string(),
            scope: Some(req.place.home_scope()),
            message: req.source,
        }
    }

    /// An operator on the admin page, by the name they logged in with.
    pub fn operator(name: &str) -> By {
        By {
            actor: None,
            label: format!("admin:{name}"),
            scope: None,
            message: None,
        }
    }

    /// A platform's event (a message deleted or edited there).
    pub fn platform(event: &str) -> By {
        By {
            actor: None,
            label: format!("platform:{event}"),
            scope: None,
            message: None,
        }
    }

    /// A background job.
    pub fn job(name: &str) -> By {
        By {
            actor: None,
            label: format!("job:{name}"),
            scope: None,
            message: None,
        }
    }
}

/// What kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// "remember that …" about oneself.
    Remember,
    /// "remember this about @name: …".
    Tell,
    /// "forget that …".
    Forget,
    /// "forget everything about …".
    ForgetEverything,
    /// Entries or statements deleted by id (`/memory forget`, the admin page).
    Delete,
    /// An entry made known everywhere.
    Share,
    /// An entry made known only in private.
    Unshare,
    /// Changes a model made to entries (a tool, or staged and confirmed).
    ModelChange,
    /// Everything about a person cleared.
    Clear,
    /// Memory paused.
    Pause,
    /// Memory resumed.
    Resume,
    /// What the daily extraction learned.
    Learned,
}

impl Action {
    /// Whether it removes memory: then the asking message is not kept with the line (it may
    /// say what was removed, and a teller's or moderator's own message stays in the history).
    fn removes(self) -> bool {
        matches!(
            self,
            Action::Forget | Action::ForgetEverything | Action::Delete | Action::Clear
        )
    }

    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Remember => "remember",
            Action::Tell => "tell",
            Action::Forget => "forget",
            Action::ForgetEverything => "forget_everything",
            Action::Delete => "delete",
            Action::Share => "share",
            Action::Unshare => "unshare",
            Action::ModelChange => "model_change",
            Action::Clear => "clear",
            Action::Pause => "pause",
            Action::Resume => "resume",
            Action::Learned => "learned",
        }
    }
}

/// Adds the line "`by` did `action` to `subject`'s memory (`count` items)" to the audit log.
pub async fn record(
    store: &dyn Store,
    clock: &dyn Clock,
    by: &By,
    action: Action,
    subject: PersonId,
    count: i64,
) {
    let line = NewAudit {
        at: clock.now(),
        actor: by.actor,
        actor_label: by.label.clone(),
        action: action.as_str().to_string(),
        subject: Some(subject),
        scope: by.scope.clone(),
        message: if action.removes() { None } else { by.message },
        count,
    };
    if let Err(e) = store.record_audit(&line).await {
        error!(error = %e, action = action.as_str(), subject = %subject, "the audit log was not written");
    }
}
