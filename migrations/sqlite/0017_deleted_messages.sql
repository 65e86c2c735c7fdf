-- Platform messages the platform deleted (Discord's delete events), by their platform ids, for
-- a day: the same message stored afterwards (its creation or an edit that was on its way while
-- the delete was handled) is known to be gone and is not kept, so a deleted message never comes
-- back. Ids only, never text.
CREATE TABLE deleted_messages (
    platform          TEXT    NOT NULL,
    space_external_id TEXT    NOT NULL,
    channel           TEXT    NOT NULL,
    external_id       TEXT    NOT NULL,
    deleted_at        INTEGER NOT NULL,
    PRIMARY KEY (platform, space_external_id, channel, external_id)
);
CREATE INDEX deleted_messages_by_time ON deleted_messages (deleted_at);
