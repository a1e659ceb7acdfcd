-- +goose Up
-- The server's expiry sweep asks which tenants have sessions or passages past
-- their expires_at: a range of these indexes (only the rows already expired),
-- not every row that has a time to live, as the (tenant_id, expires_at)
-- indexes would need.
CREATE INDEX sessions_expiring ON sessions (expires_at, tenant_id) WHERE expires_at IS NOT NULL;
CREATE INDEX passages_expiring ON passages (expires_at, tenant_id) WHERE expires_at IS NOT NULL;

-- +goose Down
DROP INDEX passages_expiring;
DROP INDEX sessions_expiring;
