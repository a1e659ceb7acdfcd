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
	sqlitedriver "modernc.org/sqlite"
)

// Backup writes a consistent copy of the whole database to dest while the
// server keeps serving; see BackupFile. Errors: KindConflict (dest
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
// SQLite's online backup, paced (pacedCopy), from one read transaction: the
// copy is a snapshot of committed data (WAL included) however much is written
// meanwhile, and it works while a server (this process or another) writes the
// file. (VACUUM INTO, which it replaced, wrote the copy as fast as the disk
// took it, and appends' fsyncs queued behind it: their p99 went from ~10 ms to
// 50–200 ms for the length of a 2.4 GB copy.)
//
// It runs on a connection of its own, read-only on the database file
// (mode=ro): not the writer's, which runs every write inside a transaction
// and would stop every write for the whole copy; not the read pool's, whose
// read transactions end with each statement.
//
// dest is created exclusively first, so a backup never overwrites a file and two
// backups cannot race for one name; it is removed if the copy fails, synced to
// disk when it succeeds, and readable by its owner only, since it holds every
// tenant's data. Errors: KindConflict (dest exists), KindUnavailable.
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
	err = pacedCopy(ctx, db, dest)
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
// copy has been written: dest's size against the source's (its WAL included;
// the copy ends at or under that).
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

// backupStepPages is how many pages one step of the copy writes; after each,
// the copy syncs what it wrote and rests as long as the step took. A
// variable for the tests, which take many steps of a small file.
var backupStepPages int32 = 1024

// pacedCopy copies the database behind db into dest with SQLite's online
// backup, a step of backupStepPages pages at a time, from one read
// transaction held across the steps: the copy is the snapshot that
// transaction sees, whatever is written meanwhile (a step would otherwise
// start over once another connection wrote). After each step it syncs dest
// and rests as long as the step and the sync took: the disk then holds at
// most a step's writes of the copy at once, so that commits' fsyncs are not
// queued behind gigabytes of it, and the copy has it at most half the time.
func pacedCopy(ctx context.Context, db *sql.DB, dest string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema`).Scan(&n); err != nil {
		return err
	}
	f, err := os.OpenFile(dest, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return conn.Raw(func(dc any) error {
		src, ok := dc.(interface {
			NewBackup(string) (*sqlitedriver.Backup, error)
		})
		if !ok {
			return errors.New("repo: the sqlite driver cannot back up")
		}
		bk, err := src.NewBackup(dest)
		if err != nil {
			return err
		}
		for {
			t0 := time.Now()
			more, err := bk.Step(backupStepPages)
			if err == nil && more {
				err = f.Sync()
			}
			if err != nil {
				bk.Finish()
				return err
			}
			if !more {
				return bk.Finish()
			}
			select {
			case <-ctx.Done():
				bk.Finish()
				return ctx.Err()
			case <-time.After(time.Since(t0)):
			}
		}
	})
}
