//! People and their platform accounts, spaces, finding someone by name, the memory-paused
//! setting, and `/memory link`: one-time link codes that join two platforms' accounts.

use super::rows::ms;
use super::{StoreError, StoreResult};
use crate::domain::{Person, PersonId, Platform, SpaceId, SpaceKind};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Who is who: people, their accounts and spaces, and the links between accounts.
#[async_trait]
pub trait Identities: Send + Sync {
    /// Maps a platform account to a person, creating both on first sight; keeps the display
    /// name current.
    async fn resolve_person(
        &self,
        platform: Platform,
        external_id: &str,
        display_name: &str,
    ) -> StoreResult<PersonId> {
        Ok(self
            .resolve_account(platform, external_id, display_name, None)
            .await?
            .person)
    }

    /// `resolve_person` that also keeps the account's platform username (Telegram's @name;
    /// a username now used by this account is taken off any other account), and says in the
    /// same read whether the person's memory is paused.
    async fn resolve_account(
        &self,
        platform: Platform,
        external_id: &str,
        display_name: &str,
        username: Option<&str>,
    ) -> StoreResult<Resolved>;
    /// A platform account by id, without creating it.
    async fn find_identity(
        &self,
        platform: Platform,
        external_id: &str,
    ) -> StoreResult<Option<PersonId>>;
    /// A platform account by username (case-insensitive, without the @).
    async fn find_username(
        &self,
        platform: Platform,
        username: &str,
    ) -> StoreResult<Option<PersonId>>;
    /// People whose account on `platform` has this display name or username
    /// (case-insensitive in every script: "@ольга" is "Ольга" on both backends), one row per
    /// person, among `among`.
    async fn find_people(
        &self,
        platform: Platform,
        name: &str,
        among: Among,
    ) -> StoreResult<Vec<PersonMatch>>;
    /// Engram's own person on each platform it has spoken on (`domain::SELF_ACCOUNT`), not
    /// another bot's.
    async fn own_accounts(&self) -> StoreResult<Vec<PersonId>>;
    /// Whether `other` wrote in a space where `person` wrote (a private chat is a space only
    /// its owner and the bot write in).
    async fn shares_a_space(&self, person: PersonId, other: PersonId) -> StoreResult<bool>;
    /// The platform accounts of a person.
    async fn accounts(&self, person: PersonId) -> StoreResult<Vec<Account>>;
    /// A person by id, with their current display name.
    async fn person(&self, id: PersonId) -> StoreResult<Option<Person>>;
    /// The space (platform, external id), made on first sight with its kind and title.
    async fn resolve_space(
        &self,
        platform: Platform,
        external_id: &str,
        kind: SpaceKind,
        title: &str,
    ) -> StoreResult<SpaceId>;
    /// Display names of the accounts (those known) with these ids on the platform of
    /// `space`, for showing mentions stored as ids ("<@123>") by name.
    async fn identity_names(
        &self,
        space: SpaceId,
        external_ids: &[String],
    ) -> StoreResult<HashMap<String, String>>;
    /// Keeps a one-time link code (its hash) for `person`, made on `platform`; their earlier
    /// codes and everyone's expired ones go.
    async fn create_link_code(
        &self,
        code_hash: &str,
        person: PersonId,
        platform: Platform,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> StoreResult<()>;
    /// Joins the identity (platform, external_id) to the person of the code, once: the code is
    /// used up, and the identity remembers whose it was before.
    async fn redeem_link_code(
        &self,
        code_hash: &str,
        platform: Platform,
        external_id: &str,
        now: DateTime<Utc>,
    ) -> StoreResult<LinkRedeem>;
    /// Gives a linked identity back to the person it had before; false when it was not linked.
    async fn unlink_identity(&self, platform: Platform, external_id: &str) -> StoreResult<bool>;
    /// The person and platform of a live code, without using it up.
    async fn peek_link_code(
        &self,
        code_hash: &str,
        now: DateTime<Utc>,
    ) -> StoreResult<Option<(PersonId, Platform)>>;
    /// The hashes among `code_hashes` that are codes (live or expired), deleting them when
    /// `revoke` (seen where others could read them).
    async fn seen_link_codes(
        &self,
        code_hashes: &[String],
        revoke: bool,
    ) -> StoreResult<Vec<String>>;
    /// Pauses (`/memory pause`) or resumes a person's memory.
    async fn set_memory_paused(
        &self,
        person: PersonId,
        paused: bool,
        at: DateTime<Utc>,
    ) -> StoreResult<()>;
    /// Whether a person's memory is paused.
    async fn memory_paused(&self, person: PersonId) -> StoreResult<bool>;
    /// Notes that everything about `person` was cleared at `at` (a later time than any noted
    /// before stays): a message of theirs sent before it that comes later is not kept. Counts
    /// as a forget (`begin_forgetting`).
    async fn mark_memory_cleared(&self, person: PersonId, at: DateTime<Utc>) -> StoreResult<()>;
    /// Counts a forget of something of `person`'s, before it removes anything: a job's write
    /// made from what it read before (`forget_epoch`) no longer goes through, nor does an
    /// answer made meanwhile (`forgets_counted`, `Messages::insert_reply`).
    async fn begin_forgetting(&self, person: PersonId, at: DateTime<Utc>) -> StoreResult<()>;
    /// The forgets counted so far (`begin_forgetting`, `mark_memory_cleared`): anyone's, and
    /// `person`'s. Read before an answer is made.
    async fn forgets_counted(&self, person: PersonId) -> StoreResult<ForgetCounts>;
    /// How many forgets of `person`'s were counted (`begin_forgetting`): read before reading
    /// what a job makes something of.
    async fn forget_epoch(&self, person: PersonId) -> StoreResult<i64>;
    /// When the memory of the person behind this account was last cleared: its person's
    /// clear, or for an account joined to another person its own earlier person's (clearing
    /// the joined person clears that too; a clear made before the account was joined never
    /// reached it).
    async fn account_cleared_at(
        &self,
        platform: Platform,
        external_id: &str,
    ) -> StoreResult<Option<DateTime<Utc>>>;
}

/// How many forgets were counted (`Identities::forgets_counted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForgetCounts {
    /// Anyone's (`Messages::insert_reply` compares it).
    pub all: i64,
    /// One person's (their `forget_epoch`).
    pub of_person: i64,
}

