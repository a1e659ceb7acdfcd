package api_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/embed/standin"
	"github.com/logbook/logbook/internal/metrics"
	"github.com/logbook/logbook/internal/model"
)

// remoteSecret is what hostile or internal endpoints answer: no tenant may
// ever read it.
const remoteSecret = "internal-db.corp:5432 password=hunter2"

// edge is an allowed endpoint that misbehaves by path:
//
//	/ok/…              the stand-in
//	/redirect/{code}/… a redirect to target
//	/fail/{status}     that status, remoteSecret as the body
//	/garbage           200 with remoteSecret
//	/huge              200 with a number finite as a float64, not as a float32
//	/hang              no answer until the test ends
//
// It records every request's path and Authorization header.
type edge struct {
	*httptest.Server
	standin *standin.Server
	target  string // where redirects point

	mu      sync.Mutex
	paths   []string
	keys    []string
	hanging atomic.Int32  // /hang calls waiting now
	hung    atomic.Int32  // /hang calls ever
	release chan struct{} // closed: /hang calls end
}

func newEdge(t *testing.T, target string) *edge {
	e := &edge{standin: &standin.Server{Dims: standinDims}, target: target, release: make(chan struct{})}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	t.Cleanup(func() { close(e.release) }) // before Close, which waits for handlers
	return e
}

func (e *edge) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.paths = append(e.paths, r.URL.Path)
	e.keys = append(e.keys, r.Header.Get("Authorization"))
	e.mu.Unlock()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch parts[0] {
	case "ok":
		e.standin.ServeHTTP(w, r)
	case "redirect":
		code, _ := strconv.Atoi(parts[1])
		http.Redirect(w, r, e.target+"/v1/embeddings", code)
	case "fail":
		code, _ := strconv.Atoi(parts[1])
		w.WriteHeader(code)
		w.Write([]byte(`{"error":{"message":"` + remoteSecret + `"}}`))
	case "garbage":
		w.Write([]byte(remoteSecret))
	case "huge":
		v := strings.Repeat("0.5,", standinDims-1) + "1e39"
		w.Write([]byte(`{"data":[{"index":0,"embedding":[` + v + `]}]}`))
	case "hang":
		e.hung.Add(1)
		e.hanging.Add(1)
		defer e.hanging.Add(-1)
		select {
		case <-e.release:
		case <-r.Context().Done():
		}
	default:
		http.NotFound(w, r)
	}
}

func (e *edge) seen() (paths, keys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.paths...), append([]string(nil), e.keys...)
}

// config is an endpoint of e at path.
func (e *edge) config(path string) map[string]any {
	return map[string]any{"url": e.URL + path, "model": standin.Model, "dimensions": standinDims}
}

// outsideServer is outside every allowlist; it counts what reaches it.
type outsideServer struct {
	*httptest.Server
	calls atomic.Int32
}

func newOutsideServer(t *testing.T) *outsideServer {
	o := &outsideServer{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.calls.Add(1)
		(&standin.Server{Dims: standinDims}).ServeHTTP(w, r)
	}))
	t.Cleanup(o.Close)
	return o
}

// newEdgeClient is a server whose worker may call e besides the stand-in.
func newEdgeClient(t *testing.T, e *edge, tune func(*testEmbedding)) (*client, *testEmbedding) {
	emb, opt := withEmbedding(t, false)
	emb.allowed = []string{e.URL + "/"}
	if tune != nil {
		tune(emb)
	}
	return newClient(t, opt), emb
}

func passageError(p model.Passage) string {
	if p.EmbeddingError == nil {
		return ""
	}
	return *p.EmbeddingError
}

