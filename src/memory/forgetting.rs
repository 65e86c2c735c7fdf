//! Forgetting, in the memory tier: one thing about a person (`forget`), all that is kept about
//! them in a place (`forget_everything`), what others said about them (`forget_statements`),
//! everything about them (`clear_person`), and a platform message that was deleted or edited
//! (`forget_message`). Forgetting is total: the facts and their history, the MEMORY.md entries
//! and theirs, what others said about the person, the daily-note lines, what episodes' details
//! (and so their search keys) say of it, the messages that stated it and the bot's messages
//! quoting it (with the postings, vectors, episodes and summaries the store derived from
//! those messages), and every cache in every process.
//!
//! What a forget may touch is bounded by who asks: the person (or a moderator) reaches what
//! may surface where they ask; a teller only their own words; and the bot's messages are only
//! searched for quotes among those about that person (naming them, or answering them), so no
//! one can make the bot forget its answers to others by posting and deleting a phrase. A
//! message deleted on its platform takes the bot's later answers to anyone that hold it
//! (it could surface in any of them), unless the bot said those words there before the
//! message existed: its own wording is no quote.

use super::audit::{Action, By};
use super::offline::{contains_words, removed_sentences};
use super::{FactRequest, ForgetOutcome, MemoryError, MemoryManager, Method};
use crate::domain::language::Language;
use crate::domain::{
    MessageId, PersonId, Place, Platform, Privacy, Scope, SpaceId, SpaceKind, StoredMessage,
};
use crate::memory::extraction;
use crate::memory::extraction::episodes::EpisodeDetails;
use crate::store::{
    BotMessageFilter, Hearsay, StoreError, document_terms_in, query_terms, query_terms_in,
};
use std::collections::BTreeSet;
use tracing::{info, warn};

/// How long a message forgotten on request is kept out when its platform brings it again: as
/// long as the longest Discord catch-up reads back (`discord.catch_up_hours` is at most 30
/// days), longer than Telegram keeps an update.
pub const FORGOTTEN_KEPT_OUT: chrono::TimeDelta = chrono::TimeDelta::days(30);

/// A message on its way out (`take_back_message`): what was made from it is gone, its rows
/// are still to delete.
#[derive(Debug)]
pub struct Leaving {
    /// The message and the bot's messages quoting it.
    pub messages: Vec<MessageId>,
    /// The messages its "remember that …" took with it already.
    removed: u64,
    /// How those quotes were found: run again once the forget is counted
    /// (`message_left`).
    quotes: Vec<QuoteSearch>,
}

/// How many times a forget looks again for answers stored while it ran (`settle_forget`):
/// each look finds only what was stored in the moments since the one before.
const SETTLE_ROUNDS: usize = 3;

/// A search for the bot's messages that show what a forget removes. A forget runs its
/// searches before it deletes, and again once it is counted (`settle_forget`): an answer
/// made from what was still there and stored in between is found then.
#[derive(Debug, Clone)]
struct QuoteSearch {
    /// Where the bot may have shown it (every scope when `None`).
    scopes: Option<Vec<Scope>>,
    /// Only in this space.
    space: Option<SpaceId>,
    /// The texts (each of two words or more is looked for).
    texts: Vec<String>,
    /// Only the bot's messages about this person (`About::shown_in`).
    about: Option<About>,
    /// Only when every message found is newer than this one: words the bot said before the
    /// message existed are its own ("happy to help"), not a quote.
    newer_than: Option<MessageId>,
}

impl QuoteSearch {
    /// The bot's messages in `scopes` (all when `None`) that say any of `texts`.
    fn saying(scopes: Option<&[Scope]>, texts: Vec<String>) -> QuoteSearch {
        QuoteSearch {
            scopes: scopes.map(<[Scope]>::to_vec),
            space: None,
            texts,
            about: None,
            newer_than: None,
        }
    }

    /// Those that are also about `about`.
    fn about(scopes: Option<&[Scope]>, texts: Vec<String>, about: About) -> QuoteSearch {
        QuoteSearch {
            about: Some(about),
            ..QuoteSearch::saying(scopes, texts)
        }
    }
}

/// Where a forget acts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Every scope (the person's own private chat, `/memory clear`).
    Everywhere,
    /// Only these scopes (what may surface where the forget was asked).
    Scopes(Vec<Scope>),
}

impl Reach {
    fn scopes(&self) -> Option<&[Scope]> {
        match self {
            Reach::Everywhere => None,
            Reach::Scopes(s) => Some(s),
        }
    }
}

/// Whether a forget's `target` names something about the person called `about` besides
/// them: a word that is no function word, and not one of their name's.
fn names_something_of(target: &str, about: &str) -> bool {
    let name: Vec<String> = crate::domain::plain_words(about);
    let rest: Vec<String> = crate::domain::plain_words(target)
        .into_iter()
        .filter(|w| !name.contains(w))
        .collect();
    crate::domain::language::names_something(&rest.join(" "))
}

/// Whether `text` (an entry, a statement, a message) is what `target` asks to forget about
/// the person called `about`: `text` holds the target's words in order, or a target of two
/// words or more holds all of `text`'s, or `text` has every content word of the target
/// (stemmed) but the person's own name ("forget that @bob plays chess" matches "he plays
/// chess"; "forget that I earn 90k" does not match "my salary is 90k").
pub fn is_forgotten(text: &str, target: &str, about: &str) -> bool {
    ForgetTarget::new(target, about).matches(text)
}

