package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// One client cannot hold live feeds without bound: past EventsMaxStreams of
// one principal's open feeds, a new one is 429 rate_limited, whether a session
// feed or the tenant's; another end user of the same tenant still opens its
// own; a feed closed gives its slot back.
func TestEventsOpenFeedsAreBoundedPerPrincipal(t *testing.T) {
	c := newClient(t, withEventsMaxStreams(2))
	ctx := context.Background()
	user := func(u string) *client {
		k, err := c.store.CreateAPIKey(ctx, "t", model.CreateAPIKey{Scope: model.ScopeWrite, Name: u, UserID: &u})
		if err != nil {
			t.Fatal(err)
		}
		return c.as(k.Key)
	}
	alice, bob := user("alice"), user("bob")
	for _, u := range []*client{alice, bob} {
		if r := u.do("POST", "/v1/sessions", map[string]any{"id": "s"}); r.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
	}
	first := openFeed(t, alice, "/v1/sessions/s/events")
	openFeed(t, alice, "/v1/sessions/s/events?after_seq=0")
	r := alice.do("GET", "/v1/sessions/s/events", nil)
	var p problem
	if r.Status != http.StatusTooManyRequests || json.Unmarshal(r.Body, &p) != nil || p.Code != "rate_limited" ||
		r.Header.Get("Retry-After") == "" {
		t.Fatalf("alice's third feed: %d %s; want 429 rate_limited with Retry-After", r.Status, r.Body)
	}
	openFeed(t, bob, "/v1/sessions/s/events") // bob's share is his own

	first.close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status := feedStatus(t, alice, "/v1/sessions/s/events")
		if status == http.StatusOK {
			break
		}
		if status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after closing a feed: %d; want its slot back", status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// feedStatus opens a feed only to read its status, and closes it.
func feedStatus(t *testing.T, c *client, path string) int {
	t.Helper()
	req, err := http.NewRequest("GET", c.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
