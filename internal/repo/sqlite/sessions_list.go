package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// ListSessions returns one page of the tenant's sessions, newest first (or
// oldest first). A cursor from another filter is KindBadRequest
// (invalid_cursor).
//
// Each page is one range of an index: with a metadata filter, session_meta's
// rows for that key and value (the other filters checked on each session);
// with a title the trigram index finds few of, those sessions, sorted;
// otherwise sessions' own keyset indexes. Newest first, the cursor is the
// range's upper bound (repo.SessionRangeOf), so a deep page costs what the
// first does.
func (s *Store) ListSessions(ctx context.Context, tenant string, f model.SessionFilter, p repo.PageRequest) (model.Page[model.Session], error) {
	q := repo.Fingerprint("sessions", f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Session]{}, err
	}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.Page[model.Session]{}, mapErr(err)
	}
	defer tx.Rollback()
	few, err := titleFew(ctx, tx, tenant, f)
	if err != nil {
		return model.Page[model.Session]{}, err
	}
	limit := p.Clamp()
	query, args := listSessionsSQL(tenant, f, few, cur, hasCur, limit)
	rows, err := tx.QueryContext(ctx, query, args...)
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

// CountSessions counts the sessions f selects, up to model.SessionCountMax.
func (s *Store) CountSessions(ctx context.Context, tenant string, f model.SessionFilter) (model.SessionCount, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return model.SessionCount{}, mapErr(err)
	}
	defer tx.Rollback()
	from, where, args, err := sessionsWhere(ctx, tx, tenant, f)
	if err != nil {
		return model.SessionCount{}, err
	}
	var n int64
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+from+` WHERE `+strings.Join(where, " AND ")+` LIMIT ?)`,
		append(args, model.SessionCountMax+1)...).Scan(&n)
	if err != nil {
		return model.SessionCount{}, mapErr(err)
	}
	return repo.CountOf(n), nil
}

