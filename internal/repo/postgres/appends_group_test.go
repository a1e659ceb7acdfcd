package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// groupFixture is a session whose row another connection holds locked, so
// that appends queued meanwhile gather and are written in at most two
// transactions once it lets go.
type groupFixture struct {
	t     *testing.T
	url   string
	st    *postgres.Store
	hold  pgx.Tx
	waits []func() (model.AppendResult, error)
}

func mustGroupFixture(t *testing.T) *groupFixture {
	t.Helper()
	ctx := context.Background()
	url := mustDatabase(t)
	st := mustOpenURL(t, url)
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	hold, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT 1 FROM sessions WHERE tenant_id = 't' AND id = 's' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	return &groupFixture{t: t, url: url, st: st, hold: hold}
}

// queue queues an append and keeps its wait.
func (f *groupFixture) queue(req model.AppendRequest, stream *repo.AppendStream) {
	f.t.Helper()
	wait, err := f.st.QueueAppend(context.Background(), "t", "s", req, stream)
	if err != nil {
		f.t.Fatal(err)
	}
	f.waits = append(f.waits, wait)
}

// release lets the appends run and returns their outcomes, in queue order.
func (f *groupFixture) release() ([]model.AppendResult, []error) {
	f.t.Helper()
	if err := f.hold.Rollback(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	res, errs := make([]model.AppendResult, len(f.waits)), make([]error, len(f.waits))
	for i, w := range f.waits {
		res[i], errs[i] = w()
	}
	return res, errs
}

// commits counts the transactions that wrote the session's messages.
func (f *groupFixture) commits() int {
	f.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, f.url)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx,
		`SELECT count(DISTINCT xmin::text) FROM messages WHERE tenant_id = 't' AND session_id = 's'`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func text(s string) model.NewMessage {
	return model.NewMessage{Role: model.RoleUser, Content: model.TextContent(s), Tokens: 1}
}

func one(m model.NewMessage) model.AppendRequest {
	return model.AppendRequest{Messages: []model.NewMessage{m}}
}

func code(err error) string {
	var me *model.Error
	if errors.As(err, &me) {
		return me.Code
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// Appends that gather while the session is busy are written together, in
// the order queued, gap-free, with the session's counters as if one by one.
func TestAppendsGatheredAreOneCommit(t *testing.T) {
	f := mustGroupFixture(t)
	const n = 20
	for i := range n {
		f.queue(one(text(fmt.Sprintf("m%d", i))), nil)
	}
	res, errs := f.release()
	for i := range n {
		if errs[i] != nil || len(res[i].Messages) != 1 || res[i].Messages[0].Seq != int64(i+1) {
			t.Fatalf("append %d: %v, %+v; want seq %d", i, errs[i], res[i], i+1)
		}
	}
	if c := f.commits(); c > 2 {
		t.Errorf("%d appends gathered behind one lock took %d commits; want at most 2", n, c)
	}
	s, err := f.st.GetSession(context.Background(), "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq != n || s.MessageCount != n || s.TotalTokens != n || s.TurnCount != n || s.Status != model.StatusActive {
		t.Errorf("session = %+v; want %d messages, tokens and turns, active", s, n)
	}
}

// A statement the database refuses (text with U+0000) fails the group's
// commit; the group is then written one append at a time, so only the append
// that carries it fails.
func TestGatheredAppendsIsolateARefusedOne(t *testing.T) {
	f := mustGroupFixture(t)
	const n, bad = 12, 5
	for i := range n {
		m := text(fmt.Sprintf("m%d", i))
		if i == bad {
			m = text("nul \x00 here")
		}
		f.queue(one(m), nil)
	}
	res, errs := f.release()
	seq := int64(0)
	for i := range n {
		if i == bad {
			if code(errs[i]) != "validation_failed" {
				t.Errorf("append %d (with NUL): %v; want validation_failed", i, errs[i])
			}
			continue
		}
		seq++
		if errs[i] != nil || res[i].Messages[0].Seq != seq {
			t.Errorf("append %d: %v, %+v; want seq %d", i, errs[i], res[i], seq)
		}
	}
	s, err := f.st.GetSession(context.Background(), "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq != n-1 || s.MessageCount != n-1 {
		t.Errorf("session last_seq %d, count %d; want %d", s.LastSeq, s.MessageCount, n-1)
	}
}

// Within a group each append sees the ones before it as stored: a key
// stored earlier in the group is a replay (or a conflict), a request key
// too, a call made earlier can be answered once, a fence sees the seqs
// taken before it, and a stream stops at its first failure.
func TestGatheredAppendsSeeEachOther(t *testing.T) {
	f := mustGroupFixture(t)
	keyed := text("k")
	keyed.IdempotencyKey = "k1"
	other := text("other")
	other.IdempotencyKey = "k1"
	call := model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent(""),
		ToolCalls: []model.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}}
	cid := "c1"
	result := model.NewMessage{Role: model.RoleTool, Content: model.TextContent("r"), ToolCallID: &cid}
	zero, two := int64(0), int64(2)
	batch := model.AppendRequest{Batch: true, RequestKey: "r1", Messages: []model.NewMessage{text("b1"), text("b2")}}
	batchOther := model.AppendRequest{Batch: true, RequestKey: "r1", Messages: []model.NewMessage{text("b1")}}
	stream := &repo.AppendStream{}
	unknown := "nope"

	steps := []struct {
		name   string
		req    model.AppendRequest
		stream *repo.AppendStream
		code   string
		seqs   []int64
		replay bool
	}{
		{"fenced first", model.AppendRequest{ExpectedLastSeq: &zero, Messages: []model.NewMessage{keyed}}, nil, "", []int64{1}, false},
		{"same key, same message", one(keyed), nil, "", []int64{1}, true},
		{"same key, other message", one(other), nil, "idempotency_conflict", nil, false},
		{"fence already passed", model.AppendRequest{ExpectedLastSeq: &zero, Messages: []model.NewMessage{text("late")}}, nil, "stale_seq", nil, false},
		{"fence at the group's last seq", model.AppendRequest{ExpectedLastSeq: &two, Messages: []model.NewMessage{text("x")}}, nil, "stale_seq", nil, false},
		{"call", one(call), nil, "", []int64{2}, false},
		{"its result", one(result), nil, "", []int64{3}, false},
		{"its result again", one(result), nil, "duplicate_tool_result", nil, false},
		{"request", batch, nil, "", []int64{4, 5}, false},
		{"request again", batch, nil, "", []int64{4, 5}, true},
		{"request key, other body", batchOther, nil, "idempotency_conflict", nil, false},
		{"stream 0", one(text("s0")), stream, "", []int64{6}, false},
		{"stream 1", one(model.NewMessage{Role: model.RoleTool, Content: model.TextContent("?"), ToolCallID: &unknown}), stream, "unknown_tool_call", nil, false},
		{"stream 2", one(text("s2")), stream, "stream_stopped", nil, false},
		{"after the stream", one(text("after")), nil, "", []int64{7}, false},
	}
	for _, s := range steps {
		f.queue(s.req, s.stream)
	}
	res, errs := f.release()
	for i, s := range steps {
		if got := code(errs[i]); got != s.code {
			t.Errorf("%s: error %q; want %q", s.name, got, s.code)
			continue
		}
		if s.code != "" {
			continue
		}
		var seqs []int64
		for _, m := range res[i].Messages {
			seqs = append(seqs, m.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(s.seqs) || res[i].Replayed != s.replay {
			t.Errorf("%s: seqs %v, replayed %v; want %v, %v", s.name, seqs, res[i].Replayed, s.seqs, s.replay)
		}
	}
	if c := f.commits(); c > 2 {
		t.Errorf("took %d commits; want at most 2", c)
	}
	s, err := f.st.GetSession(context.Background(), "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq != 7 || s.MessageCount != 7 {
		t.Errorf("session last_seq %d, count %d; want 7", s.LastSeq, s.MessageCount)
	}
}
