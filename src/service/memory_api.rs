//! The memory engine for programs: API keys and what each may act for, who and where a call
//! is made, and the operations that the REST API (`/api/v1/{operation}`) and the MCP server
//! share: one list, one JSON schema each, the same privacy rules as the bot. A key acts for
//! one person in one place per call; everything it reads is what that person may see there,
//! and everything it writes goes through the bot's own paths (the same capture, confirmation
//! and forgetting as in a chat).

use crate::bot::Bot;
use crate::config::ApiKeyConfig;
use crate::domain::texts::Say;
use crate::domain::{
    Clock, IncomingMessage, MessageId, PersonId, Place, Platform, Privacy, SpaceKind,
    StoredMessage, Subject,
};
use crate::domain::{Command, Entry, Scope};
use crate::memory::FactRequest;
use crate::memory::audit::By;
use crate::memory::entries::EntryBook;
use crate::memory::tokens::TokenCounter;
use crate::memory::tools::{Caller, ToolExecutor, tool_schemas};
use crate::memory::{MemoryError, MemoryManager};
use crate::responder::describe_memory;
use crate::responder::prompt::render_prompt;
use crate::retrieval::Retriever;
use crate::store::Store;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Why a call was refused. The words are for the caller; causes go to the log only.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No key, or one that is not configured.
    #[error("missing or unknown API key")]
    Unauthorized,
    /// The key is not bound to this person or place.
    #[error("this key may not act for {0}")]
    Forbidden(String),
    /// The arguments are wrong.
    #[error("{0}")]
    BadRequest(String),
    /// No operation of this name.
    #[error("unknown operation {0:?}")]
    UnknownOperation(String),
    /// The store failed.
    #[error("memory is unavailable right now; try later")]
    Unavailable(#[source] MemoryError),
}

impl From<MemoryError> for ApiError {
    fn from(e: MemoryError) -> ApiError {
        ApiError::Unavailable(e)
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> ApiError {
        ApiError::Unavailable(MemoryError::Store(e))
    }
}

/// What a key names: every account (or space) of a platform, or one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    platform: Platform,
    /// None: any.
    id: Option<String>,
}

impl Pattern {
    fn parse(text: &str) -> Option<Pattern> {
        let (platform, id) = text.split_once(':')?;
        Some(Pattern {
            platform: Platform::parse(platform)?,
            id: (id != "*").then(|| id.to_string()),
        })
    }

    fn matches(&self, platform: Platform, id: &str) -> bool {
        self.platform == platform && self.id.as_deref().is_none_or(|own| own == id)
    }
}

/// A configured key: its name, the hash of its secret, and what it may act for.
#[derive(Debug, Clone)]
pub struct ApiKey {
    /// Its name, for logs and the audit trail.
    pub name: String,
    hash: [u8; 32],
    people: Vec<Pattern>,
    spaces: Vec<Pattern>,
    private_chats: bool,
    /// What its "api" accounts and spaces are kept under.
    namespace: String,
}

fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.trim().as_bytes()).into()
}

impl ApiKey {
    /// The key of `config`, whose secret is `secret`.
    pub fn new(config: &ApiKeyConfig, secret: &str) -> ApiKey {
        let patterns = |list: &[String]| list.iter().filter_map(|p| Pattern::parse(p)).collect();
        ApiKey {
            name: config.name.clone(),
            hash: digest(secret),
            people: patterns(&config.people),
            spaces: patterns(&config.spaces),
            private_chats: config.private_chats,
            namespace: config
                .namespace
                .clone()
                .unwrap_or_else(|| config.name.clone()),
        }
    }

