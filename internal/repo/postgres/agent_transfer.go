package postgres

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// ExportAgent writes an agent as NDJSON to w, the same bytes SQLite's
// ExportAgent writes for the same agent (see sqlite.Store.ExportAgent for what
// it holds), read in one REPEATABLE READ read-only transaction.
//
// Errors before the first write: KindNotFound, corrupted. An error after it
// leaves the stream without its agent_end line, which an import refuses.
func (s *Store) ExportAgent(ctx context.Context, tenant, id string, w io.Writer) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only: nothing to undo

	a, err := memGetAgent(ctx, tx, tenant, id, "")
	if err != nil {
		return err
	}
	ea := model.ExportAgent{Agent: a}
	if err := tx.QueryRow(ctx, `SELECT embedding_model, embedding_dims FROM agents WHERE tenant_id = $1 AND id = $2`,
		tenant, id).Scan(&ea.EmbeddingModel, &ea.EmbeddingDims); err != nil {
		return mapErr(err)
	}
	if ea.EmbeddingDims == nil {
		ea.EmbeddingModel = nil
	}
	rows, err := tx.Query(ctx, `SELECT id FROM sessions WHERE tenant_id = $1 AND agent_id = $2
		AND (expires_at IS NULL OR expires_at > $3) ORDER BY created_at, id COLLATE "C"`, tenant, id, int64(model.Now()))
	if err != nil {
		return mapErr(err)
	}
	sessions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return mapErr(err)
	}
	for _, sid := range sessions {
		if err := checkSessionExportPG(ctx, tx, tenant, sid); err != nil {
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
	if err := exportBlocksPG(ctx, tx, e, tenant, id); err != nil {
		return err
	}
	var embModel string
	if ea.EmbeddingModel != nil {
		embModel = *ea.EmbeddingModel
	}
	if err := exportPassagesPG(ctx, tx, e, tenant, id, embModel); err != nil {
		return err
	}
	for _, sid := range sessions {
		if err := exportSessionTxPG(ctx, tx, e.Session(), tenant, sid); err != nil {
			return err
		}
	}
	return e.End()
}

func exportBlocksPG(ctx context.Context, tx pgx.Tx, e *transfer.AgentWriter, tenant, agentID string) error {
	rows, err := tx.Query(ctx, `SELECT `+memBlockColumns+` FROM blocks WHERE tenant_id = $1 AND agent_id = $2
		ORDER BY label COLLATE "C"`, tenant, agentID)
	if err != nil {
		return mapErr(err)
	}
	blocks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Block, error) { return memScanBlock(r) })
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

// exportPassagesPG writes the agent's live passages, oldest first, as the
// rows arrive (pgx reads a result set as it goes).
func exportPassagesPG(ctx context.Context, tx pgx.Tx, e *transfer.AgentWriter, tenant, agentID, embModel string) error {
	rows, err := tx.Query(ctx, `SELECT `+passageColumns+`, p.embedding FROM passages p
		WHERE p.tenant_id = $1 AND p.agent_id = $2 AND `+passageLivePG("$3")+`
		ORDER BY p.created_at, p.id COLLATE "C"`, tenant, agentID, int64(model.Now()))
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var vec []byte
		p, err := scanPassage(rows, &vec)
		if err != nil {
			return mapErr(err)
		}
		ep := model.ExportPassage{ID: p.ID, Content: p.Content, Tags: p.Tags, Metadata: p.Metadata,
			CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt}
		if vec != nil {
			ep.Embedding, ep.EmbeddingModel = repo.DecodeVector(vec), embModel
		}
		if err := e.Passage(&ep); err != nil {
			return err
		}
	}
	return mapErr(rows.Err())
}

// ImportAgent restores an agent from an agent export, SQLite's or this
// store's (see sqlite.Store.ImportAgent for what is kept), checked whole by
// transfer.ParseAgent, then stored in one transaction, or not at all.
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
	err = s.writeFaultedPG(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointSessionWrite); err != nil {
			return err
		}
		var err error
		out, err = importAgentTxPG(ctx, tx, tenant, sp, opts)
		return err
	})
	return out, err
}

func importAgentTxPG(ctx context.Context, tx pgx.Tx, tenant string, sp *transfer.Spool, opts model.ImportOptions) (model.Agent, error) {
	lines, err := sp.Lines()
	if err != nil {
		return model.Agent{}, model.Internal(err)
	}
	var (
		a        model.ExportAgent
		im       *importTxPG
		imported = map[string]bool{} // the sessions stored so far, by their ids in the export
		seen     = map[string]bool{} // the message ids stored so far
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
			tag, err := tx.Exec(ctx, `INSERT INTO agents (tenant_id, id, name, agent_type, model, system, tool_ids, tags, metadata,
				created_at, updated_at, embedding_model, embedding_dims)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT DO NOTHING`,
				tenant, a.ID, a.Name, a.AgentType, a.Model, a.System, memEncodeList(a.ToolIDs), memEncodeList(a.Tags),
				a.Metadata.String(), int64(a.CreatedAt), int64(a.UpdatedAt), a.EmbeddingModel, a.EmbeddingDims)
			if err != nil {
				return model.Agent{}, err
			}
			if tag.RowsAffected() == 0 {
				return model.Agent{}, transfer.Conflict(line, "an agent with id %q already exists", a.ID)
			}
		case al.Type == model.LineBlock:
			b := al.Block
			readOnly := 0
			if b.ReadOnly {
				readOnly = 1
			}
			if _, err := tx.Exec(ctx, `INSERT INTO blocks (tenant_id, agent_id, label, id, value, limit_chars, description, read_only, version, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				tenant, a.ID, b.Label, b.ID, b.Value, b.Limit, b.Description, readOnly, b.Version, int64(b.UpdatedAt)); err != nil {
				return model.Agent{}, err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO block_history (tenant_id, agent_id, label, version, value, limit_chars, description, read_only, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				tenant, a.ID, b.Label, b.Version, b.Value, b.Limit, b.Description, readOnly, int64(b.UpdatedAt)); err != nil {
				return model.Agent{}, err
			}
		case al.Type == model.LinePassage:
			p := al.Passage
			var vec []byte
			if len(p.Embedding) > 0 {
				vec = repo.EncodeVector(p.Embedding)
			}
			tags, meta := p.Tags, p.Metadata
			if tags == nil {
				tags = []string{}
			}
			if meta == nil {
				meta = model.Object("{}")
			}
			embModel, embState := repo.NewPassageEmbedding(model.CreatePassage{Embedding: p.Embedding, EmbeddingModel: p.EmbeddingModel}, false)
			if _, err := tx.Exec(ctx, `INSERT INTO passages (tenant_id, agent_id, id, content, tags, metadata, created_at, expires_at, embedding,
				embedding_model, embedding_state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				tenant, a.ID, p.ID, p.Content, memEncodeList(tags), meta.String(), int64(p.CreatedAt), timePtrPG(p.ExpiresAt), vec,
				embModel, embState); err != nil {
				return model.Agent{}, err
			}
		case al.Type != "":
			// the header: ParseAgent has checked its format and version
		case l.Type == model.LineSession:
			im = &importTxPG{tx: tx, tenant: tenant, asNew: opts.AsNew, fileChunk: -1, agentID: &a.ID,
				newIDsThrough: transfer.InheritedThrough(l.Session, imported), seen: seen}
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
	return memGetAgent(ctx, tx, tenant, a.ID, "")
}
