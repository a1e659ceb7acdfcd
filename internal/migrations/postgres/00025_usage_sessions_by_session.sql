-- +goose Up
-- A purge erases a session's usage rows by (tenant, session), which the key
-- (tenant, day, session) cannot serve: without this index each purged session
-- read every usage row of its tenant. An append adds an entry here only with
-- a session's first message of a day; its other appends update counters this
-- index does not hold.
CREATE INDEX usage_sessions_by_session ON usage_sessions (tenant_id, session_id);

-- +goose Down
DROP INDEX usage_sessions_by_session;
