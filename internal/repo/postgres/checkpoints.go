package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// ckReadTxPG runs fn in a read-only transaction of one snapshot: a delta is
// rebuilt from other rows, which a write committing between two statements
// of a READ COMMITTED read could change (prune, or turn the latest into a
// delta).
func (s *Store) ckReadTxPG(ctx context.Context, fn func(pgx.Tx) error) error {
	return mapErr(pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn))
}

// GetCheckpoint returns a session's checkpoint at iteration of namespace "",
// or its latest when iteration is 0. Errors: KindNotFound, corrupted.
func (s *Store) GetCheckpoint(ctx context.Context, tenant, sessionID string, iteration int64) (model.Checkpoint, error) {
	return s.ReadCheckpoint(ctx, tenant, sessionID, model.CheckpointSelector{Iteration: iteration})
}

// ReadCheckpoint returns the checkpoint sel names, with its pending writes
// (ckstore.Get). Errors: KindNotFound, corrupted.
func (s *Store) ReadCheckpoint(ctx context.Context, tenant, sessionID string, sel model.CheckpointSelector) (model.Checkpoint, error) {
	var c model.Checkpoint
	err := s.ckReadTxPG(ctx, func(tx pgx.Tx) error {
		var err error
		c, err = ckstore.Get(ctx, ckRowsPG{tx, tenant, sessionID}, sel)
		return err
	})
	return c, err // a corrupted one as far as it could be rebuilt, as on SQLite
}

// ListCheckpoints returns a session's checkpoints of every namespace, newest
// first. A damaged one fails the page (corrupted), naming it.
func (s *Store) ListCheckpoints(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Checkpoint], error) {
	return s.FindCheckpoints(ctx, tenant, model.CheckpointFilter{SessionID: sessionID}, p)
}

// FindCheckpoints lists the checkpoints f selects, of one session or of every
// session of the tenant, newest first, as SQLite's does. Errors: KindNotFound,
// invalid_cursor, corrupted.
func (s *Store) FindCheckpoints(ctx context.Context, tenant string, f model.CheckpointFilter, p repo.PageRequest) (model.Page[model.Checkpoint], error) {
	q := ckstore.Fingerprint(f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	limit := p.Clamp()
	var page model.Page[model.Checkpoint]
	err = s.ckReadTxPG(ctx, func(tx pgx.Tx) error {
		if f.SessionID != "" {
			if _, err := ckSessionPG(ctx, tx, tenant, f.SessionID, false); err != nil {
				return err
			}
		}
		var before *repo.Cursor
		if f.Before != "" {
			var at repo.Cursor
			err := tx.QueryRow(ctx, `SELECT created_at, id FROM checkpoints
				WHERE tenant_id = $1 AND session_id = $2 AND namespace = $3 AND client_id = $4`,
				tenant, cmp.Or(f.BeforeSession, f.SessionID), f.BeforeNamespace, f.Before).Scan(&at.N, &at.S)
			if errors.Is(err, pgx.ErrNoRows) {
				return model.NotFound("checkpoint", f.Before)
			}
			if err != nil {
				return err
			}
			before = &at
		}
		var args []any
		d := ckstore.ListSQL{
			Arg: func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) },
			Metadata: func(key, value string) string {
				return `EXISTS (SELECT 1 FROM json_each(c.metadata::json) j WHERE j.key = ` + key + ` AND session_meta_text(j.value) = ` + value + `)`
			},
		}
		var cp *repo.Cursor
		if hasCur {
			cp = &cur
		}
		where := d.Where(tenant, f, before, cp, model.Now())
		rows, err := tx.Query(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints c WHERE `+where+ckstore.OrderBy+
			` LIMIT `+d.Arg(limit+1), args...)
		if err != nil {
			return err
		}
		stored, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ckstate.Row, error) { return scanCkRowPG(r) })
		if err != nil {
			return err
		}
		out, cut, err := ckstore.Page(ctx, stored[:min(len(stored), limit)], f, func(session string) ckstore.Reads {
			return ckRowsPG{tx, tenant, session}
		})
		if err == nil {
			page = ckstore.NewPage(out, stored, limit, cut, q)
		}
		return err
	})
	return page, err
}

// sessionRetentionPG reads a session's own retention policy (nil: none).
func sessionRetentionPG(ctx context.Context, q ckQuerierPG, tenant, id string) (*model.CheckpointRetention, error) {
	var raw *string
	err := q.QueryRow(ctx, `SELECT checkpoint_retention FROM sessions WHERE tenant_id = $1 AND id = $2`, tenant, id).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, model.NotFound("session", id)
	}
	if err != nil || raw == nil {
		return nil, mapErr(err)
	}
	var p model.CheckpointRetention
	if err := json.Unmarshal([]byte(*raw), &p); err != nil {
		return nil, model.Internal(err)
	}
	return &p, nil
}

// CheckpointRetention returns a session's own retention policy, nil when it
// has none. Errors: KindNotFound.
func (s *Store) CheckpointRetention(ctx context.Context, tenant, sessionID string) (*model.CheckpointRetention, error) {
	if _, err := ckSessionPG(ctx, s.pool, tenant, sessionID, false); err != nil {
		return nil, err
	}
	return sessionRetentionPG(ctx, s.pool, tenant, sessionID)
}

// SetCheckpointRetention sets a session's own retention policy, or with nil
// returns it to the server's default. Errors: KindNotFound.
func (s *Store) SetCheckpointRetention(ctx context.Context, tenant, sessionID string, p *model.CheckpointRetention) error {
	var raw *string
	if p != nil {
		b, err := json.Marshal(p)
		if err != nil {
			return model.Internal(err)
		}
		str := string(b)
		raw = &str
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := ckSessionPG(ctx, tx, tenant, sessionID, true); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE sessions SET checkpoint_retention = $1 WHERE tenant_id = $2 AND id = $3`, raw, tenant, sessionID)
		return err
	})
}
