package expiry

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// BenchmarkAppendDuringSweep measures what a large sweep costs the appends
// that go on beside it: one client appends to a live session, one message at
// a time, first alone and then while a sweep erases 2,000 expired sessions of
// 10 messages each and 2,000 passages, over 4 tenants. It reports the
// appends' p50, p99 and max in both phases, and the sweep's duration.
//
//	go test ./internal/expiry/ -run '^$' -bench AppendDuringSweep -benchtime 1x
func BenchmarkAppendDuringSweep(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			for range b.N {
				benchSweepOnce(b, be.open(b))
			}
		})
	}
}

func benchSweepOnce(b *testing.B, st repo.Store) {
	b.StopTimer()
	ctx := context.Background()
	const tenants, perTenant, msgs = 4, 500, 10
	batch := model.AppendRequest{Batch: true}
	for i := range msgs {
		batch.Messages = append(batch.Messages, model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("message %d", i))})
	}
	for ti := range tenants {
		tenant := fmt.Sprintf("t%d", ti)
		if _, err := st.CreateAgent(ctx, tenant, model.CreateAgent{ID: "ag", Name: "ag"}); err != nil {
			b.Fatal(err)
		}
		for i := range perTenant {
			id := fmt.Sprintf("s%04d", i)
			if _, err := st.CreateSession(ctx, tenant, model.CreateSession{ID: id}); err != nil {
				b.Fatal(err)
			}
			if _, err := st.AppendMessages(ctx, tenant, id, batch); err != nil {
				b.Fatal(err)
			}
			if _, err := st.UpdateSession(ctx, tenant, id, model.UpdateSession{ExpiresAt: model.Optional[model.Time]{Set: true, Value: past}}); err != nil {
				b.Fatal(err)
			}
			if _, err := st.CreatePassage(ctx, tenant, "ag", model.CreatePassage{Content: "note", ExpiresAt: &past}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := st.CreateSession(ctx, "live", model.CreateSession{ID: "live"}); err != nil {
		b.Fatal(err)
	}
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
			if _, err := st.AppendMessages(ctx, "live", "live", one); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		return lat
	}
	alone := appendFor(nil, 500)

	stop := make(chan struct{})
	during := make(chan []time.Duration)
	go func() { during <- appendFor(stop, 0) }()
	time.Sleep(10 * time.Millisecond)
	t0 := time.Now()
	b.StartTimer()
	res, err := New(st, zerolog.Nop(), nil).Sweep(ctx)
	b.StopTimer()
	took := time.Since(t0)
	close(stop)
	beside := <-during
	if err != nil || res.Sessions != tenants*perTenant || res.Passages != tenants*perTenant {
		b.Fatalf("sweep: %+v, %v", res, err)
	}
	q := func(lat []time.Duration, p float64) float64 {
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(alone, 0.5), "alone_p50_ms")
	b.ReportMetric(q(alone, 0.99), "alone_p99_ms")
	b.ReportMetric(q(beside, 0.5), "sweep_p50_ms")
	b.ReportMetric(q(beside, 0.99), "sweep_p99_ms")
	b.ReportMetric(q(beside, 1), "sweep_max_ms")
	b.ReportMetric(float64(len(beside)), "appends_during")
	b.ReportMetric(took.Seconds(), "sweep_s")
}
