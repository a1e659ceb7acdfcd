-- +goose Up
-- Content parts, provider items, tool errors and the developer role. A role
-- CHECK cannot be altered in SQLite, so the table is rebuilt once, rows copied
-- as they are (string content stays string content: parts is NULL).
CREATE TABLE messages_v6 (
    tenant_id       TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    id              TEXT    NOT NULL,
    role            TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool', 'developer')),
    -- The string content, or for parts the text conversation search indexes
    -- (text and refusal parts, reasoning summaries).
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
    gid             INTEGER NOT NULL,
    cum_tokens      INTEGER NOT NULL,
    cum_cost        REAL    NOT NULL,
    -- The content as an array of parts (JSON); NULL for string content.
    parts           TEXT CHECK (parts IS NULL OR json_valid(parts)),
    -- A tool result that reports a failure (Anthropic's is_error).
    is_error        INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    -- A runtime's original item, returned as it came.
    provider_item   TEXT CHECK (provider_item IS NULL OR json_valid(provider_item)),
    -- User messages up to and including this one, in the session's lineage: the
    -- session's turn_count at this seq, for forks and rewinds.
    cum_turns       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
) WITHOUT ROWID;

INSERT INTO messages_v6 (tenant_id, session_id, seq, id, role, content, name, tool_calls, tool_call_id,
    agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash, gid, cum_tokens, cum_cost,
    cum_turns)
SELECT tenant_id, session_id, seq, id, role, content, name, tool_calls, tool_call_id,
    agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash, gid, cum_tokens, cum_cost,
    count(*) FILTER (WHERE role = 'user') OVER (PARTITION BY tenant_id, session_id ORDER BY seq)
FROM messages;
DROP TABLE messages;
ALTER TABLE messages_v6 RENAME TO messages;
-- A fork that shares its parent's prefix counts the parent's turns up to its
-- fork point too (one level of forks: a fork of a fork made before this
-- migration counts from its own parent's stored row).
UPDATE messages SET cum_turns = cum_turns + (
    SELECT p.cum_turns FROM sessions s JOIN messages p
        ON p.tenant_id = s.tenant_id AND p.session_id = s.parent_id AND p.seq = s.forked_at_seq
    WHERE s.tenant_id = messages.tenant_id AND s.id = messages.session_id AND s.prefix_shared = 1)
WHERE EXISTS (SELECT 1 FROM sessions s JOIN messages p
        ON p.tenant_id = s.tenant_id AND p.session_id = s.parent_id AND p.seq = s.forked_at_seq
    WHERE s.tenant_id = messages.tenant_id AND s.id = messages.session_id AND s.prefix_shared = 1);

-- User turns, counted with the appends.
ALTER TABLE sessions ADD COLUMN turn_count INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET turn_count = COALESCE(
    (SELECT cum_turns FROM messages m WHERE m.tenant_id = sessions.tenant_id AND m.session_id = sessions.id
        AND m.seq = sessions.last_seq),
    (SELECT p.cum_turns FROM messages p WHERE p.tenant_id = sessions.tenant_id AND p.session_id = sessions.parent_id
        AND p.seq = sessions.forked_at_seq),
    0);

-- Idempotency keys of messages a rewind removed: a retry of such an append is
-- refused (409 rewound) instead of quietly writing the message again.
CREATE TABLE rewound_keys (
    tenant_id  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('message', 'request')), -- idempotency_key, or an Idempotency-Key header
    key        TEXT NOT NULL,
    PRIMARY KEY (tenant_id, session_id, kind, key)
) WITHOUT ROWID;

-- Compactions: "this summary stands for messages 1..through_seq". n numbers a
-- session's compactions; each reaches past the one before.
CREATE TABLE compactions (
    tenant_id     TEXT    NOT NULL,
    session_id    TEXT    NOT NULL,
    n             INTEGER NOT NULL,
    id            TEXT    NOT NULL,
    through_seq   INTEGER NOT NULL CHECK (through_seq >= 1),
    summary       TEXT    NOT NULL,                                   -- string summary, or the parts' search text
    summary_parts TEXT CHECK (summary_parts IS NULL OR json_valid(summary_parts)),
    tokens        INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    model         TEXT,
    provider_item TEXT CHECK (provider_item IS NULL OR json_valid(provider_item)),
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, n)
) WITHOUT ROWID;
CREATE UNIQUE INDEX compactions_by_id ON compactions (tenant_id, id);

