package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// BenchmarkHotSessionAppends is the contended case PostgreSQL is there for:
// 16 writers, split over two Store handles (two Logbook processes), append
// single keyed messages to one session. Each op is one append; the appends
// of each handle gather into group commits, and the handles take turns on
// the session's row.
//
//	go test -run '^$' -bench HotSessionAppends -benchtime 3200x -count 3 ./internal/repo/postgres/
func BenchmarkHotSessionAppends(b *testing.B) {
	const writers = 16
	ctx := context.Background()
	url := mustDatabase(b)
	handles := [2]interface {
		AppendMessages(context.Context, string, string, model.AppendRequest) (model.AppendResult, error)
	}{mustOpenURL(b, url), mustOpenURL(b, url)}
	if _, err := mustOpenURL(b, url).CreateSession(ctx, "t", model.CreateSession{ID: "hot"}); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			st := handles[g%2]
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				m := model.NewMessage{Role: model.RoleUser, Content: model.TextContent("hello, how are you today?"),
					Tokens: 7, IdempotencyKey: fmt.Sprintf("k%d", i)}
				if _, err := st.AppendMessages(ctx, "t", "hot", model.AppendRequest{Messages: []model.NewMessage{m}}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}
