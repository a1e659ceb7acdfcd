package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// Embeddings is the embedding worker's side of storage: it claims texts to
// embed, and stores what the endpoint answered. Nothing here runs while an
// endpoint is called, so a slow endpoint never holds the writer.
type Embeddings interface {
	// ClaimEmbeddings takes due passages and messages to embed, round robin
	// over the tenants that have any (see EmbeddingClaim), and makes them due
	// again only after c.Lease: a worker that dies holding them lets another
	// (or its restart) retry.
	ClaimEmbeddings(ctx context.Context, c EmbeddingClaim) ([]model.EmbeddingJob, error)
	// SaveEmbeddings stores each result: a vector makes the row ready (and
	// pins the agent's model and dimensions if nothing has); an error makes
	// it due again at RetryAt, or failed when Permanent or after maxAttempts;
	// Deferred makes it due at RetryAt, as if it had not been claimed.
	SaveEmbeddings(ctx context.Context, results []EmbeddingOutcome, maxAttempts int) error
	// PendingEmbeddings counts the passages and messages waiting for an
	// embedding (due or not), for metrics.
	PendingEmbeddings(ctx context.Context) (passages, messages int64, err error)
	// QueueMessageEmbeddings follows the event log from where it last stopped
	// and makes the messages appended since, of sessions whose agent names an
	// endpoint (every agent's, with serverDefault), pending. It returns how
	// many events it read (limit at most): limit means there may be more.
	QueueMessageEmbeddings(ctx context.Context, serverDefault bool, limit int) (int, error)
	// PutMessageEmbedding stores the client's embedding of a message of the
	// session (stored in it, not inherited by a fork), checked against and
	// pinning the session's agent's model and dimensions. Errors:
	// KindNotFound; KindInvalid naming embedding or embedding_model, or
	// agent_id when the session has no agent.
	PutMessageEmbedding(ctx context.Context, tenant, sessionID, messageID string, in model.PutMessageEmbedding) (model.MessageEmbedding, error)
	// GetMessageEmbedding says where a message's embedding stands.
	// Errors: KindNotFound (the session, the message, or its embedding).
	GetMessageEmbedding(ctx context.Context, tenant, sessionID, messageID string) (model.MessageEmbedding, error)
	// TenantEmbedding returns the tenant's endpoint (nil: none), for its
	// agents that name none.
	TenantEmbedding(ctx context.Context, tenant string) (*model.EmbeddingConfig, error)
	// SetTenantEmbedding sets it; nil removes it.
	SetTenantEmbedding(ctx context.Context, tenant string, c *model.EmbeddingConfig) error
}

// EmbeddingOutcome is a result with when to retry it if it failed.
type EmbeddingOutcome struct {
	model.EmbeddingResult
	RetryAt model.Time
	// Deferred: the job was not tried (its endpoint was busy); it falls due
	// at RetryAt again, without counting an attempt.
	Deferred bool
}

// EmbeddingClaim is one claim of the embedding worker. It visits the
// tenants that have pending texts in the order of their names, starting
// after After and wrapping around, and takes up to PerTenant due texts of
// each (oldest due first) until Tenants have given some: so one tenant's
// backlog, however long, waits its turn like any other's.
type EmbeddingClaim struct {
	After     string // the tenant the worker served last
	Tenants   int
	PerTenant int
	// Skip names tenants not served by this claim: the worker has their
	// earlier texts waiting for a busy endpoint.
	Skip  map[string]bool
	Lease time.Duration
}

// WalkEmbeddingClaim runs c's visit for a backend: next names the first
// tenant after a name that has pending texts ("" for none), take claims up
// to n due texts of one tenant. The visit is bounded: a claim looks at no
// more tenants than it may serve, the ones it skips, and a few with
// nothing due yet.
func WalkEmbeddingClaim(c EmbeddingClaim, next func(after string) (string, error),
	take func(tenant string, n int) ([]model.EmbeddingJob, error)) ([]model.EmbeddingJob, error) {
	var (
		jobs   []model.EmbeddingJob
		cur    = c.After
		seen   = map[string]bool{} // by the store's order of names, which need not be Go's
		served = 0
	)
	for looks := 2*c.Tenants + len(c.Skip) + 8; served < c.Tenants && looks > 0; looks-- {
		t, err := next(cur)
		if err != nil {
			return nil, err
		}
		if t == "" && cur != "" && c.After != "" {
			cur = "" // wrap around, up to After
			continue
		}
		if t == "" || seen[t] {
			break
		}
		seen[t], cur = true, t
		if c.Skip[t] {
			continue
		}
		got, err := take(t, c.PerTenant)
		if err != nil {
			return nil, err
		}
		if len(got) > 0 {
			jobs, served = append(jobs, got...), served+1
		}
	}
	return jobs, nil
}

// NewPassageEmbedding is a new passage's embedding_model and embedding_state:
// ready with the client's embedding, pending when the server will embed it,
// neither otherwise.
func NewPassageEmbedding(in model.CreatePassage, serverEmbeds bool) (embeddingModel, state *string) {
	switch {
	case len(in.Embedding) > 0:
		m, st := in.EmbeddingModel, model.EmbeddingReady
		return &m, &st
	case serverEmbeds:
		st := model.EmbeddingPending
		return nil, &st
	}
	return nil, nil
}

