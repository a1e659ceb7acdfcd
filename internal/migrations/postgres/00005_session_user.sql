-- +goose Up
-- The end user a session belongs to (optional, client-chosen), and the index
-- behind GET /v1/sessions?user_id=, newest first as every session list.
ALTER TABLE sessions ADD COLUMN user_id TEXT;
CREATE INDEX sessions_by_user ON sessions (tenant_id, user_id, created_at, id) WHERE user_id IS NOT NULL;

-- +goose Down
DROP INDEX sessions_by_user;
ALTER TABLE sessions DROP COLUMN user_id;
