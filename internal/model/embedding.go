package model

import (
	"net/url"
	"strings"
)

// EmbeddingConfig names an OpenAI-compatible embeddings endpoint (POST URL with
// {"model", "input"}) the server calls to embed an agent's passages and
// messages, and the query text of a search by meaning. The key is never
// stored: APIKeyEnv names the server's environment variable that holds it.
type EmbeddingConfig struct {
	URL        string `json:"url"`
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions,omitempty"`
	APIKeyEnv  string `json:"api_key_env,omitempty"`
}

// EmbeddingKeyEnvPrefix is what every variable an embedding config may name
// starts with: a tenant can make the server send that variable's value to
// the endpoint, so it must never reach the server's other secrets.
const EmbeddingKeyEnvPrefix = "LOGBOOK_EMBEDDING_KEY"

// Check validates what tags cannot: an http(s) URL that one of allowed
// prefixes begins, and a key variable with EmbeddingKeyEnvPrefix. field is
// the config's name in the request, for the error.
func (c EmbeddingConfig) Check(field string, allowed []string) error {
	switch {
	case c.Model == "" || len(c.Model) > 256:
		return Invalid(FieldError{Field: field + ".model", Message: "must be 1 to 256 characters long"})
	case c.Dimensions < 0 || c.Dimensions > 8192:
		return Invalid(FieldError{Field: field + ".dimensions", Message: "must be between 1 and 8192"})
	case len(c.URL) > 2048:
		return Invalid(FieldError{Field: field + ".url", Message: "must be at most 2048 characters long"})
	case len(c.APIKeyEnv) > 128:
		return Invalid(FieldError{Field: field + ".api_key_env", Message: "must be at most 128 characters long"})
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return Invalid(FieldError{Field: field + ".url", Message: "must be an http or https URL without credentials"})
	}
	ok := false
	for _, p := range allowed {
		ok = ok || underURL(u, p)
	}
	if !ok {
		return Invalid(FieldError{Field: field + ".url",
			Message: "is not under an endpoint the server allows (--embedding-allowed-urls)"})
	}
	if c.APIKeyEnv != "" && !strings.HasPrefix(c.APIKeyEnv, EmbeddingKeyEnvPrefix) {
		return Invalid(FieldError{Field: field + ".api_key_env", Message: "must start with " + EmbeddingKeyEnvPrefix})
	}
	return nil
}

// Embedding states of a passage or message the server embeds.
const (
	EmbeddingPending = "pending" // waiting for the endpoint (or its next retry)
	EmbeddingReady   = "ready"   // stored, searchable by meaning
	EmbeddingFailed  = "failed"  // given up: EmbeddingError says why
)

// EmbeddingJob is one text the server embeds: a passage (SessionID empty), a
// message, or one text of an item (Kind JobItem: ID is the item's id, Field
// the text's).
type EmbeddingJob struct {
	Kind      string
	Tenant    string
	AgentID   string
	ID        string // passage or message id
	SessionID string
	Seq       int64
	Text      string
	Attempts  int
	Config    *EmbeddingConfig // the agent's (an item's: the tenant's); nil: the server's default
	Field     string
}

// JobItem is the Kind of an item's text to embed; passages and messages
// have none.
const JobItem = "item"

// EmbeddingResult is a job's outcome: Vector and Model, or Err. Permanent
// errors (the endpoint refused the input) are not retried.
type EmbeddingResult struct {
	Job       EmbeddingJob
	Model     string
	Vector    []float32
	Err       string
	Permanent bool
}

// MessageEmbedding is where a message's embedding stands (GET and PUT
// /v1/sessions/{id}/messages/{message_id}/embedding).
type MessageEmbedding struct {
	SessionID      string  `json:"session_id"`
	MessageID      string  `json:"message_id"`
	Seq            int64   `json:"seq"`
	AgentID        string  `json:"agent_id"`
	EmbeddingModel *string `json:"embedding_model"`
	EmbeddingState string  `json:"embedding_state"`
	EmbeddingError *string `json:"embedding_error"`
	Dimensions     int     `json:"dimensions"`
}

// PutMessageEmbedding is the client's embedding of a message's content.
type PutMessageEmbedding struct {
	Embedding      []float32 `json:"embedding" validate:"required,min=1,max=8192"`
	EmbeddingModel string    `json:"embedding_model" validate:"required,max=256"`
}

// underURL reports whether u is prefix or below it: the same scheme and host
// (port included), and a path that starts with prefix's. Compared parsed, so
// that "http://127.0.0.1:11435" does not allow "http://127.0.0.1:11435.evil.com"
// or "http://127.0.0.1:114350".
func underURL(u *url.URL, prefix string) bool {
	p, err := url.Parse(prefix)
	if err != nil || p.Host == "" || p.User != nil {
		return false
	}
	return strings.EqualFold(u.Scheme, p.Scheme) && strings.EqualFold(u.Host, p.Host) && strings.HasPrefix(u.Path, p.Path)
}
