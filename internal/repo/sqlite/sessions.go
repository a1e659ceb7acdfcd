package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const sessionColumns = `id, agent_id, title, status, metadata, message_count, last_seq,
	total_tokens, total_cost, turn_count, parent_id, forked_at_seq, created_at, updated_at, closed_at, user_id, expires_at`

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
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		if in.ID != "" {
			id, err := repo.PlaceSession(in.ID, in.UserID, in.UserSpace, sessionHolder(ctx, tx, tenant))
			if err != nil {
				return err
			}
			ses.ID = id
		}
		_, err := tx.Exec(`INSERT INTO sessions (tenant_id, id, agent_id, user_id, title, status, metadata, created_at, updated_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tenant, ses.ID, ses.AgentID, ses.UserID, ses.Title, ses.Status, meta, int64(now), int64(now), ses.ExpiresAt)
		if isConstraint(err) {
			return repo.SessionTaken(ses.ID)
		}
		if err != nil {
			return err
		}
		return s.recordEvent(ctx, tx, tenant, ses.ID, model.EventSessionCreated, "", 0, repo.SessionEventData(ses))
	})
	if err != nil {
		return model.Session{}, err
	}
	return ses, nil
}

// sessionHolder is repo.SessionHolder in tx.
func sessionHolder(ctx context.Context, tx *sql.Tx, tenant string) repo.SessionHolder {
	return func(id string) (*string, bool, error) {
		var user *string
		err := tx.QueryRowContext(ctx, `SELECT user_id FROM sessions WHERE tenant_id = ? AND id = ?`, tenant, id).Scan(&user)
		if err == sql.ErrNoRows {
			return nil, false, nil
		}
		return user, err == nil, err
	}
}

// GetSession returns one session, or KindNotFound.
func (s *Store) GetSession(ctx context.Context, tenant, id string) (model.Session, error) {
	return getSession(ctx, s.rdb, tenant, id)
}

// querier is what both the read pool and the writer's transaction offer.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getSession(ctx context.Context, q querier, tenant, id string) (model.Session, error) {
	row := q.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE tenant_id = ? AND id = ?`, tenant, id)
	ses, err := scanSession(row)
	if err == nil && ses.Expired(model.Now()) { // hidden until a purge erases it
		err = sql.ErrNoRows
	}
	if err == sql.ErrNoRows {
		return model.Session{}, model.NotFound("session", id)
	}
	if err != nil {
		return model.Session{}, mapErr(err)
	}
	return ses, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanSession(sc scanner) (model.Session, error) {
	var (
		ses      model.Session
		meta     string
		closedAt sql.NullInt64
	)
	err := sc.Scan(&ses.ID, &ses.AgentID, &ses.Title, &ses.Status, &meta, &ses.MessageCount, &ses.LastSeq,
		counterInt{&ses.TotalTokens}, counterFloat{&ses.TotalCost}, &ses.TurnCount, &ses.ParentID, &ses.ForkedAtSeq, &ses.CreatedAt, &ses.UpdatedAt, &closedAt, &ses.UserID, &ses.ExpiresAt)
	if err != nil {
		return ses, err
	}
	if closedAt.Valid {
		t := model.Time(closedAt.Int64)
		ses.ClosedAt = &t
	}
	ses.Metadata = model.Object(meta)
	return ses, nil
}

// ListSessions returns one page of the tenant's sessions, newest first.
// A cursor from another filter is KindBadRequest (invalid_cursor).
//
// Each page is one range of an index: with a metadata filter, session_meta's
// rows for that key and value (the other filters checked on each session);
// otherwise sessions' own keyset indexes. The cursor is the range's upper
// bound (repo.SessionRangeOf), so a deep page costs what the first does.
func (s *Store) ListSessions(ctx context.Context, tenant string, f model.SessionFilter, p repo.PageRequest) (model.Page[model.Session], error) {
	q := repo.Fingerprint("sessions", f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Session]{}, err
	}
	limit := p.Clamp()
	query, args := listSessionsSQL(tenant, f, cur, hasCur, limit)
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return model.Page[model.Session]{}, mapErr(err)
	}
	defer rows.Close()
	var out []model.Session
	for rows.Next() {
		ses, err := scanSession(rows)
		if err != nil {
			return model.Page[model.Session]{}, mapErr(err)
		}
		out = append(out, ses)
	}
	if err := rows.Err(); err != nil {
		return model.Page[model.Session]{}, mapErr(err)
	}
	return repo.NewPage(out, limit, func(last model.Session) repo.Cursor {
		return repo.Cursor{Q: q, N: int64(last.CreatedAt), S: last.ID}
	}), nil
}

