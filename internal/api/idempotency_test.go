package api_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Every write route without keys of its own takes an Idempotency-Key: the
// same key and request again is answered as the first was (status, body,
// Idempotent-Replayed: true) and applies nothing; the same key with another
// body is 409 idempotency_conflict naming the header. Among them the writes
// whose fences would refuse their own retry: a rewind with a tail and
// expected_last_seq, a checkpoint's PUT and PATCH, a detach.
func TestIdempotencyKeyOnEveryWrite(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s", "agent_id": "a1"})
	for _, text := range []string{"one", "two", "three"} {
		mustAppend(t, c, "s", userMsg(text))
	}
	c.do("PUT", "/v1/sessions/s/checkpoint", `{"iteration":1,"state":{"step":1}}`).want(t, http.StatusCreated, nil)
	mustCreateAgent(t, c, map[string]any{"id": "a1", "name": "A"})
	mustCreateAgent(t, c, map[string]any{"id": "a2", "name": "B"})
	c.do("PUT", "/v1/agents/a1/blocks/human", `{"value":"name: Ada"}`).want(t, http.StatusCreated, nil)
	c.do("PUT", "/v1/agents/a2/blocks/shared", `{"value":"team notes"}`).want(t, http.StatusCreated, nil)
	export := mustExport(t, c, "s")
	agentExport := mustExportAgent(t, c, "a2")

	type call struct {
		method, path, body, contentType string
	}
	cases := []struct {
		name        string
		first, alt  call
		want        int
		afterReplay func(t *testing.T)
	}{
		{"create_session", call{"POST", "/v1/sessions", `{"title":"t"}`, ""}, call{"POST", "/v1/sessions", `{"title":"u"}`, ""}, 201, nil},
		{"fork", call{"POST", "/v1/sessions/s/fork", `{"at_seq":1}`, ""}, call{"POST", "/v1/sessions/s/fork", `{"at_seq":2}`, ""}, 201, nil},
		{"rewind_with_tail", call{"POST", "/v1/sessions/s/rewind", `{"to_seq":2,"expected_last_seq":3,"messages":[{"role":"user","content":"instead"}]}`, ""},
			call{"POST", "/v1/sessions/s/rewind", `{"to_seq":1,"expected_last_seq":3}`, ""}, 200, func(t *testing.T) {
				if s := mustGetSession(t, c, "s"); s.LastSeq != 3 || s.MessageCount != 3 {
					t.Errorf("after a replayed rewind: last_seq %d, %d messages; want 3, 3", s.LastSeq, s.MessageCount)
				}
			}},
		{"repair", call{"POST", "/v1/sessions/s/repair", `{"expected_last_seq":3}`, ""}, call{"POST", "/v1/sessions/s/repair", `{}`, ""}, 200, nil},
		{"compaction", call{"POST", "/v1/sessions/s/compactions", `{"through_seq":1,"summary":"sum"}`, ""},
			call{"POST", "/v1/sessions/s/compactions", `{"through_seq":1,"summary":"other"}`, ""}, 201, nil},
		{"put_checkpoint", call{"PUT", "/v1/sessions/s/checkpoint", `{"iteration":2,"state":{"step":2}}`, ""},
			call{"PUT", "/v1/sessions/s/checkpoint", `{"iteration":2,"state":{"step":3}}`, ""}, 201, nil},
		{"patch_checkpoint", call{"PATCH", "/v1/sessions/s/checkpoint", `{"iteration":3,"state_patch":{"step":3}}`, ""},
			call{"PATCH", "/v1/sessions/s/checkpoint", `{"iteration":4,"state_patch":{"step":4}}`, ""}, 201, nil},
		{"create_agent", call{"POST", "/v1/agents", `{"name":"n"}`, ""}, call{"POST", "/v1/agents", `{"name":"m"}`, ""}, 201, nil},
		{"block_append", call{"POST", "/v1/agents/a1/blocks/human/append", `{"content":"likes tea"}`, ""},
			call{"POST", "/v1/agents/a1/blocks/human/append", `{"content":"likes coffee"}`, ""}, 200, func(t *testing.T) {
				var b model.Block
				c.do("GET", "/v1/agents/a1/blocks/human", nil).want(t, http.StatusOK, &b)
				if strings.Count(b.Value, "likes tea") != 1 {
					t.Errorf("after a replayed append the block holds %q", b.Value)
				}
			}},
		{"block_replace", call{"POST", "/v1/agents/a1/blocks/human/replace", `{"old":"tea","new":"green tea"}`, ""},
			call{"POST", "/v1/agents/a1/blocks/human/replace", `{"old":"tea","new":"black tea"}`, ""}, 200, nil},
		{"attach", call{"POST", "/v1/agents/a1/blocks/attach", `{"agent_id":"a2","label":"shared"}`, ""},
			call{"POST", "/v1/agents/a1/blocks/attach", `{"agent_id":"a2","label":"shared","as":"notes"}`, ""}, 201, nil},
		{"detach", call{"POST", "/v1/agents/a1/blocks/shared/detach", ``, ""}, call{"POST", "/v1/agents/a1/blocks/human/detach", ``, ""}, 204, nil},
		{"passage", call{"POST", "/v1/agents/a1/archival", `{"content":"a fact"}`, ""},
			call{"POST", "/v1/agents/a1/archival", `{"content":"another fact"}`, ""}, 201, nil},
		{"tool", call{"POST", "/v1/agents/a1/tools/core_memory_append", `{"label":"human","content":"has a cat"}`, ""},
			call{"POST", "/v1/agents/a1/tools/core_memory_append", `{"label":"human","content":"has a dog"}`, ""}, 200, nil},
		{"file", call{"POST", "/v1/files", "\x89PNG\r\n\x1a\nkeyed", "image/png"}, call{"POST", "/v1/files", "\x89PNG\r\n\x1a\nother", "image/png"}, 201, nil},
		{"import_session", call{"POST", "/v1/sessions/import?as_new=true", string(export), "application/x-ndjson"},
			call{"POST", "/v1/sessions/import", string(export), "application/x-ndjson"}, 201, nil},
		{"import_agent", call{"POST", "/v1/agents/import?as_new=true", string(agentExport), "application/x-ndjson"},
			call{"POST", "/v1/agents/import", string(agentExport), "application/x-ndjson"}, 201, nil},
		{"purge", call{"POST", "/v1/admin/purge", `{"status":"completed","older_than":"2020-01-01T00:00:00Z"}`, ""},
			call{"POST", "/v1/admin/purge", `{"status":"archived","older_than":"2020-01-01T00:00:00Z"}`, ""}, 200, nil},
	}
	send := func(k call, key string) *response {
		headers := []string{"Idempotency-Key", key}
		if k.contentType != "" {
			headers = append(headers, "Content-Type", k.contentType)
		}
		var body any
		if k.body != "" {
			body = k.body
		}
		return c.do(k.method, k.path, body, headers...)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "key-" + tc.name
			first := send(tc.first, key).want(t, tc.want, nil)
			if first.Header.Get("Idempotent-Replayed") != "" {
				t.Errorf("the first answer says Idempotent-Replayed")
			}
			again := send(tc.first, key).want(t, tc.want, nil)
			if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) ||
				again.Header.Get("Location") != first.Header.Get("Location") || again.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
				t.Errorf("the retry: %d %v %s\nwant the first answer: %d %v %s", again.Status, again.Header, again.Body, first.Status, first.Header, first.Body)
			}
			if tc.afterReplay != nil {
				tc.afterReplay(t)
			}
			p := send(tc.alt, key).wantProblem(t, http.StatusConflict, "idempotency_conflict")
			if len(p.Errors) != 1 || p.Errors[0].Field != "Idempotency-Key" {
				t.Errorf("errors %+v, want one naming Idempotency-Key", p.Errors)
			}
		})
	}
}

