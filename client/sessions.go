package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"reflect"

	"github.com/logbook/logbook/client/api"
)

// The calls an agent runtime makes on every turn. Each returns a *Problem
// for any non-2xx answer.

// CreateSession creates a session; every field of in is optional ({} makes
// one with a server-made id).
func (c *Client) CreateSession(ctx context.Context, in api.SessionCreate) (*api.Session, error) {
	return decode[api.Session](c.raw.CreateSession(ctx, nil, in))
}

// GetSession reads a session with its counters (last_seq, message_count, …).
func (c *Client) GetSession(ctx context.Context, id string) (*api.Session, error) {
	return decode[api.Session](c.raw.GetSession(ctx, id, nil))
}

// UpdateSession changes a session's status, title, expiry or metadata (a
// merge patch: a nil value removes a key). A patch is idempotent, so it is
// retried after a lost answer.
func (c *Client) UpdateSession(ctx context.Context, id string, in api.SessionUpdate) (*api.Session, error) {
	return decode[api.Session](c.raw.UpdateSession(repeatable(ctx), id, in))
}

// CloseSession closes a session (status completed; a no-op when closed).
func (c *Client) CloseSession(ctx context.Context, id string) (*api.Session, error) {
	return decode[api.Session](c.raw.CloseSession(repeatable(ctx), id, nil))
}

// PurgeSession erases a session for good: its messages, checkpoints and
// their pending writes (a write key that can see it may).
func (c *Client) PurgeSession(ctx context.Context, id string) error {
	return noContent(c.raw.CloseSession(repeatable(ctx), id, &api.CloseSessionParams{Purge: Ptr(true)}))
}

// ForkSession makes a new session that shares the first in.AtSeq messages
// of sessionID (all by default), or those up to a checkpoint
// (in.AtCheckpoint), starting from a copy of it.
func (c *Client) ForkSession(ctx context.Context, sessionID string, in api.ForkCreate) (*api.Session, error) {
	return decode[api.Session](c.raw.ForkSession(ctx, sessionID, nil, in))
}

// ExportSession streams a session as NDJSON, one JSON object a line, ending
// with a line that counts the others and holds their SHA-256: keep the bytes
// as they are (ImportSession checks them). Close the reader when done.
func (c *Client) ExportSession(ctx context.Context, id string) (io.ReadCloser, error) {
	return body(c.raw.ExportSession(ctx, id))
}

// ImportSession restores a session from the bytes of an export, all or
// nothing (params.AsNew: under new ids). data is read once: a failed
// connection is not retried unless it is a *bytes.Reader, *bytes.Buffer or
// *strings.Reader, which can be read again.
func (c *Client) ImportSession(ctx context.Context, data io.Reader, params *api.ImportSessionParams) (*api.Session, error) {
	return decode[api.Session](c.raw.ImportSessionWithBody(ctx, params, "application/x-ndjson", data))
}

// PutCheckpoint writes the loop state of an iteration. The fence holds: an
// iteration not above the latest, or an ExpectedIteration that is not the
// latest, is a *Problem with code stale_iteration and LatestIteration.
//
// Retrying is safe: the request carries an Idempotency-Key, so a retry
// whose first try was applied is answered with that try's answer; when the
// server lost it (idempotency_applied), or the iteration is already stored
// with the same state (a write of another client of the same state), the
// stored checkpoint is the answer.
func (c *Client) PutCheckpoint(ctx context.Context, sessionID string, in api.CheckpointPut) (*api.Checkpoint, error) {
	ck, err := decode[api.Checkpoint](c.raw.PutCheckpoint(ctx, sessionID, nil, in))
	var p *Problem
	if err == nil || !errors.As(err, &p) || !(p.Code == api.ErrorCodeIdempotencyApplied ||
		p.Code == api.ErrorCodeStaleIteration && p.LatestIteration != nil && *p.LatestIteration == in.Iteration) {
		return ck, err
	}
	stored, gerr := decode[api.Checkpoint](c.raw.GetCheckpoint(ctx, sessionID, in.Iteration, nil))
	if gerr != nil || !sameJSON(stored.State, in.State) {
		return nil, err
	}
	return stored, nil
}

// PatchCheckpoint writes an iteration as an RFC 7396 merge patch of the
// latest state (409 no_checkpoint before the first PutCheckpoint).
//
// Its Idempotency-Key makes a retry after a lost answer safe.
func (c *Client) PatchCheckpoint(ctx context.Context, sessionID string, in api.PatchCheckpoint) (*api.Checkpoint, error) {
	return decode[api.Checkpoint](c.raw.PatchCheckpoint(ctx, sessionID, nil, in))
}

// Resume reads what a new worker needs to take a session over: the session,
// its latest checkpoint, the messages after it, the pending tool calls and a
// validation report (each problem with the request that repairs it).
func (c *Client) Resume(ctx context.Context, sessionID string) (*api.Resume, error) {
	return decode[api.Resume](c.raw.ResumeSession(ctx, sessionID))
}

// Repair applies the automatic repairs Resume reports: an error result for
// each tool call that has no result and is not pending in the latest
// checkpoint, and a recounted turn_count. It is idempotent, and its
// Idempotency-Key answers a fenced retry with its first try's answer.
func (c *Client) Repair(ctx context.Context, sessionID string, in api.RepairRequest) (*api.RepairResult, error) {
	return decode[api.RepairResult](c.raw.RepairSession(ctx, sessionID, nil, in))
}

// Rewind drops the messages after in.ToSeq and appends in.Messages in the
// same transaction. Retrying is safe, fenced or not: its Idempotency-Key
// answers a retry whose first try was applied with that try's answer (or,
// should the server have lost it, a *Problem with code
// idempotency_applied: read the session to see the outcome).
func (c *Client) Rewind(ctx context.Context, sessionID string, in api.Rewind) (*api.RewindResult, error) {
	return decode[api.RewindResult](c.raw.RewindSession(ctx, sessionID, nil, in))
}

// newKey is a fresh Idempotency-Key: 26 random base32 characters.
func newKey() string { return rand.Text() }

// sameJSON tells whether a and b are the same JSON value (object key order
// and number spelling aside).
func sameJSON(a, b any) bool {
	var va, vb any
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
