package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/logbook/logbook/internal/model"
)

// segment is a run of a session's history as stored: the messages of owner with
// seq in (lo, hi]. A fork's history is its parent's first forked_at_seq messages
// (shared, not copied) followed by its own.
type segment struct {
	owner  string
	lo, hi int64
}

func (g segment) contains(seq int64) bool { return seq > g.lo && seq <= g.hi }

// lineage returns where sessionID's messages are stored, in ascending seq order,
// one segment per session that stores part of it. One recursive query follows
// parent_id for as long as each session shares its prefix, however deep the
// chain of forks: a cap would silently cut the history short (an earlier build
// stopped at 64 ancestors). Its only guard is against a cycle, which no API call
// can make. Errors: KindNotFound.
func lineage(ctx context.Context, q querier, tenant, sessionID string) ([]segment, error) {
	segs, _, err := lineageWalk(ctx, q, tenant, sessionID)
	return segs, err
}

// lineageSQL walks up a chain of forks for as long as each session shares its
// parent's prefix.
// The first row carries the session's own expires_at (the ancestors' do not
// matter: a fork reads its inherited prefix whether or not its parent expired).
const lineageSQL = `WITH RECURSIVE chain(id, parent_id, forked_at_seq, shared, depth, expires_at) AS (
		SELECT id, parent_id, forked_at_seq, prefix_shared, 0, expires_at FROM sessions WHERE tenant_id = ?1 AND id = ?2
		UNION ALL
		SELECT s.id, s.parent_id, s.forked_at_seq, s.prefix_shared, c.depth + 1, NULL
		FROM chain c JOIN sessions s ON s.tenant_id = ?1 AND s.id = c.parent_id
		WHERE c.shared = 1 AND c.depth < 1000000)
	SELECT id, parent_id, forked_at_seq, shared, expires_at FROM chain ORDER BY depth`

// readLineage is lineage on the read pool, through its prepared statement, and
// remembered: a session's lineage changes only when a purge hands a fork its
// prefix, which moves lineageEpoch on (as does a change of expires_at, which
// the entry keeps). A session past its expires_at is KindNotFound, as
// getSession has it: its sub-resources are hidden with it.
func (s *Store) readLineage(ctx context.Context, tenant, sessionID string) ([]segment, error) {
	epoch := s.lineages.epoch.Load() // before the read: a later change makes this entry stale
	e, ok := s.lineages.get(tenant, sessionID, epoch)
	if !ok {
		rows, err := s.rst.lineage.QueryContext(ctx, tenant, sessionID)
		if err != nil {
			return nil, err
		}
		segs, _, expiresAt, err := segmentsOf(rows, sessionID)
		if err != nil {
			return nil, err
		}
		e = cachedLineage{epoch: epoch, segs: segs, expiresAt: expiresAt}
		s.lineages.put(tenant, sessionID, e)
	}
	if e.expiresAt.Valid && e.expiresAt.Int64 <= int64(model.Now()) {
		return nil, model.NotFound("session", sessionID)
	}
	return e.segs, nil
}

// lineageCache remembers sessions' lineages for reads. epoch moves on after any
// commit that may change a lineage (a purge, or another process's write), so an
// entry read before it is never used after it.
type lineageCache struct {
	epoch atomic.Int64
	mu    sync.RWMutex
	m     map[sessionKey]cachedLineage
}

type cachedLineage struct {
	epoch     int64
	segs      []segment
	expiresAt sql.NullInt64 // the session's own
}

// maxCachedLineages bounds the cache; past it, it starts again empty.
const maxCachedLineages = 16384

func (c *lineageCache) get(tenant, id string, epoch int64) (cachedLineage, bool) {
	c.mu.RLock()
	e, ok := c.m[sessionKey{tenant, id}]
	c.mu.RUnlock()
	if !ok || e.epoch != epoch {
		return cachedLineage{}, false
	}
	return e, true
}

func (c *lineageCache) put(tenant, id string, e cachedLineage) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedLineages {
		c.m = map[sessionKey]cachedLineage{}
	}
	c.m[sessionKey{tenant, id}] = e
	c.mu.Unlock()
}

// lineageWalk is lineage, also saying how many sessions the walk read.
func lineageWalk(ctx context.Context, q querier, tenant, sessionID string) ([]segment, int, error) {
	rows, err := q.QueryContext(ctx, lineageSQL, tenant, sessionID)
	if err != nil {
		return nil, 0, err
	}
	segs, n, _, err := segmentsOf(rows, sessionID)
	return segs, n, err
}

// segmentsOf reads the walk's rows, nearest session first, into segments in
// ascending seq order, with the session's own expires_at.
func segmentsOf(rows *sql.Rows, sessionID string) (segs []segment, n int, expiresAt sql.NullInt64, err error) {
	defer rows.Close()
	var (
		hi   = int64(math.MaxInt64)
		done bool
	)
	for rows.Next() {
		var (
			id       string
			parent   sql.NullString
			forkedAt sql.NullInt64
			shared   bool
			exp      sql.NullInt64
		)
		if err := rows.Scan(&id, &parent, &forkedAt, &shared, &exp); err != nil {
			return nil, 0, expiresAt, err
		}
		if n == 0 {
			expiresAt = exp
		}
		n++
		if !shared || !parent.Valid {
			segs = append(segs, segment{owner: id, lo: 0, hi: hi})
			done = true
			break
		}
		if at := forkedAt.Int64; at < hi {
			segs = append(segs, segment{owner: id, lo: at, hi: hi})
			hi = at
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, expiresAt, err
	}
	switch {
	case n == 0:
		return nil, 0, expiresAt, model.NotFound("session", sessionID)
	case !done:
		return nil, 0, expiresAt, model.Internal(fmt.Errorf("session %s: an ancestor is missing", sessionID))
	}
	slices.Reverse(segs)
	return segs, n, expiresAt, nil
}

// runningTotals are a session's counters at one seq, as its row there stores
// them.
type runningTotals struct {
	tokens, turns int64
	cost          float64
}

// messageAt returns the stored message with this seq in a lineage, with the
// running totals up to it, or ok false.
func messageAt(ctx context.Context, q querier, tenant string, segs []segment, seq int64) (m model.Message, t runningTotals, ok bool, err error) {
	for _, g := range segs {
		if !g.contains(seq) {
			continue
		}
		m, err = scanMessage(q.QueryRowContext(ctx, `SELECT `+messageColumns+`, cum_tokens, cum_cost, cum_turns FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq = ?`, tenant, g.owner, seq),
			counterInt{&t.tokens}, counterFloat{&t.cost}, &t.turns)
		if err == sql.ErrNoRows {
			return m, runningTotals{}, false, nil
		}
		return m, t, err == nil, err
	}
	return m, runningTotals{}, false, nil
}
