-- The tokenizer's stemmer moved to Snowball 3 (the `snowstem` crate), which no longer folds
-- "evening" into "even", "adding" into "ad" or "organization" into "organ". Postings written
-- with the old stems would miss queries stemmed the new way, so every message is indexed again:
-- the store drains this backlog when it opens. Document lengths do not change, so episode
-- statistics stay as they are.
TRUNCATE message_terms;
TRUNCATE scope_term_stats;
INSERT INTO message_terms_backlog (message_id) SELECT id FROM messages ON CONFLICT DO NOTHING;
