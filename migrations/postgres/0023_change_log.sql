-- SQLite's change feed (its 0023): PostgreSQL tells other processes with LISTEN/NOTIFY, so
-- there is nothing to add here; the migration keeps the two backends' versions in step.
SELECT 1;
