package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// mustExportAgent exports an agent and checks the stream's shape: content
// type, the header first, the agent_end line last with its checksum.
func mustExportAgent(t *testing.T, c *client, id string) []byte {
	t.Helper()
	res := c.do("GET", "/v1/agents/"+id+"/export", nil).want(t, http.StatusOK, nil)
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type = %q, want application/x-ndjson", ct)
	}
	lines := splitLines(t, res.Body)
	if !bytes.HasPrefix(lines[0], []byte(`{"type":"header","format":"logbook.agent","version":1}`)) {
		t.Fatalf("first line %s, want the header", lines[0])
	}
	var end model.AgentExportLine
	last := lines[len(lines)-1]
	if err := json.Unmarshal(last, &end); err != nil || end.Type != model.LineAgentEnd {
		t.Fatalf("last line %s, want agent_end (%v)", last, err)
	}
	sum := sha256.Sum256(res.Body[:len(res.Body)-len(last)])
	if end.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("agent_end sha256 %s, want %x", end.SHA256, sum)
	}
	return res.Body
}

func importAgentNDJSON(c *client, body []byte, query string) *response {
	return c.do("POST", "/v1/agents/import"+query, body, "Content-Type", "application/x-ndjson")
}

func mustImportAgent(t *testing.T, c *client, body []byte, query string) model.Agent {
	t.Helper()
	var a model.Agent
	res := importAgentNDJSON(c, body, query).want(t, http.StatusCreated, &a)
	if loc := res.Header.Get("Location"); loc != "/v1/agents/"+a.ID {
		t.Errorf("Location = %q, want /v1/agents/%s", loc, a.ID)
	}
	return a
}

// resealAgent replaces the agent_end line with one that matches the lines
// before it, so a test can change the content and still pass the checksum.
func resealAgent(lines [][]byte) []byte {
	body := bytes.Join(lines[:len(lines)-1], nil)
	var counts model.AgentExportCounts
	for _, l := range lines[:len(lines)-1] {
		switch {
		case bytes.HasPrefix(l, []byte(`{"type":"block"`)):
			counts.Blocks++
		case bytes.HasPrefix(l, []byte(`{"type":"passage"`)):
			counts.Passages++
		case bytes.HasPrefix(l, []byte(`{"type":"session"`)):
			counts.Sessions++
		}
	}
	sum := sha256.Sum256(body)
	end, _ := json.Marshal(model.AgentExportLine{Type: model.LineAgentEnd, Counts: &counts, SHA256: hex.EncodeToString(sum[:])})
	return append(body, append(end, '\n')...)
}

// embedding is a vector whose floats use every bit of their mantissa, so that
// a round trip through decimal that lost one would show.
func embedding(i, dims int) []float32 {
	v := make([]float32, dims)
	for j := range v {
		v[j] = float32(math.Sin(float64(i*dims+j+1))) / 3
	}
	return v
}

// richAgent makes agent support-bot with blocks, passages with embeddings and
// two sessions (richSession's and a short one), and another agent's session.
func richAgent(t *testing.T, c *client) {
	t.Helper()
	mustCreateAgent(t, c, map[string]any{"id": "support-bot", "name": "Support", "model": "gpt-x", "system": "Be kind.",
		"tool_ids": []string{"lookup"}, "tags": []string{"prod"}, "metadata": map[string]any{"team": "eu", "n": 1.5}})
	c.do("PUT", "/v1/agents/support-bot/blocks/human", map[string]any{"value": "Ann, prefers email.", "limit": 100,
		"description": "who we talk to"}).want(t, http.StatusCreated, nil)
	c.do("POST", "/v1/agents/support-bot/blocks/human/append", map[string]any{"content": "Has a teapot."}).want(t, http.StatusOK, nil)
	c.do("PUT", "/v1/agents/support-bot/blocks/persona", map[string]any{"value": "A patient clerk. ü🫖", "read_only": true}).
		want(t, http.StatusCreated, nil)
	for i := range 40 {
		body := map[string]any{"content": fmt.Sprintf("fact %d about teapots", i), "embedding": embedding(i, 16),
			"embedding_model": "test-embed-16"}
		if i%7 == 0 {
			body["tags"] = []string{"t", fmt.Sprint(i)}
			body["metadata"] = map[string]any{"i": i}
			body["expires_at"] = "2099-01-01T00:00:00Z"
		}
		c.do("POST", "/v1/agents/support-bot/archival", body).want(t, http.StatusCreated, nil)
	}
	c.do("POST", "/v1/agents/support-bot/archival", map[string]any{"content": "no embedding here"}).want(t, http.StatusCreated, nil)
	richSession(t, c)
	s := mustCreateSession(t, c, map[string]any{"id": "short-1", "agent_id": "support-bot", "user_id": "ann"})
	mustAppend(t, c, s.ID, userMsg("hello again"))
	mustCreateAgent(t, c, map[string]any{"id": "other-bot", "name": "Other"})
	mustCreateSession(t, c, map[string]any{"id": "not-exported", "agent_id": "other-bot"})
}