    /// Whether it may act for `who`; the error names what it may not act for.
    fn allows(&self, who: &Who) -> Result<(), ApiError> {
        if !self
            .people
            .iter()
            .any(|p| p.matches(who.platform, &who.person))
        {
            return Err(ApiError::Forbidden(format!(
                "the person {}:{}",
                who.platform, who.person
            )));
        }
        match &who.space {
            None if self.private_chats => Ok(()),
            None => Err(ApiError::Forbidden("private chats".into())),
            // A restricted channel is only for the keys that name it, "platform:*" included (a
            // space's binding is its public channels: not every member sees every channel).
            Some(space) if who.restricted => {
                let exact = format!("{space}#{}", who.channel);
                let any = format!("{space}#*");
                if self.spaces.iter().any(|p| {
                    p.platform == who.platform
                        && (p.id.as_deref() == Some(exact.as_str())
                            || p.id.as_deref() == Some(any.as_str()))
                }) {
                    Ok(())
                } else {
                    Err(ApiError::Forbidden(format!(
                        "the restricted channel {}:{exact}",
                        who.platform
                    )))
                }
            }
            Some(space) if self.spaces.iter().any(|p| p.matches(who.platform, space)) => Ok(()),
            Some(space) => Err(ApiError::Forbidden(format!(
                "the space {}:{space}",
                who.platform
            ))),
        }
    }

    /// `who` as kept: an "api" account or space under this key's namespace.
    fn kept(&self, who: Who) -> Who {
        if who.platform != Platform::Api {
            return who;
        }
        let ns = &self.namespace;
        Who {
            person: format!("{ns}/{}", who.person),
            space: who.space.map(|s| format!("{ns}/{s}")),
            ..who
        }
    }
}

/// Why the keys could not be read at start.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// A key's variable is not set.
    #[error("server.api_keys: the key {name:?} reads {env}, which is not set")]
    Missing {
        /// The key.
        name: String,
        /// Its variable.
        env: String,
    },
    /// A key too short to be a secret.
    #[error(
        "server.api_keys: {env} (key {name:?}) is too easy to guess: use 16 characters or more, 8 of them different (e.g. `openssl rand -hex 24`)"
    )]
    Weak {
        /// The key.
        name: String,
        /// Its variable.
        env: String,
    },
}

/// The configured keys, their secrets read with `env` (the process environment in the
/// binary).
#[derive(Debug, Clone, Default)]
pub struct ApiKeys(Vec<Arc<ApiKey>>);

impl ApiKeys {
    /// Reads every key's secret; a key whose variable is unset or short stops the start.
    pub fn load(
        configs: &[ApiKeyConfig],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ApiKeys, KeyError> {
        let mut keys = Vec::new();
        for config in configs {
            let secret = env(&config.env)
                .filter(|s| !s.trim().is_empty())
                .ok_or_else(|| KeyError::Missing {
                    name: config.name.clone(),
                    env: config.env.clone(),
                })?;
            if crate::domain::secret::guessable(&secret) {
                return Err(KeyError::Weak {
                    name: config.name.clone(),
                    env: config.env.clone(),
                });
            }
            keys.push(Arc::new(ApiKey::new(config, &secret)));
        }
        Ok(ApiKeys(keys))
    }

    /// The binding of one configured key with no secret, for a stdio server (no network
    /// service: whoever runs it has the database already; the binding limits what its agent
    /// sees). No request over HTTP can match it.
    pub fn local(config: &ApiKeyConfig) -> ApiKeys {
        let unguessable: [u8; 32] = rand::random();
        ApiKeys(vec![Arc::new(ApiKey {
            hash: unguessable,
            ..ApiKey::new(config, "")
        })])
    }

    /// Whether no key is configured (then there is no API).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The key whose secret is `secret`. Hashes are compared, every one of them, so the time
    /// taken says nothing about how close a guess was.
    pub fn find(&self, secret: &str) -> Option<Arc<ApiKey>> {
        let wanted = digest(secret);
        let mut found = None;
        for key in &self.0 {
            let same = key
                .hash
                .iter()
                .zip(wanted.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
            if same {
                found = Some(key.clone());
            }
        }
        found
    }

    /// The key named `name`.
    pub fn named(&self, name: &str) -> Option<Arc<ApiKey>> {
        self.0.iter().find(|k| k.name == name).cloned()
    }
}

/// Who a call acts for and where: the fields every operation takes.
#[derive(Debug, Clone)]
struct Who {
    platform: Platform,
    person: String,
    /// The display name given; none: the one known (or the account id for someone new).
    name: Option<String>,
    /// None: the person's private chat with the bot.
    space: Option<String>,
    channel: String,
    restricted: bool,
}

fn string(args: &Map<String, Value>, field: &str) -> Result<Option<String>, ApiError> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::BadRequest(format!("{field} must be a string"))),
    }
}

