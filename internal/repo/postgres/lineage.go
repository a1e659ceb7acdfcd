package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
)

// lineageSegment is a run of a session's history stored under another
// session's id: a fork shares its parent's messages up to forked_at_seq
// instead of copying them. seq in (lo, hi] of owner.
type lineageSegment struct {
	owner  string
	lo, hi int64
}

// lineageQuerier is what both the pool and a transaction offer.
type lineageQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// lineageChainPG follows parent_id for as long as each session shares its
// prefix, however deep the chain of forks (the same walk as SQLite's): $1 is
// the tenant, $2 the session. The first row carries the session's own
// expires_at; the ancestors' do not matter (a fork reads its inherited
// prefix whether or not its parent expired).
const lineageChainPG = `WITH RECURSIVE chain(id, parent_id, forked_at_seq, shared, depth, expires_at) AS (
		SELECT id, parent_id, forked_at_seq, prefix_shared, 0, expires_at FROM sessions WHERE tenant_id = $1 AND id = $2
		UNION ALL
		SELECT s.id, s.parent_id, s.forked_at_seq, s.prefix_shared, c.depth + 1, NULL::bigint
		FROM chain c JOIN sessions s ON s.tenant_id = $1 AND s.id = c.parent_id
		WHERE c.shared = 1 AND c.depth < 1000000)`

const lineageQueryPG = lineageChainPG + `
	SELECT id, parent_id, forked_at_seq, shared, expires_at FROM chain ORDER BY depth`

// lineageSegmentsPG is lineagePG's segments as SQL (owner, lo, hi), for a
// query that must read through them in the same statement: a link's hi is the
// lowest fork point below it, and a link whose range that leaves empty
// (lo >= hi) matches no row, as lineagePG skips it.
const lineageSegmentsPG = lineageChainPG + `,
	segments(owner, lo, hi) AS (
		SELECT id, CASE WHEN shared = 1 AND parent_id IS NOT NULL THEN forked_at_seq ELSE 0 END,
			COALESCE(min(forked_at_seq) OVER (ORDER BY depth ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
				9223372036854775807)
		FROM chain)`

// lineagePG returns where sessionID's messages are stored, in ascending seq
// order, one segment per session that stores part of it. Errors: KindNotFound.
func lineagePG(ctx context.Context, q lineageQuerier, tenant, sessionID string) ([]lineageSegment, error) {
	segs, _, err := lineageWalkPG(ctx, q, tenant, sessionID)
	return segs, err
}

// readLineagePG is lineagePG for a read of the session's own resources: a
// session past its expires_at is KindNotFound, as getSessionTx has it, so
// that its messages are hidden with it.
func readLineagePG(ctx context.Context, q lineageQuerier, tenant, sessionID string) ([]lineageSegment, error) {
	segs, expiresAt, err := lineageWalkPG(ctx, q, tenant, sessionID)
	if err == nil && expiresAt != nil && *expiresAt <= int64(model.Now()) {
		return nil, model.NotFound("session", sessionID)
	}
	return segs, err
}

// lineageWalkPG is lineagePG, also returning the session's own expires_at.
func lineageWalkPG(ctx context.Context, q lineageQuerier, tenant, sessionID string) (segs []lineageSegment, expiresAt *int64, err error) {
	rows, err := q.Query(ctx, lineageQueryPG, tenant, sessionID)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var (
		hi   = int64(math.MaxInt64)
		done bool
		n    int
	)
	for rows.Next() {
		var (
			id       string
			parent   *string
			forkedAt *int64
			shared   int
			exp      *int64
		)
		if err := rows.Scan(&id, &parent, &forkedAt, &shared, &exp); err != nil {
			return nil, nil, err
		}
		if n == 0 {
			expiresAt = exp
		}
		n++
		if shared == 0 || parent == nil {
			segs = append(segs, lineageSegment{owner: id, lo: 0, hi: hi})
			done = true
			break
		}
		if at := *forkedAt; at < hi {
			segs = append(segs, lineageSegment{owner: id, lo: at, hi: hi})
			hi = at
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	switch {
	case n == 0:
		return nil, nil, model.NotFound("session", sessionID)
	case !done:
		return nil, nil, model.Internal(fmt.Errorf("session %s: an ancestor is missing", sessionID))
	}
	slices.Reverse(segs)
	return segs, expiresAt, nil
}