/// The person behind an account, as `resolve_account` found or made them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// The person.
    pub person: PersonId,
    /// Their memory is paused (`/memory pause`).
    pub paused: bool,
}

/// A platform account of a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The platform.
    pub platform: Platform,
    /// The platform's id of the account.
    pub external_id: String,
    /// Its name as last seen.
    pub display_name: String,
    /// Its unique handle ("@name"), where the platform has one.
    pub username: Option<String>,
    /// Joined to this person by `/memory link`: the person it had before (whose memory comes
    /// back on unlink).
    pub own_person: Option<PersonId>,
}

impl Account {
    /// Joined to this person by `/memory link`.
    pub fn linked(&self) -> bool {
        self.own_person.is_some()
    }
}

/// Whom a name is looked for among (`Identities::find_people`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Among {
    /// Everyone on the platform (an operator's command).
    Everyone,
    /// People who wrote in this space.
    Space(SpaceId),
    /// People who wrote in a space where this person wrote: whom they may know (a private
    /// chat never names a stranger, nor says who goes by a name across the platform).
    SpacesOf(PersonId),
}

impl Among {
    /// The (space, person) parameters of `among!`.
    fn binds(self) -> (Option<i64>, Option<i64>) {
        match self {
            Among::Everyone => (None, None),
            Among::Space(s) => (Some(s.0), None),
            Among::SpacesOf(p) => (None, Some(p.0)),
        }
    }
}

/// The condition of `Among` on identity `i`, with the space as parameter `$3` and the person
/// as `$4`.
macro_rules! among {
    () => {
        "(CAST($3 AS BIGINT) IS NULL \
         OR EXISTS (SELECT 1 FROM messages m WHERE m.author_id = i.person_id AND m.space_id = $3)) \
         AND (CAST($4 AS BIGINT) IS NULL OR EXISTS (SELECT 1 FROM messages m WHERE m.author_id = i.person_id \
         AND m.space_id IN (SELECT o.space_id FROM messages o WHERE o.author_id = $4)))"
    };
}

