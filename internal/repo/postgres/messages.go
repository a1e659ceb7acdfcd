package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// messageColumnsPG are read in msgScanRowPG's order, as SQLite's messageColumns.
const messageColumnsPG = `session_id, seq, id, role, content, name, tool_calls, tool_call_id,
	agent_id, model, tokens, cost, metadata, created_at, parts, is_error, provider_item, client_id`

// msgScanRowPG holds Scan's destinations for messageColumnsPG (and any extra
// columns after them), made once for all the rows of a query.
type msgScanRowPG struct {
	m                                       model.Message
	role, meta, content                     string
	name, toolCalls, toolCallID, agent, mdl *string
	parts, providerItem, clientID           *string
	created, isError                        int64
	dest                                    []any
}

func newMsgScanRowPG(extra ...any) *msgScanRowPG {
	r := &msgScanRowPG{}
	r.dest = append([]any{&r.m.SessionID, &r.m.Seq, &r.m.ID, &r.role, &r.content, &r.name, &r.toolCalls, &r.toolCallID,
		&r.agent, &r.mdl, &r.m.Tokens, &r.m.Cost, &r.meta, &r.created,
		&r.parts, &r.isError, &r.providerItem, &r.clientID}, extra...)
	return r
}

// scan reads one row into a message as SQLite's messageRow.scan builds it.
func (r *msgScanRowPG) scan(row pgx.Row) (model.Message, error) {
	r.name, r.toolCalls, r.toolCallID, r.agent, r.mdl, r.parts, r.providerItem, r.clientID = nil, nil, nil, nil, nil, nil, nil, nil
	if err := row.Scan(r.dest...); err != nil {
		return model.Message{}, err
	}
	m := r.m
	m.Role, m.CreatedAt, m.Metadata = model.Role(r.role), model.Time(r.created), model.Object(r.meta)
	m.Content, m.IsError = model.Content{Text: r.content}, r.isError != 0
	m.Cost = finiteCostPG(m.Cost)
	if r.parts != nil {
		if err := json.Unmarshal([]byte(*r.parts), &m.Content.Parts); err != nil {
			return m, fmt.Errorf("message %s parts: %w", m.ID, err)
		}
		if m.Content.Parts == nil {
			m.Content.Parts = []model.Part{}
		}
	}
	if r.providerItem != nil {
		m.ProviderItem = model.ProviderItem(*r.providerItem)
	}
	m.Name, m.ToolCallID, m.AgentID, m.Model, m.ClientID = r.name, r.toolCallID, r.agent, r.mdl, r.clientID
	if r.toolCalls != nil {
		if err := json.Unmarshal([]byte(*r.toolCalls), &m.ToolCalls); err != nil {
			return m, fmt.Errorf("message %s tool_calls: %w", m.ID, err)
		}
	}
	return m, nil
}

// finiteCostPG keeps a stored cost encodable as JSON: the columns' CHECK
// (cost >= 0) lets PostgreSQL's Infinity and NaN through, which no API write
// makes but a hand-edited row could; SQLite's reads clamp the same way.
func finiteCostPG(f float64) float64 {
	switch {
	case math.IsNaN(f):
		return 0
	case math.IsInf(f, 1):
		return math.MaxFloat64
	case math.IsInf(f, -1):
		return -math.MaxFloat64
	}
	return f
}