// TestEmbeddingRedirectsNeverFollowed: an allowed endpoint answering any
// redirect fails its texts for good, in fixed words, and neither the worker
// nor a search's query embedding sends anything (the tenant's key, the
// texts) where the redirect points.
func TestEmbeddingRedirectsNeverFollowed(t *testing.T) {
	out := newOutsideServer(t)
	ed := newEdge(t, out.URL)
	env := map[string]string{model.TenantEmbeddingKeyEnv(model.DefaultTenant): "sk-tenant"}
	c, _ := newEdgeClient(t, ed, func(e *testEmbedding) { e.getenv = func(k string) string { return env[k] } })
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			id := "r" + strconv.Itoa(code)
			cfg := ed.config("/redirect/" + strconv.Itoa(code) + "/v1/embeddings")
			cfg["api_key_env"] = model.TenantEmbeddingKeyEnv(model.DefaultTenant)
			mustCreateAgent(t, c, map[string]any{"id": id, "name": id, "embedding": cfg})
			var p model.Passage
			c.do("POST", "/v1/agents/"+id+"/archival", map[string]any{"content": "a secret text"}).want(t, http.StatusCreated, &p)
			p = waitPassage(t, c, id, p.ID, model.EmbeddingFailed)
			want := "the embedding endpoint answered HTTP " + strconv.Itoa(code) + ", a redirect, which the server does not follow"
			if got := passageError(p); got != want {
				t.Fatalf("embedding_error %q, want %q", got, want)
			}
			pr := c.do("GET", "/v1/agents/"+id+"/archival/search?mode=vector&q=car", nil).
				wantProblem(t, http.StatusServiceUnavailable, "embedding_unavailable")
			if strings.Contains(pr.Detail, out.URL) || !strings.Contains(pr.Detail, want) {
				t.Fatalf("search's detail %q", pr.Detail)
			}
		})
	}
	if n := out.calls.Load(); n != 0 {
		t.Fatalf("the redirects' target was called %d times", n)
	}
	if _, keys := ed.seen(); len(keys) == 0 || keys[0] != "Bearer sk-tenant" {
		t.Fatalf("the allowed endpoint saw keys %q, want the tenant's own", keys)
	}
}

// TestEmbeddingErrorsQuoteNothingRemote: whatever an endpoint answers, what
// a tenant reads of it (a passage's or message's embedding_error, a
// search's problem) is Logbook's fixed description: no body, no address.
func TestEmbeddingErrorsQuoteNothingRemote(t *testing.T) {
	ed := newEdge(t, "http://"+url.PathEscape(remoteSecret))
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	c, _ := newEdgeClient(t, ed, func(e *testEmbedding) { e.allowed = append(e.allowed, gone.URL+"/") })
	for _, tc := range []struct {
		name, url, want string
	}{
		{"refusal", ed.URL + "/fail/400", "the embedding endpoint answered HTTP 400"},
		{"overload", ed.URL + "/fail/503", "the embedding endpoint answered HTTP 503"},
		{"not_json", ed.URL + "/garbage", "the embedding endpoint's answer is not an embeddings list"},
		{"redirect", ed.URL + "/redirect/302/x", "the embedding endpoint answered HTTP 302, a redirect, which the server does not follow"},
		{"unreachable", gone.URL + "/v1/embeddings", "the embedding endpoint could not be reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustCreateAgent(t, c, map[string]any{"id": tc.name, "name": tc.name,
				"embedding": map[string]any{"url": tc.url, "model": standin.Model}})
			var p model.Passage
			c.do("POST", "/v1/agents/"+tc.name+"/archival", map[string]any{"content": "x"}).want(t, http.StatusCreated, &p)
			if p = waitPassage(t, c, tc.name, p.ID, model.EmbeddingFailed); passageError(p) != tc.want {
				t.Fatalf("passage's embedding_error %q, want %q", passageError(p), tc.want)
			}
			s := mustCreateSession(t, c, map[string]any{"agent_id": tc.name})
			m := mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "hello"})
			var me model.MessageEmbedding
			waitFor(t, "the message's embedding to fail", func() bool {
				res := c.do("GET", "/v1/sessions/"+s.ID+"/messages/"+m.ID+"/embedding", nil)
				if res.Status == http.StatusNotFound {
					return false
				}
				res.want(t, http.StatusOK, &me)
				return me.EmbeddingState == model.EmbeddingFailed
			})
			if me.EmbeddingError == nil || *me.EmbeddingError != tc.want {
				t.Fatalf("message's embedding_error %v, want %q", me.EmbeddingError, tc.want)
			}
			for _, path := range []string{"/v1/agents/" + tc.name + "/archival/search", "/v1/agents/" + tc.name + "/messages/search"} {
				pr := c.do("GET", path+"?mode=hybrid&q=car", nil).wantProblem(t, http.StatusServiceUnavailable, "embedding_unavailable")
				if pr.Detail != "embedding q: "+tc.want {
					t.Fatalf("%s: detail %q", path, pr.Detail)
				}
			}
		})
	}
}

