-- +goose Up
-- vec_version moves on every change to an agent's embedded passages, by
-- triggers, so that whoever makes the change (a request, the embedding
-- worker, an import, a purge), the in-memory vector cache (repo.VectorCache)
-- sees that its copy of the agent is stale.
ALTER TABLE agents ADD COLUMN vec_version INTEGER NOT NULL DEFAULT 0;

-- +goose StatementBegin
CREATE TRIGGER passages_vec_insert AFTER INSERT ON passages WHEN NEW.embedding IS NOT NULL
BEGIN
    UPDATE agents SET vec_version = vec_version + 1 WHERE tenant_id = NEW.tenant_id AND id = NEW.agent_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER passages_vec_delete AFTER DELETE ON passages WHEN OLD.embedding IS NOT NULL
BEGIN
    UPDATE agents SET vec_version = vec_version + 1 WHERE tenant_id = OLD.tenant_id AND id = OLD.agent_id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER passages_vec_update AFTER UPDATE OF embedding, expires_at ON passages
WHEN OLD.embedding IS NOT NULL OR NEW.embedding IS NOT NULL
BEGIN
    UPDATE agents SET vec_version = vec_version + 1 WHERE tenant_id = NEW.tenant_id AND id = NEW.agent_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER passages_vec_update;
DROP TRIGGER passages_vec_delete;
DROP TRIGGER passages_vec_insert;
ALTER TABLE agents DROP COLUMN vec_version;
