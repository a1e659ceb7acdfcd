package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// agentXferStore is what the agent export tests ask of either backend.
type agentXferStore interface {
	xferStore
	CreateAgent(ctx context.Context, tenant string, in model.CreateAgent) (model.Agent, error)
	PutBlock(ctx context.Context, tenant, agentID, label string, in model.PutBlock, ifMatch *int64) (model.Block, bool, error)
	CreatePassage(ctx context.Context, tenant, agentID string, in model.CreatePassage) (model.Passage, error)
	ExportAgent(ctx context.Context, tenant, id string, w io.Writer) error
	ImportAgent(ctx context.Context, tenant string, r io.Reader, opts model.ImportOptions) (model.Agent, error)
}

// agentXferScript makes agent a1 with blocks, passages with and without
// embeddings, and two sessions (one a fork of the other, with a checkpoint).
func agentXferScript(t *testing.T, st agentXferStore) {
	t.Helper()
	ctx := context.Background()
	a := xferOK(st.CreateAgent(ctx, "t", model.CreateAgent{ID: "a1", Name: "agent one", Tags: []string{"x"},
		Metadata: model.Object(`{"k":{"z":[1,null]}}`)}))
	desc := "the user"
	for _, b := range []struct {
		label string
		in    model.PutBlock
	}{{"human", model.PutBlock{Value: "Ann 🫖", Limit: 50, Description: &desc}}, {"persona", model.PutBlock{Value: "clerk", ReadOnly: true}}} {
		if _, _, err := st.PutBlock(ctx, "t", a.ID, b.label, b.in, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		in := model.CreatePassage{Content: fmt.Sprintf("passage %d", i), Tags: []string{fmt.Sprint(i % 3)}}
		if i != 7 {
			in.EmbeddingModel, in.Embedding = "e-8", make([]float32, 8)
			for j := range in.Embedding {
				in.Embedding[j] = float32(math.Cos(float64(i*8+j))) * 1e-3
			}
		}
		xferOK(st.CreatePassage(ctx, "t", a.ID, in))
	}
	ses := xferOK(st.CreateSession(ctx, "t", model.CreateSession{AgentID: &a.ID}))
	// A file of two chunks, which the fork's export carries too.
	f := xferOK3(st.CreateFile(ctx, "t", "", "text/plain", bytes.Repeat([]byte("abc"), 100_000)))
	hi := "hi"
	xferOK(st.AppendMessages(ctx, "t", ses.ID, model.AppendRequest{Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.Content{Parts: []model.Part{{Type: "text", Text: &hi},
			{Type: "file", FileID: f.ID, MediaType: "text/plain"}}}, Tokens: 2, Cost: 0.1},
		{Role: model.RoleAssistant, Content: model.TextContent("hello"), Tokens: 3, Cost: 0.2}}}))
	xferOK(st.PutCheckpoint(ctx, "t", ses.ID, model.PutCheckpoint{Iteration: 1, State: []byte(`{"step":1}`)}, model.CheckpointRetention{}))
	at := int64(1)
	fk := xferOK(st.ForkSession(ctx, "t", ses.ID, model.ForkSession{AtSeq: &at}))
	xferOK(st.AppendMessages(ctx, "t", fk.ID, model.AppendRequest{Messages: []model.NewMessage{
		{Role: model.RoleUser, Content: model.TextContent("forked")}}}))
}

func agentExport(t *testing.T, st agentXferStore, id string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := st.ExportAgent(context.Background(), "t", id, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// forkIDs blanks what an agent import changes when a fork and its parent
// travel together: the ids of the fork's inherited messages (its parent holds
// the exported ones), and so the checksums.
var forkIDs = regexp.MustCompile(`"id":"msg_[0-9a-f]+"|"sha256":"[0-9a-f]{64}"}$`)

func sameModuloForks(t *testing.T, what string, got, want []byte) {
	t.Helper()
	norm := func(b []byte) []byte {
		lines := bytes.Split(b, []byte("\n"))
		for i, l := range lines {
			if bytes.HasPrefix(l, []byte(`{"type":"end"`)) || bytes.HasPrefix(l, []byte(`{"type":"agent_end"`)) {
				l = forkIDs.ReplaceAll(l, []byte(`"sha256":"…"}`))
			}
			lines[i] = forkIDs.ReplaceAll(l, []byte(`"id":"msg_…"`))
		}
		return bytes.Join(lines, []byte("\n"))
	}
	xferSame(t, what, norm(got), norm(want))
}

// An agent exported from SQLite imports into PostgreSQL and back, and each
// export holds the same, modulo the ids of a fork's inherited messages.
// Without a fork, the bytes are the same.
func TestAgentExportImportSQLiteToPGToSQLite(t *testing.T) {
	lite, _ := xferOpenSQLite(t)
	agentXferScript(t, lite)
	want := agentExport(t, lite, "a1")
	if n := bytes.Count(want, []byte(`{"type":"session"`)); n != 2 {
		t.Fatalf("the export holds %d sessions, want 2", n)
	}
	if n := bytes.Count(want, []byte("\n"+`{"type":"file","file":`)); n != 4 {
		t.Fatalf("the export holds %d file lines, want 4 (two chunks, in each session)", n)
	}
	pg, _ := xferOpenPG(t)
	xferOK(pg.ImportAgent(context.Background(), "t", bytes.NewReader(want), model.ImportOptions{}))
	fromPG := agentExport(t, pg, "a1")
	sameModuloForks(t, "postgres export", fromPG, want)
	back, _ := xferOpenSQLite(t)
	xferOK(back.ImportAgent(context.Background(), "t", bytes.NewReader(fromPG), model.ImportOptions{}))
	sameModuloForks(t, "sqlite export", agentExport(t, back, "a1"), want)

	// And PostgreSQL's own export round-trips through PostgreSQL.
	pg2, _ := xferOpenPG(t)
	agentXferScript(t, pg2)
	own := agentExport(t, pg2, "a1")
	pg3, _ := xferOpenPG(t)
	xferOK(pg3.ImportAgent(context.Background(), "t", bytes.NewReader(own), model.ImportOptions{}))
	sameModuloForks(t, "postgres to postgres", agentExport(t, pg3, "a1"), own)
	// Twice more through PostgreSQL: what the first import made exports
	// byte for byte the same again (its fork now owns its message ids).
	once := agentExport(t, pg3, "a1")
	pg4, _ := xferOpenPG(t)
	xferOK(pg4.ImportAgent(context.Background(), "t", bytes.NewReader(once), model.ImportOptions{}))
	xferSame(t, "second round trip", agentExport(t, pg4, "a1"), once)
}
