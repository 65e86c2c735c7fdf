-- When everything about a person was last cleared (/memory clear, the admin page), in Unix
-- milliseconds: a message of theirs sent before it that comes later (a platform delivering it
-- again, or a Discord catch-up reading what was said while the bot was away) is not kept, so a
-- clear also reaches what the bot had not seen yet. NULL: never cleared.
ALTER TABLE memory_settings ADD COLUMN cleared_at INTEGER;