/// What a forget looks for, compared with many texts (`is_forgotten`): its words are read in
/// each text's language, as the text is.
struct ForgetTarget {
    text: String,
    about: String,
}

impl ForgetTarget {
    fn new(target: &str, about: &str) -> ForgetTarget {
        ForgetTarget {
            text: target.to_string(),
            about: about.to_string(),
        }
    }

    /// Its content words (stemmed) read in `language`, the person's name left out.
    fn wanted(&self, language: Option<Language>) -> Vec<String> {
        let name = query_terms_in(&self.about, 8, language);
        query_terms_in(&self.text, 32, language)
            .into_iter()
            .filter(|t| !name.contains(t))
            .collect()
    }

    /// The removed texts worth looking for again: those of two words or more.
    fn all(needles: &[String], about: &str) -> Vec<ForgetTarget> {
        needles
            .iter()
            .filter(|n| query_terms(n, 32).len() >= 2)
            .map(|n| ForgetTarget::new(n, about))
            .collect()
    }

    /// Whether every content word of `text` (the person's name aside, at least one) is one
    /// of the target's: a fragment of it ("4471" of "my badge number is 4471").
    fn covers(&self, text: &str) -> bool {
        let language = crate::domain::language::detect(text);
        let name = query_terms_in(&self.about, 8, language);
        let words: Vec<String> = query_terms_in(text, 32, language)
            .into_iter()
            .filter(|t| !name.contains(t))
            .collect();
        let wanted = self.wanted(language);
        !words.is_empty() && words.iter().all(|w| wanted.contains(w))
    }

    fn matches(&self, text: &str) -> bool {
        if contains_words(text, &self.text)
            || (text.split_whitespace().count() >= 2 && contains_words(&self.text, text))
        {
            return true;
        }
        let language = crate::domain::language::detect(text);
        let wanted = self.wanted(language);
        if wanted.is_empty() {
            return false;
        }
        let have: Vec<String> = document_terms_in(text, language)
            .terms
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        wanted.iter().all(|t| have.contains(t))
    }
}

/// The scopes whose memory about `subject` may surface at `place`, and, in a private chat,
/// what its owner said there about others (their own notes).
pub fn place_scopes(place: &Place, subject: PersonId) -> Vec<Scope> {
    let mut scopes = place.visible_scopes(subject);
    if let (Privacy::Dm, Some(owner)) = (place.privacy, place.dm_owner)
        && !scopes.contains(&Scope::Dm(owner))
    {
        scopes.push(Scope::Dm(owner));
    }
    scopes
}

/// Where "forget that …" asked at `place` acts: everything about the subject in their own
/// private chat (they may see it all there), else what may surface here; for anyone but the
/// subject (a moderator, a teller) not the subject's `global` facts, which are theirs alone.
pub fn forget_reach(place: &Place, subject: PersonId, actor: PersonId) -> Reach {
    if actor == subject && place.privacy == Privacy::Dm && place.dm_owner == Some(subject) {
        Reach::Everywhere
    } else {
        let mut scopes = place_scopes(place, subject);
        if actor != subject {
            scopes.retain(|s| *s != Scope::Global);
        }
        Reach::Scopes(scopes)
    }
}

/// Whether `text` names `name`: its words (`plain_words`: "Alice's" names Alice, "Malice"
/// does not) in a row, outside every run of the words of `quote` when one is given.
fn says_name(text: &str, name: &str, quote: Option<&str>) -> bool {
    use crate::domain::plain_words;
    let (name, quote) = (
        plain_words(name),
        quote.map(plain_words).unwrap_or_default(),
    );
    let mut words = plain_words(text);
    if !quote.is_empty() {
        let mut i = 0;
        while i + quote.len() <= words.len() {
            if words[i..].starts_with(&quote) {
                words.drain(i..i + quote.len());
            } else {
                i += 1;
            }
        }
    }
    !name.is_empty() && words.windows(name.len()).any(|w| w == name.as_slice())
}

/// Whether `h` is a note its teller keeps in their own private chat about `subject` (someone
/// else): hidden from the subject, and only the teller's to remove.
pub(super) fn is_private_note(h: &Hearsay, subject: PersonId) -> bool {
    matches!(h.scope, Scope::Dm(owner) if owner != subject)
}

/// Whether `h`, said about `subject`, is kept from them outside the place it was said in: a
/// note its teller keeps in their own private chat (`is_private_note`), or what was said in a
/// channel not everyone can see (shown, and removable, only there). Their `/memory clear`
/// removes both all the same.
pub(super) fn kept_from_subject(h: &Hearsay, subject: PersonId) -> bool {
    is_private_note(h, subject) || matches!(h.scope, Scope::Channel(..))
}

/// How the bot shows a statement someone made about another person (and so how it would
/// quote it).
pub fn statement_line(h: &Hearsay) -> String {
    format!("{} says: {}", h.told_by_name, h.text.replace('\n', " "))
}

/// A text worth looking for in the bot's messages: two words or more.
fn quotable(needle: &str) -> bool {
    needle.split_whitespace().count() >= 2
}

/// Where the bot may have quoted `message`, as (scopes, space) for `BotMessageFilter`: a
/// private chat's message in that person's private chats, a restricted channel's in that
/// channel, a public message anywhere in its space (the restricted channels see it too).
fn quoted_in(message: &StoredMessage) -> (Option<Vec<Scope>>, Option<SpaceId>) {
    match &message.scope {
        Scope::Dm(_) | Scope::Channel(..) => (Some(vec![message.scope.clone()]), None),
        Scope::Space(_) | Scope::Global => (None, Some(message.space)),
    }
}

