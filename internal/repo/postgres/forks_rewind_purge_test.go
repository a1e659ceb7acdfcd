package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// Fork, rewind and purge, run as one script against SQLite and PostgreSQL
// (runSesMsgScript), with the history each leaves read back afterwards.

// frpStore is what these scripts call, on top of sesMsgStore.
type frpStore interface {
	sesMsgStore
	ForkSession(ctx context.Context, tenant, parentID string, in model.ForkSession) (model.Session, error)
	Rewind(ctx context.Context, tenant, id string, in model.Rewind) (model.RewindResult, error)
	PurgeSession(ctx context.Context, tenant, id string) error
	PurgeSessions(ctx context.Context, tenant string, in model.PurgeRequest) (model.PurgeResult, error)
	PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error)
	ListCheckpoints(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Checkpoint], error)
	CreateCompaction(ctx context.Context, tenant, sessionID string, in model.CreateCompaction) (model.CompactionResult, error)
	ListCompactions(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Compaction], error)
	CreateFile(ctx context.Context, tenant, user, mediaType string, data []byte) (model.File, bool, error)
	GetFile(ctx context.Context, tenant, user, id string) (model.File, error)
}

var (
	frpIDs   = regexp.MustCompile(`\b(msg_|ses_|cmp_|ckp_)[0-9a-f]{32}\b`)
	frpTimes = regexp.MustCompile(`"(created_at|updated_at|closed_at)":("[^"]*"|[0-9]+)`)
)

// frpAdd records a step with every store-made id and time masked.
func frpAdd(tr *sesMsgTranscript, step string, v any, err error) {
	if err != nil {
		tr.add(step, nil, err)
		return
	}
	if r, ok := v.(model.RewindResult); ok {
		v = map[string]any{"session": sesMsgMask(r.Session), "removed_messages": r.RemovedMessages,
			"removed_checkpoints": r.RemovedCheckpoints, "removed_compactions": r.RemovedCompactions,
			"messages": sesMsgMask(r.Messages)}
	}
	b, err := json.Marshal(sesMsgMask(v))
	if err != nil {
		tr.add(step, nil, err)
		return
	}
	s := frpIDs.ReplaceAllString(string(b), "${1}…")
	tr.add(step, json.RawMessage(frpTimes.ReplaceAllString(s, `"$1":0`)), nil)
}

// frpHistory records everything a reader sees of a session: the row, every
// message, every compaction and checkpoint.
func frpHistory(ctx context.Context, st frpStore, tr *sesMsgTranscript, step, id string) {
	step += ": " + frpIDs.ReplaceAllString(id, "${1}…")
	s, err := st.GetSession(ctx, "t", id)
	frpAdd(tr, step+" session", s, err)
	msgs, err := st.ListMessages(ctx, "t", id, model.MessageFilter{}, repo.PageRequest{Limit: model.MaxLimit})
	frpAdd(tr, step+" messages", msgs, err)
	cs, err := st.ListCompactions(ctx, "t", id, repo.PageRequest{})
	frpAdd(tr, step+" compactions", cs, err)
	ck, err := st.ListCheckpoints(ctx, "t", id, repo.PageRequest{})
	frpAdd(tr, step+" checkpoints", ck, err)
}

func frpAssistant(text, call string) model.NewMessage {
	return model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent(text), Tokens: 7, Cost: 0.5,
		ToolCalls: []model.ToolCall{{ID: call, Name: "f", Arguments: `{}`}}}
}

func frpResult(text, call string) model.NewMessage {
	return model.NewMessage{Role: model.RoleTool, Content: model.TextContent(text), ToolCallID: sesMsgPtr(call), Tokens: 1}
}

func frpKeyed(text, key string) model.NewMessage {
	m := sesMsgUser(text)
	m.IdempotencyKey = key
	return m
}

func TestForkMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st0 sesMsgStore, tr *sesMsgTranscript) {
		st := st0.(frpStore)
		add := func(step string, v any, err error) { frpAdd(tr, step, v, err) }
		fork := func(step, parent string, in model.ForkSession) model.Session {
			f, err := st.ForkSession(ctx, "t", parent, in)
			add(step, f, err)
			return f
		}
		_, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "root", Title: sesMsgPtr("root"),
			AgentID: sesMsgPtr("ag"), Metadata: model.Object(`{"k":"v","n":[1,2]}`)})
		add("create root", nil, err)
		fork("fork an empty session", "root", model.ForkSession{ID: "empty"})
		res, err := st.AppendMessages(ctx, "t", "root", sesMsgBatch(sesMsgUser("r1"), frpAssistant("calls", "c1"),
			frpResult("answer", "c1"), frpKeyed("r4", "k4")))
		add("append root", res, err)
		c, err := st.CreateCompaction(ctx, "t", "root", model.CreateCompaction{ThroughSeq: 1, Summary: model.TextContent("first"), Tokens: 2})
		add("compaction through 1", c, err)
		c, err = st.CreateCompaction(ctx, "t", "root", model.CreateCompaction{ThroughSeq: 3,
			Summary: model.Content{Parts: []model.Part{{Type: "text", Text: sesMsgPtr("through three")}}}, Model: sesMsgPtr("m"),
			ProviderItem: model.ProviderItem(`{"type":"compaction","z":1,"a":2}`)})
		add("compaction through 3", c, err)

		def := fork("fork at the parent's end", "root", model.ForkSession{})
		fork("fork at 2", "root", model.ForkSession{ID: "f2", AtSeq: sesMsgPtr(int64(2))})
		fork("fork at 0", "root", model.ForkSession{ID: "f0", AtSeq: sesMsgPtr(int64(0))})
		fork("fork at 3 with title and metadata", "root", model.ForkSession{ID: "f3", AtSeq: sesMsgPtr(int64(3)),
			Title: sesMsgPtr("other"), Metadata: model.Object(`{"x":1}`)})
		fork("fork past the end", "root", model.ForkSession{ID: "bad", AtSeq: sesMsgPtr(int64(5))})
		fork("fork past the end under a taken id", "root", model.ForkSession{ID: "f2", AtSeq: sesMsgPtr(int64(5))})
		fork("fork under a taken id", "root", model.ForkSession{ID: "f2"})
		fork("fork under the parent's id", "root", model.ForkSession{ID: "root"})
		fork("fork of a missing session", "missing", model.ForkSession{ID: "x"})
		f, err := st.ForkSession(ctx, "u", "root", model.ForkSession{ID: "x"})
		add("fork in another tenant", f, err)

		res, err = st.AppendMessages(ctx, "t", "f2", sesMsgOne(frpResult("fork's answer", "c1")))
		add("answer an inherited call", res, err)
		res, err = st.AppendMessages(ctx, "t", "f2", sesMsgOne(frpKeyed("k4 again", "k4")))
		add("a parent's key is the fork's to use", res, err)
		fork("fork of a fork", "f2", model.ForkSession{ID: "ff", AtSeq: sesMsgPtr(int64(3))})
		res, err = st.AppendMessages(ctx, "t", "ff", sesMsgOne(sesMsgUser("ff4")))
		add("append ff", res, err)
		_, err = st.CloseSession(ctx, "t", "root")
		add("close root", nil, err)
		fork("fork a closed session", "root", model.ForkSession{ID: "fc", AtSeq: sesMsgPtr(int64(1))})
		for _, id := range []string{"root", "empty", def.ID, "f2", "f0", "f3", "ff", "fc"} {
			frpHistory(ctx, st, tr, "after forking", id)
		}
	})
}

func TestRewindMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st0 sesMsgStore, tr *sesMsgTranscript) {
		st := st0.(frpStore)
		add := func(step string, v any, err error) { frpAdd(tr, step, v, err) }
		rewind := func(step, id string, in model.Rewind) {
			r, err := st.Rewind(ctx, "t", id, in)
			add(step, r, err)
		}
		app := func(step, id string, req model.AppendRequest) {
			res, err := st.AppendMessages(ctx, "t", id, req)
			add(step, res, err)
		}
		to := func(n int64) *int64 { return &n }

		rewind("rewind a missing session", "s", model.Rewind{ToSeq: to(0)})
		_, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"})
		add("create", nil, err)
		rewind("rewind an empty session to 0", "s", model.Rewind{ToSeq: to(0)})
		head, _, err := st.CreateFile(ctx, "t", "", "text/plain", []byte("in the head"))
		add("file in the head", head, err)
		tail, _, err := st.CreateFile(ctx, "t", "", "text/plain", []byte("in the tail"))
		add("file in the tail", tail, err)
		withFile := func(text string, f model.File) model.NewMessage {
			return model.NewMessage{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{
				{Type: "text", Text: sesMsgPtr(text)}, {Type: "file", FileID: f.ID, MediaType: "text/plain"}}}, Tokens: 2}
		}
		last, _, err := st.CreateFile(ctx, "t", "", "text/plain", []byte("only in the last message"))
		add("file in the last message", last, err)
		checkpoint := func(it int64) {
			state := fmt.Sprintf(`{"step":%d,"pause_until_ms":%d}`, it, 1000*it)
			c, err := st.PutCheckpoint(ctx, "t", "s", model.PutCheckpoint{Iteration: it, State: model.JSON(state)}, model.CheckpointRetention{})
			add(fmt.Sprint("checkpoint ", it), c, err)
		}
		app("1-2", "s", sesMsgBatch(withFile("one", head), frpAssistant("two", "c1")))
		checkpoint(1)
		app("3", "s", sesMsgOne(frpResult("three", "c1")))
		checkpoint(2)
		req := sesMsgBatch(frpKeyed("four", "k4"), frpAssistant("five", "c2"))
		req.RequestKey = "R45"
		app("4-5 under a request key", "s", req)
		checkpoint(3)
		app("6", "s", sesMsgOne(withFile("six", tail)))
		app("7", "s", sesMsgOne(frpKeyed("seven", "k7")))
		checkpoint(4)
		app("8-9", "s", sesMsgBatch(sesMsgUser("eight"), sesMsgUser("nine")))
		checkpoint(5)
		app("10", "s", sesMsgOne(withFile("ten", last)))
		for _, through := range []int64{2, 5, 8} {
			c, err := st.CreateCompaction(ctx, "t", "s", model.CreateCompaction{ThroughSeq: through, Summary: model.TextContent(fmt.Sprint("through ", through))})
			add(fmt.Sprint("compaction through ", through), c, err)
		}
		for _, f := range []struct {
			id string
			at int64
		}{{"fa", 9}, {"fb", 3}, {"fc", 6}} { // fa and fc share what the rewind removes
			fs, err := st.ForkSession(ctx, "t", "s", model.ForkSession{ID: f.id, AtSeq: &f.at})
			add("fork "+f.id, fs, err)
		}
		app("append fa", "fa", sesMsgOne(sesMsgUser("fa's own")))
		frpHistory(ctx, st, tr, "before", "s")

		s, _ := st.GetSession(ctx, "t", "s")
		rewind("to_seq past last_seq", "s", model.Rewind{ToSeq: to(s.LastSeq + 1)})
		rewind("stale expected_last_seq", "s", model.Rewind{ToSeq: to(3), ExpectedLastSeq: to(s.LastSeq - 1)})
		rewind("to last_seq: nothing to do", "s", model.Rewind{ToSeq: to(s.LastSeq), ExpectedLastSeq: to(s.LastSeq)})
		rewind("to 5", "s", model.Rewind{ToSeq: to(5), ExpectedLastSeq: to(s.LastSeq)})
		frpHistory(ctx, st, tr, "after rewinding to 5", "s")
		for _, id := range []string{"fa", "fb", "fc"} {
			frpHistory(ctx, st, tr, "a fork after its parent's rewind", id)
		}
		for _, before := range []model.Time{2500, 3500} {
			due, err := st.ListSessions(ctx, "t", model.SessionFilter{DueBefore: &before}, repo.PageRequest{})
			add(fmt.Sprint("paused before ", before, ": pause_until is the newest remaining checkpoint's"), due, err)
		}
		for _, f := range []model.File{head, tail, last} {
			got, err := st.GetFile(ctx, "t", "", f.ID)
			add("file "+f.ID+" after the rewind", got, err)
		}

		app("retry of a rewound keyed message", "s", sesMsgOne(frpKeyed("seven", "k7")))
		app("retry of a kept keyed message", "s", sesMsgOne(frpKeyed("four", "k4")))
		app("retry of a rewound request", "s", req)
		app("a new key", "s", sesMsgOne(frpKeyed("eight", "k8")))
		app("an answer to a call that was rewound away", "s", sesMsgOne(frpResult("late", "c2")))

		s, _ = st.GetSession(ctx, "t", "s")
		rewind("a replacement that fails rolls the rewind back", "s", model.Rewind{ToSeq: to(3), ExpectedLastSeq: to(s.LastSeq),
			Messages: []model.NewMessage{sesMsgUser("ok"), frpResult("unknown", "zz")}})
		frpHistory(ctx, st, tr, "after a failed rewind", "s")
		rewind("to 3 with a replacement tail reusing a rewound key", "s", model.Rewind{ToSeq: to(3), ExpectedLastSeq: to(s.LastSeq),
			Messages: []model.NewMessage{frpKeyed("seven again", "k7"), frpAssistant("new call", "c9"), frpResult("new answer", "c9")}})
		frpHistory(ctx, st, tr, "after the replacement", "s")
		app("the reused key replays", "s", sesMsgOne(frpKeyed("seven again", "k7")))
		app("the replaced k4 is rewound", "s", sesMsgOne(frpKeyed("four", "k4")))
		s, _ = st.GetSession(ctx, "t", "s")
		rewind("append only: to last_seq with messages", "s", model.Rewind{ToSeq: to(s.LastSeq),
			Messages: []model.NewMessage{sesMsgUser("appended by a rewind")}})

		rewind("a detached fork", "fc", model.Rewind{ToSeq: to(2)})
		app("append to the shortened fork", "fc", sesMsgOne(sesMsgUser("fc3")))
		frpHistory(ctx, st, tr, "a shortened fork", "fc")
		fd, err := st.ForkSession(ctx, "t", "s", model.ForkSession{ID: "fd", AtSeq: to(5)})
		add("fork fd", fd, err)
		rewind("a sharing fork below its fork point", "fd", model.Rewind{ToSeq: to(2)})
		app("append to fd", "fd", sesMsgOne(sesMsgUser("fd3")))
		frpHistory(ctx, st, tr, "a fork that shares less", "fd")
		rewind("to 0 clears", "s", model.Rewind{ToSeq: to(0)})
		frpHistory(ctx, st, tr, "cleared", "s")
		for _, id := range []string{"fa", "fb", "fc", "fd"} {
			frpHistory(ctx, st, tr, "a fork after its parent cleared", id)
		}
		for _, f := range []model.File{head, tail} {
			got, err := st.GetFile(ctx, "t", "", f.ID)
			add("file "+f.ID+" after clearing", got, err)
		}
		_, err = st.CloseSession(ctx, "t", "fa")
		add("close fa", nil, err)
		rewind("a closed session", "fa", model.Rewind{ToSeq: to(1)})
		r, err := st.Rewind(ctx, "u", "fb", model.Rewind{ToSeq: to(0)})
		add("another tenant's session", r, err)
		rewind("a session with no checkpoints left", "fb", model.Rewind{ToSeq: to(1)})
	})
}

func TestPurgeMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st0 sesMsgStore, tr *sesMsgTranscript) {
		st := st0.(frpStore)
		add := func(step string, v any, err error) { frpAdd(tr, step, v, err) }
		app := func(step, id string, req model.AppendRequest) {
			res, err := st.AppendMessages(ctx, "t", id, req)
			add(step, res, err)
		}
		fork := func(parent, id string, at int64) {
			f, err := st.ForkSession(ctx, "t", parent, model.ForkSession{ID: id, AtSeq: &at})
			add("fork "+id, f, err)
		}
		file, _, err := st.CreateFile(ctx, "t", "", "text/plain", []byte("referenced by root"))
		add("file", file, err)
		_, err = st.CreateSession(ctx, "t", model.CreateSession{ID: "root"})
		add("create root", nil, err)
		app("root 1-4", "root", sesMsgBatch(sesMsgUser("r1"), frpAssistant("r2", "c1"),
			model.NewMessage{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{{Type: "file", FileID: file.ID, MediaType: "text/plain"}}}},
			frpKeyed("r4", "k4")))
		c, err := st.CreateCompaction(ctx, "t", "root", model.CreateCompaction{ThroughSeq: 2, Summary: model.TextContent("two")})
		add("compaction", c, err)
		ck, err := st.PutCheckpoint(ctx, "t", "root", model.PutCheckpoint{Iteration: 1, State: model.JSON(`{"a":1}`)}, model.CheckpointRetention{})
		add("checkpoint", ck, err)
		fork("root", "f1", 3)
		app("f1 4-5", "f1", sesMsgBatch(frpResult("f1 answer", "c1"), sesMsgUser("f1 5")))
		fork("f1", "f2", 4)
		app("f2 5", "f2", sesMsgOne(sesMsgUser("f2 5")))
		fork("root", "f3", 2)
		old, err := st.ListMessages(ctx, "t", "root", model.MessageFilter{}, repo.PageRequest{})
		add("root's messages", old, err)
		for _, id := range []string{"f1", "f2", "f3"} {
			frpHistory(ctx, st, tr, "before the purge", id)
		}

		add("purge a missing session", nil, st.PurgeSession(ctx, "t", "nope"))
		add("purge in another tenant", nil, st.PurgeSession(ctx, "u", "root"))
		add("purge root", nil, st.PurgeSession(ctx, "t", "root"))
		add("purge root again", nil, st.PurgeSession(ctx, "t", "root"))
		frpHistory(ctx, st, tr, "purged", "root")
		for _, id := range []string{"f1", "f2", "f3"} {
			frpHistory(ctx, st, tr, "after the purge", id)
		}
		for _, m := range old.Data {
			got, err := st.GetMessage(ctx, "t", "f1", m.ID)
			add(fmt.Sprint("root's seq ", m.Seq, " by its old id through f1"), got, err)
		}
		got, err := st.GetFile(ctx, "t", "", file.ID)
		add("the file, still referenced by the forks' copies", got, err)
		app("answer an inherited call in f3", "f3", sesMsgOne(frpResult("f3 answer", "c1")))
		app("f1's copy took no keys", "f1", sesMsgOne(frpKeyed("r4", "k4")))
		app("f2 still reads through f1", "f2", sesMsgOne(sesMsgUser("f2 6")))
		frpHistory(ctx, st, tr, "after appending", "f2")
		for _, id := range []string{"f1", "f2", "f3"} {
			add("purge "+id, nil, st.PurgeSession(ctx, "t", id))
		}
		got, err = st.GetFile(ctx, "t", "", file.ID)
		add("the file, once nothing references it", got, err)
	})
}

func TestPurgeSessionsMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st0 sesMsgStore, tr *sesMsgTranscript) {
		st := st0.(frpStore)
		add := func(step string, v any, err error) { frpAdd(tr, step, v, err) }
		mk := func(id string, msgs int, status model.Status) {
			_, err := st.CreateSession(ctx, "t", model.CreateSession{ID: id})
			if err == nil && msgs > 0 {
				batch := make([]model.NewMessage, msgs)
				for i := range batch {
					batch[i] = sesMsgUser(fmt.Sprint(id, " ", i+1))
				}
				_, err = st.AppendMessages(ctx, "t", id, sesMsgBatch(batch...))
			}
			if err == nil && status == model.StatusCompleted {
				_, err = st.CloseSession(ctx, "t", id)
			}
			if err != nil {
				add("make "+id, nil, err)
			}
		}
		// More than one batch of old completed sessions, some with
		// checkpoints; a chain of old forks (leaves first); an old parent
		// with a recent fork, which takes the prefix over; sessions that do
		// not match.
		for i := range 130 {
			mk(fmt.Sprintf("old%03d", i), i%4, model.StatusCompleted)
			if i%10 == 0 {
				_, err := st.PutCheckpoint(ctx, "t", fmt.Sprintf("old%03d", i), model.PutCheckpoint{Iteration: 1, State: model.JSON(`{}`)}, model.CheckpointRetention{})
				add(fmt.Sprint("checkpoint old", i), nil, err)
			}
		}
		mk("chain0", 3, model.StatusActive)
		for i, at := range []int64{2, 1} {
			f, err := st.ForkSession(ctx, "t", fmt.Sprint("chain", i), model.ForkSession{ID: fmt.Sprint("chain", i+1), AtSeq: &at})
			add("fork chain", f, err)
		}
		mk("parent", 4, model.StatusActive)
		f, err := st.ForkSession(ctx, "t", "parent", model.ForkSession{ID: "young", AtSeq: sesMsgPtr(int64(3))})
		add("fork young", f, err)
		mk("active", 2, model.StatusActive)
		mk("recent", 2, model.StatusCompleted)
		for _, id := range []string{"chain0", "chain1", "chain2", "parent"} {
			_, err := st.CloseSession(ctx, "t", id)
			add("close "+id, nil, err)
		}
		p.exec(t, st, `UPDATE sessions SET updated_at = 1000 WHERE tenant_id = 't' AND id <> 'recent' AND id <> 'young'`)
		// One creation time: the batches' order, and the list's, is the ids'.
		p.exec(t, st, `UPDATE sessions SET created_at = 500 WHERE tenant_id = 't'`)

		req := model.PurgeRequest{Status: model.StatusCompleted, DryRun: true}.WithCutoff(model.Time(2000))
		res, err := st.PurgeSessions(ctx, "t", req)
		add("dry run", res, err)
		res, err = st.PurgeSessions(ctx, "u", req)
		add("dry run in another tenant", res, err)
		req.DryRun = false
		res, err = st.PurgeSessions(ctx, "t", req)
		add("purge", res, err)
		res, err = st.PurgeSessions(ctx, "t", req)
		add("purge again", res, err)
		list, err := st.ListSessions(ctx, "t", model.SessionFilter{}, repo.PageRequest{Limit: model.MaxLimit})
		add("what is left", list, err)
		frpHistory(ctx, st, tr, "an old parent's young fork", "young")
	})
}

