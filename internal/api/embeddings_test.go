package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/embed/standin"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// relevance is a table of memories and questions about them that share no
// word: only a search by meaning links them (through the stand-in's
// thesaurus, as a real model would through what it learned).
var relevance = []struct{ memory, query string }{
	{"The user drives an automobile to the office every morning.", "car"},
	{"Rex, the user's puppy, chews shoes.", "dog"},
	{"The invoice from the plumber is due on Friday.", "cash payment"},
	{"The user is allergic to peanuts.", "nut allergy"},
	{"The user's favourite film is Alien.", "cinema"},
	{"The user flies to Lisbon for a holiday in May.", "travel journey"},
}

// waitFor polls check until it holds, for at most 15 s.
func waitFor(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitPassage(t *testing.T, c *client, agent, id, state string) model.Passage {
	t.Helper()
	var p model.Passage
	waitFor(t, "passage "+id+" "+state, func() bool {
		c.do("GET", "/v1/agents/"+agent+"/archival/"+id, nil).want(t, http.StatusOK, &p)
		if testing.Verbose() && p.EmbeddingState != nil {
			e := ""
			if p.EmbeddingError != nil {
				e = *p.EmbeddingError
			}
			t.Logf("%s %s", *p.EmbeddingState, e)
		}
		return p.EmbeddingState != nil && *p.EmbeddingState == state
	})
	return p
}

// TestServerEmbeddings: with an endpoint configured, the server embeds
// passages and messages by itself, outside the writer, and embeds q, so a
// search by meaning needs no vector from the client.
func TestServerEmbeddings(t *testing.T) {
	_, opt := withEmbedding(t, true)
	c := newClient(t, opt)
	c = c.as(mustKey(t, c, "mine", model.ScopeWrite).Key)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})

	ids := map[string]string{}
	for _, r := range relevance {
		var p model.Passage
		c.do("POST", "/v1/agents/a/archival", map[string]any{"content": r.memory}).want(t, http.StatusCreated, &p)
		if p.EmbeddingState == nil || *p.EmbeddingState != model.EmbeddingPending {
			t.Fatalf("a new passage without an embedding: state %v, want pending", p.EmbeddingState)
		}
		ids[r.memory] = p.ID
	}
	for _, id := range ids {
		p := waitPassage(t, c, "a", id, model.EmbeddingReady)
		if p.EmbeddingModel == nil || *p.EmbeddingModel != standin.Model || p.EmbeddingError != nil {
			t.Fatalf("ready passage: %+v", p)
		}
	}
	var a model.Agent
	c.do("GET", "/v1/agents/a", nil).want(t, http.StatusOK, &a)
	if a.EmbeddingDims == nil || *a.EmbeddingDims != standinDims || a.EmbeddingModel == nil || *a.EmbeddingModel != standin.Model {
		t.Fatalf("agent not pinned: %+v", a)
	}

	var hits struct{ Data []model.PassageHit }
	for _, r := range relevance {
		q := url.QueryEscape(r.query)
		c.do("GET", "/v1/agents/a/archival/search?q="+q, nil).want(t, http.StatusOK, &hits)
		if len(hits.Data) > 0 && hits.Data[0].ID == ids[r.memory] {
			t.Errorf("keyword %q found %q first: the table must share no word", r.query, r.memory)
		}
		for _, mode := range []string{"vector", "hybrid"} {
			c.do("GET", "/v1/agents/a/archival/search?mode="+mode+"&q="+q, nil).want(t, http.StatusOK, &hits)
			if len(hits.Data) == 0 || hits.Data[0].ID != ids[r.memory] {
				t.Errorf("%s %q: got %+v, want %q first", mode, r.query, hits.Data, r.memory)
			}
		}
		c.do("POST", "/v1/agents/a/archival/search", map[string]any{"mode": "vector", "q": r.query, "limit": 1}).want(t, http.StatusOK, &hits)
		if len(hits.Data) != 1 || hits.Data[0].ID != ids[r.memory] {
			t.Errorf("POST vector %q: %+v", r.query, hits.Data)
		}
	}

	// Conversations: the messages of the agent's sessions are embedded too.
	s := mustCreateSession(t, c, map[string]any{"agent_id": "a"})
	other := mustCreateSession(t, c, map[string]any{})
	for _, r := range relevance {
		mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": r.memory})
		mustAppend(t, c, other.ID, map[string]any{"role": "user", "content": r.memory})
	}
	var mh model.SearchResult[model.MessageHit]
	last := relevance[len(relevance)-1]
	waitFor(t, "message embeddings", func() bool {
		c.do("GET", "/v1/agents/a/messages/search?mode=vector&q="+url.QueryEscape(last.query), nil).want(t, http.StatusOK, &mh)
		return len(mh.Data) == len(relevance)
	})
	for _, r := range relevance {
		for _, path := range []string{"/v1/agents/a/messages/search", "/v1/messages/search"} {
			for _, mode := range []string{"vector", "hybrid"} {
				c.do("GET", path+"?mode="+mode+"&q="+url.QueryEscape(r.query)+"&session_id="+s.ID, nil).want(t, http.StatusOK, &mh)
				if len(mh.Data) == 0 || mh.Data[0].Content != r.memory || mh.Data[0].SessionID != s.ID {
					t.Errorf("%s %s %q: %+v", path, mode, r.query, mh.Data)
				}
			}
		}
	}
	// A session without an agent has no embeddings: it is not searched by meaning.
	c.do("GET", "/v1/messages/search?mode=vector&q=car&session_id="+other.ID, nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 0 {
		t.Errorf("agentless session by meaning: %+v", mh.Data)
	}

	// Another tenant sees none of it.
	oc := c.as(mustKey(t, c, "other", model.ScopeWrite).Key)
	oc.do("GET", "/v1/agents/a/archival/search?mode=vector&q=car", nil).wantProblem(t, http.StatusNotFound, "not_found")
	oc.do("GET", "/v1/messages/search?mode=vector&q=car", nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 0 {
		t.Errorf("other tenant's conversation search: %+v", mh.Data)
	}
}

// TestEmbeddingRetriesAndFailures: a failing endpoint is retried until it
// answers; one that refuses the input fails the passage with its reason; a
// query it cannot embed answers 503; and configs are checked.
func TestEmbeddingRetriesAndFailures(t *testing.T) {
	e, opt := withEmbedding(t, false)
	faults, err := repo.NewFaults(7, repo.FaultRule{Point: repo.PointEmbeddingTimeout, Kind: repo.FaultError, Rate: 1, Times: 1},
		repo.FaultRule{Point: repo.PointVectorSearch, Kind: repo.FaultError, Rate: 1, Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, opt, withFaults(faults))

	// Without an endpoint anywhere, passages wait for nothing and q cannot be embedded.
	mustCreateAgent(t, c, map[string]any{"id": "plain", "name": "plain"})
	var p model.Passage
	c.do("POST", "/v1/agents/plain/archival", map[string]any{"content": "car"}).want(t, http.StatusCreated, &p)
	if p.EmbeddingState != nil {
		t.Fatalf("no endpoint: state %v", *p.EmbeddingState)
	}
	wantField(t, c.do("GET", "/v1/agents/plain/archival/search?mode=vector&q=car", nil), "query_embedding")

	cfg := e.config()
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"url elsewhere", map[string]any{"url": "http://169.254.169.254/v1/embeddings", "model": "m"}, "embedding.url"},
		{"not http", map[string]any{"url": "file:///etc/passwd", "model": "m"}, "embedding.url"},
		{"credentials", map[string]any{"url": strings.Replace(e.url, "http://", "http://u:p@", 1), "model": "m"}, "embedding.url"},
		{"any variable", map[string]any{"url": e.url, "model": "m", "api_key_env": "HOME"}, "embedding.api_key_env"},
		{"no model", map[string]any{"url": e.url}, "embedding.model"},
		{"dims", map[string]any{"url": e.url, "model": "m", "dimensions": 100000}, "embedding.dimensions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantField(t, c.do("POST", "/v1/agents", map[string]any{"name": "x", "embedding": tc.body}), tc.field)
			wantField(t, c.do("PATCH", "/v1/agents/plain", map[string]any{"embedding": tc.body}), tc.field)
		})
	}

	// The agent's own endpoint; the first call times out (injected) and is retried.
	a := mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a", "embedding": cfg})
	if a.Embedding == nil || *a.Embedding != *cfg {
		t.Fatalf("agent embedding config: %+v", a.Embedding)
	}
	e.standin.FailNext(1) // and then a 503
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "The user drives an automobile."}).want(t, http.StatusCreated, &p)
	p = waitPassage(t, c, "a", p.ID, model.EmbeddingReady)
	if ev := faults.Events(); len(ev) == 0 || ev[0].Point != repo.PointEmbeddingTimeout {
		t.Fatalf("faults: %v", ev)
	}
	// vector_search fails once (503), then answers.
	c.do("GET", "/v1/agents/a/archival/search?mode=vector&q=car", nil).wantProblem(t, http.StatusServiceUnavailable, "storage_unavailable")
	var hits struct{ Data []model.PassageHit }
	c.do("GET", "/v1/agents/a/archival/search?mode=vector&q=car", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 1 || hits.Data[0].ID != p.ID {
		t.Fatalf("after the fault: %+v", hits.Data)
	}

	// An endpoint set later embeds what was stored before it.
	var plainP model.Passage
	var page struct{ Data []model.Passage }
	c.do("GET", "/v1/agents/plain/archival", nil).want(t, http.StatusOK, &page)
	plainP = page.Data[0]
	c.do("PATCH", "/v1/agents/plain", map[string]any{"embedding": cfg}).want(t, http.StatusOK, nil)
	waitPassage(t, c, "plain", plainP.ID, model.EmbeddingReady)

	// Pinned: another model for the agent is refused.
	other := *cfg
	other.Model = "another-model"
	wantField(t, c.do("PATCH", "/v1/agents/a", map[string]any{"embedding": other}), "embedding.model")

	// An endpoint that refuses (404) fails the passage at once, with the reason.
	bad := *cfg
	bad.URL = e.base + "nowhere"
	mustCreateAgent(t, c, map[string]any{"id": "b", "name": "b", "embedding": bad})
	c.do("POST", "/v1/agents/b/archival", map[string]any{"content": "x"}).want(t, http.StatusCreated, &p)
	p = waitPassage(t, c, "b", p.ID, model.EmbeddingFailed)
	if p.EmbeddingError == nil || !strings.Contains(*p.EmbeddingError, "404") {
		t.Fatalf("failed passage's error: %v", p.EmbeddingError)
	}
	// Fixing the endpoint gives a failed passage another round.
	c.do("PATCH", "/v1/agents/b", map[string]any{"embedding": cfg}).want(t, http.StatusOK, nil)
	if p = waitPassage(t, c, "b", p.ID, model.EmbeddingReady); p.EmbeddingError != nil {
		t.Fatalf("ready passage keeps an error: %v", *p.EmbeddingError)
	}
	// An endpoint that keeps failing: retried MaxAttempts times, then failed.
	e.standin.FailNext(100)
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "y"}).want(t, http.StatusCreated, &p)
	p = waitPassage(t, c, "a", p.ID, model.EmbeddingFailed)
	if p.EmbeddingError == nil || !strings.Contains(*p.EmbeddingError, "503") {
		t.Fatalf("failed passage's error: %v", p.EmbeddingError)
	}
	c.do("GET", "/v1/agents/a/archival/search?mode=hybrid&q=something+new", nil).
		wantProblem(t, http.StatusServiceUnavailable, "embedding_unavailable")
	e.standin.FailNext(0)
}

