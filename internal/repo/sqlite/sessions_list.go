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
	from, where, args, err := sessionsWhere(ctx, tx, tenant, f)
	if err != nil {
		return model.Page[model.Session]{}, err
	}
	dir, cmp := "DESC", "<"
	if f.Oldest {
		dir, cmp = "ASC", ">"
	}
	if hasCur {
		where = append(where, "(created_at, id) "+cmp+" (?, ?)")
		args = append(args, cur.N, cur.S)
	}
	limit := p.Clamp()
	args = append(args, limit+1)
	rows, err := tx.QueryContext(ctx, `SELECT `+sessionColumns+` FROM `+from+` WHERE `+
		strings.Join(where, " AND ")+` ORDER BY created_at `+dir+`, id `+dir+` LIMIT ?`, args...)
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
// reads (the sessions table, or those of them a title filter found) and its
// condition, the cursor aside, with their arguments in order.
func sessionsWhere(ctx context.Context, tx *sql.Tx, tenant string, f model.SessionFilter) (from string, where []string, args []any, err error) {
	from = "sessions"
	if f.Title != "" {
		ids, few, err := titleCandidates(ctx, tx, tenant, f.Title)
		if err != nil {
			return "", nil, nil, err
		}
		if few {
			// CROSS JOIN keeps SQLite from walking the tenant's sessions in
			// the list's order to look each up among the few; the few are
			// sorted instead.
			from = "(SELECT s.* FROM json_each(?) j CROSS JOIN sessions s ON s.tenant_id = ? AND s.id = j.value) AS sessions"
			args = append(args, ids, tenant)
		}
	}
	where = append(where, "tenant_id = ?")
	args = append(args, tenant)
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, f.Status)
	}
	if f.AgentID != "" {
		where = append(where, "agent_id = ?")
		args = append(args, f.AgentID)
	}
	if f.UserID != "" {
		where = append(where, "user_id = ?")
		args = append(args, f.UserID)
	}
	for _, m := range f.Metadata {
		// json_each names keys literally, so a key with dots or quotes needs no
		// path escaping; the CASE renders values the way JSON writes them.
		where = append(where, `EXISTS (SELECT 1 FROM json_each(sessions.metadata) j WHERE j.key = ? AND
			CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null'
			ELSE CAST(j.value AS TEXT) END = ?)`)
		args = append(args, m.Key, m.Value)
	}
	if f.CreatedAfter != nil {
		where = append(where, "created_at > ?")
		args = append(args, int64(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		where = append(where, "created_at < ?")
		args = append(args, int64(*f.CreatedBefore))
	}
	if f.DueBefore != nil {
		where = append(where, "pause_until IS NOT NULL AND pause_until <= ?")
		args = append(args, int64(*f.DueBefore))
	}
	if f.Title != "" {
		// SQLite's LIKE folds A–Z only, as model.FoldTitle does (and costs
		// a walk half what lower() and instr() do).
		where = append(where, `title LIKE ? ESCAPE '\'`)
		args = append(args, "%"+likeEscaper.Replace(f.Title)+"%")
	}
	where = append(where, "(expires_at IS NULL OR expires_at > ?)")
	args = append(args, int64(model.Now()))
	return from, where, args, nil
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
