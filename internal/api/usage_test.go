package api_test

import (
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// GET /v1/usage sums the stored messages by day, agent, model and session,
// takes a rewind's messages back, and refuses bad parameters by name.
func TestUsage(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "a", "agent_id": "support"})
	mustCreateSession(t, c, map[string]any{"id": "b"})
	c.do("POST", "/v1/sessions/a/messages/batch", map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "hi", "tokens": 5},
		map[string]any{"role": "assistant", "content": "hello", "model": "gpt", "tokens": 20, "cost": 0.5},
		map[string]any{"role": "assistant", "content": "more", "model": "gpt", "tokens": 30, "cost": 0.25},
	}}).want(t, 201, nil)
	c.do("POST", "/v1/sessions/b/messages", map[string]any{"role": "assistant", "content": "x", "model": "claude",
		"agent_id": "helper", "tokens": 7, "cost": 1}).want(t, 201, nil)

	today := time.Now().UTC().Format(time.DateOnly)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		query string
		want  []model.UsageRow
	}{
		{"", []model.UsageRow{{Key: str(today), Messages: 4, Tokens: 62, Cost: 1.75}}},
		{"?group_by=agent", []model.UsageRow{{Key: str("support"), Messages: 3, Tokens: 55, Cost: 0.75}, {Key: str("helper"), Messages: 1, Tokens: 7, Cost: 1}}},
		{"?group_by=model", []model.UsageRow{{Key: str("gpt"), Messages: 2, Tokens: 50, Cost: 0.75}, {Key: str("claude"), Messages: 1, Tokens: 7, Cost: 1}, {Key: nil, Messages: 1, Tokens: 5}}},
		{"?group_by=session&limit=1", []model.UsageRow{{Key: str("a"), Messages: 3, Tokens: 55, Cost: 0.75}}},
		{"?group_by=model&agent_id=support", []model.UsageRow{{Key: str("gpt"), Messages: 2, Tokens: 50, Cost: 0.75}, {Key: nil, Messages: 1, Tokens: 5}}},
		{"?from=2001-01-01&to=2001-12-31", nil},
	} {
		var u model.Usage
		c.do("GET", "/v1/usage"+tc.query, nil).want(t, 200, &u)
		if len(u.Data) != len(tc.want) {
			t.Errorf("%s: %+v; want %d rows", tc.query, u.Data, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			g := u.Data[i]
			if (g.Key == nil) != (w.Key == nil) || (g.Key != nil && *g.Key != *w.Key) || g.Messages != w.Messages ||
				g.Tokens != w.Tokens || g.Cost != w.Cost {
				t.Errorf("%s: row %d = %+v (key %v); want %+v (key %v)", tc.query, i, g, deref(g.Key), w, deref(w.Key))
			}
		}
	}

	c.do("POST", "/v1/sessions/a/rewind", map[string]any{"to_seq": 1}).want(t, 200, nil)
	var u model.Usage
	c.do("GET", "/v1/usage?from="+today+"&to="+time.Now().UTC().Format(time.RFC3339), nil).want(t, 200, &u)
	if u.Total.Messages != 2 || u.Total.Tokens != 12 || u.Total.Cost != 1 || u.From != today || u.To != today {
		t.Errorf("after the rewind: %+v; want 2 messages, 12 tokens, cost 1, today only", u)
	}

	other := c.as(mustKey(t, c, "other", model.ScopeRead).Key)
	var none model.Usage
	other.do("GET", "/v1/usage?group_by=session", nil).want(t, 200, &none)
	if len(none.Data) != 0 || none.Total.Messages != 0 {
		t.Errorf("another tenant's usage = %+v; want nothing", none)
	}

	for _, tc := range []struct{ query, field string }{
		{"?group_by=week", "group_by"},
		{"?from=yesterday", "from"},
		{"?from=2026-02-01&to=2026-01-01", "from"},
		{"?limit=0", "limit"},
		{"?bogus=1", "bogus"},
	} {
		p := c.do("GET", "/v1/usage"+tc.query, nil).wantProblem(t, 400, "invalid_query")
		if len(p.Errors) == 0 || p.Errors[0].Field != tc.field {
			t.Errorf("%s: %+v; want field %s", tc.query, p.Errors, tc.field)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
