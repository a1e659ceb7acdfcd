// Package client is the Go client of Logbook, the durable session, message and
// checkpoint store for AI agents.
//
// Two layers: [github.com/logbook/logbook/client/api] is generated from
// openapi.yaml (every route, request and answer type), and this package adds
// what generation does clumsily: one error type for every non-2xx answer
// ([Problem]), pagination as iterators, retries that are safe (every POST,
// and a checkpoint's PUT and PATCH, carries an Idempotency-Key, reused by its
// retries: a retry whose first try was applied gets that try's answer, and
// [Replayed] tells so), the live feed as an
// iterator that reconnects where it left off, streams of many messages on one
// request ([Client.AppendMany], [Client.OpenStream]), helpers that build
// message content ([Parts], [ToolCall], …), and a method for every operation,
// named and taking parameters as the TypeScript and Python clients' do
// (clients/PARITY.md in the repository lists them). [Client.API] is the
// generated layer itself.
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey(os.Getenv("LOGBOOK_API_KEY")))
//	s, err := c.CreateSession(ctx, api.SessionCreate{AgentID: client.Ptr("support-bot")})
//	m, err := c.AppendMessage(ctx, s.ID, api.MessageAppend{Role: api.MessageRoleUser, Content: client.Text("Hi")})
//	for m, err := range c.ListMessages(ctx, s.ID, nil) { … }
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/logbook/logbook/client/api"
)

// Client talks to one Logbook server. It is safe for concurrent use.
type Client struct {
	// API is the generated client of every route, sharing this client's
	// HTTP client, key and retries. Turn its non-2xx answers into a *Problem
	// with [Check].
	API *api.ClientWithResponses

	raw   *api.Client
	retry retryPolicy // for what the retrier cannot resend: a stream's messages
}

// Option configures a Client.
type Option func(*settings)

type settings struct {
	http      *http.Client
	key       string
	userAgent string
	retry     retryPolicy
}

// WithAPIKey sends key as a Bearer token with every request (none is needed
// while the server is in open mode).
func WithAPIKey(key string) Option { return func(s *settings) { s.key = key } }

// WithHTTPClient sends requests through hc instead of a default http.Client.
// Its Timeout, if any, also bounds how long a live feed may stay connected.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) {
		if hc != nil {
			s.http = hc
		}
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(s *settings) { s.userAgent = ua } }

// WithRetries sets how often a failed request is tried again (default 4; 0
// never retries) and the bounds of the exponential backoff between tries
// (default 100ms to 5s). A Retry-After longer than maxWait is not waited
// for: the 429 or 503 comes back as a *Problem with its RetryAfter.
func WithRetries(n int, minWait, maxWait time.Duration) Option {
	return func(s *settings) {
		s.retry.attempts = max(n, 0)
		s.retry.minWait = minWait
		s.retry.maxWait = max(maxWait, minWait)
	}
}

// New returns a client of the server at baseURL (e.g. "http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) (*Client, error) {
	s := settings{
		http:      &http.Client{},
		userAgent: "logbook-go",
		retry:     retryPolicy{attempts: 4, minWait: 100 * time.Millisecond, maxWait: 5 * time.Second},
	}
	for _, o := range opts {
		o(&s)
	}
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, fmt.Errorf("logbook: base URL %q: want http:// or https://", baseURL)
	}
	headers := func(_ context.Context, req *http.Request) error {
		if s.key != "" {
			req.Header.Set("Authorization", "Bearer "+s.key)
		}
		if s.userAgent != "" {
			req.Header.Set("User-Agent", s.userAgent)
		}
		return nil
	}
	raw, err := api.NewClient(strings.TrimSuffix(baseURL, "/"),
		api.WithHTTPClient(&retrier{next: s.http, policy: s.retry}),
		api.WithRequestEditorFn(headers))
	if err != nil {
		return nil, err
	}
	return &Client{API: &api.ClientWithResponses{ClientInterface: raw}, raw: raw, retry: s.retry}, nil
}

// Check turns a non-2xx answer of the generated client into a *Problem (a
// 304 Not Modified, the answer to If-None-Match, is no error either):
//
//	r, err := c.API.GetAgentWithResponse(ctx, "support-bot")
//	if err == nil {
//		err = client.Check(r.HTTPResponse, r.Body)
//	}
func Check(resp *http.Response, body []byte) error {
	if resp == nil {
		return errors.New("logbook: no response")
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 || resp.StatusCode == http.StatusNotModified {
		return nil
	}
	return problemFrom(resp, body)
}

// decode reads a whole answer: a 2xx body into a new T, anything else into a
// *Problem.
func decode[T any](resp *http.Response, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("logbook: read answer: %w", err)
	}
	if err := Check(resp, body); err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("logbook: decode %s %s answer: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return v, nil
}

// Ptr returns a pointer to v, for the optional fields of request types.
func Ptr[T any](v T) *T { return &v }
