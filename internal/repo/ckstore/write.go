// Package ckstore is how checkpoints are written, pruned and read, once for
// both backends: the fence of each namespace, a graph write's parent, the
// client id that names one checkpoint, pending writes and their precedence,
// retention. A backend says how to read and write rows (Rows, Tx, WritesTx),
// in its own SQL inside its own transaction; what the rules are is said here.
// How a row keeps its state (full, delta, compressed) is ckstate's.
package ckstore

import (
	"bytes"
	"context"
	"errors"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// Rows reads one session's checkpoint rows, all from one snapshot (a
// transaction), so that a row and the rows it leans on agree. Each returns
// ckstate.ErrNoRow when there is no such row.
type Rows interface {
	Row(ctx context.Context, ns string, iteration int64) (ckstate.Row, error)
	Latest(ctx context.Context, ns string) (ckstate.Row, error)
	ByClientID(ctx context.Context, ns, id string) (ckstate.Row, error)
}

// NewReader rebuilds the states of one namespace's checkpoints from rows.
func NewReader(ctx context.Context, rows Rows, ns string) *ckstate.Reader {
	return ckstate.NewReader(func(it int64) (ckstate.Row, error) { return rows.Row(ctx, ns, it) })
}

// Tx is what a checkpoint write needs of a backend, inside the transaction
// that writes it.
type Tx interface {
	Rows
	// Session returns the session's last_seq and its own retention policy
	// (nil: the server's), making the session first when create is set and it
	// does not exist. Writes of one session must serialise from here on (the
	// SQLite writer does; PostgreSQL locks the session's row).
	// Errors: KindNotFound.
	Session(ctx context.Context, create bool) (lastSeq int64, policy *model.CheckpointRetention, err error)
	// Insert writes c as a full row kept as st.
	Insert(ctx context.Context, c model.Checkpoint, st ckstate.Stored) error
	// KeepAsDelta rewrites d's row (the namespace's latest until now, still
	// full) as a delta from base when it fits the run of deltas under it
	// (ckstate.Delta.Fits).
	KeepAsDelta(ctx context.Context, ns string, d *ckstate.Delta, base int64) error
	// SetPause keeps the latest pause_until_ms on the session.
	SetPause(ctx context.Context, pause *int64) error
	// Created records the checkpoint.created event.
	Created(ctx context.Context, c model.Checkpoint) error
	// NthNewest is the iteration of the namespace's n-th newest checkpoint
	// (0: the newest), ok false when it holds no more than n.
	NthNewest(ctx context.Context, ns string, n int64) (it int64, ok bool, err error)
	// NewestBefore is the newest iteration of the namespace written before t.
	NewestBefore(ctx context.Context, ns string, t model.Time) (it int64, ok bool, err error)
	// Drop deletes the namespace's checkpoints up to iteration upto, with
	// their pending writes. A remaining delta that leans on one of them is
	// first rewritten whole.
	Drop(ctx context.Context, ns string, upto int64) error
}

// Base is the row a write is planned against: a graph write's parent, or
// the namespace's latest. found false when there is none; for a parent a
// graph write names, that is model.NoParent.
func Base(ctx context.Context, rows Rows, w ckstate.Write) (row ckstate.Row, found bool, err error) {
	switch {
	case w.Graph && w.Parent == nil:
		return row, false, nil
	case w.Graph:
		row, err = rows.ByClientID(ctx, w.Namespace, *w.Parent)
		if errors.Is(err, ckstate.ErrNoRow) {
			return row, false, model.NoParent(*w.Parent, w.Namespace)
		}
	default:
		row, err = rows.Latest(ctx, w.Namespace)
		if errors.Is(err, ckstate.ErrNoRow) {
			return row, false, nil
		}
	}
	return row, err == nil, err
}

// Plan works w out against its base as rows see it (ckstate.PlanWrite). A
// missing parent is in Plan.Err, reported once the fence has passed.
func Plan(ctx context.Context, rows Rows, sessionID string, w ckstate.Write) (ckstate.Plan, error) {
	row, found, err := Base(ctx, rows, w)
	if e := model.AsError(err); err != nil && e.Code == "no_parent" {
		return ckstate.Plan{Err: err}, nil
	}
	if err != nil {
		return ckstate.Plan{}, err
	}
	var base ckstate.Latest
	if found {
		if base, err = ckstate.LoadLatest(NewReader(ctx, rows, w.Namespace), row, w.Patch != nil); err != nil {
			return ckstate.Plan{}, err
		}
	}
	return ckstate.PlanWrite(sessionID, w, base)
}

// Write stores w inside tx, planned beforehand as planned (Plan, outside the
// transaction, so that the JSON work of a large state does not hold it):
// the namespace's fence, the parent, the client id, the delta of the base,
// the event and the retention policy (the session's, else def). It plans
// again, inside, only if the base changed in between. A client id already
// stored with the same content and parent answers that checkpoint, created
// false: a retried write writes nothing. Errors: KindNotFound,
// stale_iteration, no_parent, no_checkpoint, checkpoint_exists, corrupted,
// KindInvalid.
func Write(ctx context.Context, tx Tx, sessionID string, w ckstate.Write, planned ckstate.Plan,
	def model.CheckpointRetention, newID func() string) (c model.Checkpoint, created bool, err error) {
	lastSeq, policy, err := tx.Session(ctx, w.Create)
	if err != nil {
		return c, false, err
	}
	if w.ClientID != "" {
		if c, done, err := repeated(ctx, tx, w, planned); done || err != nil {
			return c, false, err
		}
	}
	var latest int64
	switch head, err := tx.Latest(ctx, w.Namespace); {
	case err == nil:
		latest = head.Iteration
	case !errors.Is(err, ckstate.ErrNoRow):
		return c, false, err
	}
	if err := ckstate.Fence(w, latest); err != nil {
		return c, false, err
	}
	base, found, err := Base(ctx, tx, w)
	if err != nil {
		return c, false, err
	}
	p := planned
	if !found && p.Latest.Found || found && p.Stale(base.Iteration, base.SHA256) {
		if p, err = Plan(ctx, tx, sessionID, w); err != nil {
			return c, false, err
		}
	}
	if p.Err != nil {
		return c, false, p.Err
	}
	c = model.Checkpoint{ID: newID(), SessionID: sessionID, Namespace: w.Namespace, Iteration: w.Number(latest),
		ClientID: w.ClientID, Metadata: w.Metadata, State: p.Canonical, LastSeq: lastSeq, CreatedAt: model.Now()}
	if c.ClientID == "" {
		c.ClientID = c.ID
	}
	if len(c.Metadata) == 0 {
		c.Metadata = model.Object("{}")
	}
	if found {
		c.ParentID, c.ParentIteration = &base.ClientID, &base.Iteration
	}
	c.SHA256 = ckstate.Hash(c.Iteration, c.LastSeq, c.State)
	if err := tx.Insert(ctx, c, p.Stored); err != nil {
		return c, false, err
	}
	// Only the latest becomes a delta, of the checkpoint written after it:
	// chains then run along consecutive iterations, as a line's always did,
	// and a fork from an older checkpoint leaves that one as it is.
	if found && base.Iteration == latest {
		if err := tx.KeepAsDelta(ctx, w.Namespace, p.Delta, c.Iteration); err != nil {
			return c, false, err
		}
	}
	if w.Namespace == "" { // a subgraph's checkpoint does not pause its session
		if err := tx.SetPause(ctx, p.Pause); err != nil {
			return c, false, err
		}
	}
	if err := tx.Created(ctx, c); err != nil {
		return c, false, err
	}
	var own model.CheckpointRetention
	if policy != nil {
		own = *policy
	}
	return c, true, Prune(ctx, tx, w.Namespace, own.Or(def), c.CreatedAt)
}

// repeated answers a write whose client id is taken: the stored checkpoint
// when it is the same one (same state and parent), else checkpoint_exists.
func repeated(ctx context.Context, tx Tx, w ckstate.Write, planned ckstate.Plan) (model.Checkpoint, bool, error) {
	row, err := tx.ByClientID(ctx, w.Namespace, w.ClientID)
	if errors.Is(err, ckstate.ErrNoRow) {
		return model.Checkpoint{}, false, nil
	}
	if err != nil {
		return model.Checkpoint{}, false, err
	}
	c, err := NewReader(ctx, tx, w.Namespace).Read(row)
	sameParent := w.Parent == nil && (!w.Graph || c.ParentID == nil) ||
		w.Parent != nil && c.ParentID != nil && *c.ParentID == *w.Parent
	if err == nil && planned.Err == nil && sameParent && bytes.Equal(c.State, planned.Canonical) {
		return c, true, nil
	}
	return model.Checkpoint{}, true, model.CheckpointExists(w.ClientID, w.Namespace)
}

// Prune applies a retention policy to a namespace after a write at now. The
// latest is always kept. Rows go oldest first, and a delta leans only on the
// row written after it, so no remaining checkpoint loses what it is read
// from; Drop rewrites one whole all the same should it find one.
func Prune(ctx context.Context, tx Tx, ns string, policy model.CheckpointRetention, now model.Time) error {
	var (
		upto int64
		ok   bool
		err  error
	)
	switch policy.Keep {
	case model.KeepAll:
		return nil
	case model.KeepLast:
		upto, ok, err = tx.NthNewest(ctx, ns, max(1, *policy.Last))
	case model.KeepYoungerThan:
		cut := now - model.Time(policy.MaxAge().Milliseconds())
		if upto, ok, err = tx.NewestBefore(ctx, ns, cut); ok && err == nil {
			// never the latest: a namespace idle past the age keeps its last state
			var latest ckstate.Row
			if latest, err = tx.Latest(ctx, ns); err == nil && latest.Iteration == upto {
				upto--
			}
		}
	}
	if err != nil || !ok || upto < 1 {
		return err
	}
	return tx.Drop(ctx, ns, upto)
}
