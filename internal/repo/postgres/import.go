package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// ImportSession restores a session from an export, SQLite's or this store's
// (see sqlite.Store.ImportSession for what is kept): the stream is checked
// by transfer.Parse, the checks both backends share, so that the two refuse
// the same exports with the same errors; then one transaction stores it all,
// or nothing. With opts.AsNew the session, its messages, checkpoints and
// compactions get new ids.
//
// Errors: malformed_json, invalid_import (naming the line), conflict (naming
// the line whose session, message, checkpoint or compaction id exists).
func (s *Store) ImportSession(ctx context.Context, tenant string, r io.Reader, opts model.ImportOptions) (model.Session, error) {
	sp, err := transfer.Parse(r)
	if err != nil {
		return model.Session{}, err
	}
	defer sp.Close()
	var out model.Session
	err = s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		// Made afresh for each try: a retried transaction starts from nothing.
		im := &importTxPG{tx: tx, tenant: tenant, asNew: opts.AsNew, fileChunk: -1}
		var err error
		out, err = im.run(ctx, sp)
		return err
	})
	return out, err
}

// importBatchRowsPG and importBatchBytesPG bound how many message statements
// (and roughly how many bytes of them) an import sends in one round trip:
// one round trip a message would make a long session's import slow, one
// batch of everything would hold the whole session in memory.
const (
	importBatchRowsPG  = 1000
	importBatchBytesPG = 4 << 20
)

// importTxPG is one try at storing a checked export.
type importTxPG struct {
	tx     pgx.Tx
	tenant string
	asNew  bool
	// agentID, if set, replaces the session's agent_id: an agent imported
	// under a new id takes its sessions along.
	agentID *string
	// newIDsThrough gives the messages up to this seq new ids if seen holds
	// them: a fork's inherited ones, whose ids its parent, imported before
	// it in the same agent import, holds. seen is every message id that
	// import has stored (nil for a session import).
	newIDsThrough int64
	seen          map[string]bool

	ses       model.Session
	cumTokens int64
	cumTurns  int64
	cumCost   float64
	ckps      transfer.CheckpointRows
	fileChunk int // the next chunk's n, or -1 while a file the tenant has is skipped
	cmpN      int64
	pin       *repo.EmbeddingPin // the session's agent's, read at its first embedding line

	// Messages are sent in batches; checks[i] judges the outcome of the
	// batch's i-th statement (nil: nothing to judge), so that a conflict is
	// still told by the line that holds it, the first such line first.
	batch      pgx.Batch
	checks     []func(pgconn.CommandTag) error
	batchBytes int
}

func (im *importTxPG) run(ctx context.Context, sp *transfer.Spool) (model.Session, error) {
	lines, err := sp.Lines()
	if err != nil {
		return model.Session{}, model.Internal(err)
	}
	for {
		line, l, err := lines.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return model.Session{}, err
		}
		if err := im.take(ctx, line, l); err != nil {
			return model.Session{}, err
		}
	}
	return im.finish(ctx)
}

// take stores (or queues) one line of the session.
func (im *importTxPG) take(ctx context.Context, line int, l model.ExportLine) error {
	if l.Type != model.LineMessage {
		if err := im.flushMessages(ctx); err != nil {
			return err
		}
	}
	var err error
	switch l.Type {
	case model.LineSession:
		err = im.session(ctx, line, *l.Session)
	case model.LineFile:
		im.fileChunk, err = importFileChunkPG(ctx, im.tx, im.tenant, l.File, im.fileChunk)
	case model.LineMessage:
		err = im.message(ctx, line, l.Message)
	case model.LineCheckpoint:
		err = im.checkpoint(ctx, line, l.Checkpoint)
	case model.LineCheckpointWrite:
		err = im.checkpointWrite(ctx, l.CheckpointWrite)
	case model.LineCompaction:
		err = im.compaction(ctx, line, l.Compaction)
	case model.LineEmbedding:
		err = im.embedding(ctx, line, l.Embedding)
	}
	return err
}