// TestEmbeddingURLMustBeCanonical: a URL that only looks as if it were
// under an allowed prefix is refused when configured, naming the field, on
// every route that takes one; one that differs from its canonical form
// harmlessly is stored canonical; and a config stored before these rules,
// or under an allowlist since narrowed, is refused when called, with no
// request made.
func TestEmbeddingURLMustBeCanonical(t *testing.T) {
	out := newOutsideServer(t)
	ed := newEdge(t, out.URL)
	c, _ := newEdgeClient(t, ed, nil)
	a := c.as(mustKey(t, c, "acme", model.ScopeAdmin).Key)
	mustCreateAgent(t, a, map[string]any{"id": "x", "name": "x"})
	for _, tc := range []struct{ name, path string }{
		{"dot_dot", "/ok/../admin"},
		{"escaped_dot_dot", "/ok/%2e%2e/admin"},
		{"dots_and_slashes", "/ok/./.././admin"},
		{"double_slash", "/ok//v1"},
		{"backslash", `/ok\..\admin`},
		{"escaped_slash", "/ok%2f..%2fadmin"},
		{"fragment", "/ok/v1#frag"},
		{"control", "/ok/v1%00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"url": ed.URL + tc.path, "model": "m"}
			wantField(t, a.do("POST", "/v1/agents", map[string]any{"name": "y", "embedding": body}), "embedding.url")
			wantField(t, a.do("PATCH", "/v1/agents/x", map[string]any{"embedding": body}), "embedding.url")
			wantField(t, a.do("PUT", "/v1/admin/embedding", body), "embedding.url")
		})
	}
	wantField(t, a.do("POST", "/v1/agents", map[string]any{"name": "y",
		"embedding": map[string]any{"url": strings.Replace(ed.URL, "http://", "http://u:p@", 1) + "/ok", "model": "m"}}), "embedding.url")

	u, _ := url.Parse(ed.URL)
	messy := "HTTP://" + strings.ToUpper(u.Host) + "/ok/v1/%65mbeddings"
	var ag model.Agent
	a.do("PATCH", "/v1/agents/x", map[string]any{"embedding": map[string]any{"url": messy, "model": standin.Model}}).want(t, http.StatusOK, &ag)
	if want := ed.URL + "/ok/v1/embeddings"; ag.Embedding == nil || ag.Embedding.URL != want {
		t.Fatalf("stored %+v, want the URL %s", ag.Embedding, want)
	}
	var p model.Passage
	a.do("POST", "/v1/agents/x/archival", map[string]any{"content": "car"}).want(t, http.StatusCreated, &p)
	waitPassage(t, a, "x", p.ID, model.EmbeddingReady)

	// Stored before the rules, or allowed no more: refused at the call.
	ctx := context.Background()
	for _, bad := range []string{ed.URL + "/ok/%2e%2e/admin", out.URL + "/v1/embeddings"} {
		cfg := model.EmbeddingConfig{URL: bad, Model: standin.Model}
		if _, err := c.store.UpdateAgent(ctx, "acme", "x", model.UpdateAgent{Embedding: model.Optional[model.EmbeddingConfig]{Set: true, Value: cfg}}); err != nil {
			t.Fatal(err)
		}
		a.do("POST", "/v1/agents/x/archival", map[string]any{"content": "dog"}).want(t, http.StatusCreated, &p)
		p = waitPassage(t, a, "x", p.ID, model.EmbeddingFailed)
		if want := "the embedding endpoint's URL is not under one the server allows (--embedding-allowed-urls)"; passageError(p) != want {
			t.Fatalf("%s: embedding_error %q", bad, passageError(p))
		}
		a.do("GET", "/v1/agents/x/archival/search?mode=vector&q=dog", nil).wantProblem(t, http.StatusServiceUnavailable, "embedding_unavailable")
	}
	paths, _ := ed.seen()
	for _, p := range paths {
		if strings.Contains(p, "admin") || strings.Contains(p, "..") {
			t.Errorf("the endpoint was called at %q", p)
		}
	}
	if n := out.calls.Load(); n != 0 {
		t.Errorf("a URL outside the allowlist was called %d times", n)
	}
}

