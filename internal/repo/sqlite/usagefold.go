package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// The usage rollups follow the messages by gid, as the search indexer does,
// and cost an append nothing (migration 00031): between two groups, at most
// every usageFoldEvery while appends go on, the writer adds to the rollups
// what was stored since it last looked, in a transaction of its own, and
// moves usage_state.folded past it in the same transaction. It is the writer
// that folds because what removes messages (a rewind, a purge) runs there
// too: a fold and a removal never overlap, so a removal takes back exactly
// what was folded (takeBackUsage), and a crash loses neither half. Reads add
// the messages above folded (Usage), so a fold that lags changes what a read
// costs, never what it says. A fold is no request's: it draws no injected
// fault, and a test that replays a seed sees the same faults whenever the
// writer folds.
//
// The appends of a while share a fold: its statements (an upsert per rollup
// row touched, from the sums usageAcc keeps as appends are flushed, or a
// scan of at most usageFoldSpan gids of messages_by_gid when those do not
// cover the stretch) cost the appends of 200 ms, ~2,000 of them at 10,000 a
// second, one commit.
const (
	usageFoldSpan  = 4096
	usageFoldEvery = 200 * time.Millisecond
)

// foldDue reports whether the writer should fold now: something was stored
// since the mark, and the last fold is usageFoldEvery old.
func (s *Store) foldDue(now time.Time) bool {
	return s.foldsOn && s.gid > s.usageFolded.Load() && now.Sub(s.lastFold) >= usageFoldEvery
}

// foldNow runs one fold in a transaction of its own, on the writer's
// goroutine between groups, and says whether more waits. A failure (a full
// disk) is left for the next fold: the tail keeps the reads exact meanwhile.
func (s *Store) foldNow() (more bool) {
	s.lastFold = time.Now()
	ctx := writerCtx
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false
	}
	var folded int64
	if err = s.noticeOtherWriters(ctx, tx); err == nil {
		folded, more, err = s.foldUsage(ctx, tx)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		_ = tx.Rollback()
		s.usage.invalidate()
		return false
	}
	s.usageFolded.Store(folded)
	return more
}

// foldUsageOnce folds the next stretch through the writer's queue, as a
// write among the others, and says whether more is waiting (tests, which
// fold when they choose).
func (s *Store) foldUsageOnce(ctx context.Context) (more bool, err error) {
	var folded int64
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var ferr error
		folded, more, ferr = s.foldUsage(ctx, tx)
		return ferr
	})
	if err != nil {
		return false, err
	}
	s.usageFolded.Store(folded)
	return more, nil
}

// usageKey is one row of usage_daily; sessionUsageKey one of usage_sessions.
type (
	usageKey struct {
		tenant       string
		day          int64
		agent, model string
	}
	sessionUsageKey struct {
		tenant  string
		day     int64
		session string
	}
	usageSums struct {
		messages, tokens int64
		cost             float64
	}
)

func (u *usageSums) add(n, tokens int64, cost float64) {
	u.messages, u.tokens, u.cost = u.messages+n, u.tokens+tokens, u.cost+cost
}

// usageSet is sums by both rollups' keys, in the order first added.
type usageSet struct {
	daily        map[usageKey]*usageSums
	sessions     map[sessionUsageKey]*usageSums
	dailyOrder   []usageKey
	sessionOrder []sessionUsageKey
	messages     int64
}

func (u *usageSet) reset() {
	u.daily, u.sessions = map[usageKey]*usageSums{}, map[sessionUsageKey]*usageSums{}
	u.dailyOrder, u.sessionOrder, u.messages = u.dailyOrder[:0], u.sessionOrder[:0], 0
}

func (u *usageSet) add(k usageKey, session string, n, tokens int64, cost float64) {
	d := u.daily[k]
	if d == nil {
		d = &usageSums{}
		u.daily[k] = d
		u.dailyOrder = append(u.dailyOrder, k)
	}
	d.add(n, tokens, cost)
	sk := sessionUsageKey{k.tenant, k.day, session}
	ss := u.sessions[sk]
	if ss == nil {
		ss = &usageSums{}
		u.sessions[sk] = ss
		u.sessionOrder = append(u.sessionOrder, sk)
	}
	ss.add(n, tokens, cost)
	u.messages += n
}

// write adds the sums to the rollups, through the writer's statements.
func (u *usageSet) write(ctx context.Context, tx *sql.Tx, st *writerStatements) error {
	for _, k := range u.dailyOrder {
		d := u.daily[k]
		if _, err := tx.StmtContext(ctx, st.addUsageDaily).ExecContext(ctx, k.tenant, k.day, k.agent, k.model,
			d.messages, d.tokens, d.cost); err != nil {
			return err
		}
	}
	for _, k := range u.sessionOrder {
		d := u.sessions[k]
		if _, err := tx.StmtContext(ctx, st.addUsageSession).ExecContext(ctx, k.tenant, k.day, k.session,
			d.messages, d.tokens, d.cost); err != nil {
			return err
		}
	}
	return nil
}

// usageAcc is the usage of the messages the writer's appends stored since
// gid from, summed as the appends are flushed, so that a fold reads nothing
// back in the common case: while valid, it holds every message with a gid
// above from, and nothing else. Whatever else stores or removes messages (a
// rewind, a purge, an import, a fork's copies, another process's writes, a
// group rolled back) makes it invalid; the next fold reads its stretch back
// from the table and starts the sums again from the last gid, and folds read
// back until the mark reaches them.
// A fold also counts the stretch's rows on messages_by_gid before it trusts
// the sums: a path that stored or removed messages without saying so is
// caught there, not in the rollups. The writer's alone.
type usageAcc struct {
	usageSet
	valid bool
	from  int64
}