/// Whom the bot's quotes must be about (`QuoteSearch::about`).
#[derive(Debug, Clone)]
struct About {
    person: PersonId,
    name: String,
    /// What they typed, when the forget was asked with it.
    typed: Option<String>,
}

impl About {
    /// Whether the bot's message `m`, quoting `needle`, is about them: it answers one of their
    /// messages, or names them. Naming them: their name as words, a name that says something
    /// (one made of "the" or "e" would make anyone's forget reach every answer with those
    /// words, anywhere). Quoting what they typed, outside its words (a name that is a word of
    /// it, "Friday" forgetting "the meeting is on friday", names no one); quoting what memory
    /// said of them ("Alice is pregnant."), anywhere in the answer.
    fn shown_in(&self, m: &crate::store::BotMessage, needle: &str) -> bool {
        let named = crate::domain::language::names_something(&self.name);
        let quote = Some(needle).filter(|n| self.typed.as_deref() == Some(*n));
        m.answered == Some(self.person) || (named && says_name(&m.text, &self.name, quote))
    }
}

/// What a forget removed.
#[derive(Debug, Default)]
struct Removed {
    /// Facts scopes changed, entries, statements, daily notes and messages (besides the
    /// request itself).
    items: usize,
    method: Option<Method>,
    /// The texts removed from memory, to find the messages and quotes that still say them.
    needles: Vec<String>,
    /// Messages deleted (with the bot's replies to them).
    messages: u64,
}

impl MemoryManager {
    /// "forget that X": removes X about `req.subject` wherever `forget_reach` says. The
    /// subject or a moderator removes it from everything; anyone else only takes back what
    /// they themselves said about the subject.
    pub async fn forget(&self, req: &FactRequest<'_>) -> Result<ForgetOutcome, MemoryError> {
        self.forget_as(req, &By::request(req)).await
    }

    /// `forget`, with the audit line naming `by` (an operator on the admin page acts in the
    /// subject's stead).
    pub async fn forget_as(
        &self,
        req: &FactRequest<'_>,
        by: &By,
    ) -> Result<ForgetOutcome, MemoryError> {
        let (outcome, items) = self.forget_unaudited(req).await?;
        if items > 0 {
            self.audit(by, Action::Forget, req.subject, items).await;
        }
        Ok(outcome)
    }

    /// `forget`, leaving the audit line to the caller (a delete that forgets its entries'
    /// text everywhere is one change). Returns the items removed too.
    pub(super) async fn forget_unaudited(
        &self,
        req: &FactRequest<'_>,
    ) -> Result<(ForgetOutcome, usize), MemoryError> {
        let target = self.check_fact_text(req.text, super::FactVerb::Forget)?;
        let reach = forget_reach(req.place, req.subject, req.actor);
        let removed = self.forget_in(req, &reach, Some(&target)).await?;
        let method = removed.method.unwrap_or(Method::Offline);
        let outcome = if removed.items > 0 {
            ForgetOutcome::Forgotten { method }
        } else {
            ForgetOutcome::NotFound { method }
        };
        Ok((outcome, removed.items))
    }

    /// Forgets the target (None: everything) in the subject's facts of every scope in reach,
    /// noting what was removed. Returns the scopes where only an earlier version said it:
    /// that history goes.
    async fn forget_facts(
        &self,
        req: &FactRequest<'_>,
        reach: &Reach,
        target: Option<&str>,
        asked: Option<&ForgetTarget>,
        removed: &mut Removed,
    ) -> Result<Vec<Scope>, MemoryError> {
        let fact_scopes = match reach {
            Reach::Everywhere => self.store.fact_scopes(req.subject).await?,
            Reach::Scopes(s) => s.clone(),
        };
        let mut history_scopes = Vec::new();
        for scope in &fact_scopes {
            let sentences = match target {
                Some(t) => {
                    let (found, method, sentences) = self.forget_in_scope(req, scope, t).await?;
                    if found {
                        removed.method = Some(method);
                    }
                    sentences
                }
                None => self.empty_facts(req, scope).await?,
            };
            if !sentences.is_empty() {
                removed.items += 1;
                removed.needles.extend(sentences);
            } else if let Some(asked) = asked
                && self
                    .store
                    .fact_history(req.subject, scope)
                    .await?
                    .iter()
                    .any(|v| asked.matches(&v.text))
            {
                history_scopes.push(scope.clone());
            }
        }
        Ok(history_scopes)
    }

    /// Deletes the subject's entries in reach that say what was asked (None: all of them) or
    /// what was removed from the facts under other words, and the earlier versions (of kept
    /// entries, and of the facts in `history_scopes`) that said it.
    async fn forget_entries(
        &self,
        req: &FactRequest<'_>,
        reach: &Reach,
        asked: Option<&ForgetTarget>,
        history_scopes: &[Scope],
        removed: &mut Removed,
    ) -> Result<(), MemoryError> {
        let matches = |text: &str| asked.is_none_or(|t| t.matches(text));
        let entries = self.store.entries(req.subject, reach.scopes()).await?;
        let said = ForgetTarget::all(&removed.needles, req.subject_name);
        let gone: Vec<_> = entries
            .iter()
            .filter(|e| matches(&e.value) || said.iter().any(|t| t.matches(&e.value)))
            .collect();
        let ids: Vec<i64> = gone.iter().map(|e| e.id).collect();
        removed.items += self.store.delete_entries(req.subject, &ids).await? as usize;
        removed.needles.extend(gone.iter().map(|e| e.value.clone()));
        let Some(asked) = asked else {
            return Ok(());
        };
        let kept: Vec<i64> = entries
            .iter()
            .map(|e| e.id)
            .filter(|id| !ids.contains(id))
            .collect();
        // Earlier values that say what went, as asked or as the facts said it.
        let said = ForgetTarget::all(&removed.needles, req.subject_name);
        let old: BTreeSet<i64> = self
            .store
            .entry_history(req.subject)
            .await?
            .into_iter()
            .filter(|v| {
                kept.contains(&v.entry_id)
                    && (asked.matches(&v.value) || said.iter().any(|t| t.matches(&v.value)))
            })
            .map(|v| v.entry_id)
            .collect();
        let old: Vec<i64> = old.into_iter().collect();
        if self
            .store
            .drop_history(req.subject, &old, history_scopes)
            .await?
            > 0
        {
            removed.items += 1;
        }
        Ok(())
    }

