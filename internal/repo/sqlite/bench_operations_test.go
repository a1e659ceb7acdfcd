package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// BenchmarkAppendDuring is what an operator's operation costs the appends
// beside it: one client appends one message at a time (2 ms apart) to a live
// session, alone and then while the operation runs on a file of 3,000
// sessions of 100 messages of ~1 KB (~750 MB): a purge of the 300 closed
// ones, an integrity check, a backup. It reports the appends' p50 and p99 in
// both phases and the operation's duration.
//
//	go test -run '^$' -bench AppendDuring -benchtime 1x ./internal/repo/sqlite/
func BenchmarkAppendDuring(b *testing.B) {
	s := purgeFill(b)
	ops := []struct {
		name string
		op   func(ctx context.Context) error
	}{
		{"integrity", func(ctx context.Context) error {
			rep, err := s.CheckIntegrity(ctx, "t", false)
			if err == nil && !rep.OK {
				err = fmt.Errorf("integrity: %+v", rep)
			}
			return err
		}},
		{"backup", func(ctx context.Context) error {
			_, err := s.Backup(ctx, filepath.Join(b.TempDir(), fmt.Sprintf("b%d.db", time.Now().UnixNano())))
			return err
		}},
		{"purge", func(ctx context.Context) error {
			res, err := s.PurgeSessions(ctx, "t", model.PurgeRequest{Status: model.StatusCompleted}.WithCutoff(model.Now()+1000))
			if err == nil && res.Sessions != 300 {
				err = fmt.Errorf("purge: %+v", res)
			}
			return err
		}},
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			for range b.N {
				benchAppendDuring(b, s, o.op)
			}
		})
	}
}

// purgeFill is BenchmarkAppendDuring's store.
func purgeFill(b *testing.B) *Store {
	s, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "l.db"), Migrate: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ctx := context.Background()
	text := strings.Repeat("some words of a conversation ", 35)
	var batch model.AppendRequest
	for i := range 100 {
		batch.Messages = append(batch.Messages, model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("%d %s", i, text)),
			Tokens: 10, Cost: 0.001})
	}
	for i := range 3000 {
		id := fmt.Sprintf("s%05d", i)
		if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: id}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, "t", id, batch); err != nil {
			b.Fatal(err)
		}
		if i%10 == 0 {
			if _, err := s.CloseSession(ctx, "t", id); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "live"}); err != nil {
		b.Fatal(err)
	}
	waitIndexedB(b, s)
	return s
}

func waitIndexedB(b *testing.B, s *Store) {
	for {
		lag, _, err := s.IndexLag(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if lag == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func benchAppendDuring(b *testing.B, s *Store, op func(context.Context) error) {
	b.StopTimer()
	ctx := context.Background()
	one := model.AppendRequest{Messages: []model.NewMessage{{Role: model.RoleUser, Content: model.TextContent("hi")}}}
	appendFor := func(stop <-chan struct{}, n int) []time.Duration {
		var lat []time.Duration
		for i := 0; n == 0 || i < n; i++ {
			select {
			case <-stop:
				return lat
			default:
			}
			t0 := time.Now()
			if _, err := s.AppendMessages(ctx, "t", "live", one); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			time.Sleep(2 * time.Millisecond)
		}
		return lat
	}
	alone := appendFor(nil, 500)
	stop := make(chan struct{})
	during := make(chan []time.Duration)
	go func() { during <- appendFor(stop, 0) }()
	t0 := time.Now()
	b.StartTimer()
	errc := make(chan error, 1)
	go func() {
		niceThread()
		errc <- op(ctx)
	}()
	err := <-errc
	b.StopTimer()
	took := time.Since(t0)
	close(stop)
	beside := <-during
	if err != nil {
		b.Fatal(err)
	}
	q := func(lat []time.Duration, p float64) float64 {
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(alone, 0.5), "alone_p50_ms")
	b.ReportMetric(q(alone, 0.99), "alone_p99_ms")
	b.ReportMetric(q(beside, 0.5), "during_p50_ms")
	b.ReportMetric(q(beside, 0.99), "during_p99_ms")
	b.ReportMetric(float64(len(beside)), "appends_during")
	b.ReportMetric(took.Seconds(), "op_s")
}

// niceThread is what internal/jobs does for a job: its own thread at nice 10.
func niceThread() {
	runtime.LockOSThread()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 10)
}
