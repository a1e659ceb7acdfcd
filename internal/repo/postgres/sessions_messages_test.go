package postgres_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// The tests here run one script against both backends and compare what each
// call returned: SQLite is the reference, so any difference (a result, an
// error's kind, code, text or fields, an order, a cursor) is a bug of the
// PostgreSQL store. Ids the store makes and times are masked; everything else
// must match byte for byte.

// sesMsgStore is the part of repo.Store these tests cover.
type sesMsgStore interface {
	CreateSession(ctx context.Context, tenant string, in model.CreateSession) (model.Session, error)
	GetSession(ctx context.Context, tenant, id string) (model.Session, error)
	ListSessions(ctx context.Context, tenant string, f model.SessionFilter, p repo.PageRequest) (model.Page[model.Session], error)
	UpdateSession(ctx context.Context, tenant, id string, in model.UpdateSession) (model.Session, error)
	CloseSession(ctx context.Context, tenant, id string) (model.Session, error)
	AppendMessages(ctx context.Context, tenant, sessionID string, req model.AppendRequest) (model.AppendResult, error)
	QueueAppend(ctx context.Context, tenant, sessionID string, req model.AppendRequest,
		stream *repo.AppendStream) (wait func() (model.AppendResult, error), err error)
	GetMessage(ctx context.Context, tenant, sessionID, id string) (model.Message, error)
	ListMessages(ctx context.Context, tenant, sessionID string, f model.MessageFilter, p repo.PageRequest) (model.Page[model.Message], error)
}

// sesMsgPair is the same empty database on both backends; raw reaches the
// PostgreSQL one directly, for rows no call of ours writes.
type sesMsgPair struct {
	sqlite *sqlite.Store
	pg     *postgres.Store
	raw    *pgx.Conn
	url    string
	lite   *sql.DB // the SQLite file, beside the store's own connections
}