CREATE UNIQUE INDEX messages_by_id ON messages (tenant_id, id);
CREATE UNIQUE INDEX messages_by_gid ON messages (gid);
CREATE UNIQUE INDEX messages_by_idempotency_key
    ON messages (tenant_id, session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- A context read keeps every system and developer message: found without a
-- scan of the session.
CREATE INDEX messages_by_instruction ON messages (tenant_id, session_id, seq) WHERE role IN ('system', 'developer');

-- Which tool calls a session's assistant messages made, and which tool
-- messages answered them, by call id: an append checks a tool result against
-- them (unknown_tool_call, duplicate_tool_result) without reading the history.
CREATE TABLE tool_calls (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    call_id    TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, call_id, seq)
) WITHOUT ROWID;
CREATE TABLE tool_results (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    call_id    TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, call_id, seq)
) WITHOUT ROWID;
INSERT OR IGNORE INTO tool_calls (tenant_id, session_id, call_id, seq)
    SELECT m.tenant_id, m.session_id, json_extract(c.value, '$.id'), m.seq
    FROM messages m, json_each(m.tool_calls) c WHERE m.tool_calls IS NOT NULL;
INSERT OR IGNORE INTO tool_results (tenant_id, session_id, call_id, seq)
    SELECT tenant_id, session_id, tool_call_id, seq FROM messages WHERE role = 'tool' AND tool_call_id IS NOT NULL;

-- Files that messages' parts reference. A file's id is derived from its bytes'
-- SHA-256 and media type (model.FileIDOf), so one upload of the same bytes is one
-- file; its bytes are stored once per tenant whatever the media types.
CREATE TABLE files (
    tenant_id  TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    sha256     TEXT    NOT NULL,
    size       INTEGER NOT NULL CHECK (size >= 0),
    media_type TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
CREATE INDEX files_by_sha256 ON files (tenant_id, sha256);

-- A file's bytes in chunks (model.FileChunkBytes), so that serving a 20 MiB
-- file holds one chunk in memory, not the file. A rowid table: large values
-- belong in one, not in a WITHOUT ROWID b-tree.
CREATE TABLE file_chunks (
    tenant_id TEXT    NOT NULL,
    sha256    TEXT    NOT NULL,
    n         INTEGER NOT NULL,
    data      BLOB    NOT NULL,
    UNIQUE (tenant_id, sha256, n)
);

-- Which stored messages reference which files: a file that loses its last
-- reference to a purge or a rewind goes with it.
CREATE TABLE message_files (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    file_id    TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq, file_id)
) WITHOUT ROWID;
CREATE INDEX message_files_by_file ON message_files (tenant_id, file_id);

-- +goose Down
DROP TABLE tool_results;
DROP TABLE tool_calls;
DROP TABLE compactions;
DROP TABLE rewound_keys;
ALTER TABLE sessions DROP COLUMN turn_count;
DROP TABLE message_files;
DROP TABLE file_chunks;
DROP TABLE files;
CREATE TABLE messages_v5 (
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
    gid             INTEGER NOT NULL,
    cum_tokens      INTEGER NOT NULL,
    cum_cost        REAL    NOT NULL,
    PRIMARY KEY (tenant_id, session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
) WITHOUT ROWID;
-- Going back loses what the old schema cannot hold: parts become their search
-- text, developer messages become system messages.
INSERT INTO messages_v5 SELECT tenant_id, session_id, seq, id,
    CASE role WHEN 'developer' THEN 'system' ELSE role END, content, name, tool_calls, tool_call_id,
    agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash, gid, cum_tokens, cum_cost
FROM messages;
DROP TABLE messages;
ALTER TABLE messages_v5 RENAME TO messages;
CREATE UNIQUE INDEX messages_by_id ON messages (tenant_id, id);
CREATE UNIQUE INDEX messages_by_gid ON messages (gid);
CREATE UNIQUE INDEX messages_by_idempotency_key
    ON messages (tenant_id, session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
