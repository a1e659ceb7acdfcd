package sqlite

import (
	"context"
	"database/sql"
	"io"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// ExportAgent writes an agent as NDJSON to w (see model.AgentExportLine): the
// header, the agent with its pinned embedding model, its blocks by label, its
// live passages oldest first with their embeddings, then its live sessions
// oldest first, each exactly as ExportSession writes it, and the agent_end
// line. Everything is read in one read-only transaction: one snapshot.
//
// Errors before the first write: KindNotFound, corrupted (a damaged
// checkpoint in any of its sessions). An error after it leaves the stream
// without its agent_end line, which an import refuses.
func (s *Store) ExportAgent(ctx context.Context, tenant, id string, w io.Writer) error {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback() // read-only: nothing to undo

	a, err := getAgent(ctx, tx, tenant, id)
	if err != nil {
		return err
	}
	ea := model.ExportAgent{Agent: a}
	var pinned sql.NullString
	var dims sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = ? AND id = ?`,
		tenant, id).Scan(&pinned, &dims); err != nil {
		return mapErr(err)
	}
	if dims.Valid {
		d := int(dims.Int64)
		ea.EmbeddingModel, ea.EmbeddingDims = &pinned.String, &d
	}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM sessions WHERE tenant_id = ? AND agent_id = ?
		AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id`, tenant, id, int64(model.Now()))
	if err != nil {
		return mapErr(err)
	}
	sessions, err := collect(rows, func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	})
	if err != nil {
		return mapErr(err)
	}
	for _, sid := range sessions {
		if err := checkSessionExport(ctx, tx, tenant, sid); err != nil {
			return err
		}
	}

	e, err := transfer.NewAgentWriter(w)
	if err != nil {
		return err
	}
	if err := e.Agent(&ea); err != nil {
		return err
	}
	if err := exportBlocks(ctx, tx, e, tenant, id); err != nil {
		return err
	}
	if err := exportPassages(ctx, tx, e, tenant, id); err != nil {
		return err
	}
	for _, sid := range sessions {
		if err := exportSessionTx(ctx, tx, e.Session(), tenant, sid); err != nil {
			return err
		}
	}
	return e.End()
}

func exportBlocks(ctx context.Context, tx *sql.Tx, e *transfer.AgentWriter, tenant, agentID string) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+blockColumns+` FROM blocks WHERE tenant_id = ? AND agent_id = ? ORDER BY label`, tenant, agentID)
	if err != nil {
		return mapErr(err)
	}
	blocks, err := collect(rows, scanBlock)
	if err != nil {
		return mapErr(err)
	}
	for _, b := range blocks {
		if err := e.Block(&model.ExportBlock{ID: b.ID, Label: b.Label, Value: b.Value, Limit: b.Limit,
			Description: b.Description, ReadOnly: b.ReadOnly, Version: b.Version, UpdatedAt: b.UpdatedAt}); err != nil {
			return err
		}
	}
	return nil
}

