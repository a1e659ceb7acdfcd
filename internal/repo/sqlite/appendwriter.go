package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

var errStreamStopped = &model.Error{Kind: model.KindConflict, Code: "stream_stopped",
	Msg: "an earlier message of this stream failed: this one and every later one were not appended; resend from the first that failed"}

// appendOp is one append request on its way through the writer.
type appendOp struct {
	tenant, session string
	req             model.AppendRequest
	reqHash         []byte
	rows            []newRow
	now             model.Time
	stream          *repo.AppendStream // nil outside a stream

	result model.AppendResult // set when the writer staged it
}

// sessionKey names a session across tenants.
type sessionKey struct{ tenant, id string }

// sessionState is what an append needs of its session. The writer keeps it for
// the sessions it has written (sessionCache), so that an append reads nothing:
// seq, counters and status come from here and go back to the row once per
// group.
type sessionState struct {
	status                        model.Status
	lastSeq, count, tokens, turns int64
	cost                          float64
	expiresAt                     sql.NullInt64
	agent                         sql.NullString // the usage rollups' agent of a message that names none
	dirty, activate               bool
}

// expired reports whether the session is past its expires_at: hidden, and
// written to as little as one that does not exist.
func (st *sessionState) expired(now model.Time) bool {
	return st.expiresAt.Valid && st.expiresAt.Int64 <= int64(now)
}

// sessionCache is the writer's own record of sessions; only the writer goroutine
// uses it. Any write that changes a session other than by appending (a status
// change, a purge, a counter repair) forgets the session, and another process's
// commit forgets them all (noticeOtherWriters), so the record never disagrees
// with the rows for longer than the group that changes them.
type sessionCache struct {
	m map[sessionKey]*sessionState
}

// maxCachedSessions bounds the record: past it, it starts again empty (each
// session then costs one read on its next append).
const maxCachedSessions = 16384

func (c *sessionCache) reset() { clear(c.m) }

func (c *sessionCache) forget(tenant, id string) { delete(c.m, sessionKey{tenant, id}) }

// sessionState returns the session's record, reading the row on a miss; nil for
// a session that does not exist (not remembered: creating it needs no forget).
func (s *Store) sessionState(ctx context.Context, tx *sql.Tx, tenant, id string) (*sessionState, error) {
	k := sessionKey{tenant, id}
	if st, ok := s.sessions.m[k]; ok {
		return st, nil
	}
	if len(s.sessions.m) >= maxCachedSessions {
		s.sessions.reset()
	}
	st := &sessionState{}
	err := tx.StmtContext(ctx, s.st.selectSessionState).QueryRowContext(ctx, tenant, id).
		Scan(&st.status, &st.lastSeq, &st.count, counterInt{&st.tokens}, counterFloat{&st.cost}, &st.turns, &st.expiresAt, &st.agent)
	switch {
	case err == sql.ErrNoRows:
		return nil, nil
	case err != nil:
		return nil, err
	}
	s.sessions.m[k] = st
	return st, nil
}

// group is what a group of appends has staged and not yet flushed.
type group struct {
	rows     []stagedRow
	touched  []sessionKey // sessions whose record changed, in first-touch order
	reqKeys  []stagedRequestKey
	byReqKey map[keyRef]*appendOp           // Idempotency-Key headers staged in this group
	byMsgKey map[keyRef]int                 // per-message keys staged in this group: index into rows
	tools    map[keyRef]toolSeqs            // tool calls and results staged in this group, by call id
	pins     map[agentRef]repo.EmbeddingPin // agents whose embeddings an append staged: their pin after it
	// clientIDs are the client ids staged in this group, with their seqs
	// (clientids.go); made only for a group that carries one.
	clientIDs map[keyRef]int64
}

type agentRef struct{ tenant, agent string }

type keyRef struct{ tenant, session, key string }

type stagedRow struct {
	tenant, session string
	r               *newRow
	gid             int64
	cumTokens       int64
	cumCost         float64
	cumTurns        int64
}

