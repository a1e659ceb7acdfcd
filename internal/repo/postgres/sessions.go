package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// sessionColumnsPG are read in scanSessionPG's order, as SQLite's sessionColumns.
const sessionColumnsPG = `id, agent_id, title, status, metadata, message_count, last_seq,
	total_tokens, total_cost, turn_count, parent_id, forked_at_seq, created_at, updated_at, closed_at, user_id, expires_at, incarnation`

// sessionQuerier is what both the pool and a transaction offer.
type sessionQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// CreateSession stores a new session in status created, under the id
// repo.PlaceSession picks. A client-chosen id that is taken is a KindConflict.
func (s *Store) CreateSession(ctx context.Context, tenant string, in model.CreateSession) (model.Session, error) {
	now := model.Now()
	ses := model.Session{
		ID:        in.ID,
		AgentID:   in.AgentID,
		UserID:    in.UserID,
		ExpiresAt: in.ExpiresAt,
		Title:     in.Title,
		Status:    model.StatusCreated,
		Metadata:  in.Metadata,
		CreatedAt: now,
		UpdatedAt: now,
	}
	if ses.ID == "" {
		ses.ID = newID(model.PrefixSession)
	}
	if ses.Metadata == nil {
		ses.Metadata = model.Object("{}")
	}
	meta := ses.Metadata.String()
	err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		// A key bound to a user whose id another process took meanwhile (the
		// insert below then does nothing) places it again: now it sees the
		// holder, and moves into the user's space.
		for try := 0; ; try++ {
			if in.ID != "" {
				id, err := repo.PlaceSession(in.ID, in.UserID, in.UserSpace, sessionHolderPG(ctx, tx, tenant))
				if err != nil {
					return err
				}
				ses.ID = id
			}
			// ON CONFLICT rather than catching the unique violation: the server
			// would log every taken id as an error.
			tag, err := tx.Exec(ctx, `INSERT INTO sessions (tenant_id, id, agent_id, user_id, title, status, metadata, created_at, updated_at, expires_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
				tenant, ses.ID, ses.AgentID, ses.UserID, ses.Title, string(ses.Status), meta, int64(now), int64(now), timePtrPG(ses.ExpiresAt))
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				break
			}
			if !in.UserSpace || try == 2 {
				return repo.SessionTaken(ses.ID)
			}
		}
		return recordEventPG(ctx, tx, tenant, ses.ID, model.EventSessionCreated, repo.SessionEventData(ses))
	})
	if err != nil {
		return model.Session{}, err
	}
	return ses, nil
}

// sessionHolderPG is repo.SessionHolder in tx.
func sessionHolderPG(ctx context.Context, tx pgx.Tx, tenant string) repo.SessionHolder {
	return func(id string) (*string, bool, error) {
		var user *string
		err := tx.QueryRow(ctx, `SELECT user_id FROM sessions WHERE tenant_id = $1 AND id = $2`, tenant, id).Scan(&user)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, false, nil
		}
		return user, err == nil, err
	}
}

// GetSession returns one session, or KindNotFound.
func (s *Store) GetSession(ctx context.Context, tenant, id string) (model.Session, error) {
	return getSessionTx(ctx, s.pool, tenant, id, "")
}

// getSessionTx reads one session row; lock is "" or a locking clause
// (" FOR UPDATE") for a read inside a transaction that will write it.
func getSessionTx(ctx context.Context, q sessionQuerier, tenant, id, lock string) (model.Session, error) {
	ses, err := scanSessionPG(q.QueryRow(ctx, `SELECT `+sessionColumnsPG+` FROM sessions WHERE tenant_id = $1 AND id = $2`+lock, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && ses.Expired(model.Now())) { // expired: hidden until a purge erases it
		return model.Session{}, model.NotFound("session", id)
	}
	if err != nil {
		return model.Session{}, mapErr(err)
	}
	return ses, nil
}

func scanSessionPG(row pgx.Row) (model.Session, error) {
	var (
		ses                         model.Session
		status, meta                string
		created, updated            int64
		closedAt, expiresAt         *int64
		totalTokens, count, lastSeq int64
	)
	err := row.Scan(&ses.ID, &ses.AgentID, &ses.Title, &status, &meta, &count, &lastSeq,
		&totalTokens, &ses.TotalCost, &ses.TurnCount, &ses.ParentID, &ses.ForkedAtSeq, &created, &updated, &closedAt, &ses.UserID, &expiresAt, &ses.Incarnation)
	if err != nil {
		return ses, err
	}
	ses.Status, ses.Metadata = model.Status(status), model.Object(meta)
	ses.MessageCount, ses.LastSeq, ses.TotalTokens = count, lastSeq, totalTokens
	ses.TotalCost = finiteCostPG(ses.TotalCost)
	ses.CreatedAt, ses.UpdatedAt = model.Time(created), model.Time(updated)
	if closedAt != nil {
		t := model.Time(*closedAt)
		ses.ClosedAt = &t
	}
	if expiresAt != nil {
		t := model.Time(*expiresAt)
		ses.ExpiresAt = &t
	}
	return ses, nil
}

// UpdateSession changes status, title and metadata (an RFC 7396 merge patch).
// A refused status change is KindConflict (invalid_transition).
func (s *Store) UpdateSession(ctx context.Context, tenant, id string, in model.UpdateSession) (model.Session, error) {
	var out model.Session
	err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		ses, err := getSessionTx(ctx, tx, tenant, id, " FOR UPDATE")
		if err != nil {
			return err
		}
		prev := ses.Status
		changed, err := repo.ApplySessionUpdate(&ses, in)
		if err != nil {
			return err
		}
		if changed {
			if err := saveSessionTx(ctx, tx, tenant, prev, &ses); err != nil {
				return err
			}
		}
		out = ses
		return nil
	})
	return out, err
}

// CloseSession soft-closes a session: status completed and closed_at set. A
// session that is already completed or archived is returned unchanged.
func (s *Store) CloseSession(ctx context.Context, tenant, id string) (model.Session, error) {
	var out model.Session
	err := s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		ses, err := getSessionTx(ctx, tx, tenant, id, " FOR UPDATE")
		if err != nil {
			return err
		}
		if !ses.Status.Closed() {
			prev := ses.Status
			repo.SetSessionStatus(&ses, model.StatusCompleted)
			if err := saveSessionTx(ctx, tx, tenant, prev, &ses); err != nil {
				return err
			}
		}
		out = ses
		return nil
	})
	return out, err
}

// saveSessionTx writes ses back as a compare-and-set on the status it was read
// with. The row is locked (FOR UPDATE), so the check cannot fail unless a
// caller forgot the lock; it stays as SQLite has it.
func saveSessionTx(ctx context.Context, tx pgx.Tx, tenant string, prev model.Status, ses *model.Session) error {
	ses.UpdatedAt = max(model.Now(), ses.UpdatedAt)
	var closedAt *int64
	if ses.ClosedAt != nil {
		c := int64(*ses.ClosedAt)
		closedAt = &c
	}
	tag, err := tx.Exec(ctx, `UPDATE sessions SET status = $1, title = $2, metadata = $3, updated_at = $4, closed_at = $5, expires_at = $9
		WHERE tenant_id = $6 AND id = $7 AND status = $8`,
		string(ses.Status), ses.Title, ses.Metadata.String(), int64(ses.UpdatedAt), closedAt, tenant, ses.ID, string(prev), timePtrPG(ses.ExpiresAt))
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return model.Errorf(model.KindConflict, "conflict", "session %q changed concurrently; retry", ses.ID)
	}
	return recordEventPG(ctx, tx, tenant, ses.ID, model.EventSessionUpdated, repo.SessionEventData(*ses))
}

// timePtrPG is an optional time as the BIGINT column stores it.
func timePtrPG(t *model.Time) *int64 {
	if t == nil {
		return nil
	}
	n := int64(*t)
	return &n
}
