package client

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// retryPolicy says how often and how long to wait. A request is sent again
// only when doing so cannot write anything twice:
//   - after 503 and 429, whatever the method: the server applied nothing
//     (storage_unavailable and rate_limited say so), waiting Retry-After;
//   - after 409 idempotency_in_progress: the same key's first try is still
//     being served, and this one did nothing;
//   - after a connection error (the answer may have been lost after the
//     server applied the request) only when the request is safe to repeat: a
//     GET, a request with an Idempotency-Key (every POST, and a checkpoint's
//     PUT and PATCH, gets one: keyed), or one its caller marked so.
//
// Any other answer, 4xx or 5xx, is final. A retry whose first try was
// applied is answered with that try's answer (Idempotent-Replayed: true:
// Replayed), or, when the server lost it, 409 idempotency_applied.
type retryPolicy struct {
	attempts         int // tries after the first
	minWait, maxWait time.Duration
}

// backoff is the wait before try attempt+1: exponential from minWait, capped
// at maxWait, with jitter so that many clients do not come back at once.
func (p retryPolicy) backoff(attempt int) time.Duration {
	d := p.minWait << min(attempt, 20)
	if d > p.maxWait || d <= 0 {
		d = p.maxWait
	}
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// wait says whether to try again after this outcome, and how long to wait.
func (p retryPolicy) wait(req *http.Request, resp *http.Response, err error, attempt int) (time.Duration, bool) {
	if req.Context().Err() != nil {
		return 0, false
	}
	if err != nil {
		return p.backoff(attempt), safeToRepeat(req)
	}
	if resp.StatusCode == http.StatusConflict && inProgress(resp) {
		return p.backoff(attempt), true
	}
	if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	ra := retryAfter(resp.Header)
	if ra > p.maxWait {
		return 0, false // longer than the caller wants to block: let it decide
	}
	return max(ra, p.backoff(attempt)), true
}

type repeatableKey struct{}

// repeatable marks the requests made with ctx as safe to send again after a
// connection error.
func repeatable(ctx context.Context) context.Context {
	return context.WithValue(ctx, repeatableKey{}, true)
}

// inProgress reports a 409 idempotency_in_progress, leaving resp's body as
// it was for whoever reads it next.
func inProgress(resp *http.Response) bool {
	head, err := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return err == nil && bytes.Contains(head, []byte(`"code":"idempotency_in_progress"`))
}

// keyed says whether req gets an Idempotency-Key of its own when it carries
// none: every POST (a stream's header names its lines) and a checkpoint's
// PUT and PATCH, so that their retries cannot apply them twice.
func keyed(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost:
		return true
	case http.MethodPut, http.MethodPatch:
		return strings.HasSuffix(req.URL.Path, "/checkpoint")
	}
	return false
}

// Replayed reports an answer that repeats an earlier try's (the server
// applied that one, and nothing now): Idempotent-Replayed: true. The typed
// methods answer such a retry as if it were the first; c.API's responses
// carry the header for whoever must tell.
func Replayed(resp *http.Response) bool {
	return resp != nil && resp.Header.Get("Idempotent-Replayed") == "true"
}

func safeToRepeat(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Context().Value(repeatableKey{}) != nil
}

// retrier is the HTTP client under the generated one: every request, the
// generated layer's included, gets the policy.
type retrier struct {
	next   *http.Client
	policy retryPolicy
}

func (r *retrier) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if keyed(req) && req.Header.Get("Idempotency-Key") == "" {
		req = req.Clone(ctx) // the caller's request is not changed
		req.Header.Set("Idempotency-Key", newKey())
	}
	for attempt := 0; ; attempt++ {
		resp, err := r.next.Do(req)
		if attempt >= r.policy.attempts || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
			return resp, err
		}
		wait, again := r.policy.wait(req, resp, err, attempt)
		if !again {
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(ctx)
			req.Body = body
		}
	}
}
