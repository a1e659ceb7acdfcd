-- +goose Up
-- The item store (model.Item): JSON objects under a namespace and a key, in a
-- tenant's shared space (user_id '') or one end user's. namespace is the
-- labels joined by '.', which no label holds, so that the items under a
-- prefix are one range of the primary key, compared bytewise.
CREATE TABLE items (
    tenant_id       TEXT    NOT NULL,
    user_id         TEXT    NOT NULL,
    namespace       TEXT    NOT NULL,
    key             TEXT    NOT NULL,
    id              TEXT    NOT NULL,
    value           TEXT    NOT NULL,
    index_paths     TEXT,
    version         INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    expires_at      INTEGER,
    ttl_seconds     INTEGER,
    embedding_state TEXT CHECK (embedding_state IN ('pending', 'ready', 'failed')),
    embedding_error TEXT,
    PRIMARY KEY (tenant_id, user_id, namespace, key)
);
CREATE UNIQUE INDEX items_by_id ON items (tenant_id, id);
-- The expiry sweep's range, as sessions_expiring and passages_expiring.
CREATE INDEX items_expiring ON items (expires_at, tenant_id) WHERE expires_at IS NOT NULL;

-- One text of an item that is embedded for search by meaning (LangGraph's
-- store vectors): field is where in the value it came from. The worker
-- stores a vector only while the row still holds the text it embedded, so
-- that a vector of an older text never lands on a newer one's row.
CREATE TABLE item_vectors (
    tenant_id TEXT    NOT NULL,
    item_id   TEXT    NOT NULL,
    field     TEXT    NOT NULL,
    text      TEXT    NOT NULL,
    state     TEXT    NOT NULL CHECK (state IN ('pending', 'ready', 'failed')),
    model     TEXT,
    embedding BLOB,
    error     TEXT,
    attempts  INTEGER NOT NULL DEFAULT 0,
    due       INTEGER,
    PRIMARY KEY (tenant_id, item_id, field)
);
-- The embedding worker claims per tenant, round robin (00020 for passages
-- and messages): the due texts of one tenant are one range.
CREATE INDEX item_vectors_due ON item_vectors (tenant_id, due) WHERE state = 'pending';

-- +goose Down
DROP TABLE item_vectors;
DROP TABLE items;
