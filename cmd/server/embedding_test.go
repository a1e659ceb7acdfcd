package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/embed/standin"
)

// TestServerEmbedsWithItsEndpoint: run() with --embedding-url embeds a passage
// through the endpoint with the key from LOGBOOK_EMBEDDING_KEY, and the key
// never shows in what the API answers.
func TestServerEmbedsWithItsEndpoint(t *testing.T) {
	var gotKey string
	st := &standin.Server{Dims: 16}
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("Authorization")
		st.ServeHTTP(w, r)
	}))
	defer ep.Close()
	db := filepath.Join(t.TempDir(), "l.db")
	base, stop := runInProcess(t, []string{"--addr", "127.0.0.1:0", "--db", db, "--embedding-url", ep.URL + "/v1/embeddings",
		"--embedding-model", standin.Model}, envOf("LOGBOOK_EMBEDDING_KEY", "sk-secret", "LOGBOOK_LOG_LEVEL", "warn"))

	post := func(path, body string) string {
		res, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %v %v", path, res, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return string(b)
	}
	post("/v1/agents", `{"id":"a","name":"a"}`)
	var p struct {
		ID             string
		EmbeddingState *string `json:"embedding_state"`
	}
	json.Unmarshal([]byte(post("/v1/agents/a/archival", `{"content":"The user drives an automobile."}`)), &p)
	deadline := time.Now().Add(15 * time.Second)
	for p.EmbeddingState == nil || *p.EmbeddingState != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("passage never embedded: %+v", p)
		}
		time.Sleep(20 * time.Millisecond)
		res, err := http.Get(base + "/v1/agents/a/archival/" + p.ID)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(res.Body).Decode(&p)
		res.Body.Close()
	}
	if gotKey != "Bearer sk-secret" {
		t.Errorf("endpoint's Authorization = %q", gotKey)
	}
	res, err := http.Get(base + "/v1/agents/a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(b), "sk-secret") || !strings.Contains(string(b), `"embedding_dims":16`) {
		t.Errorf("agent: %s", b)
	}
	res, err = http.Get(base + "/v1/agents/a/archival/search?mode=vector&q=car")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("search: %v %v", res, err)
	}
	res.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddingFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"model_without_url", []string{"--embedding-model", "m"}, "embedding-url"},
		{"url_without_model", []string{"--embedding-url", "http://127.0.0.1:1/v1/embeddings"}, "embedding-model"},
		{"not_http", []string{"--embedding-url", "ftp://x/v1", "--embedding-model", "m"}, "embedding-url"},
		{"timeout", []string{"--embedding-timeout", "0s"}, "embedding-timeout"},
		{"url_with_dot_segments", []string{"--embedding-url", "http://127.0.0.1:1/v1/../admin", "--embedding-model", "m"}, "embedding-url"},
		{"allowed_with_dot_segments", []string{"--embedding-allowed-urls", "http://127.0.0.1:1/v1/,http://h/v1/%2e%2e/"}, "embedding-allowed-urls"},
		{"allowed_with_a_query", []string{"--embedding-allowed-urls", "http://h/v1?x=1"}, "embedding-allowed-urls"},
		{"allowed_with_credentials", []string{"--embedding-allowed-urls", "http://u:p@h/v1"}, "embedding-allowed-urls"},
		{"no_calls", []string{"--embedding-calls", "0"}, "embedding-calls"},
		{"no_calls_per_endpoint", []string{"--embedding-calls-per-endpoint", "0"}, "embedding-calls-per-endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--db", filepath.Join(t.TempDir(), "l.db")}, tc.args...)
			err := run(t.Context(), args, envOf(), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