fn required(args: &Map<String, Value>, field: &str) -> Result<String, ApiError> {
    string(args, field)?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ApiError::BadRequest(format!("{field} is required")))
}

/// A required text of at most `max` characters.
fn bounded(args: &Map<String, Value>, field: &str, max: usize) -> Result<String, ApiError> {
    let text = required(args, field)?;
    if text.chars().count() > max {
        return Err(ApiError::BadRequest(format!(
            "{field} is at most {max} characters"
        )));
    }
    Ok(text)
}

fn flag(args: &Map<String, Value>, field: &str) -> Result<bool, ApiError> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ApiError::BadRequest(format!(
            "{field} must be true or false"
        ))),
    }
}

fn count(args: &Map<String, Value>, field: &str, default: usize, max: usize) -> usize {
    args.get(field)
        .and_then(Value::as_u64)
        .map(|n| (n as usize).clamp(1, max))
        .unwrap_or(default)
}

/// The fields that say who and where.
const WHO_FIELDS: [&str; 6] = [
    "platform",
    "person",
    "name",
    "space",
    "channel",
    "restricted",
];

impl Who {
    /// Takes the who-and-where fields out of `args` (what is left are the operation's own).
    fn take(args: &mut Map<String, Value>) -> Result<Who, ApiError> {
        let platform = match string(args, "platform")? {
            None => Platform::Api,
            Some(p) => Platform::parse(&p)
                .ok_or_else(|| ApiError::BadRequest(format!("unknown platform {p:?}")))?,
        };
        let person = required(args, "person")?;
        let name = string(args, "name")?.filter(|n| !n.trim().is_empty());
        let space = string(args, "space")?.filter(|s| !s.trim().is_empty());
        let channel = string(args, "channel")?.unwrap_or_else(|| "general".into());
        let restricted = flag(args, "restricted")?;
        for field in WHO_FIELDS {
            args.remove(field);
        }
        if [Some(&person), name.as_ref(), Some(&channel), space.as_ref()]
            .into_iter()
            .flatten()
            .any(|s| s.chars().count() > 200 || s.contains('#'))
        {
            return Err(ApiError::BadRequest(
                "person, name, space and channel are at most 200 characters, without '#'".into(),
            ));
        }
        // Engram's own account on any platform (`domain::SELF_ACCOUNT`) is not a person a
        // program may act as: its words would count as what the bot said.
        if person.starts_with("engram:") {
            return Err(ApiError::BadRequest(
                "person ids named engram:… are the bot's own".into(),
            ));
        }
        // Where an answer only its asker sees is kept (a Discord ephemeral reply): never a
        // channel a program may name.
        if channel.starts_with("private:")
            || space.as_deref().is_some_and(|s| s.starts_with("private:"))
        {
            return Err(ApiError::BadRequest(
                "spaces and channels named private:… are the bot's own".into(),
            ));
        }
        Ok(Who {
            platform,
            person,
            name,
            space,
            channel,
            restricted,
        })
    }

    /// The name shown for them.
    fn shown(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.person)
    }

    /// A message said by this person here, with `text`.
    fn message(
        &self,
        text: &str,
        id: String,
        at: chrono::DateTime<chrono::Utc>,
    ) -> IncomingMessage {
        let (space, kind, channel, privacy) = match &self.space {
            None => {
                let dm = format!("private:{}", self.person);
                (dm.clone(), SpaceKind::Private, dm, Privacy::Dm)
            }
            Some(space) => (
                space.clone(),
                if self.platform == Platform::Discord {
                    SpaceKind::Guild
                } else {
                    SpaceKind::Group
                },
                self.channel.clone(),
                if self.restricted {
                    Privacy::ChannelRestricted
                } else {
                    Privacy::GuildPublic
                },
            ),
        };
        IncomingMessage {
            platform: self.platform,
            space_external_id: space,
            space_kind: kind,
            space_title: String::new(),
            channel_external_id: channel,
            channel_privacy: privacy,
            author_external_id: self.person.clone(),
            author_display_name: self.name.clone().unwrap_or_default(),
            author_username: None,
            author_is_bot: false,
            external_id: id,
            text: text.to_string(),
            sent_at: at,
            reply_to_external_id: None,
            replies_to_bot: false,
            mentions: Vec::new(),
            attachments: Vec::new(),
            author_is_moderator: false,
            private_answer: false,
            command: None,
        }
    }
}

