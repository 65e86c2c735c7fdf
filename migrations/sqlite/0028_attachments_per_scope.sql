-- A file is kept once per scope, not once overall: the same bytes sent in another scope are
-- another attachment with an id of its own, and a model's description is made again there.
-- Before, a file sent in a group after someone had sent it in a private chat got the private
-- chat's id (an old, low number in the message's "[image#12 …]" line) and its stored
-- description without a model call: both told a member that someone had sent that file
-- before. A file kept before this whose messages are all in one scope is that scope's; one
-- carried in several scopes keeps serving those messages only (its scope stays '').
-- SQLite cannot drop the old UNIQUE (sha256), so the table is made again with the same ids
-- and the same id sequence.
CREATE TABLE attachments_by_scope (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope      TEXT    NOT NULL DEFAULT '',
    sha256     TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    mime       TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    surrogate  TEXT,
    UNIQUE (scope, sha256)
);
INSERT INTO attachments_by_scope (id, scope, sha256, kind, name, mime, size, created_at, surrogate)
SELECT a.id,
       COALESCE((SELECT MIN(m.scope) FROM message_attachments ma JOIN messages m ON m.id = ma.message_id
                 WHERE ma.attachment_id = a.id HAVING COUNT(DISTINCT m.scope) = 1), ''),
       a.sha256, a.kind, a.name, a.mime, a.size, a.created_at, a.surrogate
FROM attachments a;
INSERT INTO sqlite_sequence (name, seq)
SELECT 'attachments_by_scope', seq FROM sqlite_sequence WHERE name = 'attachments'
  AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'attachments_by_scope');
UPDATE sqlite_sequence
   SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'attachments'), 0))
 WHERE name = 'attachments_by_scope';
DROP TABLE attachments;
ALTER TABLE attachments_by_scope RENAME TO attachments;
