-- A short message's vector is made with the message before it as context ("Yes! Last Friday."
-- means nothing alone). The context's id is kept with the vector: when that message is
-- forgotten, the vector goes and the message waits in vector_backlog to be embedded again
-- without it, so nothing forgotten lives on in another message's vector.
ALTER TABLE message_vectors ADD COLUMN context_id INTEGER;
CREATE INDEX message_vectors_by_context ON message_vectors (context_id) WHERE context_id IS NOT NULL;
CREATE TABLE vector_backlog (message_id INTEGER PRIMARY KEY);
