package sqlite

import (
	"database/sql"
	"time"
)

// WAL checkpoints run beside the writer, not in it. SQLite's automatic
// checkpoint runs inside the commit that crosses 1000 WAL pages, on the
// committing connection: here, the one writer. It copies those pages into the
// database file and fsyncs it, tens to hundreds of milliseconds under a tenant
// writing megabyte messages, and every other tenant's write queued behind that
// commit waited for it. So the writer's connection has wal_autocheckpoint off,
// and this goroutine runs PASSIVE checkpoints on a connection of its own: they
// copy what no reader still needs while the writer goes on appending to the WAL.
const checkpointEvery = 250 * time.Millisecond

// runCheckpointer checkpoints until stop is closed; a failed checkpoint is
// retried at the next tick (the WAL only grows meanwhile).
func runCheckpointer(db *sql.DB, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_, _ = db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}