    /// The subject's own messages in reach that said what was forgotten ("remember that X",
    /// chatter), counted as items but for the request itself.
    async fn own_messages_saying(
        &self,
        req: &FactRequest<'_>,
        reach: &Reach,
        target: Option<&str>,
        removed: &mut Removed,
    ) -> Result<Vec<MessageId>, MemoryError> {
        let said = ForgetTarget::all(&removed.needles, req.subject_name);
        let mut messages = Vec::new();
        for (id, text) in self
            .store
            .author_messages(req.subject, reach.scopes())
            .await?
        {
            let says = target.is_some_and(|t| contains_words(&text, t))
                || said.iter().any(|t| t.matches(&text));
            if says {
                if Some(id) != req.source {
                    removed.items += 1;
                }
                messages.push(id);
            }
        }
        Ok(messages)
    }

    /// "forget everything about X": the facts, entries and statements about X that may
    /// surface here (their history too), and X's own messages that said them, by the same
    /// rules as `forget`. Returns how many items went.
    pub async fn forget_everything(&self, req: &FactRequest<'_>) -> Result<usize, MemoryError> {
        let reach = match forget_reach(req.place, req.subject, req.actor) {
            // "Everything" asked in a private chat means what surfaces there, as elsewhere.
            Reach::Everywhere => Reach::Scopes(place_scopes(req.place, req.subject)),
            reach => reach,
        };
        let items = self.forget_in(req, &reach, None).await?.items;
        if items > 0 {
            self.audit(
                &By::request(req),
                Action::ForgetEverything,
                req.subject,
                items,
            )
            .await;
        }
        Ok(items)
    }

    async fn forget_in(
        &self,
        req: &FactRequest<'_>,
        reach: &Reach,
        target: Option<&str>,
    ) -> Result<Removed, MemoryError> {
        // "it", "es", "ça" would match every text with such a word, and "olga" (her name
        // alone) every line about her: nothing is asked.
        if target.is_some_and(|t| !names_something_of(t, req.subject_name)) {
            return Err(MemoryError::EmptyFact {
                verb: super::FactVerb::Forget,
            });
        }
        let owner = req.actor == req.subject || req.actor_is_moderator;
        let asked = target.map(|t| ForgetTarget::new(t, req.subject_name));
        let matches = |text: &str| asked.as_ref().is_none_or(|t| t.matches(text));
        let mut removed = Removed::default();
        // What others said about the subject; a teller may take back their own words. A note
        // someone keeps in their own private chat is theirs alone, and what was said in a
        // channel not everyone can see stays there: from elsewhere the subject neither sees
        // it (`hearsay_about`) nor removes it, nor learns by trying that it is there.
        let kept_from = |h: &Hearsay| match reach {
            Reach::Everywhere => kept_from_subject(h, req.subject),
            Reach::Scopes(_) => is_private_note(h, req.subject),
        };
        let told: Vec<Hearsay> = self
            .store
            .hearsay(req.subject, reach.scopes())
            .await?
            .into_iter()
            .filter(|h| h.told_by == req.actor || (owner && !kept_from(h)))
            .filter(|h| matches(&h.text))
            .collect();
        if !owner && told.is_empty() {
            return Err(MemoryError::NotTheirs {
                subject: req.subject_name.to_string(),
            });
        }
        // Only when something may go.
        self.begin_forgetting(req.subject).await?;
        let mut searches = Vec::new();
        let mut messages = self
            .remove_statements(req.subject, &told, reach, &mut searches)
            .await?;
        removed.items += told.len();
        if owner {
            if let Some(t) = target {
                removed.needles.push(t.to_string());
            }
            let history_scopes = self
                .forget_facts(req, reach, target, asked.as_ref(), &mut removed)
                .await?;
            self.forget_entries(req, reach, asked.as_ref(), &history_scopes, &mut removed)
                .await?;
            removed.items += self
                .forget_in_notes(req.subject, reach, &removed.needles)
                .await?;
            // Even when nothing else said it: a model's summary of an episode may.
            self.forget_in_episodes(req.subject, reach, &removed.needles, req.subject_name)
                .await?;
            messages.extend(
                self.own_messages_saying(req, reach, target, &mut removed)
                    .await?,
            );
            let about = About {
                person: req.subject,
                name: req.subject_name.to_string(),
                typed: target.map(str::to_string),
            };
            let search = QuoteSearch::about(reach.scopes(), removed.needles.clone(), about);
            messages.extend(self.quotes(&search).await?);
            searches.push(search);
        }
        removed.messages = self.delete_forgotten(&messages).await?;
        removed.messages += self.settle_forget(req.subject, &searches).await?;
        info!(subject = %req.subject, actor = %req.actor, items = removed.items, messages = removed.messages, "forgotten");
        Ok(removed)
    }

