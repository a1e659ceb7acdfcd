-- +goose Up
-- The usage rollups leave the append (issue 21; SQLite's 00031): every
-- append of a tenant upserted one usage_daily row (tenant, day, '', ''),
-- whose lock it held through its commit, so a tenant's appends ran one at a
-- time. Now an append writes nothing for them. A message's event is numbered
-- in commit order by the sequencer (00003); a folder (internal/repo/postgres/
-- usagefold.go) adds the messages of the events numbered since it last looked
-- to the rollups and moves usage_state.folded past them, in one transaction,
-- under usage_state's row lock. A message whose event is not numbered yet, or
-- numbered past folded, is the tail: GET /v1/usage adds it in the same
-- statement. A rewind or a purge takes back only what is not in the tail,
-- holding the same row's lock shared so that no fold moves meanwhile. Forks'
-- copies and imports have no message events: they add to the rollups at
-- once, as before.
CREATE TABLE usage_state (
    one    BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    folded BIGINT  NOT NULL
);

-- The rollups counted every stored message until now: whatever committed
-- unnumbered is numbered here (as the sequencer would), and all of it is
-- folded. (A process of an older version appending meanwhile would still
-- add to the rollups itself: stop them before this migration.)
SELECT 1 FROM event_sequencer WHERE one FOR UPDATE;
WITH last AS (SELECT last_pos FROM event_sequencer WHERE one),
    todo AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM events WHERE pos IS NULL),
    numbered AS (UPDATE events e SET pos = last.last_pos + todo.n FROM todo, last WHERE e.id = todo.id RETURNING e.pos)
UPDATE event_sequencer SET last_pos = m.top FROM (SELECT max(pos) AS top FROM numbered) m WHERE one AND m.top IS NOT NULL;
INSERT INTO usage_state (one, folded) SELECT true, last_pos FROM event_sequencer WHERE one;

-- +goose Down
-- Back to rollups kept by every write: the tail is folded first.
INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
    COUNT(*), SUM(m.tokens), SUM(m.cost)
FROM events e
JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
WHERE e.type = 'message.appended' AND (e.pos IS NULL OR e.pos > (SELECT folded FROM usage_state WHERE one))
GROUP BY 1, 2, 3, 4
ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = usage_daily.messages + excluded.messages,
    tokens = usage_daily.tokens + excluded.tokens, cost = usage_daily.cost + excluded.cost;
INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
SELECT m.tenant_id, m.created_at / 86400000, m.session_id, COUNT(*), SUM(m.tokens), SUM(m.cost)
FROM events e
JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
WHERE e.type = 'message.appended' AND (e.pos IS NULL OR e.pos > (SELECT folded FROM usage_state WHERE one))
GROUP BY 1, 2, 3
ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = usage_sessions.messages + excluded.messages,
    tokens = usage_sessions.tokens + excluded.tokens, cost = usage_sessions.cost + excluded.cost;
DROP TABLE usage_state;
