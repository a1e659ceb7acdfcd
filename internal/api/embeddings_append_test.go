package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/embed/standin"
	"github.com/logbook/logbook/internal/model"
)

// An append may carry each message's own embedding: stored in the append's
// write, ready at once, searchable by meaning right after, checked against
// (or pinning) the session's agent's model and dimensions as a PUT of it
// would be, on every way in: one message, a batch, a stream, a rewind's
// tail. What is refused writes nothing.
func TestAppendCarriesItsEmbedding(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "A"})
	mustCreateSession(t, c, map[string]any{"id": "s", "agent_id": "a"})
	msgs := "/v1/sessions/s/messages"
	emb := func(v ...float32) map[string]any {
		return map[string]any{"role": "user", "content": fmt.Sprint("about ", v), "embedding": v, "embedding_model": "toy"}
	}

	one := mustAppend(t, c, "s", emb(1, 0, 0))
	var e model.MessageEmbedding
	c.do("GET", msgs+"/"+one.ID+"/embedding", nil).want(t, http.StatusOK, &e)
	if e.EmbeddingState != model.EmbeddingReady || e.Dimensions != 3 || e.EmbeddingModel == nil || *e.EmbeddingModel != "toy" || e.AgentID != "a" {
		t.Fatalf("the append's own embedding: %+v", e)
	}
	var a model.Agent
	c.do("GET", "/v1/agents/a", nil).want(t, http.StatusOK, &a)
	if a.EmbeddingDims == nil || *a.EmbeddingDims != 3 || a.EmbeddingModel == nil || *a.EmbeddingModel != "toy" {
		t.Errorf("the agent's first embedding did not pin it: %+v", a)
	}
	var batch struct{ Data []model.Message }
	c.do("POST", msgs, map[string]any{"messages": []any{emb(0, 1, 0), map[string]any{"role": "assistant", "content": "no vector"}}}).
		want(t, http.StatusCreated, &batch)
	lines := streamLines(t, c, "s", strings.NewReader(mustJSON(t, emb(0, 0, 1))+"\n"))
	if len(lines) != 1 || !bytes.Contains(lines[0], []byte(`"seq":4`)) {
		t.Fatalf("stream: %s", lines)
	}
	mustRewind(t, c, "s", map[string]any{"to_seq": 4, "messages": []any{emb(0.6, 0.8, 0)}})

	var mh model.SearchResult[model.MessageHit]
	c.do("GET", "/v1/agents/a/messages/search?mode=vector&query_embedding=0,1,0", nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 4 || mh.Data[0].MessageID != batch.Data[0].ID || mh.Data[0].Rank > 1e-6 {
		t.Fatalf("search by meaning right after the appends: %+v", mh.Data)
	}
	c.do("GET", msgs+"/"+batch.Data[1].ID+"/embedding", nil).wantProblem(t, http.StatusNotFound, "not_found")

	plain := mustCreateSession(t, c, map[string]any{"id": "plain"})
	for _, tc := range []struct {
		name, session string
		body          any
		field         string
	}{
		{"dimensions", "s", emb(1, 0), "embedding"},
		{"model", "s", map[string]any{"role": "user", "embedding": []float32{1, 0, 0}, "embedding_model": "other"}, "embedding_model"},
		{"no_model", "s", map[string]any{"role": "user", "embedding": []float32{1, 0, 0}}, "embedding_model"},
		{"no_vector", "s", map[string]any{"role": "user", "embedding_model": "toy"}, "embedding"},
		{"empty", "s", map[string]any{"role": "user", "embedding": []float32{}, "embedding_model": "toy"}, "embedding"},
		{"out_of_float32", "s", json.RawMessage(`{"role":"user","embedding":[1e39,0,0],"embedding_model":"toy"}`), "embedding[0]"},
		{"in_a_batch", "s", map[string]any{"messages": []any{emb(1, 0, 0), emb(1, 0)}}, "messages[1].embedding"},
		{"no_agent", plain.ID, emb(1, 0, 0), "embedding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantField(t, c.do("POST", "/v1/sessions/"+tc.session+"/messages", tc.body), tc.field)
		})
	}
	if s := mustGetSession(t, c, "s"); s.LastSeq != 5 {
		t.Errorf("last_seq %d after refused appends, want 5", s.LastSeq)
	}
	mustCreateSession(t, c, map[string]any{"id": "ghost", "agent_id": "not-stored"})
	wantField(t, c.do("POST", "/v1/sessions/ghost/messages", emb(1, 0, 0)), "embedding")

	// A keyed retry is a replay: the embedding is not stored twice, nor refused.
	first := c.do("POST", msgs, emb(0, 0, 1), "Idempotency-Key", "k").want(t, http.StatusCreated, nil)
	again := c.do("POST", msgs, emb(0, 0, 1), "Idempotency-Key", "k").want(t, http.StatusOK, nil)
	if !bytes.Equal(first.Body, again.Body) {
		t.Errorf("the replay answered %s, want %s", again.Body, first.Body)
	}
}

