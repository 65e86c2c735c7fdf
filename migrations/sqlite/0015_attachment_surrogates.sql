-- What a vision or speech-to-text model made of an attachment (JSON: the line's gist and the
-- pieces stored with the message), reused when the same file comes again.
ALTER TABLE attachments ADD COLUMN surrogate TEXT;
