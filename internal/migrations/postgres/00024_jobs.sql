-- +goose Up
-- Operations an operator starts that may outlast a request (SQLite's 00029).
-- On PostgreSQL any of several processes may run a job: one whose runner has
-- not written for model.JobStaleAfter reads as interrupted.
CREATE TABLE jobs (
    tenant_id   TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    state       TEXT    NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'interrupted')),
    phase       TEXT    NOT NULL DEFAULT '',
    done        BIGINT  NOT NULL DEFAULT 0,
    total       BIGINT,
    result      JSON,
    error       JSON,
    runner      TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL,
    finished_at BIGINT,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX jobs_by_created ON jobs (tenant_id, created_at);

-- +goose Down
DROP TABLE jobs;
