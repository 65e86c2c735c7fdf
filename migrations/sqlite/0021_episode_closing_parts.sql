-- What closing a long episode came to so far, part by part (JSON: each part's fingerprint, of
-- its messages and of the parts before it, its checked details, and the entries its prompt
-- showed): a close cut off by a crash or a model outage goes on from the first part not done
-- instead of asking the model for every part again. Derived text, cleared with the details (a
-- forget of a message in the episode, or of an entry of one of its authors) and when the
-- details are kept.
ALTER TABLE episodes ADD COLUMN closing_parts TEXT;
