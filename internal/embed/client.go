// Package embed computes embeddings through OpenAI-compatible endpoints
// (POST {"model", "input"} → {"data": [{"index", "embedding"}]}: OpenAI,
// Ollama's /v1/embeddings, vLLM, LiteLLM …): the worker that embeds stored
// passages and messages outside the writer, and the embedding of a search's
// query text.
//
// A tenant names the endpoint, so the client trusts nothing of it: the URL
// is checked against the allowlist again at every call (the allowlist may
// have changed since the config was stored), redirects are never followed
// (they would lead outside the allowlist, with the tenant's key), the key
// sent is the tenant's own variable's and no other, and what the endpoint
// answers never reaches a tenant: failures are described in Logbook's own
// fixed words, the details going only to the server's log.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Client calls embedding endpoints.
type Client struct {
	// Transport makes the calls; nil: Go's default. It is used as it is,
	// without an http.Client around it, so that a redirect is never
	// followed: an allowed endpoint answering 302 or 307 would otherwise
	// have the server send the tenant's key, and on 307 its texts,
	// wherever the answer points (even a Location that does not parse
	// stays the endpoint's failure, not a network error).
	Transport http.RoundTripper
	Getenv    func(string) string // where the keys' variables are read
	Timeout   time.Duration       // per call
	// Allowed are the URL prefixes (--embedding-allowed-urls, with
	// --embedding-url) every call must be under; none: no call is made.
	Allowed  []string
	Observer Observer     // metrics; nil: none
	Faults   *repo.Faults // embedding_timeout, for tests
}

// Endpoint is where a tenant's texts go: its agent's or its own config, or
// the server's (Server), whose key variable is the operator's choice. A
// tenant's config may name only the tenant's own variable
// (model.TenantEmbeddingKeyEnv).
type Endpoint struct {
	Config model.EmbeddingConfig
	Tenant string
	Server bool
}

// Reasons an endpoint failed: a fixed set, for metrics and for the fixed
// descriptions tenants read.
const (
	ReasonOK          = "ok"
	ReasonRefused     = "refused"     // the config is not allowed now: the call was not made
	ReasonTimeout     = "timeout"     // no answer within the timeout
	ReasonUnreachable = "unreachable" // no connection, or it broke
	ReasonRedirect    = "redirect"    // a 3xx, not followed
	ReasonStatus      = "status"      // another status than 200
	ReasonAnswer      = "answer"      // 200 with something that is not the embeddings asked for
)

// Error is an endpoint's failure. Msg is Logbook's own description, safe to
// store as a text's embedding_error and to show a tenant: it never quotes
// the endpoint's answer, nor an address it resolved to. Cause carries the
// details, for the server's log only. Permanent ones (the endpoint refused
// the input or answered nonsense) are not worth retrying.
type Error struct {
	Reason    string
	Msg       string
	Permanent bool
	Cause     error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Cause }

// maxAnswerBytes bounds what is read of an answer: 64 texts of 8,192
// dimensions written as JSON numbers fit well inside it.
const maxAnswerBytes = 64 << 20

// maxRefusalBytes bounds what is read of a refusal, for the server's log.
const maxRefusalBytes = 512

// call is an Endpoint checked and resolved: what is sent, and where.
type call struct {
	url    string // canonical
	host   string // for metrics: the path and query are the tenant's
	keyEnv string // "": no key
	cfg    model.EmbeddingConfig
}

// resolve checks ep as it stands now: a URL in canonical form under the
// allowlist, and a key variable the tenant may use.
func (c *Client) resolve(ep Endpoint) (call, *Error) {
	u, err := model.CanonicalEmbeddingURL(ep.Config.URL)
	if err != nil || !model.EmbeddingURLAllowed(u, c.Allowed) {
		return call{}, &Error{Reason: ReasonRefused, Permanent: true,
			Msg:   "the embedding endpoint's URL is not under one the server allows (--embedding-allowed-urls)",
			Cause: fmt.Errorf("url %q: %v", ep.Config.URL, err)}
	}
	cl := call{url: u, host: model.EmbeddingURLHost(u), cfg: ep.Config, keyEnv: ep.Config.APIKeyEnv}
	if !ep.Server && cl.keyEnv != "" && cl.keyEnv != model.TenantEmbeddingKeyEnv(ep.Tenant) {
		return call{}, &Error{Reason: ReasonRefused, Permanent: true,
			Msg:   "the embedding config's api_key_env is not this tenant's own variable, " + model.TenantEmbeddingKeyEnv(ep.Tenant),
			Cause: fmt.Errorf("api_key_env %q of tenant %q", cl.keyEnv, ep.Tenant)}
	}
	return cl, nil
}

