-- Platform messages forgotten on request (/memory forget, clear, a moderator's forget), by
-- their platform ids, for a day: the same message brought again by its platform (a delivery
-- again, a Discord catch-up reading from before it) stays out, so a forgotten message never
-- comes back. Apart from deleted_messages: a message forgotten this way still exists on its
-- platform (the bot may answer it). Ids only, never text.
CREATE TABLE forgotten_messages (
    platform          TEXT    NOT NULL,
    space_external_id TEXT    NOT NULL,
    channel           TEXT    NOT NULL,
    external_id       TEXT    NOT NULL,
    forgotten_at      BIGINT  NOT NULL,
    PRIMARY KEY (platform, space_external_id, channel, external_id)
);
CREATE INDEX forgotten_messages_by_time ON forgotten_messages (forgotten_at);