    /// Deletes statements others made about `subject`, with the messages that told them and
    /// the bot's messages showing them ("bob says: …"); nothing of the subject's own. Returns
    /// the messages to delete; the search for the bot's is added to `searches`.
    async fn remove_statements(
        &self,
        subject: PersonId,
        told: &[Hearsay],
        reach: &Reach,
        searches: &mut Vec<QuoteSearch>,
    ) -> Result<Vec<MessageId>, MemoryError> {
        if told.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<i64> = told.iter().map(|h| h.id).collect();
        self.store.delete_hearsay(subject, &ids).await?;
        let mut messages: Vec<MessageId> = told.iter().filter_map(|h| h.source_message).collect();
        let lines: Vec<String> = told.iter().map(statement_line).collect();
        let search = QuoteSearch::saying(reach.scopes(), lines);
        messages.extend(self.quotes(&search).await?);
        searches.push(search);
        Ok(messages)
    }

    /// `/memory forget …` confirmed for statements others made about `subject`: those go, with
    /// what told and showed them, and nothing else.
    pub async fn forget_statements(
        &self,
        subject: PersonId,
        ids: &[i64],
    ) -> Result<u64, MemoryError> {
        let told: Vec<Hearsay> = self
            .store
            .hearsay(subject, None)
            .await?
            .into_iter()
            .filter(|h| ids.contains(&h.id))
            .collect();
        let mut searches = Vec::new();
        let messages = self
            .remove_statements(subject, &told, &Reach::Everywhere, &mut searches)
            .await?;
        self.delete_forgotten(&messages).await?;
        self.settle_forget(subject, &searches).await?;
        Ok(told.len() as u64)
    }

    /// Takes what a forget of `subject`'s removed (`needles`, about the person called
    /// `about`) out of the final details of the episodes in `reach` they wrote in, and so out
    /// of their search keys: the model saw their entries when it summarized those episodes,
    /// so the details may say what no message does. An item or summary sentence that says it,
    /// or whose words are all the forgotten text's, goes; the keys are written again from what
    /// is left; details that cannot be read but say it are emptied. Details changed meanwhile
    /// (a concurrent forget or finish) are read again.
    async fn forget_in_episodes(
        &self,
        subject: PersonId,
        reach: &Reach,
        needles: &[String],
        about: &str,
    ) -> Result<(), MemoryError> {
        let targets: Vec<ForgetTarget> = needles
            .iter()
            .filter(|n| !n.trim().is_empty())
            .map(|n| ForgetTarget::new(n, about))
            .collect();
        if targets.is_empty() {
            return Ok(());
        }
        // The keys are in whatever language the details were written in: each needle as
        // every language reads it.
        let mut terms = BTreeSet::new();
        for needle in needles {
            terms.extend(query_terms(needle, 32));
            for language in Language::all() {
                terms.extend(query_terms_in(needle, 32, Some(language)));
            }
        }
        let terms: Vec<String> = terms.into_iter().collect();
        let keep = |text: &str| !targets.iter().any(|t| t.matches(text) || t.covers(text));
        for _ in 0..3 {
            let mut raced = false;
            for (episode, json) in self
                .store
                .episodes_with_key_terms(reach.scopes(), subject, &terms)
                .await?
            {
                let (rewritten, keys) = match serde_json::from_str::<EpisodeDetails>(&json) {
                    Ok(mut details) => {
                        if !details.retain(keep) {
                            continue;
                        }
                        (serde_json::to_string(&details), details.keys())
                    }
                    Err(e) if !keep(&json) => {
                        warn!(episode, error = %e, "episode details unreadable and holding what was forgotten: emptied");
                        let empty = EpisodeDetails {
                            method: "offline".into(),
                            ..EpisodeDetails::default()
                        };
                        (serde_json::to_string(&empty), String::new())
                    }
                    Err(_) => continue,
                };
                let rewritten = rewritten.map_err(|e| StoreError::Conflict {
                    what: format!("episode {episode}'s details: {e}"),
                })?;
                raced |= !self
                    .store
                    .replace_episode_details(episode, &json, &rewritten, &keys)
                    .await?;
            }
            if !raced {
                return Ok(());
            }
        }
        Err(StoreError::Conflict {
            what: "episode details kept changing during a forget".into(),
        }
        .into())
    }

    /// Removes the daily-note lines that hold any of `needles` (a block left with nothing
    /// but headings goes whole); how many notes changed.
    async fn forget_in_notes(
        &self,
        person: PersonId,
        reach: &Reach,
        needles: &[String],
    ) -> Result<usize, MemoryError> {
        if needles.is_empty() {
            return Ok(0);
        }
        let mut rewritten = 0;
        for note in self.store.daily_notes(person, reach.scopes()).await? {
            let kept: Vec<&str> = note
                .text
                .lines()
                .filter(|l| {
                    l.trim_start().starts_with('#') || !needles.iter().any(|n| contains_words(l, n))
                })
                .collect();
            if kept.len() == note.text.lines().count() {
                continue;
            }
            let left = kept
                .iter()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
            let text = kept.join("\n");
            self.store
                .rewrite_daily_note(
                    person,
                    note.day,
                    &note.source,
                    left.then_some(text.as_str()),
                )
                .await?;
            rewritten += 1;
        }
        Ok(rewritten)
    }