/// What the memory API works with, from the composition root.
pub struct MemoryApiParts {
    /// The bot whose paths messages, remember and forget go through.
    pub bot: Arc<Bot>,
    /// The store.
    pub store: Arc<dyn Store>,
    /// Contexts.
    pub memory: Arc<MemoryManager>,
    /// MEMORY.md entries.
    pub entries: Arc<EntryBook>,
    /// Search of messages.
    pub retriever: Arc<Retriever>,
    /// The entry tools (not staging: the API's caller is the person's own program).
    pub tools: ToolExecutor,
    /// What contexts are measured with.
    pub tokens: TokenCounter,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// The default context budget (memory.context_budget_tokens).
    pub budget: usize,
    /// The configured keys.
    pub keys: ApiKeys,
}

/// The operations of the memory API and MCP server.
pub struct MemoryApi {
    parts: MemoryApiParts,
}

/// The entry tools the API offers (the model's `get_memory_context` is `get_context` here).
const ENTRY_TOOLS: [&str; 5] = [
    "write_memory",
    "read_memory",
    "search_memory",
    "update_memory",
    "delete_memory",
];

/// One operation: its name, what it does, and the JSON schema of its own arguments.
pub struct Operation {
    /// Its name (the REST path's last part, the MCP tool's name).
    pub name: &'static str,
    /// What it does.
    pub description: String,
    /// Its input schema, the who-and-where fields included.
    pub schema: Map<String, Value>,
}

fn who_properties() -> Map<String, Value> {
    let Value::Object(m) = json!({
        "person": {"type": "string", "description": "The person's account id on the platform (whose memory this is)"},
        "name": {"type": "string", "description": "Their display name (kept current)"},
        "platform": {"type": "string", "enum": ["api", "discord", "telegram", "console"], "default": "api"},
        "space": {"type": "string", "description": "The guild or group id; omit for the person's private chat with the bot"},
        "channel": {"type": "string", "default": "general"},
        "restricted": {"type": "boolean", "default": false, "description": "The channel is visible to some members only"}
    }) else {
        unreachable!("a JSON object")
    };
    m
}

fn operation(name: &'static str, description: &str, own: Value, required: &[&str]) -> Operation {
    let mut properties = who_properties();
    if let Value::Object(own) = own {
        properties.extend(own);
    }
    let mut required_fields = vec![json!("person")];
    required_fields.extend(required.iter().map(|r| json!(r)));
    let Value::Object(schema) = json!({
        "type": "object",
        "properties": properties,
        "required": required_fields,
    }) else {
        unreachable!("a JSON object")
    };
    Operation {
        name,
        description: description.to_string(),
        schema,
    }
}

/// Every operation, in the order the docs list them (built once).
pub fn operations() -> &'static [Operation] {
    static OPERATIONS: std::sync::LazyLock<Vec<Operation>> =
        std::sync::LazyLock::new(build_operations);
    &OPERATIONS
}

