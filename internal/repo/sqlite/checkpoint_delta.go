package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"reflect"

	"github.com/logbook/logbook/internal/model"
)

// When a checkpoint arrives, the one before it (the latest so far, always full)
// may be rewritten as a reverse delta: the merge patch that turns the new state
// back into its own. The latest stays whole, so the read that matters, the one
// a resuming worker makes, costs what it did before deltas. Chains run
// downwards, from a full row to the older deltas under it, so pruning the
// oldest never strands a delta.
const (
	// snapshotEvery bounds a run of deltas: at most snapshotEvery-1 in a row,
	// so any read applies at most 15 patches to the full row above it.
	snapshotEvery = 16

	// deltaAbove: a state shorter than this is kept whole. Its delta would save
	// a few hundred bytes and cost every older read a walk.
	deltaAbove = 1 << 10
)

// ckBase is a session's latest checkpoint as a write found it.
type ckBase struct {
	found     bool
	iteration int64
	sha256    string
	stored    int // bytes its row takes
	size      int // length of its canonical state
	tree      any // its decoded state, when it was read
	err       error
}

// loadBase reads the latest checkpoint of a session; with needTree, its state
// too (a PATCH needs it; a PUT only to compute a delta, so not for a small
// one). An unreadable state is left in err, not returned: a PUT goes on
// without a delta, a PATCH fails with it.
func loadBase(ctx context.Context, q querier, tenant, sessionID string, needTree bool) (ckBase, error) {
	var b ckBase
	row, err := scanCkRow(q.QueryRowContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints
		WHERE tenant_id = ? AND session_id = ? ORDER BY iteration DESC LIMIT 1`, tenant, sessionID))
	if err == sql.ErrNoRows {
		return b, nil
	}
	if err != nil {
		return b, mapErr(err)
	}
	b = ckBase{found: true, iteration: row.Iteration, sha256: row.SHA256, stored: len(row.text) + len(row.body)}
	if !needTree && row.kind == kindFull && row.body == nil && len(row.text) < deltaAbove {
		return b, nil // too small for a delta: nothing to decode
	}
	c, err := newCkReader(ctx, q, tenant, sessionID).read(row)
	switch {
	case isCorrupted(err):
		b.err = err
		return b, nil
	case err != nil:
		return b, err
	}
	b.size = len(c.State)
	if b.tree, err = decodeTree(c.State); err != nil {
		b.err = model.Corrupted("checkpoint", row.ID)
	}
	return b, nil
}

// reverseDelta works out how base can be kept as a delta from next, the state
// written after it: nil when RFC 7396 cannot express the way back, or when the
// patch would not be at most half of what base takes whole.
func reverseDelta(next any, base ckBase) *deltaTo {
	if base.tree == nil || base.size < deltaAbove {
		return nil
	}
	from, ok1 := next.(map[string]any)
	to, ok2 := base.tree.(map[string]any)
	if !ok1 || !ok2 {
		return nil
	}
	p, ok := mergeDiff(from, to)
	// The proof is in the applying: anything the diff missed shows here.
	if !ok || !reflect.DeepEqual(model.MergePatch(from, p), base.tree) {
		return nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	codec, body := encodeBody(raw)
	if 2*len(body) > base.stored {
		return nil
	}
	return &deltaTo{iteration: base.iteration, sha256: base.sha256, codec: codec, body: body, full: base.stored}
}

// mergeDiff returns a merge patch p such that MergePatch(from, p) equals to, and
// false when RFC 7396 cannot say it: a merge patch cannot set a value to null
// (null removes a member), and an object it sets is merged onto nothing, which
// drops the object's own null members. Arrays are replaced whole.
func mergeDiff(from, to map[string]any) (map[string]any, bool) {
	p := map[string]any{}
	for k := range from {
		if _, ok := to[k]; !ok {
			p[k] = nil
		}
	}
	for k, tv := range to {
		fv, had := from[k]
		if had && reflect.DeepEqual(fv, tv) { // same map or slice: DeepEqual answers at once
			continue
		}
		switch tv := tv.(type) {
		case nil:
			return nil, false
		case map[string]any:
			if fm, ok := fv.(map[string]any); ok {
				sub, ok := mergeDiff(fm, tv)
				if !ok {
					return nil, false
				}
				p[k] = sub
				continue
			}
			if hasNullMember(tv) {
				return nil, false
			}
		}
		p[k] = tv
	}
	return p, true
}

// hasNullMember reports a null member of m or of an object inside it; arrays
// are values a patch carries as they are.
func hasNullMember(m map[string]any) bool {
	for _, v := range m {
		switch v := v.(type) {
		case nil:
			return true
		case map[string]any:
			if hasNullMember(v) {
				return true
			}
		}
	}
	return false
}

// deltaTo is a checkpoint row that may be rewritten as a delta: the patch from
// the next checkpoint's state back to its own.
type deltaTo struct {
	iteration int64
	sha256    string // the row as the patch was computed against
	codec     string
	body      []byte
	full      int // bytes the row takes whole
}

// keepAsDelta rewrites d's row as a delta from base (the iteration just written)
// unless that would make the run of deltas under base reach snapshotEvery rows,
// or their bytes pass what the row takes whole: then it stays a snapshot and a
// new run starts under it. The row must still be the full one the patch was
// computed from.
func keepAsDelta(ctx context.Context, tx *sql.Tx, tenant, sessionID string, d *deltaTo, base int64) error {
	if d == nil {
		return nil
	}
	var n, bytes int64
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM checkpoints
		WHERE tenant_id = ?1 AND session_id = ?2 AND iteration < ?3 AND iteration > COALESCE((
			SELECT MAX(iteration) FROM checkpoints WHERE tenant_id = ?1 AND session_id = ?2 AND iteration < ?3 AND kind = 'full'), 0)`,
		tenant, sessionID, d.iteration).Scan(&n, &bytes)
	if err != nil {
		return err
	}
	if n+1 >= snapshotEvery || bytes+int64(len(d.body)) > int64(d.full) {
		return nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE checkpoints SET kind = 'delta', codec = ?, base_iteration = ?, body = ?, state = ''
		WHERE tenant_id = ? AND session_id = ? AND iteration = ? AND sha256 = ? AND kind = 'full'`,
		d.codec, base, d.body, tenant, sessionID, d.iteration, d.sha256)
	return err
}

// insertCheckpoint writes c as a full row.
func insertCheckpoint(ctx context.Context, tx *sql.Tx, tenant string, c model.Checkpoint, st storedState) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (tenant_id, session_id, iteration, id, state, last_seq, sha256, created_at, codec, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenant, c.SessionID, c.Iteration, c.ID, st.text, c.LastSeq, c.SHA256, int64(c.CreatedAt), st.codec, blob(st.body))
	return err
}

// blob is b as a parameter: NULL when nil, which says "the state is in the
// state column".
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
