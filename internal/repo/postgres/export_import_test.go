package postgres_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

// xferStore is what the export tests ask of either backend.
type xferStore interface {
	CreateSession(ctx context.Context, tenant string, in model.CreateSession) (model.Session, error)
	CreateFile(ctx context.Context, tenant, user, mediaType string, data []byte) (model.File, bool, error)
	AppendMessages(ctx context.Context, tenant, sessionID string, req model.AppendRequest) (model.AppendResult, error)
	PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error)
	PatchCheckpoint(ctx context.Context, tenant, sessionID string, in model.PatchCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error)
	CreateCompaction(ctx context.Context, tenant, sessionID string, in model.CreateCompaction) (model.CompactionResult, error)
	ForkSession(ctx context.Context, tenant, parentID string, in model.ForkSession) (model.Session, error)
	ExportSession(ctx context.Context, tenant, id string, w io.Writer) error
	ImportSession(ctx context.Context, tenant string, r io.Reader, opts model.ImportOptions) (model.Session, error)
	ListCheckpoints(ctx context.Context, tenant, sessionID string, p repo.PageRequest) (model.Page[model.Checkpoint], error)
}

func xferOpenSQLite(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.db")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func xferOpenPG(t *testing.T) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	url := mustDatabase(t)
	st := mustOpenURL(t, url)
	raw, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close(context.Background()) })
	return st, raw
}

// xferOK unwraps a setup call's result; a failed setup panics, which fails
// the test with the call's stack.
func xferOK[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// xferScript writes, through the store's own calls, a session with every kind
// of thing an export carries: files (one of several chunks, one empty)
// referenced from parts, tool calls and their results, provider items,
// checkpoints with states large enough to be kept as deltas and a pause,
// compactions (one with parts), and a fork of it that inherits a prefix and
// goes on. It returns the parent's and the fork's ids.
func xferScript(t *testing.T, st xferStore) (parent, fork string) {
	t.Helper()
	ctx := context.Background()
	str := func(s string) *string { return &s }
	title := "export me"
	ses := xferOK(st.CreateSession(ctx, "t", model.CreateSession{Title: &title, Metadata: model.Object(`{"k":[1,2,{"z":null}]}`)}))
	big := bytes.Repeat([]byte("0123456789abcdef"), (600<<10)/16) // three chunks
	fBig := xferOK3(st.CreateFile(ctx, "t", "", "text/plain", big))
	fEmpty := xferOK3(st.CreateFile(ctx, "t", "", "application/octet-stream", []byte{}))
	fPNG := xferOK3(st.CreateFile(ctx, "t", "", "image/png", []byte("\x89PNG not really")))
	msgs := []model.NewMessage{
		{Role: model.RoleSystem, Content: model.TextContent("be brief"), Metadata: model.Object(`{"a":1}`)},
		{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{
			{Type: "text", Text: str("look at these")},
			{Type: "file", FileID: fBig.ID, MediaType: "text/plain", Filename: "big.txt"},
			{Type: "image", FileID: fPNG.ID, MediaType: "image/png"},
			{Type: "file", FileID: fBig.ID, MediaType: "text/plain"},
			{Type: "file", FileID: fEmpty.ID, MediaType: "application/octet-stream"}}}, Tokens: 12, Cost: 0.1},
		{Role: model.RoleAssistant, Content: model.TextContent(""), Model: str("m-1"), Tokens: 30, Cost: 0.2,
			ToolCalls: []model.ToolCall{{ID: "c1", Name: "read", Arguments: `{"f":"big.txt"}`}, {ID: "c2", Name: "ls", Arguments: `{}`}}},
		{Role: model.RoleTool, ToolCallID: str("c1"), Content: model.TextContent("contents"), IsError: true},
		{Role: model.RoleTool, ToolCallID: str("c2"), Content: model.TextContent("a\nb")},
		{Role: model.RoleAssistant, Content: model.TextContent("done <&> \u2028"), Tokens: 7, Cost: 0.3,
			ProviderItem: model.ProviderItem(`{"type":"message","id":"x"}`)},
		{Role: model.RoleUser, Content: model.TextContent("again")},
	}
	xferOK(st.AppendMessages(ctx, "t", ses.ID, model.AppendRequest{Messages: msgs, Batch: true}))
	states, patches := ckStates(9)
	for n := range states {
		it := int64(n + 1)
		switch {
		case n == len(states)-1: // the latest pauses the session
			var m map[string]any
			_ = json.Unmarshal(states[n], &m)
			m["pause_until_ms"] = 1_900_000_000_000
			b, _ := json.Marshal(m)
			xferOK(st.PutCheckpoint(ctx, "t", ses.ID, model.PutCheckpoint{Iteration: it, State: b}, model.CheckpointRetention{}))
		case n%3 == 2:
			xferOK(st.PatchCheckpoint(ctx, "t", ses.ID, model.PatchCheckpoint{Iteration: it, StatePatch: patches[n]}, model.CheckpointRetention{}))
		default:
			xferOK(st.PutCheckpoint(ctx, "t", ses.ID, model.PutCheckpoint{Iteration: it, State: states[n]}, model.CheckpointRetention{}))
		}
	}
	xferOK(st.CreateCompaction(ctx, "t", ses.ID, model.CreateCompaction{ThroughSeq: 2, Summary: model.TextContent("setup"), Tokens: 3}))
	xferOK(st.CreateCompaction(ctx, "t", ses.ID, model.CreateCompaction{ThroughSeq: 5, Tokens: 4, Model: str("m-2"),
		Summary:      model.Content{Parts: []model.Part{{Type: "text", Text: str("read big.txt; it failed")}}},
		ProviderItem: model.ProviderItem(`{"type":"compaction"}`)}))
	at := int64(5)
	fk := xferOK(st.ForkSession(ctx, "t", ses.ID, model.ForkSession{AtSeq: &at, Title: str("the fork")}))
	xferOK(st.AppendMessages(ctx, "t", fk.ID, model.AppendRequest{Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{{Type: "file", FileID: fPNG.ID, MediaType: "image/png"}}}},
		{Role: model.RoleAssistant, Content: model.TextContent("forked"), Tokens: 5, Cost: 0.05}}, Batch: true}))
	xferOK(st.PutCheckpoint(ctx, "t", fk.ID, model.PutCheckpoint{Iteration: 1, State: states[0]}, model.CheckpointRetention{}))
	xferOK(st.PutCheckpoint(ctx, "t", fk.ID, model.PutCheckpoint{Iteration: 2, State: states[1]}, model.CheckpointRetention{}))
	return ses.ID, fk.ID
}

