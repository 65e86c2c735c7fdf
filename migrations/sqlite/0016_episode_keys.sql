-- Fact-augmented keys: what closing an episode found (its topic, summary, decisions, todos,
-- entities, artifacts, open questions and facts: the model's, or extractive without one) is
-- searched with the episode's messages, as BM25 postings of the episode in its own scope.
-- `keys_len` is their length; NULL until they are written (episodes finished before this
-- migration get theirs from the episode job).
CREATE TABLE episode_terms (
    term       TEXT    NOT NULL,
    scope      TEXT    NOT NULL,
    episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
    tf         INTEGER NOT NULL,
    PRIMARY KEY (term, scope, episode_id)
) WITHOUT ROWID;
CREATE INDEX episode_terms_by_episode ON episode_terms (episode_id);
ALTER TABLE episodes ADD COLUMN keys_len INTEGER;
-- Finished episodes still without keys (the episode job's backlog), found without a scan.
CREATE INDEX episodes_without_keys ON episodes (ended_at, id) WHERE details IS NOT NULL AND keys_len IS NULL;