// Embed returns one vector per text, in order. Its errors are *Error.
func (c *Client) Embed(ctx context.Context, ep Endpoint, texts []string) ([][]float32, error) {
	cl, e := c.resolve(ep)
	if e != nil {
		return nil, e
	}
	return c.embed(ctx, cl, texts)
}

func (c *Client) embed(ctx context.Context, cl call, texts []string) ([][]float32, error) {
	start := time.Now()
	vecs, err := c.post(ctx, cl, texts)
	if c.Observer != nil {
		reason := ReasonOK
		var e *Error
		if errors.As(err, &e) {
			reason = e.Reason
		}
		c.Observer.EmbeddingCall(cl.host, reason, time.Since(start))
	}
	return vecs, err
}

func (c *Client) post(ctx context.Context, cl call, texts []string) ([][]float32, error) {
	if c.Faults.Fire(repo.PointEmbeddingTimeout) == repo.FaultError {
		return nil, c.timedOut(errors.New("injected"))
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	body := map[string]any{"model": cl.cfg.Model, "input": texts, "encoding_format": "float"}
	if cl.cfg.Dimensions > 0 {
		body["dimensions"] = cl.cfg.Dimensions
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.url, bytes.NewReader(b))
	if err != nil {
		return nil, &Error{Reason: ReasonRefused, Msg: "the embedding endpoint's URL cannot be called", Permanent: true, Cause: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if cl.keyEnv != "" && c.Getenv != nil {
		if key := c.Getenv(cl.keyEnv); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := c.transport().RoundTrip(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, c.timedOut(err)
		}
		return nil, unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBytes))
		cause := fmt.Errorf("HTTP %d: %q", resp.StatusCode, raw)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return nil, &Error{Reason: ReasonRedirect, Permanent: true, Cause: cause,
				Msg: fmt.Sprintf("the embedding endpoint answered HTTP %d, a redirect, which the server does not follow", resp.StatusCode)}
		}
		// 408, 429 and 5xx pass; any other refusal is about the input.
		transient := resp.StatusCode == 408 || resp.StatusCode == 429 || resp.StatusCode >= 500
		return nil, &Error{Reason: ReasonStatus, Permanent: !transient, Cause: cause,
			Msg: fmt.Sprintf("the embedding endpoint answered HTTP %d", resp.StatusCode)}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, c.timedOut(err)
		}
		return nil, unreachable(err)
	}
	return decodeAnswer(raw, len(texts), cl.cfg.Dimensions)
}

func (c *Client) timedOut(cause error) *Error {
	return &Error{Reason: ReasonTimeout, Cause: cause,
		Msg: fmt.Sprintf("the embedding endpoint did not answer within %s", c.timeout())}
}

// unreachable is a connection that failed or broke. Its error may name the
// addresses a host resolved to: it stays in Cause.
func unreachable(cause error) *Error {
	return &Error{Reason: ReasonUnreachable, Msg: "the embedding endpoint could not be reached", Cause: cause}
}

func badAnswer(msg string, cause error) *Error {
	return &Error{Reason: ReasonAnswer, Msg: msg, Permanent: true, Cause: cause}
}

func decodeAnswer(raw []byte, n, dims int) ([][]float32, error) {
	var ans struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, badAnswer("the embedding endpoint's answer is not an embeddings list", err)
	}
	if len(ans.Data) != n {
		return nil, badAnswer(fmt.Sprintf("the embedding endpoint answered %d embeddings for %d texts", len(ans.Data), n), nil)
	}
	out := make([][]float32, n)
	for _, d := range ans.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, badAnswer("the embedding endpoint answered an index twice or out of range", fmt.Errorf("index %d", d.Index))
		}
		switch {
		case dims > 0 && len(d.Embedding) != dims:
			return nil, badAnswer(fmt.Sprintf("the embedding endpoint answered %d dimensions, not %d", len(d.Embedding), dims), nil)
		case len(d.Embedding) == 0 || len(d.Embedding) > 8192:
			return nil, badAnswer(fmt.Sprintf("the embedding endpoint answered %d dimensions, not 1 to 8192", len(d.Embedding)), nil)
		}
		v := make([]float32, len(d.Embedding))
		for i, f := range d.Embedding {
			// What is stored is a float32: a number finite as a float64
			// but not as a float32 (1e39) would be stored as infinite, and
			// every export and search by meaning of the agent would fail.
			v[i] = float32(f)
			if g := float64(v[i]); math.IsNaN(g) || math.IsInf(g, 0) {
				return nil, badAnswer("the embedding endpoint answered a number outside the range of a 32-bit float", fmt.Errorf("%g", f))
			}
		}
		out[d.Index] = v
	}
	for _, v := range out[1:] {
		if len(v) != len(out[0]) {
			return nil, badAnswer("the embedding endpoint answered embeddings of different lengths", nil)
		}
	}
	return out, nil
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 30 * time.Second
}

func (c *Client) transport() http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}
