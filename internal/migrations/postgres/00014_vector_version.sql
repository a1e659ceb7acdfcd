-- +goose Up
-- vec_version (SQLite's 00019): moved by a trigger on every change to an
-- agent's embedded passages, so that every Logbook process on the database
-- sees its in-memory vector cache of the agent is stale.
ALTER TABLE agents ADD COLUMN vec_version BIGINT NOT NULL DEFAULT 0;

-- +goose StatementBegin
CREATE FUNCTION passages_vec_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.embedding IS NOT NULL THEN
            UPDATE agents SET vec_version = vec_version + 1 WHERE tenant_id = OLD.tenant_id AND id = OLD.agent_id;
        END IF;
    ELSIF NEW.embedding IS NOT NULL OR (TG_OP = 'UPDATE' AND OLD.embedding IS NOT NULL) THEN
        UPDATE agents SET vec_version = vec_version + 1 WHERE tenant_id = NEW.tenant_id AND id = NEW.agent_id;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER passages_vec AFTER INSERT OR DELETE OR UPDATE OF embedding, expires_at ON passages
    FOR EACH ROW EXECUTE FUNCTION passages_vec_bump();

-- +goose Down
DROP TRIGGER passages_vec ON passages;
DROP FUNCTION passages_vec_bump();
ALTER TABLE agents DROP COLUMN vec_version;
