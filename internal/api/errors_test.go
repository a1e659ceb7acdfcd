package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// Every kind of bad input answers its own status and stable code, names the bad
// field, and never a 500.
func TestBadInput(t *testing.T) {
	c := newClient(t, withMaxBody(64<<10))
	s := mustCreateSession(t, c, map[string]any{"id": "s1"})
	mustAppend(t, c, s.ID, userMsg("x"))
	msgs := "/v1/sessions/s1/messages"
	big := `{"title":"` + strings.Repeat("a", 70<<10) + `"}` // sessions carry no large object: --max-body-bytes is their limit

	cases := []struct {
		name         string
		method, path string
		body         any
		headers      []string
		status       int
		code         string
		field        string // a field the problem must name, if any
	}{
		{"malformed_json", "POST", "/v1/sessions", `{"id":`, nil, 400, "malformed_json", ""},
		{"json_syntax_error", "POST", "/v1/sessions", `{"id" "x"}`, nil, 400, "malformed_json", ""},
		{"empty_body", "POST", "/v1/sessions", ``, nil, 400, "malformed_json", ""},
		{"two_json_values", "POST", "/v1/sessions", `{} {}`, nil, 400, "malformed_json", ""},
		{"body_not_object", "POST", "/v1/sessions", `[1,2]`, nil, 400, "malformed_json", ""},
		{"body_null", "POST", "/v1/sessions", `null`, nil, 400, "malformed_json", ""},
		{"batch_item_null", "POST", msgs, `{"messages":[null]}`, nil, 422, "validation_failed", "messages[0]"},
		{"batch_not_list", "POST", msgs, `{"messages":{}}`, nil, 422, "validation_failed", "messages"},
		{"unknown_field", "POST", "/v1/sessions", `{"titel":"x"}`, nil, 422, "validation_failed", "titel"},
		{"wrong_type", "POST", "/v1/sessions", `{"title":5}`, nil, 422, "validation_failed", "title"},
		{"metadata_not_object", "POST", "/v1/sessions", `{"metadata":"x"}`, nil, 422, "validation_failed", "metadata"},
		{"bad_client_id", "POST", "/v1/sessions", `{"id":"has space"}`, nil, 422, "validation_failed", "id"},
		{"client_id_too_long", "POST", "/v1/sessions", `{"id":"` + strings.Repeat("a", 129) + `"}`, nil, 422, "validation_failed", "id"},
		{"no_content_type", "POST", "/v1/sessions", `{}`, []string{"Content-Type", ""}, 415, "unsupported_media_type", ""},
		{"text_content_type", "POST", "/v1/sessions", `{}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", ""},
		{"body_too_large", "POST", "/v1/sessions", big, nil, 413, "payload_too_large", ""},
		{"missing_role", "POST", msgs, `{"content":"x"}`, nil, 422, "validation_failed", "role"},
		{"bad_role", "POST", msgs, `{"role":"robot","content":"x"}`, nil, 422, "validation_failed", "role"},
		{"negative_tokens", "POST", msgs, `{"role":"user","content":"x","tokens":-1}`, nil, 422, "validation_failed", "tokens"},
		{"negative_cost", "POST", msgs, `{"role":"user","content":"x","cost":-0.1}`, nil, 422, "validation_failed", "cost"},
		{"fractional_tokens", "POST", msgs, `{"role":"user","content":"x","tokens":1.5}`, nil, 422, "validation_failed", "tokens"},
		{"tool_without_call_id", "POST", msgs, `{"role":"tool","content":"x"}`, nil, 422, "validation_failed", "tool_call_id"},
		{"call_id_on_user", "POST", msgs, `{"role":"user","content":"x","tool_call_id":"c"}`, nil, 422, "validation_failed", "tool_call_id"},
		{"tool_calls_on_user", "POST", msgs, `{"role":"user","content":"x","tool_calls":[{"id":"c","name":"f","arguments":"{}"}]}`, nil, 422, "validation_failed", "tool_calls"},
		{"tool_call_arguments_not_json", "POST", msgs, `{"role":"assistant","content":"","tool_calls":[{"id":"c","name":"f","arguments":"{"}]}`, nil, 422, "validation_failed", "tool_calls[0].arguments"},
		{"tool_call_without_name", "POST", msgs, `{"role":"assistant","content":"","tool_calls":[{"id":"c","arguments":"{}"}]}`, nil, 422, "validation_failed", "tool_calls[0].name"},
		{"empty_batch", "POST", msgs, `{"messages":[]}`, nil, 422, "validation_failed", "messages"},
		{"batch_bad_item", "POST", msgs, `{"messages":[{"role":"user"},{"role":"x"}]}`, nil, 422, "validation_failed", "messages[1].role"},
		{"batch_unknown_field", "POST", msgs, `{"messages":[{"role":"user","extra":1}]}`, nil, 422, "validation_failed", "messages[0].extra"},
		{"batch_repeated_key", "POST", msgs, `{"messages":[{"role":"user","idempotency_key":"a"},{"role":"user","idempotency_key":"a"}]}`, nil, 422, "validation_failed", "messages[1].idempotency_key"},
		{"idempotency_key_too_long", "POST", msgs, `{"role":"user"}`, []string{"Idempotency-Key", strings.Repeat("k", 256)}, 422, "validation_failed", "Idempotency-Key"},
		{"append_missing_session", "POST", "/v1/sessions/nope/messages", `{"role":"user"}`, nil, 404, "not_found", ""},
		{"patch_bad_status", "PATCH", "/v1/sessions/s1", `{"status":"done"}`, nil, 422, "validation_failed", "status"},
		{"patch_null_status", "PATCH", "/v1/sessions/s1", `{"status":null}`, nil, 422, "validation_failed", "status"},
		{"patch_missing_session", "PATCH", "/v1/sessions/nope", `{"title":"x"}`, nil, 404, "not_found", ""},
		{"limit_zero", "GET", "/v1/sessions?limit=0", nil, nil, 400, "invalid_query", "limit"},
		{"limit_too_big", "GET", "/v1/sessions?limit=201", nil, nil, 400, "invalid_query", "limit"},
		{"limit_not_number", "GET", msgs + "?limit=ten", nil, nil, 400, "invalid_query", "limit"},
		{"unknown_query_param", "GET", "/v1/sessions?stauts=active", nil, nil, 400, "invalid_query", "stauts"},
		{"bad_status_filter", "GET", "/v1/sessions?status=done", nil, nil, 400, "invalid_query", "status"},
		{"bad_time_filter", "GET", "/v1/sessions?created_after=yesterday", nil, nil, 400, "invalid_query", "created_after"},
		{"bad_order", "GET", msgs + "?order=up", nil, nil, 400, "invalid_query", "order"},
		{"negative_after_seq", "GET", msgs + "?after_seq=-1", nil, nil, 400, "invalid_query", "after_seq"},
		{"garbage_cursor", "GET", msgs + "?cursor=%%%", nil, nil, 400, "invalid_query", ""},
		{"undecodable_cursor", "GET", msgs + "?cursor=bm90LWpzb24", nil, nil, 400, "invalid_cursor", "cursor"},
		{"unknown_route", "GET", "/v1/nothing", nil, nil, 404, "not_found", ""},
		{"wrong_method", "PUT", "/v1/sessions", `{}`, nil, 405, "method_not_allowed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var res *response
			if tc.body == nil {
				res = c.do(tc.method, tc.path, nil, tc.headers...)
			} else {
				res = c.do(tc.method, tc.path, tc.body, tc.headers...)
			}
			p := res.wantProblem(t, tc.status, tc.code)
			if p.Status != tc.status || p.Detail == "" {
				t.Errorf("problem status %d detail %q", p.Status, p.Detail)
			}
			if tc.field != "" {
				found := false
				for _, e := range p.Errors {
					found = found || e.Field == tc.field
				}
				if !found {
					t.Errorf("errors %+v do not name %q", p.Errors, tc.field)
				}
			}
		})
	}
	if got := mustGetSession(t, c, "s1"); got.MessageCount != 1 || got.LastSeq != 1 {
		t.Errorf("bad input changed the session: %+v", got)
	}
}

func TestRequestID(t *testing.T) {
	c := newClient(t)
	res := c.do("GET", "/healthz", nil, "X-Request-Id", "trace-123")
	if got := res.Header.Get("X-Request-Id"); got != "trace-123" {
		t.Errorf("X-Request-Id = %q, want the caller's trace-123", got)
	}
	res = c.do("GET", "/healthz", nil, "X-Request-Id", "bad id")
	if got := res.Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Errorf("X-Request-Id = %q, want a fresh id", got)
	}
}

func TestHealthAndSpec(t *testing.T) {
	c := newClient(t)
	c.do("GET", "/healthz", nil).want(t, http.StatusOK, nil)
	c.do("GET", "/readyz", nil).want(t, http.StatusOK, nil)
	res := c.do("GET", "/openapi.yaml", nil).want(t, http.StatusOK, nil)
	if !strings.HasPrefix(string(res.Body), "openapi: 3.1") {
		t.Errorf("/openapi.yaml starts %q", res.Body[:min(len(res.Body), 40)])
	}
}

func TestMethodNotAllowedSaysWhatIs(t *testing.T) {
	c := newClient(t)
	res := c.do("PUT", "/v1/sessions/x", `{}`)
	res.wantProblem(t, http.StatusMethodNotAllowed, "method_not_allowed")
	if got, want := res.Header.Get("Allow"), "GET, HEAD, PATCH, DELETE"; got != want {
		t.Errorf("Allow = %q, want %q", got, want)
	}
	// HEAD is not an operation of the contract, so this one goes around the spec check.
	req, _ := http.NewRequest("HEAD", c.base+"/healthz", nil)
	hr, err := c.http.Do(req)
	if err != nil || hr.StatusCode != http.StatusOK {
		t.Fatalf("HEAD /healthz: %v %v", hr, err)
	}
	hr.Body.Close()
}