type stagedRequestKey struct {
	tenant, session, key string
	hash                 []byte
	seqs                 string
	at                   model.Time
}

func newGroup() *group {
	return &group{byReqKey: map[keyRef]*appendOp{}, byMsgKey: map[keyRef]int{}, tools: map[keyRef]toolSeqs{}}
}

// stageAppend decides an append: a replay of an earlier request, a refusal, or
// new rows staged for the group's flush. A refusal changes nothing, so it needs
// nothing undone; what it stages changes only the writer's record.
//
// Idempotency look-ups come before the status check: a retry of something that
// was stored must get its answer even after the session closed.
func (s *Store) stageAppend(ctx context.Context, tx *sql.Tx, g *group, a *appendOp) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = model.Internal(fmt.Errorf("panic in append: %v", r))
		}
		if err != nil && a.stream != nil {
			a.stream.Fail()
		}
	}()
	if a.stream != nil && a.stream.Failed() {
		return errStreamStopped
	}
	if err := s.faults.Check(repo.PointMessageWrite); err != nil {
		return err
	}
	if a.req.RequestKey != "" {
		done, err := s.replayRequest(ctx, tx, g, a)
		if done || err != nil {
			return err
		}
	}
	out := make([]model.Message, len(a.rows))
	fresh := make([]int, 0, len(a.rows)) // indexes of rows not stored before
	inRequest := map[string]int{}
	for i := range a.rows {
		r := &a.rows[i]
		if r.key == nil {
			fresh = append(fresh, i)
			continue
		}
		if _, dup := inRequest[*r.key]; dup { // validation refuses this; the writer does not rely on it
			return repo.IdempotencyConflict(fmt.Sprintf("messages[%d].idempotency_key", i), *r.key)
		}
		inRequest[*r.key] = i
		m, hash, found, err := s.messageByKey(ctx, tx, g, a.tenant, a.session, *r.key)
		switch {
		case err != nil:
			return err
		case !found:
			field := "idempotency_key"
			if a.req.Batch {
				field = fmt.Sprintf("messages[%d].idempotency_key", i)
			}
			if _, err := s.refuseRewound(ctx, tx, a.tenant, a.session, "message", *r.key, field); err != nil {
				return err
			}
			fresh = append(fresh, i)
		case !bytes.Equal(hash, r.hash):
			field := "idempotency_key"
			if a.req.Batch {
				field = fmt.Sprintf("messages[%d].idempotency_key", i)
			}
			return repo.IdempotencyConflict(field, *r.key)
		default:
			out[i] = m
		}
	}

	st, err := s.sessionState(ctx, tx, a.tenant, a.session)
	if err != nil {
		return err
	}
	if st == nil || st.expired(model.Now()) {
		return model.NotFound("session", a.session)
	}
	if len(fresh) > 0 {
		if e := a.req.ExpectedLastSeq; e != nil && *e != st.lastSeq {
			return model.StaleSeq(*e, st.lastSeq)
		}
		if st.status.Closed() {
			return &model.Error{Kind: model.KindConflict, Code: "session_closed",
				Msg: fmt.Sprintf("session %q is %s; reopen it (PATCH status active) to append", a.session, st.status)}
		}
		// Check every bound before changing the record, so a refusal leaves it as it was.
		seq, tokens, cost := st.lastSeq, st.tokens, st.cost
		for _, i := range fresh {
			m := &a.rows[i].msg
			tokens, cost = tokens+m.Tokens, cost+m.Cost
			prefix := ""
			if a.req.Batch {
				prefix = "messages[" + itoa(int64(i)) + "]."
			}
			if err := checkTotals(tokens, cost, prefix); err != nil {
				return err
			}
			if err := s.checkFiles(ctx, tx, a.tenant, a.req.BoundUser, m.Content.Parts, prefix); err != nil {
				return err
			}
		}
		if err := s.checkClientIDs(ctx, tx, g, a, fresh); err != nil {
			return err
		}
		if err := s.checkToolResults(ctx, tx, g, a, fresh, st.lastSeq); err != nil {
			return err
		}
		// Only an append that carries an embedding reads its agent.
		var pin *repo.EmbeddingPin
		if a.embeds() {
			p, err := s.embeddingPin(ctx, tx, g, a.tenant, a.session)
			if err == nil {
				p, err = repo.CheckMessageEmbeddings(a.carried, fresh, a.req.Batch, p)
			}
			if err != nil {
				return err
			}
			pin = &p
		}
		tokens, cost, turns := st.tokens, st.cost, st.turns
		for _, i := range fresh {
			r := &a.rows[i]
			seq++
			tokens, cost = tokens+r.msg.Tokens, cost+r.msg.Cost
			if r.msg.Role == model.RoleUser {
				turns++
			}
			r.msg.Seq = seq
			if r.embedding != nil {
				r.embedAgent = *pin.AgentID
			}
			g.noteToolRows(a.tenant, a.session, &r.msg)
			g.noteClientID(a.tenant, a.session, &r.msg)
			g.rows = append(g.rows, stagedRow{tenant: a.tenant, session: a.session, r: r, gid: s.nextGID(),
				cumTokens: tokens, cumCost: cost, cumTurns: turns})
			if r.key != nil {
				g.byMsgKey[keyRef{a.tenant, a.session, *r.key}] = len(g.rows) - 1
			}
			out[i] = r.msg
		}
		if pin != nil {
			if g.pins == nil { // made only for a group that carries embeddings
				g.pins = map[agentRef]repo.EmbeddingPin{}
			}
			g.pins[agentRef{a.tenant, *pin.AgentID}] = *pin
		}
		if !st.dirty {
			g.touched = append(g.touched, sessionKey{a.tenant, a.session})
		}
		st.lastSeq, st.count, st.tokens, st.cost, st.turns = seq, st.count+int64(len(fresh)), tokens, cost, turns
		st.dirty = true
		if st.status == model.StatusCreated {
			st.status, st.activate = model.StatusActive, true
		}
	}
	a.result = model.AppendResult{Messages: out, Replayed: len(fresh) == 0}
	if a.req.RequestKey != "" {
		seqs := make([]int64, len(out))
		for i, m := range out {
			seqs[i] = m.Seq
		}
		b, _ := json.Marshal(seqs)
		g.reqKeys = append(g.reqKeys, stagedRequestKey{tenant: a.tenant, session: a.session, key: a.req.RequestKey,
			hash: a.reqHash, seqs: string(b), at: a.now})
		g.byReqKey[keyRef{a.tenant, a.session, a.req.RequestKey}] = a
	}
	return nil
}

