-- Engram schema v1 (SQLite): people and identities, spaces, chat history, facts with their
-- version history, day summaries and history summaries. Times are Unix milliseconds (UTC).

CREATE TABLE people (
    id           INTEGER PRIMARY KEY,
    display_name TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
);

-- One row per platform account; several may point at one person.
CREATE TABLE identities (
    platform     TEXT    NOT NULL,
    external_id  TEXT    NOT NULL,
    person_id    INTEGER NOT NULL REFERENCES people(id),
    display_name TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (platform, external_id)
);
CREATE INDEX identities_by_name ON identities (platform, display_name COLLATE NOCASE);
CREATE INDEX identities_by_person ON identities (person_id);

CREATE TABLE spaces (
    id          INTEGER PRIMARY KEY,
    platform    TEXT    NOT NULL,
    external_id TEXT    NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('guild', 'group', 'private')),
    title       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (platform, external_id)
);

-- Chat history: every message, stored before anything else happens to it.
CREATE TABLE messages (
    id          INTEGER PRIMARY KEY,
    space_id    INTEGER NOT NULL REFERENCES spaces(id),
    channel     TEXT    NOT NULL,
    scope       TEXT    NOT NULL,
    privacy     TEXT    NOT NULL CHECK (privacy IN ('dm', 'channel_restricted', 'guild_public', 'global')),
    author_id   INTEGER NOT NULL REFERENCES people(id),
    is_bot      INTEGER NOT NULL,
    -- Memory commands ("remember that ...") are kept but are not chatter: summaries skip them.
    is_command  INTEGER NOT NULL DEFAULT 0,
    external_id TEXT    NOT NULL,
    reply_to    TEXT,
    text        TEXT    NOT NULL,
    sent_at     INTEGER NOT NULL,
    UNIQUE (space_id, channel, external_id)
);
CREATE INDEX messages_by_scope_time ON messages (scope, sent_at);
CREATE INDEX messages_by_scope_author_time ON messages (scope, author_id, sent_at);
CREATE INDEX messages_by_channel_time ON messages (space_id, channel, sent_at);

-- The current facts text per person and privacy scope; `version` guards concurrent merges.
CREATE TABLE facts (
    person_id  INTEGER NOT NULL REFERENCES people(id),
    scope      TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (person_id, scope)
);

-- Every change to a facts text: who changed what, when, from which message.
CREATE TABLE fact_versions (
    id                INTEGER PRIMARY KEY,
    person_id         INTEGER NOT NULL REFERENCES people(id),
    scope             TEXT    NOT NULL,
    version           INTEGER NOT NULL,
    op                TEXT    NOT NULL,
    request           TEXT    NOT NULL,
    text              TEXT    NOT NULL,
    method            TEXT    NOT NULL,
    changed_by        INTEGER REFERENCES people(id),
    source_message_id INTEGER REFERENCES messages(id),
    created_at        INTEGER NOT NULL,
    UNIQUE (person_id, scope, version)
);

-- One row per scope and UTC day: a JSON map person id -> summary.
CREATE TABLE day_summaries (
    scope              TEXT    NOT NULL,
    day                TEXT    NOT NULL,
    summaries          TEXT    NOT NULL,
    through_message_id INTEGER NOT NULL,
    message_count      INTEGER NOT NULL,
    is_final           INTEGER NOT NULL,
    computed_at        INTEGER NOT NULL,
    PRIMARY KEY (scope, day)
);

-- Per person and scope, over the days before `end_day` (days 2..7 seen from end_day + 1).
CREATE TABLE history_summaries (
    scope       TEXT    NOT NULL,
    person_id   INTEGER NOT NULL REFERENCES people(id),
    end_day     TEXT    NOT NULL,
    summary     TEXT    NOT NULL,
    computed_at INTEGER NOT NULL,
    PRIMARY KEY (scope, person_id, end_day)
);
