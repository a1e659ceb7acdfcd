package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// BenchmarkConversationSearch is each kind of keyword search over a tenant
// of 10k and of 300k messages of prose (~150 words from a Zipf vocabulary):
// a word in one session, a word in 2% of messages, common words, and a
// common word within one small session. Their times should not grow with
// the tenant (docs/benchmarks.md, Scale). The fill is written and indexed
// through the store, not timed.
//
//	go test -run '^$' -bench ConversationSearch -benchtime 200x ./internal/repo/sqlite/
func BenchmarkConversationSearch(b *testing.B) {
	for _, n := range []int{10_000, 300_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s := searchFill(b, n)
			for _, q := range []struct {
				name string
				in   model.MessageSearch
			}{
				{"rare-word", model.MessageSearch{Query: "zyzzyva"}},
				{"word-in-2pct", model.MessageSearch{Query: "quokka"}},
				{"common-words", model.MessageSearch{Query: "w0q w1q w2q"}},
				{"small-session-common-word", model.MessageSearch{Query: "w0q", SessionID: "small"}},
			} {
				b.Run(q.name, func(b *testing.B) {
					q.in.Limit = 10
					for b.Loop() {
						res, err := s.SearchMessages(context.Background(), "t", q.in)
						if err != nil || len(res.Data) == 0 {
							b.Fatalf("%v, %d hits", err, len(res.Data))
						}
					}
				})
			}
		})
	}
}

// searchFill makes a store of n messages of prose in sessions of 100, with
// "zyzzyva" in 20 messages of one session, "quokka" in 2% of all, and a
// session "small" of 20 messages, and indexes them.
func searchFill(b *testing.B, n int) *Store {
	b.Helper()
	s, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "l.db"), Migrate: true, NoMessageIndex: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(r, 1.07, 1, 19999)
	text := func(extra string) string {
		var t strings.Builder
		for range 150 {
			fmt.Fprintf(&t, "w%dq ", zipf.Uint64())
		}
		if r.IntN(50) == 0 {
			t.WriteString("quokka ")
		}
		return t.String() + extra
	}
	write := func(id string, count int, extra func(i int) string) {
		if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: id}); err != nil {
			b.Fatal(err)
		}
		var req model.AppendRequest
		for i := range count {
			req.Messages = append(req.Messages, model.NewMessage{Role: model.RoleUser, Content: model.TextContent(text(extra(i)))})
		}
		if _, err := s.AppendMessages(ctx, "t", id, req); err != nil {
			b.Fatal(err)
		}
	}
	none := func(int) string { return "" }
	for k := 0; k < n/100-2; k++ {
		write(fmt.Sprintf("s%06d", k), 100, none)
		if k == n/200 {
			write("rare", 100, func(i int) string {
				if i%5 == 0 {
					return "zyzzyva"
				}
				return ""
			})
		}
	}
	write("small", 20, none)
	st, err := s.readIndexState(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for more := true; more; {
		if more, err = s.indexStep(ctx, &st, idleStep); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.lag.resync(ctx, s.rdb, st.nextGID); err != nil {
		b.Fatal(err)
	}
	return s
}
