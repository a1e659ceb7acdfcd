-- +goose Up
-- A live feed belongs to the session it opened on, not to its id (SQLite's
-- 00025): each session gets a number of its own when it is made, never given
-- again, so a purged session and a new one of the same id differ here.
CREATE SEQUENCE session_incarnations;
ALTER TABLE sessions ADD COLUMN incarnation BIGINT NOT NULL DEFAULT nextval('session_incarnations');

-- The secret the feed's ids are sealed with (internal/feed/ids.go): drawn
-- at the first Open, kept in the database that the ids number.
CREATE TABLE feed_secret (
    one    BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    secret BYTEA   NOT NULL CHECK (length(secret) = 32)
);

-- +goose Down
DROP TABLE feed_secret;
ALTER TABLE sessions DROP COLUMN incarnation;
DROP SEQUENCE session_incarnations;
