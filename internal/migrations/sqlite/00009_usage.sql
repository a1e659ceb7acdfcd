-- +goose Up
-- GET /v1/usage's rollups, kept in the writer's transaction by every write
-- that stores or removes messages (append, rewind, a fork's copy, import,
-- purge): what they hold is always the sum over the stored messages, so a
-- year of usage costs a year of days (times agents and models) to read, not a
-- year of messages. Days are UTC, in days since 1970-01-01; '' is "none" for
-- agent and model, as a key cannot be NULL.
CREATE TABLE usage_daily (
    tenant_id TEXT    NOT NULL,
    day       INTEGER NOT NULL,
    agent_id  TEXT    NOT NULL,
    model     TEXT    NOT NULL,
    messages  INTEGER NOT NULL,
    tokens    INTEGER NOT NULL,
    cost      REAL    NOT NULL,
    PRIMARY KEY (tenant_id, day, agent_id, model)
);
CREATE TABLE usage_sessions (
    tenant_id  TEXT    NOT NULL,
    day        INTEGER NOT NULL,
    session_id TEXT    NOT NULL,
    messages   INTEGER NOT NULL,
    tokens     INTEGER NOT NULL,
    cost       REAL    NOT NULL,
    PRIMARY KEY (tenant_id, day, session_id)
);

-- What is stored already is counted once, here.
INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''), COALESCE(m.model, ''),
    COUNT(*), SUM(m.tokens), SUM(m.cost)
FROM messages m JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
GROUP BY 1, 2, 3, 4;
INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
SELECT tenant_id, created_at / 86400000, session_id, COUNT(*), SUM(tokens), SUM(cost)
FROM messages GROUP BY 1, 2, 3;

-- +goose Down
DROP TABLE usage_sessions;
DROP TABLE usage_daily;