func wantField(t *testing.T, res *response, field string) {
	t.Helper()
	p := res.wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	for _, f := range p.Errors {
		if f.Field == field {
			return
		}
	}
	t.Fatalf("want an error naming %s, got %+v", field, p.Errors)
}

// TestClientMessageEmbeddings: with no endpoint, a client stores its own
// message embeddings and searches conversations by meaning with them.
func TestClientMessageEmbeddings(t *testing.T) {
	c := newClient(t)
	c = c.as(mustKey(t, c, "mine", model.ScopeWrite).Key)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	s := mustCreateSession(t, c, map[string]any{"agent_id": "a"})
	car := mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "I drive an automobile."})
	tea := mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "I like tea with car keys nearby."})
	path := func(m model.Message) string { return "/v1/sessions/" + s.ID + "/messages/" + m.ID + "/embedding" }
	c.do("GET", path(car), nil).wantProblem(t, http.StatusNotFound, "not_found")

	var e model.MessageEmbedding
	c.do("PUT", path(car), map[string]any{"embedding": []float32{1, 0, 0}, "embedding_model": "toy"}).want(t, http.StatusOK, &e)
	if e.EmbeddingState != model.EmbeddingReady || e.Dimensions != 3 || e.AgentID != "a" || e.Seq != car.Seq {
		t.Fatalf("put: %+v", e)
	}
	c.do("PUT", path(tea), map[string]any{"embedding": []float32{0, 1, 0}, "embedding_model": "toy"}).want(t, http.StatusOK, nil)
	c.do("GET", path(car), nil).want(t, http.StatusOK, &e)

	var mh model.SearchResult[model.MessageHit]
	c.do("GET", "/v1/agents/a/messages/search?mode=vector&query_embedding=0.9,0.1,0", nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 2 || mh.Data[0].MessageID != car.ID {
		t.Fatalf("vector: %+v", mh.Data)
	}
	c.do("GET", "/v1/agents/a/messages/search?mode=hybrid&q=drive&query_embedding=0.9,0.1,0", nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 2 || mh.Data[0].MessageID != car.ID {
		t.Fatalf("hybrid: %+v", mh.Data)
	}
	if h := mh.Data[0]; h.Content != "I drive an automobile." || h.Snippet == "" || h.SessionID != s.ID || h.Role != model.RoleUser {
		t.Fatalf("a hit by meaning without its message: %+v", h)
	}

	// A fork reads its parent's messages up to where it forked, as its own;
	// the role filter applies.
	c.do("POST", "/v1/sessions/"+s.ID+"/fork", map[string]any{"id": "fork"}).want(t, http.StatusCreated, nil)
	late := mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "Said in the parent after the fork."})
	c.do("PUT", path(late), map[string]any{"embedding": []float32{1, 0.01, 0}, "embedding_model": "toy"}).want(t, http.StatusOK, nil)
	c.do("GET", "/v1/messages/search?mode=vector&query_embedding=0.9,0.1,0&session_id=fork", nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 2 || mh.Data[0].MessageID != car.ID || mh.Data[0].SessionID != "fork" || mh.Data[0].Content != "I drive an automobile." {
		t.Fatalf("vector search of the fork: %+v", mh.Data)
	}
	c.do("GET", "/v1/messages/search?mode=vector&query_embedding=0.9,0.1,0&session_id="+s.ID, nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 3 || mh.Data[0].MessageID != late.ID || mh.Data[0].Content != "Said in the parent after the fork." {
		t.Fatalf("vector search of the parent: %+v", mh.Data)
	}
	c.do("GET", "/v1/messages/search?mode=vector&query_embedding=0.9,0.1,0&role=assistant", nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 0 {
		t.Fatalf("role=assistant found user messages: %+v", mh.Data)
	}

	wantField(t, c.do("PUT", path(car), map[string]any{"embedding": []float32{1, 0}, "embedding_model": "toy"}), "embedding")
	wantField(t, c.do("PUT", path(car), map[string]any{"embedding": []float32{1, 0, 0}, "embedding_model": "other"}), "embedding_model")
	wantField(t, c.do("PUT", path(car), map[string]any{"embedding": []float32{1, 0, 0}}), "embedding_model")
	wantField(t, c.do("GET", "/v1/agents/a/messages/search?mode=vector&query_embedding=1,0", nil), "query_embedding")
	wantField(t, c.do("GET", "/v1/agents/a/messages/search?mode=vector&q=car", nil), "query_embedding")
	plain := mustCreateSession(t, c, map[string]any{})
	m := mustAppend(t, c, plain.ID, map[string]any{"role": "user", "content": "x"})
	wantField(t, c.do("PUT", "/v1/sessions/"+plain.ID+"/messages/"+m.ID+"/embedding",
		map[string]any{"embedding": []float32{1, 0, 0}, "embedding_model": "toy"}), "agent_id")
	c.do("PUT", "/v1/sessions/"+s.ID+"/messages/msg_nope/embedding",
		map[string]any{"embedding": []float32{1, 0, 0}, "embedding_model": "toy"}).wantProblem(t, http.StatusNotFound, "not_found")

	// Another tenant: not found, and nothing of it in its search.
	oc := c.as(mustKey(t, c, "other", model.ScopeWrite).Key)
	oc.do("GET", path(car), nil).wantProblem(t, http.StatusNotFound, "not_found")
	oc.do("PUT", path(car), map[string]any{"embedding": []float32{1, 0, 0}, "embedding_model": "toy"}).wantProblem(t, http.StatusNotFound, "not_found")
	oc.do("GET", "/v1/messages/search?mode=vector&query_embedding=1,0,0", nil).want(t, http.StatusOK, &mh)
	if len(mh.Data) != 0 {
		t.Fatalf("other tenant: %+v", mh.Data)
	}
}

// TestTenantEmbedding: a tenant's endpoint embeds the memory of its agents
// that name none, and only its own.
func TestTenantEmbedding(t *testing.T) {
	e, opt := withEmbedding(t, false)
	c := newClient(t, opt)
	c = c.as(mustKey(t, c, "mine", model.ScopeAdmin).Key)
	oc := c.as(mustKey(t, c, "other", model.ScopeAdmin).Key)
	var te struct{ Embedding *model.EmbeddingConfig }
	c.do("GET", "/v1/admin/embedding", nil).want(t, http.StatusOK, &te)
	if te.Embedding != nil {
		t.Fatalf("no endpoint yet: %+v", te.Embedding)
	}
	wantField(t, c.do("PUT", "/v1/admin/embedding", map[string]any{"url": "http://10.0.0.1/v1/embeddings", "model": "m"}), "embedding.url")
	c.do("PUT", "/v1/admin/embedding", e.config()).want(t, http.StatusOK, &te)
	c.do("GET", "/v1/admin/embedding", nil).want(t, http.StatusOK, &te)
	if te.Embedding == nil || *te.Embedding != *e.config() {
		t.Fatalf("tenant endpoint: %+v", te.Embedding)
	}
	for _, cl := range []*client{c, oc} {
		mustCreateAgent(t, cl, map[string]any{"id": "a", "name": "a"})
	}
	var p, op model.Passage
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "The user drives an automobile."}).want(t, http.StatusCreated, &p)
	oc.do("POST", "/v1/agents/a/archival", map[string]any{"content": "The user drives an automobile."}).want(t, http.StatusCreated, &op)
	if op.EmbeddingState != nil {
		t.Fatalf("another tenant's passage waits for an embedding: %v", *op.EmbeddingState)
	}
	waitPassage(t, c, "a", p.ID, model.EmbeddingReady)
	var hits struct{ Data []model.PassageHit }
	c.do("GET", "/v1/agents/a/archival/search?mode=vector&q=car", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 1 || hits.Data[0].ID != p.ID {
		t.Fatalf("tenant endpoint search: %+v", hits.Data)
	}
	wantField(t, oc.do("GET", "/v1/agents/a/archival/search?mode=vector&q=car", nil), "query_embedding")

	c.do("DELETE", "/v1/admin/embedding", nil).want(t, http.StatusNoContent, nil)
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "later"}).want(t, http.StatusCreated, &p)
	if p.EmbeddingState != nil {
		t.Fatalf("after the endpoint was removed: %v", *p.EmbeddingState)
	}
	// Set again: what was stored meanwhile is embedded too.
	c.do("PUT", "/v1/admin/embedding", e.config()).want(t, http.StatusOK, nil)
	waitPassage(t, c, "a", p.ID, model.EmbeddingReady)
	c.as(mustKey(t, c, "mine", model.ScopeWrite).Key).do("PUT", "/v1/admin/embedding", e.config()).
		wantProblem(t, http.StatusForbidden, "forbidden")
}

