-- +goose Up
-- The PostgreSQL schema: the same tables, columns and indexes as SQLite's
-- migrations 00001-00007 arrive at (internal/repo/postgres's schema test
-- compares them), in PostgreSQL's types. Times are Unix milliseconds (BIGINT),
-- as on SQLite. JSON that is returned byte for byte (metadata, provider items,
-- parts) is `json`, which keeps its text as written; `jsonb` would reorder keys
-- and reformat numbers. What only PostgreSQL has: search as tsvector columns
-- with GIN indexes, in place of SQLite's FTS5 tables (passages) and its
-- separate search file (messages).

CREATE TABLE sessions (
    tenant_id     TEXT             NOT NULL,
    id            TEXT             NOT NULL,
    agent_id      TEXT,
    title         TEXT,
    status        TEXT             NOT NULL CHECK (status IN ('created', 'active', 'completed', 'archived')),
    metadata      JSON             NOT NULL DEFAULT '{}',
    -- last_seq is the per-session counter: an append updates it in the
    -- transaction that inserts, so concurrent writers serialise on this row
    -- and seqs stay gap-free (no max(seq)+1, no sequences).
    message_count BIGINT           NOT NULL DEFAULT 0,
    last_seq      BIGINT           NOT NULL DEFAULT 0,
    total_tokens  BIGINT           NOT NULL DEFAULT 0,
    total_cost    DOUBLE PRECISION NOT NULL DEFAULT 0,
    parent_id     TEXT,
    forked_at_seq BIGINT,
    created_at    BIGINT           NOT NULL,
    updated_at    BIGINT           NOT NULL,
    closed_at     BIGINT,
    prefix_shared INTEGER          NOT NULL DEFAULT 0,
    pause_until   BIGINT,
    turn_count    BIGINT           NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX sessions_by_agent   ON sessions (tenant_id, agent_id, created_at, id) WHERE agent_id IS NOT NULL;
CREATE INDEX sessions_by_created ON sessions (tenant_id, created_at, id);
CREATE INDEX sessions_by_parent  ON sessions (tenant_id, parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX sessions_by_pause   ON sessions (tenant_id, pause_until, id) WHERE pause_until IS NOT NULL;
CREATE INDEX sessions_by_status  ON sessions (tenant_id, status, created_at, id);

CREATE TABLE messages (
    tenant_id       TEXT             NOT NULL,
    session_id      TEXT             NOT NULL,
    seq             BIGINT           NOT NULL,
    id              TEXT             NOT NULL,
    role            TEXT             NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool', 'developer')),
    content         TEXT             NOT NULL,
    name            TEXT,
    tool_calls      JSON,
    tool_call_id    TEXT,
    agent_id        TEXT,
    model           TEXT,
    tokens          BIGINT           NOT NULL CHECK (tokens >= 0),
    cost            DOUBLE PRECISION NOT NULL CHECK (cost >= 0),
    metadata        JSON             NOT NULL DEFAULT '{}',
    created_at      BIGINT           NOT NULL,
    idempotency_key TEXT,
    request_hash    BYTEA,
    gid             BIGINT           NOT NULL,
    cum_tokens      BIGINT           NOT NULL,
    cum_cost        DOUBLE PRECISION NOT NULL,
    parts           JSON,
    is_error        INTEGER          NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    provider_item   JSON,
    cum_turns       BIGINT           NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
);
CREATE UNIQUE INDEX messages_by_gid ON messages (gid);
CREATE UNIQUE INDEX messages_by_id ON messages (tenant_id, id);
CREATE UNIQUE INDEX messages_by_idempotency_key
    ON messages (tenant_id, session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX messages_by_instruction ON messages (tenant_id, session_id, seq) WHERE role IN ('system', 'developer');
-- gid orders messages across sessions and processes for the search indexer.
CREATE SEQUENCE messages_gid;

-- Conversation search: a message's text in parts of at most 8 KiB (a tsvector
-- holds at most 1 MiB, a message's text may be more), as SQLite indexes it.
-- Kept by the database itself, in the transaction that inserts the message (a
-- trigger), and dropped with it (the cascade), so every process's appends are
-- searchable once committed: index_lag is always 0 on PostgreSQL.
CREATE TABLE message_search (
    tenant_id  TEXT     NOT NULL,
    session_id TEXT     NOT NULL,
    seq        BIGINT   NOT NULL,
    part       INTEGER  NOT NULL,
    tsv        TSVECTOR NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq, part),
    FOREIGN KEY (tenant_id, session_id, seq) REFERENCES messages (tenant_id, session_id, seq) ON DELETE CASCADE
);
CREATE INDEX message_search_tsv ON message_search USING GIN (tsv);

-- Parts of 8,000 characters that overlap by 100, so a word across a cut is
-- whole in one of them.
-- +goose StatementBegin
CREATE FUNCTION message_search_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO message_search (tenant_id, session_id, seq, part, tsv)
    SELECT NEW.tenant_id, NEW.session_id, NEW.seq, p.n, to_tsvector('english', substr(NEW.content, p.n * 8000 + 1, 8100))
    FROM generate_series(0, GREATEST(0, (length(NEW.content) - 1) / 8000)) AS p(n);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER message_search_index AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION message_search_index();

CREATE TABLE request_keys (
    tenant_id    TEXT   NOT NULL,
    session_id   TEXT   NOT NULL,
    key          TEXT   NOT NULL,
    request_hash BYTEA  NOT NULL,
    seqs         JSON   NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, session_id, key),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
);

CREATE TABLE rewound_keys (
    tenant_id  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('message', 'request')),
    key        TEXT NOT NULL,
    PRIMARY KEY (tenant_id, session_id, kind, key)
);