func openSesMsgPair(t *testing.T) sesMsgPair {
	t.Helper()
	ctx := context.Background()
	url := mustDatabase(t)
	pg, err := postgres.Open(ctx, postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	path := filepath.Join(t.TempDir(), "l.db")
	lite, err := sqlite.Open(ctx, sqlite.Config{Path: path, Migrate: true, Sync: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	raw, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close(context.Background()) })
	return sesMsgPair{sqlite: lite, pg: pg, raw: raw, url: url, lite: db}
}

// exec runs a statement (no arguments, so one text serves both) on st's own
// database, for what no call of ours writes.
func (p sesMsgPair) exec(t *testing.T, st sesMsgStore, stmt string) {
	t.Helper()
	var err error
	if st == sesMsgStore(p.sqlite) {
		_, err = p.lite.Exec(stmt)
	} else {
		_, err = p.raw.Exec(context.Background(), stmt)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// sesMsgTranscript records what one backend answered, masked for comparing.
type sesMsgTranscript struct {
	lines []string
}

func (tr *sesMsgTranscript) add(step string, v any, err error) {
	var b []byte
	if err != nil {
		e := model.AsError(err)
		b, _ = json.Marshal(struct {
			Kind   model.Kind
			Code   string
			Msg    string
			Fields []model.FieldError
			Extra  map[string]any
		}{e.Kind, e.Code, e.Msg, e.Fields, e.Extra})
		if e.Kind == model.KindInternal || e.Kind == model.KindUnavailable {
			b = append(b, " cause: "+fmt.Sprint(e.Err)...) // shown, not compared: see compare
		}
	} else {
		b, _ = json.Marshal(sesMsgMask(v))
	}
	tr.lines = append(tr.lines, step+" → "+sesMsgIDs.ReplaceAllString(string(b), "${1}…"))
}

// sesMsgIDs are server-made ids, in error messages too.
var sesMsgIDs = regexp.MustCompile(`\b(msg_|ses_)[0-9a-f]{32}\b`)

// sesMsgMask hides what differs by nature between two runs: server-made ids
// and times (a session cursor holds a time, so it is only said to be there).
func sesMsgMask(v any) any {
	switch x := v.(type) {
	case model.Session:
		x.CreatedAt, x.UpdatedAt = 0, 0
		if x.ClosedAt != nil {
			one := model.Time(1)
			x.ClosedAt = &one
		}
		if strings.HasPrefix(x.ID, model.PrefixSession) {
			x.ID = model.PrefixSession + "…"
		}
		return x
	case model.Message:
		x.ID, x.CreatedAt = "", 0
		return x
	case []model.Message:
		out := make([]any, len(x))
		for i := range x {
			out[i] = sesMsgMask(x[i])
		}
		return out
	case model.AppendResult:
		return map[string]any{"replayed": x.Replayed, "messages": sesMsgMask(x.Messages)}
	case model.Page[model.Message]:
		return map[string]any{"data": sesMsgMask(x.Data), "has_more": x.HasMore, "next": x.NextCursor}
	case model.Page[model.Session]:
		ids := make([]string, len(x.Data))
		for i, s := range x.Data {
			ids[i] = s.ID + "/" + string(s.Status)
		}
		return map[string]any{"ids": ids, "has_more": x.HasMore, "cursor": x.NextCursor != nil}
	}
	return v
}

// runSesMsgScript runs script on both backends and fails on the first line
// where they differ.
func runSesMsgScript(t *testing.T, p sesMsgPair, script func(st sesMsgStore, tr *sesMsgTranscript)) {
	t.Helper()
	var lite, pg sesMsgTranscript
	script(p.sqlite, &lite)
	script(p.pg, &pg)
	if len(lite.lines) != len(pg.lines) {
		t.Errorf("sqlite answered %d steps, postgres %d", len(lite.lines), len(pg.lines))
	}
	for i := range min(len(lite.lines), len(pg.lines)) {
		if lite.lines[i] != pg.lines[i] {
			t.Errorf("step %d differs:\nsqlite:   %s\npostgres: %s", i, lite.lines[i], pg.lines[i])
		}
		if strings.Contains(pg.lines[i], " cause: ") {
			t.Errorf("step %d: postgres failed unexpectedly: %s", i, pg.lines[i])
		}
	}
}

func sesMsgUser(text string) model.NewMessage {
	return model.NewMessage{Role: model.RoleUser, Content: model.TextContent(text), Tokens: 3, Cost: 0.25}
}

func sesMsgOne(m model.NewMessage) model.AppendRequest {
	return model.AppendRequest{Messages: []model.NewMessage{m}}
}

func sesMsgBatch(ms ...model.NewMessage) model.AppendRequest {
	return model.AppendRequest{Messages: ms, Batch: true}
}

func sesMsgPtr[T any](v T) *T { return &v }

func TestSessionsMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st sesMsgStore, tr *sesMsgTranscript) {
		s, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s1", Title: sesMsgPtr("one"),
			Metadata: model.Object(`{"team":"red","n":1,"ok":true,"f":1.5,"e":1e3,"a.b":"dot","o":{"x":[1,2]}}`)})
		tr.add("create", s, err)
		s, err = st.CreateSession(ctx, "t", model.CreateSession{ID: "s1"})
		tr.add("create taken", s, err)
		s, err = st.CreateSession(ctx, "other", model.CreateSession{ID: "s1"})
		tr.add("create in another tenant", s, err)
		s, err = st.CreateSession(ctx, "t", model.CreateSession{AgentID: sesMsgPtr("ag")})
		tr.add("create with a server id", s, err)
		s, err = st.GetSession(ctx, "t", "s1")
		tr.add("get", s, err)
		s, err = st.GetSession(ctx, "t2", "s1")
		tr.add("get in a tenant without it", s, err)

		s, err = st.UpdateSession(ctx, "t", "s1", model.UpdateSession{
			Title:    model.Optional[string]{Set: true, Null: true},
			Metadata: model.Optional[model.Object]{Set: true, Value: model.Object(`{"n":null,"team":"blue","new":{"k":2}}`)}})
		tr.add("patch title and metadata", s, err)
		s, err = st.UpdateSession(ctx, "t", "s1", model.UpdateSession{Metadata: model.Optional[model.Object]{Set: true, Null: true}})
		tr.add("metadata null", s, err)
		s, err = st.UpdateSession(ctx, "t", "nope", model.UpdateSession{Title: model.Optional[string]{Set: true, Value: "x"}})
		tr.add("patch a missing session", s, err)
		s, err = st.UpdateSession(ctx, "t", "s1", model.UpdateSession{Metadata: model.Optional[model.Object]{Set: true,
			Value: model.Object(`{"big":"` + strings.Repeat("x", model.MaxObjectBytes) + `"}`)}})
		tr.add("metadata grown past the limit", s, err)

		// Every transition, from every status.
		for _, from := range model.Statuses {
			for _, to := range model.Statuses {
				id := "tr-" + string(from) + "-" + string(to)
				_, err := st.CreateSession(ctx, "t", model.CreateSession{ID: id})
				tr.add("create "+id, nil, err)
				path := map[model.Status][]model.Status{model.StatusActive: {model.StatusActive},
					model.StatusCompleted: {model.StatusCompleted}, model.StatusArchived: {model.StatusArchived}}[from]
				for _, step := range path {
					_, err := st.UpdateSession(ctx, "t", id, model.UpdateSession{Status: model.Optional[model.Status]{Set: true, Value: step}})
					tr.add("reach "+string(step), nil, err)
				}
				s, err := st.UpdateSession(ctx, "t", id, model.UpdateSession{Status: model.Optional[model.Status]{Set: true, Value: to}})
				tr.add(string(from)+" → "+string(to), s, err)
			}
		}
		s, err = st.CloseSession(ctx, "t", "s1")
		tr.add("close", s, err)
		s, err = st.CloseSession(ctx, "t", "s1")
		tr.add("close again", s, err)
		s, err = st.UpdateSession(ctx, "t", "s1", model.UpdateSession{Status: model.Optional[model.Status]{Set: true, Value: model.StatusActive}})
		tr.add("reopen clears closed_at", s, err)
		s, err = st.CloseSession(ctx, "t", "missing")
		tr.add("close a missing session", s, err)
	})
}

func TestListSessionsMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st sesMsgStore, tr *sesMsgTranscript) {
		metas := []string{`{"team":"red","n":1}`, `{"team":"red","n":0,"ok":true}`, `{"team":"blue","n":1.5,"a.b":"dot"}`,
			`{"n":1e3,"ok":false,"x":null}`, `{"o":{"k":[1,"two"]},"s":"1"}`, `{}`}
		// Ids that sort differently byte by byte than in a natural-language
		// collation, all made within a few milliseconds.
		ids := []string{"B", "a", "_z", "A-1", "a_1", "Z"}
		for i, id := range ids {
			in := model.CreateSession{ID: id, Metadata: model.Object(metas[i])}
			if i%2 == 0 {
				in.AgentID = sesMsgPtr("agent")
			}
			_, err := st.CreateSession(ctx, "t", in)
			tr.add("create "+id, nil, err)
		}
		_, err := st.CloseSession(ctx, "t", "a")
		tr.add("close a", nil, err)
		// One creation time for all: their order is then the ids'.
		p.exec(t, st, `UPDATE sessions SET created_at = 1000 WHERE tenant_id = 't' AND id <> 'Z'`)
		filters := []struct {
			name string
			f    model.SessionFilter
		}{
			{"all", model.SessionFilter{}},
			{"status", model.SessionFilter{Status: model.StatusCompleted}},
			{"agent", model.SessionFilter{AgentID: "agent"}},
			{"meta string", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "team", Value: "red"}}}},
			{"meta int", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "n", Value: "1"}}}},
			{"meta real", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "n", Value: "1.5"}}}},
			{"meta exp", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "n", Value: "1000.0"}}}},
			{"meta exp as written", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "n", Value: "1e3"}}}},
			{"meta true", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "ok", Value: "true"}}}},
			{"meta false", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "ok", Value: "false"}}}},
			{"meta null", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "x", Value: "null"}}}},
			{"meta object", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "o", Value: `{"k":[1,"two"]}`}}}},
			{"meta string of digits", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "s", Value: "1"}}}},
			{"meta dotted key", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "a.b", Value: "dot"}}}},
			{"meta two keys", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "team", Value: "red"}, {Key: "n", Value: "0"}}}},
			{"meta no match", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "team", Value: "purple"}}}},
			{"created after", model.SessionFilter{CreatedAfter: sesMsgPtr(model.Time(1000))}},
			{"created before", model.SessionFilter{CreatedBefore: sesMsgPtr(model.Time(1001))}},
			{"due before", model.SessionFilter{DueBefore: sesMsgPtr(model.Now() + 1e6)}},
		}
		for _, f := range filters {
			pg, err := st.ListSessions(ctx, "t", f.f, repo.PageRequest{})
			tr.add("list "+f.name, pg, err)
		}
		// Page through, two at a time.
		cur := ""
		for i := 0; i < 4; i++ {
			pg, err := st.ListSessions(ctx, "t", model.SessionFilter{}, repo.PageRequest{Limit: 2, Cursor: cur})
			tr.add(fmt.Sprint("page ", i), pg, err)
			if err != nil || pg.NextCursor == nil {
				break
			}
			cur = *pg.NextCursor
			if i == 0 {
				pg, err := st.ListSessions(ctx, "t", model.SessionFilter{Status: model.StatusCreated}, repo.PageRequest{Limit: 2, Cursor: cur})
				tr.add("cursor of another filter", pg, err)
			}
		}
		pg, err := st.ListSessions(ctx, "t", model.SessionFilter{}, repo.PageRequest{Cursor: "!!"})
		tr.add("bad cursor", pg, err)
		pg, err = st.ListSessions(ctx, "nobody", model.SessionFilter{}, repo.PageRequest{})
		tr.add("empty tenant", pg, err)
	})
}

func TestAppendsMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st sesMsgStore, tr *sesMsgTranscript) {
		app := func(step, session string, req model.AppendRequest) {
			res, err := st.AppendMessages(ctx, "t", session, req)
			tr.add(step, res, err)
			if err == nil {
				s, _ := st.GetSession(ctx, "t", session)
				tr.add(step+": session", s, nil)
			}
		}
		app("missing session", "none", sesMsgOne(sesMsgUser("hi")))
		_, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"})
		tr.add("create", nil, err)
		app("first append activates", "s", sesMsgOne(sesMsgUser("hello")))
		app("batch with calls and results", "s", sesMsgBatch(
			model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent(""), Model: sesMsgPtr("m"), Tokens: 10, Cost: 0.5,
				ToolCalls: []model.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}, {ID: "c2", Name: "g", Arguments: `{}`,
					ProviderData: model.Object(`{"id":"fc_1"}`)}}},
			model.NewMessage{Role: model.RoleTool, Content: model.TextContent("r1"), ToolCallID: sesMsgPtr("c1"), Name: sesMsgPtr("f")},
			model.NewMessage{Role: model.RoleTool, Content: model.TextContent("r2"), ToolCallID: sesMsgPtr("c2"), IsError: true},
		))
		app("result of an unknown call", "s", sesMsgOne(model.NewMessage{Role: model.RoleTool, Content: model.TextContent("?"), ToolCallID: sesMsgPtr("zz")}))
		app("batch: result of an unknown call", "s", sesMsgBatch(sesMsgUser("x"),
			model.NewMessage{Role: model.RoleTool, Content: model.TextContent("?"), ToolCallID: sesMsgPtr("zz")}))
		app("duplicate result", "s", sesMsgOne(model.NewMessage{Role: model.RoleTool, Content: model.TextContent("again"), ToolCallID: sesMsgPtr("c1")}))
		app("a call made again may be answered again", "s", sesMsgBatch(
			model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent("again"), ToolCalls: []model.ToolCall{{ID: "c1", Name: "f", Arguments: `{}`}}},
			model.NewMessage{Role: model.RoleTool, Content: model.TextContent("r1'"), ToolCallID: sesMsgPtr("c1")},
			model.NewMessage{Role: model.RoleTool, Content: model.TextContent("r1''"), ToolCallID: sesMsgPtr("c1")}))

		keyed := sesMsgUser("keyed")
		keyed.IdempotencyKey = "k1"
		app("message key", "s", sesMsgOne(keyed))
		app("message key again: replay", "s", sesMsgOne(keyed))
		other := sesMsgUser("different")
		other.IdempotencyKey = "k1"
		app("message key, other body", "s", sesMsgOne(other))
		app("batch: message key, other body", "s", sesMsgBatch(sesMsgUser("a"), other))
		k2 := sesMsgUser("k2")
		k2.IdempotencyKey = "k2"
		app("batch: one replayed, one new", "s", sesMsgBatch(keyed, k2))
		app("batch: every one replayed", "s", sesMsgBatch(keyed, k2))
		app("batch: a key twice", "s", sesMsgBatch(k2, k2))

		req := sesMsgBatch(sesMsgUser("r-a"), sesMsgUser("r-b"))
		req.RequestKey = "R1"
		app("request key", "s", req)
		app("request key again: replay", "s", req)
		req2 := sesMsgBatch(sesMsgUser("r-a"), sesMsgUser("r-c"))
		req2.RequestKey = "R1"
		app("request key, other body", "s", req2)
		single := sesMsgOne(sesMsgUser("r-a"))
		single.RequestKey = "R1"
		app("request key, other shape", "s", single)
		withKeys := sesMsgBatch(keyed, sesMsgUser("fresh"))
		withKeys.RequestKey = "R2"
		app("request key over a replayed message", "s", withKeys)
		app("request key over a replayed message, again", "s", withKeys)

		s, _ := st.GetSession(ctx, "t", "s")
		fence := sesMsgOne(sesMsgUser("fenced"))
		fence.ExpectedLastSeq = sesMsgPtr(s.LastSeq - 1)
		app("stale expected_last_seq", "s", fence)
		fence.ExpectedLastSeq = sesMsgPtr(s.LastSeq)
		app("expected_last_seq", "s", fence)
		replayFence := sesMsgOne(keyed)
		replayFence.ExpectedLastSeq = sesMsgPtr(int64(0))
		app("a replay ignores expected_last_seq", "s", replayFence)

		big := sesMsgUser("big")
		big.Tokens = model.MaxTotalTokens
		app("tokens past the limit", "s", sesMsgOne(big))
		app("batch: tokens past the limit", "s", sesMsgBatch(sesMsgUser("ok"), big))
		costly := sesMsgUser("costly")
		costly.Cost = model.MaxTotalCost
		app("cost past the limit", "s", sesMsgBatch(sesMsgUser("ok"), sesMsgUser("ok"), costly))

		parts := model.NewMessage{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{
			{Type: "text", Text: sesMsgPtr("look")}, {Type: "image", URL: "https://example.com/a.png", MediaType: "image/png"}}},
			Metadata: model.Object(`{"z":1,"a":[true,null]}`), ProviderItem: model.ProviderItem(`{"type":"message","id":"msg_1"}`)}
		app("parts, metadata and a provider item", "s", sesMsgOne(parts))
		app("no parts: an empty list", "s", sesMsgOne(model.NewMessage{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{}}}))
		missing := model.NewMessage{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{
			{Type: "text", Text: sesMsgPtr("see")}, {Type: "file", FileID: "file_missing"}}}}
		app("a file that is not there", "s", sesMsgBatch(sesMsgUser("ok"), missing))

		_, err = st.CloseSession(ctx, "t", "s")
		tr.add("close", nil, err)
		app("append to a closed session", "s", sesMsgOne(sesMsgUser("late")))
		app("replay after close", "s", sesMsgOne(keyed))
		app("request replay after close", "s", req)
		_, err = st.UpdateSession(ctx, "t", "s", model.UpdateSession{Status: model.Optional[model.Status]{Set: true, Value: model.StatusActive}})
		tr.add("reopen", nil, err)
		app("append after reopening", "s", sesMsgOne(sesMsgUser("back")))
		app("other tenant's session", "s", model.AppendRequest{Messages: []model.NewMessage{sesMsgUser("x")}})

		// A stream: once one append fails, every later one is refused.
		stream := &repo.AppendStream{}
		for i, m := range []model.NewMessage{sesMsgUser("s1"),
			{Role: model.RoleTool, Content: model.TextContent("?"), ToolCallID: sesMsgPtr("nope")}, sesMsgUser("s3"), sesMsgUser("s4")} {
			wait, err := st.QueueAppend(ctx, "t", "s", sesMsgOne(m), stream)
			if err != nil {
				tr.add(fmt.Sprint("stream queue ", i), nil, err)
				continue
			}
			res, err := wait()
			tr.add(fmt.Sprint("stream ", i), res, err)
		}
		page, err := st.ListMessages(ctx, "t", "s", model.MessageFilter{}, repo.PageRequest{Limit: model.MaxLimit})
		tr.add("every message", page, err)
	})
}

func TestListMessagesMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st sesMsgStore, tr *sesMsgTranscript) {
		_, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"})
		tr.add("create", nil, err)
		var batch []model.NewMessage
		for i := range 25 {
			m := sesMsgUser(fmt.Sprint("m", i))
			if i%3 == 1 {
				m = model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent(fmt.Sprint("a", i)), Tokens: int64(i)}
			}
			batch = append(batch, m)
		}
		res, err := st.AppendMessages(ctx, "t", "s", sesMsgBatch(batch...))
		tr.add("append", res, err)
		filters := []struct {
			name string
			f    model.MessageFilter
		}{
			{"asc", model.MessageFilter{}},
			{"desc", model.MessageFilter{Desc: true}},
			{"after", model.MessageFilter{AfterSeq: 20}},
			{"before", model.MessageFilter{BeforeSeq: 4}},
			{"window desc", model.MessageFilter{AfterSeq: 5, BeforeSeq: 15, Desc: true}},
			{"role", model.MessageFilter{Role: model.RoleAssistant}},
			{"role desc", model.MessageFilter{Role: model.RoleUser, Desc: true}},
			{"empty window", model.MessageFilter{AfterSeq: 5, BeforeSeq: 6}},
		}
		for _, f := range filters {
			cur := ""
			for i := 0; ; i++ {
				page, err := st.ListMessages(ctx, "t", "s", f.f, repo.PageRequest{Limit: 4, Cursor: cur})
				tr.add(fmt.Sprint(f.name, " page ", i), page, err)
				if err != nil || page.NextCursor == nil {
					break
				}
				cur = *page.NextCursor
			}
		}
		first, err := st.ListMessages(ctx, "t", "s", model.MessageFilter{}, repo.PageRequest{Limit: 1})
		tr.add("first page", first, err)
		page, err := st.ListMessages(ctx, "t", "s", model.MessageFilter{Desc: true}, repo.PageRequest{Cursor: *first.NextCursor})
		tr.add("cursor of another order", page, err)
		page, err = st.ListMessages(ctx, "t", "nope", model.MessageFilter{}, repo.PageRequest{})
		tr.add("missing session", page, err)
		page, err = st.ListMessages(ctx, "u", "s", model.MessageFilter{}, repo.PageRequest{})
		tr.add("another tenant", page, err)

		id := first.Data[0].ID
		m, err := st.GetMessage(ctx, "t", "s", id)
		tr.add("get", m, err)
		m, err = st.GetMessage(ctx, "u", "s", id)
		tr.add("get in another tenant", m, err)
		_, err = st.CreateSession(ctx, "t", model.CreateSession{ID: "s2"})
		tr.add("create s2", nil, err)
		m, err = st.GetMessage(ctx, "t", "s2", id)
		tr.add("get through another session", m, err)
		m, err = st.GetMessage(ctx, "t", "nope", id)
		tr.add("get through a missing session", m, err)
		m, err = st.GetMessage(ctx, "t", "s", "msg_nope")
		tr.add("get a missing message", m, err)
	})
}

