-- How many times messages of a scope were forgotten or deleted (counted in the forget's
-- transaction, with the summaries it drops): a day or history summary made from what was read
-- before a model call is kept only while the count is the one read, so a forget made during
-- the call never comes back through the summary.
CREATE TABLE summary_epochs (
    scope TEXT PRIMARY KEY,
    epoch BIGINT NOT NULL DEFAULT 0
);
