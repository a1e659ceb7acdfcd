-- +goose Up
-- The end user a key is bound to, if any: such a key sees only that user's
-- sessions, and the sessions it creates are that user's.
ALTER TABLE api_keys ADD COLUMN user_id TEXT;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN user_id;
