package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// titleFoldedPG is a session's title (of sessions as s) as model.FoldTitle folds it, whatever
// the database's locale: the expression of the trigram index
// sessions_by_title (migration 00022), which a query must spell the same
// way to use it.
const titleFoldedPG = `translate(s.title, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`

// likeEscaper makes a text a LIKE pattern's literal part (backslash is
// LIKE's default escape).
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// ListSessions returns one page of the tenant's sessions, newest first (or
// oldest first). A cursor from another filter is KindBadRequest
// (invalid_cursor).
//
// Each page is one range of an index, as on SQLite: with a metadata filter,
// session_meta's rows of that key and value; otherwise sessions' keyset
// indexes (or the title's trigram index, as the planner weighs it). Ids
// compare byte by byte (COLLATE "C", as the indexes are made), as SQLite's
// BINARY collation does, whatever the database's locale: otherwise pages
// would follow another order than SQLite's, and a cursor could skip rows.
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

// CountSessions counts the sessions f selects, up to model.SessionCountMax.
func (s *Store) CountSessions(ctx context.Context, tenant string, f model.SessionFilter) (model.SessionCount, error) {
	sel := selectSessionsPG(tenant, f)
	where := sel.where
	if f.CreatedAfter != nil {
		where = append(where, sel.created+" > "+sel.arg(int64(*f.CreatedAfter)))
	}
	if f.CreatedBefore != nil {
		where = append(where, sel.created+" < "+sel.arg(int64(*f.CreatedBefore)))
	}
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+sel.from+` WHERE `+strings.Join(where, " AND ")+
		` LIMIT `+sel.arg(model.SessionCountMax+1)+`) x`, sel.args...).Scan(&n)
	if err != nil {
		return model.SessionCount{}, mapErr(err)
	}
	return repo.CountOf(n), nil
}

// sessionSelectPG is a list's source and filters, its created range and
// cursor aside; created and id are the keyset's columns in from.
type sessionSelectPG struct {
	from, created, id string
	where             []string
	args              []any
}

// arg adds an argument and names its placeholder.
func (sel *sessionSelectPG) arg(v any) string {
	sel.args = append(sel.args, v)
	return "$" + strconv.Itoa(len(sel.args))
}

// selectSessionsPG reads session_meta's rows of an indexed metadata filter,
// or the sessions themselves.
func selectSessionsPG(tenant string, f model.SessionFilter) *sessionSelectPG {
	sel := &sessionSelectPG{from: "sessions s", created: "s.created_at", id: `s.id COLLATE "C"`}
	by, rest, indexed := repo.IndexedMetadata(f.Metadata)
	if indexed {
		// session_meta.session_id is of collation "C"; sessions.id of the
		// database's, which its primary key is made in.
		sel.from = `session_meta k JOIN sessions s ON s.tenant_id = k.tenant_id AND s.id = (k.session_id COLLATE "default")`
		sel.created, sel.id = "k.created_at", "k.session_id"
		sel.where = append(sel.where, "k.tenant_id = "+sel.arg(tenant), "k.key = "+sel.arg(by.Key), "k.value = "+sel.arg(by.Value))
	} else {
		sel.where = append(sel.where, "s.tenant_id = "+sel.arg(tenant))
	}
	if f.Status != "" {
		sel.where = append(sel.where, "s.status = "+sel.arg(string(f.Status)))
	}
	if f.AgentID != "" {
		sel.where = append(sel.where, "s.agent_id = "+sel.arg(f.AgentID))
	}
	if f.UserID != "" {
		sel.where = append(sel.where, "s.user_id = "+sel.arg(f.UserID))
	}
	for _, m := range rest {
		sel.where = append(sel.where, `EXISTS (SELECT 1 FROM json_each(s.metadata) j WHERE j.key = `+sel.arg(m.Key)+
			` AND session_meta_text(j.value) = `+sel.arg(m.Value)+`)`)
	}
	if f.DueBefore != nil {
		sel.where = append(sel.where, "s.pause_until IS NOT NULL AND s.pause_until <= "+sel.arg(int64(*f.DueBefore)))
	}
	if f.Title != "" {
		// A LIKE the trigram index answers, when the database has pg_trgm;
		// the planner weighs it against walking the list's own index.
		sel.where = append(sel.where, titleFoldedPG+" LIKE "+sel.arg("%"+likeEscaper.Replace(model.FoldTitle(f.Title))+"%"))
	}
	sel.where = append(sel.where, "(s.expires_at IS NULL OR s.expires_at > "+sel.arg(int64(model.Now()))+")")
	return sel
}

// listSessionsSQL is ListSessions' statement for one page of limit+1 rows.
func listSessionsSQL(tenant string, f model.SessionFilter, cur repo.Cursor, hasCur bool, limit int) (string, []any) {
	sel := selectSessionsPG(tenant, f)
	where := sel.where
	dir := "DESC"
	if f.Oldest {
		// Oldest first, the cursor is a lower bound beside created_after.
		dir = "ASC"
		if f.CreatedAfter != nil {
			where = append(where, sel.created+" > "+sel.arg(int64(*f.CreatedAfter)))
		}
		if f.CreatedBefore != nil {
			where = append(where, sel.created+" < "+sel.arg(int64(*f.CreatedBefore)))
		}
		if hasCur {
			where = append(where, "("+sel.created+", "+sel.id+") > ("+sel.arg(cur.N)+", "+sel.arg(cur.S)+")")
		}
	} else {
		r := repo.SessionRangeOf(f, cur, hasCur)
		if r.After != nil {
			where = append(where, sel.created+" > "+sel.arg(*r.After))
		}
		if r.Before != nil {
			where = append(where, sel.created+" < "+sel.arg(*r.Before))
		}
		if r.Cursor != nil {
			where = append(where, "("+sel.created+", "+sel.id+") < ("+sel.arg(r.Cursor.N)+", "+sel.arg(r.Cursor.S)+")")
		}
	}
	cols := strings.Split(sessionColumnsPG, ",")
	for i, c := range cols {
		cols[i] = "s." + strings.TrimSpace(c)
	}
	return `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + sel.from + ` WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY ` + sel.created + ` ` + dir + `, ` + sel.id + ` ` + dir + ` LIMIT ` + sel.arg(limit+1), sel.args
}