// replayRequest answers an append whose Idempotency-Key was seen before, in this
// group or stored, and says whether it did.
func (s *Store) replayRequest(ctx context.Context, tx *sql.Tx, g *group, a *appendOp) (bool, error) {
	if prev, ok := g.byReqKey[keyRef{a.tenant, a.session, a.req.RequestKey}]; ok {
		if !bytes.Equal(prev.reqHash, a.reqHash) {
			return true, repo.IdempotencyConflict("Idempotency-Key", a.req.RequestKey)
		}
		a.result = model.AppendResult{Messages: prev.result.Messages, Replayed: true}
		return true, nil
	}
	var (
		hash []byte
		seqs string
	)
	err := tx.StmtContext(ctx, s.st.selectRequestKey).QueryRowContext(ctx, a.tenant, a.session, a.req.RequestKey).Scan(&hash, &seqs)
	switch {
	case err == sql.ErrNoRows:
		return s.refuseRewound(ctx, tx, a.tenant, a.session, "request", a.req.RequestKey, "Idempotency-Key")
	case err != nil:
		return true, err
	case !bytes.Equal(hash, a.reqHash):
		return true, repo.IdempotencyConflict("Idempotency-Key", a.req.RequestKey)
	}
	msgs, err := messagesBySeqs(ctx, tx, a.tenant, a.session, seqs)
	a.result = model.AppendResult{Messages: msgs, Replayed: true}
	return true, err
}

