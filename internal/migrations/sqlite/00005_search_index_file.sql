-- +goose Up
-- Conversation search moves to a database file of its own, indexed by a
-- goroutine with its own connection beside the writer rather than inside it:
-- FTS5's merges made single index steps take tens of milliseconds, and every
-- tenant's writes waited for them (see internal/repo/sqlite/indexer.go). The index is
-- rebuilt there from the messages, so the old one and its progress go.
DROP TABLE messages_fts;
-- SQLite 3.53 leaves this shadow table of a contentless_unindexed table behind.
DROP TABLE IF EXISTS messages_fts_content;
DROP INDEX sessions_fts_behind;
ALTER TABLE sessions DROP COLUMN fts_seq;

-- Messages deleted (purge) after they may have been indexed: the indexer removes
-- their index rows, in order, and keeps how far it got in the index file. id
-- only grows (AUTOINCREMENT: never reused), so the writer may forget the rows
-- the indexer has passed.
CREATE TABLE index_deletes (
    id    INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, even once the table is empty
    gid   INTEGER NOT NULL,
    bytes INTEGER NOT NULL -- the message's text length: bounds its index parts
);

-- A stable identity for this database: the index file names the database it
-- indexes, so that an index left beside a restored or replaced file is rebuilt
-- instead of answering for other messages.
CREATE TABLE meta (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('database_id', lower(hex(randomblob(16))));

-- +goose Down
DELETE FROM meta WHERE key = 'database_id';
DROP TABLE meta;
DROP TABLE index_deletes;
ALTER TABLE sessions ADD COLUMN fts_seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_fts_behind ON sessions (tenant_id, id) WHERE last_seq > fts_seq;
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, tenant_id UNINDEXED, session_id UNINDEXED, seq UNINDEXED,
    content = '', contentless_delete = 1, contentless_unindexed = 1, tokenize = 'porter unicode61');
