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
	return exportEachCheckpointPG(ctx, tx, tenant, id, iters, func(*model.Checkpoint) error { return nil })
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
	if err := exportEachCheckpointPG(ctx, tx, tenant, id, iters, e.Checkpoint); err != nil {
		return err
	}
	if err := exportCheckpointWritesPG(ctx, tx, e, tenant, id); err != nil {
		return err
	}
	if err := exportCompactionsPG(ctx, tx, e, tenant, id); err != nil {
		return err
	}
	return e.End()
}

// ckKeyPG names a checkpoint row of a session.
type ckKeyPG struct {
	ns string
	it int64
}

// exportCkIterationsPG lists the session's checkpoints by namespace, oldest
// first. The rows are then read one at a time: a delta is rebuilt from other
// rows, which the connection cannot query while a result set is open, and a
// session's states together may be far larger than one.
func exportCkIterationsPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string) ([]ckKeyPG, error) {
	rows, err := tx.Query(ctx, `SELECT namespace, iteration FROM checkpoints WHERE tenant_id = $1 AND session_id = $2
		ORDER BY namespace COLLATE "C", iteration`, tenant, sessionID)
	if err != nil {
		return nil, mapErr(err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ckKeyPG, error) {
		var k ckKeyPG
		return k, r.Scan(&k.ns, &k.it)
	})
	return keys, mapErr(err)
}

// exportEachCheckpointPG calls fn with each listed checkpoint, its state
// rebuilt (ckstate.Reader); a damaged one stops the walk (corrupted).
func exportEachCheckpointPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string, keys []ckKeyPG,
	fn func(*model.Checkpoint) error) error {
	var rd *ckstate.Reader
	for i, k := range keys {
		if i == 0 || k.ns != keys[i-1].ns {
			rd = newCkReaderPG(ctx, tx, tenant, sessionID, k.ns)
		}
		row, err := scanCkRowPG(tx.QueryRow(ctx, `SELECT `+ckColumnsPG+` FROM checkpoints
			WHERE tenant_id = $1 AND session_id = $2 AND namespace = $3 AND iteration = $4`, tenant, sessionID, k.ns, k.it))
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
