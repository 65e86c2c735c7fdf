//! The bot: ingest → route → memory command or responder → store the reply. One `handle` call
//! per incoming message, the same for every platform adapter; `message_deleted` and
//! `message_edited` keep memory in step with the platform's own history. Who may change what:
//! a person changes their own memory; what others tell about them is kept as the teller's
//! words (`MemoryManager::tell`); a moderator of the space may forget things about anyone.

use crate::config::Config;
use crate::domain::budget::{Admission, Limits, Payer, paid_by};
use crate::domain::entry::Category;
use crate::domain::texts::{Say, Texts};
use crate::domain::{
    Clock, IncomingMessage, MessageId, PersonId, Place, Platform, Privacy, Scope, SpaceId,
    StoredMessage,
};
use crate::ingest::{Ingested, Ingestor, KeptReply, strip_address};
use crate::linking::{self, CodeCheck, Linker};
use crate::memory::audit::By;
use crate::memory::entries::EntryBook;
use crate::memory::forgetting::is_forgotten;
use crate::memory::hearsay::hearsay_lines;
use crate::memory::tools::StagedChange;
use crate::memory::{CaptureOutcome, FactRequest, MemoryError, MemoryManager};
use crate::responder::{Answer, Responder};
use crate::router::{Command, MemoryCommand, Subject, parse_command_with};
use crate::store::{Among, LinkRedeem, Store, StoreError, document_terms_in, query_terms_in};
use std::sync::Arc;
use tracing::{error, info};

pub mod replies;

/// What the bot says back, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The platform to send on.
    pub platform: Platform,
    /// The space, as the platform names it.
    pub space_external_id: String,
    /// The channel, as the platform names it.
    pub channel_external_id: String,
    /// The platform id of the message answered.
    pub in_reply_to: String,
    /// The text (split to the platform's size by the adapter).
    pub text: String,
}

/// How long after the bot asked a yes/no question in a group a plain "yes" or "no" (without
/// its name) still answers it.
const PLAIN_ANSWER_WINDOW: chrono::TimeDelta = chrono::TimeDelta::minutes(2);

/// The words that answer the bot's question in a group without its name.
const PLAIN_ANSWERS: [&str; 5] = ["yes", "y", "yes please", "no", "n"];

/// How long the bot waits for a "yes" (as long as a link code lasts).
const LINK_CODE_MINUTES: i64 = linking::CODE_MINUTES;
/// How long the platform ids of a deleted message are kept: longer than any creation or edit
/// of it can still be on its way (a gateway resuming replays minutes, not days).
const DELETED_KEPT: chrono::TimeDelta = chrono::TimeDelta::days(1);

/// A request waiting for the person's "yes".
#[derive(Debug, Clone)]
enum Pending {
    Clear,
    /// The matching entries and statements others made: id and text.
    Forget {
        entries: Vec<(i64, String)>,
        told: Vec<(i64, String)>,
    },
    /// Joining this account to the person of a code.
    Link {
        code_hash: String,
    },
    /// Changes to their entries the model asked for while answering, and how many forgets of
    /// theirs had been counted before it read their memory: one since (a forget, a clear)
    /// lapses them, as they may write back what went.
    Tools {
        changes: Vec<StagedChange>,
        forgets: i64,
    },
    /// `/memory share`: this entry of theirs becomes known everywhere.
    Share {
        id: i64,
        value: String,
    },
}

/// The messages to read again after a restart (`Bot::to_catch_up`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatchUp {
    /// The start of the window: nothing said before it is read.
    pub since: chrono::DateTime<chrono::Utc>,
    /// Channels to read after the newest message seen in each.
    pub channels: Vec<crate::store::ChannelCursor>,
    /// Messages to read again, newest first: their files are still to be described.
    pub undescribed: Vec<crate::store::ChannelCursor>,
}

/// What a bot is built from (by `app::build_bot`, once).
pub struct BotParts {
    /// The settings.
    pub config: Config,
    /// Where messages are kept.
    pub store: Arc<dyn Store>,
    /// The bot's time: when questions were asked, when codes lapse.
    pub clock: Arc<dyn Clock>,
    /// The memory tier.
    pub memory: Arc<MemoryManager>,
    /// The entries the memory tier keeps (the same book).
    pub entries: Arc<EntryBook>,
    /// What stores every message first.
    pub ingestor: Ingestor,
    /// Link codes and joins.
    pub linker: Linker,
    /// What answers conversation.
    pub responder: Responder,
    /// What answers may spend (None: no model or embedder to spend on).
    pub limits: Option<Arc<Limits>>,
    /// The bot's own texts in each language.
    pub texts: Arc<Texts>,
}

/// The bot: one incoming message in, at most one reply out.
pub struct Bot {
    /// Keyed by (person, platform, space, channel): a "yes" counts only where it was asked.
    /// With when it was asked, by the bot's clock: it lapses after `LINK_CODE_MINUTES`.
    pending: moka::sync::Cache<(PersonId, String), (Pending, chrono::DateTime<chrono::Utc>)>,
    /// Where the bot asked someone a yes/no question in a group, and when (by the bot's
    /// clock): keyed by (platform, account, space, channel) as the platform names them, so
    /// their plain "yes" there is an answer, not chatter, for `PLAIN_ANSWER_WINDOW`.
    asked: moka::sync::Cache<(Platform, String, String, String), chrono::DateTime<chrono::Utc>>,
    config: Config,
    store: Arc<dyn Store>,
    /// The bot's time: when questions were asked, when codes lapse.
    clock: Arc<dyn Clock>,
    ingestor: Ingestor,
    memory: Arc<MemoryManager>,
    /// The speaker's own entries, read and paused directly; changed through `memory`, which
    /// keeps the facts text in step.
    entries: Arc<EntryBook>,
    linker: Linker,
    responder: Responder,
    /// What answers may spend (None: no model or embedder to spend on).
    limits: Option<Arc<Limits>>,
    texts: Arc<Texts>,
}

/// Whether the answer to `command` only shows memory (kept in the history as a note).
fn shows_memory(command: &Command) -> bool {
    matches!(
        command,
        Command::Recall { .. }
            | Command::Memory(
                MemoryCommand::View
                    | MemoryCommand::Search(_)
                    | MemoryCommand::Export
                    | MemoryCommand::Forget(_)
                    | MemoryCommand::Share(_)
                    | MemoryCommand::Unshare(_)
            )
    )
}

