-- +goose Up
-- Time to live: a session or archival passage past its expires_at (ms since
-- the epoch, as every time) is hidden from reads, and erased by
-- POST /v1/admin/purge with "expired": true, through these partial indexes.
ALTER TABLE sessions ADD COLUMN expires_at INTEGER;
CREATE INDEX sessions_by_expiry ON sessions (tenant_id, expires_at, id) WHERE expires_at IS NOT NULL;
ALTER TABLE passages ADD COLUMN expires_at INTEGER;
CREATE INDEX passages_by_expiry ON passages (tenant_id, expires_at) WHERE expires_at IS NOT NULL;

-- +goose Down
DROP INDEX passages_by_expiry;
ALTER TABLE passages DROP COLUMN expires_at;
DROP INDEX sessions_by_expiry;
ALTER TABLE sessions DROP COLUMN expires_at;
