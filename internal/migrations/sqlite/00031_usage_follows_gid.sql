-- +goose Up
-- The usage rollups leave the append (issue 21): an append writes nothing
-- for them. A folder in the writer (internal/repo/sqlite/usagefold.go) adds
-- the messages to the rollups in gid order, a stretch at a time, and moves
-- usage_state.folded past them in the same transaction. The writer hands
-- gids out in commit order, so a message not yet folded is one whose gid is
-- above folded: GET /v1/usage reads the rollups and those messages (the
-- tail) in one statement, so it always sees every stored message once. What
-- removes messages (a rewind, a purge) takes back only what was folded;
-- what stores them (appends, a fork's copies, an import) takes new gids,
-- and the folder finds them.
--
-- The rollups counted every stored message until now: all of them are
-- folded, up to the highest gid ever handed out (the writer starts above
-- folded too, so no message can take a gid the folder has passed).
CREATE TABLE usage_state (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    folded INTEGER NOT NULL
);
INSERT INTO usage_state (one, folded) VALUES (1, MAX(
    COALESCE((SELECT MAX(gid) FROM messages), 0),
    COALESCE((SELECT MAX(pos) FROM events), 0),
    COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'gid_high_water'), 0)));

-- +goose Down
-- Back to rollups kept by every write: the tail is folded first.
INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
    COUNT(*), SUM(m.tokens), SUM(m.cost)
FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
WHERE m.gid > (SELECT folded FROM usage_state)
GROUP BY 1, 2, 3, 4
ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = messages + excluded.messages,
    tokens = tokens + excluded.tokens, cost = cost + excluded.cost;
INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
SELECT tenant_id, created_at / 86400000, session_id, COUNT(*), SUM(tokens), SUM(cost)
FROM messages WHERE gid > (SELECT folded FROM usage_state)
GROUP BY 1, 2, 3
ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = messages + excluded.messages,
    tokens = tokens + excluded.tokens, cost = cost + excluded.cost;
DROP TABLE usage_state;
