package postgres

import (
	"encoding/json"
	"errors"

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

// appendViewPG is what a group of appends to one session decides on: the
// session's counters, what is stored under the group's keys, the files its
// rows name, the history of the call ids they make or answer. Each append
// decided with writes is applied to it, so the next one in the group sees it
// as if it had been committed before.
type appendViewPG struct {
	ses         appendSessionPG
	locked      bool // the session row is locked by this transaction
	requests    map[string]appendRecordedPG
	reqMsgs     map[int64]model.Message // the messages the request keys recorded, by seq
	byKey       map[string]appendStoredPG
	rewoundReqs map[string]bool
	rewoundMsgs map[string]bool
	files       map[string]bool // the group's files the tenant has
	readable    map[string]bool // those that filesUser may read (repo.Files)
	filesUser   string          // the user the group's bound keys act for
	toolSeqs    map[string]appendToolSeqsPG
	// embed is the session's agent and its pin, read only for appends that
	// carry embeddings; agentLocked says the agent's row is locked, so
	// that no other transaction pins it meanwhile.
	embed       repo.EmbeddingPin
	agentLocked bool
	// clientIDs are the group's client ids the history holds, with their
	// seqs (clientids.go).
	clientIDs map[string]int64
}

// mayName reports whether an append by a key bound to user ("" for none) may
// name file id in a part: another tenant's file, or another user's, is as
// missing as one never uploaded.
func (v *appendViewPG) mayName(id, user string) bool {
	return v.files[id] && (user == "" || (user == v.filesUser && v.readable[id]))
}

// appendRecordedPG is what a request key recorded.
type appendRecordedPG struct {
	hash []byte
	seqs []int64
}

type appendStoredPG struct {
	msg  model.Message
	hash []byte
}

// appendLock says how the lookup batch takes the session row.
type appendLock int

const (
	// appendLockWait waits for the row: the reads after it see every append
	// that held it before.
	appendLockWait appendLock = iota
	// appendLockTry takes the row only if no other transaction holds it. When
	// another does, the reads are a snapshot that can still settle a retry
	// (a replay, an idempotency error) without queueing behind the appends
	// in flight; anything else must look again with appendLockWait.
	appendLockTry
)

func newAppendViewPG() *appendViewPG {
	return &appendViewPG{requests: map[string]appendRecordedPG{}, reqMsgs: map[int64]model.Message{},
		byKey: map[string]appendStoredPG{}, rewoundReqs: map[string]bool{}, rewoundMsgs: map[string]bool{},
		files: map[string]bool{}, readable: map[string]bool{}, toolSeqs: map[string]appendToolSeqsPG{},
		clientIDs: map[string]int64{}}
}

// appendQueueLookupsPG queues, after the session row's lock, every read the
// appends ops (all to one session) decide on: the statements of a batch run
// in order, so with the lock taken the reads see every append that held it
// before, and the whole decision costs one round trip.
//
// Each read names its rows by a whole key, one LATERAL probe per key (LIMIT
// keeps the planner from flattening it into a join it may turn around): a
// planner that thinks a session holds a handful of rows (a young database,
// or one hot session among many small ones) would otherwise filter
// "idempotency_key = ANY(...)" over every message of the session, and an
// append's cost would grow with the session it appends to.
func appendQueueLookupsPG(b *pgx.Batch, ops []*appendOpPG, v *appendViewPG, lock appendLock) {
	tenant, session := ops[0].tenant, ops[0].session
	var reqKeys, keys, files, toolIDs, clientIDs []string
	toolResults, embeds := false, false
	for _, a := range ops {
		embeds = embeds || a.embeds()
		if a.req.RequestKey != "" {
			reqKeys = append(reqKeys, a.req.RequestKey)
		}
		for i := range a.rows {
			if k := a.rows[i].key; k != nil {
				keys = append(keys, *k)
			}
			files = append(files, a.rows[i].files...)
			if c := a.rows[i].msg.ClientID; c != nil {
				clientIDs = append(clientIDs, *c)
			}
		}
		if a.req.BoundUser != "" {
			v.filesUser = a.req.BoundUser // the session's user: the same for every op
		}
		ids, results := appendToolIDsPG(a)
		toolIDs, toolResults = append(toolIDs, ids...), toolResults || results
	}
	lockSQL := ` FOR UPDATE`
	if lock == appendLockTry {
		lockSQL = ` FOR UPDATE SKIP LOCKED`
	} else {
		v.locked = true // a session that is not there is decided on as surely as one locked
	}
	b.Queue(`SELECT status, last_seq, message_count, total_tokens, total_cost, turn_count, expires_at
		FROM sessions WHERE tenant_id = $1 AND id = $2`+lockSQL, tenant, session).QueryRow(func(row pgx.Row) error {
		var (
			status    string
			expiresAt *int64
		)
		err := row.Scan(&status, &v.ses.lastSeq, &v.ses.count, &v.ses.tokens, &v.ses.cost, &v.ses.turns, &expiresAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // missing, or (appendLockTry) busy
		}
		// Past its expires_at, the session is hidden: locked, so decided on
		// (not even a replay is answered), as one that is not there.
		expired := expiresAt != nil && *expiresAt <= int64(model.Now())
		v.ses.exists, v.locked, v.ses.status = err == nil && !expired, err == nil, model.Status(status)
		return err
	})
	if len(reqKeys) > 0 {
		appendQueueRequestKeysPG(b, tenant, session, reqKeys, v)
	}
	if len(keys) > 0 {
		b.Queue(`SELECT m.* FROM unnest($3::text[]) AS k(key) CROSS JOIN LATERAL (
				SELECT `+messageColumnsPG+`, idempotency_key, request_hash FROM messages
				WHERE tenant_id = $1 AND session_id = $2 AND idempotency_key = k.key LIMIT 1) m`,
			tenant, session, keys).Query(func(rows pgx.Rows) error {
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
				v.byKey[key] = appendStoredPG{msg: m, hash: hash}
			}
			return rows.Err()
		})
	}
	if len(reqKeys) > 0 || len(keys) > 0 {
		// Only a rewind writes here, and only keys it removed: a short list.
		b.Queue(`SELECT kind, key FROM rewound_keys WHERE tenant_id = $1 AND session_id = $2
			AND ((kind = 'request' AND key = ANY($3)) OR (kind = 'message' AND key = ANY($4)))`,
			tenant, session, reqKeys, keys).Query(func(rows pgx.Rows) error {
			var kind, key string
			for rows.Next() {
				if err := rows.Scan(&kind, &key); err != nil {
					return err
				}
				if kind == "request" {
					v.rewoundReqs[key] = true
				} else {
					v.rewoundMsgs[key] = true
				}
			}
			return rows.Err()
		})
	}
	if len(files) > 0 {
		// Another tenant's file is as missing as one never uploaded; for a key
		// bound to a user, so is a file that user may not read (filesReadablePG).
		b.Queue(`SELECT f.id, f.readable FROM unnest($2::text[]) AS k(id) CROSS JOIN LATERAL (
				SELECT id, ($3 <> '' AND (
					EXISTS (SELECT 1 FROM file_owners WHERE tenant_id = $1 AND file_id = k.id AND user_id = $3)
					OR EXISTS (SELECT 1 FROM message_files WHERE tenant_id = $1 AND file_id = k.id AND user_id = $3))) AS readable
				FROM files WHERE tenant_id = $1 AND id = k.id LIMIT 1) f`, tenant, files, v.filesUser).Query(func(rows pgx.Rows) error {
			var (
				id       string
				readable bool
			)
			for rows.Next() {
				if err := rows.Scan(&id, &readable); err != nil {
					return err
				}
				v.files[id], v.readable[id] = true, readable
			}
			return rows.Err()
		})
	}
	if len(clientIDs) > 0 {
		appendQueueClientIDsPG(b, tenant, session, clientIDs, v)
	}
	if toolResults {
		appendQueueToolSeqsPG(b, tenant, session, toolIDs, v.toolSeqs)
	}
	if embeds {
		appendQueueEmbeddingPinPG(b, tenant, session, v, lock)
	}
}

