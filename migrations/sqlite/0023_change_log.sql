-- The change feed of SQLite (PostgreSQL has LISTEN/NOTIFY): a process that changes memory
-- (`engram mcp`, an operator's command) writes what changed here, in the same transaction, and
-- every other process on the file reads what is new and drops what it cached of it. `origin`
-- is the writing store's random id (each process skips its own); `change` is
-- `Change::payload` (ids and scope keys, never text). Old rows are dropped by the upkeep.
CREATE TABLE change_log (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    origin TEXT    NOT NULL,
    change TEXT    NOT NULL,
    at     INTEGER NOT NULL
);
