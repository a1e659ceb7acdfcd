package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// appendSessionPG is what an append needs of its session row.
type appendSessionPG struct {
	exists                        bool
	status                        model.Status
	lastSeq, count, tokens, turns int64
	cost                          float64
}

// appendLookupsPG is what was stored under the request's keys.
type appendLookupsPG struct {
	ses         appendSessionPG
	reqFound    bool
	reqHash     []byte
	reqSeqs     string
	byKey       map[string]appendStoredPG // messages by their own idempotency key
	rewoundReq  bool
	rewoundMsgs map[string]bool
}

type appendStoredPG struct {
	msg  model.Message
	hash []byte
}

// appendTxPG decides an append inside its transaction, as SQLite's
// stageAppend does, in the same order (so that the same request meets the
// same error first), then writes it.
//
// The session row is locked (FOR UPDATE) before anything is read: appends to
// one session, from any number of processes, then run one after another, so
// seqs stay gap-free and a key looked up as new cannot be stored meanwhile by
// another append. Idempotency is decided before the status: a retry of
// something stored gets its answer even after the session closed.
func (s *Store) appendTxPG(ctx context.Context, tx pgx.Tx, a *appendOpPG) (model.AppendResult, error) {
	if err := s.faults.Check(repo.PointMessageWrite); err != nil {
		return model.AppendResult{}, err
	}
	lk, err := appendLookupPG(ctx, tx, a)
	if err != nil {
		return model.AppendResult{}, err
	}
	if a.req.RequestKey != "" {
		switch {
		case lk.reqFound && !bytes.Equal(lk.reqHash, a.reqHash):
			return model.AppendResult{}, repo.IdempotencyConflict("Idempotency-Key", a.req.RequestKey)
		case lk.reqFound:
			msgs, err := appendMessagesBySeqsPG(ctx, tx, a.tenant, a.session, lk.reqSeqs)
			return model.AppendResult{Messages: msgs, Replayed: true}, err
		case lk.rewoundReq:
			return model.AppendResult{}, model.Rewound("Idempotency-Key", a.req.RequestKey)
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
			return model.AppendResult{}, repo.IdempotencyConflict(fmt.Sprintf("messages[%d].idempotency_key", i), *r.key)
		}
		inRequest[*r.key] = i
		field := "idempotency_key"
		if a.req.Batch {
			field = fmt.Sprintf("messages[%d].idempotency_key", i)
		}
		stored, found := lk.byKey[*r.key]
		switch {
		case !found && lk.rewoundMsgs[*r.key]:
			return model.AppendResult{}, model.Rewound(field, *r.key)
		case !found:
			fresh = append(fresh, i)
		case !bytes.Equal(stored.hash, r.hash):
			return model.AppendResult{}, repo.IdempotencyConflict(field, *r.key)
		default:
			out[i] = stored.msg
		}
	}
	st := lk.ses
	if !st.exists {
		return model.AppendResult{}, model.NotFound("session", a.session)
	}
	b := &pgx.Batch{}
	if len(fresh) > 0 {
		if err := s.appendCheckPG(ctx, tx, a, st, fresh); err != nil {
			return model.AppendResult{}, err
		}
		appendQueueRowsPG(b, a, st, fresh, out)
	}
	res := model.AppendResult{Messages: out, Replayed: len(fresh) == 0}
	if a.req.RequestKey != "" {
		seqs := make([]int64, len(out))
		for i, m := range out {
			seqs[i] = m.Seq
		}
		j, _ := json.Marshal(seqs)
		b.Queue(`INSERT INTO request_keys (tenant_id, session_id, key, request_hash, seqs, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, a.tenant, a.session, a.req.RequestKey, a.reqHash, string(j), int64(a.now))
	}
	if b.Len() == 0 {
		return res, nil
	}
	if err := s.faults.Check(repo.PointAppendFlush); err != nil {
		return model.AppendResult{}, err
	}
	if err := appendSendPG(ctx, tx, b); err != nil {
		return model.AppendResult{}, err
	}
	return res, nil
}

// appendLookupPG locks the session row and reads what the request's keys name,
// in one round trip: the statements of a batch run in order, so the reads
// after the lock see every append that held it before.
func appendLookupPG(ctx context.Context, tx pgx.Tx, a *appendOpPG) (appendLookupsPG, error) {
	lk := appendLookupsPG{byKey: map[string]appendStoredPG{}, rewoundMsgs: map[string]bool{}}
	var keys []string
	for i := range a.rows {
		if k := a.rows[i].key; k != nil {
			keys = append(keys, *k)
		}
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT status, last_seq, message_count, total_tokens, total_cost, turn_count
		FROM sessions WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, a.tenant, a.session).QueryRow(func(row pgx.Row) error {
		var status string
		err := row.Scan(&status, &lk.ses.lastSeq, &lk.ses.count, &lk.ses.tokens, &lk.ses.cost, &lk.ses.turns)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		lk.ses.exists, lk.ses.status = err == nil, model.Status(status)
		return err
	})
	if a.req.RequestKey != "" {
		b.Queue(`SELECT request_hash, seqs FROM request_keys WHERE tenant_id = $1 AND session_id = $2 AND key = $3`,
			a.tenant, a.session, a.req.RequestKey).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&lk.reqHash, &lk.reqSeqs)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			lk.reqFound = err == nil
			return err
		})
	}
	if len(keys) > 0 {
		b.Queue(`SELECT `+messageColumnsPG+`, idempotency_key, request_hash FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND idempotency_key = ANY($3)`, a.tenant, a.session, keys).Query(func(rows pgx.Rows) error {
			var (
				key  string
				hash []byte
			)
			sc := newMsgScanRowPG(&key, &hash)
			for rows.Next() {
				m, err := sc.scan(rows)
				if err != nil {
					return err
				}
				lk.byKey[key] = appendStoredPG{msg: m, hash: hash}
			}
			return rows.Err()
		})
	}
	if a.req.RequestKey != "" || len(keys) > 0 {
		b.Queue(`SELECT kind, key FROM rewound_keys WHERE tenant_id = $1 AND session_id = $2
			AND ((kind = 'request' AND key = $3) OR (kind = 'message' AND key = ANY($4)))`,
			a.tenant, a.session, a.req.RequestKey, keys).Query(func(rows pgx.Rows) error {
			var kind, key string
			for rows.Next() {
				if err := rows.Scan(&kind, &key); err != nil {
					return err
				}
				if kind == "request" {
					lk.rewoundReq = key == a.req.RequestKey
				} else {
					lk.rewoundMsgs[key] = true
				}
			}
			return rows.Err()
		})
	}
	err := tx.SendBatch(ctx, b).Close() // runs the callbacks above: lk is complete only after it
	return lk, err
}

// appendCheckPG refuses what SQLite's stageAppend refuses of an append with
// fresh rows, in the same order: the fence, a closed session, then for each
// fresh row its running totals and its files, then tool pairing.
func (s *Store) appendCheckPG(ctx context.Context, tx pgx.Tx, a *appendOpPG, st appendSessionPG, fresh []int) error {
	if e := a.req.ExpectedLastSeq; e != nil && *e != st.lastSeq {
		return model.StaleSeq(*e, st.lastSeq)
	}
	if st.status.Closed() {
		return &model.Error{Kind: model.KindConflict, Code: "session_closed",
			Msg: fmt.Sprintf("session %q is %s; reopen it (PATCH status active) to append", a.session, st.status)}
	}
	files, err := appendKnownFilesPG(ctx, tx, a, fresh)
	if err != nil {
		return err
	}
	tokens, cost := st.tokens, st.cost
	for _, i := range fresh {
		m := &a.rows[i].msg
		tokens, cost = tokens+m.Tokens, cost+m.Cost
		prefix := ""
		if a.req.Batch {
			prefix = "messages[" + strconv.Itoa(i) + "]."
		}
		if err := appendCheckTotalsPG(tokens, cost, prefix); err != nil {
			return err
		}
		for j, p := range m.Content.Parts {
			if p.FileID != "" && !files[p.FileID] {
				return model.Invalid(model.FieldError{Field: prefix + "content[" + strconv.Itoa(j) + "].file_id",
					Message: "names no file of this tenant; upload it first with POST /v1/files"})
			}
		}
	}
	return appendCheckToolsPG(ctx, tx, a, fresh, st.lastSeq)
}

// appendKnownFilesPG returns which of the files the fresh rows reference the
// tenant has: another tenant's file is as missing as one never uploaded.
func appendKnownFilesPG(ctx context.Context, tx pgx.Tx, a *appendOpPG, fresh []int) (map[string]bool, error) {
	var ids []string
	for _, i := range fresh {
		ids = append(ids, a.rows[i].files...)
	}
	known := map[string]bool{}
	if len(ids) == 0 {
		return known, nil
	}
	rows, err := tx.Query(ctx, `SELECT id FROM files WHERE tenant_id = $1 AND id = ANY($2)`, a.tenant, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		known[id] = true
	}
	return known, rows.Err()
}

// appendQueueRowsPG numbers the fresh rows after the session's last_seq and
// queues their inserts and the session's new counters; out gets each stored
// message. An append's first message makes a created session active.
func appendQueueRowsPG(b *pgx.Batch, a *appendOpPG, st appendSessionPG, fresh []int, out []model.Message) {
	seq, tokens, cost, turns := st.lastSeq, st.tokens, st.cost, st.turns
	for _, i := range fresh {
		r := &a.rows[i]
		m := &r.msg
		seq++
		tokens, cost = tokens+m.Tokens, cost+m.Cost
		if m.Role == model.RoleUser {
			turns++
		}
		m.Seq = seq
		isError := 0
		if m.IsError {
			isError = 1
		}
		b.Queue(`INSERT INTO messages (tenant_id, session_id, seq, id, role, content, name, tool_calls,
			tool_call_id, agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash,
			gid, cum_tokens, cum_cost, parts, is_error, provider_item, cum_turns)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
			nextval('messages_gid'), $18, $19, $20, $21, $22, $23)`,
			a.tenant, a.session, m.Seq, m.ID, string(m.Role), m.Content.Text, m.Name, r.toolCalls,
			m.ToolCallID, m.AgentID, m.Model, m.Tokens, m.Cost, r.metadata, int64(m.CreatedAt), r.key, r.hash,
			tokens, cost, r.parts, isError, r.providerItem, turns)
		for _, f := range r.files {
			b.Queue(`INSERT INTO message_files (tenant_id, session_id, seq, file_id) VALUES ($1, $2, $3, $4)
				ON CONFLICT DO NOTHING`, a.tenant, a.session, m.Seq, f)
		}
		appendQueueToolRowsPG(b, a.tenant, a.session, m)
		out[i] = *m
	}
	b.Queue(`UPDATE sessions SET message_count = $1, last_seq = $2, total_tokens = $3, total_cost = $4, turn_count = $5,
		updated_at = $6, status = CASE WHEN status = 'created' THEN 'active' ELSE status END
		WHERE tenant_id = $7 AND id = $8`,
		st.count+int64(len(fresh)), seq, tokens, cost, turns, int64(model.Now()), a.tenant, a.session)
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

// appendMessagesBySeqsPG reads the messages a request key recorded, in the
// order recorded.
func appendMessagesBySeqsPG(ctx context.Context, tx pgx.Tx, tenant, sessionID, seqsJSON string) ([]model.Message, error) {
	var seqs []int64
	if err := json.Unmarshal([]byte(seqsJSON), &seqs); err != nil {
		return nil, model.Internal(err)
	}
	rows, err := tx.Query(ctx, `SELECT `+messageColumnsPG+` FROM messages
		WHERE tenant_id = $1 AND session_id = $2 AND seq = ANY($3)`, tenant, sessionID, seqs)
	if err != nil {
		return nil, err
	}
	got, err := msgCollectPG(rows, len(seqs))
	if err != nil {
		return nil, err
	}
	bySeq := make(map[int64]model.Message, len(got))
	for _, m := range got {
		bySeq[m.Seq] = m
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
