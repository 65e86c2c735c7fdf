-- A file is kept once per scope, not once overall: the same bytes sent in another scope are
-- another attachment with an id of its own, and a model's description is made again there.
-- Before, a file sent in a group after someone had sent it in a private chat got the private
-- chat's id (an old, low number in the message's "[image#12 …]" line) and its stored
-- description without a model call: both told a member that someone had sent that file
-- before. A file kept before this whose messages are all in one scope is that scope's; one
-- carried in several scopes keeps serving those messages only (its scope stays '').
ALTER TABLE attachments ADD COLUMN scope TEXT NOT NULL DEFAULT '';
UPDATE attachments a SET scope = s.scope
FROM (SELECT ma.attachment_id, MIN(m.scope) AS scope
      FROM message_attachments ma JOIN messages m ON m.id = ma.message_id
      GROUP BY ma.attachment_id HAVING COUNT(DISTINCT m.scope) = 1) s
WHERE s.attachment_id = a.id;
ALTER TABLE attachments DROP CONSTRAINT attachments_sha256_key;
CREATE UNIQUE INDEX attachments_by_scope_and_hash ON attachments (scope, sha256);
