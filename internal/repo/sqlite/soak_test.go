package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// The soak's load: soakWriters goroutines each keep one append in flight, of
// up to soakMaxContent bytes, while soakReaders read pages beside them (the
// readers a RESTART checkpoint has to wait for) and the indexer runs.
const (
	soakWriters    = 32
	soakReaders    = 4
	soakMaxContent = 8 << 10
	// soakGroupBytes is one group's worth of WAL: each writer has at most one
	// append in a group, and an append writes its content and, around it, a
	// few pages of the message's table and indexes, its event and its
	// session's row: well under 16 pages of 4 KiB.
	soakGroupBytes = soakWriters * (soakMaxContent + 16*4096)
)

// soakConfig is how long TestWALStaysBounded appends and the bound it holds:
// 20 s under an 8 MiB bound in make test (small, so that a short run on a
// slow or busy machine still crosses it several times), or LOGBOOK_SOAK (a Go
// duration; make soak: 10m) under the server's default bound.
func soakConfig(t *testing.T) (time.Duration, int64) {
	v := os.Getenv("LOGBOOK_SOAK")
	if v == "" {
		return 20 * time.Second, 8 << 20
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("LOGBOOK_SOAK=%q: want a positive Go duration such as 10m", v)
	}
	return d, DefaultWALMaxBytes
}

// Sustained appends from many goroutines never let a PASSIVE checkpoint copy
// the whole WAL, so without a bound the file grows by every commit and stays
// that large (the checkpointer before the bound: 405 MiB in this test's 20 s).
// With one, the WAL file stays under the bound plus one group's worth while
// the load runs and after it stops, and no append fails. The appends'
// latencies and the checkpoints are logged: make soak's figures in
// docs/operations.md come from here.
func TestWALStaysBounded(t *testing.T) {
	if raceDetector {
		t.Skip("appends ~50 times slower under -race, too few to reach the bound: run by make test's plain pass")
	}
	duration, bound := soakConfig(t)
	s, path := openBounded(t, bound)
	limit := bound + soakGroupBytes
	ckpts := &checkpointLog{}
	s.ObserveCheckpoints(ckpts)
	wal := newWALSampler(path + "-wal")
	defer wal.stop()

	load := startLoad(t, s, soakWriters, soakReaders)
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) && !load.failed() {
		time.Sleep(min(time.Until(deadline), 30*time.Second))
		if duration >= time.Minute {
			t.Logf("%s left: WAL %s now, %s at most; %s", time.Until(deadline).Round(time.Second),
				mib(wal.current()), mib(wal.highWater()), ckpts)
		}
	}
	lat := load.stop(t)
	running := wal.highWater()
	time.Sleep(4 * checkpointEvery) // the checkpointer's ticks after the load
	after := wal.current()

	t.Logf("%d appends in %s (%.0f/s), %d page reads; append %s",
		len(lat), duration, float64(len(lat))/duration.Seconds(), load.reads.Load(), quantiles(lat))
	t.Logf("WAL high-water %s while appending, %s after; bound %s + one group %s = %s",
		mib(running), mib(after), mib(bound), mib(soakGroupBytes), mib(limit))
	t.Logf("checkpoints: %s", ckpts)
	if running > limit {
		t.Errorf("the WAL reached %s while appending, over the bound %s", mib(running), mib(limit))
	}
	if after > limit {
		t.Errorf("the WAL is %s after the load, over the bound %s", mib(after), mib(limit))
	}
	if n := ckpts.n(CheckpointRestart, CheckpointDone); n < 2 && !t.Failed() {
		t.Errorf("the WAL reached the bound %d times, want at least 2: the load was too light to show anything", n)
	}
}

// openBounded opens a store in a temporary directory whose WAL is bounded to
// bound, and returns it with its database path.
func openBounded(t *testing.T, bound int64) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "logbook.db")
	s, err := Open(context.Background(), Config{Path: path, Migrate: true, WALMaxBytes: bound})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

// load is writers goroutines each keeping one append in flight to a session
// of its own, and readers goroutines reading pages of those sessions.
type load struct {
	halt      atomic.Bool
	wg        sync.WaitGroup
	latencies [][]time.Duration
	err       atomic.Pointer[error]
	reads     atomic.Int64
}

func startLoad(t *testing.T, s *Store, writers, readers int) *load {
	t.Helper()
	ctx := context.Background()
	sessions := make([]string, writers)
	for i := range sessions {
		sessions[i] = mustSession(t, s)
	}
	l := &load{latencies: make([][]time.Duration, writers)}
	for w := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; !l.halt.Load(); i++ {
				body := strings.Repeat("x", 256+rng.IntN(soakMaxContent-256))
				msg := model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("%d %s", i, body))}
				start := time.Now()
				if _, err := s.AppendMessages(ctx, "t", sessions[w], model.AppendRequest{Messages: []model.NewMessage{msg}}); err != nil {
					l.fail(fmt.Errorf("writer %d, append %d: %w", w, i, err))
					return
				}
				l.latencies[w] = append(l.latencies[w], time.Since(start))
			}
		}()
	}
	for r := range readers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			for !l.halt.Load() {
				id := sessions[rng.IntN(len(sessions))]
				if _, err := s.ListMessages(ctx, "t", id, model.MessageFilter{Desc: true}, repo.PageRequest{Limit: 50}); err != nil {
					l.fail(fmt.Errorf("reader %d: %w", r, err))
					return
				}
				l.reads.Add(1)
			}
		}()
	}
	return l
}

func (l *load) fail(err error) {
	l.err.CompareAndSwap(nil, &err)
	l.halt.Store(true)
}

func (l *load) failed() bool { return l.err.Load() != nil }

