package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

func benchMessage(i int) model.NewMessage {
	return model.NewMessage{Role: model.RoleUser, Content: model.TextContent(fmt.Sprintf("message %d %s", i, strings.Repeat("x", 200))), Tokens: 10, Cost: 0.001}
}

func mustSession(b testing.TB, s *Store) string {
	ses, err := s.CreateSession(context.Background(), "t", model.CreateSession{})
	if err != nil {
		b.Fatal(err)
	}
	return ses.ID
}

// BenchmarkAppendParallel is many clients appending one message each, the case
// group commit exists for: concurrent appends share transactions and fsyncs.
func BenchmarkAppendParallel(b *testing.B) {
	s := mustOpen(b)
	ctx := context.Background()
	b.SetParallelism(16) // 16 × GOMAXPROCS concurrent appenders
	b.ResetTimer()
	before := s.Stats()
	b.RunParallel(func(pb *testing.PB) {
		id := mustSession(b, s)
		i := 0
		for pb.Next() {
			if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: []model.NewMessage{benchMessage(i)}}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	st := s.Stats()
	if c := st.Commits - before.Commits; c > 0 {
		b.ReportMetric(float64(st.Writes-before.Writes)/float64(c), "writes/commit")
	}
}

// BenchmarkAppendBatch1000 is one 1000-message all-or-nothing append per op.
func BenchmarkAppendBatch1000(b *testing.B) {
	s := mustOpen(b)
	id := mustSession(b, s)
	msgs := make([]model.NewMessage, 1000)
	for i := range msgs {
		msgs[i] = benchMessage(i)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.AppendMessages(context.Background(), "t", id, model.AppendRequest{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkListMessagesPage reads a 100-message page at the start and near the
// end of a 50,000-message session: keyset paging costs the same at any depth.
func BenchmarkListMessagesPage(b *testing.B) {
	s := mustOpen(b)
	ctx := context.Background()
	id := mustSession(b, s)
	msgs := make([]model.NewMessage, 1000)
	for i := range msgs {
		msgs[i] = benchMessage(i)
	}
	for range 50 {
		if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
	}
	for _, after := range []int64{0, 49_900} {
		b.Run(fmt.Sprintf("after_seq=%d", after), func(b *testing.B) {
			for b.Loop() {
				p, err := s.ListMessages(ctx, "t", id, model.MessageFilter{AfterSeq: after}, repo.PageRequest{Limit: 100})
				if err != nil || len(p.Data) != 100 {
					b.Fatalf("%d rows, %v", len(p.Data), err)
				}
			}
		})
	}
}

// BenchmarkMessageLayout is the measurement behind the messages table's layout:
// sessions written interleaved (as concurrent agents write them), then 100-row
// pages read from one session, clustered by (session_id, seq) in a WITHOUT ROWID
// table against a rowid table with an index, each with and without mmap.
func BenchmarkMessageLayout(b *testing.B) {
	const sessions, perSession = 200, 500
	path := filepath.Join(b.TempDir(), "layout.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, ddl := range []string{
		`CREATE TABLE clustered (session_id TEXT, seq INTEGER, content TEXT, PRIMARY KEY (session_id, seq)) WITHOUT ROWID`,
		`CREATE TABLE plain (id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, content TEXT)`,
		`CREATE UNIQUE INDEX plain_by_seq ON plain (session_id, seq)`,
	} {
		if _, err := db.Exec(ddl); err != nil {
			b.Fatal(err)
		}
	}
	content := strings.Repeat("y", 300)
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for seq := 1; seq <= perSession; seq++ {
		for ses := range sessions { // interleaved: each session's rows are scattered in rowid order
			for _, table := range []string{"clustered", "plain"} {
				if _, err := tx.Exec(`INSERT INTO `+table+` (session_id, seq, content) VALUES (?, ?, ?)`,
					fmt.Sprintf("ses_%04d", ses), seq, content); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	for _, mmap := range []int{0, mmapSize} {
		rdb, err := sql.Open("sqlite", fmt.Sprintf("file:%s?mode=ro&_pragma=mmap_size(%d)", path, mmap))
		if err != nil {
			b.Fatal(err)
		}
		for _, table := range []string{"clustered", "plain"} {
			b.Run(fmt.Sprintf("%s/mmap=%v", table, mmap > 0), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				for b.Loop() {
					ses := fmt.Sprintf("ses_%04d", rng.IntN(sessions))
					after := rng.IntN(perSession - 100)
					rows, err := rdb.Query(`SELECT seq, content FROM `+table+` WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT 100`, ses, after)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for rows.Next() {
						var seq int
						var c string
						if err := rows.Scan(&seq, &c); err != nil {
							b.Fatal(err)
						}
						n++
					}
					rows.Close()
					if n != 100 {
						b.Fatalf("%d rows", n)
					}
				}
			})
		}
		rdb.Close()
	}
}

// BenchmarkIndexCatchUp is the idle-time indexer's speed: messages made
// searchable per second once appends stop, and its CPU per message, for
// messages of one 200-character word (the cost of a row) and of ~150 words
// of prose (~1 KB, what a conversation holds: the cost of FTS5's tokens).
func BenchmarkIndexCatchUp(b *testing.B) {
	prose := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(prose, 1.07, 1, 19999)
	for _, bc := range []struct {
		name string
		msg  func(i int) model.NewMessage
	}{
		{"text=one-word", benchMessage},
		{"text=prose", func(int) model.NewMessage {
			var t strings.Builder
			for range 150 {
				fmt.Fprintf(&t, "w%dq ", zipf.Uint64())
			}
			return model.NewMessage{Role: model.RoleUser, Content: model.TextContent(t.String()), Tokens: 10, Cost: 0.001}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchIndexCatchUp(b, bc.msg) })
	}
}

func benchIndexCatchUp(b *testing.B, msg func(int) model.NewMessage) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "l.db"), Migrate: true, NoMessageIndex: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	id := mustSession(b, s)
	msgs := make([]model.NewMessage, 1000)
	for i := range msgs {
		msgs[i] = msg(i)
	}
	st, err := s.readIndexState(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: msgs}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		// Run the indexer's steps directly, without its rests: the store was
		// opened without an indexer goroutine.
		for more := true; more; {
			if more, err = s.indexStep(ctx, &st, idleStep); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N*1000), "µs/msg")
}

// BenchmarkFork forks a 10-message and a 100,000-message session: sharing the
// prefix instead of copying it makes both cost the same.
func BenchmarkFork(b *testing.B) {
	s := mustOpen(b)
	ctx := context.Background()
	msgs := make([]model.NewMessage, 1000)
	for i := range msgs {
		msgs[i] = benchMessage(i)
	}
	for _, n := range []int{10, 100_000} {
		id := mustSession(b, s)
		for left := n; left > 0; left -= len(msgs) {
			if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: msgs[:min(left, len(msgs))]}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			for b.Loop() {
				at := int64(n / 2)
				if _, err := s.ForkSession(ctx, "t", id, model.ForkSession{AtSeq: &at}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
