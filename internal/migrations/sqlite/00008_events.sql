-- +goose Up
-- The live feed's log: each write that changes a session records its events
-- in the same transaction. pos is the feed's order; AUTOINCREMENT, because a
-- pos must never be handed out twice, even after the newest events were
-- purged, or a reader resuming after it would miss the new ones. A message's
-- event keeps only its id: the message is read with the event, so the log
-- does not hold every message twice.
CREATE TABLE events (
    pos        INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    message_id TEXT,
    seq        INTEGER,
    data       TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX events_by_tenant ON events (tenant_id, pos);
CREATE INDEX events_by_session ON events (tenant_id, session_id, pos);
CREATE INDEX events_by_seq ON events (tenant_id, session_id, seq) WHERE seq IS NOT NULL;

-- +goose Down
DROP TABLE events;