// embedding stores a message's embedding as SQLite's import does: ready,
// under the session's agent, whose row it locks while it checks (or sets)
// the agent's pin, as an append's embedding does.
func (im *importTxPG) embedding(ctx context.Context, line int, x *model.ExportEmbedding) error {
	if im.pin == nil {
		p, err := agentPinPG(ctx, im.tx, im.tenant, im.ses.AgentID)
		if err != nil {
			return err
		}
		im.pin = &p
	}
	after, _, problem := im.pin.Admit(x.Model, len(x.Embedding))
	if problem != "" {
		return model.InvalidImport(line, "embedding: "+problem)
	}
	*im.pin = after
	_, err := im.tx.Exec(ctx, `INSERT INTO message_embeddings (tenant_id, session_id, seq, message_id, agent_id, state, model, embedding)
		SELECT $1, $2, $3, m.id, $4, 'ready', $5, $6 FROM messages m WHERE m.tenant_id = $1 AND m.session_id = $2 AND m.seq = $3
		ON CONFLICT (tenant_id, session_id, seq) DO UPDATE SET message_id = excluded.message_id, agent_id = excluded.agent_id,
			state = 'ready', model = excluded.model, embedding = excluded.embedding, error = NULL, attempts = 0, due = NULL`,
		im.tenant, im.ses.ID, x.Seq, *im.ses.AgentID, x.Model, repo.EncodeVector(x.Embedding))
	return err
}

