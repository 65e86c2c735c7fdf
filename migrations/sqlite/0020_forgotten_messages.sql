-- Messages forgotten on request (/memory forget, clear, a moderator's forget), each by a
-- SHA-256 of its platform ids (nothing here leads back to the message), for as long as its
-- platform may bring it again: the same message delivered again (Telegram) or read again by a
-- catch-up after a restart (Discord) stays out, so a forgotten message never comes back.
CREATE TABLE forgotten_messages (
    key          TEXT   PRIMARY KEY,
    forgotten_at BIGINT NOT NULL
);
CREATE INDEX forgotten_messages_by_time ON forgotten_messages (forgotten_at);
