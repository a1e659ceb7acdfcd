-- +goose Up
-- Checkpoints as graph runtimes keep them: a namespace (a subgraph's) with a
-- line of iterations, a latest and a fence of its own, so the primary key
-- takes the namespace in; the client's own id for a checkpoint (unique in its
-- session and namespace; the checkpoint's id where the client gave none);
-- the parent it follows (its client id, kept when the parent is pruned, and
-- its iteration); metadata a list can filter on. SQLite cannot change
-- a primary key in place: the table is copied. Existing rows are namespace
-- '', named by their own id, each following the one before it.
CREATE TABLE checkpoints_graph (
    tenant_id        TEXT    NOT NULL,
    session_id       TEXT    NOT NULL,
    namespace        TEXT    NOT NULL DEFAULT '',
    iteration        INTEGER NOT NULL CHECK (iteration >= 0),
    id               TEXT    NOT NULL,
    client_id        TEXT    NOT NULL,
    parent_id        TEXT,
    parent_iteration INTEGER,
    last_seq         INTEGER NOT NULL,
    sha256           TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    kind             TEXT    NOT NULL DEFAULT 'full' CHECK (kind IN ('full', 'delta')),
    codec            TEXT    NOT NULL DEFAULT '' CHECK (codec IN ('', 'zstd')),
    base_iteration   INTEGER,
    metadata         TEXT    NOT NULL DEFAULT '{}',
    state            TEXT    NOT NULL,
    body             BLOB,
    PRIMARY KEY (tenant_id, session_id, namespace, iteration),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
) WITHOUT ROWID;

INSERT INTO checkpoints_graph (tenant_id, session_id, namespace, iteration, id, client_id, parent_id, parent_iteration,
    last_seq, sha256, created_at, kind, codec, base_iteration, metadata, state, body)
SELECT tenant_id, session_id, '', iteration, id, id,
    (SELECT p.id FROM checkpoints p WHERE p.tenant_id = c.tenant_id AND p.session_id = c.session_id
        AND p.iteration < c.iteration ORDER BY p.iteration DESC LIMIT 1),
    (SELECT MAX(p.iteration) FROM checkpoints p
        WHERE p.tenant_id = c.tenant_id AND p.session_id = c.session_id AND p.iteration < c.iteration),
    last_seq, sha256, created_at, kind, codec, base_iteration, '{}', state, body
FROM checkpoints c;

DROP TABLE checkpoints;
ALTER TABLE checkpoints_graph RENAME TO checkpoints;
CREATE UNIQUE INDEX checkpoints_by_id ON checkpoints (tenant_id, id);
CREATE UNIQUE INDEX checkpoints_by_client_id ON checkpoints (tenant_id, session_id, namespace, client_id);
-- Lists run newest first by (created_at, id), within a session or across a
-- tenant's: the order of writing (ids are UUIDv7, in order within a
-- millisecond).
CREATE INDEX checkpoints_by_session ON checkpoints (tenant_id, session_id, created_at, id);
CREATE INDEX checkpoints_by_time ON checkpoints (tenant_id, created_at, id);

-- Pending writes: a task's outputs recorded against a checkpoint, which need
-- not exist yet, by the checkpoint's client id. A negative idx is a special
-- channel's (model.WriteIndex), replaced by a later write; any other keeps
-- the first one stored.
CREATE TABLE checkpoint_writes (
    tenant_id     TEXT    NOT NULL,
    session_id    TEXT    NOT NULL,
    namespace     TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    task_id       TEXT    NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT    NOT NULL,
    task_path     TEXT    NOT NULL DEFAULT '',
    value         TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, namespace, checkpoint_id, task_id, idx),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
) WITHOUT ROWID;

-- A session's own retention policy (model.CheckpointRetention as JSON);
-- NULL: the server's default.
ALTER TABLE sessions ADD COLUMN checkpoint_retention TEXT;

-- +goose Down
-- Namespaces other than '' have no place in the older table: refuse rather
-- than drop them.
CREATE TEMP TABLE checkpoints_graph_down_guard (
    n INTEGER CONSTRAINT "checkpoints in namespaces need migration 00024: export and purge their sessions first" CHECK (n = 0)
);
INSERT INTO checkpoints_graph_down_guard SELECT COUNT(*) FROM checkpoints WHERE namespace <> '';
DROP TABLE checkpoints_graph_down_guard;
ALTER TABLE sessions DROP COLUMN checkpoint_retention;
DROP TABLE checkpoint_writes;
CREATE TABLE checkpoints_line (
    tenant_id      TEXT    NOT NULL,
    session_id     TEXT    NOT NULL,
    iteration      INTEGER NOT NULL CHECK (iteration >= 0),
    id             TEXT    NOT NULL,
    state          TEXT    NOT NULL,
    last_seq       INTEGER NOT NULL,
    sha256         TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    kind           TEXT    NOT NULL DEFAULT 'full' CHECK (kind IN ('full', 'delta')),
    codec          TEXT    NOT NULL DEFAULT '' CHECK (codec IN ('', 'zstd')),
    base_iteration INTEGER,
    body           BLOB,
    PRIMARY KEY (tenant_id, session_id, iteration),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
) WITHOUT ROWID;
INSERT INTO checkpoints_line SELECT tenant_id, session_id, iteration, id, state, last_seq, sha256, created_at,
    kind, codec, base_iteration, body FROM checkpoints;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_line RENAME TO checkpoints;
CREATE UNIQUE INDEX checkpoints_by_id ON checkpoints (tenant_id, id);
