package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/sqlite"
	"github.com/rs/zerolog"
)

// A keyed request that comes while another with its key is being served is
// answered 409 idempotency_in_progress at once and runs nothing; once the
// first is answered, the same request is its replay. (The store's claim,
// which decides across processes, is tested on both backends in
// TestIdempotencyClaimCommitsWithItsWrite; this is the HTTP layer's early
// answer, the same on both.)
func TestIdempotencyKeyInFlight(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "logbook.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := New(Config{Store: st, Log: zerolog.Nop(), AllowOpen: true})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	send := func(body io.Reader, n int) (*http.Response, error) {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/sessions", body)
		req.ContentLength = int64(n)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k")
		return ts.Client().Do(req)
	}
	read := func(res *http.Response, err error) (int, string, string) {
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header.Get("Idempotent-Replayed")
	}

	body := `{"id":"once","title":"t"}`
	pr, pw := io.Pipe()
	done := make(chan *http.Response, 1)
	go func() {
		res, err := send(pr, len(body))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	if _, err := pw.Write([]byte(body[:5])); err != nil {
		t.Fatal(err)
	}
	k := model.IdempotencyKey{Tenant: model.DefaultTenant, Key: "k"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		srv.keysInFlight.mu.Lock()
		_, busy := srv.keysInFlight.m[k]
		srv.keysInFlight.mu.Unlock()
		if busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first request never took its key")
		}
	}
	if code, b, _ := read(send(strings.NewReader(body), len(body))); code != http.StatusConflict ||
		!strings.Contains(b, `"code":"idempotency_in_progress"`) {
		t.Errorf("the same key while the first is in flight: %d %s", code, b)
	}
	if _, err := pw.Write([]byte(body[5:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	first, firstBody, _ := read(<-done, nil)
	if first != http.StatusCreated {
		t.Fatalf("the first request: %d %s", first, firstBody)
	}
	if code, b, replayed := read(send(strings.NewReader(body), len(body))); code != http.StatusCreated || b != firstBody || replayed != "true" {
		t.Errorf("the retry after it: %d %s (replayed %q), want the first answer replayed", code, b, replayed)
	}
}
