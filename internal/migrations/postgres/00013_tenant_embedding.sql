-- +goose Up
-- A tenant's embedding endpoint (SQLite's 00018).
CREATE TABLE tenant_embedding (
    tenant_id        TEXT PRIMARY KEY,
    embedding_config JSON NOT NULL
);

-- +goose Down
DROP TABLE tenant_embedding;