    /// The bot's messages `search` finds.
    async fn quotes(&self, search: &QuoteSearch) -> Result<Vec<MessageId>, MemoryError> {
        let bots = BotMessageFilter {
            scopes: search.scopes.as_deref(),
            space: search.space,
            after: None,
        };
        let found = self
            .quotes_of(bots, &search.texts, |m, needle| {
                search.about.as_ref().is_none_or(|a| a.shown_in(m, needle))
            })
            .await?;
        if search
            .newer_than
            .is_some_and(|first| found.iter().any(|id| *id <= first))
        {
            return Ok(Vec::new());
        }
        Ok(found)
    }

    /// A forget of something of `person`'s has deleted what it found: it is counted
    /// (`forget_done`), then `searches` run again. An answer made from what was still there
    /// and stored before the count is found and goes too (then the forget is counted again);
    /// one stored after it keeps only its note (`Store::insert_reply`). Returns the messages
    /// deleted.
    async fn settle_forget(
        &self,
        person: PersonId,
        searches: &[QuoteSearch],
    ) -> Result<u64, MemoryError> {
        let mut removed = 0;
        for _ in 0..SETTLE_ROUNDS {
            self.forget_done(person).await?;
            let mut late = BTreeSet::new();
            for search in searches {
                late.extend(self.quotes(search).await?);
            }
            if late.is_empty() {
                return Ok(removed);
            }
            let late: Vec<MessageId> = late.into_iter().collect();
            info!(subject = %person, messages = late.len(), "answers stored while a forget ran go too");
            removed += self.delete_forgotten(&late).await?;
        }
        self.forget_done(person).await?;
        Ok(removed)
    }

    /// The bot's messages passing `bots` that quote any of `needles` and pass `keep`.
    async fn quotes_of(
        &self,
        bots: BotMessageFilter<'_>,
        needles: &[String],
        keep: impl Fn(&crate::store::BotMessage, &str) -> bool,
    ) -> Result<Vec<MessageId>, MemoryError> {
        let mut found = BTreeSet::new();
        let unique: BTreeSet<&str> = needles
            .iter()
            .map(|n| n.trim())
            .filter(|n| quotable(n))
            .collect();
        // A bot message's postings are in its own language: the needle is looked for as each
        // language stored reads it (a Spanish fact quoted in an English reply).
        let mut languages: Vec<Option<Language>> = vec![None];
        if !unique.is_empty() {
            for code in self.store.languages_in_use().await? {
                languages.push(Language::from_code(&code));
            }
        }
        for needle in unique {
            let mut asked: BTreeSet<Vec<String>> = BTreeSet::new();
            for language in &languages {
                let terms = query_terms_in(needle, 16, *language);
                if terms.is_empty() || !asked.insert(terms.clone()) {
                    continue;
                }
                for m in self.store.bot_messages_with_terms(bots, &terms).await? {
                    if contains_words(&m.text, needle) && keep(&m, needle) {
                        found.insert(m.id);
                    }
                }
            }
        }
        Ok(found.into_iter().collect())
    }

    /// `/memory clear`: deletes everything about `person`: their entries and facts with their
    /// history, daily notes, summaries, what others said about them (with the messages that
    /// told it) and what they said about others, every message they wrote (everywhere: the
    /// bot's copy; the platform keeps its own) with the bot's replies to them and the bot's
    /// messages quoting their memory, and every cached copy (other processes are told).
    /// Returns the rows and messages removed.
    pub async fn clear_person(&self, person: PersonId) -> Result<u64, MemoryError> {
        // First: a message of theirs from before now that comes while (or after) this runs
        // is not kept, and an answer made meanwhile knows.
        self.caches.forgetting();
        self.store
            .mark_memory_cleared(person, self.clock.now())
            .await?;
        let name = self
            .store
            .person(person)
            .await?
            .map(|p| p.display_name)
            .unwrap_or_default();
        let mut needles: Vec<String> = Vec::new();
        for scope in self.store.fact_scopes(person).await? {
            let facts = self.store.facts(person, &scope).await?;
            needles.extend(removed_sentences(&facts.text, ""));
        }
        needles.extend(
            self.store
                .entries(person, None)
                .await?
                .into_iter()
                .map(|e| e.value),
        );
        let told = self.store.hearsay(person, None).await?;
        let mut searches = Vec::new();
        let mut messages = self
            .remove_statements(person, &told, &Reach::Everywhere, &mut searches)
            .await?;
        let mut removed = self.store.clear_entries(person).await?;
        // Every message they wrote.
        messages.extend(
            self.store
                .author_messages(person, None)
                .await?
                .into_iter()
                .map(|(id, _)| id),
        );
        let about = About {
            person,
            name,
            typed: None,
        };
        // Their own facts and entries: answers naming them that quote one go too.
        let search = QuoteSearch::about(None, needles, about);
        messages.extend(self.quotes(&search).await?);
        searches.push(search);
        removed += self.delete_forgotten(&messages).await?;
        removed += self.settle_forget(person, &searches).await?;
        Ok(removed)
    }

    /// Deletes messages forgotten on request (`Store::delete_messages`), kept out first so
    /// that they stay out if their platform brings them again (a delivery again, or a Discord
    /// catch-up after a restart that reads from before them). The messages removed.
    async fn delete_forgotten(&self, messages: &[MessageId]) -> Result<u64, MemoryError> {
        let now = self.clock.now();
        self.store
            .keep_out(messages, now, FORGOTTEN_KEPT_OUT)
            .await?;
        Ok(self.store.delete_messages(messages).await?)
    }

