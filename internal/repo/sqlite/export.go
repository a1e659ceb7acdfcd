package sqlite

import (
	"context"
	"database/sql"
	"io"
	"slices"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/ckstore"
	"github.com/logbook/logbook/internal/repo/transfer"
)

// exportChunk is how many messages one query of an export reads: memory stays
// the same whatever the session's length.
const exportChunk = 500

// ExportSession writes a session as NDJSON to w (see model.ExportLine): the
// session, the files its messages reference (in chunks), its messages in seq
// order (a fork's inherited ones read as its own), its checkpoints and its
// compactions oldest first, then the end line with the counts and a SHA-256 of
// every byte before it. Everything is read in one read-only transaction, so
// the export is one consistent snapshot however long the writing takes.
//
// Errors before the first write: KindNotFound, corrupted (a damaged checkpoint).
// An error after it (w failed, the client went away) leaves the stream without
// its end line, which an import refuses.
func (s *Store) ExportSession(ctx context.Context, tenant, id string, w io.Writer) error {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback() // read-only: nothing to undo

	if err := checkSessionExport(ctx, tx, tenant, id); err != nil {
		return err
	}
	return exportSessionTx(ctx, tx, transfer.NewWriter(w), tenant, id)
}

// checkSessionExport finds the session and refuses a damaged checkpoint
// before anything is sent, rather than exporting it for an import to refuse
// later (corrupted).
func checkSessionExport(ctx context.Context, tx *sql.Tx, tenant, id string) error {
	if _, err := getSession(ctx, tx, tenant, id); err != nil {
		return err
	}
	return eachCheckpoint(ctx, tx, tenant, id, func(model.Checkpoint) error { return nil })
}

// exportSessionTx writes a session's lines, its end line included, to e. A
// session export and an agent export (one e per session) both write with it.
func exportSessionTx(ctx context.Context, tx *sql.Tx, e *transfer.Writer, tenant, id string) error {
	ses, err := getSession(ctx, tx, tenant, id)
	if err != nil {
		return err
	}
	segs, err := lineage(ctx, tx, tenant, id)
	if err != nil {
		return mapErr(err)
	}
	if err := e.Session(&ses); err != nil {
		return err
	}
	if err := exportFiles(ctx, tx, e, tenant, segs); err != nil {
		return err
	}
	for _, g := range segs {
		if err := exportSegment(ctx, tx, e, tenant, id, g); err != nil {
			return err
		}
	}
	for _, g := range segs {
		if err := exportEmbeddings(ctx, tx, e, tenant, g); err != nil {
			return err
		}
	}
	err = eachCheckpoint(ctx, tx, tenant, id, func(c model.Checkpoint) error {
		return e.Checkpoint(&c)
	})
	if err != nil {
		return err
	}
	if err := exportCheckpointWrites(ctx, tx, e, tenant, id); err != nil {
		return err
	}
	if err := exportCompactions(ctx, tx, e, tenant, id); err != nil {
		return err
	}
	return e.End()
}

// exportSegment writes one stored run of the session's history, a chunk at a time.
func exportSegment(ctx context.Context, tx *sql.Tx, e *transfer.Writer, tenant, sessionID string, g segment) error {
	after := g.lo
	for {
		rows, err := tx.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
			tenant, g.owner, after, g.hi, exportChunk)
		if err != nil {
			return mapErr(err)
		}
		n := 0
		for rows.Next() {
			m, err := scanMessage(rows)
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
		if err := rows.Err(); err != nil {
			rows.Close()
			return mapErr(err)
		}
		rows.Close()
		if n < exportChunk {
			return nil
		}
	}
}

// exportEmbeddings writes the ready embeddings of one stored run of the
// session's messages, in seq order, a chunk at a time: only those of the
// message at their place (a rewind may have put another there).
func exportEmbeddings(ctx context.Context, tx *sql.Tx, e *transfer.Writer, tenant string, g segment) error {
	after := g.lo
	for {
		rows, err := tx.QueryContext(ctx, `SELECT e.seq, e.message_id, e.model, e.embedding FROM message_embeddings e
			JOIN messages m ON m.tenant_id = e.tenant_id AND m.session_id = e.session_id AND m.seq = e.seq AND m.id = e.message_id
			WHERE e.tenant_id = ? AND e.session_id = ? AND e.seq > ? AND e.seq <= ? AND e.state = 'ready'
			ORDER BY e.seq LIMIT ?`, tenant, g.owner, after, g.hi, exportChunk)
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
		if err := rows.Err(); err != nil {
			rows.Close()
			return mapErr(err)
		}
		rows.Close()
		if n < exportChunk {
			return nil
		}
	}
}

// eachCheckpoint calls fn with each of a session's checkpoints, oldest first,
// one row at a time, its state rebuilt (see ckstate.Reader); a damaged one stops the
// walk (corrupted). q should be a transaction: a delta is read from other rows.
func eachCheckpoint(ctx context.Context, q querier, tenant, sessionID string, fn func(model.Checkpoint) error) error {
	rows, err := q.QueryContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints
		WHERE tenant_id = ? AND session_id = ? ORDER BY namespace, iteration`, tenant, sessionID)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var rd *ckstate.Reader
	ns := ""
	for rows.Next() {
		row, err := scanCkRow(rows)
		if err != nil {
			return mapErr(err)
		}
		if rd == nil || row.Namespace != ns {
			rd, ns = ckstore.NewReader(ctx, ckRows{q, tenant, sessionID}, row.Namespace), row.Namespace
		}
		c, err := rd.Read(row)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return mapErr(rows.Err())
}

// exportFiles writes every file the lineage's messages reference, by id, each in
// chunks of model.MaxFileChunk bytes: the file's stored chunks are that size.
func exportFiles(ctx context.Context, tx *sql.Tx, e *transfer.Writer, tenant string, segs []segment) error {
	var ids []string
	for _, g := range segs {
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT file_id FROM message_files
			WHERE tenant_id = ? AND session_id = ? AND seq > ? AND seq <= ?`, tenant, g.owner, g.lo, g.hi)
		if err != nil {
			return mapErr(err)
		}
		got, err := collect(rows, func(sc scanner) (string, error) {
			var id string
			return id, sc.Scan(&id)
		})
		if err != nil {
			return mapErr(err)
		}
		ids = append(ids, got...)
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		f, err := getFile(ctx, tx, tenant, "", id) // the session's files: its reader may read them
		if err != nil {
			return err
		}
		if err := exportFile(ctx, tx, e.File(f), tenant, f); err != nil {
			return err
		}
	}
	return nil
}

func exportFile(ctx context.Context, tx *sql.Tx, fl *transfer.FileLines, tenant string, f model.File) error {
	rows, err := tx.QueryContext(ctx, `SELECT data FROM file_chunks WHERE tenant_id = ? AND sha256 = ? ORDER BY n`, tenant, f.SHA256)
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

// exportCompactions writes the session's compactions, oldest first.
func exportCompactions(ctx context.Context, tx *sql.Tx, e *transfer.Writer, tenant, sessionID string) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+compactionColumns+` FROM compactions
		WHERE tenant_id = ? AND session_id = ? ORDER BY n`, tenant, sessionID)
	if err != nil {
		return mapErr(err)
	}
	cs, err := collect(rows, scanCompaction)
	if err != nil {
		return mapErr(err)
	}
	for i := range cs {
		if err := e.Compaction(&cs[i]); err != nil {
			return err
		}
	}
	return nil
}
