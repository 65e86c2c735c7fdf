-- Each message's length in characters, kept with it: a search reads the lengths of its hits'
-- neighbours, and LENGTH(text) at read time decompressed every long (TOASTed) text first
-- (dev60: that statement 1.96 ms at p50 on the server, 1.06 reading this column). SQLite
-- keeps texts uncompressed and counts them as quickly when it reads them.
ALTER TABLE messages ADD COLUMN chars BIGINT GENERATED ALWAYS AS (length(text)) STORED;
