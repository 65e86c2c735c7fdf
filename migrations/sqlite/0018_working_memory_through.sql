-- The newest message an open episode's working memory was made from: the next refresh reads
-- the messages after it. (Counting positions among the messages read went wrong as soon as
-- the episode held messages a refresh does not read: memory commands, the pieces of
-- attachments.) NULL: none yet, or made before this migration.
ALTER TABLE episodes ADD COLUMN summarized_through INTEGER;
