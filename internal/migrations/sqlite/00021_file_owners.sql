-- +goose Up
-- Which end users may read a file (a key bound to a user sees only those):
-- the users who uploaded it (file_owners) and the users whose sessions'
-- messages reference it (message_files.user_id, the session's user, so that
-- "does this user reference this file?" is one index probe however many
-- other users' messages reference it).
CREATE TABLE file_owners (
    tenant_id  TEXT    NOT NULL,
    file_id    TEXT    NOT NULL,
    user_id    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, file_id, user_id)
) WITHOUT ROWID;

ALTER TABLE message_files ADD COLUMN user_id TEXT;
UPDATE message_files SET user_id = (SELECT s.user_id FROM sessions s
    WHERE s.tenant_id = message_files.tenant_id AND s.id = message_files.session_id);
DROP INDEX message_files_by_file;
CREATE INDEX message_files_by_file ON message_files (tenant_id, file_id, user_id);

-- +goose Down
DROP INDEX message_files_by_file;
CREATE INDEX message_files_by_file ON message_files (tenant_id, file_id);
ALTER TABLE message_files DROP COLUMN user_id;
DROP TABLE file_owners;
