-- +goose Up
-- Archival search by meaning: a passage may carry the client's embedding,
-- little-endian float32s. The first passage of an agent with an embedding pins
-- the agent's model and dimensions; later ones must match them.
ALTER TABLE passages ADD COLUMN embedding BYTEA;
ALTER TABLE agents ADD COLUMN embedding_model TEXT;
ALTER TABLE agents ADD COLUMN embedding_dims INTEGER;

-- +goose Down
ALTER TABLE agents DROP COLUMN embedding_dims;
ALTER TABLE agents DROP COLUMN embedding_model;
-- embedding_vec (pgvector's copy, added by the server where the extension is)
-- is generated from embedding and goes with it.
ALTER TABLE passages DROP COLUMN IF EXISTS embedding_vec;
ALTER TABLE passages DROP COLUMN embedding;