// exportPassages writes the agent's live passages, oldest first, a chunk of
// rows at a time.
func exportPassages(ctx context.Context, tx *sql.Tx, e *transfer.AgentWriter, tenant, agentID string) error {
	var embModel sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT embedding_model FROM agents WHERE tenant_id = ? AND id = ?`,
		tenant, agentID).Scan(&embModel); err != nil {
		return mapErr(err)
	}
	now := int64(model.Now())
	var afterAt int64 = -1 << 63
	afterID := ""
	for {
		rows, err := tx.QueryContext(ctx, `SELECT `+passageColumns+`, p.embedding FROM passages p
			WHERE p.tenant_id = ? AND p.agent_id = ? AND `+passageLive+` AND (p.created_at, p.id) > (?, ?)
			ORDER BY p.created_at, p.id LIMIT ?`, tenant, agentID, now, afterAt, afterID, exportChunk)
		if err != nil {
			return mapErr(err)
		}
		n := 0
		for rows.Next() {
			var vec []byte
			p, err := scanPassage(rows, &vec)
			if err != nil {
				rows.Close()
				return mapErr(err)
			}
			ep := model.ExportPassage{ID: p.ID, Content: p.Content, Tags: p.Tags, Metadata: p.Metadata,
				CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt}
			if vec != nil {
				ep.Embedding, ep.EmbeddingModel = repo.DecodeVector(vec), embModel.String
			}
			if err := e.Passage(&ep); err != nil {
				rows.Close()
				return err
			}
			afterAt, afterID = int64(p.CreatedAt), p.ID
			n++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return mapErr(err)
		}
		if n < exportChunk {
			return nil
		}
	}
}

// ImportAgent restores an agent from an agent export (see ExportAgent) read
// from r: the agent with its pinned embedding model, its blocks (at their
// exported version; their history starts there), its passages with their
// embeddings, ids and timestamps, and its sessions as ImportSession restores
// them. The stream is checked whole by transfer.ParseAgent first; then one
// write stores it all, or nothing. With opts.AsNew the agent and its sessions
// (and their messages, checkpoints, compactions) get new ids; blocks and
// passages keep theirs, which belong to the agent. A fork exported with its
// parent carries the parent's message ids for its inherited messages: those
// the parent holds by then are stored under new ids.
//
// Errors: malformed_json, invalid_import (naming the line), conflict (naming
// the line whose agent, session, message, checkpoint or compaction id exists).
func (s *Store) ImportAgent(ctx context.Context, tenant string, r io.Reader, opts model.ImportOptions) (model.Agent, error) {
	sp, err := transfer.ParseAgent(r)
	if err != nil {
		return model.Agent{}, err
	}
	defer sp.Close()
	var out model.Agent
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = s.importAgentTx(ctx, tx, tenant, sp, opts)
		return err
	})
	return out, err
}

func (s *Store) importAgentTx(ctx context.Context, tx *sql.Tx, tenant string, sp *transfer.Spool, opts model.ImportOptions) (model.Agent, error) {
	if err := s.faults.Check(repo.PointSessionWrite); err != nil {
		return model.Agent{}, err
	}
	var maxGID int64
	if err := tx.StmtContext(ctx, s.st.maxGID).QueryRowContext(ctx).Scan(&maxGID); err != nil {
		return model.Agent{}, err
	}
	s.gid = max(s.gid, maxGID)
	lines, err := sp.Lines()
	if err != nil {
		return model.Agent{}, model.Internal(err)
	}
	var (
		a             model.ExportAgent
		im            *sessionImport
		imported      = map[string]bool{} // the sessions stored so far, by their ids in the export
		seen          = map[string]bool{} // the message ids stored so far
		insertPassage *sql.Stmt
	)
	for {
		line, al, l, err := lines.NextAgent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return model.Agent{}, err
		}
		switch {
		case al.Type == model.LineAgent:
			a = *al.Agent
			// The server calls an agent's endpoint for the tenant, so only the
			// API, which checks it against --embedding-allowed-urls, sets one:
			// an import never brings it.
			a.Embedding = nil
			if opts.AsNew {
				a.ID = newID(model.PrefixAgent)
			}
			normalizeAgent(&a.Agent)
			if err := insertAgent(tx, tenant, a.Agent); err != nil {
				if model.AsError(err).Kind == model.KindConflict {
					return model.Agent{}, transfer.Conflict(line, "an agent with id %q already exists", a.ID)
				}
				return model.Agent{}, err
			}
			if a.EmbeddingDims != nil {
				if _, err := tx.ExecContext(ctx, `UPDATE agents SET embedding_model = ?, embedding_dims = ? WHERE tenant_id = ? AND id = ?`,
					*a.EmbeddingModel, *a.EmbeddingDims, tenant, a.ID); err != nil {
					return model.Agent{}, err
				}
			}
		case al.Type == model.LineBlock:
			if err := insertImportedBlock(ctx, tx, tenant, a.ID, al.Block); err != nil {
				return model.Agent{}, err
			}
		case al.Type == model.LinePassage:
			p := al.Passage
			var vec []byte
			if len(p.Embedding) > 0 {
				vec = repo.EncodeVector(p.Embedding)
			}
			embModel, embState := repo.NewPassageEmbedding(model.CreatePassage{Embedding: p.Embedding, EmbeddingModel: p.EmbeddingModel}, false)
			if insertPassage == nil { // prepared once: an agent may have many
				if insertPassage, err = tx.PrepareContext(ctx, `INSERT INTO passages (tenant_id, agent_id, id, content, tags, metadata,
					created_at, expires_at, embedding, embedding_model, embedding_state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
					return model.Agent{}, err
				}
				defer insertPassage.Close()
			}
			if _, err := insertPassage.ExecContext(ctx, tenant, a.ID, p.ID, p.Content, encodeList(nonNil(p.Tags)),
				objectOrEmpty(p.Metadata), int64(p.CreatedAt), p.ExpiresAt, vec, embModel, embState); err != nil {
				return model.Agent{}, err
			}
		case al.Type != "":
			// the header: ParseAgent has checked its format and version
		case l.Type == model.LineSession:
			im = s.newSessionImport(ctx, tx, tenant, opts)
			im.agentID = &a.ID
			im.newIDsThrough, im.seen = transfer.InheritedThrough(l.Session, imported), seen
			imported[l.Session.ID] = true
			if err := im.take(ctx, line, l); err != nil {
				return model.Agent{}, err
			}
		case l.Type == model.LineEnd:
			if _, err := im.finish(ctx); err != nil {
				return model.Agent{}, err
			}
			im = nil
		default:
			if err := im.take(ctx, line, l); err != nil {
				return model.Agent{}, err
			}
		}
	}
	return getAgent(ctx, tx, tenant, a.ID)
}

// insertImportedBlock writes a block at its exported version, with that
// version as the first of its history.
func insertImportedBlock(ctx context.Context, tx *sql.Tx, tenant, agentID string, b *model.ExportBlock) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO blocks (tenant_id, agent_id, label, id, value, limit_chars, description, read_only, version, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenant, agentID, b.Label, b.ID, b.Value, b.Limit, b.Description, b.ReadOnly, b.Version, int64(b.UpdatedAt)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO block_history (tenant_id, agent_id, label, version, value, limit_chars, description, read_only, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tenant, agentID, b.Label, b.Version, b.Value, b.Limit, b.Description, b.ReadOnly, int64(b.UpdatedAt))
	return err
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func objectOrEmpty(o model.Object) string {
	if o == nil {
		return "{}"
	}
	return o.String()
}