/// A person whose account name or username matches a name someone used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonMatch {
    /// The person.
    pub person: PersonId,
    /// Their name as last seen.
    pub display_name: String,
    /// Their unique handle, where there is one.
    pub username: Option<String>,
}

/// What redeeming a link code did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkRedeem {
    /// The identity now belongs to the code's person.
    Linked {
        /// Whose it is now.
        person: PersonId,
    },
    /// No such code, or it has expired.
    Unknown,
    /// The code was made on the same platform: a link joins two platforms.
    SamePlatform,
    /// This identity already belongs to that person.
    AlreadyLinked,
}

/// person_id, display_name, username, paused (NULL: never set)
type KnownAccountRow = (i64, String, Option<String>, Option<bool>);

/// An account as stored: its person, name, username, and whether their memory is paused.
struct KnownAccount {
    person: PersonId,
    display_name: String,
    username: Option<String>,
    paused: bool,
}

impl KnownAccount {
    fn from_row((person, display_name, username, paused): KnownAccountRow) -> KnownAccount {
        KnownAccount {
            person: PersonId(person),
            display_name,
            username,
            paused: paused.unwrap_or(false),
        }
    }

    fn resolved(&self) -> Resolved {
        Resolved {
            person: self.person,
            paused: self.paused,
        }
    }
}

/// platform, external_id, display_name, username, own_person_id
type AccountRow = (String, String, String, Option<String>, Option<i64>);

fn accounts(rows: Vec<AccountRow>) -> StoreResult<Vec<Account>> {
    rows.into_iter()
        .map(|(platform, external_id, display_name, username, own)| {
            Ok(Account {
                platform: Platform::parse(&platform)
                    .ok_or_else(|| StoreError::Corrupt(format!("unknown platform {platform:?}")))?,
                external_id,
                display_name,
                username,
                own_person: own.map(PersonId),
            })
        })
        .collect()
}

