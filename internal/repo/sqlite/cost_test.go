package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// The hot path's cost, counted, not timed (issue 21): what one append group,
// one page read and one context read run against SQLite, held to the budgets
// below. A change that adds a statement, a prepare or WAL frames to these
// paths fails here, and must raise the budget in the same commit, saying on
// the line it adds or changes why the work is worth it.

// costLine budgets one statement: the SQL it starts with (blanks collapsed),
// and how many times it may run: fixed, plus perSession for each session the
// group touches, plus perMessage for each message stored.
type costLine struct {
	sql                           string
	fixed, perSession, perMessage int
}

// appendGroupBudget is a group of single-message appends, one to each of N
// sessions the writer has appended to before (their records are in memory),
// without idempotency keys: the load test's shape and an agent loop's.
var appendGroupBudget = []costLine{
	// Another process's commit (the CLI's import) makes the writer forget
	// what it remembers of sessions and take the highest gid anew.
	{sql: "PRAGMA data_version", fixed: 1},
	// The message, with its running totals and gid.
	{sql: "INSERT INTO messages", perMessage: 1},
	// Each touched session's counters, once per group however many appends
	// it had.
	{sql: "UPDATE sessions SET message_count", perSession: 1},
}

// appendGroupPrepares is how many statements the group may prepare: none, as
// every statement of the append path is prepared once, at Open.
const appendGroupPrepares = 0

// appendGroupFrames bounds the mean WAL frames a group's commit writes, over
// 16 groups of 32 appends to 32 sessions of ~6 KiB each (the b-trees' growth
// is deterministic here: the same rows, sizes and order every run). Measured
// 76.2 when this budget was written, read from the WAL by b-tree: ~2 leaves of
// the clustered messages table per session (its last leaf, and the
// neighbours SQLite rebalances with it as leaves fill), ~8 of its interior
// pages (which, WITHOUT ROWID, hold whole rows), ~4 leaves of messages_by_id
// and ~4 of messages_by_gid (right-hand edges, and their splits), 1 of
// sessions, and page 1. One more row written per group (a rollup, a cursor)
// adds a frame to every group and fails this.
const appendGroupFrames = 77

// pageReadBudget is a page of 100 messages of a session that is not a fork.
var pageReadBudget = []costLine{
	// The page, on the read pool's prepared statement; the lineage comes from
	// the lineage cache.
	{sql: "SELECT session_id, seq, id, role, content", fixed: 1},
}

// contextReadBudget is a context read (no max_tokens, no blocks) of a session
// with a compaction, in one read transaction.
var contextReadBudget = []costLine{
	{sql: "SELECT id, agent_id, title, status", fixed: 1},        // the session row
	{sql: "SELECT id, session_id, through_seq", fixed: 1},        // its latest compaction
	{sql: "WITH RECURSIVE", fixed: 1},                            // its lineage, in the snapshot
	{sql: "SELECT session_id, seq, id, role, content", fixed: 1}, // the messages after the compaction
}

// costOpen opens a store whose connections are recorded, with nothing in the
// background that would write or read beside the test: no indexer, no usage
// folder.
func costOpen(t *testing.T) (*Store, *costRecorder) {
	t.Helper()
	rec := &costRecorder{}
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "logbook.db"), Migrate: true,
		NoMessageIndex: true, connect: rec.connect, noUsageFolder: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, rec
}

func costMessage(i int) model.NewMessage {
	return model.NewMessage{Role: model.RoleUser, Content: model.TextContent(strings.Repeat("The quick brown fox. ", 10) + fmt.Sprint(i)),
		Tokens: 42, Cost: 0.00042}
}

// holdWriter queues a write that blocks the writer until the returned release
// is called: appends queued meanwhile then make one group.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	held, free, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.write(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			close(held)
			<-free
			return nil
		})
	}()
	<-held
	return func() {
		close(free)
		if err := <-done; err != nil {
			t.Fatalf("the write that held the writer: %v", err)
		}
	}
}

// checkBudget compares what ran (exec events) with the budget for sessions
// and messages, naming what ran without a line and what ran too often; with
// verbose it logs each line's count.
func checkBudget(t *testing.T, what string, events []costEvent, budget []costLine, sessions, messages int, verbose bool) {
	t.Helper()
	ran := map[string]int{}
	for _, e := range events {
		if e.kind != "exec" {
			continue
		}
		line := ""
		for _, b := range budget {
			if strings.HasPrefix(e.sql, b.sql) {
				line = b.sql
				break
			}
		}
		if line == "" {
			t.Errorf("%s ran a statement the budget has no line for: %.120s", what, e.sql)
			continue
		}
		ran[line]++
	}
	for _, b := range budget {
		allowed := b.fixed + b.perSession*sessions + b.perMessage*messages
		if verbose {
			t.Logf("%s: %-45q ran %d times (budget %d)", what, b.sql, ran[b.sql], allowed)
		}
		if ran[b.sql] > allowed {
			t.Errorf("%s ran %q %d times; the budget allows %d", what, b.sql, ran[b.sql], allowed)
		}
	}
}