// TestEmbeddingKeyBoundToTenant: a tenant's configs may name its own key
// variable or none; naming another tenant's, or the server's, is refused
// when configured, and a config that names one anyway (stored before the
// rule) fails at the call without the key ever being sent. The other
// tenant's own config does send its key, so the test can see it.
func TestEmbeddingKeyBoundToTenant(t *testing.T) {
	ed := newEdge(t, "http://unused.invalid")
	env := map[string]string{
		model.EmbeddingKeyEnvPrefix:              "sk-server",
		model.TenantEmbeddingKeyEnv("alpha"):     "sk-alpha",
		model.TenantEmbeddingKeyEnv("beta"):      "sk-beta",
		model.TenantEmbeddingKeyEnv("Beta.Corp"): "sk-beta-corp",
		"LOGBOOK_EMBEDDING_KEY_BETA_CORP":        "sk-lookalike",
	}
	var (
		mu    sync.Mutex
		reads = map[string]int{} // variables the server read
	)
	getenv := func(k string) string {
		mu.Lock()
		defer mu.Unlock()
		reads[k]++
		return env[k]
	}
	c, _ := newEdgeClient(t, ed, func(e *testEmbedding) { e.getenv = getenv })
	alpha := c.as(mustKey(t, c, "alpha", model.ScopeAdmin).Key)
	beta := c.as(mustKey(t, c, "beta", model.ScopeAdmin).Key)
	withKey := func(v string) map[string]any {
		cfg := ed.config("/ok/v1/embeddings")
		cfg["api_key_env"] = v
		return cfg
	}
	mustCreateAgent(t, alpha, map[string]any{"id": "a", "name": "a"})
	for _, v := range []string{model.TenantEmbeddingKeyEnv("beta"), model.TenantEmbeddingKeyEnv("Beta.Corp"),
		model.EmbeddingKeyEnvPrefix, "LOGBOOK_EMBEDDING_KEY_BETA_CORP", "LOGBOOK_EMBEDDING_KEY_alpha", "HOME"} {
		t.Run(v, func(t *testing.T) {
			wantField(t, alpha.do("POST", "/v1/agents", map[string]any{"name": "y", "embedding": withKey(v)}), "embedding.api_key_env")
			wantField(t, alpha.do("PATCH", "/v1/agents/a", map[string]any{"embedding": withKey(v)}), "embedding.api_key_env")
			wantField(t, alpha.do("PUT", "/v1/admin/embedding", withKey(v)), "embedding.api_key_env")
		})
	}

	// Its own: accepted and sent.
	alpha.do("PATCH", "/v1/agents/a", map[string]any{"embedding": withKey(model.TenantEmbeddingKeyEnv("alpha"))}).want(t, http.StatusOK, nil)
	var p model.Passage
	alpha.do("POST", "/v1/agents/a/archival", map[string]any{"content": "car"}).want(t, http.StatusCreated, &p)
	waitPassage(t, alpha, "a", p.ID, model.EmbeddingReady)
	alpha.do("GET", "/v1/agents/a/archival/search?mode=vector&q=automobile", nil).want(t, http.StatusOK, nil)
	mustCreateAgent(t, beta, map[string]any{"id": "b", "name": "b", "embedding": withKey(model.TenantEmbeddingKeyEnv("beta"))})
	beta.do("POST", "/v1/agents/b/archival", map[string]any{"content": "car"}).want(t, http.StatusCreated, &p)
	waitPassage(t, beta, "b", p.ID, model.EmbeddingReady)

	// Stored anyway (before the rule): alpha's agent, then alpha's tenant
	// endpoint, name beta's variable. Neither call is made.
	ctx := context.Background()
	stolen := model.EmbeddingConfig{URL: ed.URL + "/ok/v1/embeddings", Model: standin.Model, Dimensions: standinDims,
		APIKeyEnv: model.TenantEmbeddingKeyEnv("beta")}
	if _, err := c.store.UpdateAgent(ctx, "alpha", "a", model.UpdateAgent{Embedding: model.Optional[model.EmbeddingConfig]{Set: true, Value: stolen}}); err != nil {
		t.Fatal(err)
	}
	mustCreateAgent(t, alpha, map[string]any{"id": "t", "name": "t"})
	if err := c.store.SetTenantEmbedding(ctx, "alpha", &stolen); err != nil {
		t.Fatal(err)
	}
	want := "the embedding config's api_key_env is not this tenant's own variable, " + model.TenantEmbeddingKeyEnv("alpha")
	for _, agent := range []string{"a", "t"} {
		alpha.do("POST", "/v1/agents/"+agent+"/archival", map[string]any{"content": "dog"}).want(t, http.StatusCreated, &p)
		if p = waitPassage(t, alpha, agent, p.ID, model.EmbeddingFailed); passageError(p) != want {
			t.Fatalf("agent %s: embedding_error %q, want %q", agent, passageError(p), want)
		}
		alpha.do("GET", "/v1/agents/"+agent+"/archival/search?mode=vector&q=puppy", nil).
			wantProblem(t, http.StatusServiceUnavailable, "embedding_unavailable")
	}
	var alphaKeys, betaKeys int
	_, keys := ed.seen()
	for _, k := range keys {
		switch k {
		case "Bearer sk-alpha":
			alphaKeys++
		case "Bearer sk-beta":
			betaKeys++
		case "":
		default:
			t.Errorf("the endpoint was sent %q", k)
		}
	}
	// alpha: its passage and its search's q; beta: its passage, only.
	if alphaKeys != 2 || betaKeys != 1 {
		t.Fatalf("alpha's key sent %d times, beta's %d; want 2 and 1", alphaKeys, betaKeys)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range reads {
		if k != model.TenantEmbeddingKeyEnv("alpha") && !(k == model.TenantEmbeddingKeyEnv("beta") && n == 1) {
			t.Errorf("the server read %s %d times", k, n)
		}
	}
}

// TestEmbeddingNumbersFitFloat32: embeddings are stored as float32s, so
// every path that takes a vector refuses a number a float32 cannot hold
// (1e39 is finite as a float64), NaN and the infinities; none of them can
// leave a stored embedding that fails the agent's export and searches.
func TestEmbeddingNumbersFitFloat32(t *testing.T) {
	ed := newEdge(t, "http://unused.invalid")
	c, _ := newEdgeClient(t, ed, nil)

	// The endpoint's answer.
	mustCreateAgent(t, c, map[string]any{"id": "e", "name": "e", "embedding": ed.config("/huge")})
	var p model.Passage
	c.do("POST", "/v1/agents/e/archival", map[string]any{"content": "x"}).want(t, http.StatusCreated, &p)
	if p = waitPassage(t, c, "e", p.ID, model.EmbeddingFailed); passageError(p) != "the embedding endpoint answered a number outside the range of a 32-bit float" {
		t.Fatalf("embedding_error %q", passageError(p))
	}
	mustExportAgent(t, c, "e")
	c.do("GET", "/v1/agents/e/archival/search?mode=vector&query_embedding=1,0", nil).want(t, http.StatusOK, nil)

	// The client's: a passage, a message's embedding, an import, a query.
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	var ok model.Passage
	c.do("POST", "/v1/agents/a/archival", `{"content": "tiny", "embedding": [-0, 1e-45, 3.4028234e38], "embedding_model": "toy"}`).
		want(t, http.StatusCreated, &ok)
	s := mustCreateSession(t, c, map[string]any{"agent_id": "a"})
	m := mustAppend(t, c, s.ID, map[string]any{"role": "user", "content": "hi"})
	export := mustExportAgent(t, c, "a")
	for _, bad := range []string{"1e39", "-1e39", "3.4028236e38", "1e309", `"NaN"`, `"Infinity"`} {
		t.Run(bad, func(t *testing.T) {
			vec := "[1, " + bad + ", 0]"
			wantFieldPrefix(t, c.do("POST", "/v1/agents/a/archival", `{"content": "x", "embedding": `+vec+`, "embedding_model": "toy"}`), "embedding")
			wantFieldPrefix(t, c.do("PUT", "/v1/sessions/"+s.ID+"/messages/"+m.ID+"/embedding", `{"embedding": `+vec+`, "embedding_model": "toy"}`), "embedding")
			wantFieldPrefix(t, c.do("POST", "/v1/agents/a/archival/search", `{"mode": "vector", "query_embedding": `+vec+`}`), "query_embedding")
			lines := splitLines(t, export)
			for i, l := range lines {
				if bytes.HasPrefix(l, []byte(`{"type":"passage"`)) {
					// The first number of the embedding becomes bad.
					at := bytes.Index(l, []byte(`"embedding":[`)) + len(`"embedding":[`)
					end := at + bytes.IndexByte(l[at:], ',')
					lines[i] = append(append(append([]byte{}, l[:at]...), bad...), l[end:]...)
				}
			}
			importAgentNDJSON(c, resealAgent(lines), "?as_new=true").wantProblem(t, http.StatusUnprocessableEntity, "invalid_import")
		})
	}
	for _, bad := range []string{"1e39", "NaN", "Inf", "-Infinity", "0x1p3", "1_0"} {
		t.Run("query_"+bad, func(t *testing.T) {
			q := "mode=vector&query_embedding=1," + url.QueryEscape(bad) + ",0"
			for _, path := range []string{"/v1/agents/a/archival/search", "/v1/agents/a/messages/search", "/v1/messages/search"} {
				p := c.do("GET", path+"?"+q, nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
				if len(p.Errors) != 1 || p.Errors[0].Field != "query_embedding" {
					t.Fatalf("%s: %+v", path, p.Errors)
				}
			}
		})
	}
	mustExportAgent(t, c, "a")
	var hits struct{ Data []model.PassageHit }
	c.do("GET", "/v1/agents/a/archival/search?mode=vector&query_embedding=0,0,1", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 1 || hits.Data[0].ID != ok.ID {
		t.Fatalf("search after the refusals: %+v", hits.Data)
	}
}

// wantFieldPrefix is wantField for a field or an element of it (embedding[1]).
func wantFieldPrefix(t *testing.T, res *response, field string) {
	t.Helper()
	p := res.wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	for _, f := range p.Errors {
		if f.Field == field || strings.HasPrefix(f.Field, field+"[") {
			return
		}
	}
	t.Fatalf("want an error naming %s, got %+v", field, p.Errors)
}

// TestEmbeddingWorkerIsFair: one tenant's endpoint that never answers holds
// only its own calls (no more than the worker allows one endpoint), and
// another tenant's texts are embedded while those calls still hang; one
// tenant's long backlog on an endpoint both share does not keep the other's
// text waiting behind it. Both show in the metrics.
func TestEmbeddingWorkerIsFair(t *testing.T) {
	ed := newEdge(t, "http://unused.invalid")
	reg := metrics.New("test", zerolog.Nop())
	c, _ := newEdgeClient(t, ed, func(e *testEmbedding) {
		e.timeout = 10 * time.Minute // the hung calls outlast the test
		e.observer = reg
	})
	reg.WatchStore(c.store)
	ctx := context.Background()
	slow := c.as(mustKey(t, c, "slow", model.ScopeWrite).Key)
	fast := c.as(mustKey(t, c, "fast", model.ScopeWrite).Key)
	big := c.as(mustKey(t, c, "big", model.ScopeWrite).Key)
	small := c.as(mustKey(t, c, "small", model.ScopeWrite).Key)

	// backlog stores n passages of tenant's agent, then points the agent at
	// path: they all fall due at once, ahead of anything stored later.
	backlog := func(cl *client, tenant string, n int, path string) {
		mustCreateAgent(t, cl, map[string]any{"id": "a", "name": "a"})
		for i := range n {
			if _, err := c.store.CreatePassage(ctx, tenant, "a", model.CreatePassage{Content: "memory " + strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		cl.do("PATCH", "/v1/agents/a", map[string]any{"embedding": ed.config(path)}).want(t, http.StatusOK, nil)
	}
	pending := func(cl *client) int {
		n, cursor := 0, ""
		for {
			var page model.Page[model.Passage]
			cl.do("GET", "/v1/agents/a/archival?limit=200"+cursor, nil).want(t, http.StatusOK, &page)
			for _, p := range page.Data {
				if p.EmbeddingState != nil && *p.EmbeddingState == model.EmbeddingPending {
					n++
				}
			}
			if page.NextCursor == nil {
				return n
			}
			cursor = "&cursor=" + url.QueryEscape(*page.NextCursor)
		}
	}

	t.Run("an_endpoint_that_never_answers", func(t *testing.T) {
		backlog(slow, "slow", 100, "/hang")
		waitFor(t, "the hung endpoint's calls", func() bool { return ed.hanging.Load() == 2 })
		mustCreateAgent(t, fast, map[string]any{"id": "a", "name": "a", "embedding": ed.config("/ok/v1/embeddings")})
		for i := range 3 {
			var p model.Passage
			fast.do("POST", "/v1/agents/a/archival", map[string]any{"content": "fact " + strconv.Itoa(i)}).want(t, http.StatusCreated, &p)
			waitPassage(t, fast, "a", p.ID, model.EmbeddingReady)
		}
		if n := ed.hanging.Load(); n != 2 {
			t.Fatalf("%d calls hang now, want the 2 that hung before", n)
		}
		if n := ed.hung.Load(); n != 2 {
			t.Fatalf("the hung endpoint got %d calls, want 2 (its bound)", n)
		}
		if n := pending(slow); n != 100 {
			t.Fatalf("%d of the slow tenant's passages pending, want 100", n)
		}
	})

	t.Run("a_long_backlog_on_a_shared_endpoint", func(t *testing.T) {
		ed.standin.SetDelay(500 * time.Millisecond)
		defer ed.standin.SetDelay(0)
		backlog(big, "big", 640, "/ok/v1/embeddings")
		mustCreateAgent(t, small, map[string]any{"id": "a", "name": "a", "embedding": ed.config("/ok/v1/embeddings")})
		var p model.Passage
		small.do("POST", "/v1/agents/a/archival", map[string]any{"content": "the one fact"}).want(t, http.StatusCreated, &p)
		waitPassage(t, small, "a", p.ID, model.EmbeddingReady)
		if n := pending(big); n == 0 {
			t.Fatal("the small tenant's passage waited for the whole backlog")
		}
	})

	// The queue and the calls, by endpoint host only.
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ed.URL)
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
				if l.GetName() == "endpoint" && l.GetValue() != u.Host {
					t.Errorf("%s labelled endpoint=%q, want the host %q", f.GetName(), l.GetValue(), u.Host)
				}
			}
			got[key] = metricValue(m)
		}
	}
	for key, atLeast := range map[string]float64{
		"logbook_embedding_texts_total,outcome=ready":                     4,
		"logbook_embedding_texts_total,outcome=deferred":                  1,
		"logbook_embedding_calls_total,endpoint=" + u.Host + ",result=ok": 2,
		"logbook_embedding_call_duration_seconds,endpoint=" + u.Host:      2,
		"logbook_embedding_pending,kind=passage":                          100,
		"logbook_embedding_pending,kind=message":                          0,
		"logbook_embedding_texts_total,outcome=failed":                    0,
		"logbook_embedding_texts_total,outcome=retry":                     0,
	} {
		if v, ok := got[key]; !ok || v < atLeast {
			t.Errorf("%s = %v (%v), want at least %v", key, v, ok, atLeast)
		}
	}
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}
