-- The tokenizer's stemmer moved to Snowball 3 (the `snowstem` crate), which no longer folds
-- "evening" into "even", "adding" into "ad" or "organization" into "organ". Postings written
-- with the old stems would miss queries stemmed the new way, so every message is indexed again:
-- the store drains this backlog when it opens. Document lengths do not change, so episode
-- statistics stay as they are.
DELETE FROM message_terms;
DELETE FROM scope_term_stats;
INSERT OR IGNORE INTO message_terms_backlog (message_id) SELECT id FROM messages;