// GetMessage returns one message of a session (a fork's inherited ones
// included), or KindNotFound.
func (s *Store) GetMessage(ctx context.Context, tenant, sessionID, id string) (model.Message, error) {
	if err := s.faults.Check(repo.PointMessageRead); err != nil {
		return model.Message{}, err
	}
	m, err := newMsgScanRowPG().scan(s.pool.QueryRow(ctx,
		`SELECT `+messageColumnsPG+` FROM messages WHERE tenant_id = $1 AND id = $2`, tenant, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return model.Message{}, model.NotFound("message", id)
	}
	if err != nil {
		return model.Message{}, mapErr(err)
	}
	// The lineage also says whether the session is past its expires_at.
	segs, err := readLineagePG(ctx, s.pool, tenant, sessionID)
	if err != nil {
		return model.Message{}, mapErr(err)
	}
	if m.SessionID == sessionID {
		return m, nil
	}
	for _, g := range segs {
		if g.owner == m.SessionID && m.Seq > g.lo && m.Seq <= g.hi {
			m.SessionID = sessionID
			return m, nil
		}
	}
	return model.Message{}, model.NotFound("message", id)
}

// ListMessages returns one page of a session's messages in seq order (ascending
// unless f.Desc); a fork's inherited messages read as its own. Errors:
// KindNotFound for a missing session, invalid_cursor.
func (s *Store) ListMessages(ctx context.Context, tenant, sessionID string, f model.MessageFilter, p repo.PageRequest) (model.Page[model.Message], error) {
	if err := s.faults.Check(repo.PointMessageRead); err != nil {
		return model.Page[model.Message]{}, err
	}
	q := repo.Fingerprint("messages", sessionID, f)
	cur, hasCur, err := repo.DecodeCursor(p.Cursor, q)
	if err != nil {
		return model.Page[model.Message]{}, err
	}
	// The window (lo, hi) of seqs this page may hold.
	lo, hi := f.AfterSeq, int64(math.MaxInt64)
	if f.BeforeSeq > 0 {
		hi = f.BeforeSeq
	}
	if hasCur {
		if f.Desc {
			hi = min(hi, cur.N)
		} else {
			lo = max(lo, cur.N)
		}
	}
	segs, err := readLineagePG(ctx, s.pool, tenant, sessionID)
	if err != nil {
		return model.Page[model.Message]{}, mapErr(err)
	}
	if f.Desc {
		slices.Reverse(segs)
	}
	limit := p.Clamp()
	var out []model.Message
	for _, g := range segs {
		if len(out) > limit {
			break
		}
		upper := g.hi // inclusive; the scan takes an exclusive bound
		if upper < math.MaxInt64 {
			upper++
		}
		rows, err := s.msgScanSegmentPG(ctx, tenant, g.owner, max(lo, g.lo), min(hi, upper), f, limit+1-len(out))
		if err != nil {
			return model.Page[model.Message]{}, err
		}
		for i := range rows {
			rows[i].SessionID = sessionID // inherited messages read as the fork's own
		}
		out = append(out, rows...)
	}
	return repo.NewPage(out, limit, func(last model.Message) repo.Cursor { return repo.Cursor{Q: q, N: last.Seq} }), nil
}

// msgScanSegmentPG reads up to n messages of owner with lo < seq < hi.
func (s *Store) msgScanSegmentPG(ctx context.Context, tenant, owner string, lo, hi int64, f model.MessageFilter, n int) ([]model.Message, error) {
	if lo >= hi-1 {
		return nil, nil
	}
	order, role, args := "ASC", "", []any{tenant, owner, lo, hi}
	if f.Desc {
		order = "DESC"
	}
	if f.Role != "" {
		args = append(args, string(f.Role))
		role = " AND role = $" + strconv.Itoa(len(args))
	}
	args = append(args, n)
	rows, err := s.pool.Query(ctx, `SELECT `+messageColumnsPG+` FROM messages
		WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq < $4`+role+
		` ORDER BY seq `+order+` LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return msgCollectPG(rows, n)
}

// msgCollectPG reads every row of a messageColumnsPG query.
func msgCollectPG(rows pgx.Rows, n int) ([]model.Message, error) {
	defer rows.Close()
	out := make([]model.Message, 0, n)
	sc := newMsgScanRowPG()
	for rows.Next() {
		m, err := sc.scan(rows)
		if err != nil {
			return nil, mapErr(err)
		}
		out = append(out, m)
	}
	return out, mapErr(rows.Err())
}