    /// A platform message was deleted: `take_back_message`, its rows deleted, then
    /// `message_left`. Returns the messages deleted.
    pub async fn forget_message(
        &self,
        message: &StoredMessage,
        fact: Option<(&str, bool)>,
    ) -> Result<u64, MemoryError> {
        let leaving = self.take_back_message(message, fact).await?;
        let deleted = self.store.delete_messages(&leaving.messages).await?;
        self.message_left(message, &leaving, deleted).await
    }

    /// A platform message was deleted or edited: it leaves the history with everything derived from it
    /// (the store's part: postings, vectors, episodes, summaries, what was written from it),
    /// the bot's messages quoting it where it could be seen, what the daily extraction took
    /// from that day in that place, and a "remember that …" it carried (`fact`) is forgotten
    /// where it was said. The message rows are left: the messages still to delete are
    /// returned (it, and the bot's messages quoting it), for `Store::delete_messages` or, for
    /// an edit, the transaction that stores its new text (`Store::replace_messages`). Then
    /// `message_left`.
    pub async fn take_back_message(
        &self,
        message: &StoredMessage,
        fact: Option<(&str, bool)>,
    ) -> Result<Leaving, MemoryError> {
        // Counted first (here and in the database, for other processes): an answer made
        // meanwhile may show it.
        self.begin_forgetting(message.author).await?;
        let mut removed = 0;
        if let Some((fact, everywhere)) =
            fact.filter(|(f, _)| names_something_of(f, &message.author_name))
        {
            // Only the scope matters to a forget with an explicit reach; the place is the
            // message's own.
            let place = Place {
                platform: Platform::Console,
                space: message.space,
                space_kind: SpaceKind::Group,
                channel: message.channel.clone(),
                privacy: message.scope.privacy(),
                dm_owner: match message.scope {
                    Scope::Dm(p) => Some(p),
                    _ => None,
                },
            };
            let req = FactRequest {
                subject: message.author,
                subject_name: &message.author_name,
                actor: message.author,
                actor_name: &message.author_name,
                actor_is_moderator: false,
                place: &place,
                text: fact,
                source: Some(message.id),
            };
            // "remember everywhere that …" wrote to the global scope as well.
            let mut scopes = vec![message.scope.clone()];
            if everywhere {
                scopes.push(Scope::Global);
            }
            removed += self
                .forget_in(&req, &Reach::Scopes(scopes), Some(fact))
                .await?
                .messages;
        }
        if !message.is_bot {
            self.forget_extracted(message).await?;
            // What closing its episode learned about its author came from it too.
            if let Some(episode) = message.episode {
                // The note is of the day the episode ended.
                let day = self
                    .store
                    .episodes(&[episode])
                    .await?
                    .first()
                    .map_or(message.sent_at, |e| e.ended_at);
                crate::memory::extraction::episodes::unlearn(
                    self.store.as_ref(),
                    message.author,
                    episode,
                    crate::domain::day_of(day),
                )
                .await?;
            }
        }
        // The message, and the bot's later messages that quoted it or the text of its
        // attachments, whoever they answered, wherever it may have surfaced. Words the bot
        // said there before the message existed are its own ("happy to help"), not a quote:
        // posting and deleting them takes none of its answers.
        let mut ids = vec![message.id];
        let (scopes, space) = quoted_in(message);
        let mut texts = vec![message.text.clone()];
        texts.extend(
            self.store
                .attachment_parts(message.id)
                .await?
                .into_iter()
                .map(|p| p.text),
        );
        let mut quotes = Vec::new();
        for text in texts {
            let search = QuoteSearch {
                space,
                newer_than: Some(message.id),
                ..QuoteSearch::saying(scopes.as_deref(), vec![text])
            };
            ids.extend(self.quotes(&search).await?);
            quotes.push(search);
        }
        Ok(Leaving {
            messages: ids,
            removed,
            quotes,
        })
    }

    /// The message rows of `take_back_message` are gone (`deleted` of them): a job that read
    /// the message between the two keeps nothing it made (counted as a forget again, and an
    /// answer stored meanwhile that quotes it goes: `settle_forget`), caches are dropped and
    /// the forget is audited. Returns all the messages removed.
    pub async fn message_left(
        &self,
        message: &StoredMessage,
        leaving: &Leaving,
        deleted: u64,
    ) -> Result<u64, MemoryError> {
        let mut removed = leaving.removed + deleted;
        if message.is_bot {
            self.purge_caches();
        } else {
            removed += self.settle_forget(message.author, &leaving.quotes).await?;
        }
        let by = By {
            scope: Some(message.scope.clone()),
            ..By::platform("message_deleted")
        };
        let n = usize::try_from(removed).unwrap_or(usize::MAX);
        self.audit(&by, Action::Forget, message.author, n).await;
        Ok(removed)
    }

    /// What the daily extraction of the message's day and place wrote for its author: it read
    /// the message, so it goes (entries and that day's note block).
    async fn forget_extracted(&self, message: &StoredMessage) -> Result<(), MemoryError> {
        self.begin_forgetting(message.author).await?;
        let day = extraction::run_day(message.sent_at, self.settings.extraction_time());
        let source =
            extraction::run_source(&extraction::run_key(message.author, &message.scope, day));
        self.store
            .take_back_entries(message.author, &source)
            .await?;
        self.store
            .rewrite_daily_note(
                message.author,
                day,
                &extraction::note_source(&message.scope),
                None,
            )
            .await?;
        Ok(())
    }

