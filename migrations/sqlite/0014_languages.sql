-- Languages: each message's language (ISO 639-1, detected when it is stored, or by the backlog
-- below for older messages; NULL for a text without letters), and BM25 analysis per language (each
-- word stemmed in its text's language, not always as English). Postings
-- written the old way would miss queries analysed the new way, so every message is indexed
-- again: the store drains this backlog when it opens.
ALTER TABLE messages ADD COLUMN language TEXT;
DELETE FROM message_terms;
DELETE FROM scope_term_stats;
INSERT OR IGNORE INTO message_terms_backlog (message_id) SELECT id FROM messages;
-- Document lengths do not change (English stop words are dropped from Latin-letter words as
-- before, and no other language drops any), so episode statistics stay as they are.