fn build_operations() -> Vec<Operation> {
    let mut ops = vec![
        operation(
            "add_message",
            "Store a message the person said here (learned later, like chatter); with respond, the bot answers it as in a chat.",
            json!({"text": {"type": "string"},
                   "id": {"type": "string", "description": "Your id of the message: sending it again stores it once"},
                   "sent_at": {"type": "string", "description": "RFC 3339; default now"},
                   "respond": {"type": "boolean", "default": false}}),
            &["text"],
        ),
        operation(
            "get_context",
            "The memory the bot would use to answer the person here about a query, within a token budget.",
            json!({"query": {"type": "string"}, "max_tokens": {"type": "integer", "minimum": 1}}),
            &["query"],
        ),
        operation(
            "search",
            "Hybrid search of the messages the person may see here.",
            json!({"query": {"type": "string"}, "limit": {"type": "integer", "default": 10, "maximum": 50}}),
            &["query"],
        ),
        operation(
            "remember",
            "Remember a fact the person tells, as \"remember that …\" in a chat; everywhere: shared in every place.",
            json!({"fact": {"type": "string"}, "everywhere": {"type": "boolean", "default": false}}),
            &["fact"],
        ),
        operation(
            "forget",
            "Forget what the person took back, as \"forget that …\" in a chat.",
            json!({"fact": {"type": "string"}}),
            &["fact"],
        ),
    ];
    for tool in tool_schemas() {
        let function = &tool["function"];
        let Some(name) = ENTRY_TOOLS
            .iter()
            .find(|n| function["name"].as_str() == Some(**n))
        else {
            continue;
        };
        let required: Vec<&str> = function["parameters"]["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        ops.push(operation(
            name,
            function["description"].as_str().unwrap_or_default(),
            function["parameters"]["properties"].clone(),
            &required,
        ));
    }
    ops.push(operation(
        "export",
        "The person's MEMORY.md and entries that may be seen here.",
        json!({}),
        &[],
    ));
    ops
}

fn show_entry(e: &Entry) -> Value {
    json!({"key": e.key, "value": e.value, "category": e.category.as_str(),
           "confidence": e.confidence, "source": e.source, "origin": e.origin,
           "updated_at": e.updated_at.to_rfc3339(),
           "expires_at": e.expires_at.map(|t| t.to_rfc3339())})
}

impl MemoryApi {
    /// The API over `parts`.
    pub fn new(parts: MemoryApiParts) -> MemoryApi {
        MemoryApi { parts }
    }

    /// The configured keys.
    pub fn keys(&self) -> &ApiKeys {
        &self.parts.keys
    }

    /// Runs operation `name` for `key` with `args` (a JSON object). A store failure is
    /// logged here, with its cause; the caller is told only that memory is unavailable.
    pub async fn call(&self, key: &ApiKey, name: &str, args: Value) -> Result<Value, ApiError> {
        let result = self.run(key, name, args).await;
        if let Err(ApiError::Unavailable(cause)) = &result {
            tracing::warn!(key = %key.name, operation = name, error = %cause, "memory API: the store failed");
        }
        result
    }

    async fn run(&self, key: &ApiKey, name: &str, args: Value) -> Result<Value, ApiError> {
        let Value::Object(mut args) = args else {
            return Err(ApiError::BadRequest(
                "the arguments are a JSON object".into(),
            ));
        };
        let Some(operation) = operations().iter().find(|o| o.name == name) else {
            return Err(ApiError::UnknownOperation(name.to_string()));
        };
        // A misspelt field is an error, not a default (a misspelt "space" would mean the
        // person's private chat).
        if let Some(unknown) = args.keys().find(|k| {
            !operation.schema["properties"]
                .as_object()
                .is_some_and(|p| p.contains_key(*k))
        }) {
            return Err(ApiError::BadRequest(format!("unknown field {unknown:?}")));
        }
        let who = Who::take(&mut args)?;
        key.allows(&who)?;
        let who = self.named(key.kept(who)).await?;
        tracing::info!(key = %key.name, operation = name, platform = who.platform.as_str(), "memory API call");
        match name {
            "add_message" => self.add_message(&who, &args).await,
            "remember" if flag(&args, "everywhere")? && !key.private_chats => Err(
                ApiError::Forbidden("memory shared everywhere (a key with private_chats)".into()),
            ),
            "remember" | "forget" => self.command(&who, name, &args).await,
            "get_context" => self.context(&who, &args).await,
            "search" => self.search(&who, &args).await,
            "export" => self.export(&who).await,
            tool => self.tool(key, &who, tool, args).await,
        }
    }

    /// A new message id for calls that give none: not guessable, so no other caller can
    /// take it first.
    fn next_id(&self) -> String {
        format!("api-{:032x}", rand::random::<u128>())
    }

