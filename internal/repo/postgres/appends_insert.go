package postgres

import (
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// appendInsertsPG gathers what the appends of one transaction store, a column
// at a time, so that each table gets one INSERT ... SELECT FROM unnest(...)
// however many messages, and of however many sessions, the transaction
// carries: a 1,000-message batch or a group commit of appends to many
// sessions is a handful of statements, and the search trigger runs once per
// statement. tenant and session are the session whose appends are being
// decided: what is gathered now is theirs.
type appendInsertsPG struct {
	tenant, session string
	rows            int

	rowTenant, rowSession                       []string
	seq, tokens, createdAt, cumTokens, cumTurns []int64
	cost, cumCost                               []float64
	isError                                     []int32
	id, role, content, metadata                 []string
	name, toolCalls, toolCallID, agentID, model []*string
	key, parts, providerItem, clientID          []*string
	hash                                        [][]byte

	fileSeq, callSeq, resultSeq       []int64
	fileID, callID, resultID          []string
	fileTenant, callTenant, resTenant []string
	fileSes, callSes, resSes          []string

	reqTenant, reqSes []string
	reqKey, reqSeqs   []string
	reqHash           [][]byte
	reqCreated        []int64

	embAgent        string // the session's agent, which the embeddings are stored under
	embSeq          []int64
	embID, embModel []string
	embVec          [][]byte
	pinModel        string // the model and dimensions the embeddings pin the agent to; "": none
	pinDims         int
}

func newAppendInsertsPG(tenant, session string) *appendInsertsPG {
	return &appendInsertsPG{tenant: tenant, session: session}
}

// addMessage gathers a numbered message with the session's running totals
// after it.
func (w *appendInsertsPG) addMessage(r *appendRowPG, cumTokens int64, cumCost float64, cumTurns int64) {
	m := &r.msg
	w.rows++
	w.rowTenant, w.rowSession = append(w.rowTenant, w.tenant), append(w.rowSession, w.session)
	isError := int32(0)
	if m.IsError {
		isError = 1
	}
	w.seq, w.tokens, w.createdAt = append(w.seq, m.Seq), append(w.tokens, m.Tokens), append(w.createdAt, int64(m.CreatedAt))
	w.cumTokens, w.cumTurns = append(w.cumTokens, cumTokens), append(w.cumTurns, cumTurns)
	w.cost, w.cumCost, w.isError = append(w.cost, m.Cost), append(w.cumCost, cumCost), append(w.isError, isError)
	w.id, w.role = append(w.id, m.ID), append(w.role, string(m.Role))
	w.content, w.metadata = append(w.content, m.Content.Text), append(w.metadata, r.metadata)
	w.name, w.toolCalls, w.toolCallID = append(w.name, m.Name), append(w.toolCalls, r.toolCalls), append(w.toolCallID, m.ToolCallID)
	w.agentID, w.model = append(w.agentID, m.AgentID), append(w.model, m.Model)
	w.key, w.parts, w.providerItem = append(w.key, r.key), append(w.parts, r.parts), append(w.providerItem, r.providerItem)
	w.hash, w.clientID = append(w.hash, r.hash), append(w.clientID, m.ClientID)
	for _, f := range r.files {
		w.fileSeq, w.fileID = append(w.fileSeq, m.Seq), append(w.fileID, f)
		w.fileTenant, w.fileSes = append(w.fileTenant, w.tenant), append(w.fileSes, w.session)
	}
	for _, c := range m.ToolCalls {
		w.callSeq, w.callID = append(w.callSeq, m.Seq), append(w.callID, c.ID)
		w.callTenant, w.callSes = append(w.callTenant, w.tenant), append(w.callSes, w.session)
	}
	if m.Role == model.RoleTool && m.ToolCallID != nil {
		w.resultSeq, w.resultID = append(w.resultSeq, m.Seq), append(w.resultID, *m.ToolCallID)
		w.resTenant, w.resSes = append(w.resTenant, w.tenant), append(w.resSes, w.session)
	}
}

// addEmbeddings gathers the embeddings the fresh rows of a carry (numbered
// already), stored ready under pin's agent; pins says the agent had none
// and they pin it.
func (w *appendInsertsPG) addEmbeddings(a *appendOpPG, fresh []int, pin repo.EmbeddingPin, pins bool) {
	w.embAgent = *pin.AgentID
	for _, i := range fresh {
		r := &a.rows[i]
		if r.embedding == nil {
			continue
		}
		w.embSeq, w.embID = append(w.embSeq, r.msg.Seq), append(w.embID, r.msg.ID)
		w.embModel, w.embVec = append(w.embModel, r.embedModel), append(w.embVec, r.embedding)
	}
	if pins {
		w.pinModel, w.pinDims = pin.Model, pin.Dims
	}
}

// addRequest gathers what a request key records: the seqs of its messages.
func (w *appendInsertsPG) addRequest(key string, hash []byte, out []model.Message, now model.Time) {
	seqs := make([]int64, len(out))
	for i, m := range out {
		seqs[i] = m.Seq
	}
	j, _ := json.Marshal(seqs)
	w.reqTenant, w.reqSes = append(w.reqTenant, w.tenant), append(w.reqSes, w.session)
	w.reqKey, w.reqHash = append(w.reqKey, key), append(w.reqHash, hash)
	w.reqSeqs, w.reqCreated = append(w.reqSeqs, string(j)), append(w.reqCreated, int64(now))
}

// queue queues the inserts, messages first (the other tables name them).
func (w *appendInsertsPG) queue(b *pgx.Batch) {
	if w.rows > 0 {
		b.Queue(`INSERT INTO messages (tenant_id, session_id, seq, id, role, content, name, tool_calls,
			tool_call_id, agent_id, model, tokens, cost, metadata, created_at, idempotency_key, request_hash,
			gid, cum_tokens, cum_cost, parts, is_error, provider_item, cum_turns, client_id)
			SELECT u.tenant, u.session, u.seq, u.id, u.role, u.content, u.name, u.tool_calls::json, u.tool_call_id, u.agent_id,
				u.model, u.tokens, u.cost, u.metadata::json, u.created_at, u.key, u.hash, nextval('messages_gid'),
				u.cum_tokens, u.cum_cost, u.parts::json, u.is_error, u.provider_item::json, u.cum_turns, u.client_id
			FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
				$10::text[], $11::text[], $12::bigint[], $13::float8[], $14::text[], $15::bigint[], $16::text[],
				$17::bytea[], $18::bigint[], $19::float8[], $20::text[], $21::int[], $22::text[], $23::bigint[],
				$24::text[])
			AS u(tenant, session, seq, id, role, content, name, tool_calls, tool_call_id, agent_id, model, tokens, cost, metadata,
				created_at, key, hash, cum_tokens, cum_cost, parts, is_error, provider_item, cum_turns, client_id)`,
			w.rowTenant, w.rowSession, w.seq, w.id, w.role, w.content, w.name, w.toolCalls, w.toolCallID, w.agentID,
			w.model, w.tokens, w.cost, w.metadata, w.createdAt, w.key, w.hash, w.cumTokens, w.cumCost,
			w.parts, w.isError, w.providerItem, w.cumTurns, w.clientID)
		// The live feed's events, in seq order, numbered after the commit
		// (kickSequencer); the usage rollups follow them (usagefold.go).
		b.Queue(`INSERT INTO events (tenant_id, session_id, type, message_id, seq, created_at)
			SELECT u.tenant, u.session, '`+string(model.EventMessageAppended)+`', u.id, u.seq, $5
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS u(tenant, session, id, seq)`,
			w.rowTenant, w.rowSession, w.id, w.seq, int64(model.Now()))
	}
	if len(w.fileSeq) > 0 {
		// With the session's user, so that "does this user reference this
		// file?" is one index probe (filesReadablePG).
		b.Queue(`INSERT INTO message_files (tenant_id, session_id, seq, file_id, user_id)
			SELECT u.tenant, u.session, u.seq, u.file_id, s.user_id
			FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS u(tenant, session, seq, file_id)
			JOIN sessions s ON s.tenant_id = u.tenant AND s.id = u.session
			ON CONFLICT DO NOTHING`, w.fileTenant, w.fileSes, w.fileSeq, w.fileID)
	}
	if len(w.callSeq) > 0 {
		b.Queue(`INSERT INTO tool_calls (tenant_id, session_id, call_id, seq)
			SELECT u.tenant, u.session, u.call_id, u.seq FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
				AS u(tenant, session, call_id, seq)
			ON CONFLICT DO NOTHING`, w.callTenant, w.callSes, w.callID, w.callSeq)
	}
	if len(w.resultSeq) > 0 {
		b.Queue(`INSERT INTO tool_results (tenant_id, session_id, call_id, seq)
			SELECT u.tenant, u.session, u.call_id, u.seq FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
				AS u(tenant, session, call_id, seq)
			ON CONFLICT DO NOTHING`, w.resTenant, w.resSes, w.resultID, w.resultSeq)
	}
	if len(w.embSeq) > 0 {
		// Only a group of one session carries embeddings (appendQueuesPG).
		// A place may hold the embedding of a message a rewind removed: it is replaced.
		b.Queue(`INSERT INTO message_embeddings (tenant_id, session_id, seq, message_id, agent_id, state, model, embedding)
			SELECT $1, $2, u.seq, u.id, $3, 'ready', u.model, u.vec
			FROM unnest($4::bigint[], $5::text[], $6::text[], $7::bytea[]) AS u(seq, id, model, vec)
			ON CONFLICT (tenant_id, session_id, seq) DO UPDATE SET message_id = excluded.message_id, agent_id = excluded.agent_id,
				state = 'ready', model = excluded.model, embedding = excluded.embedding, error = NULL, attempts = 0, due = NULL`,
			w.tenant, w.session, w.embAgent, w.embSeq, w.embID, w.embModel, w.embVec)
	}
	if w.pinModel != "" {
		b.Queue(`UPDATE agents SET embedding_model = $3, embedding_dims = $4
			WHERE tenant_id = $1 AND id = $2 AND embedding_dims IS NULL`, w.tenant, w.embAgent, w.pinModel, w.pinDims)
	}
	if len(w.reqKey) > 0 {
		b.Queue(`INSERT INTO request_keys (tenant_id, session_id, key, request_hash, seqs, created_at)
			SELECT u.tenant, u.session, u.key, u.hash, u.seqs::json, u.created_at
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::bigint[])
				AS u(tenant, session, key, hash, seqs, created_at)`,
			w.reqTenant, w.reqSes, w.reqKey, w.reqHash, w.reqSeqs, w.reqCreated)
	}
}