func countKind(events []costEvent, role, kind string) (n int, sqls []string) {
	for _, e := range events {
		if e.role == role && e.kind == kind {
			n++
			sqls = append(sqls, e.sql)
		}
	}
	return n, sqls
}

// TestAppendGroupCost appends one message to each of 32 sessions in one
// group and holds the group's transaction to its budget: the statements it
// runs, the statements it prepares, and the WAL frames its commit writes.
func TestAppendGroupCost(t *testing.T) {
	const n = 32
	s, rec := costOpen(t)
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("cost-%02d", i)
		if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: ids[i]}); err != nil {
			t.Fatal(err)
		}
	}
	// Warm: each session appended to before (active, in the writer's
	// record), with enough messages (~6 KiB) that its rows fill leaves of
	// their own, as a conversation's do.
	warm := make([]model.NewMessage, 24)
	for i, id := range ids {
		for j := range warm {
			warm[j] = costMessage(i*len(warm) + j)
		}
		if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Batch: true, Messages: warm}); err != nil {
			t.Fatal(err)
		}
	}
	const groups = 16
	var frames []int
	for try := range groups { // each group held to the budget
		release := holdWriter(t, s)
		m := rec.mark()
		waits := make([]func() (model.AppendResult, error), n)
		for i, id := range ids {
			w, err := s.QueueAppend(ctx, "t", id, model.AppendRequest{Messages: []model.NewMessage{costMessage(1000 + try*n + i)}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			waits[i] = w
		}
		release()
		for _, w := range waits {
			if _, err := w(); err != nil {
				t.Fatal(err)
			}
		}
		// The group is the writer's last transaction; the held write's
		// commit came before it.
		events := rec.since(m)
		start := 0
		for i, e := range events {
			if e.role == "writer" && (e.kind == "commit" || e.kind == "rollback") && i+1 < len(events) {
				start = i + 1
			}
		}
		var group []costEvent
		for _, e := range events[start:] {
			if e.role == "writer" {
				group = append(group, e)
			}
		}
		commits, _ := countKind(group, "writer", "commit")
		if commits != 1 {
			t.Fatalf("group %d: %d commits after the held write; want the one group", try, commits)
		}
		what := fmt.Sprintf("group %d of %d appends", try, n)
		checkBudget(t, what, group, appendGroupBudget, n, n, try == 0)
		if p, sqls := countKind(group, "writer", "prepare"); p > appendGroupPrepares {
			t.Errorf("%s prepared %d statements (budget %d): %q", what, p, appendGroupPrepares, sqls)
		}
		frames = append(frames, group[len(group)-1].frames)
	}
	// Frames vary from group to group as leaves split; their mean over the
	// groups is what an append pays.
	sum := 0
	for _, f := range frames {
		sum += f
	}
	mean := float64(sum) / groups
	t.Logf("%d groups of %d appends: their commits wrote %v WAL frames, %.1f on average (budget %d)", groups, n, frames, mean, appendGroupFrames)
	if mean > appendGroupFrames {
		t.Errorf("a group of %d appends wrote %.1f WAL frames on average; the budget allows %d", n, mean, appendGroupFrames)
	}
}

// TestReadCost holds a page read and a context read to their budgets: the
// statements each runs and prepares (none, once the read pool has prepared
// its statements on the connection).
func TestReadCost(t *testing.T) {
	s, rec := costOpen(t)
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	batch := make([]model.NewMessage, 500)
	for i := range batch {
		batch[i] = costMessage(i)
	}
	for range 2 {
		if _, err := s.AppendMessages(ctx, "t", "long", model.AppendRequest{Batch: true, Messages: batch}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateCompaction(ctx, "t", "long", model.CreateCompaction{ThroughSeq: 900, Summary: model.TextContent("the first 900 messages"), Tokens: 10}); err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name   string
		budget []costLine
		read   func() error
	}{
		{"page of 100", pageReadBudget, func() error {
			_, err := s.ListMessages(ctx, "t", "long", model.MessageFilter{AfterSeq: 400}, repo.PageRequest{Limit: 100})
			return err
		}},
		{"context", contextReadBudget, func() error {
			_, err := s.Context(ctx, "t", "long", model.ContextQuery{})
			return err
		}},
	}
	for _, r := range reads {
		// The pool prepares a statement on each connection the first time it
		// runs there: enough reads first that every connection has.
		for range 2 * max(4, 2*4) {
			if err := r.read(); err != nil {
				t.Fatal(err)
			}
		}
		m := rec.mark()
		if err := r.read(); err != nil {
			t.Fatal(err)
		}
		var events []costEvent
		for _, e := range rec.since(m) {
			if e.role == "reader" {
				events = append(events, e)
			}
		}
		checkBudget(t, r.name, events, r.budget, 1, 0, true)
		if p, sqls := countKind(events, "reader", "prepare"); p > 0 {
			t.Errorf("%s prepared %d statements (budget 0): %q", r.name, p, sqls)
		}
	}
}