// agentPinPG is the agent's pin as stored (nil agent: none), its row locked
// as pinEmbedding locks it.
func agentPinPG(ctx context.Context, tx pgx.Tx, tenant string, agent *string) (repo.EmbeddingPin, error) {
	pin := repo.EmbeddingPin{AgentID: agent}
	if agent == nil {
		return pin, nil
	}
	var (
		pinned *string
		dims   *int64
	)
	err := tx.QueryRow(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE`,
		tenant, *agent).Scan(&pinned, &dims)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return pin, nil
	case err != nil:
		return pin, err
	}
	pin.Stored = true
	if pinned != nil && dims != nil {
		pin.Model, pin.Dims = *pinned, int(*dims)
	}
	return pin, nil
}

// finish completes the session row once its lines are stored.
func (im *importTxPG) finish(ctx context.Context) (model.Session, error) {
	if err := im.flushMessages(ctx); err != nil {
		return model.Session{}, err
	}
	if p := im.pin; p != nil && p.Pins {
		if _, err := im.tx.Exec(ctx, `UPDATE agents SET embedding_model = $3, embedding_dims = $4
			WHERE tenant_id = $1 AND id = $2 AND embedding_dims IS NULL`, im.tenant, *p.AgentID, p.Model, p.Dims); err != nil {
			return model.Session{}, err
		}
	}
	if pause := im.ckps.PauseUntil(); pause != nil {
		if _, err := im.tx.Exec(ctx, `UPDATE sessions SET pause_until = $1 WHERE tenant_id = $2 AND id = $3`,
			*pause, im.tenant, im.ses.ID); err != nil {
			return model.Session{}, err
		}
	}
	// Turns are counted from the messages, whatever the session line says: an
	// export from before turns were counted says 0.
	if _, err := im.tx.Exec(ctx, `UPDATE sessions SET turn_count = $1 WHERE tenant_id = $2 AND id = $3`,
		im.cumTurns, im.tenant, im.ses.ID); err != nil {
		return model.Session{}, err
	}
	if err := addUsagePG(ctx, im.tx, im.tenant, im.ses.ID, 0, allSeqsPG); err != nil {
		return model.Session{}, err
	}
	out, err := getSessionTx(ctx, im.tx, im.tenant, im.ses.ID, "")
	if err != nil {
		return out, err
	}
	return out, recordEventPG(ctx, im.tx, im.tenant, out.ID, model.EventSessionCreated, repo.SessionEventData(out))
}

// session writes the session row as the export states it, but stored whole:
// prefix_shared 0, as the import stores every message itself. ON CONFLICT
// rather than catching the unique violation: the server would log every
// refused import as an error.
func (im *importTxPG) session(ctx context.Context, line int, ses model.Session) error {
	if im.asNew {
		ses.ID = newID(model.PrefixSession)
	} else if _, err := repo.PlaceSession(ses.ID, ses.UserID, false, sessionHolderPG(ctx, im.tx, im.tenant)); err != nil {
		return transfer.InLine(line, err)
	}
	if im.agentID != nil {
		ses.AgentID = im.agentID
	}
	im.ses = ses
	var closedAt *int64
	if ses.ClosedAt != nil {
		c := int64(*ses.ClosedAt)
		closedAt = &c
	}
	tag, err := im.tx.Exec(ctx, `INSERT INTO sessions (tenant_id, id, agent_id, title, status, metadata, message_count,
		last_seq, total_tokens, total_cost, parent_id, forked_at_seq, prefix_shared, created_at, updated_at, closed_at, user_id, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 0, $13, $14, $15, $16, $17) ON CONFLICT DO NOTHING`,
		im.tenant, ses.ID, ses.AgentID, ses.Title, string(ses.Status), ses.Metadata.String(), ses.MessageCount, ses.LastSeq,
		ses.TotalTokens, ses.TotalCost, ses.ParentID, ses.ForkedAtSeq, int64(ses.CreatedAt), int64(ses.UpdatedAt), closedAt, ses.UserID, timePtrPG(ses.ExpiresAt))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return transfer.Conflict(line, "a session with id %q already exists", ses.ID)
	}
	return nil
}

// message queues one message, its file references and its tool index rows
// (history is kept as it was, pairs or not: resume reports what is off).
func (im *importTxPG) message(ctx context.Context, line int, m *model.Message) error {
	if im.asNew || (m.Seq <= im.newIDsThrough && im.seen[m.ID]) {
		m.ID = newID(model.PrefixMessage)
	}
	if im.seen != nil {
		im.seen[m.ID] = true
	}
	im.cumTokens, im.cumCost = im.cumTokens+m.Tokens, im.cumCost+m.Cost
	if m.Role == model.RoleUser {
		im.cumTurns++
	}
	var toolCalls *string
	if m.ToolCalls != nil { // as SQLite's import: an empty list stays a list
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return model.Internal(err)
		}
		tc := string(b)
		toolCalls = &tc
	}
	parts, item, _, err := repo.StoredColumns(*m)
	if err != nil {
		return err
	}
	isError := 0
	if m.IsError {
		isError = 1
	}
	meta := m.Metadata.String()
	id := m.ID
	im.queue(`INSERT INTO messages (tenant_id, session_id, seq, id, role, content, name, tool_calls,
		tool_call_id, agent_id, model, tokens, cost, metadata, created_at, gid, cum_tokens, cum_cost, parts,
		is_error, provider_item, cum_turns, client_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, nextval('messages_gid'),
		$16, $17, $18, $19, $20, $21, $22) ON CONFLICT (tenant_id, id) DO NOTHING`,
		func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() == 0 {
				return transfer.Conflict(line, "a message with id %q already exists", id)
			}
			return nil
		},
		im.tenant, im.ses.ID, m.Seq, m.ID, string(m.Role), m.Content.Text, m.Name, toolCalls,
		m.ToolCallID, m.AgentID, m.Model, m.Tokens, m.Cost, meta, int64(m.CreatedAt),
		im.cumTokens, im.cumCost, parts, isError, item, im.cumTurns, m.ClientID)
	im.batchBytes += len(m.Content.Text) + len(meta) + len(m.ProviderItem)
	if parts != nil {
		im.batchBytes += len(*parts)
	}
	if toolCalls != nil {
		im.batchBytes += len(*toolCalls)
	}

	// The file lines came first, so each file is the tenant's by now; the
	// check is the one SQLite makes, in its words, should that ever not hold.
	seen := map[string]bool{}
	for j, p := range m.Content.Parts {
		if p.FileID == "" || seen[p.FileID] {
			continue
		}
		seen[p.FileID] = true
		im.queue(`INSERT INTO message_files (tenant_id, session_id, seq, file_id, user_id)
			SELECT $1::text, $2::text, $3::bigint, $4::text, $5::text WHERE EXISTS (SELECT 1 FROM files WHERE tenant_id = $1 AND id = $4)`,
			func(tag pgconn.CommandTag) error {
				if tag.RowsAffected() == 0 {
					return transfer.MissingFile(line, j)
				}
				return nil
			},
			im.tenant, im.ses.ID, m.Seq, p.FileID, im.ses.UserID)
	}
	before := im.batch.Len()
	appendQueueToolRowsPG(&im.batch, im.tenant, im.ses.ID, m)
	for range im.batch.Len() - before {
		im.checks = append(im.checks, nil)
	}
	if im.batch.Len() >= importBatchRowsPG || im.batchBytes >= importBatchBytesPG {
		return im.flushMessages(ctx)
	}
	return nil
}

func (im *importTxPG) queue(sql string, check func(pgconn.CommandTag) error, args ...any) {
	im.batch.Queue(sql, args...)
	im.checks = append(im.checks, check)
}

// flushMessages sends the queued message statements and judges them in order.
func (im *importTxPG) flushMessages(ctx context.Context) error {
	n := im.batch.Len()
	if n == 0 {
		return nil
	}
	br := im.tx.SendBatch(ctx, &im.batch)
	var err error
	for i := 0; i < n && err == nil; i++ {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err == nil && im.checks[i] != nil {
			err = im.checks[i](tag)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	im.batch, im.checks, im.batchBytes = pgx.Batch{}, im.checks[:0], 0
	return err
}

// checkpoint stores one checkpoint as a PUT stores it, through the checkpoint
// writer's own helpers: a full row, the one before it then kept as a delta
// from it when that pays. The rows come out as SQLite's import makes them,
// so the two export them alike.
func (im *importTxPG) checkpoint(ctx context.Context, line int, c *model.Checkpoint) error {
	if im.asNew {
		c.ID = newID(model.PrefixCheckpoint) // the hash does not cover ids
	}
	c.SessionID = im.ses.ID
	stored, delta, err := im.ckps.Next(c)
	if err != nil {
		return err
	}
	err = insertCheckpointPG(ctx, im.tx, im.tenant, *c, stored)
	if isConstraint(err) {
		return transfer.Conflict(line, "a checkpoint with id %q already exists", c.ID)
	}
	if err != nil {
		return err
	}
	return keepAsDeltaPG(ctx, im.tx, im.tenant, im.ses.ID, c.Namespace, delta, c.Iteration)
}

// compaction stores one compaction as CreateCompaction does (the summary's
// parts as JSON, their text searchable), numbered in the export's order.
func (im *importTxPG) compaction(ctx context.Context, line int, c *model.Compaction) error {
	if im.asNew {
		c.ID = newID(model.PrefixCompaction)
	}
	c.SessionID = im.ses.ID
	im.cmpN++
	summary := c.Summary.Text
	var parts, item *string
	if c.Summary.Parts != nil {
		b, err := json.Marshal(c.Summary.Parts)
		if err != nil {
			return model.Internal(err)
		}
		p := string(b)
		parts, summary = &p, model.SearchText(c.Summary.Parts)
	}
	if len(c.ProviderItem) > 0 {
		p := string(c.ProviderItem)
		item = &p
	}
	tag, err := im.tx.Exec(ctx, `INSERT INTO compactions (tenant_id, session_id, n, id, through_seq, summary, summary_parts,
		tokens, model, provider_item, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (tenant_id, id) DO NOTHING`,
		im.tenant, c.SessionID, im.cmpN, c.ID, c.ThroughSeq, summary, parts, c.Tokens, c.Model, item, int64(c.CreatedAt))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return transfer.Conflict(line, "a compaction with id %q already exists", c.ID)
	}
	return nil
}

// importFileChunkPG stores one chunk of an exported file and returns the next
// chunk's number. A file the tenant already has is the same file (its id is
// its bytes' hash and media type): it is used as is and its chunks are
// skipped (-1), and bytes another of the tenant's files already stores are
// not stored again. Both are share-locked until the import commits, as an
// upload holds them (filesHoldChunksPG), so that a purge or rewind releasing
// them meanwhile cannot take them from under the import's messages.
func importFileChunkPG(ctx context.Context, tx pgx.Tx, tenant string, c *model.ExportFile, n int) (int, error) {
	if c.Offset == 0 {
		held, err := importHoldFilePG(ctx, tx, tenant, c)
		if err != nil || held {
			return -1, err
		}
		var one int
		err = tx.QueryRow(ctx, `SELECT 1 FROM file_chunks WHERE tenant_id = $1 AND sha256 = $2 AND n = 0 FOR SHARE`,
			tenant, c.SHA256).Scan(&one)
		if err == nil {
			return -1, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, err
		}
		n = 0
	}
	if n < 0 {
		return n, nil
	}
	data := c.Data
	if data == nil {
		data = []byte{} // an empty file's one chunk: pgx would send nil as NULL
	}
	// DO NOTHING: an upload of the same bytes may have stored them meanwhile.
	_, err := tx.Exec(ctx, `INSERT INTO file_chunks (tenant_id, sha256, n, data) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, sha256, n) DO NOTHING`, tenant, c.SHA256, n, data)
	return n + 1, err
}

// importHoldFilePG share-locks the tenant's file c.ID when it exists (held),
// and otherwise creates its row. An upload of the same file that commits
// between the two statements makes the insert do nothing; the lock is then
// taken on its row at the next try.
func importHoldFilePG(ctx context.Context, tx pgx.Tx, tenant string, c *model.ExportFile) (held bool, err error) {
	for try := 0; try < 3; try++ {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM files WHERE tenant_id = $1 AND id = $2 FOR SHARE`, tenant, c.ID).Scan(&one)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return false, err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO files (tenant_id, id, sha256, size, media_type, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, id) DO NOTHING`,
			tenant, c.ID, c.SHA256, c.Size, c.MediaType, int64(c.CreatedAt))
		if err != nil {
			return false, err
		}
		if tag.RowsAffected() == 1 {
			return false, nil
		}
	}
	// Created, then released, three times over while this import ran.
	return false, model.Unavailable(fmt.Errorf("postgres: file %s was removed during the import, three times", c.ID))
}