func vectorOrder(t *testing.T, c *client, agentID string) []model.PassageHit {
	t.Helper()
	var hits struct{ Data []model.PassageHit }
	c.do("POST", "/v1/agents/"+agentID+"/archival/search", map[string]any{"mode": "vector", "query_embedding": embedding(3, 16),
		"limit": 50}).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 40 {
		t.Fatalf("vector search on %s: %d hits, want 40", agentID, len(hits.Data))
	}
	return hits.Data
}

func TestAgentExportImportRoundTrip(t *testing.T) {
	src := newClient(t)
	richAgent(t, src)
	first := mustExportAgent(t, src, "support-bot")
	lines := splitLines(t, first)
	// header, agent, 2 blocks, 41 passages, richSession's 610 lines, 3 of the
	// short session's, agent_end
	if got, want := len(lines), 1+1+2+41+610+3+1; got != want {
		t.Fatalf("export has %d lines, want %d", got, want)
	}
	if bytes.Contains(first, []byte("not-exported")) {
		t.Error("another agent's session is in the export")
	}

	// Into another store: the same bytes come back out.
	dst := newClient(t)
	got := mustImportAgent(t, dst, first, "")
	if got.ID != "support-bot" || got.Name != "Support" || got.Metadata.String() != `{"n":1.5,"team":"eu"}` {
		t.Errorf("imported agent %+v", got)
	}
	second := mustExportAgent(t, dst, "support-bot")
	if !bytes.Equal(first, second) {
		t.Fatalf("export → import → export changed the bytes:\n%s", firstDiff(first, second))
	}
	want := vectorOrder(t, src, "support-bot")
	for i, h := range vectorOrder(t, dst, "support-bot") {
		if h.ID != want[i].ID || h.Rank != want[i].Rank {
			t.Fatalf("vector hit %d: %s %v, want %s %v", i, h.ID, h.Rank, want[i].ID, want[i].Rank)
		}
	}
	var page struct{ Data []model.Block }
	dst.do("GET", "/v1/agents/support-bot/blocks", nil).want(t, http.StatusOK, &page)
	if blocks := page.Data; len(blocks) != 2 || blocks[0].Value != "Ann, prefers email.\nHas a teapot." || blocks[0].Version != 2 || !blocks[1].ReadOnly {
		t.Errorf("imported blocks %+v", page.Data)
	}
	dst.do("POST", "/v1/agents/support-bot/blocks/human/append", map[string]any{"content": "More."}).want(t, http.StatusOK, nil)

	// Again, into the same store: the ids exist (409), or as_new gives new ones.
	p := importAgentNDJSON(src, first, "").wantProblem(t, http.StatusConflict, "conflict")
	if len(p.Errors) != 1 || p.Errors[0].Field != "line 2" {
		t.Errorf("conflict names %+v, want line 2", p.Errors)
	}
	copied := mustImportAgent(t, src, first, "?as_new=true")
	if copied.ID == "support-bot" || !strings.HasPrefix(copied.ID, "agt_") {
		t.Fatalf("as_new agent id %q", copied.ID)
	}
	var sessions model.Page[model.Session]
	src.do("GET", "/v1/sessions?agent_id="+copied.ID, nil).want(t, http.StatusOK, &sessions)
	if len(sessions.Data) != 2 {
		t.Fatalf("the copy has %d sessions, want 2", len(sessions.Data))
	}
	for i, h := range vectorOrder(t, src, copied.ID) {
		if h.ID != want[i].ID || h.Rank != want[i].Rank || h.AgentID != copied.ID {
			t.Fatalf("copy's vector hit %d: %+v, want %s %v", i, h, want[i].ID, want[i].Rank)
		}
	}
	// Modulo the agent's and the sessions' ids, the copy exports what the original did.
	third := string(mustExportAgent(t, src, copied.ID))
	norm := func(s string, agent string, ses []model.Session) string {
		s = strings.ReplaceAll(s, `"`+agent+`"`, `"AGENT"`)
		for i, x := range ses {
			s = strings.ReplaceAll(s, x.ID, fmt.Sprintf("SES%d", i))
		}
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, `{"type":"message"`) || strings.HasPrefix(l, `{"type":"checkpoint"`) || strings.HasPrefix(l, `{"type":"end"`) ||
				strings.HasPrefix(l, `{"type":"agent_end"`) {
				continue // message and checkpoint ids are new, and so the checksums
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
	var origSes model.Page[model.Session]
	src.do("GET", "/v1/sessions?agent_id=support-bot", nil).want(t, http.StatusOK, &origSes)
	if a, b := norm(string(first), "support-bot", origSes.Data), norm(third, copied.ID, sessions.Data); a != b {
		t.Errorf("the as_new copy exports other content:\n%s", firstDiff([]byte(a), []byte(b)))
	}
}

// A refused agent import writes nothing: not the agent, not a block, not a
// session, whatever line it fails on.
func TestAgentImportRefusedWritesNothing(t *testing.T) {
	src := newClient(t)
	richAgent(t, src)
	good := mustExportAgent(t, src, "support-bot")
	lines := splitLines(t, good)
	edit := func(i int, from, to string) [][]byte {
		out := append([][]byte(nil), lines...)
		out[i] = []byte(strings.Replace(string(lines[i]), from, to, 1))
		return out
	}
	passage := 4 // the first passage line
	firstSession := 45
	cases := []struct {
		name   string
		body   []byte
		status int
		code   string
		field  string
	}{
		{"bad checksum", bytes.Join(edit(passage, "fact 0", "fact X"), nil), 422, "invalid_import", fmt.Sprintf("line %d", len(lines))},
		{"truncated", bytes.Join(lines[:len(lines)-1], nil), 422, "invalid_import", fmt.Sprintf("line %d", len(lines))},
		{"cut inside a session", good[:len(good)-len(lines[len(lines)-1])-len(lines[len(lines)-2])-40], 422, "invalid_import",
			fmt.Sprintf("line %d", len(lines)-2)},
		{"not JSON", resealAgent(append(append([][]byte{}, lines[:3]...), append([][]byte{[]byte("{nope\n")}, lines[3:]...)...)),
			400, "malformed_json", "line 4"},
		{"no header", resealAgent(lines[1:]), 422, "invalid_import", "line 1"},
		{"other version", resealAgent(edit(0, `"version":1`, `"version":2`)), 422, "invalid_import", "line 1"},
		{"block over its limit", resealAgent(edit(2, `"limit":100`, `"limit":5`)), 422, "invalid_import", "line 3"},
		{"embedding of another model", resealAgent(edit(passage, `"embedding_model":"test-embed-16"`, `"embedding_model":"other"`)),
			422, "invalid_import", fmt.Sprintf("line %d", passage+1)},
		{"sessions of another agent", resealAgent(edit(1, `"id":"support-bot"`, `"id":"someone"`)),
			422, "invalid_import", fmt.Sprintf("line %d", firstSession+1)},
		{"counts off", append(bytes.Join(lines[:len(lines)-1], nil),
			bytes.Replace(lines[len(lines)-1], []byte(`"passages":41`), []byte(`"passages":40`), 1)...),
			422, "invalid_import", fmt.Sprintf("line %d", len(lines))},
		// A session id the tenant has: found only while storing, after the
		// agent, its blocks and passages and the first session are written.
		{"a late conflict", good, 409, "conflict", fmt.Sprintf("line %d", len(lines)-3)},
	}
	dst := newClient(t)
	mustCreateSession(t, dst, map[string]any{"id": "short-1"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := importAgentNDJSON(dst, tc.body, "").wantProblem(t, tc.status, tc.code)
			if len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
				t.Errorf("errors %+v (%s), want field %q", p.Errors, p.Detail, tc.field)
			}
			var agents model.Page[model.Agent]
			dst.do("GET", "/v1/agents", nil).want(t, http.StatusOK, &agents)
			ses := listAll[model.Session](t, dst, "/v1/sessions", 100)
			if len(agents.Data) != 0 || len(ses) != 1 {
				t.Fatalf("a refused import wrote %d agents and %d sessions", len(agents.Data), len(ses)-1)
			}
		})
	}
}

