package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

const messageColumns = `session_id, seq, id, role, content, name, tool_calls, tool_call_id,
	agent_id, model, tokens, cost, metadata, created_at, parts, is_error, provider_item, client_id`

// newRow is a message made ready outside the writer (ids, JSON, hashes), so that
// the writer only assigns seqs and inserts.
type newRow struct {
	msg          model.Message
	toolCalls    *string
	metadata     string
	parts        *string // the content's parts as JSON; nil for string content
	providerItem *string
	files        []string // the files the parts reference
	key          *string
	hash         []byte
	// The message's own embedding, encoded (nil: none), and the agent it is
	// stored under once the writer has checked it.
	embedding  []byte
	embedModel string
	embedAgent string
}

// AppendMessages appends messages to a session in one all-or-nothing write and
// returns them with their seqs, in input order.
//
// Idempotency: a RequestKey seen before returns what that request stored, and a
// message whose IdempotencyKey was seen before is returned as stored; neither writes
// again, even if the session has since closed. Replayed is set when nothing new was
// written. A key reused with different content is KindConflict
// (idempotency_conflict). Errors: KindNotFound, KindConflict (session_closed).
func (s *Store) AppendMessages(ctx context.Context, tenant, sessionID string, req model.AppendRequest) (model.AppendResult, error) {
	wait, err := s.QueueAppend(ctx, tenant, sessionID, req, nil)
	if err != nil {
		return model.AppendResult{}, err
	}
	return wait()
}

// QueueAppend queues an append and returns at once with a wait that gives its
// outcome once committed. Appends queued one after another, from one goroutine,
// are written in that order: a stream of messages (NDJSON) keeps its order
// without waiting for each commit before queueing the next. stream may be nil.
func (s *Store) QueueAppend(ctx context.Context, tenant, sessionID string, req model.AppendRequest,
	stream *repo.AppendStream) (wait func() (model.AppendResult, error), err error) {
	now := model.Now()
	rows := make([]newRow, len(req.Messages))
	for i, in := range req.Messages {
		r, err := prepareRow(sessionID, now, in)
		if err != nil {
			return nil, err
		}
		rows[i] = r
	}
	op := &appendOp{tenant: tenant, session: sessionID, req: req, rows: rows, now: now, stream: stream}
	if req.RequestKey != "" {
		op.reqHash = repo.HashRequest(req)
	}
	w := &writeOp{app: op}
	if err := s.enqueue(ctx, w); err != nil {
		return nil, err
	}
	return func() (model.AppendResult, error) {
		if err := <-w.done; err != nil {
			return model.AppendResult{}, err
		}
		return op.result, nil
	}, nil
}

func prepareRow(sessionID string, now model.Time, in model.NewMessage) (newRow, error) {
	r := newRow{msg: repo.NewStoredMessage(newID(model.PrefixMessage), sessionID, now, in)}
	var err error
	if r.parts, r.providerItem, r.toolCalls, err = repo.StoredColumns(r.msg); err != nil {
		return r, err
	}
	r.files = model.FileIDs(in.Content.Parts)
	r.metadata = r.msg.Metadata.String()
	if in.IdempotencyKey != "" {
		k := in.IdempotencyKey
		r.key = &k
		r.hash = repo.HashMessage(in)
	}
	if len(in.Embedding) > 0 {
		r.embedding, r.embedModel = repo.EncodeVector(in.Embedding), in.EmbeddingModel
	}
	return r, nil
}

