package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// nested is a JSON object that nests depth levels deep: {"a":{"a":…{}…}}.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// Every free-form JSON field (metadata, a checkpoint's state) on every route that
// takes one nests at most model.MaxJSONDepth levels: deeper is a 422 naming the
// field, never a 500 from a layer with a smaller limit, and what is accepted
// round-trips through export and import.
func TestJSONDepthOnEveryRoute(t *testing.T) {
	c := newClient(t, withMaxBody(1<<20))
	mustCreateSession(t, c, map[string]any{"id": "s1"})
	mustCreateAgent(t, c, map[string]any{"id": "a1", "name": "A"})

	routes := []struct {
		name, method, path, body, field string
	}{
		{"create_session", "POST", "/v1/sessions", `{"metadata":%s}`, "metadata"},
		{"patch_session", "PATCH", "/v1/sessions/s1", `{"metadata":%s}`, "metadata"},
		{"fork", "POST", "/v1/sessions/s1/fork", `{"metadata":%s}`, "metadata"},
		{"append", "POST", "/v1/sessions/s1/messages", `{"role":"user","content":"x","metadata":%s}`, "metadata"},
		{"append_batch", "POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"user","metadata":%s}]}`, "messages[0].metadata"},
		{"create_agent", "POST", "/v1/agents", `{"name":"n","metadata":%s}`, "metadata"},
		{"patch_agent", "PATCH", "/v1/agents/a1", `{"metadata":%s}`, "metadata"},
		{"passage", "POST", "/v1/agents/a1/archival", `{"content":"x","metadata":%s}`, "metadata"},
		{"checkpoint", "PUT", "/v1/sessions/s1/checkpoint", `{"iteration":ITERATION,"state":%s}`, "state"},
	}
	iteration := 0
	for _, depth := range []int{model.MaxJSONDepth + 1, 1001, 9999, 20000} {
		for _, r := range routes {
			t.Run(fmt.Sprintf("%s_%d", r.name, depth), func(t *testing.T) {
				iteration++
				body := strings.Replace(fmt.Sprintf(r.body, nested(depth)), "ITERATION", fmt.Sprint(iteration), 1)
				p := c.do(r.method, r.path, body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
				if len(p.Errors) != 1 || p.Errors[0].Field != r.field {
					t.Errorf("errors %+v, want one naming %s", p.Errors, r.field)
				}
			})
		}
	}
	// The deepest accepted value goes through every route and back out of an
	// export into an import.
	for _, r := range routes {
		iteration++
		res := c.do(r.method, r.path, strings.Replace(fmt.Sprintf(r.body, nested(model.MaxJSONDepth)), "ITERATION", fmt.Sprint(iteration), 1))
		if res.Status >= 300 {
			t.Fatalf("%s with metadata %d deep: %d %s", r.name, model.MaxJSONDepth, res.Status, res.Body)
		}
	}
	export := mustExport(t, c, "s1")
	ses := mustImport(t, c, export, "?as_new=true")
	if got := mustExport(t, c, ses.ID); !bytes.Equal(bytes.ReplaceAll(got, []byte(ses.ID), []byte("s1")), export) &&
		!strings.Contains(string(got), nested(model.MaxJSONDepth)) {
		t.Errorf("the re-export lost the deep values")
	}
}

// An import line past the depth limit is refused like a request body, naming
// its line; nothing is written.
func TestImportRefusesDeepValues(t *testing.T) {
	c := newClient(t)
	s := mustCreateSession(t, c, map[string]any{"id": "deep"})
	mustAppend(t, c, s.ID, userMsg("hi"))
	lines := splitLines(t, mustExport(t, c, s.ID))
	c.do("DELETE", "/v1/sessions/deep?purge=true", nil).want(t, http.StatusNoContent, nil)
	lines[1] = bytes.Replace(lines[1], []byte(`"metadata":{}`), []byte(`"metadata":`+nested(1001)), 1)
	p := importNDJSON(c, reseal(t, lines), "").wantProblem(t, http.StatusUnprocessableEntity, "invalid_import")
	if len(p.Errors) != 1 || p.Errors[0].Field != "line 2" || !strings.Contains(p.Errors[0].Message, "message.metadata") {
		t.Errorf("errors %+v, want line 2 naming message.metadata", p.Errors)
	}
	c.do("GET", "/v1/sessions/deep", nil).wantProblem(t, http.StatusNotFound, "not_found")
}

// Field names match exactly, a name given twice and text that is not UTF-8 are
// refused: nothing a client sends is silently dropped, merged or rewritten.
func TestStrictJSON(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s1"})
	msgs := "/v1/sessions/s1/messages"
	cases := []struct {
		name, path, body, field string
	}{
		{"upper_case_name", msgs, `{"ROLE":"user","content":"x"}`, "ROLE"},
		{"title_case_name", msgs, `{"role":"user","Content":"x"}`, "Content"},
		{"batch_case", msgs, `{"messages":[{"role":"user","Tokens":3}]}`, "messages[0].Tokens"},
		{"session_case", "/v1/sessions", `{"Title":"x"}`, "Title"},
		{"duplicate_name", msgs, `{"role":"user","role":"tool","content":"x"}`, "role"},
		{"invalid_utf8", msgs, "{\"role\":\"user\",\"content\":\"caf\xe9\"}", "content"},
		{"invalid_utf8_metadata_key", msgs, "{\"role\":\"user\",\"metadata\":{\"\xff\":1}}", "metadata"},
		{"lone_surrogate", msgs, `{"role":"user","content":"\ud800"}`, "content"},
		{"invalid_utf8_title", "/v1/sessions", "{\"title\":\"\xc3\x28\"}", "title"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := c.do("POST", tc.path, tc.body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if len(p.Errors) != 1 || !strings.HasPrefix(p.Errors[0].Field, tc.field) {
				t.Errorf("errors %+v, want one naming %s", p.Errors, tc.field)
			}
		})
	}
	if got := mustGetSession(t, c, "s1"); got.MessageCount != 0 {
		t.Errorf("refused bodies wrote %d messages", got.MessageCount)
	}
}

// Metadata is bounded as sent and after any number of merge patches.
func TestMetadataSizeLimit(t *testing.T) {
	c := newClient(t)
	big := strings.Repeat("x", model.MaxObjectBytes)
	p := c.do("POST", "/v1/sessions", map[string]any{"metadata": map[string]any{"k": big}}).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "metadata" {
		t.Errorf("errors %+v, want metadata", p.Errors)
	}
	mustCreateSession(t, c, map[string]any{"id": "grow"})
	chunk := strings.Repeat("y", 8<<10)
	refused := false
	for i := 0; i < 12 && !refused; i++ {
		res := c.do("PATCH", "/v1/sessions/grow", map[string]any{"metadata": map[string]any{fmt.Sprint("k", i): chunk}})
		if res.Status == http.StatusUnprocessableEntity {
			p := res.wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
			if p.Errors[0].Field != "metadata" || !strings.Contains(p.Errors[0].Message, "merged") {
				t.Errorf("errors %+v", p.Errors)
			}
			refused = true
			continue
		}
		res.want(t, http.StatusOK, nil)
	}
	if !refused {
		t.Fatal("96 KiB of metadata merged in by PATCHes was accepted")
	}
	if got := mustGetSession(t, c, "grow"); len(got.Metadata) > model.MaxObjectBytes {
		t.Errorf("stored metadata is %d bytes", len(got.Metadata))
	}
	// null clears every key, as the contract says
	var ses model.Session
	c.do("PATCH", "/v1/sessions/grow", `{"metadata":null}`).want(t, http.StatusOK, &ses)
	if string(ses.Metadata) != "{}" {
		t.Errorf("metadata after null = %s, want {}", ses.Metadata)
	}
}
