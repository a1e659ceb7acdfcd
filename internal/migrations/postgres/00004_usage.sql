-- +goose Up
-- GET /v1/usage's rollups (SQLite's 00009): kept by every write that stores or
-- removes messages, in its transaction.
CREATE TABLE usage_daily (
    tenant_id TEXT             NOT NULL,
    day       BIGINT           NOT NULL,
    agent_id  TEXT             NOT NULL,
    model     TEXT             NOT NULL,
    messages  BIGINT           NOT NULL,
    tokens    BIGINT           NOT NULL,
    cost      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, day, agent_id, model)
);
CREATE TABLE usage_sessions (
    tenant_id  TEXT             NOT NULL,
    day        BIGINT           NOT NULL,
    session_id TEXT             NOT NULL,
    messages   BIGINT           NOT NULL,
    tokens     BIGINT           NOT NULL,
    cost       DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tenant_id, day, session_id)
);

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
