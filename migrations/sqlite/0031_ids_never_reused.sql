-- no-transaction
-- An id is never given again, as on PostgreSQL (whose sequences never go back). A plain
-- INTEGER PRIMARY KEY takes the largest id in the table plus one, so deleting the newest row
-- handed its id to the next one stored. Anything still holding the old id then pointed at the
-- new row: the indexer, which had read a message before it was deleted, put the next message
-- stored (a private chat's) into the deleted one's public conversation by that id. Each table
-- rows are deleted from is made again with AUTOINCREMENT, keeping every row, id and index.
-- Foreign keys are off while the tables are swapped (a table dropped with them on is emptied
-- first: episode_terms would have lost its rows by ON DELETE CASCADE); every row keeps its
-- id, so every reference still holds. The ids go on from the largest kept, or from the
-- largest ever given where the table already had AUTOINCREMENT (this file run again after a
-- crash between its COMMIT and its record).
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE messages_ai (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
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
    episode_id  INTEGER,
    indexed     INTEGER NOT NULL DEFAULT 0,
    withheld    INTEGER NOT NULL DEFAULT 0,
    attachment_of INTEGER,
    language    TEXT,
    UNIQUE (space_id, channel, external_id)
);
INSERT INTO messages_ai SELECT * FROM messages;
INSERT INTO sqlite_sequence (name, seq) SELECT 'messages_ai', 0
 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'messages_ai');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0))
 WHERE name = 'messages_ai';
DROP TABLE messages;
ALTER TABLE messages_ai RENAME TO messages;
CREATE INDEX messages_by_scope_time ON messages (scope, sent_at);
CREATE INDEX messages_by_scope_author_time ON messages (scope, author_id, sent_at);
CREATE INDEX messages_by_channel_time ON messages (space_id, channel, sent_at);
CREATE INDEX messages_by_time ON messages (sent_at);
CREATE INDEX messages_unindexed ON messages (id) WHERE indexed = 0;
CREATE INDEX messages_by_episode ON messages (episode_id);
CREATE INDEX messages_by_author_space ON messages (author_id, space_id);
CREATE INDEX messages_by_reply_to ON messages (reply_to) WHERE reply_to IS NOT NULL;
CREATE INDEX messages_by_attachment_of ON messages (attachment_of);
CREATE INDEX messages_said_by_scope ON messages (scope, author_id) WHERE NOT is_bot AND NOT withheld;
CREATE INDEX messages_withheld_bots ON messages (scope) WHERE is_bot AND withheld;
CREATE INDEX messages_by_language ON messages (language) WHERE language IS NOT NULL AND NOT withheld;

CREATE TABLE episodes_ai (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope      TEXT    NOT NULL,
    space_id   INTEGER NOT NULL,
    channel    TEXT    NOT NULL,
    started_at INTEGER NOT NULL,
    ended_at   INTEGER NOT NULL,
    messages   INTEGER NOT NULL,
    total_len  INTEGER NOT NULL,
    summary    TEXT,
    embedding  BLOB,
    closed     INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    superseded BOOLEAN NOT NULL DEFAULT false,
    started_by TEXT NOT NULL DEFAULT 'gap',
    running_summary TEXT,
    open_loops TEXT,
    summarized_messages INTEGER NOT NULL DEFAULT 0,
    summarized_len INTEGER NOT NULL DEFAULT 0,
    details TEXT,
    embedding_space INTEGER,
    keys_len INTEGER,
    summarized_through INTEGER,
    closing_parts TEXT
);
INSERT INTO episodes_ai SELECT * FROM episodes;
INSERT INTO sqlite_sequence (name, seq) SELECT 'episodes_ai', 0
 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'episodes_ai');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'episodes'), 0))
 WHERE name = 'episodes_ai';
DROP TABLE episodes;
ALTER TABLE episodes_ai RENAME TO episodes;
CREATE INDEX episodes_by_channel ON episodes (space_id, channel, ended_at);
CREATE INDEX episodes_by_scope ON episodes (scope, closed);
CREATE INDEX episodes_without_keys ON episodes (ended_at, id) WHERE details IS NOT NULL AND keys_len IS NULL;

