-- +goose Up
-- Shared core memory: agent_id sees the block its owner keeps as
-- (owner_agent_id, owner_label) under its own label. An attachment always
-- points at a block, never at another attachment, so there are no chains and
-- no cycles. The owner's block going (DeleteBlock, DeleteAgent) takes its
-- attachments with it, and renaming it moves them along (the cascades); the
-- attaching agent's labels are unique across blocks and attachments, which an
-- attach or rename checks holding the agent's row exclusively.
CREATE TABLE block_attachments (
    tenant_id      TEXT    NOT NULL,
    agent_id       TEXT    NOT NULL,
    label          TEXT    NOT NULL,
    owner_agent_id TEXT    NOT NULL,
    owner_label    TEXT    NOT NULL,
    created_at     BIGINT  NOT NULL,
    PRIMARY KEY (tenant_id, agent_id, label),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id),
    FOREIGN KEY (tenant_id, owner_agent_id, owner_label) REFERENCES blocks (tenant_id, agent_id, label)
        ON UPDATE CASCADE ON DELETE CASCADE
);

CREATE INDEX block_attachments_by_owner ON block_attachments (tenant_id, owner_agent_id, owner_label);

-- +goose Down
DROP TABLE block_attachments;