// Writers on two Store handles (two processes, as far as the database can
// tell) append to one session and rewind it, every write fenced by the
// last_seq it read. Whatever the interleaving, the history must stay gap-free
// and every acknowledged message must be where it was acknowledged, unless an
// acknowledged rewind removed it: the removals the rewinds reported account
// for exactly the acknowledged messages that are missing.
func TestRewindAppendRaceAcrossHandles(t *testing.T) {
	const (
		writers = 8
		ops     = 60
	)
	ctx := context.Background()
	url := mustDatabase(t)
	handles := [2]*postgres.Store{mustOpenURL(t, url), mustOpenURL(t, url)}
	if _, err := handles[0].CreateSession(ctx, "t", model.CreateSession{ID: "hot"}); err != nil {
		t.Fatal(err)
	}
	type acked struct {
		seq     int64
		content string
	}
	var (
		mu      sync.Mutex
		written []acked
		removed int64
		stale   int
	)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := handles[g%2]
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for i := range ops {
				s, err := st.GetSession(ctx, "t", "hot")
				if err != nil {
					errs <- err
					return
				}
				last := s.LastSeq
				text := fmt.Sprintf("g%d-%d", g, i)
				var msgs []model.Message
				var gone int64
				if last > 0 && rng.IntN(3) == 0 {
					in := model.Rewind{ToSeq: sesMsgPtr(max(0, last-1-rng.Int64N(3))), ExpectedLastSeq: &last}
					if rng.IntN(2) == 0 {
						in.Messages = []model.NewMessage{sesMsgUser(text + " tail")}
					}
					var r model.RewindResult
					r, err = st.Rewind(ctx, "t", "hot", in)
					msgs, gone = r.Messages, r.RemovedMessages
				} else {
					req := model.AppendRequest{Messages: []model.NewMessage{sesMsgUser(text), sesMsgUser(text + "'")}, Batch: true,
						ExpectedLastSeq: &last}
					var r model.AppendResult
					r, err = st.AppendMessages(ctx, "t", "hot", req)
					msgs = r.Messages
				}
				mu.Lock()
				switch {
				case model.AsError(err).Code == "stale_seq":
					stale++
				case err != nil:
					mu.Unlock()
					errs <- err
					return
				default:
					removed += gone
					for _, m := range msgs {
						written = append(written, acked{m.Seq, m.Content.Text})
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := handles[1].GetSession(ctx, "t", "hot")
	if err != nil {
		t.Fatal(err)
	}
	var history []model.Message
	for cur := ""; ; {
		page, err := handles[1].ListMessages(ctx, "t", "hot", model.MessageFilter{}, repo.PageRequest{Limit: model.MaxLimit, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, page.Data...)
		if page.NextCursor == nil {
			break
		}
		cur = *page.NextCursor
	}
	present := map[string]int64{}
	var tokens int64
	for i, m := range history {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d: a gap", i, m.Seq)
		}
		present[m.Content.Text] = m.Seq
		tokens += m.Tokens
	}
	if s.LastSeq != int64(len(history)) || s.MessageCount != s.LastSeq || s.TotalTokens != tokens {
		t.Fatalf("session last_seq %d count %d tokens %d; history has %d messages, %d tokens",
			s.LastSeq, s.MessageCount, s.TotalTokens, len(history), tokens)
	}
	ackedText := map[string]bool{}
	var missing int64
	for _, a := range written {
		ackedText[a.content] = true
		seq, ok := present[a.content]
		switch {
		case !ok:
			missing++
		case seq != a.seq:
			t.Errorf("%q acknowledged at seq %d, stored at %d", a.content, a.seq, seq)
		}
	}
	for text := range present {
		if !ackedText[text] {
			t.Errorf("%q is stored but was never acknowledged", text)
		}
	}
	if missing != removed {
		t.Errorf("%d acknowledged messages are missing, the rewinds reported removing %d", missing, removed)
	}
	t.Logf("%d messages acknowledged, %d removed by rewinds, %d left; %d writes refused as stale",
		len(written), removed, len(history), stale)
}

// A fault at the rewind point fails the rewind and changes nothing.
func TestRewindFault(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	plain := mustOpenURL(t, url)
	if _, err := plain.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.AppendMessages(ctx, "t", "s", sesMsgBatch(sesMsgUser("a"), sesMsgUser("b"))); err != nil {
		t.Fatal(err)
	}
	f, err := repo.NewFaults(1, repo.FaultRule{Point: repo.PointRewind, Kind: repo.FaultError, Rate: 1, Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: url, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in := model.Rewind{ToSeq: sesMsgPtr(int64(1)), Messages: []model.NewMessage{sesMsgUser("c")}}
	if _, err := st.Rewind(ctx, "t", "s", in); model.AsError(err).Kind != model.KindUnavailable || !errors.Is(err, repo.ErrInjected) {
		t.Fatalf("err = %v, want an injected unavailable", err)
	}
	if s, err := plain.GetSession(ctx, "t", "s"); err != nil || s.LastSeq != 2 {
		t.Fatalf("after the fault: last_seq %d (%v), want 2", s.LastSeq, err)
	}
	if r, err := st.Rewind(ctx, "t", "s", in); err != nil || r.Session.LastSeq != 2 || r.RemovedMessages != 1 {
		t.Fatalf("the rewind again: %+v %v", r, err)
	}
}

// While one handle rewinds a parent step by step and finally purges it,
// another forks it and appends to the forks: every fork must keep reading
// exactly the prefix it was forked with (the parent's seq i always says
// "p<i>": a rewind only removes) followed by its own messages, gap-free,
// whether it was detached before, during or after its appends.
func TestForkDetachRaceAcrossHandles(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	a, b := mustOpenURL(t, url), mustOpenURL(t, url)
	if _, err := a.CreateSession(ctx, "t", model.CreateSession{ID: "p"}); err != nil {
		t.Fatal(err)
	}
	batch := make([]model.NewMessage, 60)
	for i := range batch {
		batch[i] = sesMsgUser(fmt.Sprint("p", i+1))
	}
	if _, err := a.AppendMessages(ctx, "t", "p", sesMsgBatch(batch...)); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		forks = map[string]int64{} // fork id → forked_at_seq
		own   = map[string]int{}   // fork id → messages appended to it
	)
	errs := make(chan error, 3)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // rewinds, then the purge
		defer wg.Done()
		defer close(done)
		for to := int64(58); to > 0; to -= 2 {
			if _, err := a.Rewind(ctx, "t", "p", model.Rewind{ToSeq: &to}); err != nil {
				errs <- err
				return
			}
		}
		if err := a.PurgeSession(ctx, "t", "p"); err != nil {
			errs <- err
		}
	}()
	go func() { // forks and appends to them
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				if i > 0 {
					return
				}
			default:
			}
			id := fmt.Sprint("f", i)
			f, err := b.ForkSession(ctx, "t", "p", model.ForkSession{ID: id})
			if model.IsNotFound(err, "session") {
				return // purged
			}
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			forks[id] = *f.ForkedAtSeq
			mu.Unlock()
			for fid := range forks {
				if _, err := b.AppendMessages(ctx, "t", fid, sesMsgOne(sesMsgUser("own "+fid))); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				own[fid]++
				mu.Unlock()
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d forks made before the purge", len(forks))
	for id, at := range forks {
		page, err := a.ListMessages(ctx, "t", id, model.MessageFilter{}, repo.PageRequest{Limit: model.MaxLimit})
		if err != nil {
			t.Fatalf("fork %s: %v", id, err)
		}
		if want := int(at) + own[id]; len(page.Data) != want {
			t.Fatalf("fork %s (at %d, %d own): %d messages", id, at, own[id], len(page.Data))
		}
		for i, m := range page.Data {
			want := fmt.Sprint("p", i+1)
			if int64(i) >= at {
				want = "own " + id
			}
			if m.Seq != int64(i+1) || m.Content.Text != want {
				t.Fatalf("fork %s (at %d): message %d is seq %d %q, want %q", id, at, i, m.Seq, m.Content.Text, want)
			}
		}
	}
}

// The search index has no foreign key to messages (migration 00002): rewind
// and purge delete a message's search rows themselves, and leave none behind
// for messages that are gone, nor take any from those that stay.
func TestRewindAndPurgeTakeTheirSearchRows(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	st := mustOpenURL(t, url)
	for _, id := range []string{"a", "b"} {
		if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: id}); err != nil {
			t.Fatal(err)
		}
		req := model.AppendRequest{Batch: true}
		for i := range 6 {
			req.Messages = append(req.Messages, model.NewMessage{Role: model.RoleUser,
				Content: model.TextContent(fmt.Sprintf("needle %d of %s %s", i, id, strings.Repeat("word ", 2000*i)))})
		}
		if _, err := st.AppendMessages(ctx, "t", id, req); err != nil {
			t.Fatal(err)
		}
	}
	two := int64(2)
	if _, err := st.Rewind(ctx, "t", "a", model.Rewind{ToSeq: &two}); err != nil {
		t.Fatal(err)
	}
	if err := st.PurgeSession(ctx, "t", "b"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var orphans, kept int
	if err := conn.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM message_search ms WHERE NOT EXISTS (SELECT 1 FROM messages m
				WHERE m.tenant_id = ms.tenant_id AND m.session_id = ms.session_id AND m.seq = ms.seq)),
			(SELECT count(DISTINCT seq) FROM message_search WHERE tenant_id = 't' AND session_id = 'a')`).Scan(&orphans, &kept); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 || kept != 2 {
		t.Errorf("%d search rows of gone messages, %d of the two kept; want 0 and 2", orphans, kept)
	}
	hits, err := st.SearchMessages(ctx, "t", model.MessageSearch{Query: "needle", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits.Data) != 2 {
		t.Errorf("search for needle found %d messages; want the 2 left", len(hits.Data))
	}
}
