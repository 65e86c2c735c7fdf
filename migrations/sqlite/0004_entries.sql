-- Structured memory entries (MEMORY.md), their history, daily notes and per-person settings.

-- One entry per (person, scope, category, key): what was learned, how sure, from where.
CREATE TABLE memory_entries (
    id         INTEGER PRIMARY KEY,
    person_id  INTEGER NOT NULL REFERENCES people(id),
    scope      TEXT    NOT NULL,
    category   TEXT    NOT NULL CHECK (category IN ('preference', 'work_context', 'personal_context', 'reading_history')),
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    confidence REAL    NOT NULL,
    source     TEXT    NOT NULL,
    origin     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER,
    UNIQUE (person_id, scope, category, key)
);
CREATE INDEX memory_entries_by_person ON memory_entries (person_id, updated_at);

-- Earlier values of changed or contradicted entries: nothing vanishes silently, but forget and
-- clear remove these too.
CREATE TABLE memory_entry_history (
    id         INTEGER PRIMARY KEY,
    entry_id   INTEGER NOT NULL,
    person_id  INTEGER NOT NULL REFERENCES people(id),
    value      TEXT    NOT NULL,
    confidence REAL    NOT NULL,
    source     TEXT    NOT NULL,
    replaced_at INTEGER NOT NULL,
    replaced_by TEXT   NOT NULL
);
CREATE INDEX memory_entry_history_by_entry ON memory_entry_history (entry_id);
CREATE INDEX memory_entry_history_by_person ON memory_entry_history (person_id);

-- Daily notes (memory/YYYY-MM-DD.md), append-only: one row per appended block.
CREATE TABLE daily_notes (
    id        INTEGER PRIMARY KEY,
    person_id INTEGER NOT NULL REFERENCES people(id),
    day       TEXT    NOT NULL,
    scope     TEXT    NOT NULL,
    text      TEXT    NOT NULL,
    source    TEXT    NOT NULL,
    added_at  INTEGER NOT NULL
);
CREATE INDEX daily_notes_by_person ON daily_notes (person_id, day, id);
-- One block per source and day ("message:ID", "job:extract:SCOPE", "import"): a job run again
-- after a crash cannot write its notes twice.
CREATE UNIQUE INDEX daily_notes_once ON daily_notes (person_id, day, source);

-- Memory switched off by the person (/memory pause): nothing is collected or extracted.
CREATE TABLE memory_settings (
    person_id INTEGER PRIMARY KEY REFERENCES people(id),
    paused    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