// A key is scoped to its tenant and, for a key bound to a user, to that user:
// the same key elsewhere is another key. On another route it is a conflict.
func TestIdempotencyKeyScopes(t *testing.T) {
	c := newClient(t)
	a := c.as(mustKey(t, c, "a", model.ScopeAdmin).Key)
	b := c.as(mustKey(t, c, "b", model.ScopeWrite).Key)
	var userKey model.NewAPIKey
	a.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "user_id": "u1"}).want(t, http.StatusCreated, &userKey)
	u := c.as(userKey.Key)

	var sa, sb, su model.Session
	a.do("POST", "/v1/sessions", `{"title":"a"}`, "Idempotency-Key", "same").want(t, http.StatusCreated, &sa)
	b.do("POST", "/v1/sessions", `{"title":"a"}`, "Idempotency-Key", "same").want(t, http.StatusCreated, &sb)
	u.do("POST", "/v1/sessions", `{"title":"a"}`, "Idempotency-Key", "same").want(t, http.StatusCreated, &su)
	if sa.ID == sb.ID || sa.ID == su.ID || su.UserID == nil || *su.UserID != "u1" {
		t.Errorf("one key in three scopes made %s, %s, %s (user %v): want three sessions", sa.ID, sb.ID, su.ID, su.UserID)
	}
	p := a.do("POST", "/v1/agents", `{"title":"a"}`, "Idempotency-Key", "same").wantProblem(t, http.StatusConflict, "idempotency_conflict")
	if !strings.Contains(p.Detail, "POST /v1/sessions") {
		t.Errorf("the conflict %q does not name the route the key was used on", p.Detail)
	}
}