    /// `who` with a display name: the one given, else the one known (a call never renames
    /// someone by leaving the name out), else their account id.
    async fn named(&self, who: Who) -> Result<Who, ApiError> {
        if who.name.is_some() {
            return Ok(who);
        }
        let store = &self.parts.store;
        let known = match store.find_identity(who.platform, &who.person).await? {
            Some(person) => store.person(person).await?.map(|p| p.display_name),
            None => None,
        };
        let fallback = who
            .person
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        Ok(Who {
            name: Some(known.unwrap_or(fallback)),
            ..who
        })
    }

    async fn add_message(&self, who: &Who, args: &Map<String, Value>) -> Result<Value, ApiError> {
        let text = bounded(args, "text", 4000)?;
        let now = self.parts.clock.now();
        let at = match string(args, "sent_at")? {
            None => now,
            Some(t) => chrono::DateTime::parse_from_rfc3339(&t)
                .map_err(|_| ApiError::BadRequest("sent_at is RFC 3339".into()))?
                .with_timezone(&chrono::Utc),
        };
        // A message from the future would stay the newest of its channel for everyone.
        if at > now + chrono::Duration::minutes(5) {
            return Err(ApiError::BadRequest("sent_at is in the future".into()));
        }
        let id = match string(args, "id")? {
            Some(id) if id.chars().count() > 200 => {
                return Err(ApiError::BadRequest("id is at most 200 characters".into()));
            }
            // Apart from the platforms' own ids: a caller never names a message it did not
            // send through the API (the store refuses another author's id as well).
            Some(id) => format!("api:{id}"),
            None => self.next_id(),
        };
        let mut msg = who.message(&text, id, at);
        if flag(args, "respond")? {
            msg.replies_to_bot = true;
            // Conversation only: a command said here ("/memory clear", "/memory unlink") would
            // reach past the places this key is bound to.
            msg.command = Some(Command::Chat);
            let reply = self.parts.bot.handle(&msg).await?;
            // Not stored when it was forgotten (or deleted) before: said again under its id.
            let stored = self.parts.bot.keeps(&msg).await?;
            return Ok(json!({"stored": stored, "reply": reply.map(|r| r.text)}));
        }
        let stored = self.parts.bot.keep(&msg).await?;
        Ok(json!({"stored": stored.is_some(), "reply": null}))
    }

    /// remember / forget, through the bot as if said in a chat.
    async fn command(
        &self,
        who: &Who,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let fact = bounded(args, "fact", 1000)?;
        let command = match name {
            "forget" => Command::Forget {
                subject: Subject::Speaker,
                fact: fact.clone(),
            },
            _ if flag(args, "everywhere")? => Command::RememberEverywhere {
                subject: Subject::Speaker,
                fact: fact.clone(),
            },
            _ => Command::Remember {
                subject: Subject::Speaker,
                fact: fact.clone(),
            },
        };
        let said = match name {
            "forget" => format!("forget that {fact}"),
            _ => format!("remember that {fact}"),
        };
        let mut msg = who.message(&said, self.next_id(), self.parts.clock.now());
        msg.command = Some(command);
        let reply = self.parts.bot.handle(&msg).await?;
        Ok(json!({"reply": reply.map(|r| r.text)}))
    }

    /// The person and place of `who`, when the person is known (a read of someone never seen
    /// finds nothing, and makes no one).
    async fn place(&self, who: &Who) -> Result<Option<(PersonId, Place)>, ApiError> {
        let store = &self.parts.store;
        let Some(person) = store.find_identity(who.platform, &who.person).await? else {
            return Ok(None);
        };
        let msg = who.message("", String::new(), self.parts.clock.now());
        let space = store
            .resolve_space(
                who.platform,
                &msg.space_external_id,
                msg.space_kind,
                &msg.space_title,
            )
            .await?;
        Ok(Some((person, crate::ingest::place_of(&msg, space, person))))
    }

