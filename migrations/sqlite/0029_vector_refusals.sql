-- Messages an embedding model refused (not an outage: the model answered that it will not
-- embed that input). They stay searchable by BM25, count as done for that model's pass over
-- the history, and no longer keep the old model's vectors alive: before, one refused
-- message meant the new model never "covered every message", so the old vectors (and their
-- index) stayed for good and `engram status` never reached 100%. Ids only; a forget takes
-- a message's rows, and a dropped model space its own.
CREATE TABLE vector_refusals (
    space_id   BIGINT NOT NULL,
    message_id BIGINT NOT NULL,
    PRIMARY KEY (space_id, message_id)
);
CREATE INDEX vector_refusals_by_message ON vector_refusals (message_id);
