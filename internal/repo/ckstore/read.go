package ckstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// Reads is what a checkpoint read needs of a backend, from one snapshot.
// Its Rows find nothing of a session past its expires_at.
type Reads interface {
	Rows
	// Session reports a session that does not exist (or has expired):
	// KindNotFound.
	Session(ctx context.Context) error
	// Writes are the pending writes recorded against checkpoint id of ns,
	// only those to channel when it is not empty.
	Writes(ctx context.Context, ns, id, channel string) ([]model.PendingWrite, error)
}

// Get reads the checkpoint sel names, its state rebuilt and checked, with
// its pending writes (and its parent's to sel.ParentWrites). Errors:
// KindNotFound, corrupted (with the checkpoint as far as it could be
// rebuilt, and no writes).
func Get(ctx context.Context, r Reads, sel model.CheckpointSelector) (model.Checkpoint, error) {
	var (
		row  ckstate.Row
		err  error
		what string
	)
	switch {
	case sel.ClientID != "":
		row, err = r.ByClientID(ctx, sel.Namespace, sel.ClientID)
		what = strconv.Quote(sel.ClientID)
	case sel.Iteration > 0:
		row, err = r.Row(ctx, sel.Namespace, sel.Iteration)
		what = "iteration " + strconv.FormatInt(sel.Iteration, 10)
	default:
		row, err = r.Latest(ctx, sel.Namespace)
		what = "latest"
	}
	if errors.Is(err, ckstate.ErrNoRow) {
		if err := r.Session(ctx); err != nil {
			return model.Checkpoint{}, err
		}
		if sel.Namespace != "" {
			what += " of namespace " + strconv.Quote(sel.Namespace)
		}
		return model.Checkpoint{}, model.NotFound("checkpoint", what)
	}
	if err != nil {
		return model.Checkpoint{}, err
	}
	c, err := NewReader(ctx, r, sel.Namespace).Read(row)
	if err != nil {
		return c, err
	}
	return c, Attach(ctx, r, &c, sel.ParentWrites)
}

// Attach fills c's pending writes (never nil), and its parent's to channel
// parentWrites when that is set.
func Attach(ctx context.Context, r Reads, c *model.Checkpoint, parentWrites string) error {
	ws, err := r.Writes(ctx, c.Namespace, c.ClientID, "")
	if err != nil {
		return err
	}
	c.PendingWrites = sorted(ws)
	if parentWrites != "" && c.ParentID != nil {
		if ws, err = r.Writes(ctx, c.Namespace, *c.ParentID, parentWrites); err != nil {
			return err
		}
		c.ParentWrites = sorted(ws)
	}
	return nil
}

func sorted(ws []model.PendingWrite) []model.PendingWrite {
	if ws == nil {
		return []model.PendingWrite{}
	}
	SortWrites(ws)
	return ws
}

// MaxPageBytes bounds the states and writes one page of a list holds: 200
// checkpoints of 4 MiB states would be 800 MiB in memory at once. A page that
// reaches it ends there, with has_more, after at least one checkpoint.
const MaxPageBytes = 16 << 20

// Page reads a list's rows: rebuilt through one reader per session and
// namespace (which shares the work of a run of deltas among its rows), with
// their pending writes unless f.NoValues. rowsOf gives the Reads of a
// session. cut says the page stopped early, at MaxPageBytes. A damaged
// checkpoint fails the page (corrupted), naming it.
func Page(ctx context.Context, rows []ckstate.Row, f model.CheckpointFilter, rowsOf func(session string) Reads) (out []model.Checkpoint, cut bool, err error) {
	type key struct{ session, ns string }
	readers := map[key]*ckstate.Reader{}
	out = make([]model.Checkpoint, len(rows))
	size := 0
	for i, row := range rows {
		if i > 0 && size >= MaxPageBytes {
			return out[:i], true, nil
		}
		r := rowsOf(row.SessionID)
		if f.NoValues {
			out[i] = row.Checkpoint
			out[i].State = nil
			continue
		}
		k := key{row.SessionID, row.Namespace}
		rd := readers[k]
		if rd == nil {
			rd = NewReader(ctx, r, row.Namespace)
			readers[k] = rd
		}
		c, err := rd.Read(row)
		if err != nil {
			return nil, false, err
		}
		if err := Attach(ctx, r, &c, f.ParentWrites); err != nil {
			return nil, false, err
		}
		size += len(c.State)
		for _, w := range c.PendingWrites {
			size += len(w.Value)
		}
		out[i] = c
	}
	return out, false, nil
}

// NewPage is a list's page of out, read from rows (limit+1 of them when
// there is more), as repo.NewPage makes it; cut (Page's) ends it early.
func NewPage(out []model.Checkpoint, rows []ckstate.Row, limit int, cut bool, q string) model.Page[model.Checkpoint] {
	next := func(last model.Checkpoint) repo.Cursor {
		return repo.Cursor{Q: q, N: int64(last.CreatedAt), S: last.ID}
	}
	if cut {
		return model.Page[model.Checkpoint]{Data: out, HasMore: true, NextCursor: repo.EncodeCursor(next(out[len(out)-1]))}
	}
	if len(rows) > limit {
		out = append(out, rows[limit].Checkpoint) // only says there is more
	}
	return repo.NewPage(out, limit, next)
}
