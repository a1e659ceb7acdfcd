-- +goose Up
-- One row per loop iteration of a session's runtime. The hash covers the
-- iteration, the session's last_seq at that moment and the canonical JSON of the
-- state, so a read can tell a damaged row from a good one.
CREATE TABLE checkpoints (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    iteration  INTEGER NOT NULL CHECK (iteration >= 0),
    id         TEXT    NOT NULL,
    state      TEXT    NOT NULL,
    last_seq   INTEGER NOT NULL,
    sha256     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, session_id, iteration),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX checkpoints_by_id ON checkpoints (tenant_id, id);

-- A fork made here shares its parent's first forked_at_seq messages instead of
-- copying them (prefix_shared = 1); an imported or detached fork holds its own.
ALTER TABLE sessions ADD COLUMN prefix_shared INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_by_parent ON sessions (tenant_id, parent_id) WHERE parent_id IS NOT NULL;

-- The latest checkpoint's pause_until_ms, kept on the session so that a
-- scheduler's "what is due?" query is one index range.
ALTER TABLE sessions ADD COLUMN pause_until INTEGER;
CREATE INDEX sessions_by_pause ON sessions (tenant_id, pause_until, id) WHERE pause_until IS NOT NULL;

-- +goose Down
DROP INDEX sessions_by_pause;
ALTER TABLE sessions DROP COLUMN pause_until;
DROP INDEX sessions_by_parent;
ALTER TABLE sessions DROP COLUMN prefix_shared;
DROP TABLE checkpoints;
