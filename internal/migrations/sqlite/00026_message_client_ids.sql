-- +goose Up
-- A client's own id of a message (the AI SDK's UIMessage id): read, rewound
-- to and replaced by. Unique in a session's own rows; a fork's inherited
-- prefix is checked by the append (repo: clientIDSeq). The index is partial:
-- an append without a client id writes nothing to it.
ALTER TABLE messages ADD COLUMN client_id TEXT;
CREATE UNIQUE INDEX messages_by_client_id ON messages (tenant_id, session_id, client_id) WHERE client_id IS NOT NULL;

-- +goose Down
DROP INDEX messages_by_client_id;
ALTER TABLE messages DROP COLUMN client_id;
