package repo

import (
	"context"
	"database/sql"
	"fmt"
	"math"

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

// maxForkDepth bounds the walk up a chain of forks.
const maxForkDepth = 64

// lineage returns where sessionID's messages are stored, in ascending seq order.
// A session that is not a fork is one segment, itself. Errors: KindNotFound.
func lineage(ctx context.Context, q querier, tenant, sessionID string) ([]segment, error) {
	var segs []segment
	id, hi := sessionID, int64(math.MaxInt64)
	for depth := 0; ; depth++ {
		var (
			parent   sql.NullString
			forkedAt sql.NullInt64
			shared   bool
		)
		err := q.QueryRowContext(ctx, `SELECT parent_id, forked_at_seq, prefix_shared FROM sessions WHERE tenant_id = ? AND id = ?`,
			tenant, id).Scan(&parent, &forkedAt, &shared)
		if err == sql.ErrNoRows {
			if depth == 0 {
				return nil, model.NotFound("session", sessionID)
			}
			return nil, model.Internal(fmt.Errorf("session %s: ancestor %s is missing", sessionID, id))
		}
		if err != nil {
			return nil, err
		}
		if !shared || !parent.Valid || depth == maxForkDepth {
			segs = append(segs, segment{owner: id, lo: 0, hi: hi})
			break
		}
		if at := forkedAt.Int64; at < hi {
			segs = append(segs, segment{owner: id, lo: at, hi: hi})
			hi = at
		}
		id = parent.String
	}
	for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
		segs[i], segs[j] = segs[j], segs[i]
	}
	return segs, nil
}

// messageAt returns the stored message with this seq in a lineage, or ok false.
func messageAt(ctx context.Context, q querier, tenant string, segs []segment, seq int64) (m model.Message, cumTokens int64, cumCost float64, ok bool, err error) {
	for _, g := range segs {
		if !g.contains(seq) {
			continue
		}
		m, err = scanMessage(q.QueryRowContext(ctx, `SELECT `+messageColumns+`, cum_tokens, cum_cost FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq = ?`, tenant, g.owner, seq), &cumTokens, &cumCost)
		if err == sql.ErrNoRows {
			return m, 0, 0, false, nil
		}
		return m, cumTokens, cumCost, err == nil, err
	}
	return m, 0, 0, false, nil
}
