package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/rs/zerolog"
)

// checkpointBody is a checkpoint PUT of exactly n bytes.
func checkpointBody(iteration, n int) string {
	head := `{"iteration":` + string(rune('0'+iteration)) + `,"state":{"k":"`
	return head + strings.Repeat("x", n-len(head)-3) + `"}}`
}

// What large bodies hold is bounded per tenant: while one tenant's slow
// upload holds its half of --body-memory-bytes, its next large body is
// refused at once (429, Retry-After), another tenant's is served, and once
// the upload is read the tenant may send again; small bodies never count.
// (The budget lives in the HTTP layer: one backend serves for both.)
func TestBodyMemoryIsBoundedPerTenant(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "logbook.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keys := map[string]string{}
	for _, tenant := range []string{"a", "b"} {
		k, err := st.CreateAPIKey(ctx, tenant, model.CreateAPIKey{Scope: model.ScopeWrite, Name: tenant})
		if err != nil {
			t.Fatal(err)
		}
		keys[tenant] = k.Key
		if _, err := st.CreateSession(ctx, tenant, model.CreateSession{ID: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	srv := New(Config{Store: st, Log: zerolog.Nop(), MaxBodyBytes: 64 << 10, BodyMemoryBytes: 8 << 20})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	send := func(tenant string, body io.Reader, n int) (*http.Response, error) {
		req, _ := http.NewRequest("PUT", ts.URL+"/v1/sessions/s/checkpoint", body)
		req.ContentLength = int64(n)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+keys[tenant])
		return ts.Client().Do(req)
	}
	status := func(res *http.Response, err error) (int, string) {
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	const size = 3 << 20 // past a tenant's half (4 MiB) once two are in flight
	slow := checkpointBody(5, size)
	pr, pw := io.Pipe()
	done := make(chan *http.Response, 1)
	go func() {
		res, err := send("a", pr, size)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	if _, err := pw.Write([]byte(slow[:1<<20])); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); srv.bodies.inUse() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow upload never took its share")
		}
	}

	res, err := send("a", strings.NewReader(checkpointBody(4, size)), size)
	code, body := status(res, err)
	var p struct{ Code string }
	_ = json.Unmarshal([]byte(body), &p)
	if code != http.StatusTooManyRequests || p.Code != "rate_limited" || res.Header.Get("Retry-After") == "" {
		t.Errorf("a second large body of the same tenant: %d %s (Retry-After %q), want 429 rate_limited", code, body, res.Header.Get("Retry-After"))
	}
	if code, body := status(send("a", strings.NewReader(checkpointBody(1, 1000)), 1000)); code != http.StatusCreated {
		t.Errorf("a small body of the same tenant: %d %s, want 201", code, body)
	}
	if code, body := status(send("b", strings.NewReader(checkpointBody(1, size)), size)); code != http.StatusCreated {
		t.Errorf("another tenant's large body: %d %s, want 201", code, body)
	}

	if _, err := pw.Write([]byte(slow[1<<20:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if code, body := status(<-done, nil); code != http.StatusCreated {
		t.Fatalf("the slow upload: %d %s", code, body)
	}
	if n := srv.bodies.inUse(); n != 0 {
		t.Errorf("%d bytes still held after every body was read", n)
	}
	if code, body := status(send("a", strings.NewReader(checkpointBody(6, size)), size)); code != http.StatusCreated {
		t.Errorf("the tenant's large body once its upload was read: %d %s, want 201", code, body)
	}
}

// Every route the body-limit table names is a route the router serves: a
// pattern spelt wrong would leave its route at --max-body-bytes unnoticed.
func TestBodyLimitsNameRoutes(t *testing.T) {
	served := map[routeKey]bool{}
	err := chi.Walk(New(Config{}).router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[routeKey{method, route}] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range bodyLimits {
		if !served[k] {
			t.Errorf("bodyLimits names %s %s, which no route serves", k.method, k.pattern)
		}
	}
}
