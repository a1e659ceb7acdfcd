package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// MaxImportLine bounds one line of an import (transfer.MaxLine).
const MaxImportLine = transfer.MaxLine

// ImportSession restores a session from an export (see ExportSession) read from
// r: ids, seqs, timestamps, counters, metadata, parent_id and forked_at_seq (as
// plain fields: the imported session stores every message itself) and its
// checkpoints.
//
// The stream is read once and checked by transfer.Parse, the checks both
// backends share, into a spool (memory, then a temporary file), so that memory
// stays bounded by one line however large the import. Only when the whole
// stream checks out, checksum and counts included, does one write read the
// spool back and store it all, or nothing. With opts.AsNew the session, its
// messages and checkpoints get new ids.
//
// Errors: malformed_json (KindBadRequest) for a line that is not JSON,
// invalid_import (KindInvalid) for anything else wrong with the content, the
// checksum or the order of the lines, each naming the line ("line 7"); conflict
// (KindConflict) when the session id, a message id or a checkpoint id exists.
// A failed read of r is KindBadRequest wrapping the reader's error.
func (s *Store) ImportSession(ctx context.Context, tenant string, r io.Reader, opts model.ImportOptions) (model.Session, error) {
	sp, err := transfer.Parse(r)
	if err != nil {
		return model.Session{}, err
	}
	defer sp.Close()
	var out model.Session
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = s.importTx(ctx, tx, tenant, sp, opts)
		return err
	})
	return out, err
}

