package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// releaseFilesPG forgets the references that the messages of a session from
// seq on hold, then removes each file that no message references any more, and
// its bytes once no file of the tenant has them. Files nothing ever referenced
// stay: they were uploaded for messages yet to come. For purge and rewind.
//
// tx must be READ COMMITTED (s.tx's): each "is it still used?" check runs as a
// statement of its own after the row it decides about is locked, so it sees
// what a writer holding that lock committed. An upload holds a share lock on
// its bytes' first chunk (filesHoldChunksPG); an append that references a file
// must hold one on the file's row (SELECT … FOR SHARE) for the same reason.
func releaseFilesPG(ctx context.Context, tx pgx.Tx, tenant, sessionID string, fromSeq int64) error {
	// In id order, so that two releases lock files in the same order.
	rows, err := tx.Query(ctx, `SELECT DISTINCT file_id FROM message_files
		WHERE tenant_id = $1 AND session_id = $2 AND seq >= $3 ORDER BY file_id`, tenant, sessionID, fromSeq)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) == 0 {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM message_files WHERE tenant_id = $1 AND session_id = $2 AND seq >= $3`,
		tenant, sessionID, fromSeq); err != nil {
		return err
	}
	for _, id := range ids {
		sum, gone, err := filesReleaseOnePG(ctx, tx, tenant, id)
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

// filesReleaseOnePG deletes file id unless a message still references it,
// and says whether it did and which bytes it had.
func filesReleaseOnePG(ctx context.Context, tx pgx.Tx, tenant, id string) (sum string, gone bool, err error) {
	var locked string
	err = tx.QueryRow(ctx, `SELECT sha256 FROM files WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, id).Scan(&locked)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	err = tx.QueryRow(ctx, `DELETE FROM files WHERE tenant_id = $1 AND id = $2
		AND NOT EXISTS (SELECT 1 FROM message_files WHERE tenant_id = $1 AND file_id = $2) RETURNING sha256`,
		tenant, id).Scan(&sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil // still referenced
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
