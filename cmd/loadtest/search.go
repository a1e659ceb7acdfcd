package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// waitIndexed searches a tenant's messages for word until the answer reports
// none of them unindexed or limit has passed, and returns the first and the last
// answers' index_lag and whether the last found the word. A search is a read,
// off the writer, so asking does not delay the indexing it waits for.
func waitIndexed(ctx context.Context, c *http.Client, base, key, word string, limit time.Duration) (caughtUp bool, firstLag, lag int64, found bool, err error) {
	u := base + "/v1/messages/search?q=" + url.QueryEscape(word)
	deadline := time.Now().Add(limit)
	for first := true; ; first = false {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false, firstLag, 0, false, err
		}
		authorize(req, key)
		var buf bytes.Buffer
		if err := do(c, req, http.StatusOK, &buf); err != nil {
			return false, firstLag, 0, false, err
		}
		var ans struct {
			IndexLag int64             `json:"index_lag"`
			Data     []json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(buf.Bytes(), &ans); err != nil {
			return false, firstLag, 0, false, fmt.Errorf("GET %s: %w", u, err)
		}
		if first {
			firstLag = ans.IndexLag
		}
		if ans.IndexLag == 0 || time.Now().After(deadline) {
			return ans.IndexLag == 0, firstLag, ans.IndexLag, len(ans.Data) > 0, nil
		}
		select {
		case <-ctx.Done():
			return false, firstLag, ans.IndexLag, false, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}