// EncodeEmbeddingConfig is an agent's embedding_config column (nil: none).
func EncodeEmbeddingConfig(c *model.EmbeddingConfig) *string {
	if c == nil {
		return nil
	}
	b, _ := json.Marshal(c)
	s := string(b)
	return &s
}

// DecodeEmbeddingConfig reads what EncodeEmbeddingConfig wrote.
func DecodeEmbeddingConfig(s *string) (*model.EmbeddingConfig, error) {
	if s == nil {
		return nil, nil
	}
	var c model.EmbeddingConfig
	if err := json.Unmarshal([]byte(*s), &c); err != nil {
		return nil, fmt.Errorf("embedding_config: %w", err)
	}
	return &c, nil
}

// CheckAgentEmbedding refuses an endpoint whose model or dimensions differ
// from what the agent's embeddings are pinned to: its vectors could not be
// compared with the stored ones.
func CheckAgentEmbedding(a model.Agent, c *model.EmbeddingConfig) error {
	if c == nil || a.EmbeddingModel == nil {
		return nil
	}
	if c.Model != *a.EmbeddingModel {
		return model.Invalid(model.FieldError{Field: "embedding.model",
			Message: "the agent's embeddings are made with " + strconv.Quote(*a.EmbeddingModel)})
	}
	if c.Dimensions != 0 && a.EmbeddingDims != nil && c.Dimensions != *a.EmbeddingDims {
		return model.Invalid(model.FieldError{Field: "embedding.dimensions",
			Message: "the agent's embeddings have " + strconv.Itoa(*a.EmbeddingDims) + " dimensions"})
	}
	return nil
}

// EmbeddingRetry is a failed result's next state and due time: failed (no
// due time) when permanent or out of attempts, else pending until RetryAt.
func EmbeddingRetry(r EmbeddingOutcome, maxAttempts int) (state string, due *int64) {
	if r.Permanent || r.Job.Attempts+1 >= maxAttempts {
		return model.EmbeddingFailed, nil
	}
	t := int64(r.RetryAt)
	return model.EmbeddingPending, &t
}

// PinMismatch says why r cannot be stored beside embeddings of pinned with
// dims dimensions ("" when it can).
func PinMismatch(pinned string, dims int, r EmbeddingOutcome) string {
	if r.Model != pinned || len(r.Vector) != dims {
		return fmt.Sprintf("the endpoint answered %d dimensions of %q; the agent's embeddings are %d of %q",
			len(r.Vector), r.Model, dims, pinned)
	}
	return ""
}

// NoAgentForEmbedding refuses an embedding for a message of a session
// without an agent: embeddings are pinned, and searched, per agent.
func NoAgentForEmbedding() error {
	return model.Invalid(model.FieldError{Field: "agent_id",
		Message: "the session has no agent: a message's embedding belongs to its session's agent"})
}

// EmbeddingPin is what an append's embeddings are checked against: the
// session's agent and what its embeddings are pinned to.
type EmbeddingPin struct {
	AgentID *string // the session's agent; nil: it has none
	Stored  bool    // the agent is stored in the tenant
	Model   string  // the pinned model; "" with Dims 0: nothing is pinned yet
	Dims    int
	Pins    bool // the append pins the agent: nothing was pinned before it
}

// Carried is the embedding one message of an append carries, as the
// backends prepared it: its model and its number of dimensions (0: none).
type Carried struct {
	Model string
	Dims  int
}

// Admit checks a message's embedding of dims numbers made with embModel
// against the pin, and returns the pin after it: the first embedding of an
// agent with none pins its model and dimensions, as a passage's does. A
// refusal names the field at fault (embedding or embedding_model) and why.
func (p EmbeddingPin) Admit(embModel string, dims int) (after EmbeddingPin, field, problem string) {
	switch {
	case p.AgentID == nil:
		return p, "embedding", "the session has no agent: a message's embedding belongs to its session's agent"
	case !p.Stored:
		return p, "embedding", "the session's agent " + strconv.Quote(*p.AgentID) +
			" is not stored on this server: a message's embedding belongs to a stored agent (POST /v1/agents)"
	case p.Dims == 0:
		p.Model, p.Dims, p.Pins = embModel, dims, true
	case embModel != p.Model:
		return p, "embedding_model", "the agent's embeddings are made with " + strconv.Quote(p.Model)
	case dims != p.Dims:
		return p, "embedding", "must have " + strconv.Itoa(p.Dims) + " numbers, as the agent's other embeddings"
	}
	return p, "", ""
}

// CheckMessageEmbeddings checks the embeddings an append carries (of each
// message, by index) at idx, the messages it stores, against pin, in order,
// as both backends do after every other check of the append, and returns
// the pin after them. batch names each message's fields ("messages[2].").
// Errors: KindInvalid naming embedding or embedding_model.
func CheckMessageEmbeddings(carried func(i int) Carried, idx []int, batch bool, pin EmbeddingPin) (EmbeddingPin, error) {
	for _, i := range idx {
		c := carried(i)
		if c.Dims == 0 {
			continue
		}
		var field, problem string
		if pin, field, problem = pin.Admit(c.Model, c.Dims); problem != "" {
			if batch {
				field = "messages[" + strconv.Itoa(i) + "]." + field
			}
			return pin, model.Invalid(model.FieldError{Field: field, Message: problem})
		}
	}
	return pin, nil
}