// stop ends the load and returns every append's latency, sorted; a failed
// append or read fails the test.
func (l *load) stop(t *testing.T) []time.Duration {
	t.Helper()
	l.halt.Store(true)
	l.wg.Wait()
	if err := l.err.Load(); err != nil {
		t.Fatal(*err)
	}
	all := slices.Concat(l.latencies...)
	slices.Sort(all)
	if len(all) == 0 {
		t.Fatal("no append completed")
	}
	return all
}

// quantiles describes sorted latencies.
func quantiles(d []time.Duration) string {
	q := func(p float64) time.Duration {
		return d[min(len(d)-1, int(p*float64(len(d))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("p50 %s, p99 %s, p99.9 %s, max %s", q(.5), q(.99), q(.999), d[len(d)-1].Round(10*time.Microsecond))
}

// walSampler stats a WAL file every 2 ms and keeps the largest size it saw.
type walSampler struct {
	path string
	max  atomic.Int64
	done chan struct{}
	wg   sync.WaitGroup
}

func newWALSampler(path string) *walSampler {
	w := &walSampler{path: path, done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				w.current()
			}
		}
	}()
	return w
}

// current is the file's size now (0 when there is none), noted as a sample.
func (w *walSampler) current() int64 {
	fi, err := os.Stat(w.path)
	if err != nil {
		return 0
	}
	n := fi.Size()
	for m := w.max.Load(); n > m && !w.max.CompareAndSwap(m, n); m = w.max.Load() {
	}
	return n
}

func (w *walSampler) highWater() int64 { return w.max.Load() }

func (w *walSampler) stop() {
	close(w.done)
	w.wg.Wait()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// checkpointLog counts a store's checkpoints by mode and outcome and keeps the
// longest of each mode.
type checkpointLog struct {
	mu      sync.Mutex
	count   map[string]int
	longest map[string]time.Duration
	took    map[string][]time.Duration
}

func (l *checkpointLog) ObserveCheckpoint(c Checkpoint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == nil {
		l.count, l.longest, l.took = map[string]int{}, map[string]time.Duration{}, map[string][]time.Duration{}
	}
	l.took[c.Mode] = append(l.took[c.Mode], c.Took)
	l.count[c.Mode+" "+c.Outcome]++
	l.longest[c.Mode] = max(l.longest[c.Mode], c.Took)
}

func (l *checkpointLog) n(mode, outcome string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[mode+" "+outcome]
}

func (l *checkpointLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l.count)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, l.count[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(l.longest)) {
		d := slices.Clone(l.took[k])
		slices.Sort(d)
		parts = append(parts, fmt.Sprintf("%s median %s longest %s", k, d[len(d)/2].Round(time.Microsecond), l.longest[k].Round(time.Microsecond)))
	}
	return strings.Join(parts, ", ")
}

// A reader that holds one read transaction (an export to a slow client, a
// backup's VACUUM INTO) keeps every frame written after its snapshot began:
// no checkpoint can restart the WAL, which grows past the bound while it
// reads. Appends neither fail nor wait on every group for a RESTART that
// cannot succeed (the writer backs off), and once the reader ends, the file
// comes back under the bound: at the writer's next RESTART while appends go
// on, or by the checkpointer's TRUNCATE when the writer is idle.
func TestWALPinnedByLongReader(t *testing.T) {
	const bound = 256 << 10
	limit := int64(bound + soakGroupBytes/4) // 8 writers, not 32
	cases := []struct {
		name      string
		idleAfter bool // stop appending before the reader ends
	}{
		{"appends_go_on", false},
		{"writer_idle", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, path := openBounded(t, bound)
			ckpts := &checkpointLog{}
			s.ObserveCheckpoints(ckpts)
			wal := newWALSampler(path + "-wal")
			defer wal.stop()
			ctx := context.Background()

			mustSession(t, s)                                                       // something for the reader to read
			if c := s.checkpoint(CheckpointTruncate); c.Outcome != CheckpointDone { // start from an empty WAL
				t.Fatalf("TRUNCATE before the reader: %+v", c)
			}
			tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions`).Scan(&n); err != nil { // the snapshot starts here
				t.Fatal(err)
			}

			l := startLoad(t, s, 8, 0)
			pinnedAt := time.Now()
			waitFor(t, "the WAL to grow past the bound while pinned", 60*time.Second, func() bool {
				return l.failed() || wal.current() > 4*bound
			})
			pinned := time.Since(pinnedAt)
			if tc.idleAfter {
				lat := l.stop(t)
				t.Logf("pinned for %s: %d appends, %s; %s", pinned.Round(time.Millisecond), len(lat), quantiles(lat), ckpts)
			}
			busy := ckpts.n(CheckpointRestart, CheckpointBusy)
			if busy == 0 {
				t.Errorf("no RESTART was refused while a reader pinned the WAL")
			}
			// Without backing off the writer would try at every group.
			if most := 3 + int(pinned/checkpointEvery); busy > most {
				t.Errorf("%d RESTARTs refused in %s of pinning, want at most %d", busy, pinned, most)
			}

			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			// The idle writer's WAL is truncated by the checkpointer, which
			// tells its observer just after.
			waitFor(t, "the WAL to come back under the bound", 30*time.Second, func() bool {
				return l.failed() || wal.current() <= limit &&
					(!tc.idleAfter || ckpts.n(CheckpointTruncate, CheckpointDone) > 0)
			})
			if !tc.idleAfter {
				lat := l.stop(t)
				t.Logf("%d appends, %s; %s", len(lat), quantiles(lat), ckpts)
			}
			t.Logf("WAL high-water %s, now %s", mib(wal.highWater()), mib(wal.current()))
		})
	}
}

// waitFor polls cond every 10 ms until it holds or timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}