// importTx inserts a checked export, reading it back from the spool. Any failure
// undoes the whole write (its savepoint), so a refused import leaves nothing.
func (s *Store) importTx(ctx context.Context, tx *sql.Tx, tenant string, sp *transfer.Spool, opts model.ImportOptions) (model.Session, error) {
	if err := s.faults.Check(repo.PointSessionWrite); err != nil {
		return model.Session{}, err
	}
	// Another process (the CLI) may have numbered messages since this store
	// opened; start above whatever the file holds.
	var maxGID int64
	if err := tx.StmtContext(ctx, s.st.maxGID).QueryRowContext(ctx).Scan(&maxGID); err != nil {
		return model.Session{}, err
	}
	s.gid = max(s.gid, maxGID)

	lines, err := sp.Lines()
	if err != nil {
		return model.Session{}, model.Internal(err)
	}
	im := s.newSessionImport(ctx, tx, tenant, opts)
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

// sessionImport stores one checked session's lines, as a session import and
// an agent import (one for each of its sessions) read them back.
type sessionImport struct {
	s      *Store
	tx     *sql.Tx
	tenant string
	opts   model.ImportOptions
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
	insert    *sql.Stmt
	pin       *repo.EmbeddingPin // the session's agent's, read at its first embedding line
}

func (s *Store) newSessionImport(ctx context.Context, tx *sql.Tx, tenant string, opts model.ImportOptions) *sessionImport {
	s.usage.invalidate() // the imported messages are no appends' (usagefold.go)
	return &sessionImport{s: s, tx: tx, tenant: tenant, opts: opts, fileChunk: -1, insert: tx.StmtContext(ctx, s.st.insertMessage)}
}

// take stores one line of the session.
func (im *sessionImport) take(ctx context.Context, line int, l model.ExportLine) error {
	s, tx, tenant, opts := im.s, im.tx, im.tenant, im.opts
	switch l.Type {
	case model.LineSession:
		ses := *l.Session
		if opts.AsNew {
			ses.ID = newID(model.PrefixSession)
		}
		if im.agentID != nil {
			ses.AgentID = im.agentID
		}
		im.ses = ses
		// The row is written last, with the newest checkpoint's pause; the
		// id is taken here so that a conflict names this line.
		if _, err := repo.PlaceSession(ses.ID, ses.UserID, false, sessionHolder(ctx, tx, tenant)); err != nil {
			return transfer.InLine(line, err)
		}
		// Its session.created event comes at finish, but at a gid taken
		// now, so that it comes before its messages in the feed.
		im.ses.Incarnation = s.nextGID()
		err := insertImportedSession(ctx, tx, tenant, im.ses)
		if isConstraint(err) {
			return transfer.Conflict(line, "a session with id %q already exists", ses.ID)
		}
		return err
	case model.LineMessage:
		m := l.Message
		if opts.AsNew || (m.Seq <= im.newIDsThrough && im.seen[m.ID]) {
			m.ID = newID(model.PrefixMessage)
		}
		if im.seen != nil {
			im.seen[m.ID] = true
		}
		m.SessionID = im.ses.ID
		im.cumTokens, im.cumCost = im.cumTokens+m.Tokens, im.cumCost+m.Cost
		if m.Role == model.RoleUser {
			im.cumTurns++
		}
		var toolCalls *string
		if m.ToolCalls != nil {
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
		_, err = im.insert.ExecContext(ctx, tenant, im.ses.ID, m.Seq, m.ID, m.Role, m.Content.Text, m.Name, toolCalls,
			m.ToolCallID, m.AgentID, m.Model, m.Tokens, m.Cost, m.Metadata.String(), int64(m.CreatedAt), nil, nil,
			s.nextGID(), im.cumTokens, im.cumCost, parts, m.IsError, item, im.cumTurns, false, m.ClientID)
		if isConstraint(err) {
			return transfer.Conflict(line, "a message with id %q already exists", m.ID)
		}
		if err != nil {
			return err
		}
		if err := s.insertFileRefs(ctx, tx, tenant, im.ses.ID, m.Seq, m.Content.Parts, line); err != nil {
			return err
		}
		// History is kept as it was, pairs or not: resume reports what is off.
		return indexToolRows(ctx, tx, tenant, im.ses.ID, m)
	case model.LineFile:
		var err error
		im.fileChunk, err = importFileChunk(ctx, tx, tenant, l.File, im.fileChunk)
		return err
	case model.LineEmbedding:
		return im.embedding(ctx, line, l.Embedding)
	case model.LineCompaction:
		c := l.Compaction
		if opts.AsNew {
			c.ID = newID(model.PrefixCompaction)
		}
		c.SessionID = im.ses.ID
		im.cmpN++
		err := insertCompaction(ctx, tx, tenant, im.cmpN, *c)
		if isConstraint(err) {
			return transfer.Conflict(line, "a compaction with id %q already exists", c.ID)
		}
		return err
	case model.LineCheckpointWrite:
		return importCheckpointWrite(ctx, tx, tenant, im.ses.ID, l.CheckpointWrite)
	case model.LineCheckpoint:
		c := l.Checkpoint
		if opts.AsNew {
			c.ID = newID(model.PrefixCheckpoint) // the hash does not cover ids
		}
		c.SessionID = im.ses.ID
		stored, delta, err := im.ckps.Next(c)
		if err != nil {
			return err
		}
		err = insertCheckpoint(ctx, tx, tenant, *c, stored)
		if isConstraint(err) {
			return transfer.Conflict(line, "a checkpoint with id %q already exists", c.ID)
		}
		if err != nil {
			return err
		}
		// Stored as a PUT stores them: the one before becomes a delta from this one.
		return keepAsDelta(ctx, tx, tenant, im.ses.ID, c.Namespace, delta, c.Iteration)
	}
	return nil
}

// embedding stores a message's embedding, ready, under the session's agent,
// checked against the agent's pin (or pinning it) as an append's would be.
// The message is the one stored at its seq (its id may be new: as_new).
func (im *sessionImport) embedding(ctx context.Context, line int, x *model.ExportEmbedding) error {
	if im.pin == nil {
		p, err := agentPin(ctx, im.tx, im.tenant, im.ses.AgentID)
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
	var id string
	if err := im.tx.QueryRowContext(ctx, `SELECT id FROM messages WHERE tenant_id = ? AND session_id = ? AND seq = ?`,
		im.tenant, im.ses.ID, x.Seq).Scan(&id); err != nil {
		return err
	}
	return insertMessageEmbedding(ctx, im.tx, im.tenant, im.ses.ID, x.Seq, id, *im.ses.AgentID, x.Model, repo.EncodeVector(x.Embedding))
}

// finish completes the session row once its lines are stored.
func (im *sessionImport) finish(ctx context.Context) (model.Session, error) {
	tx, tenant, ses := im.tx, im.tenant, im.ses
	if im.pin != nil {
		if err := pinAgent(ctx, tx, tenant, *im.pin); err != nil {
			return model.Session{}, err
		}
	}
	if pauseUntil := im.ckps.PauseUntil(); pauseUntil != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET pause_until = ? WHERE tenant_id = ? AND id = ?`,
			*pauseUntil, tenant, ses.ID); err != nil {
			return model.Session{}, err
		}
	}
	// Turns are counted from the messages, whatever the session line says: an
	// export from before turns were counted says 0.
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET turn_count = ? WHERE tenant_id = ? AND id = ?`,
		im.cumTurns, tenant, ses.ID); err != nil {
		return model.Session{}, err
	}
	// The messages' usage follows: they took gids the usage folder has not
	// reached (usagefold.go).
	out, err := getSession(ctx, tx, tenant, ses.ID)
	if err != nil {
		return out, err
	}
	return out, im.s.recordEventAt(ctx, tx, ses.Incarnation, tenant, out.ID, model.EventSessionCreated, repo.SessionEventData(out))
}

// insertImportedSession writes the session row as the export states it.
func insertImportedSession(ctx context.Context, tx *sql.Tx, tenant string, ses model.Session) error {
	var closedAt *int64
	if ses.ClosedAt != nil {
		c := int64(*ses.ClosedAt)
		closedAt = &c
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (tenant_id, id, agent_id, user_id, title, status, metadata, message_count,
		last_seq, total_tokens, total_cost, parent_id, forked_at_seq, prefix_shared,
		created_at, updated_at, closed_at, expires_at, incarnation)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)`,
		tenant, ses.ID, ses.AgentID, ses.UserID, ses.Title, ses.Status, ses.Metadata.String(), ses.MessageCount, ses.LastSeq,
		ses.TotalTokens, ses.TotalCost, ses.ParentID, ses.ForkedAtSeq,
		int64(ses.CreatedAt), int64(ses.UpdatedAt), closedAt, ses.ExpiresAt, ses.Incarnation)
	return err
}

// importFileChunk stores one chunk of an exported file and returns the next
// chunk's number. A file the tenant already has is the same file (its id is
// its bytes' hash and media type): its chunks are skipped (-1), and bytes that
// another of the tenant's files already stores are not stored again.
func importFileChunk(ctx context.Context, tx *sql.Tx, tenant string, c *model.ExportFile, n int) (int, error) {
	if c.Offset == 0 {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM files WHERE tenant_id = ? AND id = ?`, tenant, c.ID).Scan(&one)
		if err == nil {
			return -1, nil
		}
		if err != sql.ErrNoRows {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO files (tenant_id, id, sha256, size, media_type, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			tenant, c.ID, c.SHA256, c.Size, c.MediaType, int64(c.CreatedAt)); err != nil {
			return 0, err
		}
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM file_chunks WHERE tenant_id = ? AND sha256 = ? AND n = 0`, tenant, c.SHA256).Scan(&one)
		if err == nil {
			return -1, nil
		}
		if err != sql.ErrNoRows {
			return 0, err
		}
		n = 0
	}
	if n < 0 {
		return n, nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO file_chunks (tenant_id, sha256, n, data) VALUES (?, ?, ?, ?)`, tenant, c.SHA256, n, c.Data)
	return n + 1, err
}
