package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// fileRefPG is a reference that messages of a session held to a file, and
// the session's user (nil: none).
type fileRefPG struct {
	file string
	user *string
}

// releaseFilesPG is forgetFileRefsPG then collectFilesPG, for a purge.
func releaseFilesPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string, fromSeq int64) error {
	refs, err := forgetFileRefsPG(ctx, tx, tenant, sessionID, fromSeq)
	if err != nil {
		return err
	}
	return collectFilesPG(ctx, tx, tenant, refs)
}

// forgetFileRefsPG forgets the references that the messages of a session
// from seq on hold, and returns them for collectFilesPG. A rewind collects
// after its new tail is stored, so that the tail may name the files the cut
// one did.
func forgetFileRefsPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string, fromSeq int64) ([]fileRefPG, error) {
	// In id order, so that two collections lock files in the same order.
	rows, err := tx.Query(ctx, `SELECT DISTINCT file_id, user_id FROM message_files
		WHERE tenant_id = $1 AND session_id = $2 AND seq >= $3 ORDER BY file_id`, tenant, sessionID, fromSeq)
	if err != nil {
		return nil, err
	}
	refs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (fileRefPG, error) {
		var r fileRefPG
		return r, row.Scan(&r.file, &r.user)
	})
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	_, err = tx.Exec(ctx, `DELETE FROM message_files WHERE tenant_id = $1 AND session_id = $2 AND seq >= $3`,
		tenant, sessionID, fromSeq)
	return refs, err
}

// collectFilesPG applies repo.Files' rule of a file's lifetime to the files
// that refs referenced: a user who references a file no more has used up its
// upload of it; then each file that neither a message references nor a user
// still holds an upload of goes, and its bytes once no file of the tenant has
// them. Files nothing ever referenced stay: they were uploaded for messages
// yet to come.
//
// tx must be READ COMMITTED (s.tx's): each "is it still used?" check runs as a
// statement of its own after the row it decides about is locked, so it sees
// what a writer holding that lock committed. An upload holds a share lock on
// its bytes' first chunk (filesHoldChunksPG) and on an existing file's row
// (filesCreatePG); an append that references a file must hold one on the
// file's row (SELECT … FOR SHARE) for the same reason.
func collectFilesPG(ctx context.Context, tx pgx.Tx, tenant string, refs []fileRefPG) error {
	for i, r := range refs {
		if i > 0 && refs[i-1].file == r.file {
			continue
		}
		sum, gone, err := filesReleaseOnePG(ctx, tx, tenant, r.file, refs[i:])
		if err != nil {
			return err
		}
		if !gone {
			continue
		}
		if err := filesReleaseBytesPG(ctx, tx, tenant, sum); err != nil {
			return err
		}
	}
	return nil
}

// filesReleaseOnePG ends the uploads of file id that the users of refs (the
// file's first) have used up, then deletes the file unless a message still
// references it or a user still holds an upload of it, and says whether it
// did and which bytes it had.
func filesReleaseOnePG(ctx context.Context, tx pgx.Tx, tenant, id string, refs []fileRefPG) (sum string, gone bool, err error) {
	var locked string
	err = tx.QueryRow(ctx, `SELECT sha256 FROM files WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id).Scan(&locked)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	for _, r := range refs {
		if r.file != id {
			break
		}
		if r.user == nil {
			continue
		}
		if _, err := tx.Exec(ctx, `DELETE FROM file_owners WHERE tenant_id = $1 AND file_id = $2 AND user_id = $3
			AND NOT EXISTS (SELECT 1 FROM message_files WHERE tenant_id = $1 AND file_id = $2 AND user_id = $3)`,
			tenant, id, *r.user); err != nil {
			return "", false, err
		}
	}
	err = tx.QueryRow(ctx, `DELETE FROM files WHERE tenant_id = $1 AND id = $2
		AND NOT EXISTS (SELECT 1 FROM message_files WHERE tenant_id = $1 AND file_id = $2)
		AND NOT EXISTS (SELECT 1 FROM file_owners WHERE tenant_id = $1 AND file_id = $2) RETURNING sha256`,
		tenant, id).Scan(&sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil // still referenced, or still held
	}
	return sum, err == nil, err
}

// filesReleaseBytesPG deletes the tenant's bytes with this sum unless a file
// still has them.
func filesReleaseBytesPG(ctx context.Context, tx pgx.Tx, tenant, sum string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM file_chunks WHERE tenant_id = $1 AND sha256 = $2 AND n = 0 FOR UPDATE`,
		tenant, sum).Scan(&one)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	_, err = tx.Exec(ctx, `DELETE FROM file_chunks WHERE tenant_id = $1 AND sha256 = $2
		AND NOT EXISTS (SELECT 1 FROM files WHERE tenant_id = $1 AND sha256 = $2)`, tenant, sum)
	return err
}
