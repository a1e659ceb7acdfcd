-- +goose Up
-- The sessions' top-level metadata, one row per key (SQLite's 00022), so that
-- a list filtered by a metadata value reads the sessions that have it, newest
-- first, from an index. Values are rendered as the filter compares them
-- (sessions_list.go, sessionMetaValuePG); a key or value of more than 256
-- bytes is not indexed. Kept by triggers on every path that writes
-- sessions.metadata; an append does not write it.
--
-- Session ids are ordered byte by byte (COLLATE "C") everywhere a list pages
-- by them, as SQLite's BINARY collation does: the keyset indexes of sessions
-- are made again with that collation, so that a page is an index range
-- whatever the database's locale (with another collation the index could not
-- give the order, and each page sorted every matching session).
CREATE TABLE session_meta (
    tenant_id  TEXT   NOT NULL,
    key        TEXT   NOT NULL,
    value      TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    session_id TEXT   COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, key, value, created_at, session_id)
);

-- A metadata value as a filter compares it, the way SQLite's CAST of a
-- json_each value renders it: strings unquoted, integers as written, other
-- numbers as SQLite prints a REAL (always with a ".0" or a fraction: 1e3 is
-- "1000.0", 1e20 "1.0e+20"), true, false, null, objects and arrays as their
-- JSON text. SQLite prints a REAL with 15 significant digits and PostgreSQL
-- with the shortest exact ones: a number that needs more than 15 digits reads
-- differently, and so does one with a three-digit exponent (taken as written:
-- it may not fit a float8, and the filter must not fail).
-- +goose StatementBegin
CREATE FUNCTION session_meta_text(v json) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE json_typeof(v)
        WHEN 'string' THEN v #>> '{}'
        WHEN 'number' THEN CASE WHEN v::text ~ '^-?[0-9]+$' THEN v::text
            WHEN v::text ~* 'e[+-]?0*[0-9]{3}' THEN v::text
            ELSE regexp_replace((v::text)::float8::text, '^(-?[0-9]+)(e.*)?$', '\1.0\2') END
        ELSE v::text END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION session_meta_rows(m json) RETURNS TABLE (key text, value text) LANGUAGE sql IMMUTABLE AS $$
    SELECT x.key, x.value FROM (SELECT j.key, session_meta_text(j.value) AS value FROM json_each(m) j) x
    WHERE octet_length(x.key) <= 256 AND octet_length(x.value) <= 256
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION session_meta_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM session_meta m USING session_meta_rows(OLD.metadata) r
        WHERE m.tenant_id = OLD.tenant_id AND m.key = r.key AND m.value = r.value
            AND m.created_at = OLD.created_at AND m.session_id = OLD.id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO session_meta (tenant_id, key, value, created_at, session_id)
        SELECT NEW.tenant_id, r.key, r.value, NEW.created_at, NEW.id FROM session_meta_rows(NEW.metadata) r
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER session_meta_insert AFTER INSERT OR DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION session_meta_sync();
CREATE TRIGGER session_meta_update AFTER UPDATE OF metadata ON sessions FOR EACH ROW
    WHEN (OLD.metadata::text IS DISTINCT FROM NEW.metadata::text) EXECUTE FUNCTION session_meta_sync();

INSERT INTO session_meta (tenant_id, key, value, created_at, session_id)
SELECT s.tenant_id, r.key, r.value, s.created_at, s.id FROM sessions s, session_meta_rows(s.metadata) r
ON CONFLICT DO NOTHING;

DROP INDEX sessions_by_created;
DROP INDEX sessions_by_status;
DROP INDEX sessions_by_agent;
DROP INDEX sessions_by_user;
CREATE INDEX sessions_by_created ON sessions (tenant_id, created_at, id COLLATE "C");
CREATE INDEX sessions_by_status  ON sessions (tenant_id, status, created_at, id COLLATE "C");
CREATE INDEX sessions_by_agent   ON sessions (tenant_id, agent_id, created_at, id COLLATE "C") WHERE agent_id IS NOT NULL;
CREATE INDEX sessions_by_user    ON sessions (tenant_id, user_id, created_at, id COLLATE "C") WHERE user_id IS NOT NULL;

-- +goose Down
DROP INDEX sessions_by_created;
DROP INDEX sessions_by_status;
DROP INDEX sessions_by_agent;
DROP INDEX sessions_by_user;
CREATE INDEX sessions_by_created ON sessions (tenant_id, created_at, id);
CREATE INDEX sessions_by_status  ON sessions (tenant_id, status, created_at, id);
CREATE INDEX sessions_by_agent   ON sessions (tenant_id, agent_id, created_at, id) WHERE agent_id IS NOT NULL;
CREATE INDEX sessions_by_user    ON sessions (tenant_id, user_id, created_at, id) WHERE user_id IS NOT NULL;
DROP TRIGGER session_meta_update ON sessions;
DROP TRIGGER session_meta_insert ON sessions;
DROP FUNCTION session_meta_sync();
DROP FUNCTION session_meta_rows(json);
DROP FUNCTION session_meta_text(json);
DROP TABLE session_meta;
