-- +goose Up
-- API keys: only the SHA-256 of a key is stored, never the key itself. A key is
-- found by its id (which the key text carries), then its hash is compared in
-- constant time.
CREATE TABLE api_keys (
    id         TEXT    NOT NULL PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    name       TEXT    NOT NULL DEFAULT '',
    scope      TEXT    NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    key_hash   BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) WITHOUT ROWID;

CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, created_at, id);
-- Open mode ("no key exists") is asked on every unauthenticated request.
CREATE INDEX api_keys_active ON api_keys (revoked_at) WHERE revoked_at IS NULL;

-- +goose Down
DROP TABLE api_keys;
