-- Attachments as memory. Each file is kept once, by the SHA-256 of its bytes, with its
-- metadata (not its bytes); `message_attachments` says which messages carried it. What can be
-- read of it (a text file's text, chunked by its structure) is stored as messages of their own
-- in the carrying message's scope, channel and time, with `attachment_of` pointing at it: they
-- are searchable (BM25 and vectors) where the message may surface, never shown as
-- conversation, and go when it goes. The carrying message's text ends with one line per
-- attachment ("[file#12 notes.md] …").
CREATE TABLE attachments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    sha256     TEXT    NOT NULL UNIQUE,
    kind       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    mime       TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE message_attachments (
    message_id    INTEGER NOT NULL,
    attachment_id INTEGER NOT NULL,
    PRIMARY KEY (message_id, attachment_id)
);
CREATE INDEX message_attachments_by_attachment ON message_attachments (attachment_id);
ALTER TABLE messages ADD COLUMN attachment_of INTEGER;
CREATE INDEX messages_by_attachment_of ON messages (attachment_of);
-- A withheld message (its author's memory was paused) is never read by the indexer: no
-- episode, no vector, no say in where a topic changes. New ones are stored indexed.
UPDATE messages SET indexed = 1 WHERE withheld = 1 AND indexed = 0;