CREATE TABLE checkpoints (
    tenant_id      TEXT   NOT NULL,
    session_id     TEXT   NOT NULL,
    iteration      BIGINT NOT NULL CHECK (iteration >= 0),
    id             TEXT   NOT NULL,
    state          TEXT   NOT NULL,
    last_seq       BIGINT NOT NULL,
    sha256         TEXT   NOT NULL,
    created_at     BIGINT NOT NULL,
    kind           TEXT   NOT NULL DEFAULT 'full' CHECK (kind IN ('full', 'delta')),
    codec          TEXT   NOT NULL DEFAULT '' CHECK (codec IN ('', 'zstd')),
    base_iteration BIGINT,
    body           BYTEA,
    PRIMARY KEY (tenant_id, session_id, iteration),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
);
CREATE UNIQUE INDEX checkpoints_by_id ON checkpoints (tenant_id, id);

CREATE TABLE compactions (
    tenant_id     TEXT   NOT NULL,
    session_id    TEXT   NOT NULL,
    n             BIGINT NOT NULL,
    id            TEXT   NOT NULL,
    through_seq   BIGINT NOT NULL CHECK (through_seq >= 1),
    summary       TEXT   NOT NULL,
    summary_parts JSON,
    tokens        BIGINT NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    model         TEXT,
    provider_item JSON,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, session_id, n)
);
CREATE UNIQUE INDEX compactions_by_id ON compactions (tenant_id, id);

CREATE TABLE tool_calls (
    tenant_id  TEXT   NOT NULL,
    session_id TEXT   NOT NULL,
    call_id    TEXT   NOT NULL,
    seq        BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, session_id, call_id, seq)
);
CREATE TABLE tool_results (
    tenant_id  TEXT   NOT NULL,
    session_id TEXT   NOT NULL,
    call_id    TEXT   NOT NULL,
    seq        BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, session_id, call_id, seq)
);

CREATE TABLE files (
    tenant_id  TEXT   NOT NULL,
    id         TEXT   NOT NULL,
    sha256     TEXT   NOT NULL,
    size       BIGINT NOT NULL CHECK (size >= 0),
    media_type TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX files_by_sha256 ON files (tenant_id, sha256);
-- Bytes in 256 KiB chunks, streamed a chunk at a time, as on SQLite.
CREATE TABLE file_chunks (
    tenant_id TEXT    NOT NULL,
    sha256    TEXT    NOT NULL,
    n         INTEGER NOT NULL,
    data      BYTEA   NOT NULL,
    UNIQUE (tenant_id, sha256, n)
);
CREATE TABLE message_files (
    tenant_id  TEXT   NOT NULL,
    session_id TEXT   NOT NULL,
    seq        BIGINT NOT NULL,
    file_id    TEXT   NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq, file_id)
);
CREATE INDEX message_files_by_file ON message_files (tenant_id, file_id);

CREATE TABLE api_keys (
    id         TEXT   NOT NULL PRIMARY KEY,
    tenant_id  TEXT   NOT NULL,
    name       TEXT   NOT NULL DEFAULT '',
    scope      TEXT   NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    key_hash   BYTEA  NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_active ON api_keys (revoked_at) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, created_at, id);

CREATE TABLE agents (
    tenant_id  TEXT   NOT NULL,
    id         TEXT   NOT NULL,
    name       TEXT   NOT NULL,
    agent_type TEXT   NOT NULL,
    model      TEXT,
    system     TEXT,
    tool_ids   JSON   NOT NULL DEFAULT '[]',
    tags       JSON   NOT NULL DEFAULT '[]',
    metadata   JSON   NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX agents_by_created ON agents (tenant_id, created_at, id);
CREATE INDEX agents_by_name    ON agents (tenant_id, name, created_at, id);

CREATE TABLE blocks (
    tenant_id   TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    label       TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    limit_chars BIGINT  NOT NULL CHECK (limit_chars > 0),
    description TEXT,
    read_only   INTEGER NOT NULL DEFAULT 0,
    version     BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, label),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
);
CREATE TABLE block_history (
    tenant_id   TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    label       TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    value       TEXT    NOT NULL,
    limit_chars BIGINT  NOT NULL,
    description TEXT,
    read_only   INTEGER NOT NULL,
    updated_at  BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, label, version)
);

CREATE TABLE passages (
    pk         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  TEXT   NOT NULL,
    agent_id   TEXT   NOT NULL,
    id         TEXT   NOT NULL,
    content    TEXT   NOT NULL,
    tags       JSON   NOT NULL DEFAULT '[]',
    metadata   JSON   NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    -- Archival search (ts_rank_cd over this), in place of SQLite's passages_fts.
    tsv        TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
);
CREATE INDEX passages_by_agent ON passages (tenant_id, agent_id, created_at, id);
CREATE UNIQUE INDEX passages_by_id ON passages (tenant_id, agent_id, id);
CREATE INDEX passages_tsv ON passages USING GIN (tsv);

-- +goose Down
DROP TABLE passages;
DROP TABLE block_history;
DROP TABLE blocks;
DROP TABLE agents;
DROP TABLE api_keys;
DROP TABLE message_files;
DROP TABLE file_chunks;
DROP TABLE files;
DROP TABLE tool_results;
DROP TABLE tool_calls;
DROP TABLE compactions;
DROP TABLE checkpoints;
DROP TABLE rewound_keys;
DROP TABLE request_keys;
DROP TABLE message_search;
DROP TRIGGER message_search_index ON messages;
DROP FUNCTION message_search_index();
DROP SEQUENCE messages_gid;
DROP TABLE messages;
DROP TABLE sessions;
