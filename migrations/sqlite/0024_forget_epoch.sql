-- How many times something of a person was forgotten (a fact, a deleted message, an entry, a
-- clear): counted before the forget removes anything. A job that read their messages or
-- entries before a model call writes what it made of them only while the count is the one it
-- read, so a forget made during the call never comes back through the job's answer.
ALTER TABLE memory_settings ADD COLUMN forget_epoch BIGINT NOT NULL DEFAULT 0;