// An agent belongs to its tenant: another tenant's key cannot export it, an
// import goes into the importer's tenant, and a key bound to one end user may
// do neither (the sessions span users).
func TestAgentExportTenantIsolation(t *testing.T) {
	root := newClient(t)
	t1 := root.as(mustKey(t, root, "t1", model.ScopeWrite).Key)
	t2 := root.as(mustKey(t, root, "t2", model.ScopeWrite).Key)
	richAgent(t, t1)
	body := mustExportAgent(t, t1, "support-bot")
	t2.do("GET", "/v1/agents/support-bot/export", nil).wantProblem(t, http.StatusNotFound, "not_found")
	t1.do("GET", "/v1/agents/nobody/export", nil).wantProblem(t, http.StatusNotFound, "not_found")

	mustImportAgent(t, t2, body, "") // the same ids, in another tenant: no conflict
	if !bytes.Equal(mustExportAgent(t, t2, "support-bot"), body) {
		t.Error("the other tenant's copy exports other bytes")
	}
	t1.do("DELETE", "/v1/agents/support-bot", nil).want(t, http.StatusNoContent, nil)
	t2.do("GET", "/v1/agents/support-bot", nil).want(t, http.StatusOK, nil)

	var k model.NewAPIKey
	admin := root.as(mustKey(t, root, "t1", model.ScopeAdmin).Key)
	admin.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "user_id": "ann"}).want(t, http.StatusCreated, &k)
	ann := root.as(k.Key)
	ann.do("GET", "/v1/agents/other-bot/export", nil).wantProblem(t, http.StatusForbidden, "forbidden")
	importAgentNDJSON(ann, body, "?as_new=true").wantProblem(t, http.StatusForbidden, "forbidden")
}

