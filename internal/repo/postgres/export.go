package postgres

import (
	"context"
	"io"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// exportMsgChunkPG is how many messages one query of an export reads: memory
// stays the same whatever the session's length.
const exportMsgChunkPG = 500

// ExportSession writes a session as NDJSON to w, the same bytes SQLite's
// ExportSession writes for the same session (the lines are encoded by
// transfer.Writer for both): the session, the files its messages reference (in
// chunks), its messages in seq order (a fork's inherited ones read as its
// own), its checkpoints and its compactions oldest first, then the end line.
// Everything is read in one REPEATABLE READ read-only transaction, so the
// export is one snapshot however long the writing takes, and a delta
// checkpoint and the rows it leans on agree.
//
// Errors before the first write: KindNotFound, corrupted (a damaged
// checkpoint). An error after it leaves the stream without its end line,
// which an import refuses.
func (s *Store) ExportSession(ctx context.Context, tenant, id string, w io.Writer) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only: nothing to undo

	if err := checkSessionExportPG(ctx, tx, tenant, id); err != nil {
		return err
	}
	return exportSessionTxPG(ctx, tx, transfer.NewWriter(w), tenant, id)
}

// checkSessionExportPG finds the session and refuses a damaged checkpoint
// before anything is sent, rather than exporting it for an import to refuse
// later (corrupted).
func checkSessionExportPG(ctx context.Context, tx pgx.Tx, tenant, id string) error {
	if _, err := getSessionTx(ctx, tx, tenant, id, ""); err != nil {
		return err
	}
	iters, err := exportCkIterationsPG(ctx, tx, tenant, id)
	if err != nil {
		return err
	}
	rd := newCkReaderPG(ctx, tx, tenant, id)
	return exportEachCheckpointPG(ctx, tx, rd, tenant, id, iters, func(*model.Checkpoint) error { return nil })
}

// exportSessionTxPG writes a session's lines, its end line included, to e. A
// session export and an agent export (one e per session) both write with it.
func exportSessionTxPG(ctx context.Context, tx pgx.Tx, e *transfer.Writer, tenant, id string) error {
	ses, err := getSessionTx(ctx, tx, tenant, id, "")
	if err != nil {
		return err
	}
	segs, err := lineagePG(ctx, tx, tenant, id)
	if err != nil {
		return mapErr(err)
	}
	iters, err := exportCkIterationsPG(ctx, tx, tenant, id)
	if err != nil {
		return err
	}
	if err := e.Session(&ses); err != nil {
		return err
	}
	if err := exportFilesPG(ctx, tx, e, tenant, segs); err != nil {
		return err
	}
	for _, g := range segs {
		if err := exportSegmentPG(ctx, tx, e, tenant, id, g); err != nil {
			return err
		}
	}
	for _, g := range segs {
		if err := exportEmbeddingsPG(ctx, tx, e, tenant, g); err != nil {
			return err
		}
	}
	rd := newCkReaderPG(ctx, tx, tenant, id)
	if err := exportEachCheckpointPG(ctx, tx, rd, tenant, id, iters, e.Checkpoint); err != nil {
		return err
	}
	if err := exportCompactionsPG(ctx, tx, e, tenant, id); err != nil {
		return err
	}
	return e.End()
}