// listSessionsSQL is ListSessions' statement for one page of limit+1 rows.
func listSessionsSQL(tenant string, f model.SessionFilter, cur repo.Cursor, hasCur bool, limit int) (string, []any) {
	// order is the keyset's columns: session_meta's when it leads.
	from, created, id := "sessions s", "s.created_at", "s.id"
	var (
		where []string
		args  []any
	)
	by, rest, indexed := repo.IndexedMetadata(f.Metadata)
	if indexed {
		from, created, id = "session_meta k CROSS JOIN sessions s ON s.tenant_id = k.tenant_id AND s.id = k.session_id", "k.created_at", "k.session_id"
		where, args = append(where, "k.tenant_id = ?", "k.key = ?", "k.value = ?"), append(args, tenant, by.Key, by.Value)
	} else {
		where, args = append(where, "s.tenant_id = ?"), append(args, tenant)
	}
	if f.Status != "" {
		where = append(where, "s.status = ?")
		args = append(args, f.Status)
	}
	if f.AgentID != "" {
		where = append(where, "s.agent_id = ?")
		args = append(args, f.AgentID)
	}
	if f.UserID != "" {
		where = append(where, "s.user_id = ?")
		args = append(args, f.UserID)
	}
	for _, m := range rest {
		// json_each names keys literally, so a key with dots or quotes needs no
		// path escaping; the CASE renders values the way JSON writes them.
		where = append(where, `EXISTS (SELECT 1 FROM json_each(s.metadata) j WHERE j.key = ? AND
			CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null'
			ELSE CAST(j.value AS TEXT) END = ?)`)
		args = append(args, m.Key, m.Value)
	}
	r := repo.SessionRangeOf(f, cur, hasCur)
	if r.After != nil {
		where, args = append(where, created+" > ?"), append(args, *r.After)
	}
	if r.Before != nil {
		where, args = append(where, created+" < ?"), append(args, *r.Before)
	}
	if r.Cursor != nil {
		where, args = append(where, "("+created+", "+id+") < (?, ?)"), append(args, r.Cursor.N, r.Cursor.S)
	}
	if f.DueBefore != nil {
		where = append(where, "s.pause_until IS NOT NULL AND s.pause_until <= ?")
		args = append(args, int64(*f.DueBefore))
	}
	where = append(where, "(s.expires_at IS NULL OR s.expires_at > ?)")
	args = append(args, int64(model.Now()))
	args = append(args, limit+1)
	return `SELECT ` + sessionColumnsOf("s") + ` FROM ` + from + ` WHERE ` +
		strings.Join(where, " AND ") + ` ORDER BY ` + created + ` DESC, ` + id + ` DESC LIMIT ?`, args
}

// sessionColumnsOf is sessionColumns, each named through the table alias a.
func sessionColumnsOf(a string) string {
	cols := strings.Split(sessionColumns, ",")
	for i, c := range cols {
		cols[i] = a + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// notExpired is a condition for a read of a session's rows (checkpoints,
// compactions), whose arguments are the tenant, the session's id and now: it
// fails once the session is past its expires_at, so that the read finds
// nothing and its check that the session exists (getSession) answers
// KindNotFound, without a second query while the session is live.
const notExpired = `NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = ? AND x.id = ? AND x.expires_at <= ?)`

// UpdateSession changes status, title and metadata (an RFC 7396 merge patch).
// A refused status change is KindConflict (invalid_transition).
func (s *Store) UpdateSession(ctx context.Context, tenant, id string, in model.UpdateSession) (model.Session, error) {
	var out model.Session
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		ses, err := getSession(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		prev := ses.Status
		changed, err := repo.ApplySessionUpdate(&ses, in)
		if err != nil {
			return err
		}
		if changed {
			s.sessions.forget(tenant, id) // its status may change: the writer's record must not outlive it
			if in.ExpiresAt.Set {
				s.lineageMoved = true // cached lineages carry expires_at
			}
			if err := s.saveSession(ctx, tx, tenant, prev, &ses); err != nil {
				return err
			}
		}
		out = ses
		return nil
	})
	return out, err
}

// CloseSession soft-closes a session: status completed and closed_at set. A session
// that is already completed or archived is returned unchanged.
func (s *Store) CloseSession(ctx context.Context, tenant, id string) (model.Session, error) {
	var out model.Session
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		ses, err := getSession(ctx, tx, tenant, id)
		if err != nil {
			return err
		}
		if !ses.Status.Closed() {
			prev := ses.Status
			repo.SetSessionStatus(&ses, model.StatusCompleted)
			s.sessions.forget(tenant, id) // its status may change: the writer's record must not outlive it
			if err := s.saveSession(ctx, tx, tenant, prev, &ses); err != nil {
				return err
			}
		}
		out = ses
		return nil
	})
	return out, err
}

// saveSession writes ses back as a compare-and-set on the status it was read with,
// and tells the live feed. Inside the single writer nothing can change in
// between; the check still guards against another process (the CLI) writing
// the same file.
func (s *Store) saveSession(ctx context.Context, tx *sql.Tx, tenant string, prev model.Status, ses *model.Session) error {
	meta := ses.Metadata.String()
	ses.UpdatedAt = max(model.Now(), ses.UpdatedAt)
	var closedAt *int64
	if ses.ClosedAt != nil {
		c := int64(*ses.ClosedAt)
		closedAt = &c
	}
	res, err := tx.Exec(`UPDATE sessions SET status = ?, title = ?, metadata = ?, updated_at = ?, closed_at = ?, expires_at = ?
		WHERE tenant_id = ? AND id = ? AND status = ?`,
		ses.Status, ses.Title, meta, int64(ses.UpdatedAt), closedAt, ses.ExpiresAt, tenant, ses.ID, prev)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return model.Errorf(model.KindConflict, "conflict", "session %q changed concurrently; retry", ses.ID)
	}
	return s.recordEvent(ctx, tx, tenant, ses.ID, model.EventSessionUpdated, "", 0, repo.SessionEventData(*ses))
}