impl Bot {
    /// The bot over the parts the composition root built (`app::build_bot`).
    pub fn new(parts: BotParts) -> Bot {
        let BotParts {
            config,
            store,
            clock,
            memory,
            entries,
            ingestor,
            linker,
            responder,
            limits,
            texts,
        } = parts;
        let window = std::time::Duration::from_secs(linking::CODE_MINUTES as u64 * 60);
        Bot {
            pending: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(window)
                .build(),
            asked: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(window)
                .build(),
            config,
            store,
            clock,
            ingestor,
            memory,
            entries,
            linker,
            responder,
            limits,
            texts,
        }
    }

    /// The texts to answer `ingested` with: in the language its author writes in.
    fn say(&self, ingested: &Ingested) -> Say<'_> {
        Say::new(&self.texts, ingested.language)
    }

    /// The texts it words its answers with.
    pub fn texts(&self) -> &Texts {
        &self.texts
    }

    /// The name people address it by.
    pub fn name(&self) -> &str {
        &self.config.bot.name
    }

    /// Whether a chat model is configured (without one it answers from memory, offline).
    pub fn has_model(&self) -> bool {
        self.responder.has_model()
    }

    /// Stores one message without answering it (the memory API's `add_message`): it is
    /// learned like chatter, by the jobs. The stored message's id; none for an empty text.
    pub async fn keep(&self, msg: &IncomingMessage) -> Result<Option<MessageId>, StoreError> {
        let Some(mut ingested) = self.store_incoming(msg).await? else {
            return Ok(None);
        };
        self.describe(msg, &mut ingested, false).await?;
        Ok(Some(ingested.message.id))
    }

    /// What a model makes of the images and recordings `msg` came with, once it is stored
    /// (`Ingestor::describe`), paid by its author: a message to be `answered` counts once
    /// towards their limits and the space's, as its answer (the admission is returned for
    /// it); other files (posted in passing, edited in) count towards their author's limit
    /// only. Over a limit, the files keep their bare lines.
    async fn describe(
        &self,
        msg: &IncomingMessage,
        ingested: &mut Ingested,
        answered: bool,
    ) -> Result<Option<(Payer, Admission)>, StoreError> {
        if ingested.withheld || !self.ingestor.describes(msg) {
            return Ok(None);
        }
        let (person, space) = (ingested.message.author, ingested.place.space);
        let counted = if answered {
            self.payer(person, space)
        } else {
            self.payer_by(person, space, Limits::admit_person)
        };
        let before = ingested.message.text.clone();
        // Each further file is admitted on its own, as work nobody asked for.
        let may_ask_again = || match &self.limits {
            Some(limits) => limits.admit_person(person, space) == Admission::Allowed,
            None => true,
        };
        paid_by(
            counted.0,
            self.ingestor.describe(msg, ingested, may_ask_again),
        )
        .await?;
        // A photo or a voice note sent to the bot without a word is answered as what the
        // model made of it (as conversation: never read as a memory command).
        if ingested.message.text != before
            && ingested.command_text.trim().is_empty()
            && matches!(ingested.command, Command::Chat)
        {
            ingested.command_text = ingested.message.text.clone();
        }
        Ok(answered.then_some(counted))
    }

    /// Who said `msg` and where, made on first sight; nothing is stored.
    pub async fn resolve(&self, msg: &IncomingMessage) -> Result<(PersonId, Place), StoreError> {
        self.ingestor.resolve(msg).await
    }

    /// Handles one message: always stored first; a reply when the bot was addressed (none
    /// when the platform deleted it meanwhile: then nothing of it is kept).
    pub async fn handle(&self, msg: &IncomingMessage) -> Result<Option<Reply>, StoreError> {
        self.handle_with(msg, std::future::pending()).await
    }

    /// `handle`, running `while_answering` (a platform's typing indicator) only while an
    /// answer is being made: not for chatter, and dropped as soon as the answer is ready.
    // Over 80 lines: the one path of a message (answer or chatter, already answered, paid
    // for, answered, kept), in the order it happens.
    pub async fn handle_with(
        &self,
        msg: &IncomingMessage,
        while_answering: impl std::future::Future<Output = ()>,
    ) -> Result<Option<Reply>, StoreError> {
        let started = std::time::Instant::now();
        // A plain "yes"/"no" in a group, from the person the bot just asked there, answers it
        // (as a reply to the bot would).
        let answering;
        let msg = if self.answers_a_question(msg) {
            answering = IncomingMessage {
                replies_to_bot: true,
                ..msg.clone()
            };
            &answering
        } else {
            msg
        };
        let Some(mut ingested) = self.store_incoming(msg).await? else {
            return Ok(None);
        };
        let addressed = ingested.addressed;
        let counted = self.describe(msg, &mut ingested, addressed).await?;
        if !ingested.addressed {
            // They moved on: a plain "yes" later is chatter again (their "Engram, yes" still
            // answers while the question lasts).
            self.asked.invalidate(&Self::asked_key(msg));
            return Ok(None);
        }
        // Delivered again (a platform retrying after a restart) and answered already.
        if self.store.answered(&ingested.message).await? {
            info!(message = %ingested.message.id.0, "delivered again and already answered");
            return Ok(None);
        }
        // One answer, however many model calls it makes, counts once towards the limits; over
        // them it is made without spending (see `answer`).
        let (payer, admission) = match counted {
            Some(counted) => counted,
            None => self.payer(ingested.message.author, ingested.place.space),
        };
        let forgets = self.memory.forgets_seen();
        // And in the database, for a forget in another process (or one that starts after the
        // check below).
        let counted = self.store.forgets_counted(ingested.message.author).await?;
        let answer = paid_by(payer, self.answer(msg, &ingested, admission));
        tokio::pin!(answer);
        let answer = tokio::select! {
            biased;
            done = &mut answer => done,
            // The indicator stopped early (it failed): the answer still comes.
            _ = while_answering => answer.await,
        };
        let shows_memory = matches!(&answer, Ok(a) if a.shows_memory);
        let asking = matches!(&answer, Ok(a) if !a.staged.is_empty())
            || self.pending.contains_key(&Self::pending_key(&ingested));
        let mut text = match answer {
            Ok(Answer { text, staged, .. }) if staged.is_empty() => text,
            Ok(Answer { text, staged, .. }) => {
                self.ask_to_confirm(&ingested, text, staged, counted.of_person)
            }
            Err(MemoryError::Store(e)) => {
                error!(error = %e, "memory store failed while answering");
                self.say(&ingested).text("store-failed")
            }
            Err(refused) => replies::refusal(&self.say(&ingested), &refused),
        };
        if text.trim().is_empty() {
            text = "…".to_string();
        }
        let now = self.clock.now().max(ingested.message.sent_at);
        // Memory shown is not memory: kept as a short note, withheld from search and
        // summaries, so it never comes back as conversation or survives a forget. So is an
        // answer made while something was forgotten: it may show what is gone, and the forget
        // looked for quotes of it before this was stored (a memory command's answer is about
        // its own change, and says nothing of the rest).
        let forgotten_meanwhile = !ingested.is_command && self.memory.forgets_seen() != forgets;
        let note = KeptReply {
            text: replies::SHOWN_MEMORY_NOTE,
            withheld: true,
        };
        let kept = if shows_memory || forgotten_meanwhile {
            note
        } else {
            KeptReply {
                text: &text,
                withheld: ingested.withheld,
            }
        };
        self.ingestor
            .ingest_reply(
                msg.platform,
                &ingested.record,
                kept,
                &ingested.message,
                now,
                ingested.is_command,
                // A memory command's answer is about its own change.
                (!ingested.is_command).then_some((counted.all, note)),
            )
            .await?;
        // Deleted on the platform while it was being answered: what the answer did and the
        // reply go with it (the delete may have looked before they were stored; see
        // `store_incoming`), and nothing is sent to a message that is gone.
        if self.deleted_on_platform(msg).await? {
            // A confirmation it asked for lapses with it.
            self.pending.invalidate(&Self::pending_key(&ingested));
            if let Err(e) = self.forget_message(&ingested.message).await {
                error!(error = %e, "a message deleted while it was answered could not be forgotten");
                // The store's part at least: the message, the reply and what came of them.
                self.store.delete_messages(&[ingested.message.id]).await?;
                self.memory.purge_caches();
            }
            return Ok(None);
        }
        let where_asked = Self::asked_key(msg);
        if asking {
            self.asked.insert(where_asked, self.clock.now());
        } else {
            self.asked.invalidate(&where_asked);
        }
        crate::telemetry::reply_sent(msg.platform.as_str(), started.elapsed());
        Ok(Some(Reply {
            platform: msg.platform,
            space_external_id: msg.space_external_id.clone(),
            channel_external_id: msg.channel_external_id.clone(),
            in_reply_to: msg.external_id.clone(),
            text,
        }))
    }

    /// Stores `msg` (`Ingestor::ingest`), unless the platform deleted it meanwhile (a delete
    /// handled while its creation or an edit was on its way), it was forgotten on request
    /// before and is brought again, or it was sent before its author's memory was cleared
    /// (and reaches the bot only now). The delete keeps a tombstone
    /// before it looks for the message, and this looks for the tombstone after the message
    /// is stored, so one of the two always sees the other and the message never stays.
    async fn store_incoming(&self, msg: &IncomingMessage) -> Result<Option<Ingested>, StoreError> {
        self.store_new(msg, None).await
    }

    /// Whether `msg` was forgotten on request (within `FORGOTTEN_KEPT_OUT`).
    async fn was_forgotten(&self, msg: &IncomingMessage) -> Result<bool, StoreError> {
        let since = self.clock.now() - crate::memory::forgetting::FORGOTTEN_KEPT_OUT;
        self.store
            .was_forgotten(
                msg.platform,
                &msg.space_external_id,
                &msg.channel_external_id,
                &msg.external_id,
                since,
            )
            .await
    }

    /// Whether `msg` was sent before its author's memory was cleared (`/memory clear`, the
    /// admin page), and reaches the bot only now.
    async fn sent_before_clear(&self, msg: &IncomingMessage) -> Result<bool, StoreError> {
        let cleared = self
            .store
            .account_cleared_at(msg.platform, &msg.author_external_id)
            .await?;
        Ok(crate::ingest::sent_before_clear(msg.sent_at, cleared))
    }

    /// `store_incoming`; for an edit, the new text of a message kept a moment ago, stored in
    /// the transaction that deletes the old one's rows (`replacing`, whose other derived data
    /// is gone already; so its own platform ids may be among the forgotten ones).
    async fn store_new(
        &self,
        msg: &IncomingMessage,
        replacing: Option<&[MessageId]>,
    ) -> Result<Option<Ingested>, StoreError> {
        let editing = replacing.is_some();
        let replaced = replacing.unwrap_or_default();
        let Some(ingested) = self.ingestor.ingest_replacing(msg, replaced).await? else {
            // Edited into nothing: the old text goes all the same.
            self.store.delete_messages(replaced).await?;
            return Ok(None);
        };
        let why = if self.deleted_on_platform(msg).await? {
            "deleted on the platform meanwhile: not kept"
        } else if !editing && self.was_forgotten(msg).await? {
            // Brought again (a delivery again, a catch-up reading from before it).
            "forgotten on request before: not kept again"
        } else if self.sent_before_clear(msg).await? {
            // Said while the bot was away, or delivered again; read after the message is
            // stored, so a clear running meanwhile either sees it or is seen here.
            "sent before its author's memory was cleared: not kept"
        } else {
            // Counted once it is kept, and once only: a redelivery was counted when it came,
            // and an edit is the same message.
            if ingested.new && !editing {
                crate::telemetry::message_stored(msg.platform.as_str(), msg.author_is_bot);
            }
            return Ok(Some(ingested));
        };
        // Stored a moment ago and never answered: nothing was made from it yet but what the
        // store derives (its postings, pieces, place in an episode), which goes with it.
        self.store.delete_messages(&[ingested.message.id]).await?;
        self.memory.purge_caches();
        info!(platform = msg.platform.as_str(), message = %ingested.message.id.0, why);
        Ok(None)
    }

    /// Whether the platform deleted `msg` (a tombstone of `message_deleted` is kept).
    async fn deleted_on_platform(&self, msg: &IncomingMessage) -> Result<bool, StoreError> {
        self.store
            .was_deleted(
                msg.platform,
                &msg.space_external_id,
                &msg.channel_external_id,
                &msg.external_id,
            )
            .await
    }

    /// Platform messages deleted (Discord's delete and bulk delete): each leaves the history
    /// and everything derived from it, and stays out if it arrives (again, or edited) later.
    /// Returns the messages removed (with the bot's replies).
    pub async fn message_deleted(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
        external_ids: &[String],
    ) -> Result<u64, MemoryError> {
        // The tombstones first (see `store_incoming`); without them the forget still runs,
        // and the failure is reported after it.
        let marked = self
            .store
            .mark_deleted(
                platform,
                space_external_id,
                channel_external_id,
                external_ids,
                self.clock.now(),
                DELETED_KEPT,
            )
            .await;
        let mut removed = 0;
        for id in external_ids {
            let Some(message) = self
                .store
                .message_by_external(platform, space_external_id, channel_external_id, id)
                .await?
            else {
                continue;
            };
            removed += self.forget_message(&message).await?;
        }
        if removed > 0 {
            info!(
                platform = platform.as_str(),
                removed, "deleted messages forgotten"
            );
        }
        marked?;
        Ok(removed)
    }

    /// A channel (or thread) was deleted on its platform, and every message in it with it:
    /// each kept one leaves memory as a deleted message does (`message_deleted`, in batches).
    /// Returns the stored messages removed.
    pub async fn channel_deleted(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
    ) -> Result<u64, MemoryError> {
        let ids = self
            .store
            .channel_message_ids(platform, space_external_id, channel_external_id)
            .await?;
        // Every batch is tried (the event never comes again); the first failure is reported
        // after them.
        let (mut removed, mut failed) = (0, None);
        for batch in ids.chunks(500) {
            match self
                .message_deleted(platform, space_external_id, channel_external_id, batch)
                .await
            {
                Ok(n) => removed += n,
                Err(e) => {
                    tracing::warn!(platform = platform.as_str(), error = %e, "part of a deleted channel not forgotten");
                    failed.get_or_insert(e);
                }
            }
        }
        info!(
            platform = platform.as_str(),
            messages = ids.len(),
            removed,
            "deleted channel forgotten"
        );
        if failed.is_none() {
            // Read again at the next catch-up, a channel it could not empty is tried again.
            self.store
                .drop_cursor(platform, space_external_id, channel_external_id)
                .await?;
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(removed),
        }
    }

    /// The channels of (platform, space) that kept messages were said in: those to look at
    /// when the platform may have deleted some without a word.
    pub async fn channels_kept(
        &self,
        platform: Platform,
        space_external_id: &str,
    ) -> Result<Vec<String>, StoreError> {
        self.store
            .channels_with_messages(platform, space_external_id)
            .await
    }

    /// The platform message `external_id` of (platform, space, channel) was stored: the
    /// channel's newest seen moves to it (kept when messages are forgotten, so a restart never
    /// fetches one seen before).
    pub async fn seen(
        &self,
        platform: Platform,
        space_external_id: &str,
        channel_external_id: &str,
        external_id: i64,
    ) -> Result<(), StoreError> {
        self.store
            .saw_message(
                platform,
                space_external_id,
                channel_external_id,
                external_id,
                self.clock.now(),
            )
            .await
    }

    /// What a platform that does not deliver again fetches after a restart (see
    /// `MessageHandler::to_catch_up`): the channels seen within `within` (those not seen
    /// since are forgotten), and the messages of that time whose images or recordings still
    /// have a bare line (each once, newest first).
    pub async fn to_catch_up(
        &self,
        platform: Platform,
        within: std::time::Duration,
    ) -> Result<CatchUp, StoreError> {
        let since = self.clock.now()
            - chrono::Duration::from_std(within).unwrap_or(chrono::Duration::days(365));
        // Stale rows only cost reads: a failure to drop them stops nothing.
        if let Err(e) = self.store.drop_cursors_before(platform, since).await {
            tracing::warn!(error = %e, "old channel cursors could not be dropped");
        }
        let kinds: Vec<&str> = self
            .ingestor
            .described_kinds()
            .iter()
            .map(|k| k.as_str())
            .collect();
        let mut undescribed = Vec::new();
        if !kinds.is_empty() {
            for f in self.store.files_since(platform, since, &kinds).await? {
                if crate::ingest::attachments::is_bare(&f.text, f.attachment)
                    && undescribed.last() != Some(&f.at)
                {
                    undescribed.push(f.at);
                }
            }
        }
        Ok(CatchUp {
            since,
            channels: self.store.channels_seen_since(platform, since).await?,
            undescribed,
        })
    }

    /// Whether the bot keeps `msg` (by its platform ids). Under an id given through the API
    /// ("api:…"), a message of someone else's is not `msg` (the store keeps it theirs).
    pub async fn keeps(&self, msg: &IncomingMessage) -> Result<bool, StoreError> {
        let Some(kept) = self.kept(msg).await? else {
            return Ok(false);
        };
        if !msg.external_id.starts_with("api:") {
            return Ok(true);
        }
        let author = self
            .store
            .find_identity(msg.platform, &msg.author_external_id)
            .await?;
        Ok(author == Some(kept.author))
    }

    /// The stored message `msg` is (by its platform ids), if the bot keeps it.
    async fn kept(&self, msg: &IncomingMessage) -> Result<Option<StoredMessage>, StoreError> {
        self.store
            .message_by_external(
                msg.platform,
                &msg.space_external_id,
                &msg.channel_external_id,
                &msg.external_id,
            )
            .await
    }

    /// A platform message was edited: the old text leaves everything (as for a delete), and
    /// the new one is stored in its place, as said at the same time. It is not answered. An
    /// edit of a message the bot does not keep (never seen, forgotten, cleared) stays out.
    pub async fn message_edited(&self, msg: &IncomingMessage) -> Result<(), MemoryError> {
        let Some(old) = self.kept(msg).await? else {
            return Ok(());
        };
        // Unchanged (a pin, a link preview): nothing to redo. Otherwise what was made from the
        // old message goes, then its rows go in the transaction that stores the edit as new,
        // files and all (the platforms send the files with an edit): a failure or a stop in
        // between leaves the old text, never neither.
        let kept = self.store.message_attachments(old.id).await?;
        let edited =
            crate::ingest::stored_form(&crate::ingest::message_text(msg, &self.config.bot.name));
        if crate::ingest::attachments::unchanged(&old.text, &kept, &edited, &msg.attachments) {
            return Ok(());
        }
        let leaving = self.take_back_message(&old).await?;
        let mut msg = msg.clone();
        msg.sent_at = old.sent_at;
        let stored = self.store_new(&msg, Some(&leaving.messages)).await;
        // What was made from the old text is gone either way: caches and the audit follow,
        // even when the new text could not be stored.
        let deleted = match &stored {
            Ok(_) => leaving.messages.len() as u64,
            Err(_) => 0,
        };
        self.memory.message_left(&old, &leaving, deleted).await?;
        if let Some(mut ingested) = stored? {
            // An edit is not answered: its files count as posted in passing.
            self.describe(&msg, &mut ingested, false).await?;
        }
        Ok(())
    }

    /// A platform message gone (deleted, or edited into another): it leaves the history and
    /// everything derived from it, and a fact it asked to remember is taken back. Returns the
    /// messages removed.
    async fn forget_message(&self, message: &StoredMessage) -> Result<u64, MemoryError> {
        let leaving = self.take_back_message(message).await?;
        let deleted = self.store.delete_messages(&leaving.messages).await?;
        self.memory.message_left(message, &leaving, deleted).await
    }

    /// `forget_message` but for the message's rows, which an edit deletes in the transaction
    /// that stores its new text (`MemoryManager::take_back_message`).
    async fn take_back_message(
        &self,
        message: &StoredMessage,
    ) -> Result<crate::memory::forgetting::Leaving, MemoryError> {
        let fact = self.remembered_in(message);
        let fact = fact
            .as_ref()
            .map(|(f, everywhere)| (f.as_str(), *everywhere));
        // Taking a remembered fact back may ask the model: it counts as its author's.
        let payer = self.payer(message.author, message.space).0;
        paid_by(payer, self.memory.take_back_message(message, fact)).await
    }

    /// Whose work this is and whether it may spend on the model now (counted once towards
    /// the person's and the space's limits).
    fn payer(&self, person: PersonId, space: SpaceId) -> (Payer, Admission) {
        self.payer_by(person, space, Limits::admit)
    }

    /// `payer`, admitted by `admit` (`Limits::admit`, or `admit_person` for work nobody asked
    /// the bot for).
    fn payer_by(
        &self,
        person: PersonId,
        space: SpaceId,
        admit: fn(&Limits, PersonId, SpaceId) -> Admission,
    ) -> (Payer, Admission) {
        let admission = match &self.limits {
            Some(limits) => admit(limits, person, space),
            None => Admission::Allowed,
        };
        let payer = Payer {
            person,
            space,
            may_spend: admission == Admission::Allowed,
        };
        (payer, admission)
    }

    /// The fact a message of a person asked the bot to remember about themselves, and whether
    /// they asked for it to be known everywhere.
    fn remembered_in(&self, message: &StoredMessage) -> Option<(String, bool)> {
        if message.is_bot {
            return None;
        }
        let text =
            strip_address(&message.text, &self.config.bot.name).unwrap_or(message.text.clone());
        match parse_command_with(&text, self.ingestor.phrases()) {
            Command::Remember {
                subject: Subject::Speaker,
                fact,
            } => Some((fact, false)),
            Command::RememberEverywhere {
                subject: Subject::Speaker,
                fact,
            } => Some((fact, true)),
            _ => None,
        }
    }

    // Over 80 lines: one arm per command, each a call; the checks before them (empty, too
    // long, over a limit) apply to all.
    async fn answer(
        &self,
        msg: &IncomingMessage,
        ingested: &Ingested,
        admission: Admission,
    ) -> Result<Answer, MemoryError> {
        let t = &self.say(ingested);
        let text = ingested.command_text.trim();
        if text.is_empty() {
            return Ok(Answer::from(replies::yes(t, &self.config.bot.name)));
        }
        let len = text.chars().count();
        if len > self.config.bot.max_command_chars {
            return Ok(Answer::from(replies::too_long_to_act(
                t,
                len,
                self.config.bot.max_command_chars,
            )));
        }
        let moderator = ingested.author_is_moderator
            || self
                .config
                .is_moderator(msg.platform, &ingested.author_external_id);
        let command = ingested.command.clone();
        let shows_memory = shows_memory(&command);
        if !matches!(command, Command::Confirm(_)) {
            // A question the bot asked lapses once the person moves on.
            self.pending.invalidate(&Self::pending_key(ingested));
        }
        // Conversation needs the model: over a limit it gets a short answer instead. Memory
        // commands go on without the model (word for word).
        if let Some(wait) = replies::limited(t, admission)
            && matches!(command, Command::Chat)
        {
            return Ok(Answer::from(wait));
        }
        let said = match command {
            Command::Help => t.text("help"),
            Command::Chat => return self.responder.reply(ingested).await,
            Command::Memory(cmd) => self.memory_command(ingested, cmd).await?,
            Command::Confirm(yes) => match self.confirm(ingested, yes).await? {
                Some(answer) => answer,
                // Nothing was asked: a "yes" is conversation, and over a limit gets its answer.
                None => match replies::limited(t, admission) {
                    Some(wait) => wait,
                    None => return self.responder.reply(ingested).await,
                },
            },
            Command::RememberEverywhere { subject, fact } => {
                return self
                    .remember_everywhere(msg, ingested, &subject, &fact)
                    .await
                    .map(Answer::from);
            }
            Command::Remember { subject, fact } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
                if subject == ingested.message.author {
                    let outcome = self.capture(ingested, &fact).await?;
                    return Ok(Answer::from(replies::captured(t, &outcome)));
                }
                let req = self.fact_request(ingested, subject, &name, moderator, &fact);
                self.tell(t, &req).await?
            }
            Command::Forget { subject, fact } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
                let req = self.fact_request(ingested, subject, &name, moderator, &fact);
                info!(actor = %ingested.message.author, subject = %subject, "forget");
                replies::forgot(t, &self.memory.forget(&req).await?)
            }
            Command::ForgetEverything { subject } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
                let req = self.fact_request(ingested, subject, &name, moderator, "");
                let who = self.who(ingested, subject, &name);
                replies::forgot_everything(t, &who, self.memory.forget_everything(&req).await?)
            }
            Command::Recall { subject } => {
                let (subject, name) = self.resolve_subject(msg, ingested, &subject).await?;
                let memory = self
                    .memory
                    .person_memory(subject, &name, &ingested.place)
                    .await?;
                let who = self.who(ingested, subject, &name);
                replies::recall(t, &who, (!memory.is_empty()).then_some(&*memory.text))
            }
        };
        Ok(Answer {
            shows_memory,
            ..Answer::from(said)
        })
    }

    /// Keeps what the model asked to change for the person's "yes", and says so.
    fn ask_to_confirm(
        &self,
        ingested: &Ingested,
        text: String,
        staged: Vec<StagedChange>,
        forgets: i64,
    ) -> String {
        let changes: Vec<String> = staged.iter().map(StagedChange::describe).collect();
        self.ask(
            ingested,
            Pending::Tools {
                changes: staged,
                forgets,
            },
        );
        replies::confirm_changes(&self.say(ingested), &text, &changes)
    }

    /// Keeps what waits for the speaker's "yes" here, asked now.
    fn ask(&self, ingested: &Ingested, pending: Pending) {
        self.pending
            .insert(Self::pending_key(ingested), (pending, self.clock.now()));
    }

    fn asked_key(msg: &IncomingMessage) -> (Platform, String, String, String) {
        (
            msg.platform,
            msg.author_external_id.clone(),
            msg.space_external_id.clone(),
            msg.channel_external_id.clone(),
        )
    }

    /// Whether `msg` is a plain yes or no from someone the bot asked a question in this group
    /// channel less than `PLAIN_ANSWER_WINDOW` ago.
    fn answers_a_question(&self, msg: &IncomingMessage) -> bool {
        // Only the bare word, not an answer to someone else (a reply to another message).
        if msg.replies_to_bot || msg.author_is_bot || msg.reply_to_external_id.is_some() {
            return false;
        }
        let word = msg.text.trim().trim_end_matches(['.', '!']).to_lowercase();
        // One word: an answer with a tail ("sí, claro") is for the bot only when addressed.
        let plain = PLAIN_ANSWERS.contains(&word.as_str())
            || (!word.contains([' ', ',', ')'])
                && matches!(
                    self.ingestor.phrases().read(&word),
                    Some(Command::Confirm(_))
                ));
        if !plain {
            return false;
        }
        let Some(asked_at) = self.asked.get(&Self::asked_key(msg)) else {
            return false;
        };
        let now = self.clock.now();
        now >= asked_at && now - asked_at <= PLAIN_ANSWER_WINDOW
    }

    fn pending_key(ingested: &Ingested) -> (PersonId, String) {
        (
            ingested.message.author,
            ingested.place.home_scope().key() + "/" + &ingested.place.channel,
        )
    }

    /// "remember everywhere that …": the speaker's choice to have a fact about themselves (and
    /// no one else) known in every place.
    async fn remember_everywhere(
        &self,
        msg: &IncomingMessage,
        ingested: &Ingested,
        subject: &Subject,
        fact: &str,
    ) -> Result<String, MemoryError> {
        let (subject, _) = self.resolve_subject(msg, ingested, subject).await?;
        let others = ingested
            .mentions
            .iter()
            .any(|(p, _)| *p != ingested.message.author);
        if subject != ingested.message.author
            || others
            || crate::domain::mention::names_an_account(fact)
        {
            return Ok(self.say(ingested).text("everywhere-only-about-oneself"));
        }
        let everywhere = Ingested {
            place: Place {
                privacy: Privacy::Global,
                dm_owner: None,
                ..ingested.place.clone()
            },
            ..ingested.clone()
        };
        let outcome = self.capture(&everywhere, fact).await?;
        let t = &self.say(ingested);
        Ok(replies::known_everywhere(
            t,
            replies::captured(t, &outcome),
            &outcome,
        ))
    }

    /// "remember this about @name: …": kept as what the speaker told about them.
    async fn tell(&self, t: &Say<'_>, req: &FactRequest<'_>) -> Result<String, MemoryError> {
        info!(actor = %req.actor, subject = %req.subject, "told about someone");
        Ok(if self.memory.tell(req).await? {
            replies::told(t, req.subject_name, req.place.privacy == Privacy::Dm)
        } else {
            t.text("already-knew")
        })
    }

    /// "remember that …" about oneself: a structured entry (MEMORY.md) and the facts text.
    async fn capture(
        &self,
        ingested: &Ingested,
        fact: &str,
    ) -> Result<CaptureOutcome, MemoryError> {
        let me = &ingested.message;
        let req = self.fact_request(ingested, me.author, &me.author_name, false, fact);
        self.memory.capture(&req).await
    }

    async fn memory_command(
        &self,
        ingested: &Ingested,
        cmd: MemoryCommand,
    ) -> Result<String, MemoryError> {
        let t = &self.say(ingested);
        let person = ingested.message.author;
        let place = &ingested.place;
        let entries = &self.entries;
        let private = place.privacy == Privacy::Dm;
        Ok(match cmd {
            MemoryCommand::View => {
                let md = entries.memory_md(person, place).await?;
                let told = self.told_about(person, ingested).await?;
                let paused = entries.paused(person).await?;
                replies::memory_view(t, &md, &hearsay_lines(&told), paused, private)
            }
            MemoryCommand::Pause => {
                let by = By::request(&self.own_request(ingested));
                entries.set_paused(person, true, &by).await?;
                t.text("paused")
            }
            MemoryCommand::Resume => {
                let by = By::request(&self.own_request(ingested));
                entries.set_paused(person, false, &by).await?;
                t.text("resumed")
            }
            MemoryCommand::Clear => {
                self.ask(ingested, Pending::Clear);
                t.text("clear-ask")
            }
            MemoryCommand::Forget(topic) => self.forget_topic(ingested, &topic).await?,
            MemoryCommand::Search(query) => {
                let found = entries.search(person, place, &query, 10).await?;
                let found: Vec<(&str, Category)> = found
                    .iter()
                    .map(|(e, _)| (e.value.as_str(), e.category))
                    .collect();
                replies::search_results(t, &query, &found)
            }
            MemoryCommand::Export => entries.memory_md(person, place).await?,
            MemoryCommand::Link(code) => self.link(ingested, &code).await?,
            // Linked accounts are listed and cut only in a private chat: in a group the
            // answer would show the other platform's account to everyone there.
            MemoryCommand::Links | MemoryCommand::Unlink(_) if !private => {
                t.text("links-in-private")
            }
            MemoryCommand::Links => self.links(t, person).await?,
            MemoryCommand::Unlink(which) => self.unlink(ingested, &which).await?,
            MemoryCommand::Share(words) => self.share(ingested, &words, true).await?,
            MemoryCommand::Unshare(words) => self.share(ingested, &words, false).await?,
            MemoryCommand::Unknown(word) => replies::unknown_memory_command(t, &word),
        })
    }

    /// `/memory forget <topic>`: the speaker's entries and what others told about them that
    /// match the topic and may be seen here, listed for their "yes".
    async fn forget_topic(&self, ingested: &Ingested, topic: &str) -> Result<String, MemoryError> {
        let t = &self.say(ingested);
        if topic.trim().is_empty() {
            return Ok(t.text("forget-what"));
        }
        let person = ingested.message.author;
        let found = self
            .entries
            .search(person, &ingested.place, topic, 20)
            .await?;
        let told: Vec<(i64, String, String)> = self
            .told_about(person, ingested)
            .await?
            .into_iter()
            .filter(|h| {
                // The topic's words read in the statement's language, as the statement is.
                let language = crate::domain::language::detect(&h.text);
                let terms = query_terms_in(topic, 32, language);
                is_forgotten(&h.text, topic, "")
                    || document_terms_in(&h.text, language)
                        .terms
                        .iter()
                        .any(|(t, _)| terms.contains(t))
            })
            .map(|h| (h.id, h.text, h.told_by_name))
            .collect();
        if found.is_empty() && told.is_empty() {
            return Ok(replies::nothing_to_forget(t, topic));
        }
        let said = replies::forget_ask(
            t,
            &found
                .iter()
                .map(|(e, _)| e.value.as_str())
                .collect::<Vec<_>>(),
            &told
                .iter()
                .map(|(_, t, by)| (t.as_str(), by.as_str()))
                .collect::<Vec<_>>(),
        );
        self.ask(
            ingested,
            Pending::Forget {
                entries: found.iter().map(|(e, _)| (e.id, e.value.clone())).collect(),
                told: told.into_iter().map(|(id, t, _)| (id, t)).collect(),
            },
        );
        Ok(said)
    }

    /// `/memory share` (`everywhere`) or `/memory unshare`: the one entry of the speaker that
    /// matches `words` (every word of them) becomes known everywhere after their "yes", or
    /// (unshare, at once) known only in their private chat. Only their own entries that they
    /// may see where they ask can be chosen.
    async fn share(
        &self,
        ingested: &Ingested,
        words: &str,
        everywhere: bool,
    ) -> Result<String, MemoryError> {
        let t = &self.say(ingested);
        if words.trim().is_empty() {
            return Ok(replies::which_entry(t, everywhere));
        }
        let person = ingested.message.author;
        let place = &ingested.place;
        let found: Vec<crate::domain::Entry> = self
            .entries
            .search(person, place, words, 20)
            .await?
            .into_iter()
            .map(|(e, _)| e)
            .filter(|e| (e.scope == Scope::Global) != everywhere)
            // Every word asked for, not any one of them: a loose match moves nothing.
            .filter(|e| {
                let text = format!("{} {}", e.key.replace('_', " "), e.value);
                let language = crate::domain::language::detect(&text);
                let terms = document_terms_in(&text, language);
                query_terms_in(words, 32, language)
                    .iter()
                    .all(|w| terms.terms.iter().any(|(t, _)| t == w))
            })
            .collect();
        let entry = match found.as_slice() {
            [one] => one.clone(),
            [] => return Ok(replies::no_entry_to_share(t, words, everywhere)),
            many => {
                let values: Vec<&str> = many.iter().map(|e| e.value.as_str()).collect();
                return Ok(replies::several_entries(t, &values));
            }
        };
        if everywhere {
            if self.entries.paused(person).await? {
                return Ok(t.text("share-paused"));
            }
            if crate::domain::mention::names_an_account(&entry.value) {
                return Ok(t.text("share-mentions-someone"));
            }
            let learned = crate::memory::entries::origin(&entry.scope);
            self.ask(
                ingested,
                Pending::Share {
                    id: entry.id,
                    value: entry.value.clone(),
                },
            );
            return Ok(replies::share_ask(t, &entry.value, &learned));
        }
        self.move_entry(ingested, entry.id, &entry.value, Scope::Dm(person))
            .await
    }

    /// Moves an entry of the speaker to `to` (global: shared; their private scope: unshared)
    /// and its fact with it, and says what happened.
    async fn move_entry(
        &self,
        ingested: &Ingested,
        id: i64,
        value: &str,
        to: Scope,
    ) -> Result<String, MemoryError> {
        let t = &self.say(ingested);
        let person = ingested.message.author;
        let name = ingested.message.author_name.clone();
        let req = self.fact_request(ingested, person, &name, false, value);
        let moved = self.memory.move_entry(&req, id, to).await?;
        Ok(replies::moved(t, &moved, value))
    }

    /// What others told about `person` that they may see where they ask: in their own
    /// private chat all of it (but others' private notes), elsewhere what may surface there.
    async fn told_about(
        &self,
        person: PersonId,
        ingested: &Ingested,
    ) -> Result<Vec<crate::store::Hearsay>, MemoryError> {
        let place = &ingested.place;
        if place.privacy == Privacy::Dm && place.dm_owner == Some(person) {
            self.memory.hearsay_about(person).await
        } else {
            self.memory.hearsay_here(person, place).await
        }
    }

    /// `/memory link`: makes a one-time code (private chats only, as anyone who sees it could
    /// use it), or with a code made on another platform, names both accounts and asks for a
    /// "yes" before joining them. A code posted anywhere else is dead already (the ingestor
    /// revoked it); wrong codes are limited per account.
    async fn link(&self, ingested: &Ingested, code: &str) -> Result<String, MemoryError> {
        let t = &self.say(ingested);
        let place = &ingested.place;
        if place.privacy != Privacy::Dm {
            return Ok(replies::link_only_in_private(t, !code.trim().is_empty()));
        }
        let person = ingested.message.author;
        if code.trim().is_empty() {
            let code = self.linker.new_code(person, place.platform).await?;
            return Ok(replies::link_code(t, &code));
        }
        let checked = self
            .linker
            .check(person, place.platform, &ingested.author_external_id, code)
            .await?;
        let (code_hash, accounts) = match checked {
            CodeCheck::Ready {
                code_hash,
                accounts,
            } => (code_hash, accounts),
            CodeCheck::Refused(why) => return Ok(replies::code_refused(t, why)),
        };
        self.ask(ingested, Pending::Link { code_hash });
        Ok(replies::link_ask(
            t,
            place.platform,
            &ingested.message.author_name,
            &ingested.author_external_id,
            &accounts,
        ))
    }

    /// `/memory links`: the accounts that share this memory.
    async fn links(&self, t: &Say<'_>, person: PersonId) -> Result<String, MemoryError> {
        Ok(replies::links(t, &self.linker.accounts(person).await?))
    }

    /// `/memory unlink [platform]`: cuts a join from either side. Without a platform, this
    /// account leaves (or, if it is the one the others joined, they all do); with one, the
    /// accounts on that platform do.
    async fn unlink(&self, ingested: &Ingested, which: &str) -> Result<String, MemoryError> {
        let t = &self.say(ingested);
        let person = ingested.message.author;
        let here = ingested.place.platform;
        let which = which.trim().to_lowercase();
        let only = match which.as_str() {
            "" => None,
            p => match Platform::parse(p) {
                Some(p) => Some(p),
                None => return Ok(replies::not_a_platform(t, &which)),
            },
        };
        let cut = self
            .linker
            .unlink(person, here, &ingested.author_external_id, only)
            .await?;
        Ok(replies::unlinked(t, &cut))
    }

    async fn confirm(&self, ingested: &Ingested, yes: bool) -> Result<Option<String>, MemoryError> {
        let t = &self.say(ingested);
        let key = Self::pending_key(ingested);
        let Some((pending, asked_at)) = self.pending.remove(&key) else {
            return Ok(None);
        };
        if self.clock.now() - asked_at > chrono::TimeDelta::minutes(LINK_CODE_MINUTES) {
            return Ok(Some(replies::lapsed(t)));
        }
        if !yes {
            return Ok(Some(t.text("nothing-changed")));
        }
        let person = ingested.message.author;
        Ok(Some(match pending {
            Pending::Share { id, value } => {
                self.move_entry(ingested, id, &value, Scope::Global).await?
            }
            Pending::Forget { entries, told } => {
                let told: Vec<i64> = told.iter().map(|(id, _)| *id).collect();
                let req = self.own_request(ingested);
                let by = By::request(&req);
                let n = self
                    .memory
                    .delete_entries(&req, &entries, &told, &by)
                    .await?;
                replies::forgot_entries(t, n)
            }
            Pending::Clear => {
                let by = By::request(&self.own_request(ingested));
                self.memory.clear_with_joined(person, &by).await?;
                t.text("cleared")
            }
            Pending::Link { code_hash } => {
                let platform = ingested.place.platform;
                let redeemed = self
                    .linker
                    .redeem(&code_hash, platform, &ingested.author_external_id)
                    .await?;
                if matches!(redeemed, LinkRedeem::Linked { .. }) {
                    self.memory.refresh_caches();
                }
                replies::redeemed(t, &redeemed, platform)
            }
            Pending::Tools { changes, forgets } => {
                let req = self.own_request(ingested);
                match self.memory.apply_staged(&req, &changes, forgets).await? {
                    Some(n) => replies::changed_entries(t, n),
                    None => t.text("lapsed-forgotten"),
                }
            }
        }))
    }

    /// A request of the speaker about their own memory (its text is filled in per fact).
    fn own_request<'a>(&self, ingested: &'a Ingested) -> FactRequest<'a> {
        let me = &ingested.message;
        self.fact_request(ingested, me.author, &me.author_name, false, "")
    }

    fn who(&self, ingested: &Ingested, subject: PersonId, name: &str) -> String {
        if subject == ingested.message.author {
            replies::you(&self.say(ingested))
        } else {
            name.to_string()
        }
    }

    fn fact_request<'a>(
        &self,
        ingested: &'a Ingested,
        subject: PersonId,
        name: &'a str,
        moderator: bool,
        text: &'a str,
    ) -> FactRequest<'a> {
        FactRequest {
            subject,
            subject_name: name,
            actor: ingested.message.author,
            actor_name: &ingested.message.author_name,
            actor_is_moderator: moderator,
            place: &ingested.place,
            text,
            source: Some(ingested.message.id),
        }
    }

    /// The person a command is about: the speaker, someone mentioned, or a known name. A name
    /// that fits several people is not guessed: the speaker is asked to mention the one meant.
    async fn resolve_subject(
        &self,
        msg: &IncomingMessage,
        ingested: &Ingested,
        subject: &Subject,
    ) -> Result<(PersonId, String), MemoryError> {
        let speaker = (
            ingested.message.author,
            ingested.message.author_name.clone(),
        );
        let name = match subject {
            Subject::Speaker => return Ok(speaker),
            Subject::Named(name) | Subject::MaybeNamed(name) => name,
        };
        // A platform mention by account id ("<@123>" on Discord) names exactly that account.
        let mentioned_id = crate::domain::mention::ids_in(name);
        let name = match mentioned_id.as_slice() {
            [id] if name.trim_end_matches(['?', '.', ',', '!']).ends_with('>') => id,
            _ => name,
        };
        use crate::domain::same_name;
        if same_name(name, &ingested.message.author_name)
            || same_name(name, &ingested.author_external_id)
            || msg
                .author_username
                .as_deref()
                .is_some_and(|u| same_name(name, u))
        {
            return Ok(speaker);
        }
        // Mentions and account ids are unambiguous, and found platform-wide; names and
        // usernames count only among the people of this space. From a private chat, each
        // counts only among the people who share a space with the speaker: a stranger is not
        // named there, nor is a list of who goes by a name across the platform given.
        let speaker_id = ingested.message.author;
        let in_private = ingested.place.privacy == Privacy::Dm;
        let may_name = |id: PersonId| async move {
            Ok::<_, StoreError>(!in_private || self.store.shares_a_space(speaker_id, id).await?)
        };
        if let Some((id, shown)) = ingested.mentions.iter().find(|(_, n)| same_name(n, name))
            && may_name(*id).await?
        {
            return Ok((*id, shown.clone()));
        }
        let among = if in_private {
            Among::SpacesOf(speaker_id)
        } else {
            Among::Space(ingested.place.space)
        };
        let mut found: Vec<(PersonId, String, Option<String>)> = Vec::new();
        let by_id = match self.store.find_identity(msg.platform, name).await? {
            Some(id) if may_name(id).await? => Some(id),
            _ => None,
        };
        if let Some(id) = by_id {
            let shown = self
                .store
                .person(id)
                .await?
                .map(|p| p.display_name)
                .unwrap_or_else(|| name.clone());
            found.push((id, shown, None));
        }
        for m in self.store.find_people(msg.platform, name, among).await? {
            if !found.iter().any(|(id, _, _)| *id == m.person) {
                found.push((m.person, m.display_name, m.username));
            }
        }
        match (found.len(), subject) {
            (1, _) => {
                let (id, shown, _) = found.remove(0);
                Ok((id, shown))
            }
            (0, Subject::MaybeNamed(_)) => Ok(speaker),
            (0, _) => Err(MemoryError::UnknownPerson { name: name.clone() }),
            _ => {
                let who: Vec<String> = found
                    .iter()
                    .map(|(_, shown, username)| replies::candidate(shown, username.as_deref()))
                    .collect();
                Err(MemoryError::AmbiguousPerson {
                    name: name.clone(),
                    candidates: who,
                })
            }
        }
    }
}
