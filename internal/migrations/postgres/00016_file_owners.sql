-- +goose Up
-- Which end users may read a file (SQLite's 00020): the users who uploaded
-- it (file_owners) and the users whose sessions' messages reference it
-- (message_files.user_id, the session's user).
CREATE TABLE file_owners (
    tenant_id  TEXT   NOT NULL,
    file_id    TEXT   NOT NULL,
    user_id    TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, file_id, user_id)
);

ALTER TABLE message_files ADD COLUMN user_id TEXT;
UPDATE message_files mf SET user_id = s.user_id FROM sessions s
    WHERE s.tenant_id = mf.tenant_id AND s.id = mf.session_id AND s.user_id IS NOT NULL;
DROP INDEX message_files_by_file;
CREATE INDEX message_files_by_file ON message_files (tenant_id, file_id, user_id);

-- +goose Down
DROP INDEX message_files_by_file;
CREATE INDEX message_files_by_file ON message_files (tenant_id, file_id);
ALTER TABLE message_files DROP COLUMN user_id;
DROP TABLE file_owners;