// The header's rule: at most 255 printable ASCII characters, on every route
// that takes it, appends included.
func TestIdempotencyKeyRule(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	for _, key := range []string{strings.Repeat("k", 256), "tab\there", "caf\u00e9"} {
		for _, path := range []string{"/v1/sessions", "/v1/sessions/s/messages", "/v1/sessions/s/rewind"} {
			p := c.do("POST", path, `{"role":"user","to_seq":0}`, "Idempotency-Key", key).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) != 1 || p.Errors[0].Field != "Idempotency-Key" {
				t.Errorf("POST %s with key %q: errors %+v, want one naming Idempotency-Key", path, key, p.Errors)
			}
		}
	}
	c.do("POST", "/v1/sessions", `{}`, "Idempotency-Key", strings.Repeat("k", 255)).want(t, http.StatusCreated, nil)
}

// A new API key's secret is kept nowhere, so its keyed retry is told the key
// was made (idempotency_applied), never given a second key. A write that
// stores nothing (a search) runs again.
func TestIdempotencyKeyAnswersNotKept(t *testing.T) {
	c := newClient(t)
	admin := c.as(mustKey(t, c, "t", model.ScopeAdmin).Key)
	admin.do("POST", "/v1/admin/keys", `{"scope":"read","name":"r"}`, "Idempotency-Key", "k1").want(t, http.StatusCreated, nil)
	admin.do("POST", "/v1/admin/keys", `{"scope":"read","name":"r"}`, "Idempotency-Key", "k1").
		wantProblem(t, http.StatusConflict, "idempotency_applied")
	var keys model.Page[model.APIKey]
	admin.do("GET", "/v1/admin/keys", nil).want(t, http.StatusOK, &keys)
	if n := len(keys.Data); n != 2 {
		t.Errorf("%d keys, want 2 (the admin's and one made by the keyed request)", n)
	}

	mustCreateAgent(t, admin, map[string]any{"id": "a", "name": "A"})
	for range 2 {
		r := admin.do("POST", "/v1/agents/a/archival/search", `{"q":"x"}`, "Idempotency-Key", "k2").want(t, http.StatusOK, nil)
		if r.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("a search was replayed")
		}
	}
}

