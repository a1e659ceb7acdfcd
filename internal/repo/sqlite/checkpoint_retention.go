package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/logbook/logbook/internal/model"
)

// sessionRetention reads a session's own retention policy (nil: none).
func sessionRetention(ctx context.Context, q querier, tenant, id string) (*model.CheckpointRetention, error) {
	var raw sql.NullString
	if err := q.QueryRowContext(ctx, `SELECT checkpoint_retention FROM sessions WHERE tenant_id = ? AND id = ?`,
		tenant, id).Scan(&raw); err != nil {
		if err == sql.ErrNoRows {
			return nil, model.NotFound("session", id)
		}
		return nil, mapErr(err)
	}
	if !raw.Valid {
		return nil, nil
	}
	var p model.CheckpointRetention
	if err := json.Unmarshal([]byte(raw.String), &p); err != nil {
		return nil, model.Internal(err)
	}
	return &p, nil
}

// CheckpointRetention returns a session's own retention policy, nil when it
// has none (the server's default applies). Errors: KindNotFound.
func (s *Store) CheckpointRetention(ctx context.Context, tenant, sessionID string) (*model.CheckpointRetention, error) {
	if _, err := getSession(ctx, s.rdb, tenant, sessionID); err != nil {
		return nil, err
	}
	return sessionRetention(ctx, s.rdb, tenant, sessionID)
}

// SetCheckpointRetention sets a session's own retention policy, or with nil
// returns it to the server's default. It applies from the session's next
// checkpoint write on. Errors: KindNotFound.
func (s *Store) SetCheckpointRetention(ctx context.Context, tenant, sessionID string, p *model.CheckpointRetention) error {
	var raw any
	if p != nil {
		b, err := json.Marshal(p)
		if err != nil {
			return model.Internal(err)
		}
		raw = string(b)
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := getSession(ctx, tx, tenant, sessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET checkpoint_retention = ? WHERE tenant_id = ? AND id = ?`, raw, tenant, sessionID)
		return err
	})
}
