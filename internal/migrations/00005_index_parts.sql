-- +goose Up
-- A message is indexed for search in parts of a few KiB, each its own FTS5 row,
-- so that indexing one large message never holds the writer for long. fts_part
-- is how many parts of message fts_seq + 1 are indexed already: an indexing step
-- may stop in the middle of a message and the next one resumes there.
ALTER TABLE sessions ADD COLUMN fts_part INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE sessions DROP COLUMN fts_part;