// A fork shares its parent's first messages (parent_id, forked_at_seq,
// prefix_shared): reads and tool pairing follow the lineage. ForkSession is
// not this file's to test, so on PostgreSQL the fork's row is written as
// SQLite's ForkSession writes it.
func TestForkLineageMatchSQLite(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	runSesMsgScript(t, p, func(st sesMsgStore, tr *sesMsgTranscript) {
		fork := func(parent, id string, at int64) {
			if lite, ok := st.(*sqlite.Store); ok {
				_, err := lite.ForkSession(ctx, "t", parent, model.ForkSession{ID: id, AtSeq: &at})
				tr.add("fork "+id, nil, err)
				return
			}
			_, err := p.raw.Exec(ctx, `INSERT INTO sessions (tenant_id, id, agent_id, title, status, metadata, message_count, last_seq,
				total_tokens, total_cost, turn_count, parent_id, forked_at_seq, prefix_shared, created_at, updated_at)
				SELECT s.tenant_id, $3, s.agent_id, s.title, 'created', s.metadata, $4, $4,
					COALESCE((SELECT cum_tokens FROM messages WHERE tenant_id = 't' AND session_id IN ($2, s.parent_id) AND seq = $4 LIMIT 1), 0),
					COALESCE((SELECT cum_cost FROM messages WHERE tenant_id = 't' AND session_id IN ($2, s.parent_id) AND seq = $4 LIMIT 1), 0),
					COALESCE((SELECT cum_turns FROM messages WHERE tenant_id = 't' AND session_id IN ($2, s.parent_id) AND seq = $4 LIMIT 1), 0),
					$2, $4, 1, 1, 1
				FROM sessions s WHERE s.tenant_id = $1 AND s.id = $2`, "t", parent, id, at)
			tr.add("fork "+id, nil, err)
		}
		_, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "root"})
		tr.add("create", nil, err)
		res, err := st.AppendMessages(ctx, "t", "root", sesMsgBatch(sesMsgUser("r1"),
			model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent("calls"), ToolCalls: []model.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
			sesMsgUser("r3"), sesMsgUser("r4")))
		tr.add("append root", res, err)
		fork("root", "f1", 2)
		res, err = st.AppendMessages(ctx, "t", "f1", sesMsgOne(model.NewMessage{Role: model.RoleTool, Content: model.TextContent("answer"), ToolCallID: sesMsgPtr("c1")}))
		tr.add("answer an inherited call", res, err)
		res, err = st.AppendMessages(ctx, "t", "f1", sesMsgBatch(sesMsgUser("f4"), sesMsgUser("f5")))
		tr.add("append f1", res, err)
		fork("f1", "f2", 4)
		res, err = st.AppendMessages(ctx, "t", "f2", sesMsgOne(model.NewMessage{Role: model.RoleTool, Content: model.TextContent("again"), ToolCallID: sesMsgPtr("c1")}))
		tr.add("answer an answered inherited call", res, err)
		res, err = st.AppendMessages(ctx, "t", "f2", sesMsgOne(sesMsgUser("f2-5")))
		tr.add("append f2", res, err)
		for _, id := range []string{"root", "f1", "f2"} {
			for _, f := range []model.MessageFilter{{}, {Desc: true}, {AfterSeq: 1, BeforeSeq: 5}} {
				cur := ""
				for i := 0; ; i++ {
					page, err := st.ListMessages(ctx, "t", id, f, repo.PageRequest{Limit: 2, Cursor: cur})
					tr.add(fmt.Sprint("list ", id, f, i), page, err)
					if err != nil || page.NextCursor == nil {
						break
					}
					cur = *page.NextCursor
				}
			}
		}
		all, err := st.ListMessages(ctx, "t", "root", model.MessageFilter{}, repo.PageRequest{})
		tr.add("root", all, err)
		for _, m := range all.Data {
			for _, id := range []string{"f1", "f2"} {
				got, err := st.GetMessage(ctx, "t", id, m.ID)
				tr.add(fmt.Sprint("get root's seq ", m.Seq, " through ", id), got, err)
			}
		}
	})
}

