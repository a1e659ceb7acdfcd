package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// fileChunkBytes is how a file's bytes are cut for storage and for serving.
const fileChunkBytes = 256 << 10

const fileColumns = `id, sha256, size, media_type, created_at`

func scanFile(sc scanner) (model.File, error) {
	var f model.File
	err := sc.Scan(&f.ID, &f.SHA256, &f.Size, &f.MediaType, &f.CreatedAt)
	return f, err
}

// CreateFile stores data as a file of mediaType. The same bytes with the same
// media type are the same file: created is false and nothing is written again.
// Bytes shared by files of other media types are stored once.
func (s *Store) CreateFile(ctx context.Context, tenant, mediaType string, data []byte) (f model.File, created bool, err error) {
	sum := sha256.Sum256(data)
	f = model.File{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), MediaType: mediaType, CreatedAt: model.Now()}
	f.ID = model.FileIDOf(f.SHA256, mediaType)
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.crashPoint(repo.PointFileWrite); err != nil {
			return err
		}
		old, err := scanFile(tx.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM files WHERE tenant_id = ? AND id = ?`, tenant, f.ID))
		if err == nil {
			f, created = old, false
			return nil
		}
		if err != sql.ErrNoRows {
			return err
		}
		created = true
		return insertFile(ctx, tx, tenant, f, data)
	})
	return f, created, err
}

// insertFile writes a file's row, and its bytes unless another file of the
// tenant already stored them.
func insertFile(ctx context.Context, tx *sql.Tx, tenant string, f model.File, data []byte) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM file_chunks WHERE tenant_id = ? AND sha256 = ? AND n = 0`, tenant, f.SHA256).Scan(&one)
	if err == sql.ErrNoRows {
		for n := 0; n == 0 || n*fileChunkBytes < len(data); n++ {
			chunk := data[n*fileChunkBytes : min(len(data), (n+1)*fileChunkBytes)]
			if chunk == nil {
				chunk = []byte{} // an empty file: a NULL would fail the NOT NULL data column
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO file_chunks (tenant_id, sha256, n, data) VALUES (?, ?, ?, ?)`,
				tenant, f.SHA256, n, chunk); err != nil {
				return err
			}
		}
	} else if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO files (tenant_id, id, sha256, size, media_type, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		tenant, f.ID, f.SHA256, f.Size, f.MediaType, int64(f.CreatedAt))
	return err
}

// GetFile returns a file's description. Errors: KindNotFound.
func (s *Store) GetFile(ctx context.Context, tenant, id string) (model.File, error) {
	return getFile(ctx, s.rdb, tenant, id)
}

func getFile(ctx context.Context, q querier, tenant, id string) (model.File, error) {
	f, err := scanFile(q.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM files WHERE tenant_id = ? AND id = ?`, tenant, id))
	if err == sql.ErrNoRows {
		return f, model.NotFound("file", id)
	}
	return f, mapErr(err)
}

// WriteFile writes a file's bytes to w a chunk at a time, from one snapshot, so
// that a purge meanwhile cannot cut it short. It returns the description first
// through head, before any byte, so that a caller can set headers.
func (s *Store) WriteFile(ctx context.Context, tenant, id string, head func(model.File) error, w io.Writer) error {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	f, err := getFile(ctx, tx, tenant, id)
	if err != nil {
		return err
	}
	if err := head(f); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT data FROM file_chunks WHERE tenant_id = ? AND sha256 = ? ORDER BY n`, tenant, f.SHA256)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var written int64
	for rows.Next() {
		var chunk []byte
		if err := rows.Scan(&chunk); err != nil {
			return mapErr(err)
		}
		n, err := w.Write(chunk)
		written += int64(n)
		if err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return mapErr(err)
	}
	if written != f.Size {
		return model.Corrupted("file", f.ID)
	}
	return nil
}

// releaseFiles forgets the references that the messages of a session from seq
// on hold, then removes each file that no message references any more, and
// its bytes once no file of the tenant has them. Files nothing ever referenced
// stay: they were uploaded for messages yet to come.
func releaseFiles(ctx context.Context, tx *sql.Tx, tenant, sessionID string, fromSeq int64) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT file_id FROM message_files WHERE tenant_id = ? AND session_id = ? AND seq >= ?`,
		tenant, sessionID, fromSeq)
	if err != nil {
		return err
	}
	ids, err := collect(rows, func(sc scanner) (string, error) {
		var id string
		return id, sc.Scan(&id)
	})
	if err != nil || len(ids) == 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM message_files WHERE tenant_id = ? AND session_id = ? AND seq >= ?`,
		tenant, sessionID, fromSeq); err != nil {
		return err
	}
	for _, id := range ids {
		var sum string
		err := tx.QueryRowContext(ctx, `DELETE FROM files WHERE tenant_id = ?1 AND id = ?2
			AND NOT EXISTS (SELECT 1 FROM message_files WHERE tenant_id = ?1 AND file_id = ?2) RETURNING sha256`,
			tenant, id).Scan(&sum)
		if err == sql.ErrNoRows {
			continue // still referenced
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM file_chunks WHERE tenant_id = ?1 AND sha256 = ?2
			AND NOT EXISTS (SELECT 1 FROM files WHERE tenant_id = ?1 AND sha256 = ?2)`, tenant, sum); err != nil {
			return err
		}
	}
	return nil
}
