package postgres

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// appendPlanPG is an append decided: its answer and, when wrote, the rows it
// gathered into the transaction's inserts (none for a replay).
type appendPlanPG struct {
	res   model.AppendResult
	wrote bool
	fresh []int              // the rows it stores
	pin   *repo.EmbeddingPin // the agent's pin after it, when it carries embeddings
}

// appendDecidePG decides an append from v, as SQLite's stageAppend does, in
// the same order (so that the same request meets the same error first).
// Idempotency is decided before the status: a retry of something stored gets
// its answer even after the session closed.
//
// Unless v.locked, v is only a snapshot taken while another transaction held
// the session: settled is then true only for the outcomes no later append can
// change (a replay of what is stored, an idempotency error), and the caller
// must look again under the lock otherwise.
func appendDecidePG(a *appendOpPG, v *appendViewPG, w *appendInsertsPG) (plan appendPlanPG, settled bool, err error) {
	if k := a.req.RequestKey; k != "" {
		rec, found := v.requests[k]
		switch {
		case found && !bytes.Equal(rec.hash, a.reqHash):
			return plan, true, repo.IdempotencyConflict("Idempotency-Key", k)
		case found:
			msgs := make([]model.Message, len(rec.seqs))
			for i, seq := range rec.seqs {
				m, ok := v.reqMsgs[seq]
				if !ok && !v.locked { // rewound between the two reads: look again
					return plan, false, nil
				}
				if !ok {
					return plan, true, model.Internal(fmt.Errorf("request key points at missing seq %d of session %s", seq, a.session))
				}
				msgs[i] = m
			}
			plan.res = model.AppendResult{Messages: msgs, Replayed: true}
			return plan, true, nil
		case v.rewoundReqs[k]:
			return plan, true, model.Rewound("Idempotency-Key", k)
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
		if _, dup := inRequest[*r.key]; dup { // validation refuses this; the store does not rely on it
			return plan, true, repo.IdempotencyConflict(fmt.Sprintf("messages[%d].idempotency_key", i), *r.key)
		}
		inRequest[*r.key] = i
		field := "idempotency_key"
		if a.req.Batch {
			field = fmt.Sprintf("messages[%d].idempotency_key", i)
		}
		stored, found := v.byKey[*r.key]
		switch {
		case !found && v.rewoundMsgs[*r.key]:
			return plan, true, model.Rewound(field, *r.key)
		case !found:
			fresh = append(fresh, i)
		case !bytes.Equal(stored.hash, r.hash):
			return plan, true, repo.IdempotencyConflict(field, *r.key)
		default:
			out[i] = stored.msg
		}
	}
	embeds := a.embeds()
	if (!v.locked || (embeds && !v.agentLocked)) && (len(fresh) > 0 || a.req.RequestKey != "") {
		return plan, false, nil // a write, or a new request key: decided only under the locks
	}
	plan.res = model.AppendResult{Messages: out, Replayed: len(fresh) == 0}
	if !v.locked {
		return plan, true, nil
	}
	if !v.ses.exists {
		return plan, true, model.NotFound("session", a.session)
	}
	if len(fresh) > 0 {
		if err := appendCheckPG(a, v, fresh); err != nil {
			return plan, true, err
		}
		if embeds {
			pin, err := repo.CheckMessageEmbeddings(a.carried, fresh, a.req.Batch, v.embed)
			if err != nil {
				return plan, true, err
			}
			plan.pin = &pin
		}
		appendNumberRowsPG(w, a, v.ses, fresh, out)
		if plan.pin != nil {
			w.addEmbeddings(a, fresh, *plan.pin, v.embed.Dims == 0)
		}
	}
	if a.req.RequestKey != "" {
		w.addRequest(a.req.RequestKey, a.reqHash, out, a.now)
	}
	plan.wrote, plan.fresh = len(fresh) > 0 || a.req.RequestKey != "", fresh
	return plan, true, nil
}

// appendApplyPG makes v show a decided append as stored, for the appends
// decided after it in the same transaction: the session's counters, its keys,
// its request key, its calls and results.
func appendApplyPG(v *appendViewPG, a *appendOpPG, plan appendPlanPG) {
	out := plan.res.Messages
	if plan.pin != nil {
		v.embed = *plan.pin
	}
	for _, i := range plan.fresh {
		m, r := &out[i], &a.rows[i]
		v.ses.lastSeq, v.ses.count = m.Seq, v.ses.count+1
		v.ses.tokens, v.ses.cost = v.ses.tokens+m.Tokens, v.ses.cost+m.Cost
		if m.Role == model.RoleUser {
			v.ses.turns++
		}
		if v.ses.status == model.StatusCreated {
			v.ses.status = model.StatusActive
		}
		if r.key != nil {
			v.byKey[*r.key] = appendStoredPG{msg: *m, hash: r.hash}
		}
		if m.ClientID != nil {
			v.clientIDs[*m.ClientID] = m.Seq
		}
		for _, c := range m.ToolCalls {
			t := v.toolSeqs[c.ID]
			t.call = m.Seq
			v.toolSeqs[c.ID] = t
		}
		if m.Role == model.RoleTool && m.ToolCallID != nil {
			t := v.toolSeqs[*m.ToolCallID]
			t.result = m.Seq
			v.toolSeqs[*m.ToolCallID] = t
		}
	}
	if k := a.req.RequestKey; k != "" {
		rec := appendRecordedPG{hash: a.reqHash, seqs: make([]int64, len(out))}
		for i, m := range out {
			rec.seqs[i] = m.Seq
			v.reqMsgs[m.Seq] = m
		}
		v.requests[k] = rec
	}
}

// appendTxPG decides and writes an append inside a transaction the caller
// holds (a rewind's replacement tail, a repair's interrupted results): the
// session row is locked before anything is read, so the reads see every
// append before it.
func (s *Store) appendTxPG(ctx context.Context, tx pgx.Tx, a *appendOpPG) (model.AppendResult, error) {
	if err := s.faults.Check(repo.PointMessageWrite); err != nil {
		return model.AppendResult{}, err
	}
	v := newAppendViewPG()
	b := &pgx.Batch{}
	appendQueueLookupsPG(b, []*appendOpPG{a}, v, appendLockWait)
	if err := tx.SendBatch(ctx, b).Close(); err != nil { // runs the callbacks: v is complete only after it
		return model.AppendResult{}, err
	}
	w := newAppendInsertsPG(a.tenant, a.session)
	plan, _, err := appendDecidePG(a, v, w)
	if err != nil || !plan.wrote {
		return plan.res, err
	}
	appendApplyPG(v, a, plan)
	b = &pgx.Batch{}
	w.queue(b)
	appendQueueSessionPG(b, a.tenant, a.session, v.ses)
	if err := s.faults.Check(repo.PointAppendFlush); err != nil {
		return model.AppendResult{}, err
	}
	if err := appendSendPG(ctx, tx, b); err != nil {
		return model.AppendResult{}, err
	}
	return plan.res, nil
}

// appendCheckPG refuses what SQLite's stageAppend refuses of an append with
// fresh rows, in the same order: the fence, a closed session, then for each
// fresh row its running totals and its files, then tool pairing.
func appendCheckPG(a *appendOpPG, v *appendViewPG, fresh []int) error {
	st := v.ses
	if e := a.req.ExpectedLastSeq; e != nil && *e != st.lastSeq {
		return model.StaleSeq(*e, st.lastSeq)
	}
	if st.status.Closed() {
		return &model.Error{Kind: model.KindConflict, Code: "session_closed",
			Msg: fmt.Sprintf("session %q is %s; reopen it (PATCH status active) to append", a.session, st.status)}
	}
	tokens, cost := st.tokens, st.cost
	results := false
	for _, i := range fresh {
		m := &a.rows[i].msg
		results = results || m.Role == model.RoleTool
		tokens, cost = tokens+m.Tokens, cost+m.Cost
		prefix := ""
		if a.req.Batch {
			prefix = "messages[" + strconv.Itoa(i) + "]."
		}
		if err := appendCheckTotalsPG(tokens, cost, prefix); err != nil {
			return err
		}
		for j, p := range m.Content.Parts {
			if p.FileID != "" && !v.mayName(p.FileID, a.req.BoundUser) {
				return model.Invalid(model.FieldError{Field: prefix + "content[" + strconv.Itoa(j) + "].file_id",
					Message: "names no file of this tenant; upload it first with POST /v1/files"})
			}
		}
	}
	if err := appendCheckClientIDsPG(a, v, fresh); err != nil {
		return err
	}
	if !results {
		return nil
	}
	return appendCheckToolsPG(a, fresh, st.lastSeq, v.toolSeqs)
}

// appendNumberRowsPG numbers the fresh rows after the session's last_seq and
// gathers them, with their running totals, into w; out gets each stored
// message.
func appendNumberRowsPG(w *appendInsertsPG, a *appendOpPG, st appendSessionPG, fresh []int, out []model.Message) {
	seq, tokens, cost, turns := st.lastSeq, st.tokens, st.cost, st.turns
	for _, i := range fresh {
		r := &a.rows[i]
		seq++
		tokens, cost = tokens+r.msg.Tokens, cost+r.msg.Cost
		if r.msg.Role == model.RoleUser {
			turns++
		}
		r.msg.Seq = seq
		w.addMessage(r, tokens, cost, turns)
		out[i] = r.msg
	}
}

// appendQueueSessionPG queues the session's counters as they stand after the
// appends of a transaction, once for all of them. An append's first message
// makes a created session active.
func appendQueueSessionPG(b *pgx.Batch, tenant, session string, st appendSessionPG) {
	var u appendSessionUpdatesPG
	u.add(tenant, session, st)
	u.queue(b)
}

// appendSessionUpdatesPG gathers the counters of the sessions a transaction
// appended to, for one UPDATE of them all.
type appendSessionUpdatesPG struct {
	tenant, session               []string
	count, lastSeq, tokens, turns []int64
	cost                          []float64
}

func (u *appendSessionUpdatesPG) add(tenant, session string, st appendSessionPG) {
	u.tenant, u.session = append(u.tenant, tenant), append(u.session, session)
	u.count, u.lastSeq, u.tokens, u.turns = append(u.count, st.count), append(u.lastSeq, st.lastSeq), append(u.tokens, st.tokens), append(u.turns, st.turns)
	u.cost = append(u.cost, st.cost)
}

func (u *appendSessionUpdatesPG) queue(b *pgx.Batch) {
	if len(u.tenant) == 0 {
		return
	}
	b.Queue(`UPDATE sessions s SET message_count = u.count, last_seq = u.last_seq, total_tokens = u.tokens, total_cost = u.cost,
		turn_count = u.turns, updated_at = $8, status = CASE WHEN s.status = 'created' THEN 'active' ELSE s.status END
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::float8[], $7::bigint[])
			AS u(tenant, id, count, last_seq, tokens, cost, turns)
		WHERE s.tenant_id = u.tenant AND s.id = u.id`,
		u.tenant, u.session, u.count, u.lastSeq, u.tokens, u.cost, u.turns, int64(model.Now()))
}

// appendSendPG runs a batch of writes and returns its first error.
func appendSendPG(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	br := tx.SendBatch(ctx, b)
	for range b.Len() {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return err
		}
	}
	return br.Close()
}

// appendCheckTotalsPG refuses a write that would take a session's running
// totals past their bounds, with SQLite's checkTotals' errors; prefix names the
// message that carried the last straw ("messages[3]." in a batch).
func appendCheckTotalsPG(tokens int64, cost float64, prefix string) error {
	if tokens > model.MaxTotalTokens || tokens < 0 {
		return model.LimitExceeded(prefix+"tokens", fmt.Sprintf(
			"would take the session's total_tokens to %d, past the limit of %d", tokens, int64(model.MaxTotalTokens)))
	}
	if cost > model.MaxTotalCost || math.IsNaN(cost) || math.IsInf(cost, 0) {
		return model.LimitExceeded(prefix+"cost", fmt.Sprintf(
			"would take the session's total_cost to %g, past the limit of %g", cost, float64(model.MaxTotalCost)))
	}
	return nil
}
