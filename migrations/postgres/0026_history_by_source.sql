-- What a job or a message wrote is taken out of the entries' history by its source (a
-- forgotten message, a job's learning taken back): found by an index, not a scan.
CREATE INDEX IF NOT EXISTS memory_entry_history_by_source ON memory_entry_history (source);