// messageByKey finds a message by its own idempotency key, staged in this group
// or stored.
func (s *Store) messageByKey(ctx context.Context, tx *sql.Tx, g *group, tenant, session, key string) (model.Message, []byte, bool, error) {
	if i, ok := g.byMsgKey[keyRef{tenant, session, key}]; ok {
		return g.rows[i].r.msg, g.rows[i].r.hash, true, nil
	}
	var hash []byte
	m, err := scanMessage(tx.StmtContext(ctx, s.st.selectMessageByKey).QueryRowContext(ctx, tenant, session, key), &hash)
	if err == sql.ErrNoRows {
		return model.Message{}, nil, false, nil
	}
	return m, hash, err == nil, err
}

// flush writes what the group staged: the rows, each touched session's
// counters (once, whatever the number of its appends), and the request keys.
// Nothing else: a row is its own event of the live feed, and the search index,
// the embeddings and the usage rollups follow the rows by gid.
func (s *Store) flush(ctx context.Context, tx *sql.Tx, g *group) error {
	if len(g.rows) == 0 && len(g.reqKeys) == 0 {
		return nil
	}
	if err := s.faults.Check(repo.PointAppendFlush); err != nil {
		return err
	}
	insert := tx.StmtContext(ctx, s.st.insertMessage)
	for _, sr := range g.rows {
		r, m := sr.r, &sr.r.msg
		if _, err := insert.ExecContext(ctx, sr.tenant, sr.session, m.Seq, m.ID, m.Role, m.Content.Text, m.Name, r.toolCalls,
			m.ToolCallID, m.AgentID, m.Model, m.Tokens, m.Cost, r.metadata, int64(m.CreatedAt), r.key, r.hash,
			sr.gid, sr.cumTokens, sr.cumCost, r.parts, m.IsError, r.providerItem, sr.cumTurns, true, m.ClientID); err != nil {
			return err
		}
		for _, f := range r.files {
			if _, err := tx.StmtContext(ctx, s.st.insertMessageFile).ExecContext(ctx, sr.tenant, sr.session, m.Seq, f); err != nil {
				return err
			}
		}
		if err := indexToolRows(ctx, tx, sr.tenant, sr.session, m); err != nil {
			return err
		}
		if r.embedAgent != "" {
			if err := insertMessageEmbedding(ctx, tx, sr.tenant, sr.session, m.Seq, m.ID, r.embedAgent, r.embedModel, r.embedding); err != nil {
				return err
			}
		}
	}
	// Each row is its own message.appended event (events.go): the feed's
	// readers look after the commit. The usage folder takes the rows from
	// memory (usageAcc), not from the table.
	s.eventsWritten = s.eventsWritten || len(g.rows) > 0
	if s.usage.valid {
		for _, sr := range g.rows {
			s.usage.add(sr.tenant, sr.session, &sr.r.msg, s.sessions.m[sessionKey{sr.tenant, sr.session}])
		}
	}
	for k, p := range g.pins {
		if err := pinAgent(ctx, tx, k.tenant, p); err != nil {
			return err
		}
	}
	for _, k := range g.touched {
		st := s.sessions.m[k]
		if st == nil { // forgotten since: a closure runs only after a flush, so this cannot be
			return errors.New("repo: a staged session was forgotten before its flush")
		}
		stmt := s.st.updateSessionCounters
		if st.activate {
			stmt = s.st.updateSessionCountersActivate
		}
		if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, st.count, st.lastSeq, st.tokens, st.cost, st.turns,
			int64(model.Now()), k.tenant, k.id); err != nil {
			return err
		}
		st.dirty, st.activate = false, false
	}
	for _, k := range g.reqKeys {
		if _, err := tx.StmtContext(ctx, s.st.insertRequestKey).ExecContext(ctx,
			k.tenant, k.session, k.key, k.hash, k.seqs, int64(k.at)); err != nil {
			return err
		}
	}
	*g = *newGroup()
	return nil
}

