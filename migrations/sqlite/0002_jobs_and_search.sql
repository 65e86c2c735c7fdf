-- Scheduled jobs shared by several bot processes, and full-text search over chat history.

-- One row per run of a scheduled job (e.g. job 'day_summaries', run_key '2026-11-21'). The
-- primary key makes a run claimable once; a holder that crashed loses its claim when the lease
-- expires, so another process can finish the run.
CREATE TABLE job_runs (
    job         TEXT    NOT NULL,
    run_key     TEXT    NOT NULL,
    holder      TEXT    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    lease_until INTEGER NOT NULL,
    attempts    INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    detail      TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (job, run_key)
);

-- FTS5 index over message text (external content: the text lives once, in messages).
CREATE VIRTUAL TABLE messages_fts USING fts5 (text, content = 'messages', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
END;
INSERT INTO messages_fts (rowid, text) SELECT id, text FROM messages;

-- Which scopes were active on a day (the scheduled summary job).
CREATE INDEX messages_by_time ON messages (sent_at);
