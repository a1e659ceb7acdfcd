package client

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// retryPolicy says how often and how long to wait. A request is sent again
// only when doing so cannot write anything twice:
//   - after 503 and 429, whatever the method: the server applied nothing
//     (storage_unavailable and rate_limited say so), waiting Retry-After;
//   - after a connection error (the answer may have been lost after the
//     server applied the request) only when the request is safe to repeat: a
//     GET, a request with an Idempotency-Key, or one its caller marked so
//     (repair is idempotent by contract).
//
// Any other answer, 4xx or 5xx, is final.
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
