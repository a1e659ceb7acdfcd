package client

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"

	"github.com/logbook/logbook/client/api"
)

// The calls a graph runtime makes: checkpoints named by the client, hung
// under a parent in a namespace, pending writes, lists across a tenant, a
// retention policy, and a thread's deletion. Each returns a *Problem for any
// non-2xx answer.

// GetCheckpoint reads one iteration's checkpoint (of params.Namespace, with
// its parent's pending writes when params.ParentWrites).
func (c *Client) GetCheckpoint(ctx context.Context, sessionID string, iteration int64, params *api.GetCheckpointParams) (*api.Checkpoint, error) {
	p := deref(params)
	p.IfNoneMatch = nil // a 304 has no checkpoint to answer
	return decode[api.Checkpoint](c.raw.GetCheckpoint(ctx, sessionID, iteration, &p))
}

// CreateCheckpoint writes the next checkpoint of in.Namespace, numbered by the
// server, named in.ClientID and hung under in.ParentId; its state whole, or a
// merge patch of the parent's. The answer leaves the state out. Retrying is
// safe when in.ClientID is set: the same checkpoint again answers the stored
// one.
func (c *Client) CreateCheckpoint(ctx context.Context, sessionID string, in api.CheckpointCreate) (*api.Checkpoint, error) {
	if in.ClientID != nil && in.ExpectedIteration == nil {
		ctx = repeatable(ctx)
	}
	return decode[api.Checkpoint](c.raw.CreateCheckpoint(ctx, sessionID, in))
}

// PutCheckpointWrites records one task's pending writes against a checkpoint,
// which need not exist yet. Retrying is safe: the first write at an index
// wins (a special channel's last).
func (c *Client) PutCheckpointWrites(ctx context.Context, sessionID string, in api.CheckpointWrites) error {
	return noContent(c.raw.PutCheckpointWrites(repeatable(ctx), sessionID, in))
}

// FindCheckpoint reads the latest checkpoint of a namespace, or the one a
// client id names (params), with its pending writes.
func (c *Client) FindCheckpoint(ctx context.Context, sessionID string, params *api.GetLatestCheckpointParams) (*api.Checkpoint, error) {
	p := deref(params)
	p.IfNoneMatch = nil
	return decode[api.Checkpoint](c.raw.GetLatestCheckpoint(ctx, sessionID, &p))
}

// ListAllCheckpoints walks the checkpoints of every session of the tenant, newest
// first.
func (c *Client) ListAllCheckpoints(ctx context.Context, params *api.ListAllCheckpointsParams) iter.Seq2[api.Checkpoint, error] {
	p := deref(params)
	p.IfNoneMatch = nil // a 304 has no page to walk
	return paginate(p.Cursor, func(cursor *string) ([]api.Checkpoint, *string, error) {
		p.Cursor = cursor
		page, err := decode[api.CheckpointPage](c.raw.ListAllCheckpoints(ctx, &p))
		if err != nil {
			return nil, nil, err
		}
		return page.Data, more(page.HasMore, page.NextCursor), nil
	})
}

// GetCheckpointRetention reads the session's retention policy: its own, or the
// server's default.
func (c *Client) GetCheckpointRetention(ctx context.Context, sessionID string) (*api.SessionRetention, error) {
	return decode[api.SessionRetention](c.raw.GetCheckpointRetention(ctx, sessionID))
}

// SetCheckpointRetention sets the session's own retention policy; nil
// returns it to the server's default.
func (c *Client) SetCheckpointRetention(ctx context.Context, sessionID string, policy *api.CheckpointRetention) (*api.SessionRetention, error) {
	if policy == nil {
		return decode[api.SessionRetention](c.raw.DeleteCheckpointRetention(repeatable(ctx), sessionID))
	}
	return decode[api.SessionRetention](c.raw.PutCheckpointRetention(repeatable(ctx), sessionID, *policy))
}

// noContent reads an answer that has no body.
func noContent(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("logbook: read answer: %w", err)
	}
	return Check(resp, body)
}