func messagesBySeqs(ctx context.Context, q querier, tenant, sessionID, seqsJSON string) ([]model.Message, error) {
	var seqs []int64
	if err := json.Unmarshal([]byte(seqsJSON), &seqs); err != nil {
		return nil, model.Internal(err)
	}
	rows, err := q.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
		WHERE tenant_id = ? AND session_id = ? AND seq IN (SELECT value FROM json_each(?))`, tenant, sessionID, seqsJSON)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	bySeq := make(map[int64]model.Message, len(seqs))
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		bySeq[m.Seq] = m
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]model.Message, len(seqs))
	for i, seq := range seqs {
		m, ok := bySeq[seq]
		if !ok {
			return nil, model.Internal(fmt.Errorf("request key points at missing seq %d of session %s", seq, sessionID))
		}
		out[i] = m
	}
	return out, nil
}

// scanMessage reads messageColumns, then any extra columns into extra.
func scanMessage(sc scanner, extra ...any) (model.Message, error) {
	return newMessageRow(extra...).scan(sc)
}

// messageRow is Scan's destinations for messageColumns, made once for all the
// rows of a query: each would otherwise escape to the heap, as an any, for every
// row. They are plain strings, int64s and sql.NullStrings because database/sql
// converts to those directly, where a named type (Role, Time) or a *string
// costs it a trip through reflection, per column of every row.
type messageRow struct {
	m                                       model.Message
	role, meta, content                     string
	name, toolCalls, toolCallID, agent, mdl sql.NullString
	parts, providerItem, clientID           sql.NullString
	created, isError                        int64
	dest                                    []any
}

func newMessageRow(extra ...any) *messageRow {
	r := &messageRow{}
	r.dest = append([]any{&r.m.SessionID, &r.m.Seq, &r.m.ID, &r.role, &r.content, &r.name, &r.toolCalls, &r.toolCallID,
		&r.agent, &r.mdl, counterInt{&r.m.Tokens}, counterFloat{&r.m.Cost}, &r.meta, &r.created,
		&r.parts, &r.isError, &r.providerItem, &r.clientID}, extra...)
	return r
}

func (r *messageRow) scan(sc scanner) (model.Message, error) {
	if err := sc.Scan(r.dest...); err != nil {
		return model.Message{}, err
	}
	m := r.m
	m.Role, m.CreatedAt, m.Metadata = model.Role(r.role), model.Time(r.created), model.Object(r.meta)
	m.Content, m.IsError = model.Content{Text: r.content}, r.isError != 0
	if r.parts.Valid {
		if err := json.Unmarshal([]byte(r.parts.String), &m.Content.Parts); err != nil {
			return m, fmt.Errorf("message %s parts: %w", m.ID, err)
		}
		if m.Content.Parts == nil {
			m.Content.Parts = []model.Part{}
		}
	}
	if r.providerItem.Valid {
		m.ProviderItem = model.ProviderItem(r.providerItem.String)
	}
	m.Name, m.ToolCallID, m.AgentID, m.Model = optString(r.name), optString(r.toolCallID), optString(r.agent), optString(r.mdl)
	m.ClientID = optString(r.clientID)
	if r.toolCalls.Valid {
		if err := json.Unmarshal([]byte(r.toolCalls.String), &m.ToolCalls); err != nil {
			return m, fmt.Errorf("message %s tool_calls: %w", m.ID, err)
		}
	}
	return m, nil
}

func optString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// GetMessage returns one message of a session (a fork's inherited ones
// included), or KindNotFound.
func (s *Store) GetMessage(ctx context.Context, tenant, sessionID, id string) (model.Message, error) {
	if err := s.faults.Check(repo.PointMessageRead); err != nil {
		return model.Message{}, err
	}
	m, err := scanMessage(s.rdb.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE tenant_id = ? AND id = ?`, tenant, id))
	if err == sql.ErrNoRows {
		return m, model.NotFound("message", id)
	}
	if err != nil {
		return m, mapErr(err)
	}
	// The lineage, cached, also says whether the session is past its expires_at.
	segs, err := s.readLineage(ctx, tenant, sessionID)
	if err != nil {
		return model.Message{}, mapErr(err)
	}
	if m.SessionID == sessionID {
		return m, nil
	}
	for _, g := range segs {
		if g.owner == m.SessionID && g.contains(m.Seq) {
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
	// A page is at most 201 rows: not worth stopping, and a cancellable context
	// makes the driver arm a watch on every step of every row.
	ctx = context.WithoutCancel(ctx)
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
	segs, err := s.readLineage(ctx, tenant, sessionID)
	if err != nil {
		return model.Page[model.Message]{}, mapErr(err)
	}
	if f.Desc {
		segs = slices.Clone(segs) // the cached lineage is shared: reverse a copy
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
		rows, err := s.scanSegment(ctx, tenant, g, max(lo, g.lo), min(hi, upper), f, limit+1-len(out))
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

// scanSegment reads up to n messages of one stored segment with lo < seq < hi.
func (s *Store) scanSegment(ctx context.Context, tenant string, g segment, lo, hi int64, f model.MessageFilter, n int) ([]model.Message, error) {
	if lo >= hi-1 {
		return nil, nil
	}
	stmt := s.rst.page[pageVariant(f)]
	args := []any{tenant, g.owner, lo, hi}
	if f.Role != "" {
		args = append(args, f.Role)
	}
	rows, err := stmt.QueryContext(ctx, append(args, n)...)
	if err != nil {
		return nil, mapErr(err)
	}
	return collectN(rows, n, newMessageRow().scan)
}