// appendQueueEmbeddingPinPG reads the session's agent and locks its row
// while it reads its pin, as a passage's embedding does (pinEmbedding). With
// appendLockTry a row another transaction holds is skipped: the appends that
// carry embeddings then wait for the second look.
func appendQueueEmbeddingPinPG(b *pgx.Batch, tenant, session string, v *appendViewPG, lock appendLock) {
	b.Queue(`SELECT agent_id FROM sessions WHERE tenant_id = $1 AND id = $2`, tenant, session).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&v.embed.AgentID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	lockSQL := ` FOR NO KEY UPDATE`
	if lock == appendLockTry {
		lockSQL += ` SKIP LOCKED`
	}
	b.Queue(`SELECT embedding_model, embedding_dims FROM agents
		WHERE tenant_id = $1 AND id = (SELECT agent_id FROM sessions WHERE tenant_id = $1 AND id = $2)`+lockSQL,
		tenant, session).QueryRow(func(row pgx.Row) error {
		var (
			pinned *string
			dims   *int64
		)
		err := row.Scan(&pinned, &dims)
		if errors.Is(err, pgx.ErrNoRows) {
			v.agentLocked = lock == appendLockWait // no agent: decided on as surely as one locked
			return nil
		}
		if err != nil {
			return err
		}
		v.embed.Stored, v.agentLocked = true, true
		if pinned != nil && dims != nil {
			v.embed.Model, v.embed.Dims = *pinned, int(*dims)
		}
		return nil
	})
}

// appendQueueRequestKeysPG reads what the request keys recorded and, in the
// same round trip, the messages they recorded.
func appendQueueRequestKeysPG(b *pgx.Batch, tenant, session string, reqKeys []string, v *appendViewPG) {
	const recorded = `unnest($3::text[]) AS k(key) CROSS JOIN LATERAL (
		SELECT key, request_hash, seqs FROM request_keys WHERE tenant_id = $1 AND session_id = $2 AND key = k.key LIMIT 1) r`
	b.Queue(`SELECT r.key, r.request_hash, r.seqs FROM `+recorded, tenant, session, reqKeys).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				key, seqs string
				rec       appendRecordedPG
			)
			if err := rows.Scan(&key, &rec.hash, &seqs); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(seqs), &rec.seqs); err != nil {
				return model.Internal(err)
			}
			v.requests[key] = rec
		}
		return rows.Err()
	})
	b.Queue(`SELECT m.* FROM `+recorded+` CROSS JOIN LATERAL json_array_elements_text(r.seqs) AS e(seq)
		CROSS JOIN LATERAL (SELECT `+messageColumnsPG+` FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND seq = e.seq::bigint LIMIT 1) m`,
		tenant, session, reqKeys).Query(func(rows pgx.Rows) error {
		sc := newMsgScanRowPG()
		for rows.Next() {
			m, err := sc.scan(rows)
			if err != nil {
				return err
			}
			v.reqMsgs[m.Seq] = m
		}
		return rows.Err()
	})
}
