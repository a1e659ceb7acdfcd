-- +goose Up
-- The sessions list's title filter (GET /v1/sessions?title=) finds the
-- sessions whose title contains a text (SQLite's 00026 keeps a trigram FTS5
-- table for it). Here a trigram GIN index answers the filter's LIKE, when the
-- database has pg_trgm (a trusted extension of PostgreSQL's contrib, which a
-- database owner may create): without it, the filter still works, testing
-- each title on the list's own index walk. The expression is model.FoldTitle
-- (A–Z folded, nothing else, whatever the locale), spelt as the query spells
-- it (postgres.titleFoldedPG).
-- +goose StatementBegin
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available (%): the title filter of the sessions list tests titles one by one', SQLERRM;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_opclass WHERE opcname = 'gin_trgm_ops' AND pg_opclass_is_visible(oid)) THEN
        EXECUTE $i$CREATE INDEX sessions_by_title ON sessions USING gin
            (translate(title, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') gin_trgm_ops)$i$;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- pg_trgm stays: other things may use it, and it holds no data.
DROP INDEX IF EXISTS sessions_by_title;
