-- The newest platform message seen in each channel (Discord), kept when messages are
-- forgotten: after a restart the bot fetches what was said after it while it was away, and
-- never a message it saw before (one forgotten since must not come back). Ids only.
CREATE TABLE channel_cursors (
    platform          TEXT    NOT NULL,
    space_external_id TEXT    NOT NULL,
    channel           TEXT    NOT NULL,
    seen_through      BIGINT  NOT NULL,
    seen_at           BIGINT  NOT NULL,
    PRIMARY KEY (platform, space_external_id, channel)
);
CREATE INDEX channel_cursors_by_time ON channel_cursors (platform, seen_at);
