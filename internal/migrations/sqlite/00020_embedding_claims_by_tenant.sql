-- +goose Up
-- The embedding worker claims round robin over tenants, so that one tenant's
-- backlog, or its endpoint that never answers, cannot keep another tenant's
-- texts waiting: it finds the next tenant with pending texts, then that
-- tenant's due ones, each by one seek in these (pending rows only).
CREATE INDEX passages_embedding_tenant_due ON passages (tenant_id, embedding_due) WHERE embedding_state = 'pending';
CREATE INDEX message_embeddings_tenant_due ON message_embeddings (tenant_id, due) WHERE state = 'pending';

-- embedding_error used to quote the endpoint's answer or the network's error
-- after a ': ' (a body, an internal address), and a tenant reads it; the
-- server's own descriptions, then and now, have none. What was stored before is
-- replaced, once: the details were in the server's log.
UPDATE passages SET embedding_error = 'the embedding endpoint failed' WHERE embedding_error LIKE '%: %';
UPDATE message_embeddings SET error = 'the embedding endpoint failed' WHERE error LIKE '%: %';

-- +goose Down
DROP INDEX message_embeddings_tenant_due;
DROP INDEX passages_embedding_tenant_due;
