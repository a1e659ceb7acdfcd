//go:build unix

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// BenchmarkInsertFloor is what SQLite alone charges for the writer's work: the
// same rows as an append, inserted through one prepared statement into
// Logbook's schema, round-robin over 32 sessions, group rows per durable
// (synchronous=FULL) commit. No HTTP, JSON, validation or counters: the floor
// under an append's server CPU at the group sizes 32 clients produce (~12–32)
// and under a 1000-message batch. It reports CPU µs per message.
func BenchmarkInsertFloor(b *testing.B) {
	for _, group := range []int{1, 12, 32, 1000} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			db, sessions := floorDB(b, 32)
			ins, err := db.Prepare(`INSERT INTO messages (tenant_id, session_id, seq, id, role, content,
				tokens, cost, metadata, created_at, gid, cum_tokens, cum_cost)
				VALUES ('t', ?, ?, ?, 'user', ?, 42, 0.00042, '{}', ?, ?, ?, ?)`)
			if err != nil {
				b.Fatal(err)
			}
			defer ins.Close()
			content := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 4)
			seqs := make([]int64, len(sessions))
			var gid int64
			cpu0 := processCPU(b)
			b.ResetTimer()
			for i := 0; i < b.N; {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				st := tx.Stmt(ins)
				for j := 0; j < group && i < b.N; j, i = j+1, i+1 {
					s := i % len(sessions)
					seqs[s]++
					gid++
					if _, err := st.Exec(sessions[s], seqs[s], newID(model.PrefixMessage), content,
						time.Now().UnixMilli(), gid, gid*42, float64(gid)*0.00042); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/msg")
		})
	}
}

// floorDB is a migrated database with n sessions, open without a Store, with
// the writer's settings.
func floorDB(b *testing.B, n int) (*sql.DB, []string) {
	path := filepath.Join(b.TempDir(), "floor.db")
	s, err := Open(context.Background(), Config{Path: path, Migrate: true, NoMessageIndex: true})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = mustSession(b, s)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_pragma=temp_store(MEMORY)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	return db, ids
}

// processCPU is this process's user + system CPU so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
