-- Vector spaces: every stored vector says which model made it (provider, model, size, weights
-- revision), and search compares only vectors of the configured model. A message may hold
-- vectors of several spaces while a new model's backlog is embedded (or while an operator keeps
-- the old one to switch back).
CREATE TABLE vector_spaces (
    id         BIGSERIAL PRIMARY KEY,
    provider   TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INT     NOT NULL,
    revision   TEXT    NOT NULL,
    -- The space the running configuration uses (one at a time).
    active     BOOLEAN NOT NULL DEFAULT false,
    UNIQUE (provider, model, dimensions, revision)
);

-- Vectors stored before this migration: which model made them was never recorded, so they are
-- a space of their own that no configuration matches; the configured model's backlog embeds
-- everything again, and these go once it covers everything.
INSERT INTO vector_spaces (provider, model, dimensions, revision)
SELECT 'unrecorded', 'unrecorded', 384, ''
WHERE EXISTS (SELECT 1 FROM messages WHERE embedding IS NOT NULL)
   OR EXISTS (SELECT 1 FROM episodes WHERE embedding IS NOT NULL);

-- Vectors leave the messages table for one of their own, keyed by space, and the column has no
-- fixed size: any model's vectors fit. HNSW needs one size per index, so each space gets a
-- partial index on `embedding::vector(n)` when it is first used (the store makes it), and
-- searches name that expression and the space.
CREATE TABLE message_vectors (
    message_id BIGINT NOT NULL,
    space_id   BIGINT NOT NULL,
    scope      TEXT   NOT NULL,
    embedding  vector NOT NULL,
    context_id BIGINT,
    PRIMARY KEY (message_id, space_id)
);
INSERT INTO message_vectors (message_id, space_id, scope, embedding, context_id)
SELECT id, (SELECT id FROM vector_spaces), scope, embedding, embedding_context FROM messages
WHERE embedding IS NOT NULL;
CREATE INDEX message_vectors_by_scope ON message_vectors (space_id, scope);
CREATE INDEX message_vectors_by_context ON message_vectors (context_id) WHERE context_id IS NOT NULL;
DROP INDEX messages_embedding;
DROP INDEX messages_by_embedding_context;
ALTER TABLE messages DROP COLUMN embedding, DROP COLUMN embedding_context;

ALTER TABLE episodes ALTER COLUMN embedding TYPE vector;
ALTER TABLE episodes ADD COLUMN embedding_space BIGINT;
UPDATE episodes SET embedding_space = (SELECT id FROM vector_spaces) WHERE embedding IS NOT NULL;

-- Never written: facts are found through their text.
DROP INDEX facts_embedding;
ALTER TABLE facts DROP COLUMN embedding;