    async fn context(&self, who: &Who, args: &Map<String, Value>) -> Result<Value, ApiError> {
        let query = bounded(args, "query", 2000)?;
        let budget = count(args, "max_tokens", self.parts.budget, 100_000);
        let Some((person, place)) = self.place(who).await? else {
            return Ok(json!({"context": "", "tokens": 0, "memory": ""}));
        };
        let bundle = self
            .parts
            .memory
            .context(&[(person, who.shown().to_string())], &place, &query)
            .await?;
        let question = StoredMessage {
            id: MessageId(0),
            space: place.space,
            channel: place.channel.clone(),
            scope: place.home_scope(),
            author: person,
            author_name: who.shown().to_string(),
            is_bot: false,
            language: crate::domain::language::detect(&query),
            text: query,
            sent_at: self.parts.clock.now(),
            episode: None,
            attachment_of: None,
        };
        let rendered = render_prompt("", &bundle, &question, budget, &self.parts.tokens);
        Ok(json!({"context": rendered.user, "tokens": rendered.tokens,
                  "memory": describe_memory(&bundle, &Say::new(self.parts.bot.texts(), None))}))
    }

    async fn search(&self, who: &Who, args: &Map<String, Value>) -> Result<Value, ApiError> {
        let query = bounded(args, "query", 2000)?;
        let limit = count(args, "limit", 10, 50);
        let Some((person, place)) = self.place(who).await? else {
            return Ok(json!({"results": []}));
        };
        let found = self
            .parts
            .retriever
            .search(
                &crate::ingest::stored_form(&query),
                &place.visible_scopes(person),
                Some(person),
                self.parts.clock.now(),
                limit,
            )
            .await?;
        let results: Vec<Value> = found
            .iter()
            .map(|r| {
                json!({"text": r.message.text, "author": r.message.author_name,
                       "sent_at": r.message.sent_at.to_rfc3339(), "score": r.score,
                       "bot": r.message.is_bot})
            })
            .collect();
        Ok(json!({ "results": results }))
    }

    async fn export(&self, who: &Who) -> Result<Value, ApiError> {
        let Some((person, place)) = self.place(who).await? else {
            return Ok(json!({"memory_md": "", "entries": []}));
        };
        let entries = self.parts.entries.visible(person, &place).await?;
        let memory_md = self.parts.entries.memory_md(person, &place).await?;
        Ok(json!({"memory_md": memory_md,
                  "entries": entries.iter().map(show_entry).collect::<Vec<_>>()}))
    }

    /// An entry tool, for the person here (made on first sight when it writes). An entry
    /// known everywhere is changed only by a key with `private_chats` (as `remember` with
    /// `everywhere` is); a deleted entry's text is forgotten everywhere else it is kept, as
    /// when someone confirms the delete in a chat.
    async fn tool(
        &self,
        key: &ApiKey,
        who: &Who,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let writes = matches!(tool, "write_memory" | "update_memory" | "delete_memory");
        let found = if writes {
            let msg = who.message("", String::new(), self.parts.clock.now());
            Some(self.parts.bot.resolve(&msg).await?)
        } else {
            self.place(who).await?
        };
        let Some((person, place)) = found else {
            return Ok(json!({"entries": [], "results": []}));
        };
        if matches!(tool, "update_memory" | "delete_memory") {
            let wanted = string(&args, "key")?.unwrap_or_default();
            let entry = self
                .parts
                .entries
                .visible(person, &place)
                .await?
                .into_iter()
                .find(|e| e.key == wanted.trim());
            if let Some(entry) = entry {
                if entry.scope == Scope::Global && !key.private_chats {
                    return Err(ApiError::Forbidden(
                        "memory shared everywhere (a key with private_chats)".into(),
                    ));
                }
                if tool == "delete_memory" {
                    return self.delete_entry(key, who, person, &place, entry).await;
                }
            }
        }
        let result = self
            .parts
            .tools
            .execute(
                &Caller { person, place },
                tool,
                &Value::Object(args).to_string(),
            )
            .await;
        match result.get("error").and_then(Value::as_str) {
            Some(e) => Err(ApiError::BadRequest(e.to_string())),
            None => Ok(result),
        }
    }

