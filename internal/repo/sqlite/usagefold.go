package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// The usage rollups follow the messages by gid, as the search indexer does,
// and cost an append nothing (migration 00026): the folder adds to the
// rollups what was stored since it last looked, in a write of its own that
// rides in the writer's next group, and moves usage_state.folded past it in
// the same transaction. It runs in the writer because what removes messages
// (a rewind, a purge) runs there too: a fold and a removal never overlap, so
// a removal takes back exactly what was folded (takeBackUsage), and a crash
// loses neither half. Reads add the messages above folded (Usage), so a fold
// that lags changes what a read costs, never what it says.
//
// A fold covers at most usageFoldSpan gids, so the group it joins waits for
// a bounded amount of work; the folder looks at most every usageFoldEvery
// while appends go on, so that its statements (a scan of the new stretch of
// messages_by_gid and an upsert per rollup row touched) are shared by the
// appends of that time: at 10,000 appends a second, ~2,000 of them.
const (
	usageFoldSpan  = 4096
	usageFoldEvery = 200 * time.Millisecond
	usageFoldPoll  = time.Second // for messages another process stored
)

// runUsageFolder folds until stop is closed.
func (s *Store) runUsageFolder(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ctx := context.Background()
	poll := time.NewTimer(usageFoldPoll)
	defer poll.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.usageWake:
		case <-poll.C:
		}
		poll.Reset(usageFoldPoll)
		select { // let the appends of a while share the fold
		case <-stop:
			return
		case <-time.After(usageFoldEvery):
		}
		for {
			more, err := s.foldUsageOnce(ctx)
			if err != nil || !more {
				break // an error is retried at the next wake-up
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}
}

// foldUsageOnce folds the next stretch and says whether more is waiting.
func (s *Store) foldUsageOnce(ctx context.Context) (more bool, err error) {
	if s.committedGID.Load() <= s.usageFolded.Load() {
		return false, nil // nothing stored since: no write at all
	}
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

// foldUsage adds the messages with gid in (folded, folded+usageFoldSpan] to
// the rollups and moves folded past them, in the writer's transaction. It
// returns where folded stands and whether gids above it remain. Every gid up
// to s.gid is handed out already (the writer's alone), so nothing can come
// to stand below the new mark after it moved.
func (s *Store) foldUsage(ctx context.Context, tx *sql.Tx) (int64, bool, error) {
	var from int64
	if err := tx.StmtContext(ctx, s.st.usageFolded).QueryRowContext(ctx).Scan(&from); err != nil {
		return 0, false, err
	}
	upto := min(s.gid, from+usageFoldSpan)
	if upto <= from {
		return from, false, nil
	}
	rows, err := tx.StmtContext(ctx, s.st.usageStretch).QueryContext(ctx, from, upto)
	if err != nil {
		return 0, false, err
	}
	daily := map[usageKey]*usageSums{}
	sessions := map[sessionUsageKey]*usageSums{}
	var dailyOrder []usageKey
	var sessionOrder []sessionUsageKey
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
		d := daily[k]
		if d == nil {
			d = &usageSums{}
			daily[k] = d
			dailyOrder = append(dailyOrder, k)
		}
		d.add(n, tokens, cost)
		sk := sessionUsageKey{k.tenant, k.day, session}
		ss := sessions[sk]
		if ss == nil {
			ss = &usageSums{}
			sessions[sk] = ss
			sessionOrder = append(sessionOrder, sk)
		}
		ss.add(n, tokens, cost)
	}
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	for _, k := range dailyOrder {
		u := daily[k]
		if _, err := tx.StmtContext(ctx, s.st.addUsageDaily).ExecContext(ctx, k.tenant, k.day, k.agent, k.model,
			u.messages, u.tokens, u.cost); err != nil {
			return 0, false, err
		}
	}
	for _, k := range sessionOrder {
		u := sessions[k]
		if _, err := tx.StmtContext(ctx, s.st.addUsageSession).ExecContext(ctx, k.tenant, k.day, k.session,
			u.messages, u.tokens, u.cost); err != nil {
			return 0, false, err
		}
	}
	if _, err := tx.StmtContext(ctx, s.st.setUsageFolded).ExecContext(ctx, upto); err != nil {
		return 0, false, err
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
)
