-- Hybrid retrieval: message vectors (the messages.embedding column of 0001), episodes (runs
-- of conversation in one channel) with their episodic memories, and the indexer's queue.

ALTER TABLE messages ADD COLUMN episode_id BIGINT;
ALTER TABLE messages ADD COLUMN indexed BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX messages_unindexed ON messages (id) WHERE NOT indexed;
CREATE INDEX messages_by_episode ON messages (episode_id);

CREATE TABLE episodes (
    id         BIGSERIAL PRIMARY KEY,
    scope      TEXT    NOT NULL,
    space_id   BIGINT  NOT NULL,
    channel    TEXT    NOT NULL,
    started_at BIGINT  NOT NULL,
    ended_at   BIGINT  NOT NULL,
    messages   INT     NOT NULL,
    total_len  BIGINT  NOT NULL,
    summary    TEXT,
    embedding  vector(384),
    closed     BOOLEAN NOT NULL DEFAULT false,
    updated_at BIGINT  NOT NULL
);
CREATE INDEX episodes_by_channel ON episodes (space_id, channel, ended_at);
CREATE INDEX episodes_by_scope ON episodes (scope, closed);

-- Episodes and their total length per scope: N and average length for episode-level BM25.
CREATE TABLE scope_episode_stats (
    scope     TEXT   PRIMARY KEY,
    episodes  BIGINT NOT NULL,
    total_len BIGINT NOT NULL
);

-- Postings now come from Engram's own tokenizer (stop words dropped, English stems), the same
-- one that reads queries and the same as on SQLite; the store writes them with each message.
DROP TRIGGER messages_terms_insert ON messages;
DROP TRIGGER messages_terms_delete ON messages;
DROP FUNCTION message_terms_insert();
DROP FUNCTION message_terms_delete();
ALTER TABLE messages DROP COLUMN tsv;
TRUNCATE message_terms;
TRUNCATE scope_term_stats;
-- Messages stored before this migration get their postings from the store when it opens.
CREATE TABLE message_terms_backlog (message_id BIGINT PRIMARY KEY);
INSERT INTO message_terms_backlog (message_id) SELECT id FROM messages;
