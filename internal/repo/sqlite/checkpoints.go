package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// DefaultCheckpointKeep is how many checkpoints a session keeps; older ones are
// pruned by the writer as new ones arrive.
const DefaultCheckpointKeep = 100

// canonicalJSON re-encodes JSON with sorted keys and no insignificant space,
// keeping numbers digit for digit, so that equal states hash equally.
func canonicalJSON(raw []byte) ([]byte, error) {
	v, err := decodeTree(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// decodeTree decodes JSON with numbers kept as their text (json.Number), which
// canonicalJSON, merge patches and deltas all work on.
func decodeTree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkpointHash covers what a checkpoint asserts: its iteration, the session's
// last_seq then, and its state.
func checkpointHash(iteration, lastSeq int64, state []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "logbook-checkpoint-v1\n%d\n%d\n", iteration, lastSeq)
	h.Write(state)
	return hex.EncodeToString(h.Sum(nil))
}

// verify reports a checkpoint whose stored content no longer matches its hash.
func verify(c model.Checkpoint) error {
	if checkpointHash(c.Iteration, c.LastSeq, c.State) != c.SHA256 || !json.Valid(c.State) {
		return model.Corrupted("checkpoint", c.ID)
	}
	return nil
}

// PutCheckpoint records a runtime's state after an iteration. The iteration must
// be above the latest, and ExpectedIteration, when given, must be the latest: two
// workers resuming one session cannot both write (stale_iteration). The writer
// keeps the newest keep checkpoints of the session. Errors: KindNotFound,
// stale_iteration.
func (s *Store) PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, keep int) (model.Checkpoint, error) {
	tree, err := decodeTree(in.State)
	if _, ok := tree.(map[string]any); err != nil || !ok {
		return model.Checkpoint{}, model.Invalid(model.FieldError{Field: "state", Message: "must be a JSON object"})
	}
	st, err := model.ParseState(in.State)
	if err != nil {
		return model.Checkpoint{}, err
	}
	return s.writeCheckpoint(ctx, tenant, sessionID,
		ckWrite{iteration: in.Iteration, expected: in.ExpectedIteration, tree: tree, pause: st.PauseUntilMs}, keep)
}

// PatchCheckpoint records iteration in.Iteration as the latest checkpoint's state
// with in.StatePatch applied (RFC 7396), under PutCheckpoint's fence and rules:
// what it stores and answers is what a PUT of the merged state would. Errors:
// KindNotFound, stale_iteration, no_checkpoint (nothing to patch yet), corrupted
// (the latest cannot be read), KindInvalid (the patch, or the state it makes,
// named under state_patch).
func (s *Store) PatchCheckpoint(ctx context.Context, tenant, sessionID string, in model.PatchCheckpoint, keep int) (model.Checkpoint, error) {
	patch, err := decodeTree(in.StatePatch)
	p, ok := patch.(map[string]any)
	if err != nil || !ok {
		return model.Checkpoint{}, model.Invalid(model.FieldError{Field: "state_patch", Message: "must be a JSON object (an RFC 7396 merge patch of the state)"})
	}
	return s.writeCheckpoint(ctx, tenant, sessionID, ckWrite{iteration: in.Iteration, expected: in.ExpectedIteration, patch: p}, keep)
}

// ckWrite is a checkpoint write: a whole state (PUT) or a patch of the latest.
type ckWrite struct {
	iteration int64
	expected  *int64
	tree      any            // PUT: the state
	pause     *int64         // PUT: its pause_until_ms
	patch     map[string]any // PATCH
}

// ckPlan is a write worked out against one latest checkpoint: the new state,
// how it is stored, and how the latest may become a delta. The JSON work
// happens before the writer, which only checks that the latest is still the
// one planned against (compare-and-set) and writes rows.
type ckPlan struct {
	base      ckBase
	canonical []byte
	pause     *int64
	stored    storedState
	delta     *deltaTo
	err       error // reported once the fence has passed
}

func planCheckpoint(ctx context.Context, q querier, tenant, sessionID string, w ckWrite) (ckPlan, error) {
	var p ckPlan
	var err error
	if p.base, err = loadBase(ctx, q, tenant, sessionID, w.patch != nil); err != nil {
		return p, err
	}
	tree := w.tree
	if w.patch != nil {
		switch {
		case !p.base.found:
			p.err = model.NoCheckpoint(sessionID)
			return p, nil
		case p.base.err != nil:
			p.err = p.base.err
			return p, nil
		}
		tree = model.MergePatch(p.base.tree, w.patch)
	}
	if p.canonical, err = json.Marshal(tree); err != nil {
		return p, model.Internal(err)
	}
	p.pause = w.pause
	if n := len(p.canonical); w.patch == nil && n > model.MaxStateBytes {
		p.err = model.Invalid(model.FieldError{Field: "state", Message: fmt.Sprintf(
			"takes %d bytes as canonical JSON, over the limit of %d (an export line must hold it)", n, model.MaxStateBytes)})
		return p, nil
	}
	if w.patch != nil {
		if n := len(p.canonical); n > model.MaxStateBytes && n > p.base.size {
			p.err = model.Invalid(model.FieldError{Field: "state_patch", Message: fmt.Sprintf(
				"would grow the state to %d bytes, over the limit of %d", n, model.MaxStateBytes)})
			return p, nil
		}
		st, err := model.ParsePatchedState(p.canonical)
		if err != nil {
			p.err = err
			return p, nil
		}
		p.pause = st.PauseUntilMs
	}
	p.stored = encodeFull(p.canonical)
	if p.base.found && p.base.err == nil {
		p.delta = reverseDelta(tree, p.base)
	}
	return p, nil
}

