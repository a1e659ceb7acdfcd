package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Backup writes a consistent copy of the whole database to dest with VACUUM INTO
// while the server keeps serving; see BackupFile. Errors: KindConflict (dest
// exists), KindUnavailable.
func (s *Store) Backup(ctx context.Context, dest string) (model.Backup, error) {
	path, err := s.DatabasePath(ctx)
	if err != nil {
		return model.Backup{}, err
	}
	return BackupFile(ctx, path, dest)
}

// DatabasePath is the absolute path of the database file, as SQLite opened it.
func (s *Store) DatabasePath(ctx context.Context) (string, error) {
	rows, err := s.rdb.QueryContext(ctx, `PRAGMA database_list`)
	if err != nil {
		return "", mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq        int64
			name, file string
		)
		if err := rows.Scan(&seq, &name, &file); err != nil {
			return "", mapErr(err)
		}
		if name == "main" {
			return file, nil
		}
	}
	if err := rows.Err(); err != nil {
		return "", mapErr(err)
	}
	return "", model.Internal(errors.New("repo: PRAGMA database_list names no main database"))
}

// BackupFile writes a consistent copy of the database at dbPath to dest with
// VACUUM INTO: one read transaction, so the copy is a snapshot of committed data
// (WAL included) however much is written meanwhile, compacted, in rollback-journal
// mode. It works while a server (this process or another) writes the file.
//
// Which connection runs it: not the writer, because VACUUM cannot run inside a
// transaction and the writer runs every write inside one (and a backup there would
// stop every write for its whole duration); not the read pool either, because its
// connections set query_only, and SQLite refuses VACUUM INTO under query_only
// ("attempt to write a readonly database"), although it only writes the new file.
// So it opens one connection of its own, read-only on the database file (mode=ro)
// without query_only: it cannot change the database, reads in WAL mode without
// blocking the writer, and may write the copy.
//
// dest is created exclusively first, so a backup never overwrites a file and two
// backups cannot race for one name; it is removed if the copy fails, synced to
// disk when it succeeds (VACUUM INTO does not fsync), and readable by its owner
// only, since it holds every tenant's data. Errors: KindConflict (dest exists),
// KindUnavailable.
func BackupFile(ctx context.Context, dbPath, dest string) (model.Backup, error) {
	if _, err := os.Stat(dbPath); err != nil {
		return model.Backup{}, model.Unavailable(fmt.Errorf("repo: backup source: %w", err))
	}
	// Absolute, so that a relative name can never read as a "file:" URI.
	dest, err := filepath.Abs(dest)
	if err != nil {
		return model.Backup{}, model.Internal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return model.Backup{}, model.Unavailable(fmt.Errorf("repo: backup directory: %w", err))
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return model.Backup{}, model.Errorf(model.KindConflict, "conflict", "a backup named %q already exists", filepath.Base(dest))
	}
	if err != nil {
		return model.Backup{}, model.Unavailable(fmt.Errorf("repo: create backup file: %w", err))
	}
	f.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(dest)
		}
	}()

	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(5000)")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: dbPath}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return model.Backup{}, mapErr(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	stop := reportCopy(ctx, dbPath, dest)
	// VACUUM INTO accepts an empty file as its target.
	_, err = db.ExecContext(ctx, `VACUUM INTO ?`, dest)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return model.Backup{}, ctx.Err()
		}
		return model.Backup{}, mapErr(err)
	}
	if err := syncFile(dest); err != nil {
		return model.Backup{}, model.Unavailable(fmt.Errorf("repo: sync backup: %w", err))
	}
	st, err := os.Stat(dest)
	if err != nil {
		return model.Backup{}, model.Unavailable(err)
	}
	done = true
	repo.ReportProgress(ctx, "copy", st.Size(), st.Size())
	return model.Backup{Path: dest, Bytes: st.Size(), CreatedAt: model.TimeOf(time.Now())}, nil
}

// reportCopy reports, every half second until stop is called, how much of the
// copy VACUUM INTO has written: dest's size against the source's (its WAL
// included; the copy is compacted, so it ends at or under that).
func reportCopy(ctx context.Context, dbPath, dest string) (stop func()) {
	var total int64
	for _, p := range []string{dbPath, dbPath + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			total += fi.Size()
		}
	}
	repo.ReportProgress(ctx, "copy", 0, total)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if fi, err := os.Stat(dest); err == nil {
					repo.ReportProgress(ctx, "copy", min(fi.Size(), total), total)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// syncFile flushes a file and its directory entry to stable storage.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	_ = d.Sync() // not every file system syncs directories; the file itself is safe
	return nil
}
