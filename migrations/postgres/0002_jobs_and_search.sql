-- Scheduled jobs shared by several bot processes (full text is in 0001's tsvector columns).

CREATE TABLE job_runs (
    job         TEXT   NOT NULL,
    run_key     TEXT   NOT NULL,
    holder      TEXT   NOT NULL,
    status      TEXT   NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    lease_until BIGINT NOT NULL,
    attempts    BIGINT NOT NULL,
    started_at  BIGINT NOT NULL,
    finished_at BIGINT,
    detail      TEXT   NOT NULL DEFAULT '',
    PRIMARY KEY (job, run_key)
);

-- Which scopes were active on a day (the scheduled summary job).
CREATE INDEX messages_by_time ON messages (sent_at);
