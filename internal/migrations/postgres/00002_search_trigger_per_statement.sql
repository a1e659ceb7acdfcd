-- +goose Up
-- What a message costs to store while its session's row is locked, made
-- smaller; the same rows and parts as before.
--
-- The search index is kept by one trigger call per INSERT statement instead
-- of one per row: a group commit of appends, a batch or an import inserts
-- many messages in one statement, and the row trigger's per-row call (a
-- PL/pgSQL entry and an INSERT of its own) was most of a message's cost.
--
-- message_search loses its foreign key to messages: the rewind and the purge,
-- the only deletes of messages, delete their search rows in the same
-- transaction. The key's check locked each new message row once more per
-- part, and its plan, cached per connection, is made while the table is
-- small: a sequential scan that then ran for every part of every message
-- until autovacuum's next ANALYZE of messages.
ALTER TABLE message_search DROP CONSTRAINT message_search_tenant_id_session_id_seq_fkey;
DROP TRIGGER message_search_index ON messages;
DROP FUNCTION message_search_index();
-- +goose StatementBegin
CREATE FUNCTION message_search_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO message_search (tenant_id, session_id, seq, part, tsv)
    SELECT m.tenant_id, m.session_id, m.seq, p.n, to_tsvector('english', substr(m.content, p.n * 8000 + 1, 8100))
    FROM inserted m CROSS JOIN LATERAL generate_series(0, GREATEST(0, (length(m.content) - 1) / 8000)) AS p(n);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER message_search_index AFTER INSERT ON messages
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION message_search_index();

-- +goose Down
DROP TRIGGER message_search_index ON messages;
DROP FUNCTION message_search_index();
-- +goose StatementBegin
CREATE FUNCTION message_search_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO message_search (tenant_id, session_id, seq, part, tsv)
    SELECT NEW.tenant_id, NEW.session_id, NEW.seq, p.n, to_tsvector('english', substr(NEW.content, p.n * 8000 + 1, 8100))
    FROM generate_series(0, GREATEST(0, (length(NEW.content) - 1) / 8000)) AS p(n);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER message_search_index AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION message_search_index();
ALTER TABLE message_search ADD FOREIGN KEY (tenant_id, session_id, seq)
    REFERENCES messages (tenant_id, session_id, seq) ON DELETE CASCADE;
