package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// The floor answers what the load tool asks of Logbook, as the tool checks
// Logbook's answers: appends one at a time and streamed, stored with their
// seqs and counters; full pages from the seq asked for; context reads from
// the compaction, whole or within a budget with the system prompt first. A
// floor that did less would flatter Logbook's ratios.
func TestFloorAnswersWhatTheToolChecks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "floor.db")
	f, err := openFloor(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	go f.runWriter()
	defer close(f.queue)
	srv := httptest.NewServer(f.routes())
	defer srv.Close()
	c := newClient()
	c.Timeout = 0
	if err := post(ctx, c, srv.URL+"/v1/sessions", mustJSON(map[string]string{"id": "s1"}), http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/v1/sessions/s1/messages"
	for range 3 {
		if err := post(ctx, c, url, mustJSON(messageJSON(0)), http.StatusCreated); err != nil {
			t.Fatal(err)
		}
	}
	s, err := openStream(ctx, c, url, mustJSON(messageJSON(0)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.send(16); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	var count, last, tokens int64
	if err := f.rdb.QueryRow(`SELECT message_count, last_seq, total_tokens FROM sessions WHERE id = 's1'`).Scan(&count, &last, &tokens); err != nil {
		t.Fatal(err)
	}
	if count != 20 || last != 20 || tokens != 20*42 {
		t.Errorf("session counters %d messages, last seq %d, %d tokens; want 20, 20, %d", count, last, tokens, 20*42)
	}

	// The context section's session: a system prompt, turns, a compaction.
	conv := newConversation()
	const n = 300
	if err := post(ctx, c, srv.URL+"/v1/sessions", mustJSON(map[string]string{"id": contextSession}), http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := post(ctx, c, srv.URL+"/v1/sessions/"+contextSession+"/messages", mustJSON(conv.next()), http.StatusCreated); err != nil {
			t.Fatal(err)
		}
	}
	through := contextThrough(n)
	if _, err := f.wdb.Exec(`INSERT INTO compactions (tenant_id, session_id, n, id, through_seq, summary, tokens, created_at)
		VALUES ('default', ?, 1, 'cmp_1', ?, ?, ?, 0)`, contextSession, through, contextSummary, contextSummaryTk); err != nil {
		t.Fatal(err)
	}
	get := func(path string) []byte {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		var buf bytes.Buffer
		if err := do(c, req, http.StatusOK, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	if err := checkPage(get(fmt.Sprintf("/v1/sessions/%s/messages?after_seq=100&limit=%d", contextSession, pageSize)), 101); err != nil {
		t.Errorf("page: %v", err)
	}
	for _, spec := range contextSpecs(n) {
		if spec.name == "ctx-4k+b" {
			continue // the floor keeps no core memory
		}
		if _, err := spec.check(get("/v1/sessions/" + contextSession + spec.request)); err != nil {
			t.Errorf("%s: %v", spec.name, err)
		}
	}
}
