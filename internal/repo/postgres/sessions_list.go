package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// ListSessions returns one page of the tenant's sessions, newest first.
// A cursor from another filter is KindBadRequest (invalid_cursor).
//
// Each page is one range of an index, as on SQLite: with a metadata filter,
// session_meta's rows of that key and value; otherwise sessions' keyset
// indexes. Ids compare byte by byte (COLLATE "C", as the indexes are made),
// as SQLite's BINARY collation does, whatever the database's locale:
// otherwise pages would follow another order than SQLite's, and a cursor
// could skip rows.
func (s *Store) ListSessions(ctx context.Context, tenant string, f model.SessionFilter, p repo.PageRequest) (model.Page[model.Session], error) {
	q := repo.Fingerprint("sessions", f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Session]{}, err
	}
	limit := p.Clamp()
	query, args := listSessionsSQL(tenant, f, cur, hasCur, limit)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return model.Page[model.Session]{}, mapErr(err)
	}
	defer rows.Close()
	var out []model.Session
	for rows.Next() {
		ses, err := scanSessionPG(rows)
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
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	from, created, id := "sessions s", "s.created_at", `s.id COLLATE "C"`
	by, rest, indexed := repo.IndexedMetadata(f.Metadata)
	if indexed {
		// session_meta.session_id is of collation "C"; sessions.id of the
		// database's, which its primary key is made in.
		from, created, id = `session_meta k JOIN sessions s ON s.tenant_id = k.tenant_id AND s.id = (k.session_id COLLATE "default")`, "k.created_at", "k.session_id"
		where = append(where, "k.tenant_id = "+arg(tenant), "k.key = "+arg(by.Key), "k.value = "+arg(by.Value))
	} else {
		where = append(where, "s.tenant_id = "+arg(tenant))
	}
	if f.Status != "" {
		where = append(where, "s.status = "+arg(string(f.Status)))
	}
	if f.AgentID != "" {
		where = append(where, "s.agent_id = "+arg(f.AgentID))
	}
	if f.UserID != "" {
		where = append(where, "s.user_id = "+arg(f.UserID))
	}
	for _, m := range rest {
		where = append(where, `EXISTS (SELECT 1 FROM json_each(s.metadata) j WHERE j.key = `+arg(m.Key)+
			` AND session_meta_text(j.value) = `+arg(m.Value)+`)`)
	}
	r := repo.SessionRangeOf(f, cur, hasCur)
	if r.After != nil {
		where = append(where, created+" > "+arg(*r.After))
	}
	if r.Before != nil {
		where = append(where, created+" < "+arg(*r.Before))
	}
	if r.Cursor != nil {
		where = append(where, "("+created+", "+id+") < ("+arg(r.Cursor.N)+", "+arg(r.Cursor.S)+")")
	}
	if f.DueBefore != nil {
		where = append(where, "s.pause_until IS NOT NULL AND s.pause_until <= "+arg(int64(*f.DueBefore)))
	}
	where = append(where, "(s.expires_at IS NULL OR s.expires_at > "+arg(int64(model.Now()))+")")
	cols := strings.Split(sessionColumnsPG, ",")
	for i, c := range cols {
		cols[i] = "s." + strings.TrimSpace(c)
	}
	return `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + from + ` WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY ` + created + ` DESC, ` + id + ` DESC LIMIT ` + arg(limit+1), args
}