// exportCkIterationsPG lists the session's checkpoint iterations, oldest
// first. The rows are then read one at a time: a delta is rebuilt from other
// rows, which the connection cannot query while a result set is open, and a
// session's states together may be far larger than one.
func exportCkIterationsPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT iteration FROM checkpoints WHERE tenant_id = $1 AND session_id = $2 ORDER BY iteration`,
		tenant, sessionID)
	if err != nil {
		return nil, mapErr(err)
	}
	iters, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return iters, mapErr(err)
}

// exportEachCheckpointPG calls fn with each listed checkpoint, its state
// rebuilt (ckstate.Reader); a damaged one stops the walk (corrupted).
func exportEachCheckpointPG(ctx context.Context, tx pgx.Tx, rd *ckstate.Reader, tenant, sessionID string, iters []int64,
	fn func(*model.Checkpoint) error) error {
	for _, it := range iters {
		row, err := scanCkRowPG(tx.QueryRow(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints
			WHERE tenant_id = $1 AND session_id = $2 AND iteration = $3`, tenant, sessionID, it))
		if err != nil {
			return mapErr(err) // the snapshot holds every listed row
		}
		c, err := rd.Read(row)
		if err != nil {
			return err
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// exportSegmentPG writes one stored run of the session's history, a chunk at a
// time.
func exportSegmentPG(ctx context.Context, tx pgx.Tx, e *transfer.Writer, tenant, sessionID string, g lineageSegment) error {
	after := g.lo
	sc := newMsgScanRowPG()
	for {
		rows, err := tx.Query(ctx, `SELECT `+messageColumnsPG+` FROM messages
			WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4 ORDER BY seq LIMIT $5`,
			tenant, g.owner, after, g.hi, exportMsgChunkPG)
		if err != nil {
			return mapErr(err)
		}
		n := 0
		for rows.Next() {
			m, err := sc.scan(rows)
			if err != nil {
				rows.Close()
				return mapErr(err)
			}
			m.SessionID = sessionID // inherited messages read as the fork's own
			if err := e.Message(&m); err != nil {
				rows.Close()
				return err
			}
			after = m.Seq
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
		if n < exportMsgChunkPG {
			return nil
		}
	}
}

// exportEmbeddingsPG writes the ready embeddings of one stored run of the
// session's messages, as SQLite's exportEmbeddings does.
func exportEmbeddingsPG(ctx context.Context, tx pgx.Tx, e *transfer.Writer, tenant string, g lineageSegment) error {
	after := g.lo
	for {
		rows, err := tx.Query(ctx, `SELECT e.seq, e.message_id, e.model, e.embedding FROM message_embeddings e
			JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
			WHERE e.tenant_id = $1 AND e.session_id = $2 AND e.seq > $3 AND e.seq <= $4 AND e.state = 'ready'
			ORDER BY e.seq LIMIT $5`, tenant, g.owner, after, g.hi, exportMsgChunkPG)
		if err != nil {
			return mapErr(err)
		}
		n := 0
		for rows.Next() {
			var (
				x   model.ExportEmbedding
				vec []byte
			)
			if err := rows.Scan(&x.Seq, &x.MessageID, &x.Model, &vec); err != nil {
				rows.Close()
				return mapErr(err)
			}
			x.Embedding = repo.DecodeVector(vec)
			if err := e.Embedding(&x); err != nil {
				rows.Close()
				return err
			}
			after = x.Seq
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapErr(err)
		}
		if n < exportMsgChunkPG {
			return nil
		}
	}
}

// exportFilesPG writes every file the lineage's messages reference, in id
// order as SQLite's export does (byte order, as its BINARY collation), each
// a stored chunk a line.
func exportFilesPG(ctx context.Context, tx pgx.Tx, e *transfer.Writer, tenant string, segs []lineageSegment) error {
	var ids []string
	for _, g := range segs {
		rows, err := tx.Query(ctx, `SELECT DISTINCT file_id FROM message_files
			WHERE tenant_id = $1 AND session_id = $2 AND seq > $3 AND seq <= $4`, tenant, g.owner, g.lo, g.hi)
		if err != nil {
			return mapErr(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return mapErr(err)
		}
		ids = append(ids, got...)
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		f, err := filesGetPG(ctx, tx, tenant, "", id, "")
		if err != nil {
			return err
		}
		if err := exportFileChunksPG(ctx, tx, e.File(f), tenant, f.SHA256); err != nil {
			return err
		}
	}
	return nil
}

func exportFileChunksPG(ctx context.Context, tx pgx.Tx, fl *transfer.FileLines, tenant, sum string) error {
	rows, err := tx.Query(ctx, `SELECT data FROM file_chunks WHERE tenant_id = $1 AND sha256 = $2 ORDER BY n`, tenant, sum)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var data []byte
	for rows.Next() {
		if err := rows.Scan(&data); err != nil {
			return mapErr(err)
		}
		if err := fl.Chunk(data); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return mapErr(err)
	}
	return fl.Done()
}

// exportCompactionsPG writes the session's compactions, oldest first.
func exportCompactionsPG(ctx context.Context, tx pgx.Tx, e *transfer.Writer, tenant, sessionID string) error {
	rows, err := tx.Query(ctx, `SELECT `+compactionColumnsPG+` FROM compactions
		WHERE tenant_id = $1 AND session_id = $2 ORDER BY n`, tenant, sessionID)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanCompactionPG(rows)
		if err != nil {
			return mapErr(err)
		}
		if err := e.Compaction(&c); err != nil {
			return err
		}
	}
	return mapErr(rows.Err())
}