// An agent import is held to the import body limit (413), and an embedding of
// another length than the agent pins is refused by name.
func TestAgentImportLimits(t *testing.T) {
	src := newClient(t)
	richAgent(t, src)
	body := mustExportAgent(t, src, "support-bot")
	small := newClient(t, withImportMax(int64(len(body)/2)))
	importAgentNDJSON(small, body, "").wantProblem(t, http.StatusRequestEntityTooLarge, "payload_too_large")
	var agents model.Page[model.Agent]
	small.do("GET", "/v1/agents", nil).want(t, http.StatusOK, &agents)
	if len(agents.Data) != 0 {
		t.Fatalf("an import over the limit wrote %d agents", len(agents.Data))
	}

	lines := splitLines(t, body)
	var l model.AgentExportLine
	if err := json.Unmarshal(lines[4], &l); err != nil || l.Passage == nil {
		t.Fatalf("line 5 is not a passage: %s", lines[4])
	}
	l.Passage.Embedding = l.Passage.Embedding[:15]
	short, _ := json.Marshal(l)
	lines[4] = append(short, '\n')
	p := importAgentNDJSON(src, resealAgent(lines), "?as_new=true").wantProblem(t, http.StatusUnprocessableEntity, "invalid_import")
	if len(p.Errors) != 1 || p.Errors[0].Field != "line 5" || !strings.Contains(p.Detail, "passage.embedding") {
		t.Errorf("short embedding: %+v %s", p.Errors, p.Detail)
	}
}

// Expired passages and sessions are left out of an agent export, as reads
// leave them out.
func TestAgentExportLeavesOutExpired(t *testing.T) {
	c := newClient(t)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	soon := time.Now().Add(300 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "kept"}).want(t, http.StatusCreated, nil)
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "gone soon", "expires_at": soon}).want(t, http.StatusCreated, nil)
	mustCreateSession(t, c, map[string]any{"id": "kept-1", "agent_id": "a"})
	mustCreateSession(t, c, map[string]any{"id": "gone-1", "agent_id": "a", "expires_at": soon})
	time.Sleep(400 * time.Millisecond)
	body := string(mustExportAgent(t, c, "a"))
	if strings.Contains(body, "gone") || !strings.Contains(body, `"content":"kept"`) || !strings.Contains(body, `"id":"kept-1"`) {
		t.Errorf("export of an agent with expired things:\n%s", body)
	}
	if !strings.Contains(body, `"counts":{"blocks":0,"passages":1,"sessions":1}`) {
		t.Errorf("counts: %s", body)
	}
}
