package sqlite

import (
	"cmp"
	"context"
	"database/sql"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstore"
)

// ListCheckpoints returns a session's checkpoints of every namespace, newest
// first. A damaged one fails the page (corrupted), naming it.
func (s *Store) ListCheckpoints(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Checkpoint], error) {
	return s.FindCheckpoints(ctx, tenant, model.CheckpointFilter{SessionID: sessionID}, p)
}

// FindCheckpoints lists the checkpoints f selects, of one session or of every
// session of the tenant, newest first (ckstore.ListSQL), with their states
// and pending writes unless f.NoValues. Errors: KindNotFound (the session, or
// the checkpoint f.Before names), invalid_cursor, corrupted.
func (s *Store) FindCheckpoints(ctx context.Context, tenant string, f model.CheckpointFilter, p repo.PageRequest) (model.Page[model.Checkpoint], error) {
	q := ckstore.Fingerprint(f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	limit := p.Clamp()
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Page[model.Checkpoint]{}, mapErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	if f.SessionID != "" {
		if _, err := getSession(ctx, tx, tenant, f.SessionID); err != nil {
			return model.Page[model.Checkpoint]{}, err
		}
	}
	var before *repo.Cursor
	if f.Before != "" {
		if before, err = checkpointAt(ctx, tx, tenant, f); err != nil {
			return model.Page[model.Checkpoint]{}, err
		}
	}
	var args []any
	d := ckstore.ListSQL{
		Arg: func(v any) string { args = append(args, v); return "?" },
		Metadata: func(key, value string) string {
			return `EXISTS (SELECT 1 FROM json_each(c.metadata) j WHERE j.key = ` + key + ` AND
				CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null'
				ELSE CAST(j.value AS TEXT) END = ` + value + `)`
		},
	}
	var cp *repo.Cursor
	if hasCur {
		cp = &cur
	}
	where := d.Where(tenant, f, before, cp, model.Now())
	rows, err := tx.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints c WHERE `+where+
		ckstore.OrderBy+` LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return model.Page[model.Checkpoint]{}, mapErr(err)
	}
	stored, err := collect(rows, scanCkRow)
	if err != nil {
		return model.Page[model.Checkpoint]{}, mapErr(err)
	}
	out, cut, err := ckstore.Page(ctx, stored[:min(len(stored), limit)], f, func(session string) ckstore.Reads {
		return ckRows{tx, tenant, session}
	})
	if err != nil {
		return model.Page[model.Checkpoint]{}, err
	}
	return ckstore.NewPage(out, stored, limit, cut, q), nil
}

// checkpointAt is the place in a list's order of the checkpoint f.Before
// names. Errors: KindNotFound.
func checkpointAt(ctx context.Context, q querier, tenant string, f model.CheckpointFilter) (*repo.Cursor, error) {
	var at repo.Cursor
	err := q.QueryRowContext(ctx, `SELECT created_at, id FROM checkpoints WHERE tenant_id = ? AND session_id = ? AND namespace = ? AND client_id = ?`,
		tenant, cmp.Or(f.BeforeSession, f.SessionID), f.BeforeNamespace, f.Before).Scan(&at.N, &at.S)
	if err == sql.ErrNoRows {
		return nil, model.NotFound("checkpoint", f.Before)
	}
	return &at, mapErr(err)
}
