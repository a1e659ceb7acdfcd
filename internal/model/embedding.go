package model

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
)

// MaxEmbeddingDims bounds an embedding's length, wherever one is given (a
// passage, a message, a search's query_embedding, an endpoint's dimensions);
// the validate tags say the same.
const MaxEmbeddingDims = 8192

// CheckVector is the one rule for an embedding's numbers, whoever sends them:
// 1 to MaxEmbeddingDims of them, each a finite float32. field names the
// vector in the error.
func CheckVector(field string, v []float32) error {
	switch {
	case len(v) == 0:
		return Invalid(FieldError{Field: field, Message: "must have at least 1 items"})
	case len(v) > MaxEmbeddingDims:
		return Invalid(FieldError{Field: field, Message: "must have at most " + strconv.Itoa(MaxEmbeddingDims) + " items"})
	}
	for _, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return Invalid(FieldError{Field: field, Message: "must hold finite numbers"})
		}
	}
	return nil
}

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

// EmbeddingKeyEnvPrefix is the variable of the server's own endpoint
// (--embedding-url), and what each tenant's variable starts with.
const EmbeddingKeyEnvPrefix = "LOGBOOK_EMBEDDING_KEY"

// MaxEmbeddingKeyEnv is the longest TenantEmbeddingKeyEnv: a tenant name of
// 128 bytes, hex-encoded.
const MaxEmbeddingKeyEnv = len(EmbeddingKeyEnvPrefix) + len("_X_") + 2*128

// TenantEmbeddingKeyEnv is the one variable whose value the server sends as
// the key of tenant's endpoints (its agents' and its own): a tenant can have
// the server send that value to any allowed URL, so it must never reach
// another tenant's key or the server's. Derived, not chosen, and one-to-one:
// a name of lower-case letters and digits is upper-cased
// (acme → LOGBOOK_EMBEDDING_KEY_ACME); any other is hex-encoded after "X_"
// (Acme.eu → LOGBOOK_EMBEDDING_KEY_X_41636D652E6575), which the first form,
// having no '_', can never produce.
func TenantEmbeddingKeyEnv(tenant string) string {
	plain := tenant != ""
	for i := 0; i < len(tenant); i++ {
		c := tenant[i]
		plain = plain && ('a' <= c && c <= 'z' || '0' <= c && c <= '9')
	}
	if plain {
		return EmbeddingKeyEnvPrefix + "_" + strings.ToUpper(tenant)
	}
	return EmbeddingKeyEnvPrefix + "_X_" + strings.ToUpper(hex.EncodeToString([]byte(tenant)))
}

// Check validates a tenant's config (an agent's or the tenant's own) and
// rewrites its URL to the canonical form that is stored and called: the
// endpoint's checks (CheckEndpoint), and a key variable that is tenant's own
// (TenantEmbeddingKeyEnv) or none. field is the config's name in the
// request, for the error.
func (c *EmbeddingConfig) Check(field, tenant string, allowed []string) error {
	if err := c.CheckEndpoint(field, allowed); err != nil {
		return err
	}
	if own := TenantEmbeddingKeyEnv(tenant); c.APIKeyEnv != "" && c.APIKeyEnv != own {
		return Invalid(FieldError{Field: field + ".api_key_env",
			Message: "must be " + own + ", the one variable this tenant's endpoints may use, or left out"})
	}
	return nil
}

// CheckEndpoint validates what tags cannot: a model, dimensions in range, and
// an http(s) URL that has a canonical form (CanonicalEmbeddingURL), which
// replaces it, under one of allowed (EmbeddingURLAllowed).
func (c *EmbeddingConfig) CheckEndpoint(field string, allowed []string) error {
	switch {
	case c.Model == "" || len(c.Model) > 256:
		return Invalid(FieldError{Field: field + ".model", Message: "must be 1 to 256 characters long"})
	case c.Dimensions < 0 || c.Dimensions > 8192:
		return Invalid(FieldError{Field: field + ".dimensions", Message: "must be between 1 and 8192"})
	case len(c.URL) > 2048:
		return Invalid(FieldError{Field: field + ".url", Message: "must be at most 2048 characters long"})
	case len(c.APIKeyEnv) > MaxEmbeddingKeyEnv:
		return Invalid(FieldError{Field: field + ".api_key_env", Message: "must be at most " + strconv.Itoa(MaxEmbeddingKeyEnv) + " characters long"})
	}
	u, err := CanonicalEmbeddingURL(c.URL)
	if err != nil {
		return Invalid(FieldError{Field: field + ".url", Message: err.Error()})
	}
	if !EmbeddingURLAllowed(u, allowed) {
		return Invalid(FieldError{Field: field + ".url",
			Message: "is not under an endpoint the server allows (--embedding-allowed-urls)"})
	}
	c.URL = u
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