// checkFiles refuses parts that name a file this tenant does not have, or,
// for a key bound to user, one that user may not read (repo.Files): another
// tenant's file, or another user's, is as missing as one never uploaded.
func (s *Store) checkFiles(ctx context.Context, tx *sql.Tx, tenant, user string, parts []model.Part, prefix string) error {
	for j := range parts {
		id := parts[j].FileID
		if id == "" {
			continue
		}
		var one int
		err := tx.StmtContext(ctx, s.st.fileReadable).QueryRowContext(ctx, tenant, id, user).Scan(&one)
		if err == sql.ErrNoRows {
			return model.Invalid(model.FieldError{Field: prefix + "content[" + itoa(int64(j)) + "].file_id",
				Message: "names no file of this tenant; upload it first with POST /v1/files"})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// embeddingPin is what an append's embeddings are checked against: the
// session's agent and its pin, as this group staged it or as stored.
func (s *Store) embeddingPin(ctx context.Context, tx *sql.Tx, g *group, tenant, session string) (repo.EmbeddingPin, error) {
	var (
		pin   repo.EmbeddingPin
		agent sql.NullString
	)
	if err := tx.QueryRowContext(ctx, `SELECT agent_id FROM sessions WHERE tenant_id = ? AND id = ?`, tenant, session).Scan(&agent); err != nil {
		return pin, err
	}
	if !agent.Valid {
		return pin, nil
	}
	if p, ok := g.pins[agentRef{tenant, agent.String}]; ok {
		return p, nil
	}
	return agentPin(ctx, tx, tenant, &agent.String)
}

// agentPin is the agent's pin as stored (nil agent: none).
func agentPin(ctx context.Context, tx *sql.Tx, tenant string, agent *string) (repo.EmbeddingPin, error) {
	pin := repo.EmbeddingPin{AgentID: agent}
	if agent == nil {
		return pin, nil
	}
	var (
		pinned sql.NullString
		dims   sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = ? AND id = ?`,
		tenant, *agent).Scan(&pinned, &dims)
	switch {
	case err == sql.ErrNoRows:
		return pin, nil
	case err != nil:
		return pin, err
	}
	pin.Stored = true
	if dims.Valid {
		pin.Model, pin.Dims = pinned.String, int(dims.Int64)
	}
	return pin, nil
}

// pinAgent stores what an embedding pinned an agent to, if nothing had.
func pinAgent(ctx context.Context, tx *sql.Tx, tenant string, pin repo.EmbeddingPin) error {
	if !pin.Pins || pin.AgentID == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE agents SET embedding_model = ?, embedding_dims = ?
		WHERE tenant_id = ? AND id = ? AND embedding_dims IS NULL`, pin.Model, pin.Dims, tenant, *pin.AgentID)
	return err
}

// insertMessageEmbedding stores a message's own embedding, ready. The place
// may hold the embedding of a message a rewind removed: it is replaced.
func insertMessageEmbedding(ctx context.Context, tx *sql.Tx, tenant, session string, seq int64, id, agent, embModel string, vec []byte) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO message_embeddings (tenant_id, session_id, seq, message_id, agent_id, state, model, embedding)
		VALUES (?, ?, ?, ?, ?, 'ready', ?, ?)
		ON CONFLICT (tenant_id, session_id, seq) DO UPDATE SET message_id = excluded.message_id, agent_id = excluded.agent_id,
			state = 'ready', model = excluded.model, embedding = excluded.embedding, error = NULL, attempts = 0, due = NULL`,
		tenant, session, seq, id, agent, embModel, vec)
	return err
}

// embeds reports whether any message of the append carries its own embedding.
func (a *appendOp) embeds() bool {
	for i := range a.rows {
		if a.rows[i].embedding != nil {
			return true
		}
	}
	return false
}

// carried is the embedding message i carries.
func (a *appendOp) carried(i int) repo.Carried {
	r := &a.rows[i]
	return repo.Carried{Model: r.embedModel, Dims: len(r.embedding) / 4}
}