    /// Something of `person`'s is about to be forgotten: counted before anything goes, so a
    /// job's answer made from it stays out (`Store::begin_forgetting`), and so does an answer
    /// made meanwhile (`forgets_seen`).
    pub(super) async fn begin_forgetting(&self, person: PersonId) -> Result<(), StoreError> {
        self.caches.forgetting();
        self.store.begin_forgetting(person, self.clock.now()).await
    }

    /// A forget of something of `person`'s is done: counted again, here and in the database
    /// (an answer that read what went before it went, and is stored after this, keeps only
    /// the note: `Store::insert_reply`), and every cached copy goes.
    pub(super) async fn forget_done(&self, person: PersonId) -> Result<(), StoreError> {
        // The caches first: a failed count leaves nothing forgotten in them.
        self.purge_caches();
        self.store.begin_forgetting(person, self.clock.now()).await
    }

    /// How many times something was forgotten here or in another process (`purge_caches`):
    /// an answer made across a change of it may show what is gone.
    pub fn forgets_seen(&self) -> u64 {
        self.caches.purges()
    }

    /// Drops every cached copy of memory in this process after something was forgotten (a
    /// forget, a clear, a deleted message, or another process telling us so), and counts it
    /// (`forgets_seen`).
    pub fn purge_caches(&self) {
        self.caches.forgot();
        self.retriever.forget_cached();
    }

    /// Drops every cached copy of memory in this process after a change that forgets
    /// nothing (an entry shared or unshared, accounts linked).
    pub fn refresh_caches(&self) {
        self.caches.clear();
        self.retriever.forget_cached();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::SpaceId;

    #[test]
    fn a_name_is_said_as_words() {
        assert!(says_name("Alice's birthday is in May", "Alice", None));
        assert!(says_name("ask ANNA LENA about it", "Anna Lena", None));
        assert!(!says_name("no malice meant", "Alice", None));
        assert!(!says_name("the meeting is on friday", "e", None));
        assert!(!says_name("anything", "", None));
        let answer = "Friday: the meeting is on friday";
        assert!(says_name(
            answer,
            "Friday",
            Some("the meeting is on Friday")
        ));
        let answer = "so the meeting is on friday";
        assert!(!says_name(answer, "Friday", Some("meeting is on friday")));
    }

    /// A forget names something about a person only with a word besides their name and
    /// the function words: "olga" alone would match every line about Olga.
    #[test]
    fn a_name_alone_names_nothing_to_forget() {
        for (target, about) in [
            ("olga", "Olga"),
            ("@Olga", "Olga"),
            ("it", "Olga"),
            ("Olga Petrova", "olga petrova"),
        ] {
            assert!(!names_something_of(target, about), "{target}");
        }
        for (target, about) in [
            ("Olga is my sister", "Olga"),
            ("olga", "Bob"),
            ("4471", "Olga"),
        ] {
            assert!(names_something_of(target, about), "{target}");
        }
    }

    #[test]
    fn what_a_forget_matches() {
        assert!(is_forgotten(
            "my salary is 90k",
            "my salary is 90k",
            "alice"
        ));
        assert!(is_forgotten("My salary is 90k.", "my salary", "alice"));
        assert!(is_forgotten("I love Rust", "I love Rust and Go", "alice"));
        assert!(is_forgotten("he plays chess", "bob plays chess", "bob"));
        assert!(is_forgotten("he played chess", "bob plays chess", "Bob"));
        assert!(!is_forgotten("he plays chess", "bob plays chess", "carol"));
        assert!(!is_forgotten("my salary is 90k", "my cat", "alice"));
        assert!(!is_forgotten("I love Rustaceans", "rust", "alice"));
        assert!(!is_forgotten("anything", "", "alice"));
        assert!(!is_forgotten("anything", "alice", "alice"));
        // A one-word entry is not forgotten because the request happens to use its word.
        assert!(!is_forgotten("Rust", "I hate Rust", "alice"));
        assert!(!is_forgotten("my salary is 90k", "I earn 90k", "alice"));
    }

    #[test]
    fn the_reach_of_a_forget() {
        let alice = PersonId(1);
        let bob = PersonId(2);
        let dm = Place {
            platform: Platform::Console,
            space: SpaceId(1),
            space_kind: SpaceKind::Private,
            channel: "dm".into(),
            privacy: Privacy::Dm,
            dm_owner: Some(alice),
        };
        assert_eq!(forget_reach(&dm, alice, alice), Reach::Everywhere);
        // Someone else, even where a place claims to be her private chat, never reaches
        // everywhere.
        assert_eq!(
            forget_reach(&dm, alice, bob),
            Reach::Scopes(vec![Scope::Dm(alice)])
        );
        // About someone else from her private chat: only her own notes about them.
        assert_eq!(
            forget_reach(&dm, bob, alice),
            Reach::Scopes(vec![Scope::Dm(alice)])
        );
        let group = Place {
            privacy: Privacy::GuildPublic,
            dm_owner: None,
            space_kind: SpaceKind::Group,
            ..dm
        };
        assert_eq!(
            forget_reach(&group, alice, alice),
            Reach::Scopes(vec![Scope::Global, Scope::Space(SpaceId(1))])
        );
        // A moderator of the space reaches the space, not the person's global facts.
        assert_eq!(
            forget_reach(&group, alice, bob),
            Reach::Scopes(vec![Scope::Space(SpaceId(1))])
        );
    }
}