// writeCheckpoint plans a write on the read pool, then hands it to the writer,
// which plans again, inside, only if another write got there in between.
func (s *Store) writeCheckpoint(ctx context.Context, tenant, sessionID string, w ckWrite, keep int) (model.Checkpoint, error) {
	if keep <= 0 {
		keep = DefaultCheckpointKeep
	}
	planned, err := planCheckpoint(ctx, s.rdb, tenant, sessionID, w)
	if err != nil {
		return model.Checkpoint{}, err
	}
	c := model.Checkpoint{ID: newID(model.PrefixCheckpoint), SessionID: sessionID, Iteration: w.iteration, CreatedAt: model.Now()}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.crashPoint(repo.PointCheckpointWrite); err != nil {
			return err
		}
		ses, err := getSession(ctx, tx, tenant, sessionID)
		if err != nil {
			return err
		}
		var latest int64
		var latestSHA string
		err = tx.QueryRowContext(ctx, `SELECT iteration, sha256 FROM checkpoints WHERE tenant_id = ? AND session_id = ?
			ORDER BY iteration DESC LIMIT 1`, tenant, sessionID).Scan(&latest, &latestSHA)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if w.expected != nil && *w.expected != latest {
			return model.StaleIteration(fmt.Sprintf("expected_iteration is %d but the latest checkpoint is iteration %d: another worker wrote since",
				*w.expected, latest), latest)
		}
		if w.iteration <= latest {
			return model.StaleIteration(fmt.Sprintf("iteration %d is not above the latest checkpoint's %d", w.iteration, latest), latest)
		}
		p := planned
		if p.base.iteration != latest || p.base.sha256 != latestSHA {
			if p, err = planCheckpoint(ctx, tx, tenant, sessionID, w); err != nil {
				return err
			}
		}
		if p.err != nil {
			return p.err
		}
		c.State = p.canonical
		c.LastSeq = ses.LastSeq
		c.SHA256 = checkpointHash(c.Iteration, c.LastSeq, c.State)
		if err := insertCheckpoint(ctx, tx, tenant, c, p.stored); err != nil {
			return err
		}
		if err := keepAsDelta(ctx, tx, tenant, sessionID, p.delta, c.Iteration); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET pause_until = ? WHERE tenant_id = ? AND id = ?`,
			p.pause, tenant, sessionID); err != nil {
			return err
		}
		return pruneCheckpoints(ctx, tx, tenant, sessionID, keep)
	})
	return c, err
}

// GetCheckpoint returns a session's checkpoint at iteration, or its latest when
// iteration is 0. Errors: KindNotFound, corrupted.
func (s *Store) GetCheckpoint(ctx context.Context, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Checkpoint{}, mapErr(err)
	}
	defer tx.Rollback() // read-only: nothing to undo
	return getCheckpoint(ctx, tx, tenant, sessionID, iteration)
}

// ListCheckpoints returns a session's checkpoints, newest first. A damaged one
// fails the page (corrupted), naming it.
func (s *Store) ListCheckpoints(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Checkpoint], error) {
	q := repo.Fingerprint("checkpoints", sessionID)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	cond, args := "", []any{tenant, sessionID}
	if hasCur {
		cond, args = " AND iteration < ?", append(args, cur.N)
	}
	limit := p.Clamp()
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Page[model.Checkpoint]{}, mapErr(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints WHERE tenant_id = ? AND session_id = ?`+
		cond+` ORDER BY iteration DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.Checkpoint]{}, mapErr(err)
	}
	stored, err := collect(rows, scanCkRow)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	rd := newCkReader(ctx, tx, tenant, sessionID)
	out := make([]model.Checkpoint, len(stored))
	for i, row := range stored {
		if out[i], err = rd.read(row); err != nil {
			return model.Page[model.Checkpoint]{}, err
		}
	}
	if len(out) == 0 {
		if _, err := getSession(ctx, tx, tenant, sessionID); err != nil {
			return model.Page[model.Checkpoint]{}, err
		}
	}
	return repo.NewPage(out, limit, func(last model.Checkpoint) repo.Cursor { return repo.Cursor{Q: q, N: last.Iteration} }), nil
}
