package client

import (
	"context"
	"io"
	"iter"

	"github.com/logbook/logbook/client/api"
)

// Agents: what their sessions, memory blocks and archival passages hang
// under. Each returns a *Problem for any non-2xx answer.

// CreateAgent creates an agent (in.Name is required; without in.ID the
// server makes one). Its Idempotency-Key makes a retry after a lost answer
// safe.
func (c *Client) CreateAgent(ctx context.Context, in api.AgentCreate) (*api.Agent, error) {
	return decode[api.Agent](c.raw.CreateAgent(ctx, nil, in))
}

// GetAgent reads an agent.
func (c *Client) GetAgent(ctx context.Context, id string) (*api.Agent, error) {
	return decode[api.Agent](c.raw.GetAgent(ctx, id))
}

// UpdateAgent changes an agent's fields (tags and tool ids replaced,
// metadata a merge patch). A patch is idempotent, so it is retried after a
// lost answer.
func (c *Client) UpdateAgent(ctx context.Context, id string, in api.AgentUpdate) (*api.Agent, error) {
	return decode[api.Agent](c.raw.UpdateAgent(repeatable(ctx), id, in))
}

// DeleteAgent deletes an agent with its blocks and passages (its sessions
// stay).
func (c *Client) DeleteAgent(ctx context.Context, id string) error {
	return noContent(c.raw.DeleteAgent(ctx, id))
}

// ListAgents walks the tenant's agents (params.Name and params.Tag filter).
func (c *Client) ListAgents(ctx context.Context, params *api.ListAgentsParams) iter.Seq2[api.Agent, error] {
	p := deref(params)
	return list[api.Agent](p.Cursor, func(cursor *string) (*page[api.Agent], error) {
		p.Cursor = cursor
		return decode[page[api.Agent]](c.raw.ListAgents(ctx, &p))
	})
}

// ExportAgent streams an agent, its memory and its sessions as NDJSON,
// ending with a line that holds the SHA-256 of the others: keep the bytes
// as they are (ImportAgent checks them). Close the reader when done.
func (c *Client) ExportAgent(ctx context.Context, id string) (io.ReadCloser, error) {
	return body(c.raw.ExportAgent(ctx, id))
}

// ImportAgent restores an agent from the bytes of its export, all or
// nothing (params.AsNew: the agent and its sessions under new ids). data is
// read once, as ImportSession reads it.
func (c *Client) ImportAgent(ctx context.Context, data io.Reader, params *api.ImportAgentParams) (*api.Agent, error) {
	return decode[api.Agent](c.raw.ImportAgentWithBody(ctx, params, "application/x-ndjson", data))
}

// SearchAgentMessages searches the messages of an agent's sessions and
// those carrying its agent_id, best first.
func (c *Client) SearchAgentMessages(ctx context.Context, agentID string, params *api.SearchAgentMessagesParams) (*api.MessageSearchResult, error) {
	return decode[api.MessageSearchResult](c.raw.SearchAgentMessages(ctx, agentID, params))
}
