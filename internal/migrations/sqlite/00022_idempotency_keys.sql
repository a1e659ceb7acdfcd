-- +goose Up
-- The Idempotency-Key of every write that has none of its own (appends keep
-- theirs, per session, in request_keys and messages.idempotency_key). A row
-- is inserted in the transaction of the write it answers, so a retry can
-- never apply that write twice; the answer (status, a few headers, the body)
-- is stored just after, and is NULL when it never was (the process stopped
-- in between, or the route's answer is not kept). user_id is '' for a key
-- not bound to a user: keys are scoped per tenant and per user, never across
-- tenants. Rows older than --idempotency-ttl count as gone and are swept.
CREATE TABLE idempotency_keys (
    tenant_id   TEXT    NOT NULL,
    user_id     TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    fingerprint BLOB    NOT NULL,
    route       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    status      INTEGER,
    headers     TEXT,
    body        BLOB,
    PRIMARY KEY (tenant_id, user_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
