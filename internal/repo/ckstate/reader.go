package ckstate

import (
	"encoding/json"
	"errors"

	"github.com/logbook/logbook/internal/model"
)

// Row is one checkpoint row as stored. Checkpoint.State is empty until the
// row is read through a Reader.
type Row struct {
	model.Checkpoint
	Kind          string
	Codec         string
	Text          []byte // the state column: a full state, uncompressed
	BaseIteration int64  // a delta's base
	Body          []byte // a compressed full state, or a delta; nil: the state is in Text
}

// FullState returns a full row's canonical state.
func (r Row) FullState() ([]byte, error) {
	if r.Body == nil {
		return r.Text, nil
	}
	return DecodeBody(r.Codec, r.Body)
}

// ErrNoRow is what a Reader's fetch returns for an iteration with no row.
var ErrNoRow = errors.New("ckstate: no checkpoint row at that iteration")

// Reader rebuilds the states of one session's checkpoints inside one read
// (the fetch should read from one snapshot, so that a row and the rows it
// leans on agree). It remembers the trees it decoded, which share every part
// a patch left alone, so that walking the checkpoints newest first or oldest
// first patches each delta once.
type Reader struct {
	fetch func(iteration int64) (Row, error)
	trees map[int64]any
	rows  map[int64]link // the rows behind trees
}

// link is what blame needs of a row: who it is and what it leans on.
type link struct {
	c    model.Checkpoint
	kind string
	base int64
}

// NewReader makes a Reader that reads the session's row at an iteration with
// fetch (ErrNoRow when there is none).
func NewReader(fetch func(iteration int64) (Row, error)) *Reader {
	return &Reader{fetch: fetch, trees: map[int64]any{}, rows: map[int64]link{}}
}

// maxTrees bounds what a reader remembers: two runs of deltas and more.
const maxTrees = 4 * SnapshotEvery

// maxChain stops a walk along base iterations that loops, which only damage
// can make: a chain is at most SnapshotEvery rows.
const maxChain = 1000

// Read returns the row's checkpoint with its state rebuilt and checked against
// its SHA-256. A row that cannot be rebuilt, or does not match its hash, is
// corrupted, naming the row the damage is in (it may be one this row leans on);
// State then holds whatever could be rebuilt (nil when nothing).
func (r *Reader) Read(row Row) (model.Checkpoint, error) {
	c := row.Checkpoint
	if row.Kind == KindFull {
		b, err := row.FullState()
		if err != nil {
			return c, model.Corrupted("checkpoint", row.ID)
		}
		c.State = b
		return c, Verify(c)
	}
	t, err := r.tree(row, 0)
	if err != nil {
		return c, err
	}
	if c.State, err = json.Marshal(t); err != nil {
		return c, model.Corrupted("checkpoint", row.ID)
	}
	if err := Verify(c); err != nil {
		err = r.blame(row, err)
		clear(r.trees) // nothing more may be built on what failed
		clear(r.rows)
		return c, err
	}
	return c, nil
}

// blame finds where the damage is when a delta's state fails its hash: the
// deltas it leans on are only checked now, nearest the full row first, since
// checking each as it is built would cost every deep read an encoding per step.
func (r *Reader) blame(row Row, err error) error {
	var chain []link
	for it, n := row.BaseIteration, 0; n < maxChain; n++ {
		l, ok := r.rows[it]
		if !ok || l.kind != KindDelta {
			break
		}
		chain = append(chain, l)
		it = l.base
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i].c
		b, jerr := json.Marshal(r.trees[c.Iteration])
		if c.State = b; jerr != nil || Verify(c) != nil {
			return model.Corrupted("checkpoint", c.ID)
		}
	}
	return err
}

// tree returns the decoded state of row. A full row under a delta is checked
// against its hash, so that damage there is named where it is.
func (r *Reader) tree(row Row, depth int) (any, error) {
	if t, ok := r.trees[row.Iteration]; ok {
		return t, nil
	}
	bad := model.Corrupted("checkpoint", row.ID)
	var t any
	switch row.Kind {
	case KindFull:
		c, err := r.Read(row)
		if err != nil {
			return nil, err
		}
		if t, err = DecodeTree(c.State); err != nil {
			return nil, bad
		}
	case KindDelta:
		if depth > maxChain || row.BaseIteration <= row.Iteration {
			return nil, bad
		}
		bt, ok := r.trees[row.BaseIteration]
		if !ok {
			base, err := r.fetch(row.BaseIteration)
			if errors.Is(err, ErrNoRow) {
				return nil, bad // its base is gone: nothing can rebuild it
			}
			if err != nil {
				return nil, err
			}
			if bt, err = r.tree(base, depth+1); err != nil {
				return nil, err
			}
		}
		raw, err := DecodeBody(row.Codec, row.Body)
		if err != nil {
			return nil, bad
		}
		p, err := DecodeTree(raw)
		if _, ok := p.(map[string]any); err != nil || !ok {
			return nil, bad
		}
		t = model.MergePatch(bt, p)
	default:
		return nil, bad
	}
	if len(r.trees) >= maxTrees {
		clear(r.trees)
		clear(r.rows)
	}
	r.trees[row.Iteration] = t
	r.rows[row.Iteration] = link{c: row.Checkpoint, kind: row.Kind, base: row.BaseIteration}
	return t, nil
}

// LoadLatest describes row, a session's latest checkpoint, for a write; with
// needTree, its state too (a PATCH needs it; a PUT only to compute a delta, so
// not for a small one). An unreadable state is left in Err, not returned: a
// PUT goes on without a delta, a PATCH fails with it.
func LoadLatest(rd *Reader, row Row, needTree bool) (Latest, error) {
	b := Latest{Found: true, Iteration: row.Iteration, SHA256: row.SHA256, Stored: len(row.Text) + len(row.Body)}
	if !needTree && row.Kind == KindFull && row.Body == nil && len(row.Text) < DeltaAbove {
		return b, nil // too small for a delta: nothing to decode
	}
	c, err := rd.Read(row)
	switch {
	case IsCorrupted(err):
		b.Err = err
		return b, nil
	case err != nil:
		return b, err
	}
	b.Size = len(c.State)
	if b.Tree, err = DecodeTree(c.State); err != nil {
		b.Err = model.Corrupted("checkpoint", row.ID)
	}
	return b, nil
}
