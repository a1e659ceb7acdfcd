package api_test

import (
	"bytes"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

func TestOpenModeEndsWithTheFirstKey(t *testing.T) {
	var logs syncBuffer
	c := newClient(t, withLog(&logs))
	c.do("GET", "/v1/sessions", nil).want(t, http.StatusOK, nil)

	var k model.NewAPIKey
	res := c.do("POST", "/v1/admin/keys", map[string]any{"scope": "admin", "name": "ops"}).want(t, http.StatusCreated, &k)
	if !strings.HasPrefix(k.Key, "lb_") || k.Tenant != model.DefaultTenant || k.Scope != model.ScopeAdmin {
		t.Fatalf("new key %+v", k)
	}
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Error("a body holding a key must not be cached")
	}
	c.do("GET", "/v1/sessions", nil).wantProblem(t, http.StatusUnauthorized, "unauthorized")
	c.as(k.Key).do("GET", "/v1/sessions", nil).want(t, http.StatusOK, nil)

	// Revoking the last key does not reopen the server: open mode only ever ends
	// while the process runs, or a revoked admin key would hand everything (a
	// backup of every tenant included) to anyone without a key.
	c.as(k.Key).do("DELETE", "/v1/admin/keys/"+k.ID, nil).want(t, http.StatusOK, nil)
	c.as(k.Key).do("GET", "/v1/sessions", nil).wantProblem(t, http.StatusUnauthorized, "unauthorized")
	time.Sleep(1100 * time.Millisecond) // past the cached answer
	for _, probe := range []struct{ method, path string }{
		{"GET", "/v1/sessions"}, {"POST", "/v1/admin/keys"}, {"POST", "/v1/admin/backup"},
	} {
		c.do(probe.method, probe.path, map[string]any{"scope": "admin"}).wantProblem(t, http.StatusUnauthorized, "unauthorized")
	}

	secret := k.Key[len("lb_0123456789abcdef_"):]
	if strings.Contains(logs.String(), secret) || !strings.Contains(logs.String(), "/v1/admin/keys") {
		t.Errorf("the key's secret is in the log (or nothing was logged):\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer that the server's goroutines can write to while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A key made in another process (the CLI, straight in the database) ends open
// mode too, within the second that the answer is cached.
func TestOpenModeEndsWithAKeyFromTheCLI(t *testing.T) {
	c := newClient(t)
	c.do("GET", "/v1/sessions", nil).want(t, http.StatusOK, nil)
	k := mustKey(t, c, "acme", model.ScopeAdmin)
	deadline := time.Now().Add(3 * time.Second)
	for c.do("GET", "/v1/sessions", nil).Status != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("open mode still on 3s after a key was made")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := c.store.RevokeAPIKey(t.Context(), "", k.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	c.do("GET", "/v1/sessions", nil).wantProblem(t, http.StatusUnauthorized, "unauthorized")
}

func TestNoOpenModeOffLoopback(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	res := c.do("GET", "/v1/sessions", nil)
	res.wantProblem(t, http.StatusUnauthorized, "unauthorized")
	if res.Header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	c.do("GET", "/healthz", nil).want(t, http.StatusOK, nil)
}

// A bad key of any kind gets the same answer, so answers reveal nothing about
// which keys exist.
func TestBadKeysAreIndistinguishable(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	good := mustKey(t, c, "a", model.ScopeWrite)
	revoked := mustKey(t, c, "a", model.ScopeWrite)
	c.as(good.Key).do("GET", "/v1/sessions", nil).want(t, http.StatusOK, nil)
	if _, err := c.store.RevokeAPIKey(t.Context(), "", revoked.ID); err != nil {
		t.Fatal(err)
	}
	wrongSecret := good.Key[:len(good.Key)-4] + "0000"
	if wrongSecret == good.Key {
		wrongSecret = good.Key[:len(good.Key)-4] + "1111"
	}
	var details []string
	for name, h := range map[string]string{
		"no_key":       "",
		"not_bearer":   "Basic " + good.Key,
		"malformed":    "Bearer nope",
		"unknown_id":   "Bearer lb_0123456789abcdef_" + strings.Repeat("a", 64),
		"wrong_secret": "Bearer " + wrongSecret,
		"revoked":      "Bearer " + revoked.Key,
	} {
		res := c.do("GET", "/v1/sessions", nil, "Authorization", h)
		p := res.wantProblem(t, http.StatusUnauthorized, "unauthorized")
		details = append(details, p.Detail)
		_ = name
	}
	sort.Strings(details)
	if details[0] != details[len(details)-1] {
		t.Errorf("401 details differ: %q", details)
	}
}

func TestScopes(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	keys := map[model.Scope]string{}
	for _, s := range []model.Scope{model.ScopeRead, model.ScopeWrite, model.ScopeAdmin} {
		keys[s] = mustKey(t, c, "a", s).Key
	}
	ses := mustCreateSession(t, c.as(keys[model.ScopeWrite]), nil)
	cases := []struct {
		method, path string
		body         any
		need         model.Scope
	}{
		{"GET", "/v1/sessions", nil, model.ScopeRead},
		{"GET", "/v1/sessions/" + ses.ID + "/messages", nil, model.ScopeRead},
		{"POST", "/v1/sessions", map[string]any{}, model.ScopeWrite},
		{"POST", "/v1/sessions/" + ses.ID + "/messages", userMsg("x"), model.ScopeWrite},
		{"PATCH", "/v1/sessions/" + ses.ID, map[string]any{"title": "t"}, model.ScopeWrite},
		{"GET", "/v1/admin/keys", nil, model.ScopeAdmin},
		{"POST", "/v1/admin/keys", map[string]any{"scope": "read"}, model.ScopeAdmin},
	}
	for _, tc := range cases {
		for have, key := range keys {
			name := strings.ReplaceAll(tc.method+tc.path, "/", "_") + "_as_" + string(have)
			t.Run(name, func(t *testing.T) {
				res := c.as(key).do(tc.method, tc.path, tc.body)
				if have.Allows(tc.need) {
					if res.Status >= 300 {
						t.Fatalf("status %d: %s", res.Status, res.Body)
					}
					return
				}
				res.wantProblem(t, http.StatusForbidden, "forbidden")
			})
		}
	}
}

// TestCrossTenantEveryRoute walks every operation in openapi.yaml with tenant B's
// admin key against tenant A's objects: each must answer as if they did not exist.
// A route added to the spec without an entry here fails the test, so a new route
// cannot forget its scoping.
func TestCrossTenantEveryRoute(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	a := c.as(mustKey(t, c, "tenant-a", model.ScopeAdmin).Key)
	b := c.as(mustKey(t, c, "tenant-b", model.ScopeAdmin).Key)
	aSes := mustCreateSession(t, a, map[string]any{"id": "a-secret-session", "title": "A's", "metadata": map[string]any{"owner": "a"}})
	aMsg := mustAppend(t, a, aSes.ID, userMsg("A's message"))
	putCheckpoint(a, aSes.ID, 1, nil, map[string]any{"note": "A's"}).want(t, http.StatusCreated, nil)
	aKey := mustKey(t, c, "tenant-a", model.ScopeRead)
	aAgent := mustCreateAgent(t, a, map[string]any{"id": "a-agent", "name": "A's agent"})
	a.do("PUT", "/v1/agents/a-agent/blocks/human", map[string]any{"value": "A's human"}).want(t, http.StatusCreated, nil)
	var aPassage model.Passage
	a.do("POST", "/v1/agents/a-agent/archival", map[string]any{"content": "A's passage about zebras"}).want(t, http.StatusCreated, &aPassage)
	mustAppend(t, a, aSes.ID, userMsg("zebras in A's message"))
	aFile := mustUpload(t, a, "image/png", []byte("A's picture"))
	mustPutItem(t, a, "zoo.a/zebra", map[string]any{"value": map[string]any{"owner": "a", "note": "A's zebras"}})
	waitSearchable(t, a)
	var aJob model.Job
	a.do("GET", "/v1/admin/integrity", nil, "Prefer", "respond-async").want(t, http.StatusAccepted, &aJob)
	aEndpoint := &model.EmbeddingConfig{URL: "http://zebras.example/v1/embeddings", Model: "m"}
	if err := c.store.SetTenantEmbedding(t.Context(), "tenant-a", aEndpoint); err != nil {
		t.Fatal(err)
	}
	// Not aSes.ID or the agent id themselves: B may use the same ids in its own namespace.
	aSecrets := []string{aMsg.ID, aKey.ID, aPassage.ID, "A's", `"owner":"a"`, "zebras"}
	// An export of a third tenant's session, for B to import as its own.
	if _, err := c.store.CreateSession(t.Context(), "tenant-x", model.CreateSession{ID: "x-session"}); err != nil {
		t.Fatal(err)
	}
	var xExport bytes.Buffer
	if err := c.store.ExportSession(t.Context(), "tenant-x", "x-session", &xExport); err != nil {
		t.Fatal(err)
	}
	// And of a third tenant's agent.
	if _, err := c.store.CreateAgent(t.Context(), "tenant-x", model.CreateAgent{ID: "x-agent", Name: "x"}); err != nil {
		t.Fatal(err)
	}
	var xAgentExport bytes.Buffer
	if err := c.store.ExportAgent(t.Context(), "tenant-x", "x-agent", &xAgentExport); err != nil {
		t.Fatal(err)
	}
	// And of its items.
	if _, err := c.store.WriteItems(t.Context(), "tenant-x", []model.ItemWrite{{Ref: model.ItemRef{Namespace: []string{"x"}, Key: "k"},
		Put: model.PutItem{Value: model.Object(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	var xItemsExport bytes.Buffer
	if err := c.store.ExportItems(t.Context(), "tenant-x", model.ItemExportFilter{AllUsers: true}, &xItemsExport); err != nil {
		t.Fatal(err)
	}

	const (
		notFound  = "404"   // A's object must not be found
		ownList   = "list"  // 200 with only B's rows
		ownWrite  = "write" // acts on B's own namespace
		forbidden = "403"   // not for a tenant's key at all
		ownFeed   = "feed"  // a live feed of B's own events only
		refused   = "422"   // B's own request, refused for itself (no endpoint is allowed here)
	)
	routes := map[string]struct {
		expect string
		body   any
		query  string
	}{
		"createSession":         {ownWrite, map[string]any{}, ""},
		"listSessions":          {ownList, nil, ""},
		"getSession":            {notFound, nil, ""},
		"updateSession":         {notFound, map[string]any{"title": "hijacked"}, ""},
		"closeSession":          {notFound, nil, ""},
		"appendMessage":         {notFound, userMsg("injected"), ""},
		"appendMessageBatch":    {notFound, map[string]any{"messages": []any{userMsg("injected")}}, ""},
		"listMessages":          {notFound, nil, ""},
		"getMessage":            {notFound, nil, ""},
		"getTenantEmbedding":    {ownList, nil, ""},
		"getWhoAmI":             {ownList, nil, ""},
		"putTenantEmbedding":    {refused, map[string]any{"url": "http://zebras.example/v1/embeddings", "model": "m"}, ""},
		"deleteTenantEmbedding": {ownWrite, nil, ""},
		"getMessageEmbedding":   {notFound, nil, ""},
		"getMessageByClientId":  {notFound, nil, ""},
		"putMessageEmbedding":   {notFound, map[string]any{"embedding": []float32{1, 0}, "embedding_model": "m"}, ""},
		"createAPIKey":          {ownWrite, map[string]any{"scope": "read"}, ""},
		"listAPIKeys":           {ownList, nil, ""},
		"revokeAPIKey":          {notFound, nil, ""},

		"createAgent":         {ownWrite, map[string]any{"name": "B's"}, ""},
		"listAgents":          {ownList, nil, ""},
		"getAgent":            {notFound, nil, ""},
		"updateAgent":         {notFound, map[string]any{"name": "hijacked"}, ""},
		"deleteAgent":         {notFound, nil, ""},
		"listBlocks":          {notFound, nil, ""},
		"getBlock":            {notFound, nil, ""},
		"putBlock":            {notFound, map[string]any{"value": "hijacked"}, ""},
		"deleteBlock":         {notFound, nil, ""},
		"appendBlock":         {notFound, map[string]any{"content": "hijacked"}, ""},
		"replaceBlock":        {notFound, map[string]any{"old": "A's", "new": "B's"}, ""},
		"getBlockHistory":     {notFound, nil, ""},
		"attachBlock":         {notFound, map[string]any{"agent_id": "a-agent", "label": "human", "as": "stolen"}, ""},
		"detachBlock":         {notFound, nil, ""},
		"createPassage":       {notFound, map[string]any{"content": "injected"}, ""},
		"listPassages":        {notFound, nil, ""},
		"getPassage":          {notFound, nil, ""},
		"deletePassage":       {notFound, nil, ""},
		"searchPassages":      {notFound, nil, "?q=zebras"},
		"searchAgentMessages": {notFound, nil, "?q=zebras"},
		"searchMessages":      {ownList, nil, "?q=zebras"},
		"listTools":           {ownList, nil, ""},

		"searchPassagesByBody": {notFound, map[string]any{"mode": "hybrid", "q": "zebras", "query_embedding": []float32{1}}, ""},

		"putCheckpoint":       {notFound, map[string]any{"iteration": 99, "state": map[string]any{}}, ""},
		"patchCheckpoint":     {notFound, map[string]any{"iteration": 99, "state_patch": map[string]any{"x": 1}}, ""},
		"getLatestCheckpoint": {notFound, nil, ""},
		"listCheckpoints":     {notFound, nil, ""},
		"getCheckpoint":       {notFound, nil, ""},
		"createCheckpoint":    {notFound, map[string]any{"client_id": "x", "state": map[string]any{}}, ""},
		"putCheckpointWrites": {notFound, map[string]any{"checkpoint_id": "x", "task_id": "t",
			"writes": []any{map[string]any{"channel": "c", "value": 1}}}, ""},
		"getCheckpointRetention":    {notFound, nil, ""},
		"putCheckpointRetention":    {notFound, map[string]any{"keep": "all"}, ""},
		"deleteCheckpointRetention": {notFound, nil, ""},
		"listAllCheckpoints":        {ownList, nil, ""},
		"resumeSession":             {notFound, nil, ""},
		"forkSession":               {notFound, map[string]any{}, ""},
		"rewindSession":             {notFound, map[string]any{"to_seq": 0}, ""},
		"repairSession":             {notFound, map[string]any{}, ""},
		"createCompaction":          {notFound, map[string]any{"through_seq": 1, "summary": "hijacked"}, ""},
		"listCompactions":           {notFound, nil, ""},
		"getSessionContext":         {notFound, nil, "?max_tokens=100&include=blocks"},
		"streamSessionEvents":       {notFound, nil, "?after_seq=0"},
		"streamEvents":              {ownFeed, nil, "?after=" + url.QueryEscape(feedStart(t, c, "tenant-b"))},
		"getUsage":                  {ownList, nil, "?group_by=session"},
		"runTool":                   {notFound, map[string]any{"label": "human", "content": "hijacked"}, ""},
		"exportSession":             {notFound, nil, ""},
		"uploadFile":                {ownWrite, `{"B's":"own file"}`, ""},
		"downloadFile":              {notFound, nil, ""},
		"importSession":             {ownWrite, xExport.String(), ""},
		"exportAgent":               {notFound, nil, ""},
		"importAgent":               {ownWrite, xAgentExport.String(), ""},

		// B's put goes to a user's space, so that B's shared space stays
		// empty for the other routes, whichever order they run in.
		"getItem":            {notFound, nil, ""},
		"putItem":            {ownWrite, map[string]any{"value": map[string]any{"owner": "b"}}, "?user_id=b-user"},
		"deleteItem":         {notFound, nil, ""},
		"searchItems":        {ownList, map[string]any{"namespace_prefix": []string{"zoo"}}, ""},
		"listItemNamespaces": {ownList, nil, ""},
		"exportItems":        {ownList, nil, "?all_users=true"},
		"importItems":        {ownWrite, xItemsExport.String(), ""},
		"itemBatch": {ownList, map[string]any{"ops": []any{map[string]any{"op": "get", "namespace": []string{"zoo", "a"}, "key": "zebra"},
			map[string]any{"op": "search"}, map[string]any{"op": "list_namespaces"}}}, ""},

		"purgeSessions":  {ownWrite, map[string]any{"status": "completed", "older_than": "2000-01-01T00:00:00Z", "dry_run": true}, ""},
		"checkIntegrity": {ownList, nil, ""},
		"backupDatabase": {forbidden, map[string]any{}, ""},
		"getJob":         {notFound, nil, ""},
	}

	doc, _ := loadSpec(t)
	covered := 0
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		for method, op := range item.Operations() {
			route, ok := routes[op.OperationID]
			if !ok {
				t.Errorf("%s %s (%s) has no cross-tenant case: add one", method, path, op.OperationID)
				continue
			}
			covered++
			filled := strings.NewReplacer("{message_id}", aMsg.ID, "{client_id}", "c1", "{label}", "human", "{passage_id}", aPassage.ID,
				"{tool_name}", "core_memory_append", "{iteration}", "1", "{namespace}", "zoo.a", "{key}", "zebra").Replace(path)
			switch {
			case strings.HasPrefix(path, "/v1/admin/keys/"):
				filled = strings.Replace(filled, "{id}", aKey.ID, 1)
			case strings.HasPrefix(path, "/v1/agents/"):
				filled = strings.Replace(filled, "{id}", aAgent.ID, 1)
			case strings.HasPrefix(path, "/v1/files/"):
				filled = strings.Replace(filled, "{id}", aFile.ID, 1)
			case strings.HasPrefix(path, "/v1/admin/jobs/"):
				filled = strings.Replace(filled, "{id}", aJob.ID, 1)
			default:
				filled = strings.Replace(filled, "{id}", aSes.ID, 1)
			}
			filled += route.query
			t.Run(op.OperationID, func(t *testing.T) {
				if route.expect == ownFeed {
					// From the log's start: A's events would come first.
					f := openFeed(t, b, filled)
					mustCreateSession(t, b, map[string]any{"id": "b-feed"})
					for { // B's own earlier events may come first; none of A's may
						e, ok := f.next(10 * time.Second)
						if !ok {
							t.Fatal("B's feed ended")
						}
						checkEventData(t, e)
						for _, secret := range aSecrets {
							if strings.Contains(e.Data, secret) {
								t.Fatalf("B's feed shows A's %q: %s", secret, e.Data)
							}
						}
						if e.Type == "session.created" && strings.Contains(e.Data, `"b-feed"`) {
							break
						}
					}
					f.close()
					return
				}
				res := b.do(method, filled, route.body)
				switch route.expect {
				case notFound:
					res.wantProblem(t, http.StatusNotFound, "not_found")
				case forbidden:
					res.wantProblem(t, http.StatusForbidden, "forbidden")
				case refused:
					res.wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
				default:
					if res.Status >= 300 {
						t.Fatalf("status %d: %s", res.Status, res.Body)
					}
				}
				if route.expect == ownList {
					for _, secret := range aSecrets {
						if strings.Contains(string(res.Body), secret) {
							t.Errorf("B's list shows A's %q: %s", secret, res.Body)
						}
					}
				}
			})
		}
	}
	if covered != len(routes) {
		t.Errorf("walked %d operations, the table has %d: a route is gone from the spec", covered, len(routes))
	}

	// A's ids are not reserved in B: the same id is B's own session, and a 409
	// here would tell B that A uses it.
	mustCreateSession(t, b, map[string]any{"id": aSes.ID})

	// A's objects are as A left them.
	if got, err := c.store.TenantEmbedding(t.Context(), "tenant-a"); err != nil || got == nil || *got != *aEndpoint {
		t.Errorf("A's embedding endpoint: %+v %v", got, err)
	}
	got := mustGetSession(t, a, aSes.ID)
	if *got.Title != "A's" || got.Status != model.StatusActive || got.MessageCount != 2 {
		t.Errorf("A's session changed: %+v", got)
	}
	c.as(aKey.Key).do("GET", "/v1/sessions/"+aSes.ID, nil).want(t, http.StatusOK, nil)
	var block model.Block
	a.do("GET", "/v1/agents/a-agent/blocks/human", nil).want(t, http.StatusOK, &block)
	if block.Value != "A's human" || block.Version != 1 {
		t.Errorf("A's block changed: %+v", block)
	}
	a.do("GET", "/v1/agents/a-agent/archival/"+aPassage.ID, nil).want(t, http.StatusOK, nil)
	a.do("GET", "/v1/files/"+aFile.ID, nil).want(t, http.StatusOK, nil)
	var item model.Item
	a.do("GET", "/v1/items/zoo.a/zebra", nil).want(t, http.StatusOK, &item)
	if string(item.Value) != `{"note":"A's zebras","owner":"a"}` || item.Version != 1 {
		t.Errorf("A's item changed: %+v", item)
	}
}

// Within one tenant, an agent reaches only its own memory.
func TestAgentsSeeOnlyTheirOwnMemory(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	mustCreateAgent(t, c, map[string]any{"id": "b", "name": "b"})
	var p model.Passage
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "a's private zebra fact"}).want(t, http.StatusCreated, &p)
	c.do("PUT", "/v1/agents/a/blocks/human", map[string]any{"value": "a's"}).want(t, http.StatusCreated, nil)
	c.do("GET", "/v1/agents/b/archival/"+p.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("DELETE", "/v1/agents/b/archival/"+p.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
	c.do("GET", "/v1/agents/b/blocks/human", nil).wantProblem(t, http.StatusNotFound, "not_found")
	var hits struct{ Data []model.PassageHit }
	c.do("GET", "/v1/agents/b/archival/search?q=zebra", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 0 {
		t.Errorf("b found a's passage: %+v", hits.Data)
	}
	var res model.ToolResult
	c.do("POST", "/v1/agents/b/tools/archival_memory_search", map[string]any{"query": "zebra"}).want(t, http.StatusOK, &res)
	if res.Result != "No results found." {
		t.Errorf("b's tool found %q", res.Result)
	}
}

func TestRateLimitIsPerTenant(t *testing.T) {
	c := newClient(t, withoutOpenMode(), withRateLimit(5))
	a := c.as(mustKey(t, c, "a", model.ScopeRead).Key)
	b := c.as(mustKey(t, c, "b", model.ScopeRead).Key)
	var limited *response
	for range 20 {
		if res := a.do("GET", "/v1/sessions", nil); res.Status == http.StatusTooManyRequests {
			limited = res
			break
		}
	}
	if limited == nil {
		t.Fatal("20 requests in a row never hit a limit of 5 per second")
	}
	limited.wantProblem(t, http.StatusTooManyRequests, "rate_limited")
	if limited.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	b.do("GET", "/v1/sessions", nil).want(t, http.StatusOK, nil)
}
