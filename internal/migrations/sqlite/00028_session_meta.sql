-- +goose Up
-- The sessions' top-level metadata, one row per key, so that a list filtered
-- by a metadata value (GET /v1/sessions?metadata.KEY=VALUE) reads the
-- sessions that have it, newest first, from an index, instead of reading the
-- metadata of every session of the tenant. Values are rendered as the filter
-- compares them (strings as they are, other values as JSON writes them); a
-- key or a value of more than 256 bytes is not indexed, and a filter on one is
-- answered by reading the tenant's sessions as before. The triggers keep the
-- rows in step with sessions.metadata on every path that writes it (create,
-- update, fork, import, purge), and cost nothing on an append, which does not
-- write metadata.
CREATE TABLE session_meta (
    tenant_id  TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    session_id TEXT    NOT NULL,
    PRIMARY KEY (tenant_id, key, value, created_at, session_id)
) WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER session_meta_insert AFTER INSERT ON sessions BEGIN
    INSERT OR IGNORE INTO session_meta (tenant_id, key, value, created_at, session_id)
    SELECT new.tenant_id, key, value, new.created_at, new.id FROM (SELECT j.key AS key, CASE j.type
        WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' ELSE CAST(j.value AS TEXT) END AS value
        FROM json_each(new.metadata) j)
    WHERE octet_length(key) <= 256 AND octet_length(value) <= 256;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER session_meta_update AFTER UPDATE OF metadata ON sessions WHEN old.metadata IS NOT new.metadata BEGIN
    DELETE FROM session_meta WHERE (tenant_id, key, value, created_at, session_id) IN (
        SELECT old.tenant_id, j.key, CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
            WHEN 'null' THEN 'null' ELSE CAST(j.value AS TEXT) END, old.created_at, old.id
        FROM json_each(old.metadata) j);
    INSERT OR IGNORE INTO session_meta (tenant_id, key, value, created_at, session_id)
    SELECT new.tenant_id, key, value, new.created_at, new.id FROM (SELECT j.key AS key, CASE j.type
        WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' ELSE CAST(j.value AS TEXT) END AS value
        FROM json_each(new.metadata) j)
    WHERE octet_length(key) <= 256 AND octet_length(value) <= 256;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER session_meta_delete AFTER DELETE ON sessions BEGIN
    DELETE FROM session_meta WHERE (tenant_id, key, value, created_at, session_id) IN (
        SELECT old.tenant_id, j.key, CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
            WHEN 'null' THEN 'null' ELSE CAST(j.value AS TEXT) END, old.created_at, old.id
        FROM json_each(old.metadata) j);
END;
-- +goose StatementEnd

INSERT OR IGNORE INTO session_meta (tenant_id, key, value, created_at, session_id)
SELECT tenant_id, key, value, created_at, id FROM (SELECT s.tenant_id, j.key AS key, CASE j.type
    WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' ELSE CAST(j.value AS TEXT) END AS value,
    s.created_at, s.id FROM sessions s, json_each(s.metadata) j)
WHERE octet_length(key) <= 256 AND octet_length(value) <= 256;

-- +goose Down
DROP TRIGGER session_meta_delete;
DROP TRIGGER session_meta_update;
DROP TRIGGER session_meta_insert;
DROP TABLE session_meta;
