package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// TestSessionAndPassageExpiry covers expires_at: set on create (and by PATCH on
// a session), hidden from reads once past, swept by POST /v1/admin/purge with
// expired.
func TestSessionAndPassageExpiry(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	w, admin := adminClients(t, c)
	// Long enough for the writes below to land before it, under the race
	// detector on a loaded machine too; the test then waits until it passed.
	soonAt := time.Now().Add(2 * time.Second)
	soon := soonAt.UTC().Format(time.RFC3339Nano)
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)

	mustCreateSession(t, w, map[string]any{"id": "ttl-soon", "expires_at": soon})
	keep := mustCreateSession(t, w, map[string]any{"id": "ttl-later", "expires_at": later})
	mustCreateSession(t, w, map[string]any{"id": "ttl-none"})
	patched := mustCreateSession(t, w, map[string]any{"id": "ttl-patched"})
	mustAppend(t, w, "ttl-soon", map[string]any{"role": "user", "content": "hi"})
	if keep.ExpiresAt == nil || keep.ExpiresAt.Std().Format(time.RFC3339) != later[:19]+"Z" {
		t.Errorf("create: expires_at = %v, want %s", keep.ExpiresAt, later)
	}

	var got model.Session
	w.do("PATCH", "/v1/sessions/"+patched.ID, map[string]any{"expires_at": soon}).want(t, http.StatusOK, &got)
	if got.ExpiresAt == nil {
		t.Fatalf("PATCH did not set expires_at: %+v", got)
	}
	w.do("PATCH", "/v1/sessions/ttl-later", map[string]any{"expires_at": nil}).want(t, http.StatusOK, &got)
	if got.ExpiresAt != nil {
		t.Errorf("PATCH null: expires_at = %v, want cleared", *got.ExpiresAt)
	}
	w.do("PATCH", "/v1/sessions/ttl-later", map[string]any{"expires_at": later}).want(t, http.StatusOK, &got)

	mustCreateAgent(t, w, map[string]any{"id": "ttl-agent", "name": "a"})
	var short, long model.Passage
	w.do("POST", "/v1/agents/ttl-agent/archival", map[string]any{"content": "short lived zebra", "expires_at": soon}).
		want(t, http.StatusCreated, &short)
	w.do("POST", "/v1/agents/ttl-agent/archival", map[string]any{"content": "long lived zebra", "expires_at": later}).
		want(t, http.StatusCreated, &long)
	if short.ExpiresAt == nil || long.ExpiresAt == nil {
		t.Fatalf("passage expires_at not returned: %+v %+v", short, long)
	}

	t.Run("bad_input", func(t *testing.T) {
		for _, tc := range []struct{ method, path string }{
			{"POST", "/v1/sessions"},
			{"PATCH", "/v1/sessions/ttl-none"},
			{"POST", "/v1/agents/ttl-agent/archival"},
		} {
			body := map[string]any{"expires_at": "next tuesday"}
			if strings.Contains(tc.path, "archival") {
				body["content"] = "x"
			}
			p := w.do(tc.method, tc.path, body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) != 1 || p.Errors[0].Field != "expires_at" {
				t.Errorf("%s %s: %+v, want one error naming expires_at", tc.method, tc.path, p.Errors)
			}
		}
		p := admin.do("POST", "/v1/admin/purge", map[string]any{"expired": true, "status": "completed"}).
			wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != "status" {
			t.Errorf("expired with status: %+v", p.Errors)
		}
		p = admin.do("POST", "/v1/admin/purge", map[string]any{}).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 2 {
			t.Errorf("empty purge: %+v", p.Errors)
		}
	})

	time.Sleep(time.Until(soonAt) + 100*time.Millisecond)

	t.Run("hidden_once_expired", func(t *testing.T) {
		w.do("GET", "/v1/sessions/ttl-soon", nil).wantProblem(t, http.StatusNotFound, "not_found")
		w.do("GET", "/v1/sessions/ttl-patched", nil).wantProblem(t, http.StatusNotFound, "not_found")
		w.do("PATCH", "/v1/sessions/ttl-soon", map[string]any{"title": "x"}).wantProblem(t, http.StatusNotFound, "not_found")
		var ids []string
		for _, s := range listAll[model.Session](t, w, "/v1/sessions", 1) {
			ids = append(ids, s.ID)
		}
		if got := strings.Join(ids, " "); got != "ttl-none ttl-later" {
			t.Errorf("list: %q", got)
		}
		w.do("GET", "/v1/agents/ttl-agent/archival/"+short.ID, nil).wantProblem(t, http.StatusNotFound, "not_found")
		w.do("GET", "/v1/agents/ttl-agent/archival/"+long.ID, nil).want(t, http.StatusOK, nil)
		if ps := listAll[model.Passage](t, w, "/v1/agents/ttl-agent/archival", 1); len(ps) != 1 || ps[0].ID != long.ID {
			t.Errorf("passage list: %+v", ps)
		}
		var hits struct{ Data []model.PassageHit }
		w.do("GET", "/v1/agents/ttl-agent/archival/search?q=zebra", nil).want(t, http.StatusOK, &hits)
		if len(hits.Data) != 1 || hits.Data[0].ID != long.ID {
			t.Errorf("search: %+v", hits.Data)
		}
	})

	t.Run("purge_expired", func(t *testing.T) {
		var dry, res model.PurgeResult
		admin.do("POST", "/v1/admin/purge", map[string]any{"expired": true, "dry_run": true}).want(t, http.StatusOK, &dry)
		if want := (model.PurgeResult{DryRun: true, Sessions: 2, Messages: 1, Passages: 1}); dry != want {
			t.Errorf("dry run = %+v, want %+v", dry, want)
		}
		admin.do("POST", "/v1/admin/purge", map[string]any{"expired": true}).want(t, http.StatusOK, &res)
		if want := (model.PurgeResult{Sessions: 2, Messages: 1, Passages: 1}); res != want {
			t.Errorf("purge = %+v, want %+v", res, want)
		}
		admin.do("POST", "/v1/admin/purge", map[string]any{"expired": true}).want(t, http.StatusOK, &res)
		if (res != model.PurgeResult{}) {
			t.Errorf("second purge = %+v, want nothing", res)
		}
		w.do("GET", "/v1/sessions/ttl-later", nil).want(t, http.StatusOK, nil)
		w.do("GET", "/v1/sessions/ttl-none", nil).want(t, http.StatusOK, nil)
		w.do("GET", "/v1/agents/ttl-agent/archival/"+long.ID, nil).want(t, http.StatusOK, nil)
	})
}