// TestVectorSearchFollowsWrites: the vectors searched come from memory, yet
// every insert, delete and expiry shows in the next search.
func TestVectorSearchFollowsWrites(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	add := func(content string, vec []float32, extra map[string]any) model.Passage {
		body := map[string]any{"content": content, "embedding": vec, "embedding_model": "toy"}
		for k, v := range extra {
			body[k] = v
		}
		var p model.Passage
		c.do("POST", "/v1/agents/a/archival", body).want(t, http.StatusCreated, &p)
		return p
	}
	first := func(query string) string {
		t.Helper()
		var hits struct{ Data []model.PassageHit }
		c.do("GET", "/v1/agents/a/archival/search?mode=vector&limit=1&query_embedding="+query, nil).want(t, http.StatusOK, &hits)
		if len(hits.Data) == 0 {
			return ""
		}
		return hits.Data[0].ID
	}
	far := add("far", []float32{0, 1}, nil)
	if got := first("1,0"); got != far.ID {
		t.Fatalf("one passage: %s", got)
	}
	near := add("near", []float32{1, 0.1}, map[string]any{"tags": []string{"x"}})
	if got := first("1,0"); got != near.ID {
		t.Fatalf("after an insert: %s, want %s", got, near.ID)
	}
	var hits struct{ Data []model.PassageHit }
	c.do("GET", "/v1/agents/a/archival/search?mode=vector&query_embedding=0,1&tags=x", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 1 || hits.Data[0].ID != near.ID {
		t.Fatalf("tags filter: %+v", hits.Data)
	}
	c.do("DELETE", "/v1/agents/a/archival/"+near.ID, nil).want(t, http.StatusNoContent, nil)
	if got := first("1,0"); got != far.ID {
		t.Fatalf("after a delete: %s, want %s", got, far.ID)
	}
	// Long enough to be read before it expires under the race detector on a
	// loaded machine; the test then waits until it passed.
	soonAt := time.Now().Add(2 * time.Second)
	soon := add("soon gone", []float32{1, 0}, map[string]any{"expires_at": soonAt.UTC().Format(time.RFC3339Nano)})
	if got := first("1,0"); got != soon.ID {
		t.Fatalf("before it expires: %s", got)
	}
	time.Sleep(time.Until(soonAt) + 100*time.Millisecond)
	if got := first("1,0"); got != far.ID {
		t.Fatalf("after it expired: %s, want %s", got, far.ID)
	}
}

// TestMemoryToolsSearchByMeaning: with an endpoint, Letta's search tools
// find by meaning what shares no word with the query.
func TestMemoryToolsSearchByMeaning(t *testing.T) {
	_, opt := withEmbedding(t, true)
	c := newClient(t, opt)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	var p model.Passage
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "Rex, the user's puppy, chews shoes."}).want(t, http.StatusCreated, &p)
	waitPassage(t, c, "a", p.ID, model.EmbeddingReady)
	var res model.ToolResult
	c.do("POST", "/v1/agents/a/tools/archival_memory_search", map[string]any{"query": "dog"}).want(t, http.StatusOK, &res)
	if res.IsError || !strings.Contains(res.Result, "Rex") {
		t.Fatalf("archival_memory_search by meaning: %+v", res)
	}
	s := mustCreateSession(t, c, map[string]any{"agent_id": "a"})
	mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "I bought a new sedan yesterday."})
	waitFor(t, "the message's embedding", func() bool {
		c.do("POST", "/v1/agents/a/tools/conversation_search", map[string]any{"query": "car"}).want(t, http.StatusOK, &res)
		return strings.Contains(res.Result, "sedan")
	})
}
