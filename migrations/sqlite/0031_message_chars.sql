-- Each message's length in characters, as on PostgreSQL (where it is stored, so that reading
-- it does not decompress the text): SQLite keeps texts uncompressed and counts them as
-- quickly when read, and adds only computed columns to a table that has rows.
ALTER TABLE messages ADD COLUMN chars INTEGER GENERATED ALWAYS AS (length(text)) VIRTUAL;
