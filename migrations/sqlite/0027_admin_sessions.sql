-- The admin page's sign-ins that are still open: a session cookie counts only while its row
-- is here, so signing out ends it for every copy of the cookie, in every bot process. Only a
-- SHA-256 of the cookie is kept. Rows past `until` are removed at the next sign-in.
CREATE TABLE admin_sessions (
    key       TEXT    PRIMARY KEY,
    operator  TEXT    NOT NULL,
    until     BIGINT  NOT NULL
);
