-- Vector spaces: every stored vector says which model made it (provider, model, size, weights
-- revision), and search compares only vectors of the configured model. A message may hold
-- vectors of several spaces while a new model's backlog is embedded (or while an operator keeps
-- the old one to switch back).
CREATE TABLE vector_spaces (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    provider   TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    dimensions INTEGER NOT NULL,
    revision   TEXT    NOT NULL,
    -- The space the running configuration uses (one at a time).
    active     INTEGER NOT NULL DEFAULT 0,
    UNIQUE (provider, model, dimensions, revision)
);

-- Vectors stored before this migration: which model made them was never recorded, so they are
-- a space of their own that no configuration matches; the configured model's backlog embeds
-- everything again, and these go once it covers everything.
INSERT INTO vector_spaces (provider, model, dimensions, revision)
SELECT 'unrecorded', 'unrecorded', COALESCE((SELECT length(embedding) / 4 FROM message_vectors LIMIT 1), 384), ''
WHERE EXISTS (SELECT 1 FROM message_vectors) OR EXISTS (SELECT 1 FROM episodes WHERE embedding IS NOT NULL);

CREATE TABLE message_vectors_by_space (
    message_id INTEGER NOT NULL,
    space_id   INTEGER NOT NULL,
    scope      TEXT    NOT NULL,
    embedding  BLOB    NOT NULL,
    context_id INTEGER,
    PRIMARY KEY (message_id, space_id)
);
INSERT INTO message_vectors_by_space (message_id, space_id, scope, embedding, context_id)
SELECT message_id, (SELECT id FROM vector_spaces), scope, embedding, context_id FROM message_vectors;
DROP TABLE message_vectors;
ALTER TABLE message_vectors_by_space RENAME TO message_vectors;
CREATE INDEX message_vectors_by_scope ON message_vectors (space_id, scope);
CREATE INDEX message_vectors_by_context ON message_vectors (context_id) WHERE context_id IS NOT NULL;

ALTER TABLE episodes ADD COLUMN embedding_space INTEGER;
UPDATE episodes SET embedding_space = (SELECT id FROM vector_spaces) WHERE embedding IS NOT NULL;
