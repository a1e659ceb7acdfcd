// Package embed computes embeddings through OpenAI-compatible endpoints
// (POST {"model", "input"} → {"data": [{"index", "embedding"}]}: OpenAI,
// Ollama's /v1/embeddings, vLLM, LiteLLM …): the worker that embeds stored
// passages and messages outside the writer, and the embedding of a search's
// query text.
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
	HTTP    *http.Client
	Getenv  func(string) string // where api_key_env is read
	Timeout time.Duration       // per call
	Faults  *repo.Faults        // embedding_timeout, for tests
}

// Error is an endpoint's failure. Permanent ones (the endpoint refused the
// input or answered nonsense) are not worth retrying.
type Error struct {
	Msg       string
	Permanent bool
}

func (e *Error) Error() string { return e.Msg }

// maxAnswerBytes bounds what is read of an answer: 64 texts of 8,192
// dimensions written as JSON numbers fit well inside it.
const maxAnswerBytes = 64 << 20

// Embed returns one vector per text, in order.
func (c *Client) Embed(ctx context.Context, cfg model.EmbeddingConfig, texts []string) ([][]float32, error) {
	if c.Faults.Fire(repo.PointEmbeddingTimeout) == repo.FaultError {
		return nil, &Error{Msg: "the embedding endpoint timed out (injected)"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	body := map[string]any{"model": cfg.Model, "input": texts, "encoding_format": "float"}
	if cfg.Dimensions > 0 {
		body["dimensions"] = cfg.Dimensions
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(b))
	if err != nil {
		return nil, &Error{Msg: "embedding url: " + err.Error(), Permanent: true}
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.APIKeyEnv != "" && c.Getenv != nil {
		if key := c.Getenv(cfg.APIKeyEnv); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := c.http().Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &Error{Msg: fmt.Sprintf("the embedding endpoint did not answer within %s", c.timeout())}
		}
		return nil, &Error{Msg: "the embedding endpoint could not be reached: " + err.Error()}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, &Error{Msg: "reading the embedding endpoint's answer: " + err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		// 408, 429 and 5xx pass; any other refusal is about the input.
		transient := resp.StatusCode == 408 || resp.StatusCode == 429 || resp.StatusCode >= 500
		return nil, &Error{Msg: fmt.Sprintf("the embedding endpoint answered %d: %s", resp.StatusCode, clip(raw)), Permanent: !transient}
	}
	return decodeAnswer(raw, len(texts), cfg.Dimensions)
}

func decodeAnswer(raw []byte, n, dims int) ([][]float32, error) {
	var ans struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, &Error{Msg: "the embedding endpoint's answer is not an embeddings list: " + err.Error(), Permanent: true}
	}
	if len(ans.Data) != n {
		return nil, &Error{Msg: fmt.Sprintf("the embedding endpoint answered %d embeddings for %d texts", len(ans.Data), n), Permanent: true}
	}
	out := make([][]float32, n)
	for _, d := range ans.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, &Error{Msg: fmt.Sprintf("the embedding endpoint answered index %d twice or out of range", d.Index), Permanent: true}
		}
		if len(d.Embedding) == 0 || len(d.Embedding) > 8192 || (dims > 0 && len(d.Embedding) != dims) ||
			(d.Index > 0 && out[0] != nil && len(d.Embedding) != len(out[0])) {
			return nil, &Error{Msg: fmt.Sprintf("the embedding endpoint answered %d dimensions, not %d", len(d.Embedding), dims), Permanent: true}
		}
		v := make([]float32, len(d.Embedding))
		for i, f := range d.Embedding {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, &Error{Msg: "the embedding endpoint answered a number that is not finite", Permanent: true}
			}
			v[i] = float32(f)
		}
		out[d.Index] = v
	}
	for _, v := range out[1:] {
		if len(v) != len(out[0]) {
			return nil, &Error{Msg: "the embedding endpoint answered embeddings of different lengths", Permanent: true}
		}
	}
	return out, nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 30 * time.Second
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}
