-- +goose Up
-- The Idempotency-Key of every write that has none of its own (SQLite's
-- 00020): inserted in the transaction of the write it answers, its answer
-- stored just after.
CREATE TABLE idempotency_keys (
    tenant_id   TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    fingerprint BYTEA   NOT NULL,
    route       TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    status      INTEGER,
    headers     TEXT,
    body        BYTEA,
    PRIMARY KEY (tenant_id, user_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