// Appends to a file this tenant has record the reference; another tenant's
// file is missing. Files are not this file's to write, so the row is made
// directly (SQLite's answer to a missing file is compared in the script above).
func TestAppendFileReferences(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	st := p.pg
	if _, err := p.raw.Exec(ctx, `INSERT INTO files (tenant_id, id, sha256, size, media_type, created_at)
		VALUES ('t', 'file_1', 'abc', 3, 'text/plain', 1), ('u', 'file_2', 'def', 3, 'text/plain', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	file := func(id string) model.NewMessage {
		return model.NewMessage{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{
			{Type: "file", FileID: id, MediaType: "text/plain"}, {Type: "file", FileID: id, MediaType: "text/plain"}}}}
	}
	res, err := st.AppendMessages(ctx, "t", "s", sesMsgOne(file("file_1")))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := p.raw.QueryRow(ctx, `SELECT count(*) FROM message_files WHERE tenant_id = 't' AND session_id = 's' AND seq = $1 AND file_id = 'file_1'`,
		res.Messages[0].Seq).Scan(&n); err != nil || n != 1 {
		t.Fatalf("message_files rows = %d (%v), want 1", n, err)
	}
	_, err = st.AppendMessages(ctx, "t", "s", sesMsgOne(file("file_2")))
	want := model.Invalid(model.FieldError{Field: "content[0].file_id",
		Message: "names no file of this tenant; upload it first with POST /v1/files"})
	if e := model.AsError(err); e.Code != want.Code || e.Msg != want.Msg || fmt.Sprint(e.Fields) != fmt.Sprint(want.Fields) {
		t.Fatalf("another tenant's file: %v, want %v", err, want)
	}
}

// A key a rewind removed must not be written again (model.Rewound). Rewind is
// not this file's, so the rewound_keys rows are made directly.
func TestAppendRewoundKeys(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	st := p.pg
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.raw.Exec(ctx, `INSERT INTO rewound_keys (tenant_id, session_id, kind, key)
		VALUES ('t', 's', 'message', 'gone'), ('t', 's', 'request', 'R-gone')`); err != nil {
		t.Fatal(err)
	}
	m := sesMsgUser("x")
	m.IdempotencyKey = "gone"
	req := sesMsgBatch(sesMsgUser("y"), m)
	cases := []struct {
		name string
		req  model.AppendRequest
		want *model.Error
	}{
		{"message key", sesMsgOne(m), model.Rewound("idempotency_key", "gone")},
		{"message key in a batch", req, model.Rewound("messages[1].idempotency_key", "gone")},
		{"request key", model.AppendRequest{Messages: []model.NewMessage{sesMsgUser("z")}, RequestKey: "R-gone"}, model.Rewound("Idempotency-Key", "R-gone")},
	}
	for _, c := range cases {
		_, err := st.AppendMessages(ctx, "t", "s", c.req)
		e := model.AsError(err)
		if e.Code != c.want.Code || e.Msg != c.want.Msg || fmt.Sprint(e.Fields) != fmt.Sprint(c.want.Fields) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	s, err := st.GetSession(ctx, "t", "s")
	if err != nil || s.LastSeq != 0 || s.Status != model.StatusCreated {
		t.Fatalf("refused appends changed the session: %+v %v", s, err)
	}
}

// Counters and running totals on the rows match what was appended.
func TestAppendRunningTotals(t *testing.T) {
	p := openSesMsgPair(t)
	ctx := context.Background()
	st := p.pg
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	var tokens int64
	var cost float64
	var turns int64
	for i := range 10 {
		m := model.NewMessage{Role: model.RoleAssistant, Content: model.TextContent("a"), Tokens: int64(i * 7), Cost: float64(i) / 8}
		if i%2 == 0 {
			m.Role = model.RoleUser
			turns++
		}
		tokens += m.Tokens
		cost += m.Cost
		if _, err := st.AppendMessages(ctx, "t", "s", sesMsgOne(m)); err != nil {
			t.Fatal(err)
		}
		var ct, cu int64
		var cc float64
		if err := p.raw.QueryRow(ctx, `SELECT cum_tokens, cum_cost, cum_turns FROM messages WHERE tenant_id = 't' AND session_id = 's' AND seq = $1`,
			i+1).Scan(&ct, &cc, &cu); err != nil {
			t.Fatal(err)
		}
		if ct != tokens || cc != cost || cu != turns {
			t.Fatalf("seq %d: cum = %d %g %d, want %d %g %d", i+1, ct, cc, cu, tokens, cost, turns)
		}
	}
	s, err := st.GetSession(ctx, "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	if s.MessageCount != 10 || s.LastSeq != 10 || s.TotalTokens != tokens || s.TotalCost != cost || s.TurnCount != turns || s.Status != model.StatusActive {
		t.Fatalf("session = %+v", s)
	}
}

// A caller already gone queues nothing.
func TestQueueAppendCanceled(t *testing.T) {
	st := mustOpen(t)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := st.QueueAppend(ctx, "t", "s", sesMsgOne(sesMsgUser("x")), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s2"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
}
