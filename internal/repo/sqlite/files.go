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

// CreateFile stores data as a file of mediaType, uploaded by user ("" for a
// key bound to no user). The same bytes with the same media type are the same
// file: nothing is written again, and created says whether the upload is the
// first (repo.Files). Bytes shared by files of other media types are stored
// once.
func (s *Store) CreateFile(ctx context.Context, tenant, user, mediaType string, data []byte) (f model.File, created bool, err error) {
	sum := sha256.Sum256(data)
	f = model.File{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), MediaType: mediaType, CreatedAt: model.Now()}
	f.ID = model.FileIDOf(f.SHA256, mediaType)
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.crashPoint(repo.PointFileWrite); err != nil {
			return err
		}
		old, err := scanFile(tx.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM files WHERE tenant_id = ? AND id = ?`, tenant, f.ID))
		switch {
		case err == sql.ErrNoRows:
			created = true
			if err := insertFile(ctx, tx, tenant, f, data); err != nil {
				return err
			}
		case err != nil:
			return err
		case user == "":
			f, created = old, false
			return nil
		default:
			f = old
		}
		if user == "" {
			return nil
		}
		// A user is told of its own first upload, never of another's: the
		// file's time is when this user first uploaded it.
		var at int64
		err = tx.QueryRowContext(ctx, `SELECT created_at FROM file_owners WHERE tenant_id = ? AND file_id = ? AND user_id = ?`,
			tenant, f.ID, user).Scan(&at)
		if err == nil {
			f.CreatedAt, created = model.Time(at), false
			return nil
		}
		if err != sql.ErrNoRows {
			return err
		}
		if !created {
			f.CreatedAt, created = model.Now(), true
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO file_owners (tenant_id, file_id, user_id, created_at) VALUES (?, ?, ?, ?)`,
			tenant, f.ID, user, int64(f.CreatedAt))
		return err
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

// GetFile returns a file's description, if user may read it (repo.Files).
// Errors: KindNotFound.
func (s *Store) GetFile(ctx context.Context, tenant, user, id string) (model.File, error) {
	return getFile(ctx, s.rdb, tenant, user, id)
}

// fileReadable is repo.Files' rule of who may read a file, for a file ?2 of tenant ?1 and
// user ?3 ("" for a key bound to no user): each side is one index probe.
const fileReadable = `(?3 = '' OR EXISTS (SELECT 1 FROM file_owners WHERE tenant_id = ?1 AND file_id = ?2 AND user_id = ?3)
	OR EXISTS (SELECT 1 FROM message_files WHERE tenant_id = ?1 AND file_id = ?2 AND user_id = ?3))`

func getFile(ctx context.Context, q querier, tenant, user, id string) (model.File, error) {
	f, err := scanFile(q.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM files WHERE tenant_id = ?1 AND id = ?2 AND `+fileReadable,
		tenant, id, user))
	if err == sql.ErrNoRows {
		return f, model.NotFound("file", id)
	}
	return f, mapErr(err)
}

// WriteFile writes a file's bytes to w a chunk at a time, from one snapshot, so
// that a purge meanwhile cannot cut it short. It returns the description first
// through head, before any byte, so that a caller can set headers.
func (s *Store) WriteFile(ctx context.Context, tenant, user, id string, head func(model.File) error, w io.Writer) error {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	f, err := getFile(ctx, tx, tenant, user, id)
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

// fileRef is a reference that messages of a session held to a file, and the
// session's user (nil: none).
type fileRef struct {
	file string
	user *string
}

// forgetFileRefs forgets the references that the messages of a session from
// seq on hold, and returns them for collectFiles. A rewind collects after its
// new tail is stored, so that the tail may name the files the cut one did.
func forgetFileRefs(ctx context.Context, tx *sql.Tx, tenant, sessionID string, fromSeq int64) ([]fileRef, error) {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT file_id, user_id FROM message_files WHERE tenant_id = ? AND session_id = ? AND seq >= ?`,
		tenant, sessionID, fromSeq)
	if err != nil {
		return nil, err
	}
	refs, err := collect(rows, func(sc scanner) (fileRef, error) {
		var r fileRef
		return r, sc.Scan(&r.file, &r.user)
	})
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM message_files WHERE tenant_id = ? AND session_id = ? AND seq >= ?`,
		tenant, sessionID, fromSeq)
	return refs, err
}

// collectFiles applies repo.Files' rule of a file's lifetime to the files
// that refs referenced: a user who references a file no more has used up its
// upload of it; then each file that neither a message references nor a user
// still holds an upload of goes, and its bytes once no file of the tenant has
// them. Files nothing ever referenced stay: they were uploaded for messages
// yet to come.
func collectFiles(ctx context.Context, tx *sql.Tx, tenant string, refs []fileRef) error {
	for _, r := range refs {
		if r.user == nil {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM file_owners WHERE tenant_id = ?1 AND file_id = ?2 AND user_id = ?3
			AND NOT EXISTS (SELECT 1 FROM message_files WHERE tenant_id = ?1 AND file_id = ?2 AND user_id = ?3)`,
			tenant, r.file, *r.user); err != nil {
			return err
		}
	}
	done := map[string]bool{}
	for _, r := range refs {
		if done[r.file] {
			continue
		}
		done[r.file] = true
		var sum string
		err := tx.QueryRowContext(ctx, `DELETE FROM files WHERE tenant_id = ?1 AND id = ?2
			AND NOT EXISTS (SELECT 1 FROM message_files WHERE tenant_id = ?1 AND file_id = ?2)
			AND NOT EXISTS (SELECT 1 FROM file_owners WHERE tenant_id = ?1 AND file_id = ?2) RETURNING sha256`,
			tenant, r.file).Scan(&sum)
		if err == sql.ErrNoRows {
			continue // still referenced, or still held
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

// releaseFiles is forgetFileRefs then collectFiles, for a purge.
func releaseFiles(ctx context.Context, tx *sql.Tx, tenant, sessionID string, fromSeq int64) error {
	refs, err := forgetFileRefs(ctx, tx, tenant, sessionID, fromSeq)
	if err != nil {
		return err
	}
	return collectFiles(ctx, tx, tenant, refs)
}
