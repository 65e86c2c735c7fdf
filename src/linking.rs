//! Joining accounts on two platforms into one person: one-time link codes (made in a private
//! chat, checked and then redeemed on the other platform after the person's "yes"), the limit
//! on wrong codes, listing the joined accounts and cutting a join from either side. Outcomes
//! are typed; the bot words them.

use crate::domain::link;
use crate::domain::{Clock, PersonId, Platform};
use crate::store::{Account, LinkRedeem, Store, StoreError};
use std::sync::Arc;
use tracing::{info, warn};

/// How long a link code can be used, and the window of the wrong-code limit.
pub const CODE_MINUTES: i64 = 10;
/// Wrong link codes one account may try within that window.
pub const ATTEMPTS: u32 = 5;

/// What a code offered by an account is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeCheck {
    /// A good code: redeeming `code_hash` joins the account to the person of these accounts.
    Ready {
        /// What to redeem after the person's "yes".
        code_hash: String,
        /// The accounts of the person who made the code, to show before they agree.
        accounts: Vec<Account>,
    },
    /// A code that cannot be used, and why.
    Refused(CodeRefused),
}

/// Why a code cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeRefused {
    /// The account tried too many wrong codes lately; this one was not looked at.
    TooManyTries,
    /// No such code, or it expired (counted as a wrong try).
    Unknown,
    /// The code was made on the platform it is offered on.
    SamePlatform,
    /// The code is this person's own: the accounts are joined already.
    AlreadyLinked,
}

/// Link codes and joins over one store, with this process's wrong-code counts.
pub struct Linker {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// Wrong codes per account (platform, account id), for the attempt limit.
    failures: moka::sync::Cache<(Platform, String), u32>,
}

impl Linker {
    /// Linking over `store`, codes timed by `clock`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Linker {
        Linker {
            store,
            clock,
            failures: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(std::time::Duration::from_secs(CODE_MINUTES as u64 * 60))
                .build(),
        }
    }

    /// A new one-time code for `person`, made on `platform`; only its hash is kept, and it
    /// lapses after `CODE_MINUTES`.
    pub async fn new_code(
        &self,
        person: PersonId,
        platform: Platform,
    ) -> Result<String, StoreError> {
        let code = link::new_code();
        let now = self.clock.now();
        self.store
            .create_link_code(
                &link::code_hash(&code),
                person,
                platform,
                now,
                now + chrono::Duration::minutes(CODE_MINUTES),
            )
            .await?;
        info!(actor = %person, platform = platform.as_str(), "link code made");
        Ok(code)
    }

    /// What `code`, offered by `person`'s account `external_id` on `platform`, would do.
    /// Nothing is joined yet; a wrong code counts towards the account's limit.
    pub async fn check(
        &self,
        person: PersonId,
        platform: Platform,
        external_id: &str,
        code: &str,
    ) -> Result<CodeCheck, StoreError> {
        let account = (platform, external_id.to_string());
        let failures = self.failures.get(&account).unwrap_or(0);
        if failures >= ATTEMPTS {
            warn!(platform = platform.as_str(), "too many wrong link codes");
            return Ok(CodeCheck::Refused(CodeRefused::TooManyTries));
        }
        let code_hash = link::code_hash(code);
        let Some((owner, made_on)) = self
            .store
            .peek_link_code(&code_hash, self.clock.now())
            .await?
        else {
            self.failures.insert(account, failures + 1);
            return Ok(CodeCheck::Refused(CodeRefused::Unknown));
        };
        if made_on == platform {
            return Ok(CodeCheck::Refused(CodeRefused::SamePlatform));
        }
        if owner == person {
            return Ok(CodeCheck::Refused(CodeRefused::AlreadyLinked));
        }
        Ok(CodeCheck::Ready {
            code_hash,
            accounts: self.store.accounts(owner).await?,
        })
    }

    /// Joins account `external_id` on `platform` to the person of a checked code.
    pub async fn redeem(
        &self,
        code_hash: &str,
        platform: Platform,
        external_id: &str,
    ) -> Result<LinkRedeem, StoreError> {
        let done = self
            .store
            .redeem_link_code(code_hash, platform, external_id, self.clock.now())
            .await?;
        if let LinkRedeem::Linked { person } = &done {
            info!(to = %person, platform = platform.as_str(), "identity linked");
        }
        Ok(done)
    }

    /// The accounts that share `person`'s memory.
    pub async fn accounts(&self, person: PersonId) -> Result<Vec<Account>, StoreError> {
        self.store.accounts(person).await
    }

    /// Cuts joins of `person`, asked from their account `external_id` on `here`. Without
    /// `only`, this account leaves (or, if it is the one the others joined, they all do); with
    /// a platform, the accounts on that platform do. Returns the accounts cut off.
    pub async fn unlink(
        &self,
        person: PersonId,
        here: Platform,
        external_id: &str,
        only: Option<Platform>,
    ) -> Result<Vec<Account>, StoreError> {
        let accounts = self.store.accounts(person).await?;
        let me = accounts
            .iter()
            .find(|a| a.platform == here && a.external_id == external_id);
        let cut: Vec<&Account> = match (only, me) {
            (None, Some(me)) if me.linked() => vec![me],
            (None, _) => accounts.iter().filter(|a| a.linked()).collect(),
            (Some(p), me) => {
                let joined: Vec<_> = accounts
                    .iter()
                    .filter(|a| a.platform == p && a.linked())
                    .collect();
                match me {
                    // The join goes the other way: this account is the one that joined.
                    Some(me)
                        if joined.is_empty()
                            && me.linked()
                            && accounts.iter().any(|a| a.platform == p) =>
                    {
                        vec![me]
                    }
                    _ => joined,
                }
            }
        };
        let mut done = Vec::new();
        for a in cut {
            if self
                .store
                .unlink_identity(a.platform, &a.external_id)
                .await?
            {
                done.push(a.clone());
            }
        }
        if !done.is_empty() {
            info!(actor = %person, accounts = done.len(), "identities unlinked");
        }
        Ok(done)
    }
}