    /// Deletes `entry` of `person` the way a confirmed delete in a chat does: the entry,
    /// and its text wherever else it is kept (facts, notes, messages, the bot's answers).
    async fn delete_entry(
        &self,
        key: &ApiKey,
        who: &Who,
        person: PersonId,
        place: &Place,
        entry: Entry,
    ) -> Result<Value, ApiError> {
        let name = who.name.clone().unwrap_or_else(|| who.person.clone());
        let req = FactRequest {
            subject: person,
            subject_name: &name,
            actor: person,
            actor_name: &name,
            actor_is_moderator: false,
            place,
            text: &entry.value,
            source: None,
        };
        let by = By {
            label: format!("api:{}", key.name),
            ..By::request(&req)
        };
        let deleted = self
            .parts
            .memory
            .delete_entries(&req, &[(entry.id, entry.value.clone())], &[], &by)
            .await?;
        Ok(json!({"ok": true, "deleted": deleted}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(people: &[&str], spaces: &[&str], private_chats: bool) -> ApiKeyConfig {
        ApiKeyConfig {
            name: "k".into(),
            env: "K".into(),
            people: people.iter().map(|s| s.to_string()).collect(),
            spaces: spaces.iter().map(|s| s.to_string()).collect(),
            private_chats,
            namespace: None,
        }
    }

    fn who(platform: Platform, person: &str, space: Option<&str>) -> Who {
        Who {
            platform,
            person: person.into(),
            name: None,
            space: space.map(str::to_string),
            channel: "general".into(),
            restricted: false,
        }
    }

    #[test]
    fn a_key_acts_only_for_its_platforms_people_and_spaces() {
        let key = ApiKey::new(&config(&["api:*", "discord:42"], &["api:acme"], false), "s");
        assert!(
            key.allows(&who(Platform::Api, "anyone", Some("acme")))
                .is_ok()
        );
        assert!(
            key.allows(&who(Platform::Discord, "42", Some("acme")))
                .is_err()
        );
        assert!(
            key.allows(&who(Platform::Api, "anyone", Some("globex")))
                .is_err()
        );
        assert!(
            key.allows(&who(Platform::Telegram, "anyone", Some("acme")))
                .is_err()
        );
        assert!(key.allows(&who(Platform::Api, "anyone", None)).is_err());
        let private = ApiKey::new(&config(&["api:me"], &[], true), "s");
        assert!(private.allows(&who(Platform::Api, "me", None)).is_ok());
        assert!(private.allows(&who(Platform::Api, "you", None)).is_err());
        // "*" matches every id of its platform only; a pattern with no platform matches nothing.
        assert!(Pattern::parse("nowhere:*").is_none());
        assert!(Pattern::parse("*").is_none());
    }

    #[test]
    fn engrams_own_account_is_no_person_a_program_acts_as() {
        let who = |platform: &str, person: &str| {
            let mut args = json!({"platform": platform, "person": person, "space": "g1"});
            Who::take(args.as_object_mut().unwrap()).map(|w| w.person)
        };
        for platform in ["discord", "telegram", "console", "api"] {
            assert!(
                matches!(
                    who(platform, crate::domain::SELF_ACCOUNT),
                    Err(ApiError::BadRequest(_))
                ),
                "{platform}"
            );
            assert_eq!(who(platform, "4242").unwrap(), "4242", "{platform}");
        }
    }

    #[test]
    fn keys_are_found_by_their_whole_secret_only() {
        let configs = vec![config(&["api:*"], &[], false)];
        let secret = "0123456789abcdef-secret";
        let keys = ApiKeys::load(&configs, |_| Some(secret.into())).unwrap();
        assert_eq!(keys.find(secret).map(|k| k.name.clone()), Some("k".into()));
        for guess in ["", "0123456789abcdef", "0123456789abcdef-secreT", "x"] {
            assert!(keys.find(guess).is_none(), "{guess}");
        }
        assert!(matches!(
            ApiKeys::load(&configs, |_| None),
            Err(KeyError::Missing { .. })
        ));
        assert!(matches!(
            ApiKeys::load(&configs, |_| Some("short".into())),
            Err(KeyError::Weak { .. })
        ));
        assert!(matches!(
            ApiKeys::load(&configs, |_| Some("ab".repeat(12))),
            Err(KeyError::Weak { .. })
        ));
        // A stdio binding has no secret anything could match.
        let local = ApiKeys::local(&configs[0]);
        assert!(local.named("k").is_some());
        assert!(local.find("").is_none() && local.find(secret).is_none());
    }
}