// restart makes the sums empty and valid from the mark folded, which every
// gid handed out so far is at or below.
func (a *usageAcc) restart(folded int64) {
	a.reset()
	a.valid, a.from = true, folded
}

func (a *usageAcc) invalidate() { a.valid = false }

// add sums one stored message (of a session st the writer knows).
func (a *usageAcc) add(tenant, session string, m *model.Message, st *sessionState) {
	k := usageKey{tenant: tenant, day: int64(m.CreatedAt) / 86_400_000}
	switch {
	case m.AgentID != nil:
		k.agent = *m.AgentID
	case st != nil && st.agent.Valid:
		k.agent = st.agent.String
	}
	if m.Model != nil {
		k.model = *m.Model
	}
	a.usageSet.add(k, session, 1, m.Tokens, m.Cost)
}

// foldUsage adds the messages above the folder's mark to the rollups and
// moves the mark, in the writer's transaction: from the appends' sums when
// they cover the whole stretch, else at most usageFoldSpan gids read back
// from the table. It returns where the mark stands and whether gids above it
// remain. Every gid up to s.gid is handed out already (the writer's alone),
// so nothing can come to stand below the new mark after it moved.
func (s *Store) foldUsage(ctx context.Context, tx *sql.Tx) (int64, bool, error) {
	var from int64
	if err := tx.StmtContext(ctx, s.st.usageFolded).QueryRowContext(ctx).Scan(&from); err != nil {
		return 0, false, err
	}
	if from >= s.gid {
		s.usage.restart(from)
		return from, false, nil
	}
	if s.usage.valid && s.usage.from < from {
		s.usage.invalidate() // behind the mark: cannot be, but a stale sum must never be written
	}
	if s.usage.valid && s.usage.from == from {
		var stored int64
		if err := tx.StmtContext(ctx, s.st.usageCount).QueryRowContext(ctx, from, s.gid).Scan(&stored); err != nil {
			return 0, false, err
		}
		if stored == s.usage.messages {
			if err := s.usage.write(ctx, tx, &s.st); err != nil {
				return 0, false, err
			}
			if _, err := tx.StmtContext(ctx, s.st.setUsageFolded).ExecContext(ctx, s.gid); err != nil {
				return 0, false, err
			}
			s.usage.restart(s.gid)
			return s.gid, false, nil
		}
		s.usage.invalidate() // something stored or removed messages without saying so
	}
	// Read back from the table: up to where the appends' sums start, if they
	// are summing.
	upto := min(s.gid, from+usageFoldSpan)
	if s.usage.valid && s.usage.from > from {
		upto = min(upto, s.usage.from)
	}
	rows, err := tx.StmtContext(ctx, s.st.usageStretch).QueryContext(ctx, from, upto)
	if err != nil {
		return 0, false, err
	}
	var set usageSet
	set.reset()
	for rows.Next() {
		var (
			k         usageKey
			session   string
			n, tokens int64
			cost      float64
		)
		if err := rows.Scan(&k.tenant, &k.day, &k.agent, &k.model, &session, &n, &tokens, &cost); err != nil {
			rows.Close()
			return 0, false, err
		}
		set.add(k, session, n, tokens, cost)
	}
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	if err := set.write(ctx, tx, &s.st); err != nil {
		return 0, false, err
	}
	if _, err := tx.StmtContext(ctx, s.st.setUsageFolded).ExecContext(ctx, upto); err != nil {
		return 0, false, err
	}
	if !s.usage.valid {
		// The appends' sums start again from here; the table serves until
		// the mark reaches them.
		s.usage.restart(s.gid)
	}
	return upto, upto < s.gid, nil
}

// The folder's statements (prepared with the writer's: writerStatements).
const (
	usageFoldedSQL = `SELECT folded FROM usage_state WHERE one = 1`
	// A stretch of messages by gid, summed by everything either rollup is
	// keyed by: the agent is the message's, else its session's.
	usageStretchSQL = `SELECT m.tenant_id, m.created_at / 86400000, COALESCE(m.agent_id, s.agent_id, ''),
			COALESCE(m.model, ''), m.session_id, COUNT(*), SUM(m.tokens), SUM(m.cost)
		FROM messages m INDEXED BY messages_by_gid JOIN sessions s ON s.tenant_id = m.tenant_id AND s.id = m.session_id
		WHERE m.gid > ? AND m.gid <= ?
		GROUP BY 1, 2, 3, 4, 5`
	addUsageDailySQL = `INSERT INTO usage_daily (tenant_id, day, agent_id, model, messages, tokens, cost)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, day, agent_id, model) DO UPDATE SET messages = messages + excluded.messages,
			tokens = tokens + excluded.tokens, cost = cost + excluded.cost`
	addUsageSessionSQL = `INSERT INTO usage_sessions (tenant_id, day, session_id, messages, tokens, cost)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (tenant_id, day, session_id) DO UPDATE SET messages = messages + excluded.messages,
			tokens = tokens + excluded.tokens, cost = cost + excluded.cost`
	setUsageFoldedSQL = `UPDATE usage_state SET folded = ? WHERE one = 1`
	// The messages stored in a stretch, counted on the index alone.
	usageCountSQL = `SELECT COUNT(*) FROM messages INDEXED BY messages_by_gid WHERE gid > ? AND gid <= ?`
)
