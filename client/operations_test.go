package client_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// The methods beyond a turn's, each called once against the server and
// its answer checked (and, through the checker, held to openapi.yaml).

// must fails the test at once on err, naming what was being done.
func must[T any](t *testing.T, what string) func(T, error) T {
	t.Helper()
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestSessionOperations(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	s := newSession(t, c)

	up := must[*api.Session](t, "update")(c.UpdateSession(ctx, s.ID, api.SessionUpdate{Title: client.Ptr("renamed"),
		Metadata: map[string]any{"test": nil, "channel": "web"}}))
	if *up.Title != "renamed" || up.Metadata["channel"] != "web" || up.Metadata["test"] != nil {
		t.Errorf("updated %+v", up)
	}
	msgs := must[[]api.Message](t, "append")(c.AppendMessages(ctx, s.ID, api.MessageBatch{Messages: []api.MessageInput{
		{Role: api.MessageRoleUser, Content: client.Text("a parity probe about walruses"), ClientID: client.Ptr("u-1")},
		{Role: api.MessageRoleAssistant, Content: client.Text("walruses noted")},
	}}))
	if m := must[*api.Message](t, "get")(c.GetMessage(ctx, s.ID, msgs[1].ID)); m.Seq != 2 {
		t.Errorf("message %s is seq %d", m.ID, m.Seq)
	}
	if m := must[*api.Message](t, "by client id")(c.GetMessageByClientID(ctx, s.ID, "u-1")); m.ID != msgs[0].ID {
		t.Errorf("client id u-1 is %s, want %s", m.ID, msgs[0].ID)
	}
	hits := must[*api.MessageSearchResult](t, "search")(c.SearchMessages(ctx, &api.SearchMessagesParams{Q: client.Ptr("walruses"),
		SessionID: client.Ptr(s.ID)}))
	_ = hits // the index may lag behind the append; its answer's shape is what is checked

	cmp := must[*api.CompactionCreated](t, "compact")(c.CreateCompaction(ctx, s.ID, api.CompactionCreate{ThroughSeq: 1,
		Summary: *client.Text("the user asked about walruses")}))
	if got := collect(t, c.ListCompactions(ctx, s.ID, nil)); len(got) != 1 || got[0].ID != cmp.ID {
		t.Errorf("compactions %+v, want %s", got, cmp.ID)
	}
	cx := must[*api.SessionContext](t, "context")(c.GetContext(ctx, s.ID, nil))
	if cx.Compaction == nil || len(cx.Messages) != 1 || cx.Messages[0].Seq != 2 {
		t.Errorf("context %+v, want the compaction and message 2", cx)
	}

	fork := must[*api.Session](t, "fork")(c.ForkSession(ctx, s.ID, api.ForkCreate{AtSeq: client.Ptr[int64](1)}))
	if fork.ParentID == nil || *fork.ParentID != s.ID || fork.LastSeq != 1 {
		t.Errorf("fork %+v", fork)
	}
	if err := c.PurgeSession(ctx, fork.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSession(ctx, fork.ID); client.Code(err) != api.ErrorCodeNotFound {
		t.Errorf("the purged fork reads %v", err)
	}
}

func TestAgentAndMemoryOperations(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	a := must[*api.Agent](t, "create agent")(c.CreateAgent(ctx, api.AgentCreate{Name: "parity-go", Tags: []string{"parity"}}))
	a = must[*api.Agent](t, "update agent")(c.UpdateAgent(ctx, a.ID, api.AgentUpdate{Model: client.Ptr("gpt-4o")}))
	if *must[*api.Agent](t, "get agent")(c.GetAgent(ctx, a.ID)).Model != "gpt-4o" {
		t.Error("the agent's model was not updated")
	}
	if got := collect(t, c.ListAgents(ctx, &api.ListAgentsParams{Tag: client.Ptr("parity")})); len(got) == 0 {
		t.Error("no agent tagged parity")
	}
	other := must[*api.Agent](t, "create owner")(c.CreateAgent(ctx, api.AgentCreate{Name: "parity-go-owner"}))

	must[*api.Block](t, "put block")(c.PutBlock(ctx, other.ID, "policy", api.BlockPut{Value: client.Ptr("Refunds within 30 days.")}, nil))
	shared := must[*api.Block](t, "attach")(c.AttachBlock(ctx, a.ID, api.BlockAttach{AgentID: other.ID, Label: "policy"}))
	if shared.OwnerAgentID == nil || *shared.OwnerAgentID != other.ID {
		t.Errorf("attached %+v", shared)
	}
	b := must[*api.Block](t, "replace")(c.ReplaceBlock(ctx, a.ID, "policy", api.BlockReplace{Old: "30", New: client.Ptr("60")}))
	if b.Value != "Refunds within 60 days." || must[*api.Block](t, "get block")(c.GetBlock(ctx, other.ID, "policy")).Value != b.Value {
		t.Errorf("the shared block reads %q", b.Value)
	}
	if bs := must[[]api.Block](t, "list blocks")(c.ListBlocks(ctx, a.ID)); len(bs) != 1 {
		t.Errorf("%d blocks, want the attached one", len(bs))
	}
	if err := c.DetachBlock(ctx, a.ID, "policy"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteBlock(ctx, other.ID, "policy"); err != nil {
		t.Fatal(err)
	}

	p := must[*api.Passage](t, "insert")(c.InsertPassage(ctx, a.ID, api.PassageCreate{Content: "walruses eat clams",
		Embedding: []float32{1, 0, 0}, EmbeddingModel: client.Ptr("parity-embed")}))
	must[*api.Passage](t, "insert")(c.InsertPassage(ctx, a.ID, api.PassageCreate{Content: "penguins eat fish",
		Embedding: []float32{0, 1, 0}, EmbeddingModel: client.Ptr("parity-embed")}))
	if got := must[*api.Passage](t, "get passage")(c.GetPassage(ctx, a.ID, p.ID)); got.Content != p.Content {
		t.Errorf("passage %+v", got)
	}
	if got := collect(t, c.ListPassages(ctx, a.ID, nil)); len(got) != 2 {
		t.Errorf("%d passages, want 2", len(got))
	}
	vec := must[*api.PassageSearchResult](t, "search by meaning")(c.SearchArchival(ctx, a.ID, api.PassageSearchRequest{
		Mode: client.Ptr(api.PassageSearchModeVector), QueryEmbedding: []float32{0.9, 0.1, 0}}))
	if len(vec.Data) == 0 || vec.Data[0].ID != p.ID {
		t.Errorf("the nearest passage is not %s: %+v", p.ID, vec.Data)
	}

	s := must[*api.Session](t, "session")(c.CreateSession(ctx, api.SessionCreate{AgentID: &a.ID}))
	m := must[*api.Message](t, "append")(c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("walrus?")}))
	must[*api.MessageEmbedding](t, "put embedding")(c.PutMessageEmbedding(ctx, s.ID, m.ID,
		api.MessageEmbeddingPut{Embedding: []float32{1, 0, 0}, EmbeddingModel: "parity-embed"}))
	if e := must[*api.MessageEmbedding](t, "get embedding")(c.GetMessageEmbedding(ctx, s.ID, m.ID)); e.Dimensions != 3 || e.EmbeddingState != api.EmbeddingStateReady {
		t.Errorf("embedding %+v", e)
	}
	must[*api.MessageSearchResult](t, "agent search")(c.SearchAgentMessages(ctx, a.ID, &api.SearchAgentMessagesParams{
		Mode: client.Ptr(api.PassageSearchModeVector), QueryEmbedding: []float32{1, 0, 0}}))

	tools := must[[]api.ToolDef](t, "tools")(c.ListTools(ctx))
	if len(tools) == 0 {
		t.Error("no memory tools")
	}
	if _, err := c.RunTool(ctx, a.ID, "archival_memory_search", "{not json"); err == nil {
		t.Error("arguments that are not JSON were sent")
	}

	export := must[io.ReadCloser](t, "export agent")(c.ExportAgent(ctx, a.ID))
	data := must[[]byte](t, "read export")(io.ReadAll(export))
	export.Close()
	cp := must[*api.Agent](t, "import agent")(c.ImportAgent(ctx, bytes.NewReader(data), &api.ImportAgentParams{AsNew: client.Ptr(true)}))
	if cp.ID == a.ID || cp.Name != a.Name {
		t.Errorf("imported %+v from %+v", cp, a)
	}
	if err := c.DeletePassage(ctx, a.ID, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPassage(ctx, a.ID, p.ID); client.Code(err) != api.ErrorCodeNotFound {
		t.Errorf("the deleted passage reads %v", err)
	}
	for _, id := range []string{a.ID, other.ID, cp.ID} {
		if err := c.DeleteAgent(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}

func TestItemsExportAndImport(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	ns := []string{"client-test-transfer"}
	must[*api.Item](t, "put")(c.PutItem(ctx, ns, "k", api.ItemPut{Value: map[string]any{"n": 1}}))
	export := must[io.ReadCloser](t, "export")(c.ExportItems(ctx, &api.ExportItemsParams{NamespacePrefix: client.Ptr("client-test-transfer")}))
	data := must[[]byte](t, "read export")(io.ReadAll(export))
	export.Close()
	if _, err := c.ImportItems(ctx, bytes.NewReader(data), nil); client.Code(err) != api.ErrorCodeConflict {
		t.Errorf("importing an item the tenant has: %v, want conflict", err)
	}
	res := must[*api.ItemsImportResult](t, "import")(c.ImportItems(ctx, bytes.NewReader(data), &api.ImportItemsParams{Replace: client.Ptr(true)}))
	if res.Items != 1 {
		t.Errorf("imported %+v, want 1 item", res)
	}
}

// The operator's calls, on a server of their own: making a key ends its
// open mode.
func TestAdminOperations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stop, url, err := startServer(filepath.Join(dir, "admin.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c, _ := newClient(t, url)

	if h := must[*api.Health](t, "health")(c.GetHealth(ctx)); h.Status != api.HealthStatusOk {
		t.Errorf("health %+v", h)
	}
	must[*api.Health](t, "readiness")(c.GetReadiness(ctx))
	if me := must[*api.Identity](t, "who am I")(c.GetWhoAmI(ctx)); me.Tenant != "default" || me.Scope != api.ScopeAdmin || !me.OpenMode {
		t.Errorf("an open server's caller is %+v", me)
	}
	path := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(path, []byte("a note"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f := must[*api.File](t, "upload path")(c.UploadPath(ctx, path)); f.MediaType != "text/plain; charset=utf-8" || f.Size != 6 {
		t.Errorf("uploaded %+v", f)
	}
	s := newSession(t, c)
	must[*api.Message](t, "append")(c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser,
		Content: client.Text("hi"), Tokens: client.Ptr[int64](3)}))
	usage := must[*api.Usage](t, "usage")(c.GetUsage(ctx, &api.GetUsageParams{GroupBy: client.Ptr(api.UsageGroupBySession)}))
	if len(usage.Data) != 1 {
		t.Errorf("usage %+v, want one session", usage)
	}
	dry := must[*api.PurgeResult](t, "purge")(c.PurgeSessions(ctx, api.PurgeRequest{DryRun: client.Ptr(true), Expired: client.Ptr(true)}))
	if dry.Sessions != 0 {
		t.Errorf("a dry run over no expired session %+v", dry)
	}
	if r := must[*api.IntegrityReport](t, "integrity")(c.CheckIntegrity(ctx, nil)); !r.Ok {
		t.Errorf("integrity %+v", r)
	}
	must[*api.Backup](t, "backup")(c.BackupDatabase(ctx, api.BackupRequest{Name: client.Ptr("parity.db")}))
	must[*api.TenantEmbedding](t, "tenant embedding")(c.GetTenantEmbedding(ctx))
	if _, err := c.PutTenantEmbedding(ctx, api.EmbeddingConfig{URL: "http://127.0.0.1:1/v1/embeddings", Model: "m"}); client.Code(err) != api.ErrorCodeValidationFailed {
		t.Errorf("an endpoint the server does not allow: %v", err)
	}
	if err := c.DeleteTenantEmbedding(ctx); err != nil {
		t.Fatal(err)
	}

	k := must[*api.NewAPIKey](t, "create key")(c.CreateAPIKey(ctx, api.APIKeyCreate{Scope: api.ScopeAdmin, Name: client.Ptr("parity")}))
	admin, _ := newClient(t, url, client.WithAPIKey(k.Key))
	if keys := collect(t, admin.ListAPIKeys(ctx, nil)); len(keys) != 1 || keys[0].ID != k.ID {
		t.Errorf("keys %+v, want %s", keys, k.ID)
	}
	if err := admin.RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
}
