-- BM25 on PostgreSQL from term statistics: ts_rank_cd is a different formula and must score
-- every match. Postings carry what BM25 needs (term frequency, document length, scope), so a
-- search is an index-only scan over the postings of its few terms, with the privacy filter
-- (scope) inside the index condition.

CREATE TABLE message_terms (
    term       TEXT   NOT NULL,
    scope      TEXT   NOT NULL,
    message_id BIGINT NOT NULL,
    tf         INT    NOT NULL,
    doc_len    INT    NOT NULL,
    PRIMARY KEY (term, scope, message_id) INCLUDE (tf, doc_len)
);
-- No foreign key and no index by message: both would cost every posting on the hot insert
-- path. The delete trigger removes a message's postings through the primary key instead.

-- Documents and total length per scope, for BM25's N and average document length.
CREATE TABLE scope_term_stats (
    scope     TEXT   PRIMARY KEY,
    docs      BIGINT NOT NULL,
    total_len BIGINT NOT NULL
);

CREATE FUNCTION message_terms_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO message_terms (term, scope, message_id, tf, doc_len)
    SELECT u.lexeme, n.scope, n.id, COALESCE(array_length(u.positions, 1), 1), GREATEST(length(n.tsv), 1)
    FROM new_rows n, unnest(n.tsv) u;
    INSERT INTO scope_term_stats AS s (scope, docs, total_len)
    SELECT n.scope, count(*), sum(GREATEST(length(n.tsv), 1)) FROM new_rows n GROUP BY n.scope
    ON CONFLICT (scope) DO UPDATE SET docs = s.docs + excluded.docs, total_len = s.total_len + excluded.total_len;
    RETURN NULL;
END $$;

CREATE FUNCTION message_terms_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM message_terms t USING old_rows o, unnest(o.tsv) u
    WHERE t.term = u.lexeme AND t.scope = o.scope AND t.message_id = o.id;
    UPDATE scope_term_stats s SET docs = s.docs - d.docs, total_len = s.total_len - d.len
    FROM (SELECT scope, count(*) AS docs, sum(GREATEST(length(tsv), 1)) AS len FROM old_rows GROUP BY scope) d
    WHERE s.scope = d.scope;
    RETURN NULL;
END $$;

CREATE TRIGGER messages_terms_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION message_terms_insert();
CREATE TRIGGER messages_terms_delete AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION message_terms_delete();

-- Messages stored before this migration.
INSERT INTO message_terms (term, scope, message_id, tf, doc_len)
SELECT u.lexeme, m.scope, m.id, COALESCE(array_length(u.positions, 1), 1), GREATEST(length(m.tsv), 1)
FROM messages m, unnest(m.tsv) u;
INSERT INTO scope_term_stats (scope, docs, total_len)
SELECT scope, count(*), sum(GREATEST(length(tsv), 1)) FROM messages GROUP BY scope;

-- The postings above are now the full-text index of messages; the GIN index on messages.tsv
-- would only cost every insert (facts keep theirs).
DROP INDEX messages_fts;
