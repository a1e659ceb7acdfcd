-- +goose Up
-- The sessions list's title filter (GET /v1/sessions?title=) finds the
-- sessions whose title contains a text. A trigram index answers which titles
-- may contain it without reading every title: FTS5 needs an integer rowid,
-- which sessions (WITHOUT ROWID) lack, so each titled session has a row here,
-- kept by the triggers below whoever writes sessions (create, fork, import,
-- PATCH, purge, expiry). An append never sets title, so it fires none.
CREATE TABLE session_titles (
    n         INTEGER PRIMARY KEY,
    tenant_id TEXT    NOT NULL,
    id        TEXT    NOT NULL,
    title     TEXT    NOT NULL
);
CREATE UNIQUE INDEX session_titles_by_id ON session_titles (tenant_id, id);

CREATE VIRTUAL TABLE session_titles_fts USING fts5(
    title, content = 'session_titles', content_rowid = 'n', tokenize = 'trigram');

-- +goose StatementBegin
CREATE TRIGGER session_titles_fts_insert AFTER INSERT ON session_titles BEGIN
    INSERT INTO session_titles_fts (rowid, title) VALUES (new.n, new.title);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER session_titles_fts_delete AFTER DELETE ON session_titles BEGIN
    INSERT INTO session_titles_fts (session_titles_fts, rowid, title) VALUES ('delete', old.n, old.title);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER sessions_title_insert AFTER INSERT ON sessions WHEN new.title IS NOT NULL BEGIN
    INSERT INTO session_titles (tenant_id, id, title) VALUES (new.tenant_id, new.id, new.title);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER sessions_title_delete AFTER DELETE ON sessions WHEN old.title IS NOT NULL BEGIN
    DELETE FROM session_titles WHERE tenant_id = old.tenant_id AND id = old.id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER sessions_title_update AFTER UPDATE OF title ON sessions
WHEN old.title IS NOT new.title BEGIN
    DELETE FROM session_titles WHERE tenant_id = old.tenant_id AND id = old.id;
    INSERT INTO session_titles (tenant_id, id, title) SELECT new.tenant_id, new.id, new.title WHERE new.title IS NOT NULL;
END;
-- +goose StatementEnd

INSERT INTO session_titles (tenant_id, id, title) SELECT tenant_id, id, title FROM sessions WHERE title IS NOT NULL;

-- +goose Down
DROP TRIGGER sessions_title_update;
DROP TRIGGER sessions_title_delete;
DROP TRIGGER sessions_title_insert;
DROP TRIGGER session_titles_fts_delete;
DROP TRIGGER session_titles_fts_insert;
DROP TABLE session_titles_fts;
DROP TABLE session_titles;