func xferOK3(f model.File, _ bool, err error) model.File {
	return xferOK(f, err)
}

func xferExport(t *testing.T, st xferStore, id string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := st.ExportSession(context.Background(), "t", id, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func xferImport(t *testing.T, st xferStore, export []byte, asNew bool) model.Session {
	t.Helper()
	return xferOK(st.ImportSession(context.Background(), "t", bytes.NewReader(export), model.ImportOptions{AsNew: asNew}))
}

// xferSame fails unless two exports are byte for byte the same, showing the
// first line that differs.
func xferSame(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("%s: line %d differs:\n got %.600s\nwant %.600s", what, i+1, g[i], w[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d", what, len(g), len(w))
}

// xferCkKinds is how a session's checkpoint rows are kept, which both
// backends' imports must decide alike (as PUTs would have).
func xferCkKindsPG(t *testing.T, raw *pgx.Conn, session string) []string {
	t.Helper()
	rows, err := raw.Query(context.Background(), `SELECT iteration || ':' || kind || ':' || codec || ':' || COALESCE(base_iteration::text, '-')
		FROM checkpoints WHERE tenant_id = 't' AND session_id = $1 ORDER BY iteration`, session)
	if err != nil {
		t.Fatal(err)
	}
	return xferOK(pgx.CollectRows(rows, pgx.RowTo[string]))
}

func xferCkKindsSQLite(t *testing.T, path, session string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT iteration || ':' || kind || ':' || codec || ':' || COALESCE(base_iteration, '-')
		FROM checkpoints WHERE tenant_id = 't' AND session_id = ? ORDER BY iteration`, session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// An export made by SQLite imports into PostgreSQL, whose export of it is the
// same bytes; those import back into SQLite and export as the same bytes again.
func TestExportImportSQLiteToPGToSQLite(t *testing.T) {
	lite, _ := xferOpenSQLite(t)
	parent, fork := xferScript(t, lite)
	var raw *pgx.Conn
	// A store of its own for each: the fork's export holds the parent's
	// messages, ids and all.
	for _, id := range []string{fork, parent} {
		var pg *postgres.Store
		pg, raw = xferOpenPG(t)
		back, backPath := xferOpenSQLite(t)
		want := xferExport(t, lite, id)
		got := xferImport(t, pg, want, false)
		if got.ID != id {
			t.Fatalf("imported as %s, want %s", got.ID, id)
		}
		fromPG := xferExport(t, pg, id)
		xferSame(t, "postgres export of "+id, fromPG, want)
		xferImport(t, back, fromPG, false)
		xferSame(t, "sqlite export of "+id, xferExport(t, back, id), want)
		// The checkpoint rows are what the same PUTs would have made.
		if p, l := xferCkKindsPG(t, raw, id), xferCkKindsSQLite(t, backPath, id); !reflect.DeepEqual(p, l) {
			t.Fatalf("checkpoint rows of %s: postgres %v, sqlite %v", id, p, l)
		}
	}
	if k := xferCkKindsPG(t, raw, parent); !strings.Contains(strings.Join(k, " "), ":delta:") {
		t.Fatalf("no checkpoint of the import is a delta: %v", k)
	}
	var pause *int64
	if err := raw.QueryRow(context.Background(), `SELECT pause_until FROM sessions WHERE id = $1`, parent).Scan(&pause); err != nil || pause == nil || *pause != 1_900_000_000_000 {
		t.Fatalf("pause_until %v, %v", pause, err)
	}
}

// PostgreSQL's own export round-trips through PostgreSQL and through SQLite,
// a fork's inherited messages included.
func TestExportImportPGToPG(t *testing.T) {
	pg, _ := xferOpenPG(t)
	parent, fork := xferScript(t, pg)
	for _, id := range []string{parent, fork} {
		other, _ := xferOpenPG(t)
		lite, _ := xferOpenSQLite(t)
		want := xferExport(t, pg, id)
		if bytes.Count(want, []byte(`"type":"message"`)) < 7 {
			t.Fatalf("export of %s holds too few messages:\n%s", id, want)
		}
		xferImport(t, other, want, false)
		xferSame(t, "postgres → postgres "+id, xferExport(t, other, id), want)
		xferImport(t, lite, want, false)
		xferSame(t, "postgres → sqlite "+id, xferExport(t, lite, id), want)
	}
}

// xferTableCounts counts the rows of every table an import writes.
func xferTableCounts(t *testing.T, raw *pgx.Conn) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, table := range []string{"sessions", "messages", "message_search", "checkpoints", "compactions", "files",
		"file_chunks", "message_files", "tool_calls", "tool_results"} {
		var n int64
		if err := raw.QueryRow(context.Background(), `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

// xferRehash rewrites an export's lines with edit and gives it a correct end
// line again, as a hand-made export would have.
func xferRehash(t *testing.T, export []byte, edit func(l *model.ExportLine)) []byte {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(export, []byte("\n")), []byte("\n"))
	var out bytes.Buffer
	h := sha256.New()
	for _, raw := range lines[:len(lines)-1] {
		var l model.ExportLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		edit(&l)
		b, _ := json.Marshal(l)
		b = append(b, '\n')
		h.Write(b)
		out.Write(b)
	}
	var end model.ExportLine
	if err := json.Unmarshal(lines[len(lines)-1], &end); err != nil {
		t.Fatal(err)
	}
	end.SHA256 = hex.EncodeToString(h.Sum(nil))
	b, _ := json.Marshal(end)
	out.Write(append(b, '\n'))
	return out.Bytes()
}

// Refused imports leave nothing behind, and each backend refuses them with
// the same error, naming the same line.
func TestImportRefusedPG(t *testing.T) {
	ctx := context.Background()
	src, _ := xferOpenSQLite(t)
	parent, _ := xferScript(t, src)
	export := xferExport(t, src, parent)

	pg, raw := xferOpenPG(t)
	lite, _ := xferOpenSQLite(t)
	xferImport(t, pg, export, false)
	xferImport(t, lite, export, false)
	before := xferTableCounts(t, raw)

	// Another session whose third message's id is taken: the session row and
	// the messages before it are written, then undone.
	var n int
	msgTaken := xferRehash(t, export, func(l *model.ExportLine) {
		switch {
		case l.Session != nil:
			l.Session.ID = "other"
		case l.Message != nil:
			l.Message.SessionID = "other"
			if n++; n != 3 {
				l.Message.ID += "_new"
			}
		case l.Checkpoint != nil:
			l.Checkpoint.SessionID, l.Checkpoint.ID = "other", l.Checkpoint.ID+"_new"
		case l.Compaction != nil:
			l.Compaction.SessionID, l.Compaction.ID = "other", l.Compaction.ID+"_new"
		}
	})
	// The same with only a checkpoint's id taken, and with only a compaction's.
	ckTaken := xferRehash(t, msgTaken, func(l *model.ExportLine) {
		if l.Message != nil {
			l.Message.ID = strings.TrimSuffix(l.Message.ID, "_new") + "_2"
		}
		if l.Checkpoint != nil && l.Checkpoint.Iteration == 4 {
			l.Checkpoint.ID = strings.TrimSuffix(l.Checkpoint.ID, "_new")
		}
	})
	cmpTaken := xferRehash(t, ckTaken, func(l *model.ExportLine) {
		if l.Checkpoint != nil {
			l.Checkpoint.ID += "_2"
		}
		if l.Compaction != nil && l.Compaction.ThroughSeq == 5 {
			l.Compaction.ID = strings.TrimSuffix(l.Compaction.ID, "_new")
		}
	})
	damaged := bytes.Replace(export, []byte(`"again"`), []byte(`"AGAIN"`), 1)
	if bytes.Equal(damaged, export) {
		t.Fatal("nothing to damage")
	}
	cases := []struct {
		name, code string
		body       []byte
	}{
		{"the same session again", "conflict", export},
		{"a message id taken", "conflict", msgTaken},
		{"a checkpoint id taken", "conflict", ckTaken},
		{"a compaction id taken", "conflict", cmpTaken},
		{"bad checksum", "invalid_import", damaged},
		{"truncated mid-line", "invalid_import", export[:len(export)*2/3]},
		{"truncated at a line", "invalid_import", export[:bytes.LastIndexByte(export[:len(export)-1], '\n')+1]},
		{"empty", "malformed_json", nil},
	}
	for _, c := range cases {
		_, pgErr := pg.ImportSession(ctx, "t", bytes.NewReader(c.body), model.ImportOptions{})
		_, liteErr := lite.ImportSession(ctx, "t", bytes.NewReader(c.body), model.ImportOptions{})
		if pgErr == nil || liteErr == nil {
			t.Fatalf("%s: postgres %v, sqlite %v", c.name, pgErr, liteErr)
		}
		p, l := model.AsError(pgErr), model.AsError(liteErr)
		if p.Code != c.code || p.Kind != l.Kind || p.Code != l.Code || p.Msg != l.Msg || !reflect.DeepEqual(p.Fields, l.Fields) {
			t.Fatalf("%s: postgres %+v, sqlite %+v", c.name, p, l)
		}
		if !strings.HasPrefix(p.Msg, "line ") {
			t.Fatalf("%s: %q names no line", c.name, p.Msg)
		}
		if after := xferTableCounts(t, raw); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s left rows behind: %v, before %v", c.name, after, before)
		}
	}
	// What the conflicts refused goes in once its ids are free.
	got := xferImport(t, pg, cmpTaken, true)
	if got.ID == "other" || got.ID == parent {
		t.Fatalf("AsNew kept the id %s", got.ID)
	}
}

// AsNew imports the same export twice beside its original: new ids for the
// session and everything in it, the files shared, and otherwise the same
// export.
func TestImportAsNewTwicePG(t *testing.T) {
	pg, raw := xferOpenPG(t)
	parent, fork := xferScript(t, pg)
	for _, id := range []string{parent, fork} {
		want := xferExport(t, pg, id)
		files := xferTableCounts(t, raw)["file_chunks"]
		a := xferImport(t, pg, want, true)
		b := xferImport(t, pg, want, true)
		if a.ID == id || b.ID == id || a.ID == b.ID {
			t.Fatalf("ids %s, %s from %s", a.ID, b.ID, id)
		}
		if n := xferTableCounts(t, raw)["file_chunks"]; n != files {
			t.Fatalf("file chunks %d, were %d: an import stored a file the tenant has", n, files)
		}
		ea, eb := xferExport(t, pg, a.ID), xferExport(t, pg, b.ID)
		if bytes.Equal(ea, eb) {
			t.Fatal("two AsNew imports export alike: the ids were kept")
		}
		// Masking the ids (they are the only difference), the exports agree.
		mask := func(e []byte) []byte {
			return xferRehash(t, e, func(l *model.ExportLine) {
				switch {
				case l.Session != nil:
					l.Session.ID = "S"
				case l.Message != nil:
					l.Message.ID, l.Message.SessionID = "M", "S"
				case l.Checkpoint != nil:
					l.Checkpoint.ID, l.Checkpoint.SessionID = "C", "S"
				case l.Compaction != nil:
					l.Compaction.ID, l.Compaction.SessionID = "P", "S"
				}
			})
		}
		xferSame(t, "AsNew "+id, mask(ea), mask(want))
		xferSame(t, "AsNew twice "+id, mask(eb), mask(want))
		if _, err := pg.ImportSession(context.Background(), "t", bytes.NewReader(ea), model.ImportOptions{}); model.AsError(err).Code != "conflict" {
			t.Fatalf("importing %s again: %v", a.ID, err)
		}
	}
}
