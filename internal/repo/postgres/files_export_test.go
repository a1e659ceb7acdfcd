package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// FilesReleaseForTest runs releaseFilesPG in a transaction of its own, for the
// external tests (purge and rewind, its callers, are tested on their own).
func FilesReleaseForTest(ctx context.Context, s *Store, tenant, sessionID string, fromSeq int64) error {
	return s.tx(ctx, func(tx pgx.Tx) error { return releaseFilesPG(ctx, tx, tenant, sessionID, fromSeq) })
}
