-- Hybrid retrieval: BM25 from term postings (k1 and b are settings and idf follows the
-- searched scopes, which FTS5's bm25() cannot do: it fixes k1 = 1.2, b = 0.75 and takes idf
-- over the whole table, so one busy guild would skew every other's ranking), message vectors,
-- and episodes (runs of conversation in one channel) with their episodic memories.

DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
DROP TABLE messages_fts;

-- Postings, written with each message (terms come from Engram's own tokenizer, the same for
-- queries), so a message is searchable the moment it is stored.
CREATE TABLE message_terms (
    term       TEXT    NOT NULL,
    scope      TEXT    NOT NULL,
    message_id INTEGER NOT NULL,
    tf         INTEGER NOT NULL,
    doc_len    INTEGER NOT NULL,
    PRIMARY KEY (term, scope, message_id)
) WITHOUT ROWID;

-- Documents and total length per scope, for BM25's N and average document length.
CREATE TABLE scope_term_stats (
    scope     TEXT    PRIMARY KEY,
    docs      INTEGER NOT NULL,
    total_len INTEGER NOT NULL
);

-- Messages stored before this migration get their postings from the store when it opens.
CREATE TABLE message_terms_backlog (message_id INTEGER PRIMARY KEY);
INSERT INTO message_terms_backlog (message_id) SELECT id FROM messages;

-- Set by the background indexer: the message has its episode and (with an embedder) vector.
ALTER TABLE messages ADD COLUMN episode_id INTEGER;
ALTER TABLE messages ADD COLUMN indexed INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_unindexed ON messages (id) WHERE indexed = 0;
CREATE INDEX messages_by_episode ON messages (episode_id);

-- Unit vectors (little-endian f32) compared with sqlite-vec's vec_distance_cosine; the scope
-- column keeps the privacy filter inside the scan.
CREATE TABLE message_vectors (
    message_id INTEGER PRIMARY KEY,
    scope      TEXT    NOT NULL,
    embedding  BLOB    NOT NULL
);
CREATE INDEX message_vectors_by_scope ON message_vectors (scope);

-- An episode: messages of one channel without a pause longer than the episode gap. Closed
-- episodes become episodic memories: a topic summary, the supporting dialogue (its messages)
-- and an embedding; a new one that is nearly the same as an older one of the same scope
-- (and so the same privacy level) is merged into it.
CREATE TABLE episodes (
    id         INTEGER PRIMARY KEY,
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
    updated_at INTEGER NOT NULL
);
CREATE INDEX episodes_by_channel ON episodes (space_id, channel, ended_at);
CREATE INDEX episodes_by_scope ON episodes (scope, closed);

-- Episodes and their total length per scope: N and average length for episode-level BM25.
CREATE TABLE scope_episode_stats (
    scope     TEXT    PRIMARY KEY,
    episodes  INTEGER NOT NULL,
    total_len INTEGER NOT NULL
);
