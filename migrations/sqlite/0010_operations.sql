-- Operations: an audit log of memory changes and LLM use per day (the admin page), and leases
-- that elect one process for work only one may do (Telegram's getUpdates).
-- One line per change to memory: who did it (a person, or an operator or job by label), what
-- kind of change, about whom, where (a scope key), and the message that asked for it. No
-- memory text is kept here: the page shows the asking message while it exists, so a forget
-- (which deletes the messages that stated a thing) leaves only "someone changed something".
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    actor_id    INTEGER,
    actor       TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    subject_id  INTEGER,
    scope       TEXT,
    message_id  INTEGER,
    count       INTEGER NOT NULL
);
CREATE INDEX audit_log_by_subject ON audit_log (subject_id, id);
-- LLM calls and tokens per UTC day, summed over every process.
CREATE TABLE llm_usage_days (
    day               TEXT    NOT NULL PRIMARY KEY,
    calls             INTEGER NOT NULL,
    failures          INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL
);
-- One holder per name until `until_ms` (renewed while it lives): e.g. the one process that
-- polls Telegram's getUpdates, which allows a single consumer per bot token.
CREATE TABLE leases (
    name     TEXT    NOT NULL PRIMARY KEY,
    holder   TEXT    NOT NULL,
    until_ms INTEGER NOT NULL
);
