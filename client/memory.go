package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/logbook/logbook/client/api"
)

// An agent's memory, as Letta keeps it: core memory blocks (labelled texts
// the model sees on every turn, shared between agents by attaching),
// archival passages (searched by words or meaning), and the memory tools a
// model calls to edit both. Each returns a *Problem for any non-2xx answer.

// ListBlocks reads every block of an agent, its attached ones included.
func (c *Client) ListBlocks(ctx context.Context, agentID string) ([]api.Block, error) {
	res, err := decode[api.BlockList](c.raw.ListBlocks(ctx, agentID))
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

// GetBlock reads one block.
func (c *Client) GetBlock(ctx context.Context, agentID, label string) (*api.Block, error) {
	return decode[api.Block](c.raw.GetBlock(ctx, agentID, label))
}

// PutBlock creates or replaces a block. With params.IfMatch (the block's
// version, quoted, as its ETag) it writes only if nobody changed the block
// since (a *Problem with code precondition_failed otherwise); without one
// it is retried after a lost answer, writing the same value again.
func (c *Client) PutBlock(ctx context.Context, agentID, label string, in api.BlockPut, params *api.PutBlockParams) (*api.Block, error) {
	if params == nil || params.IfMatch == nil {
		ctx = repeatable(ctx)
	}
	return decode[api.Block](c.raw.PutBlock(ctx, agentID, label, params, in))
}

// DeleteBlock deletes a block of the agent's own (or its attachment of
// another's).
func (c *Client) DeleteBlock(ctx context.Context, agentID, label string) error {
	return noContent(c.raw.DeleteBlock(ctx, agentID, label))
}

// AttachBlock shares another agent's block (in.AgentID's in.Label) with
// agentID, under in.As (the same label by default): one block, one version
// and history, read and written through either agent.
func (c *Client) AttachBlock(ctx context.Context, agentID string, in api.BlockAttach) (*api.Block, error) {
	return decode[api.Block](c.raw.AttachBlock(ctx, agentID, nil, in))
}

// DetachBlock removes the attachment label of agentID; the owner's block
// stays.
func (c *Client) DetachBlock(ctx context.Context, agentID, label string) error {
	return noContent(c.raw.DetachBlock(ctx, agentID, label, nil))
}

// AppendBlock adds in.Content to a block on a new line (creating the block
// if missing), atomically.
func (c *Client) AppendBlock(ctx context.Context, agentID, label string, in api.BlockAppend) (*api.Block, error) {
	return decode[api.Block](c.raw.AppendBlock(ctx, agentID, label, nil, in))
}

// ReplaceBlock replaces every occurrence of in.Old in a block with in.New
// (a *Problem with code old_not_found when there is none).
func (c *Client) ReplaceBlock(ctx context.Context, agentID, label string, in api.BlockReplace) (*api.Block, error) {
	return decode[api.Block](c.raw.ReplaceBlock(ctx, agentID, label, nil, in))
}

// GetBlockHistory walks every version of a block, newest first.
func (c *Client) GetBlockHistory(ctx context.Context, agentID, label string, params *api.GetBlockHistoryParams) iter.Seq2[api.Block, error] {
	p := deref(params)
	return list[api.Block](p.Cursor, func(cursor *string) (*page[api.Block], error) {
		p.Cursor = cursor
		return decode[page[api.Block]](c.raw.GetBlockHistory(ctx, agentID, label, &p))
	})
}

// InsertPassage writes a passage to an agent's archival memory (with the
// client's in.Embedding, or embedded by the server when the agent names an
// endpoint). Its Idempotency-Key makes a retry after a lost answer safe.
func (c *Client) InsertPassage(ctx context.Context, agentID string, in api.PassageCreate) (*api.Passage, error) {
	return decode[api.Passage](c.raw.CreatePassage(ctx, agentID, nil, in))
}

// ListPassages walks an agent's passages, newest first.
func (c *Client) ListPassages(ctx context.Context, agentID string, params *api.ListPassagesParams) iter.Seq2[api.Passage, error] {
	p := deref(params)
	return list[api.Passage](p.Cursor, func(cursor *string) (*page[api.Passage], error) {
		p.Cursor = cursor
		return decode[page[api.Passage]](c.raw.ListPassages(ctx, agentID, &p))
	})
}

// GetPassage reads one passage.
func (c *Client) GetPassage(ctx context.Context, agentID, passageID string) (*api.Passage, error) {
	return decode[api.Passage](c.raw.GetPassage(ctx, agentID, passageID))
}

// DeletePassage deletes one passage.
func (c *Client) DeletePassage(ctx context.Context, agentID, passageID string) error {
	return noContent(c.raw.DeletePassage(ctx, agentID, passageID))
}

// SearchArchival searches an agent's passages, best first: by words
// (in.Q), by meaning (in.QueryEmbedding) or both, as in.Mode says. A query
// with an embedding goes in a request's body, where a vector of any length
// fits; one without, in its URL.
func (c *Client) SearchArchival(ctx context.Context, agentID string, in api.PassageSearchRequest) (*api.PassageSearchResult, error) {
	if len(in.QueryEmbedding) > 0 {
		return decode[api.PassageSearchResult](c.raw.SearchPassagesByBody(ctx, agentID, nil, in))
	}
	return decode[api.PassageSearchResult](c.raw.SearchPassages(ctx, agentID, &api.SearchPassagesParams{
		Q: in.Q, Mode: in.Mode, Tags: in.Tags, After: in.After, Before: in.Before, Limit: in.Limit,
	}))
}

// ListTools reads the memory tools' definitions, to pass to a model as
// they are.
func (c *Client) ListTools(ctx context.Context) ([]api.ToolDef, error) {
	res, err := decode[api.ToolList](c.raw.ListTools(ctx))
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

// RunTool runs a memory tool (core_memory_append, archival_memory_search,
// …) on an agent's memory with the arguments the model wrote, a JSON
// object's text, and answers what the model reads back: a tool that failed
// in a way the model can fix is a result with IsError, not an error.
func (c *Client) RunTool(ctx context.Context, agentID, toolName, arguments string) (*api.ToolResult, error) {
	if !json.Valid([]byte(arguments)) {
		return nil, fmt.Errorf("logbook: %s's arguments are not JSON: %.80q", toolName, arguments)
	}
	var args api.ToolArguments
	if err := args.UnmarshalJSON([]byte(arguments)); err != nil {
		return nil, err
	}
	return decode[api.ToolResult](c.raw.RunTool(ctx, agentID, api.ToolName(toolName), nil, args))
}
