-- +goose Up
-- Server-computed embeddings. An agent may name an OpenAI-compatible endpoint
-- (embedding_config, JSON); a passage without the client's embedding then
-- waits in embedding_state 'pending' until the embedding worker, outside the
-- writer, stores one ('ready') or gives up ('failed', embedding_error).
-- embedding_due is when a pending one is next tried: retries back off, and a
-- worker that claimed a row and died lets it fall due again.
ALTER TABLE agents ADD COLUMN embedding_config TEXT CHECK (embedding_config IS NULL OR json_valid(embedding_config));
ALTER TABLE passages ADD COLUMN embedding_model TEXT;
ALTER TABLE passages ADD COLUMN embedding_state TEXT CHECK (embedding_state IN ('pending', 'ready', 'failed'));
ALTER TABLE passages ADD COLUMN embedding_error TEXT;
ALTER TABLE passages ADD COLUMN embedding_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE passages ADD COLUMN embedding_due INTEGER;
UPDATE passages SET embedding_state = 'ready',
    embedding_model = (SELECT a.embedding_model FROM agents a WHERE a.tenant_id = passages.tenant_id AND a.id = passages.agent_id)
    WHERE embedding IS NOT NULL;
CREATE INDEX passages_embedding_due ON passages (embedding_due) WHERE embedding_state = 'pending';

-- A message's embedding, for conversation search by meaning: kept beside the
-- message (keyed by its place, checked against its id, as a rewind may put
-- another message there), written only by the embedding worker, which follows
-- the event log from embedding_cursor so that appends never wait for it.
CREATE TABLE message_embeddings (
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    message_id TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    state      TEXT    NOT NULL CHECK (state IN ('pending', 'ready', 'failed')),
    model      TEXT,
    embedding  BLOB,
    error      TEXT,
    attempts   INTEGER NOT NULL DEFAULT 0,
    due        INTEGER,
    PRIMARY KEY (tenant_id, session_id, seq)
);
CREATE INDEX message_embeddings_by_agent ON message_embeddings (tenant_id, agent_id) WHERE state = 'ready';
CREATE INDEX message_embeddings_due ON message_embeddings (due) WHERE state = 'pending';

CREATE TABLE embedding_cursor (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    pos INTEGER NOT NULL
);
INSERT INTO embedding_cursor (one, pos) VALUES (1, 0);

-- +goose Down
DROP TABLE embedding_cursor;
DROP TABLE message_embeddings;
DROP INDEX passages_embedding_due;
ALTER TABLE passages DROP COLUMN embedding_due;
ALTER TABLE passages DROP COLUMN embedding_attempts;
ALTER TABLE passages DROP COLUMN embedding_error;
ALTER TABLE passages DROP COLUMN embedding_state;
ALTER TABLE passages DROP COLUMN embedding_model;
ALTER TABLE agents DROP COLUMN embedding_config;
