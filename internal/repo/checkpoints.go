package repo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/logbook/logbook/internal/model"
)

// DefaultCheckpointKeep is how many checkpoints a session keeps; older ones are
// pruned by the writer as new ones arrive.
const DefaultCheckpointKeep = 100

const checkpointColumns = `id, session_id, iteration, state, last_seq, sha256, created_at`

// canonicalJSON re-encodes JSON with sorted keys and no insignificant space,
// keeping numbers digit for digit, so that equal states hash equally.
func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// checkpointHash covers what a checkpoint asserts: its iteration, the session's
// last_seq then, and its state.
func checkpointHash(iteration, lastSeq int64, state []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "logbook-checkpoint-v1\n%d\n%d\n", iteration, lastSeq)
	h.Write(state)
	return hex.EncodeToString(h.Sum(nil))
}

func scanCheckpoint(sc scanner) (model.Checkpoint, error) {
	var (
		c     model.Checkpoint
		state string
	)
	if err := sc.Scan(&c.ID, &c.SessionID, &c.Iteration, &state, &c.LastSeq, &c.SHA256, &c.CreatedAt); err != nil {
		return c, err
	}
	c.State = model.JSON(state)
	return c, nil
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
	state, err := canonicalJSON(in.State)
	if err != nil {
		return model.Checkpoint{}, model.Invalid(model.FieldError{Field: "state", Message: "must be a JSON object"})
	}
	st, err := model.ParseState(in.State)
	if err != nil {
		return model.Checkpoint{}, err
	}
	if keep <= 0 {
		keep = DefaultCheckpointKeep
	}
	c := model.Checkpoint{ID: newID(model.PrefixCheckpoint), SessionID: sessionID, Iteration: in.Iteration,
		State: state, CreatedAt: model.Now()}
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.crashPoint(PointCheckpointWrite); err != nil {
			return err
		}
		ses, err := getSession(ctx, tx, tenant, sessionID)
		if err != nil {
			return err
		}
		var latest int64
		err = tx.QueryRowContext(ctx, `SELECT iteration FROM checkpoints WHERE tenant_id = ? AND session_id = ?
			ORDER BY iteration DESC LIMIT 1`, tenant, sessionID).Scan(&latest)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if in.ExpectedIteration != nil && *in.ExpectedIteration != latest {
			return model.StaleIteration(fmt.Sprintf("expected_iteration is %d but the latest checkpoint is iteration %d: another worker wrote since",
				*in.ExpectedIteration, latest), latest)
		}
		if in.Iteration <= latest {
			return model.StaleIteration(fmt.Sprintf("iteration %d is not above the latest checkpoint's %d", in.Iteration, latest), latest)
		}
		c.LastSeq = ses.LastSeq
		c.SHA256 = checkpointHash(c.Iteration, c.LastSeq, c.State)
		if _, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (tenant_id, session_id, iteration, id, state, last_seq, sha256, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, tenant, sessionID, c.Iteration, c.ID, string(c.State), c.LastSeq, c.SHA256, int64(c.CreatedAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET pause_until = ? WHERE tenant_id = ? AND id = ?`,
			st.PauseUntilMs, tenant, sessionID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE tenant_id = ? AND session_id = ? AND iteration <= (
			SELECT iteration FROM checkpoints WHERE tenant_id = ? AND session_id = ? ORDER BY iteration DESC LIMIT 1 OFFSET ?)`,
			tenant, sessionID, tenant, sessionID, keep)
		return err
	})
	return c, err
}

// GetCheckpoint returns a session's checkpoint at iteration, or its latest when
// iteration is 0. Errors: KindNotFound, corrupted.
func (s *Store) GetCheckpoint(ctx context.Context, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	c, err := getCheckpoint(ctx, s.rdb, tenant, sessionID, iteration)
	if err != nil {
		return c, err
	}
	return c, verify(c)
}

func getCheckpoint(ctx context.Context, q querier, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	query := `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE tenant_id = ? AND session_id = ?`
	args := []any{tenant, sessionID}
	if iteration > 0 {
		query, args = query+` AND iteration = ?`, append(args, iteration)
	}
	c, err := scanCheckpoint(q.QueryRowContext(ctx, query+` ORDER BY iteration DESC LIMIT 1`, args...))
	if err == sql.ErrNoRows {
		if _, err := getSession(ctx, q, tenant, sessionID); err != nil {
			return c, err
		}
		what := "latest"
		if iteration > 0 {
			what = "iteration " + itoa(iteration)
		}
		return c, model.NotFound("checkpoint", what)
	}
	return c, mapErr(err)
}

// ListCheckpoints returns a session's checkpoints, newest first. A damaged one
// fails the page (corrupted), naming it.
func (s *Store) ListCheckpoints(ctx context.Context, tenant, sessionID string, p PageRequest) (model.Page[model.Checkpoint], error) {
	q := fingerprint("checkpoints", sessionID)
	cur, hasCur, err := decodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	cond, args := "", []any{tenant, sessionID}
	if hasCur {
		cond, args = " AND iteration < ?", append(args, cur.N)
	}
	limit := p.limit()
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints WHERE tenant_id = ? AND session_id = ?`+
		cond+` ORDER BY iteration DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.Checkpoint]{}, mapErr(err)
	}
	out, err := collect(rows, scanCheckpoint)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	for _, c := range out {
		if err := verify(c); err != nil {
			return model.Page[model.Checkpoint]{}, err
		}
	}
	if len(out) == 0 {
		if _, err := getSession(ctx, s.rdb, tenant, sessionID); err != nil {
			return model.Page[model.Checkpoint]{}, err
		}
	}
	return page(out, limit, func(last model.Checkpoint) cursor { return cursor{Q: q, N: last.Iteration} }), nil
}
