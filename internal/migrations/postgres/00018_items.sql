-- +goose Up
-- The item store (SQLite's 00020). namespace and key compare bytewise
-- (COLLATE "C"), as on SQLite, so that a namespace prefix is one range of the
-- primary key and pages come in the same order on both.
CREATE TABLE items (
    tenant_id       TEXT             NOT NULL,
    user_id         TEXT             NOT NULL,
    namespace       TEXT COLLATE "C" NOT NULL,
    key             TEXT COLLATE "C" NOT NULL,
    id              TEXT             NOT NULL,
    value           JSON             NOT NULL,
    index_paths     JSON,
    version         BIGINT           NOT NULL,
    created_at      BIGINT           NOT NULL,
    updated_at      BIGINT           NOT NULL,
    expires_at      BIGINT,
    ttl_seconds     BIGINT,
    embedding_state TEXT CHECK (embedding_state IN ('pending', 'ready', 'failed')),
    embedding_error TEXT,
    PRIMARY KEY (tenant_id, user_id, namespace, key)
);
CREATE UNIQUE INDEX items_by_id ON items (tenant_id, id);
CREATE INDEX items_expiring ON items (expires_at, tenant_id) WHERE expires_at IS NOT NULL;

CREATE TABLE item_vectors (
    tenant_id TEXT    NOT NULL,
    item_id   TEXT    NOT NULL,
    field     TEXT    NOT NULL,
    text      TEXT    NOT NULL,
    state     TEXT    NOT NULL CHECK (state IN ('pending', 'ready', 'failed')),
    model     TEXT,
    embedding BYTEA,
    error     TEXT,
    attempts  INTEGER NOT NULL DEFAULT 0,
    due       BIGINT,
    PRIMARY KEY (tenant_id, item_id, field)
);
-- The embedding worker claims per tenant, round robin (00020 for passages
-- and messages): the due texts of one tenant are one range.
CREATE INDEX item_vectors_due ON item_vectors (tenant_id, due) WHERE state = 'pending';

-- +goose Down
DROP TABLE item_vectors;
DROP TABLE items;
