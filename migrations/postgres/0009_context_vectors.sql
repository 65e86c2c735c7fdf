-- A short message's vector is made with the message before it as context ("Yes! Last Friday."
-- means nothing alone). The context's id is kept with the vector: when that message is
-- forgotten, the vector goes and the message waits in vector_backlog to be embedded again
-- without it, so nothing forgotten lives on in another message's vector.
ALTER TABLE messages ADD COLUMN embedding_context BIGINT;
CREATE INDEX messages_by_embedding_context ON messages (embedding_context) WHERE embedding_context IS NOT NULL;
CREATE TABLE vector_backlog (message_id BIGINT PRIMARY KEY);

-- A message's neighbours in its channel (the message before and after it, the context of a short
-- turn) are one index seek each when the index also orders ties of sent_at by id. (SQLite's
-- indexes end with the rowid, which is the id.)
DROP INDEX messages_by_channel_time;
CREATE INDEX messages_by_channel_time ON messages (space_id, channel, sent_at, id);
