-- +goose Up
-- A tenant's embedding endpoint, for its agents that name none; the
-- server's --embedding-url comes after it.
CREATE TABLE tenant_embedding (
    tenant_id        TEXT PRIMARY KEY,
    embedding_config TEXT NOT NULL CHECK (json_valid(embedding_config))
);

-- +goose Down
DROP TABLE tenant_embedding;