on_both_backends! {
    #[async_trait]
    impl Identities for Backend {
        async fn resolve_account(
            &self,
            platform: Platform,
            external_id: &str,
            display_name: &str,
            username: Option<&str>,
        ) -> StoreResult<Resolved> {
            let username = username
                .map(|u| u.trim_start_matches('@'))
                .filter(|u| !u.is_empty());
            if let Some(known) = self.person_for_identity(platform, external_id).await? {
                let id = known.person;
                let new_username = username.is_some() && known.username.as_deref() != username;
                if known.display_name != display_name || new_username {
                    let mut tx = self.write_tx().await?;
                    sqlx::query("UPDATE identities SET display_name = $1, username = COALESCE($2, username) WHERE platform = $3 AND external_id = $4")
                        .bind(display_name)
                        .bind(username)
                        .bind(platform.as_str())
                        .bind(external_id)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    sqlx::query("UPDATE people SET display_name = $1 WHERE id = $2")
                        .bind(display_name)
                        .bind(id.0)
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    if let Some(u) = username.filter(|_| new_username) {
                        release_username(&mut tx, platform, external_id, u).await?;
                    }
                    tx.commit().await.map_err(db_err)?;
                }
                return Ok(known.resolved());
            }
            let now = ms(Utc::now());
            let mut tx = self.write_tx().await?;
            let person: i64 = sqlx::query_scalar(
                "INSERT INTO people (display_name, created_at) VALUES ($1, $2) RETURNING id",
            )
            .bind(display_name)
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
            // A concurrent insert of the same identity waits here for the other transaction, then
            // does nothing: one person per identity, whoever came second uses the first's.
            let inserted = sqlx::query(
                "INSERT INTO identities (platform, external_id, person_id, display_name, created_at, username) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (platform, external_id) DO NOTHING",
            )
            .bind(platform.as_str())
            .bind(external_id)
            .bind(person)
            .bind(display_name)
            .bind(now)
            .bind(username)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            if inserted == 0 {
                // Another writer created this identity first: use theirs, drop our person row.
                tx.rollback().await.map_err(db_err)?;
                return self
                    .person_for_identity(platform, external_id)
                    .await?
                    .map(|k| k.resolved())
                    .ok_or_else(|| StoreError::Conflict {
                        what: "identity".into(),
                    });
            }
            if let Some(u) = username {
                release_username(&mut tx, platform, external_id, u).await?;
            }
            tx.commit().await.map_err(db_err)?;
            Ok(Resolved {
                person: PersonId(person),
                paused: false,
            })
        }

        async fn find_identity(
            &self,
            platform: Platform,
            external_id: &str,
        ) -> StoreResult<Option<PersonId>> {
            Ok(self
                .person_for_identity(platform, external_id)
                .await?
                .map(|k| k.person))
        }

        async fn find_username(
            &self,
            platform: Platform,
            username: &str,
        ) -> StoreResult<Option<PersonId>> {
            let id: Option<i64> = sqlx::query_scalar(
                concat!("SELECT person_id FROM identities WHERE platform = $1 AND ", same_name!("username", 2), " LIMIT 1"),
            )
            .bind(platform.as_str())
            .bind(username.trim_start_matches('@'))
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            Ok(id.map(PersonId))
        }

        async fn find_people(
            &self,
            platform: Platform,
            name: &str,
            among: Among,
        ) -> StoreResult<Vec<PersonMatch>> {
            let name = name.trim_start_matches('@');
            if !name.is_ascii() {
                return self.find_people_by_letters(platform, name, among).await;
            }
            let (space, person) = among.binds();
            let rows: Vec<(i64, String, Option<String>)> = sqlx::query_as(
                concat!(
                    "SELECT i.person_id, MIN(i.display_name), MIN(i.username) FROM identities i \
                     WHERE i.platform = $1 AND (",
                    same_name!("i.display_name", 2),
                    " OR ",
                    same_name!("i.username", 2),
                    ") AND ",
                    among!(),
                    " GROUP BY i.person_id ORDER BY i.person_id",
                ),
            )
            .bind(platform.as_str())
            .bind(name)
            .bind(space)
            .bind(person)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows
                .into_iter()
                .map(|(id, display_name, username)| PersonMatch {
                    person: PersonId(id),
                    display_name,
                    username,
                })
                .collect())
        }

        async fn own_accounts(&self) -> StoreResult<Vec<PersonId>> {
            // By every platform: the key (platform, external_id) finds each without a scan.
            let platforms: Vec<&str> = Platform::ALL.iter().map(|p| p.as_str()).collect();
            let ids: Vec<i64> = sqlx::query_scalar(concat!(
                "SELECT DISTINCT person_id FROM identities WHERE external_id = $1 AND platform ",
                in_list!(2),
                " ORDER BY person_id"
            ))
            .bind(crate::domain::SELF_ACCOUNT)
            .bind(list(&platforms))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(ids.into_iter().map(PersonId).collect())
        }

        async fn shares_a_space(&self, person: PersonId, other: PersonId) -> StoreResult<bool> {
            sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM messages m WHERE m.author_id = $2 \
                 AND m.space_id IN (SELECT o.space_id FROM messages o WHERE o.author_id = $1))",
            )
            .bind(person.0)
            .bind(other.0)
            .fetch_one(self.pool())
            .await
            .map_err(db_err)
        }

        async fn accounts(&self, person: PersonId) -> StoreResult<Vec<Account>> {
            let rows: Vec<AccountRow> = sqlx::query_as(
                "SELECT platform, external_id, display_name, username, own_person_id FROM identities \
                 WHERE person_id = $1 ORDER BY platform, external_id",
            )
            .bind(person.0)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            accounts(rows)
        }

        async fn person(&self, id: PersonId) -> StoreResult<Option<Person>> {
            let name: Option<String> =
                sqlx::query_scalar("SELECT display_name FROM people WHERE id = $1")
                    .bind(id.0)
                    .fetch_optional(self.pool())
                    .await
                    .map_err(db_err)?;
            Ok(name.map(|display_name| Person { id, display_name }))
        }

        async fn resolve_space(
            &self,
            platform: Platform,
            external_id: &str,
            kind: SpaceKind,
            title: &str,
        ) -> StoreResult<SpaceId> {
            const FIND: &str = "SELECT id FROM spaces WHERE platform = $1 AND external_id = $2";
            // Read first: a space is made once and read with every message, and a read takes no
            // write lock (SQLite has one for the whole database).
            let existing: Option<i64> = sqlx::query_scalar(FIND)
                .bind(platform.as_str())
                .bind(external_id)
                .fetch_optional(self.pool())
                .await
                .map_err(db_err)?;
            if let Some(id) = existing {
                return Ok(SpaceId(id));
            }
            sqlx::query(
                "INSERT INTO spaces (platform, external_id, kind, title, created_at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (platform, external_id) DO NOTHING",
            )
            .bind(platform.as_str())
            .bind(external_id)
            .bind(kind.as_str())
            .bind(title)
            .bind(ms(Utc::now()))
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            let id: i64 = sqlx::query_scalar(FIND)
                .bind(platform.as_str())
                .bind(external_id)
                .fetch_one(self.pool())
                .await
                .map_err(db_err)?;
            Ok(SpaceId(id))
        }

        async fn identity_names(
            &self,
            space: SpaceId,
            external_ids: &[String],
        ) -> StoreResult<HashMap<String, String>> {
            if external_ids.is_empty() {
                return Ok(HashMap::new());
            }
            let rows: Vec<(String, String)> = sqlx::query_as(concat!(
                "SELECT i.external_id, i.display_name FROM identities i JOIN spaces s ON s.platform = i.platform \
                 WHERE s.id = $1 AND i.external_id ",
                in_list!(2)
            ))
            .bind(space.0)
            .bind(list(external_ids))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            Ok(rows.into_iter().collect())
        }

        async fn create_link_code(
            &self,
            code_hash: &str,
            person: PersonId,
            platform: Platform,
            now: DateTime<Utc>,
            expires_at: DateTime<Utc>,
        ) -> StoreResult<()> {
            let mut tx = self.write_tx().await?;
            sqlx::query("DELETE FROM link_codes WHERE expires_at <= $1 OR person_id = $2")
                .bind(ms(now))
                .bind(person.0)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            sqlx::query(
                "INSERT INTO link_codes (code_hash, person_id, platform, expires_at) VALUES ($1, $2, $3, $4)",
            )
            .bind(code_hash)
            .bind(person.0)
            .bind(platform.as_str())
            .bind(ms(expires_at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tx.commit().await.map_err(db_err)
        }

        async fn redeem_link_code(
            &self,
            code_hash: &str,
            platform: Platform,
            external_id: &str,
            now: DateTime<Utc>,
        ) -> StoreResult<LinkRedeem> {
            let mut tx = self.write_tx().await?;
            let code: Option<(i64, String, i64)> = sqlx::query_as(
                "SELECT person_id, platform, expires_at FROM link_codes WHERE code_hash = $1",
            )
            .bind(code_hash)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            let Some((person, code_platform, _)) = code.filter(|c| c.2 > ms(now)) else {
                return Ok(LinkRedeem::Unknown);
            };
            if code_platform == platform.as_str() {
                return Ok(LinkRedeem::SamePlatform);
            }
            let current: Option<i64> = sqlx::query_scalar(
                "SELECT person_id FROM identities WHERE platform = $1 AND external_id = $2",
            )
            .bind(platform.as_str())
            .bind(external_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            if current == Some(person) {
                return Ok(LinkRedeem::AlreadyLinked);
            }
            if current.is_none() {
                return Ok(LinkRedeem::Unknown);
            }
            sqlx::query(
                "UPDATE identities SET own_person_id = COALESCE(own_person_id, person_id), person_id = $1 \
                 WHERE platform = $2 AND external_id = $3",
            )
            .bind(person)
            .bind(platform.as_str())
            .bind(external_id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            sqlx::query("DELETE FROM link_codes WHERE code_hash = $1")
                .bind(code_hash)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(LinkRedeem::Linked {
                person: PersonId(person),
            })
        }

        async fn unlink_identity(&self, platform: Platform, external_id: &str) -> StoreResult<bool> {
            let mut tx = self.write_tx().await?;
            let changed = sqlx::query(
                "UPDATE identities SET person_id = own_person_id, own_person_id = NULL \
                 WHERE platform = $1 AND external_id = $2 AND own_person_id IS NOT NULL",
            )
            .bind(platform.as_str())
            .bind(external_id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?
            .rows_affected();
            tx.commit().await.map_err(db_err)?;
            Ok(changed > 0)
        }

        async fn peek_link_code(
            &self,
            code_hash: &str,
            now: DateTime<Utc>,
        ) -> StoreResult<Option<(PersonId, Platform)>> {
            let row: Option<(i64, String)> = sqlx::query_as(
                "SELECT person_id, platform FROM link_codes WHERE code_hash = $1 AND expires_at > $2",
            )
            .bind(code_hash)
            .bind(ms(now))
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            Ok(row.and_then(|(p, platform)| Some((PersonId(p), Platform::parse(&platform)?))))
        }

        async fn seen_link_codes(
            &self,
            code_hashes: &[String],
            revoke: bool,
        ) -> StoreResult<Vec<String>> {
            if code_hashes.is_empty() {
                return Ok(Vec::new());
            }
            sqlx::query_scalar(if revoke {
                concat!("DELETE FROM link_codes WHERE code_hash ", in_list!(1), " RETURNING code_hash")
            } else {
                concat!("SELECT code_hash FROM link_codes WHERE code_hash ", in_list!(1))
            })
            .bind(list(code_hashes))
            .fetch_all(self.pool())
            .await
            .map_err(db_err)
        }

        async fn set_memory_paused(
            &self,
            person: PersonId,
            paused: bool,
            at: DateTime<Utc>,
        ) -> StoreResult<()> {
            sqlx::query(
                "INSERT INTO memory_settings (person_id, paused, updated_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (person_id) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at",
            )
            .bind(person.0)
            .bind(paused)
            .bind(ms(at))
            .execute(self.pool())
            .await
            .map_err(db_err)?;
            Ok(())
        }

        async fn memory_paused(&self, person: PersonId) -> StoreResult<bool> {
            let row: Option<(bool,)> =
                sqlx::query_as("SELECT paused FROM memory_settings WHERE person_id = $1")
                    .bind(person.0)
                    .fetch_optional(self.pool())
                    .await
                    .map_err(db_err)?;
            Ok(row.is_some_and(|r| r.0))
        }

        async fn mark_memory_cleared(&self, person: PersonId, at: DateTime<Utc>) -> StoreResult<()> {
            let mut tx = self.write_tx().await?;
            count_forget(&mut tx).await?;
            sqlx::query(concat!(
                "INSERT INTO memory_settings (person_id, paused, updated_at, cleared_at, forget_epoch) VALUES ($1, false, $2, $2, 1) \
                 ON CONFLICT (person_id) DO UPDATE SET forget_epoch = memory_settings.forget_epoch + 1, cleared_at = ",
                greatest!("COALESCE(memory_settings.cleared_at, 0)", "excluded.cleared_at")
            ))
            .bind(person.0)
            .bind(ms(at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(())
        }

        async fn begin_forgetting(&self, person: PersonId, at: DateTime<Utc>) -> StoreResult<()> {
            let mut tx = self.write_tx().await?;
            count_forget(&mut tx).await?;
            sqlx::query(
                "INSERT INTO memory_settings (person_id, paused, updated_at, forget_epoch) VALUES ($1, false, $2, 1) \
                 ON CONFLICT (person_id) DO UPDATE SET forget_epoch = memory_settings.forget_epoch + 1",
            )
            .bind(person.0)
            .bind(ms(at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(())
        }

        async fn forgets_counted(&self, person: PersonId) -> StoreResult<ForgetCounts> {
            let (all, of_person): (i64, i64) = sqlx::query_as(
                "SELECT f.n, COALESCE((SELECT s.forget_epoch FROM memory_settings s WHERE s.person_id = $1), 0) \
                 FROM forget_count f WHERE f.id = 1",
            )
            .bind(person.0)
            .fetch_one(self.pool())
            .await
            .map_err(db_err)?;
            Ok(ForgetCounts { all, of_person })
        }

        async fn forget_epoch(&self, person: PersonId) -> StoreResult<i64> {
            let epoch: Option<i64> =
                sqlx::query_scalar("SELECT forget_epoch FROM memory_settings WHERE person_id = $1")
                    .bind(person.0)
                    .fetch_optional(self.pool())
                    .await
                    .map_err(db_err)?;
            Ok(epoch.unwrap_or(0))
        }

        async fn account_cleared_at(
            &self,
            platform: Platform,
            external_id: &str,
        ) -> StoreResult<Option<DateTime<Utc>>> {
            let cleared: Option<Option<i64>> = sqlx::query_scalar(
                "SELECT s.cleared_at FROM identities i \
                 LEFT JOIN memory_settings s ON s.person_id = COALESCE(i.own_person_id, i.person_id) \
                 WHERE i.platform = $1 AND i.external_id = $2",
            )
            .bind(platform.as_str())
            .bind(external_id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_err)?;
            cleared
                .flatten()
                .map(crate::store::rows::from_ms)
                .transpose()
        }
    }

    impl Backend {
        /// `find_people` of a name with letters beyond ASCII, which neither SQLite's NOCASE nor
        /// a `lower` in a C locale folds: the accounts with a name of as many characters,
        /// compared here with Unicode's lowercase.
        async fn find_people_by_letters(
            &self,
            platform: Platform,
            name: &str,
            among: Among,
        ) -> StoreResult<Vec<PersonMatch>> {
            let (space, person) = among.binds();
            let rows: Vec<(i64, String, Option<String>)> = sqlx::query_as(concat!(
                "SELECT i.person_id, i.display_name, i.username FROM identities i \
                 WHERE i.platform = $1 AND length(i.display_name) = $2 AND ",
                among!(),
                " ORDER BY i.person_id, i.display_name",
            ))
            .bind(platform.as_str())
            .bind(name.chars().count() as i64)
            .bind(space)
            .bind(person)
            .fetch_all(self.pool())
            .await
            .map_err(db_err)?;
            let wanted = name.to_lowercase();
            let mut out: Vec<PersonMatch> = Vec::new();
            for (id, display_name, username) in rows {
                if display_name.to_lowercase() != wanted
                    || out.last().is_some_and(|m| m.person.0 == id)
                {
                    continue;
                }
                out.push(PersonMatch {
                    person: PersonId(id),
                    display_name,
                    username,
                });
            }
            Ok(out)
        }

        async fn person_for_identity(
            &self,
            platform: Platform,
            external_id: &str,
        ) -> StoreResult<Option<KnownAccount>> {
            let row: Option<KnownAccountRow> = sqlx::query_as(
                "SELECT i.person_id, i.display_name, i.username, s.paused \
                 FROM identities i LEFT JOIN memory_settings s ON s.person_id = i.person_id \
                 WHERE i.platform = $1 AND i.external_id = $2",
            )
                .bind(platform.as_str())
                .bind(external_id)
                .fetch_optional(self.pool())
                .await
                .map_err(db_err)?;
            Ok(row.map(KnownAccount::from_row))
        }
    }

    /// A username belongs to one account: whoever had it before (it was renamed) loses it.
    async fn release_username(
        conn: &mut Conn,
        platform: Platform,
        external_id: &str,
        username: &str,
    ) -> StoreResult<()> {
        sqlx::query(
            concat!(
                "UPDATE identities SET username = NULL WHERE platform = $1 AND ",
                same_name!("username", 2),
                " AND external_id <> $3"
            ),
        )
        .bind(platform.as_str())
        .bind(username)
        .bind(external_id)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    /// One more forget counted (`Identities::forgets_counted`). On PostgreSQL it waits for a
    /// reply being stored with the count read (`Messages::insert_reply` holds the row).
    pub(in crate::store) async fn count_forget(conn: &mut Conn) -> StoreResult<()> {
        sqlx::query("UPDATE forget_count SET n = n + 1 WHERE id = 1")
            .execute(&mut *conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}
