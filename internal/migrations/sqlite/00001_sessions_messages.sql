-- +goose Up
-- Every row carries its tenant, and every index a scoped query uses starts with
-- tenant_id, so that isolation is a prefix of the key rather than a filter.
CREATE TABLE sessions (
    tenant_id     TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    agent_id      TEXT,
    title         TEXT,
    status        TEXT    NOT NULL CHECK (status IN ('created', 'active', 'completed', 'archived')),
    metadata      TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    message_count INTEGER NOT NULL DEFAULT 0,
    last_seq      INTEGER NOT NULL DEFAULT 0,
    total_tokens  INTEGER NOT NULL DEFAULT 0,
    total_cost    REAL    NOT NULL DEFAULT 0,
    parent_id     TEXT,
    forked_at_seq INTEGER,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    closed_at     INTEGER,
    PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;

-- Lists are newest first, keyset on (created_at, id); one index per filter that
-- narrows the scan, each ending in the keyset columns.
CREATE INDEX sessions_by_created ON sessions (tenant_id, created_at, id);
CREATE INDEX sessions_by_status  ON sessions (tenant_id, status, created_at, id);
CREATE INDEX sessions_by_agent   ON sessions (tenant_id, agent_id, created_at, id) WHERE agent_id IS NOT NULL;

-- Clustered by (tenant_id, session_id, seq): a page of a session's history is one
-- contiguous range of the b-tree, however many other sessions were interleaved
-- while it was written (see docs/benchmarks.md for the measurement).
CREATE TABLE messages (
    tenant_id       TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    id              TEXT    NOT NULL,
    role            TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content         TEXT    NOT NULL,
    name            TEXT,
    tool_calls      TEXT CHECK (tool_calls IS NULL OR json_valid(tool_calls)),
    tool_call_id    TEXT,
    agent_id        TEXT,
    model           TEXT,
    tokens          INTEGER NOT NULL CHECK (tokens >= 0),
    cost            REAL    NOT NULL CHECK (cost >= 0),
    metadata        TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
    created_at      INTEGER NOT NULL,
    idempotency_key TEXT,
    request_hash    BLOB,
    -- gid numbers every message of the database once; the search index uses it
    -- as its rowid, so that a session's index rows can be found and erased.
    gid             INTEGER NOT NULL,
    -- Running totals up to and including this message: a fork takes its parent's
    -- counters at any seq from one row instead of summing the prefix.
    cum_tokens      INTEGER NOT NULL,
    cum_cost        REAL    NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX messages_by_id ON messages (tenant_id, id);
-- Finds a search hit's message, and the last gid at start-up, without a scan;
-- gids only grow, so inserts land at the right-hand edge of this index.
CREATE UNIQUE INDEX messages_by_gid ON messages (gid);
-- The database, not memory, is what makes a retried message land once.
CREATE UNIQUE INDEX messages_by_idempotency_key
    ON messages (tenant_id, session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- An Idempotency-Key header names a whole request, which may be a batch: it maps to
-- the seqs that request answered with (some may be older messages that the batch's
-- own per-message keys matched, so this is a list, not a range).
CREATE TABLE request_keys (
    tenant_id    TEXT    NOT NULL,
    session_id   TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    request_hash BLOB    NOT NULL,
    seqs         TEXT    NOT NULL CHECK (json_valid(seqs)),
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, key),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE request_keys;
DROP TABLE messages;
DROP TABLE sessions;