CREATE TABLE memory_entries_ai (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    person_id  INTEGER NOT NULL REFERENCES people(id),
    scope      TEXT    NOT NULL,
    category   TEXT    NOT NULL CHECK (category IN ('preference', 'work_context', 'personal_context', 'reading_history')),
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    confidence REAL    NOT NULL,
    source     TEXT    NOT NULL,
    origin     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER,
    UNIQUE (person_id, scope, category, key)
);
INSERT INTO memory_entries_ai SELECT * FROM memory_entries;
INSERT INTO sqlite_sequence (name, seq) SELECT 'memory_entries_ai', 0
 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'memory_entries_ai');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'memory_entries'), 0))
 WHERE name = 'memory_entries_ai';
DROP TABLE memory_entries;
ALTER TABLE memory_entries_ai RENAME TO memory_entries;
CREATE INDEX memory_entries_by_person ON memory_entries (person_id, updated_at);
CREATE INDEX memory_entries_by_source ON memory_entries (source);

CREATE TABLE memory_entry_history_ai (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_id   INTEGER NOT NULL,
    person_id  INTEGER NOT NULL REFERENCES people(id),
    value      TEXT    NOT NULL,
    confidence REAL    NOT NULL,
    source     TEXT    NOT NULL,
    replaced_at INTEGER NOT NULL,
    replaced_by TEXT   NOT NULL
);
INSERT INTO memory_entry_history_ai SELECT * FROM memory_entry_history;
INSERT INTO sqlite_sequence (name, seq) SELECT 'memory_entry_history_ai', 0
 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'memory_entry_history_ai');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'memory_entry_history'), 0))
 WHERE name = 'memory_entry_history_ai';
DROP TABLE memory_entry_history;
ALTER TABLE memory_entry_history_ai RENAME TO memory_entry_history;
CREATE INDEX memory_entry_history_by_entry ON memory_entry_history (entry_id);
CREATE INDEX memory_entry_history_by_person ON memory_entry_history (person_id);
CREATE INDEX memory_entry_history_by_source ON memory_entry_history (source);

CREATE TABLE fact_versions_ai (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
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
INSERT INTO fact_versions_ai SELECT * FROM fact_versions;
INSERT INTO sqlite_sequence (name, seq) SELECT 'fact_versions_ai', 0
 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'fact_versions_ai');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'fact_versions'), 0))
 WHERE name = 'fact_versions_ai';
DROP TABLE fact_versions;
ALTER TABLE fact_versions_ai RENAME TO fact_versions;
CREATE INDEX fact_versions_by_source ON fact_versions (source_message_id) WHERE source_message_id IS NOT NULL;

CREATE TABLE hearsay_ai (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    subject_id        INTEGER NOT NULL REFERENCES people(id),
    scope             TEXT    NOT NULL,
    told_by           INTEGER NOT NULL REFERENCES people(id),
    text              TEXT    NOT NULL,
    source_message_id INTEGER,
    created_at        INTEGER NOT NULL,
    UNIQUE (subject_id, scope, told_by, text)
);
INSERT INTO hearsay_ai SELECT * FROM hearsay;
INSERT INTO sqlite_sequence (name, seq) SELECT 'hearsay_ai', 0
 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'hearsay_ai');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'hearsay'), 0))
 WHERE name = 'hearsay_ai';
DROP TABLE hearsay;
ALTER TABLE hearsay_ai RENAME TO hearsay;
CREATE INDEX hearsay_by_teller ON hearsay (told_by);
CREATE INDEX hearsay_by_source ON hearsay (source_message_id) WHERE source_message_id IS NOT NULL;

CREATE TABLE daily_notes_ai (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    person_id INTEGER NOT NULL REFERENCES people(id),
    day       TEXT    NOT NULL,
    scope     TEXT    NOT NULL,
    text      TEXT    NOT NULL,
    source    TEXT    NOT NULL,
    added_at  INTEGER NOT NULL
);
INSERT INTO daily_notes_ai SELECT * FROM daily_notes;
INSERT INTO sqlite_sequence (name, seq) SELECT 'daily_notes_ai', 0
 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'daily_notes_ai');
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'daily_notes'), 0))
 WHERE name = 'daily_notes_ai';
DROP TABLE daily_notes;
ALTER TABLE daily_notes_ai RENAME TO daily_notes;
CREATE INDEX daily_notes_by_person ON daily_notes (person_id, day, id);
CREATE UNIQUE INDEX daily_notes_once ON daily_notes (person_id, day, source);

COMMIT;
PRAGMA foreign_keys = ON;
