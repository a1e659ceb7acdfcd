package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// fileChunkBytesPG is how a file's bytes are cut for storage and for serving,
// as on SQLite (an export's file lines are this size too).
const fileChunkBytesPG = 256 << 10

const fileColumnsPG = `id, sha256, size, media_type, created_at`

func scanFilePG(row pgx.Row) (model.File, error) {
	var (
		f       model.File
		created int64
	)
	err := row.Scan(&f.ID, &f.SHA256, &f.Size, &f.MediaType, &created)
	f.CreatedAt = model.Time(created)
	return f, err
}

// CreateFile stores data as a file of mediaType, uploaded by user ("" for a
// key bound to no user). The same bytes with the same media type are the same
// file: nothing is written again, and created says whether the upload is the
// first (repo.Files). Bytes shared by files of other media types are stored
// once.
//
// Two processes uploading the same bytes at once both get past the first
// read; the file row's primary key picks one, and the other re-reads it. An
// existing file's row is share-locked before a user's upload of it is
// recorded: releaseFilesPG locks it for update before it decides that no
// upload holds it.
func (s *Store) CreateFile(ctx context.Context, tenant, user, mediaType string, data []byte) (f model.File, created bool, err error) {
	sum := sha256.Sum256(data)
	want := model.File{SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), MediaType: mediaType, CreatedAt: model.Now()}
	want.ID = model.FileIDOf(want.SHA256, mediaType)
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if err := s.faults.Check(repo.PointFileWrite); err != nil {
			return err
		}
		f, created, err = filesCreatePG(ctx, tx, tenant, want, data)
		if err != nil || user == "" {
			return err
		}
		// A user is told of its own first upload, never of another's: the
		// file's time is when this user first uploaded it.
		at := want.CreatedAt
		if !created {
			at = model.Now()
		}
		tag, err := tx.Exec(ctx, `INSERT INTO file_owners (tenant_id, file_id, user_id, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, tenant, f.ID, user, int64(at))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			f.CreatedAt, created = at, true
			return nil
		}
		var old int64
		err = tx.QueryRow(ctx, `SELECT created_at FROM file_owners WHERE tenant_id = $1 AND file_id = $2 AND user_id = $3`,
			tenant, f.ID, user).Scan(&old)
		f.CreatedAt, created = model.Time(old), false
		return err
	})
	if err != nil {
		return model.File{}, false, err
	}
	return f, created, nil
}

// filesCreatePG returns the tenant's file want, share-locked, creating it
// (created) unless it exists.
func filesCreatePG(ctx context.Context, tx pgx.Tx, tenant string, want model.File, data []byte) (model.File, bool, error) {
	old, err := filesGetPG(ctx, tx, tenant, "", want.ID, " FOR SHARE")
	if err == nil {
		return old, false, nil
	}
	if !model.IsNotFound(err, "file") {
		return model.File{}, false, err
	}
	if err := filesHoldChunksPG(ctx, tx, tenant, want.SHA256, data); err != nil {
		return model.File{}, false, err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO files (tenant_id, id, sha256, size, media_type, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, id) DO NOTHING`,
		tenant, want.ID, want.SHA256, want.Size, want.MediaType, int64(want.CreatedAt))
	if err != nil {
		return model.File{}, false, err
	}
	if tag.RowsAffected() == 1 {
		return want, true, nil
	}
	// Another upload of these bytes committed since the first read; a new
	// statement sees it.
	old, err = filesGetPG(ctx, tx, tenant, "", want.ID, " FOR SHARE")
	return old, false, err
}

// filesHoldChunksPG makes sure the tenant's bytes with this sum are stored,
// writing them unless another file already has, and share-locks their first
// chunk until the transaction ends: releaseFilesPG locks that chunk before it
// deletes bytes no file uses, so it cannot take them from under this upload.
func filesHoldChunksPG(ctx context.Context, tx pgx.Tx, tenant, sum string, data []byte) error {
	for try := 0; try < 3; try++ {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM file_chunks WHERE tenant_id = $1 AND sha256 = $2 AND n = 0 FOR SHARE`,
			tenant, sum).Scan(&one)
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// A concurrent upload of the same bytes makes these wait for it, then
		// do nothing; the lock above is taken on its rows at the next try.
		for n := 0; n == 0 || n*fileChunkBytesPG < len(data); n++ {
			chunk := data[n*fileChunkBytesPG : min(len(data), (n+1)*fileChunkBytesPG)]
			if chunk == nil {
				chunk = []byte{} // an empty file's one chunk: pgx would send nil as NULL
			}
			if _, err := tx.Exec(ctx, `INSERT INTO file_chunks (tenant_id, sha256, n, data) VALUES ($1, $2, $3, $4)
				ON CONFLICT (tenant_id, sha256, n) DO NOTHING`, tenant, sum, n, chunk); err != nil {
				return err
			}
		}
	}
	// Stored, then released, three times over while this upload ran.
	return model.Unavailable(fmt.Errorf("postgres: the bytes of file %s were removed during the upload, three times", sum))
}

// GetFile returns a file's description, if user may read it (repo.Files).
// Errors: KindNotFound.
func (s *Store) GetFile(ctx context.Context, tenant, user, id string) (model.File, error) {
	return filesGetPG(ctx, s.pool, tenant, user, id, "")
}

// filesQuerierPG is a pool or a transaction.
type filesQuerierPG interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// filesReadablePG is repo.Files' rule of who may read file $2 of tenant $1,
// for user $3 ("" for a key bound to no user): each side is one index probe.
const filesReadablePG = `($3 = '' OR EXISTS (SELECT 1 FROM file_owners WHERE tenant_id = $1 AND file_id = $2 AND user_id = $3)
	OR EXISTS (SELECT 1 FROM message_files WHERE tenant_id = $1 AND file_id = $2 AND user_id = $3))`

// filesGetPG reads a file user may read; lock is "" or a locking clause.
func filesGetPG(ctx context.Context, q filesQuerierPG, tenant, user, id, lock string) (model.File, error) {
	f, err := scanFilePG(q.QueryRow(ctx, `SELECT `+fileColumnsPG+` FROM files WHERE tenant_id = $1 AND id = $2 AND `+filesReadablePG+lock,
		tenant, id, user))
	if errors.Is(err, pgx.ErrNoRows) {
		return model.File{}, model.NotFound("file", id)
	}
	return f, mapErr(err)
}

// WriteFile writes a file's bytes to w a chunk at a time, from one snapshot
// (REPEATABLE READ), so that a purge meanwhile cannot cut it short. It returns
// the description first through head, before any byte, so that a caller can
// set headers.
func (s *Store) WriteFile(ctx context.Context, tenant, user, id string, head func(model.File) error, w io.Writer) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only
	f, err := filesGetPG(ctx, tx, tenant, user, id, "")
	if err != nil {
		return err
	}
	if err := head(f); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT data FROM file_chunks WHERE tenant_id = $1 AND sha256 = $2 ORDER BY n`, tenant, f.SHA256)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	var (
		written int64
		chunk   []byte
	)
	for rows.Next() {
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
