-- /memory link: one-time codes (only their SHA-256 is kept) that join a person's accounts on
-- two platforms, and the person an identity belonged to before it was linked (for unlink).
ALTER TABLE identities ADD COLUMN own_person_id BIGINT REFERENCES people(id);
CREATE TABLE link_codes (
    code_hash  TEXT   PRIMARY KEY,
    person_id  BIGINT NOT NULL REFERENCES people(id),
    platform   TEXT   NOT NULL,
    expires_at BIGINT NOT NULL
);
