package ckstore

import (
	"context"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// ForkPoint reads the checkpoint a fork starts from, from the parent
// session's rows: the fork shares the parent's messages up to its last_seq.
// Errors: KindNotFound, corrupted (nothing damaged is copied).
func ForkPoint(ctx context.Context, parent Reads, at model.ForkCheckpoint) (model.Checkpoint, error) {
	return Get(ctx, parent, model.CheckpointSelector{Namespace: at.Namespace, ClientID: at.ClientID, Iteration: at.Iteration})
}

// ForkCopy is the fork's own copy of the checkpoint it starts from: the
// same namespace, iteration, client id, metadata and state (so the same
// hash), a new id, no parent (that one is the parent session's), stored
// whole. Its pending writes go with it (the backend copies those rows).
func ForkCopy(c model.Checkpoint, forkID, id string) (model.Checkpoint, ckstate.Stored) {
	c.ID, c.SessionID, c.CreatedAt = id, forkID, model.Now()
	c.ParentID, c.ParentIteration = nil, nil
	c.PendingWrites, c.ParentWrites = nil, nil
	return c, ckstate.EncodeFull(c.State)
}
