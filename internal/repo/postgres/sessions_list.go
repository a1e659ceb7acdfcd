package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// sessionMetaValuePG renders a metadata value (j.value, of json_each) as text
// the way SQLite's CAST(json_each.value AS TEXT) does, so that a filter
// matches the same sessions on both: strings unquoted, integers as written,
// other numbers as SQLite prints a REAL (always with a ".0" or a fraction:
// 1e3 is "1000.0", 1e20 "1.0e+20"), true, false, null, objects and arrays as
// their JSON text. SQLite prints a REAL with 15 significant digits and
// PostgreSQL with the shortest exact ones: a number that needs more than 15
// digits reads differently, and so does one with a three-digit exponent
// (taken as written: it may not fit a float8, and the filter must not fail).
const sessionMetaValuePG = `CASE json_typeof(j.value)
	WHEN 'string' THEN j.value #>> '{}'
	WHEN 'number' THEN CASE WHEN j.value::text ~ '^-?[0-9]+$' THEN j.value::text
		WHEN j.value::text ~* 'e[+-]?0*[0-9]{3}' THEN j.value::text
		ELSE regexp_replace((j.value::text)::float8::text, '^(-?[0-9]+)(e.*)?$', '\1.0\2') END
	ELSE j.value::text END`

// titleFoldedPG is a session's title as model.FoldTitle folds it, whatever
// the database's locale: the expression of the trigram index
// sessions_by_title (migration 00022), which a query must spell the same
// way to use it.
const titleFoldedPG = `translate(title, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`

// likeEscaper makes a text a LIKE pattern's literal part (backslash is
// LIKE's default escape).
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// ListSessions returns one page of the tenant's sessions, newest first (or
// oldest first). A cursor from another filter is KindBadRequest
// (invalid_cursor).
func (s *Store) ListSessions(ctx context.Context, tenant string, f model.SessionFilter, p repo.PageRequest) (model.Page[model.Session], error) {
	q := repo.Fingerprint("sessions", f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Session]{}, err
	}
	where, args := sessionsWherePG(tenant, f)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// Ids compare byte by byte (COLLATE "C"), as SQLite's BINARY collation
	// does, whatever the database's locale: otherwise pages would follow
	// another order than SQLite's, and a cursor could skip rows.
	dir, cmp := "DESC", "<"
	if f.Oldest {
		dir, cmp = "ASC", ">"
	}
	if hasCur {
		n, id := arg(cur.N), arg(cur.S)
		where = append(where, `(created_at `+cmp+` `+n+` OR (created_at = `+n+` AND id COLLATE "C" `+cmp+` `+id+`))`)
	}
	limit := p.Clamp()
	rows, err := s.pool.Query(ctx, `SELECT `+sessionColumnsPG+` FROM sessions WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at `+dir+`, id COLLATE "C" `+dir+` LIMIT `+arg(limit+1), args...)
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

// CountSessions counts the sessions f selects, up to model.SessionCountMax.
func (s *Store) CountSessions(ctx context.Context, tenant string, f model.SessionFilter) (model.SessionCount, error) {
	where, args := sessionsWherePG(tenant, f)
	args = append(args, model.SessionCountMax+1)
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM sessions WHERE `+strings.Join(where, " AND ")+
		` LIMIT $`+strconv.Itoa(len(args))+`) x`, args...).Scan(&n)
	if err != nil {
		return model.SessionCount{}, mapErr(err)
	}
	return repo.CountOf(n), nil
}

// sessionsWherePG is the condition of a list of the tenant's sessions with
// f's filters, the cursor aside, and its arguments ($1 is the tenant).
func sessionsWherePG(tenant string, f model.SessionFilter) ([]string, []any) {
	var (
		where = []string{"tenant_id = $1"}
		args  = []any{tenant}
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Status != "" {
		where = append(where, "status = "+arg(string(f.Status)))
	}
	if f.AgentID != "" {
		where = append(where, "agent_id = "+arg(f.AgentID))
	}
	if f.UserID != "" {
		where = append(where, "user_id = "+arg(f.UserID))
	}
	for _, m := range f.Metadata {
		where = append(where, `EXISTS (SELECT 1 FROM json_each(sessions.metadata) j WHERE j.key = `+arg(m.Key)+
			` AND `+sessionMetaValuePG+` = `+arg(m.Value)+`)`)
	}
	if f.CreatedAfter != nil {
		where = append(where, "created_at > "+arg(int64(*f.CreatedAfter)))
	}
	if f.CreatedBefore != nil {
		where = append(where, "created_at < "+arg(int64(*f.CreatedBefore)))
	}
	if f.DueBefore != nil {
		where = append(where, "pause_until IS NOT NULL AND pause_until <= "+arg(int64(*f.DueBefore)))
	}
	if f.Title != "" {
		// A LIKE the trigram index answers, when the database has pg_trgm;
		// the planner weighs it against walking the list's own index.
		where = append(where, titleFoldedPG+" LIKE "+arg("%"+likeEscaper.Replace(model.FoldTitle(f.Title))+"%"))
	}
	where = append(where, "(expires_at IS NULL OR expires_at > "+arg(int64(model.Now()))+")")
	return where, args
}