// The key commits with the write it answers: a server that dies right after
// the commit, before the answer, leaves the key applied, and the retry is
// told so (idempotency_applied) instead of applying the rewind twice.
func TestIdempotencyKeySurvivesALostAnswer(t *testing.T) {
	faults, err := repo.NewFaults(1, repo.FaultRule{Point: repo.PointCommit, Kind: repo.FaultCrashAfterCommit, Rate: 1, Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	var c *client
	faults.Without(func() {
		c = newClient(t, withFaults(faults))
		mustCreateSession(t, c, map[string]any{"id": "s"})
		mustAppend(t, c, "s", userMsg("one"))
		mustAppend(t, c, "s", userMsg("two"))
	})
	rewind := `{"to_seq":1,"expected_last_seq":2,"messages":[{"role":"user","content":"again"},{"role":"user","content":"and again"}]}`
	c.do("POST", "/v1/sessions/s/rewind", rewind, "Idempotency-Key", "r1").wantProblem(t, http.StatusServiceUnavailable, "storage_unavailable")
	c.do("POST", "/v1/sessions/s/rewind", rewind, "Idempotency-Key", "r1").wantProblem(t, http.StatusConflict, "idempotency_applied")
	if s := mustGetSession(t, c, "s"); s.LastSeq != 3 {
		t.Errorf("last_seq %d, want 3: the rewind applied once", s.LastSeq)
	}
}

// At the store: a claim commits with its write, or not at all; a second
// claim of the key, while the first's record lives, fails and takes its
// write with it; an expired record is claimed anew.
func TestIdempotencyClaimCommitsWithItsWrite(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	k := model.IdempotencyKey{Tenant: model.DefaultTenant, Key: "k"}
	claim := func(fp string, since model.Time) (context.Context, *repo.IdempotencyClaim) {
		cl := repo.NewIdempotencyClaim(k, "POST /v1/sessions", since, func() []byte { return []byte(fp) })
		return repo.WithIdempotencyClaim(ctx, cl), cl
	}
	since := model.Now() - 60_000
	c1, cl1 := claim("one", since)
	if _, err := c.store.CreateSession(c1, k.Tenant, model.CreateSession{ID: "a"}); err != nil || !cl1.Claimed() {
		t.Fatalf("the first claim: %v, claimed %v", err, cl1.Claimed())
	}
	rec, found, err := c.store.IdempotentRequest(ctx, k, since)
	if err != nil || !found || string(rec.Fingerprint) != "one" || rec.Answer != nil {
		t.Fatalf("the record: %+v %v %v", rec, found, err)
	}
	c2, cl2 := claim("two", since)
	if _, err := c.store.CreateSession(c2, k.Tenant, model.CreateSession{ID: "b"}); model.AsError(err).Code != "idempotency_in_progress" || cl2.Claimed() {
		t.Errorf("a second claim of a live key: %v, want idempotency_in_progress", err)
	}
	c.do("GET", "/v1/sessions/b", nil).wantProblem(t, http.StatusNotFound, "not_found")

	// A write that fails after its claim takes the claim with it.
	k3 := model.IdempotencyKey{Tenant: model.DefaultTenant, Key: "k3"}
	cl3 := repo.NewIdempotencyClaim(k3, "POST /v1/sessions", since, func() []byte { return []byte("three") })
	if _, err := c.store.CreateSession(repo.WithIdempotencyClaim(ctx, cl3), k.Tenant, model.CreateSession{ID: "a"}); model.AsError(err).Code != "conflict" {
		t.Fatalf("a duplicate session: %v", err)
	}
	if _, found, _ := c.store.IdempotentRequest(ctx, k3, since); found {
		t.Errorf("a failed write left its key's record")
	}

	if err := c.store.SaveIdempotentAnswer(ctx, k, []byte("one"), model.IdempotentAnswer{Status: 201, Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if rec, _, _ := c.store.IdempotentRequest(ctx, k, since); rec.Answer == nil || rec.Answer.Status != 201 {
		t.Errorf("the answer was not stored: %+v", rec)
	}
	// Past its time to live the record is gone to look-ups, and claimed anew.
	later := model.Now() + 1
	if _, found, _ := c.store.IdempotentRequest(ctx, k, later); found {
		t.Errorf("an expired record is still found")
	}
	c4, cl4 := claim("four", later)
	if _, err := c.store.CreateSession(c4, k.Tenant, model.CreateSession{ID: "c"}); err != nil || !cl4.Claimed() {
		t.Fatalf("claiming an expired key: %v", err)
	}
	n, err := c.store.ExpireIdempotencyKeys(ctx, model.Now()+1)
	if err != nil || n != 1 {
		t.Errorf("the sweep deleted %d keys (%v), want 1", n, err)
	}
}

// A stream's Idempotency-Key names each of its lines: the same stream sent
// again under the same key appends nothing new, and a line that differs is
// refused.
func TestStreamIdempotencyKey(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	body := `{"role":"user","content":"one"}` + "\n\n" + `{"role":"assistant","content":"two"}` + "\n"
	stream := func(body, key string) []string {
		req, _ := http.NewRequest("POST", c.base+"/v1/sessions/s/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Idempotency-Key", key)
		res, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out bytes.Buffer
		_, _ = out.ReadFrom(res.Body)
		checkResponse(t, req, &response{Status: res.StatusCode, Header: res.Header, Body: out.Bytes()})
		return strings.Split(strings.TrimSpace(out.String()), "\n")
	}
	first := stream(body, "st")
	again := stream(body, "st")
	if len(first) != 2 || strings.Join(first, "\n") != strings.Join(again, "\n") {
		t.Errorf("the resent stream answered\n%s\nwant\n%s", again, first)
	}
	if s := mustGetSession(t, c, "s"); s.LastSeq != 2 {
		t.Errorf("last_seq %d, want 2", s.LastSeq)
	}
	changed := stream(`{"role":"user","content":"one"}`+"\n"+`{"role":"assistant","content":"changed"}`+"\n", "st")
	if len(changed) != 2 || !strings.Contains(changed[1], `"code":"idempotency_conflict"`) {
		t.Errorf("a changed line under the same key: %s", changed)
	}
	if s := mustGetSession(t, c, "s"); s.LastSeq != 2 {
		t.Errorf("last_seq %d, want 2", s.LastSeq)
	}
}
