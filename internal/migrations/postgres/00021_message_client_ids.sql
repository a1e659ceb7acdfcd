-- +goose Up
-- A client's own id of a message (SQLite's 00026).
ALTER TABLE messages ADD COLUMN client_id TEXT;
CREATE UNIQUE INDEX messages_by_client_id ON messages (tenant_id, session_id, client_id) WHERE client_id IS NOT NULL;

-- +goose Down
DROP INDEX messages_by_client_id;
ALTER TABLE messages DROP COLUMN client_id;
