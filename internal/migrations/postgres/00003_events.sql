-- +goose Up
-- The live feed's log (SQLite's 00008). Each write that changes a session
-- records its events in its transaction, with pos NULL: ids come from an
-- identity in allocation order, which is not commit order across processes.
-- The sequencer (events.go) gives pos in commit order afterwards: under the
-- lock of event_sequencer's one row it numbers, by id, the events every
-- committed transaction has left unnumbered. A session's events are written
-- under its row lock, so their ids already follow its commits; numbering
-- only what is committed, in rounds, keeps that order and makes a reader's
-- "after pos" miss nothing that commits later.
CREATE TABLE events (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pos        BIGINT,
    tenant_id  TEXT   NOT NULL,
    session_id TEXT   NOT NULL,
    type       TEXT   NOT NULL,
    message_id TEXT,
    seq        BIGINT,
    data       TEXT,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX events_pos ON events (pos);
CREATE INDEX events_unsequenced ON events (id) WHERE pos IS NULL;
CREATE INDEX events_by_tenant ON events (tenant_id, pos);
CREATE INDEX events_by_session ON events (tenant_id, session_id, pos);
CREATE INDEX events_by_seq ON events (tenant_id, session_id, seq) WHERE seq IS NOT NULL;

CREATE TABLE event_sequencer (
    one      BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    last_pos BIGINT  NOT NULL
);
INSERT INTO event_sequencer (one, last_pos) VALUES (true, 0);

-- +goose Down
DROP TABLE event_sequencer;
DROP TABLE events;
