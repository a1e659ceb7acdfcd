-- +goose Up
-- The live feed's log costs appends nothing (issue 21). A message is its own
-- event: messages.gid is handed out by the single writer in commit order, so
-- the feed reads message events from the messages table itself (through
-- messages_by_gid, or a session's primary key). The other events (session,
-- checkpoint, compaction, rewind) stay rows of events, and each takes its
-- position from the same counter (the writer's nextGID): the feed's position
-- space is the gid space, and a read merges messages and event rows by gid.

-- A message the session did not append itself is no event: copies a fork
-- takes of its parent's messages when it stops sharing them, imported
-- messages, and messages stored before the feed existed (those without an
-- event row now). In every session they are a prefix of its seqs, so that
-- "in_feed and gid > P" is false and then true along a session's seqs (an
-- appended message's gid grows with its seq), which a binary search over
-- the primary key relies on (events.go).
ALTER TABLE messages ADD COLUMN in_feed INTEGER NOT NULL DEFAULT 1;
UPDATE messages SET in_feed = 0 WHERE NOT EXISTS (SELECT 1 FROM events e
    WHERE e.tenant_id = messages.tenant_id AND e.session_id = messages.session_id AND e.seq = messages.seq
        AND e.message_id = messages.id AND e.type = 'message.appended');

-- The embedding queue followed event positions; it follows message gids now.
-- A message's gid and its old event's position grew in the same order, so
-- the messages queued so far are those up to the highest gid whose event was
-- at or before the cursor.
UPDATE embedding_cursor SET pos = COALESCE((SELECT MAX(m.gid) FROM events e
    JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
    WHERE e.type = 'message.appended' AND e.pos <= embedding_cursor.pos), 0);

-- Event rows move into the gid space: pos is now a gid, given by the writer
-- (no AUTOINCREMENT: the gid counter and its high-water mark never hand one
-- out twice). Message rows go. The legacy rows keep their order but take gids
-- above every gid handed out so far: no reader can resume across this
-- migration anyway (ids become opaque tokens), and a reader replaying the
-- whole log then sees those session events after the old messages, once each.
CREATE TABLE events_gid (
    pos        INTEGER PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    data       TEXT,
    created_at INTEGER NOT NULL
);
INSERT INTO events_gid (pos, tenant_id, session_id, type, data, created_at)
    SELECT (SELECT MAX(COALESCE((SELECT MAX(gid) FROM messages), 0),
                COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'gid_high_water'), 0)))
            + row_number() OVER (ORDER BY pos),
        tenant_id, session_id, type, data, created_at
    FROM events WHERE type <> 'message.appended';
DROP TABLE events;
ALTER TABLE events_gid RENAME TO events;
CREATE INDEX events_by_tenant ON events (tenant_id, pos);
CREATE INDEX events_by_session ON events (tenant_id, session_id, pos);

-- A live feed belongs to the session it opened on, not to its id: a purged
-- session and a new one of the same id differ here. Set once, when the
-- session is made, to a gid nothing else is given. Sessions made before
-- share 0: every one made from now on differs from them.
ALTER TABLE sessions ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 0;

-- The secret the feed's ids are sealed with (internal/feed/ids.go): drawn
-- at the first Open, kept here so that backups carry it.
CREATE TABLE feed_secret (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    secret BLOB    NOT NULL CHECK (length(secret) = 32)
);

-- +goose Down
DROP TABLE feed_secret;
ALTER TABLE sessions DROP COLUMN incarnation;
-- Back to a row per event, messages' included, at their gids (pos stays a
-- gid, so the embedding cursor needs nothing).
CREATE TABLE events_pos (
    pos        INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    message_id TEXT,
    seq        INTEGER,
    data       TEXT,
    created_at INTEGER NOT NULL
);
INSERT INTO events_pos (pos, tenant_id, session_id, type, message_id, seq, data, created_at)
    SELECT pos, tenant_id, session_id, type, NULL, NULL, data, created_at FROM events
    UNION ALL
    SELECT gid, tenant_id, session_id, 'message.appended', id, seq, NULL, created_at FROM messages WHERE in_feed = 1
    ORDER BY 1;
DROP TABLE events;
ALTER TABLE events_pos RENAME TO events;
CREATE INDEX events_by_tenant ON events (tenant_id, pos);
CREATE INDEX events_by_session ON events (tenant_id, session_id, pos);
CREATE INDEX events_by_seq ON events (tenant_id, session_id, seq) WHERE seq IS NOT NULL;
ALTER TABLE messages DROP COLUMN in_feed;
