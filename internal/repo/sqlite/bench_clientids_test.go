package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// BenchmarkAppendBatch1000ClientIDs is BenchmarkAppendBatch1000 with a client
// id on every message (an AI SDK chat's): what the ids' checks and index add.
func BenchmarkAppendBatch1000ClientIDs(b *testing.B) {
	s := mustOpen(b)
	id := mustSession(b, s)
	n := 0
	b.ResetTimer()
	for b.Loop() {
		msgs := make([]model.NewMessage, 1000)
		for i := range msgs {
			msgs[i] = benchMessage(i)
			cid := fmt.Sprintf("ui-%d", n)
			n++
			msgs[i].ClientID = &cid
		}
		if _, err := s.AppendMessages(context.Background(), "t", id, model.AppendRequest{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "msgs/s")
}
