-- Every forget counted, whoever's and wherever: an answer made while one happened may show
-- what is gone, and is kept only as a note (see `Messages::insert_reply`).
CREATE TABLE forget_count (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  BIGINT  NOT NULL
);
INSERT INTO forget_count (id, n) VALUES (1, 0);