// A message's embedding travels with its session: an export carries it
// (one line a message, after the messages), and an import, as new or into
// an agent import, stores it ready under the session's agent, searchable by
// meaning. An export whose embeddings the target agent cannot take is
// refused, naming the line.
func TestMessageEmbeddingsSurviveExportAndImport(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "A"})
	mustCreateSession(t, c, map[string]any{"id": "s", "agent_id": "a"})
	mustAppend(t, c, "s", map[string]any{"role": "user", "content": "car", "embedding": []float32{1, 0, 0}, "embedding_model": "toy"})
	mustAppend(t, c, "s", map[string]any{"role": "user", "content": "none"})
	dog := mustAppend(t, c, "s", map[string]any{"role": "user", "content": "dog", "embedding": []float32{0, 1, 0}, "embedding_model": "toy"})

	export := mustExport(t, c, "s")
	var embLines []model.ExportEmbedding
	for _, l := range splitLines(t, export) {
		var line model.ExportLine
		if err := json.Unmarshal(l, &line); err != nil {
			t.Fatal(err)
		}
		if line.Type == model.LineEmbedding {
			embLines = append(embLines, *line.Embedding)
		}
	}
	if len(embLines) != 2 || embLines[1].Seq != 3 || embLines[1].MessageID != dog.ID || fmt.Sprint(embLines[1].Embedding) != "[0 1 0]" {
		t.Fatalf("the export's embeddings: %+v", embLines)
	}

	ses := mustImport(t, c, export, "?as_new=true")
	if again := mustExport(t, c, ses.ID); strings.Count(string(again), `"type":"embedding"`) != 2 {
		t.Errorf("the imported session's export lost its embeddings:\n%s", again)
	}
	var mh model.SearchResult[model.MessageHit]
	c.do("GET", "/v1/messages/search?mode=vector&query_embedding=0,1,0&session_id="+ses.ID, nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 2 || mh.Data[0].Content != "dog" || mh.Data[0].MessageID == dog.ID || mh.Data[0].Rank > 1e-6 {
		t.Fatalf("search by meaning of the imported session: %+v", mh.Data)
	}

	// Into another server, with the agent: an agent import takes its sessions' embeddings along.
	agentExport := mustExportAgent(t, c, "a")
	dst := newClient(t)
	mustImportAgent(t, dst, agentExport, "")
	dst.do("GET", "/v1/agents/a/messages/search?mode=vector&query_embedding=1,0,0", nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 4 || mh.Data[0].Content != "car" {
		t.Fatalf("search by meaning after an agent import: %+v", mh.Data)
	}

	// A target agent pinned to another model, or none at all: refused whole.
	other := newClient(t)
	mustCreateAgent(t, other, map[string]any{"id": "a", "name": "A"})
	other.do("POST", "/v1/agents/a/archival", map[string]any{"content": "x", "embedding": []float32{1, 0}, "embedding_model": "toy"}).
		want(t, http.StatusCreated, nil)
	for _, target := range []*client{other, newClient(t)} {
		p := importNDJSON(target, export, "").wantProblem(t, http.StatusUnprocessableEntity, "invalid_import")
		if len(p.Errors) != 1 || !strings.HasPrefix(p.Errors[0].Message, "embedding:") {
			t.Errorf("errors %+v, want one naming the embedding's line", p.Errors)
		}
		target.do("GET", "/v1/sessions/s", nil).wantProblem(t, http.StatusNotFound, "not_found")
	}
}

// The server's embedding worker, which embeds every appended message of an
// agent that names an endpoint, keeps a message's own embedding: it embeds
// only the messages that came without one.
func TestServerEmbeddingsKeepAnAppendsOwn(t *testing.T) {
	_, opt := withEmbedding(t, true)
	c := newClient(t, opt)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "A"})
	mustCreateSession(t, c, map[string]any{"id": "s", "agent_id": "a"})
	unit := make([]float32, standinDims)
	unit[0] = 1
	own := mustAppend(t, c, "s", map[string]any{"role": "user", "content": "the client embedded this",
		"embedding": unit, "embedding_model": standin.Model})
	later := mustAppend(t, c, "s", map[string]any{"role": "user", "content": "the server embeds this"})
	var e model.MessageEmbedding
	waitFor(t, "the server's embedding of the later message", func() bool {
		r := c.do("GET", "/v1/sessions/s/messages/"+later.ID+"/embedding", nil)
		return r.Status == http.StatusOK && json.Unmarshal(r.Body, &e) == nil && e.EmbeddingState == model.EmbeddingReady
	})
	q := "1" + strings.Repeat(",0", standinDims-1)
	var mh model.SearchResult[model.MessageHit]
	c.do("GET", "/v1/agents/a/messages/search?mode=vector&query_embedding="+q, nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 2 || mh.Data[0].MessageID != own.ID || mh.Data[0].Rank > 1e-6 {
		t.Fatalf("the client's own embedding was replaced: %+v", mh.Data)
	}
}
