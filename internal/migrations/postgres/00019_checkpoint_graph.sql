-- +goose Up
-- Checkpoints as graph runtimes keep them (see the SQLite migration 00020):
-- a namespace with its own line of iterations, the client's id, the parent,
-- metadata; pending writes; a session's retention policy.
ALTER TABLE checkpoints ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
ALTER TABLE checkpoints ADD COLUMN client_id TEXT;
ALTER TABLE checkpoints ADD COLUMN parent_id TEXT;
ALTER TABLE checkpoints ADD COLUMN parent_iteration BIGINT;
ALTER TABLE checkpoints ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
UPDATE checkpoints c SET client_id = c.id,
    parent_iteration = (SELECT MAX(p.iteration) FROM checkpoints p
        WHERE p.tenant_id = c.tenant_id AND p.session_id = c.session_id AND p.iteration < c.iteration),
    parent_id = (SELECT p.id FROM checkpoints p WHERE p.tenant_id = c.tenant_id AND p.session_id = c.session_id
        AND p.iteration < c.iteration ORDER BY p.iteration DESC LIMIT 1);
ALTER TABLE checkpoints ALTER COLUMN client_id SET NOT NULL;
ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_pkey;
ALTER TABLE checkpoints ADD PRIMARY KEY (tenant_id, session_id, namespace, iteration);
CREATE UNIQUE INDEX checkpoints_by_client_id ON checkpoints (tenant_id, session_id, namespace, client_id);
CREATE INDEX checkpoints_by_session ON checkpoints (tenant_id, session_id, created_at, id);
CREATE INDEX checkpoints_by_time ON checkpoints (tenant_id, created_at, id);

CREATE TABLE checkpoint_writes (
    tenant_id     TEXT   NOT NULL,
    session_id    TEXT   NOT NULL,
    namespace     TEXT   NOT NULL,
    checkpoint_id TEXT   NOT NULL,
    task_id       TEXT   NOT NULL,
    idx           BIGINT NOT NULL,
    channel       TEXT   NOT NULL,
    task_path     TEXT   NOT NULL DEFAULT '',
    value         TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, session_id, namespace, checkpoint_id, task_id, idx),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
);

ALTER TABLE sessions ADD COLUMN checkpoint_retention TEXT;

-- +goose Down
ALTER TABLE sessions DROP COLUMN checkpoint_retention;
DROP TABLE checkpoint_writes;
DROP INDEX checkpoints_by_time;
DROP INDEX checkpoints_by_session;
DROP INDEX checkpoints_by_client_id;
DELETE FROM checkpoints WHERE namespace <> '';
ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_pkey;
ALTER TABLE checkpoints ADD PRIMARY KEY (tenant_id, session_id, iteration);
ALTER TABLE checkpoints DROP COLUMN metadata;
ALTER TABLE checkpoints DROP COLUMN parent_iteration;
ALTER TABLE checkpoints DROP COLUMN parent_id;
ALTER TABLE checkpoints DROP COLUMN client_id;
ALTER TABLE checkpoints DROP COLUMN namespace;
