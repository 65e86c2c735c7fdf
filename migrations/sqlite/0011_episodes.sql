-- Episodes as working memory: an episode also ends when the topic shifts or someone opens a
-- message with a marker ("by the way"); `superseded` marks one that a newer episode of its
-- channel replaced, so it closes without waiting for the time gap, and `started_by` says what
-- began it. While open it keeps a running summary and its open loops (questions not answered,
-- things people said they would do), refreshed every few messages; `summarized_messages` is
-- the message count (and search words, `summarized_len`) the summary covers. `details` is the final structured summary (JSON)
-- written when it closes. All of it is derived text: a forget clears it with the summary.
ALTER TABLE episodes ADD COLUMN superseded BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE episodes ADD COLUMN started_by TEXT NOT NULL DEFAULT 'gap';
ALTER TABLE episodes ADD COLUMN running_summary TEXT;
ALTER TABLE episodes ADD COLUMN open_loops TEXT;
ALTER TABLE episodes ADD COLUMN summarized_messages INTEGER NOT NULL DEFAULT 0;
ALTER TABLE episodes ADD COLUMN summarized_len INTEGER NOT NULL DEFAULT 0;
ALTER TABLE episodes ADD COLUMN details TEXT;
