package postgres

import (
	"context"
	"net/url"

	"github.com/logbook/logbook/internal/model"
)

// IntegrityCheck asks the server for a trivial answer: PostgreSQL checks its
// own pages (data checksums, amcheck); what Logbook can check of its rows is
// CheckIntegrity's. "ok" when the database answers.
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	var one int
	if err := s.pool.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return "", mapErr(err)
	}
	return "ok", nil
}

// Backup is PostgreSQL's to make: a copy by Logbook could not be consistent
// with other processes writing, and pg_dump's can. The error names the
// command, without the password.
func (s *Store) Backup(ctx context.Context, dest string) (model.Backup, error) {
	return model.Backup{}, &model.Error{Kind: model.KindConflict, Code: "conflict",
		Msg: "this server stores its data in PostgreSQL, which backs itself up: run pg_dump --format=custom --file=" +
			dest + " '" + s.redactedURL() + "' (or use your PostgreSQL's own backups)"}
}

// DatabasePath has no file to name on PostgreSQL.
func (s *Store) DatabasePath(ctx context.Context) (string, error) {
	return "", &model.Error{Kind: model.KindConflict, Code: "conflict",
		Msg: "this server stores its data in PostgreSQL, not in a file: back it up with pg_dump"}
}

// redactedURL is the connection string without its password.
func (s *Store) redactedURL() string {
	u, err := url.Parse(s.url)
	if err != nil {
		return "postgres://…"
	}
	return u.Redacted()
}
