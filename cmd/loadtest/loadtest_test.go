package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 100; i++ {
		xs = append(xs, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{1, 1}, {50, 50}, {99, 99}, {99.5, 100}, {100, 100}} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("percentile of one value = %v, want 7", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
}

func TestNaiveServerCreateAndAppend(t *testing.T) {
	db, err := openSQLite(context.Background(), filepath.Join(t.TempDir(), "naive.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(newNaiveHandler(db))
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/sessions", "application/json", strings.NewReader(`{"id":"s1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create session: status %d, want 201", resp.StatusCode)
	}

	resp, err = http.Post(srv.URL+"/v1/sessions/s1/messages", "application/json",
		strings.NewReader(`{"role":"user","content":"hello","tokens":3,"cost":0.5}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("append: status %d, want 201", resp.StatusCode)
	}
	var m naiveMessage
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Seq != 1 || m.SessionID != "s1" || !strings.HasPrefix(m.ID, "msg_") {
		t.Errorf("append answered %+v, want seq 1 in s1 with a msg_ id", m)
	}

	var count, lastSeq, tokens int64
	var status string
	if err := db.QueryRow(`SELECT message_count, last_seq, total_tokens, status FROM sessions WHERE id = 's1'`).
		Scan(&count, &lastSeq, &tokens, &status); err != nil {
		t.Fatal(err)
	}
	if count != 1 || lastSeq != 1 || tokens != 3 || status != "active" {
		t.Errorf("session counters = %d messages, last_seq %d, %d tokens, %s; want 1, 1, 3, active",
			count, lastSeq, tokens, status)
	}
}