// sessionsWhere is what a list of the tenant's sessions with f's filters
// reads (sessions as s, joined to what drives the read) and its condition,
// the page's range aside, with their arguments in order.
func sessionsWhere(ctx context.Context, tx *sql.Tx, tenant string, f model.SessionFilter) (from string, where []string, args []any, err error) {
	few, err := titleFew(ctx, tx, tenant, f)
	if err != nil {
		return "", nil, nil, err
	}
	sel := selectSessions(tenant, f, few)
	where, args = sel.where, sel.args
	if f.CreatedAfter != nil {
		where, args = append(where, sel.created+" > ?"), append(args, int64(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		where, args = append(where, sel.created+" < ?"), append(args, int64(*f.CreatedBefore))
	}
	return sel.from, where, args, nil
}

// sessionSelect is a list's source and filters, its created range and
// cursor aside; created and id are the keyset's columns in from.
type sessionSelect struct {
	from, created, id string
	where             []string
	args              []any
}

// selectSessions reads the few sessions a title filter found (few, a JSON
// array of ids, when not nil), or session_meta's rows of an indexed metadata
// filter, or the sessions themselves.
func selectSessions(tenant string, f model.SessionFilter, few *string) sessionSelect {
	sel := sessionSelect{from: "sessions s", created: "s.created_at", id: "s.id"}
	rest := f.Metadata
	switch by, others, indexed := repo.IndexedMetadata(f.Metadata); {
	case few != nil:
		// CROSS JOIN keeps SQLite from walking the tenant's sessions in
		// the list's order to look each up among the few; the few are
		// sorted instead.
		sel.from = "(SELECT s.* FROM json_each(?) j CROSS JOIN sessions s ON s.tenant_id = ? AND s.id = j.value) AS s"
		sel.args = append(sel.args, *few, tenant)
		sel.where, sel.args = append(sel.where, "s.tenant_id = ?"), append(sel.args, tenant)
	case indexed:
		sel.from = "session_meta k CROSS JOIN sessions s ON s.tenant_id = k.tenant_id AND s.id = k.session_id"
		sel.created, sel.id = "k.created_at", "k.session_id"
		sel.where = append(sel.where, "k.tenant_id = ?", "k.key = ?", "k.value = ?")
		sel.args = append(sel.args, tenant, by.Key, by.Value)
		rest = others
	default:
		sel.where, sel.args = append(sel.where, "s.tenant_id = ?"), append(sel.args, tenant)
	}
	if f.Status != "" {
		sel.where, sel.args = append(sel.where, "s.status = ?"), append(sel.args, f.Status)
	}
	if f.AgentID != "" {
		sel.where, sel.args = append(sel.where, "s.agent_id = ?"), append(sel.args, f.AgentID)
	}
	if f.UserID != "" {
		sel.where, sel.args = append(sel.where, "s.user_id = ?"), append(sel.args, f.UserID)
	}
	for _, m := range rest {
		// json_each names keys literally, so a key with dots or quotes needs no
		// path escaping; the CASE renders values the way JSON writes them.
		sel.where = append(sel.where, `EXISTS (SELECT 1 FROM json_each(s.metadata) j WHERE j.key = ? AND
			CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null'
			ELSE CAST(j.value AS TEXT) END = ?)`)
		sel.args = append(sel.args, m.Key, m.Value)
	}
	if f.DueBefore != nil {
		sel.where, sel.args = append(sel.where, "s.pause_until IS NOT NULL AND s.pause_until <= ?"), append(sel.args, int64(*f.DueBefore))
	}
	if f.Title != "" {
		// SQLite's LIKE folds A–Z only, as model.FoldTitle does (and costs
		// a walk half what lower() and instr() do).
		sel.where, sel.args = append(sel.where, `s.title LIKE ? ESCAPE '\'`), append(sel.args, "%"+likeEscaper.Replace(f.Title)+"%")
	}
	sel.where, sel.args = append(sel.where, "(s.expires_at IS NULL OR s.expires_at > ?)"), append(sel.args, int64(model.Now()))
	return sel
}

// listSessionsSQL is ListSessions' statement for one page of limit+1 rows.
func listSessionsSQL(tenant string, f model.SessionFilter, few *string, cur repo.Cursor, hasCur bool, limit int) (string, []any) {
	sel := selectSessions(tenant, f, few)
	where, args := sel.where, sel.args
	dir := "DESC"
	if f.Oldest {
		// Oldest first, the cursor is a lower bound beside created_after.
		dir = "ASC"
		if f.CreatedAfter != nil {
			where, args = append(where, sel.created+" > ?"), append(args, int64(*f.CreatedAfter))
		}
		if f.CreatedBefore != nil {
			where, args = append(where, sel.created+" < ?"), append(args, int64(*f.CreatedBefore))
		}
		if hasCur {
			where, args = append(where, "("+sel.created+", "+sel.id+") > (?, ?)"), append(args, cur.N, cur.S)
		}
	} else {
		r := repo.SessionRangeOf(f, cur, hasCur)
		if r.After != nil {
			where, args = append(where, sel.created+" > ?"), append(args, *r.After)
		}
		if r.Before != nil {
			where, args = append(where, sel.created+" < ?"), append(args, *r.Before)
		}
		if r.Cursor != nil {
			where, args = append(where, "("+sel.created+", "+sel.id+") < (?, ?)"), append(args, r.Cursor.N, r.Cursor.S)
		}
	}
	args = append(args, limit+1)
	return `SELECT ` + sessionColumnsOf("s") + ` FROM ` + sel.from + ` WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY ` + sel.created + ` ` + dir + `, ` + sel.id + ` ` + dir + ` LIMIT ?`, args
}

// sessionColumnsOf is sessionColumns, each named through the table alias a.
func sessionColumnsOf(a string) string {
	cols := strings.Split(sessionColumns, ",")
	for i, c := range cols {
		cols[i] = a + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// titleFew is titleCandidates for f's title, when it has one and the index
// finds few: nil otherwise.
func titleFew(ctx context.Context, tx *sql.Tx, tenant string, f model.SessionFilter) (*string, error) {
	if f.Title == "" {
		return nil, nil
	}
	ids, few, err := titleCandidates(ctx, tx, tenant, f.Title)
	if err != nil || !few {
		return nil, err
	}
	return &ids, nil
}

// likeEscaper makes a text a LIKE pattern's literal part.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// titleDriveMax is how many titles, of every tenant, the trigram index may
// find for a list to read just those sessions.
var titleDriveMax = 2000 // a variable for the tests, which compare both ways

// titleCandidates answers the ids (a JSON array) of the tenant's sessions
// whose titles the trigram index says may contain text, when that index
// finds at most titleDriveMax titles: the list then reads those sessions and
// sorts them. Otherwise (few is false) the list walks the tenant's sessions
// in its order and tests each title, which suits a text that is short (the
// index needs three characters) or common: matches are then dense enough
// that a page fills soon. The index folds case as widely as FTS5 does, at
// least as widely as model.FoldTitle, so the ids it finds hold every match;
// the list's own test then keeps the real ones.
func titleCandidates(ctx context.Context, tx *sql.Tx, tenant, text string) (ids string, few bool, err error) {
	if utf8.RuneCountInString(text) < 3 {
		return "", false, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT t.tenant_id, t.id FROM session_titles t WHERE t.n IN
		(SELECT rowid FROM session_titles_fts WHERE session_titles_fts MATCH ? LIMIT ?)`,
		`"`+strings.ReplaceAll(text, `"`, `""`)+`"`, titleDriveMax+1)
	if err != nil {
		return "", false, mapErr(err)
	}
	defer rows.Close()
	var mine []string
	n := 0
	for rows.Next() {
		var t, id string
		if err := rows.Scan(&t, &id); err != nil {
			return "", false, mapErr(err)
		}
		if n++; t == tenant {
			mine = append(mine, id)
		}
	}
	if err := rows.Err(); err != nil {
		return "", false, mapErr(err)
	}
	if n > titleDriveMax {
		return "", false, nil
	}
	b, err := json.Marshal(append([]string{}, mine...))
	return string(b), err == nil, err
}
