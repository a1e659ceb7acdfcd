-- +goose Up
-- Operations an operator starts that may outlast a request (purge, integrity
-- check, backup), as GET /v1/admin/jobs/{id} reads them (model.Job). runner
-- names the process that runs a job: one of another process that still reads
-- as running was cut short by a restart.
CREATE TABLE jobs (
    tenant_id   TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'interrupted')),
    phase       TEXT    NOT NULL DEFAULT '',
    done        INTEGER NOT NULL DEFAULT 0,
    total       INTEGER,
    result      TEXT,
    error       TEXT,
    runner      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    finished_at INTEGER,
    PRIMARY KEY (tenant_id, id)
) WITHOUT ROWID;
CREATE INDEX jobs_by_created ON jobs (tenant_id, created_at);

-- +goose Down
DROP TABLE jobs;
