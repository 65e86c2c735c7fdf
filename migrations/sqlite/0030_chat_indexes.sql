-- The people who wrote in a chat (who a question may name) are read from this index: one seek
-- per author from each scope's first to its next. Before, every person in the database was
-- checked against the chat's messages, which grew with the database (29 ms at 100,000 people on SQLite).
CREATE INDEX messages_said_by_scope ON messages (scope, author_id) WHERE NOT is_bot AND NOT withheld;

-- The bot's withheld messages (a paused person's chat), which have no postings: read when an
-- edited or deleted message is taken back from the bot's replies that quoted it. Before, that
-- read went through every message of the database.
CREATE INDEX messages_withheld_bots ON messages (scope) WHERE is_bot AND withheld;

-- The languages in use (each once, a step per language), read on every edit and delete to
-- look for the bot's quotes of the message as each language reads it. Before, every message
-- was counted.
CREATE INDEX messages_by_language ON messages (language) WHERE language IS NOT NULL AND NOT withheld;
