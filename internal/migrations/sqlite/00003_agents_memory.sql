-- +goose Up
CREATE TABLE agents (
    tenant_id  TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    agent_type TEXT    NOT NULL,
    model      TEXT,
    system     TEXT,
    tool_ids   TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(tool_ids)),
    tags       TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
    metadata   TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;

CREATE INDEX agents_by_created ON agents (tenant_id, created_at, id);
CREATE INDEX agents_by_name    ON agents (tenant_id, name, created_at, id);

-- One row per (agent, label): append-or-create is an upsert on this key inside
-- the writer, so concurrent appends can never make two blocks.
CREATE TABLE blocks (
    tenant_id   TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    label       TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    limit_chars INTEGER NOT NULL CHECK (limit_chars > 0),
    description TEXT,
    read_only   INTEGER NOT NULL DEFAULT 0,
    version     INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, label),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
) WITHOUT ROWID;

-- Every version of every block, the current one included: nothing an agent wrote
-- is lost to a later overwrite.
CREATE TABLE block_history (
    tenant_id   TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    label       TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    value       TEXT    NOT NULL,
    limit_chars INTEGER NOT NULL,
    description TEXT,
    read_only   INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, label, version)
) WITHOUT ROWID;

-- Passages have an integer key so that the FTS5 index can point at them
-- (external content: the text is stored once).
CREATE TABLE passages (
    pk         INTEGER PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    content    TEXT    NOT NULL,
    tags       TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
    metadata   TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    created_at INTEGER NOT NULL,
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
);
CREATE UNIQUE INDEX passages_by_id    ON passages (tenant_id, agent_id, id);
CREATE INDEX        passages_by_agent ON passages (tenant_id, agent_id, created_at, id);

CREATE VIRTUAL TABLE passages_fts USING fts5(
    content, content = 'passages', content_rowid = 'pk', tokenize = 'porter unicode61');

-- +goose StatementBegin
CREATE TRIGGER passages_fts_insert AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts (rowid, content) VALUES (new.pk, new.content);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER passages_fts_delete AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts (passages_fts, rowid, content) VALUES ('delete', old.pk, old.content);
END;
-- +goose StatementEnd

-- Conversation search. Indexing a message costs ~100 µs of CPU, too much for the
-- append path, so the writer indexes in its idle time: fts_seq is how far each
-- session's messages are indexed, and the partial index lists the sessions that
-- are behind.
ALTER TABLE sessions ADD COLUMN fts_seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_fts_behind ON sessions (tenant_id, id) WHERE last_seq > fts_seq;

-- Contentless: the index keeps no copy of the text (the messages table is the one
-- copy), only the key of each message; contentless_delete lets erasure remove rows.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, tenant_id UNINDEXED, session_id UNINDEXED, seq UNINDEXED,
    content = '', contentless_delete = 1, contentless_unindexed = 1, tokenize = 'porter unicode61');

-- +goose Down
DROP TABLE messages_fts;
-- SQLite 3.53 leaves this shadow table of a contentless_unindexed table behind.
DROP TABLE IF EXISTS messages_fts_content;
DROP INDEX sessions_fts_behind;
ALTER TABLE sessions DROP COLUMN fts_seq;
DROP TRIGGER passages_fts_delete;
DROP TRIGGER passages_fts_insert;
DROP TABLE passages_fts;
DROP TABLE passages;
DROP TABLE block_history;
DROP TABLE blocks;
DROP TABLE agents;
