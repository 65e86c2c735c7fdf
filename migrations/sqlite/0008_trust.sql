-- Trust (forgetting, pause, attribution, usernames).
-- A paused person's messages are stored but withheld from everything derived: summaries,
-- extraction, postings and vectors.
ALTER TABLE messages ADD COLUMN withheld INTEGER NOT NULL DEFAULT 0;
-- A person's messages by place: forgetting and clearing them, and finding who wrote where.
CREATE INDEX messages_by_author_space ON messages (author_id, space_id);
-- The bot's replies point at the message they answer (its id, as text): deleting a message
-- deletes the replies to it.
CREATE INDEX messages_by_reply_to ON messages (reply_to) WHERE reply_to IS NOT NULL;
-- Platform usernames (Telegram @names): mentions by @username resolve to the account.
ALTER TABLE identities ADD COLUMN username TEXT;
CREATE INDEX identities_by_username ON identities (platform, username COLLATE NOCASE) WHERE username IS NOT NULL;
-- What someone said about another person ("remember this about @bob: …"): kept as theirs,
-- shown as such, never merged into the subject's own facts; the subject (or the teller, or a
-- moderator) can remove it.
CREATE TABLE hearsay (
    id                INTEGER PRIMARY KEY,
    subject_id        INTEGER NOT NULL REFERENCES people(id),
    scope             TEXT    NOT NULL,
    told_by           INTEGER NOT NULL REFERENCES people(id),
    text              TEXT    NOT NULL,
    source_message_id INTEGER,
    created_at        INTEGER NOT NULL,
    UNIQUE (subject_id, scope, told_by, text)
);
CREATE INDEX hearsay_by_teller ON hearsay (told_by);
CREATE INDEX hearsay_by_source ON hearsay (source_message_id) WHERE source_message_id IS NOT NULL;
-- Facts and entries written from a message are found by it when the message is deleted.
CREATE INDEX memory_entries_by_source ON memory_entries (source);
CREATE INDEX fact_versions_by_source ON fact_versions (source_message_id) WHERE source_message_id IS NOT NULL;
