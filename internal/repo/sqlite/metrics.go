package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"
)

// GroupObserver is told of every group the writer ran: how many queued writes
// it carried and how long it took from its first statement to its answers,
// the commit's fsync included. It runs on the writer goroutine, between two
// groups, so it must be cheap and never block: a Prometheus histogram, whose
// Observe is a few atomic adds, is what it is for.
type GroupObserver interface {
	ObserveGroup(writes int, took time.Duration)
}

// observerBox holds a GroupObserver for an atomic.Pointer, which cannot hold
// an interface itself.
type observerBox struct{ o GroupObserver }

// ObserveGroups has the writer tell o of every group from now on; nil stops it.
// The writer reads it with one atomic load per group.
func (s *Store) ObserveGroups(o GroupObserver) {
	if o == nil {
		s.observer.Store(nil)
		return
	}
	s.observer.Store(&observerBox{o: o})
}

// CheckpointObserver is told of every WAL checkpoint: the checkpointer's
// PASSIVE ones every 250 ms and the RESTARTs the writer hands over for (see
// checkpointer.go). It runs on the checkpointer's goroutine or the writer's,
// so, like a GroupObserver, it must be cheap and never block.
type CheckpointObserver interface {
	ObserveCheckpoint(Checkpoint)
}

type checkpointObserverBox struct{ o CheckpointObserver }

// ObserveCheckpoints has the store tell o of every checkpoint from now on;
// nil stops it.
func (s *Store) ObserveCheckpoints(o CheckpointObserver) {
	if o == nil {
		s.ckptObserver.Store(nil)
		return
	}
	s.ckptObserver.Store(&checkpointObserverBox{o: o})
}

// WALMaxBytes is the bound the writer holds the WAL file to (plus one group's
// writes); 0 when there is none.
func (s *Store) WALMaxBytes() int64 { return s.wal.max }

// QueueDepth is how many writes wait for the writer now.
func (s *Store) QueueDepth() int { return len(s.queue) }

// QueueCapacity is how many writes may wait before a request's write blocks
// on enqueueing.
func (s *Store) QueueCapacity() int { return cap(s.queue) }

// SyncFull reports whether commits run under synchronous=FULL, where each one
// fsyncs the WAL (under NORMAL only checkpoints sync).
func (s *Store) SyncFull() bool { return s.syncFull }

// FileSizes are the bytes on disk of the database, its WAL, the search index
// file and the index's WAL. A file that does not exist (no WAL yet, or no
// search index) is 0.
type FileSizes struct {
	DB, WAL, Search, SearchWAL int64
}

// Files stats the store's files; it touches no connection.
func (s *Store) Files() (FileSizes, error) {
	var out FileSizes
	var errs []error
	for _, f := range []struct {
		path string
		n    *int64
	}{
		{s.path, &out.DB}, {s.path + "-wal", &out.WAL},
		{searchIndexPath(s.path), &out.Search}, {searchIndexPath(s.path) + "-wal", &out.SearchWAL},
	} {
		fi, err := os.Stat(f.path)
		switch {
		case err == nil:
			*f.n = fi.Size()
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// IndexLag counts the messages, of every tenant, that are stored but not
// searchable yet: what the API's index_lag says for one tenant. ok is false
// when no indexer runs in this process (search off, or --search-index=false),
// where the count would only grow. It is read from the indexer's book
// (indexlag.go), so it costs what was written since it was last asked.
func (s *Store) IndexLag(ctx context.Context) (lag int64, ok bool, err error) {
	if s.idb == nil || s.stopIndexer == nil {
		return 0, false, nil
	}
	lag, err = s.lag.all(ctx, s.rdb)
	return lag, true, mapErr(err)
}
