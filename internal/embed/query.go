package embed

import (
	"context"
	"errors"
	"sync"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Query embeds a search's query text with the endpoint that embeds the
// agent's memory, so that the two can be compared.
type Query struct {
	Store   repo.Store
	Client  *Client
	Default *model.EmbeddingConfig
	Log     zerolog.Logger // where a failed call's details go; the client reads only Logbook's words

	mu    sync.Mutex
	cache map[queryKey][]float32
}

// queryKey has the tenant in it (Endpoint): a tenant must not learn, from a
// search answered faster, what another searched for.
type queryKey struct {
	ep   Endpoint
	text string
}

// queryCacheSize bounds the cache of recent query embeddings: an agent
// repeating a search does not pay for the endpoint twice.
const queryCacheSize = 1024

// EmbedQuery embeds text for a search of agentID's memory ("": the
// tenant's) with the first endpoint of: the agent's, the tenant's, the
// server's. Errors: KindInvalid naming
// query_embedding when no endpoint applies, or its model is not the one the
// agent's embeddings are pinned to; embedding_unavailable (503) when the
// endpoint fails.
func (q *Query) EmbedQuery(ctx context.Context, tenant, agentID, text string) ([]float32, error) {
	cfg, server := q.Default, true
	tc, err := q.Store.TenantEmbedding(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		cfg, server = tc, false
	}
	if agentID != "" {
		a, err := q.Store.GetAgent(ctx, tenant, agentID)
		if err != nil {
			return nil, err
		}
		if a.Embedding != nil {
			cfg, server = a.Embedding, false
		}
		if cfg != nil && a.EmbeddingModel != nil && *a.EmbeddingModel != cfg.Model {
			return nil, model.Invalid(model.FieldError{Field: "query_embedding",
				Message: "is required: the agent's embeddings are made with " + *a.EmbeddingModel + ", not by the endpoint configured now"})
		}
	}
	if cfg == nil {
		return nil, model.Invalid(model.FieldError{Field: "query_embedding",
			Message: "is required: no embedding endpoint is configured for the agent or the server to embed q"})
	}
	return q.embed(ctx, Endpoint{Config: *cfg, Tenant: tenant, Server: server}, text)
}

// EmbedItemsQuery embeds a search's query text for the tenant's items with
// the tenant's endpoint, else the server's, and names the model: an item's
// texts are compared with it only if that model embedded them. Errors:
// KindInvalid naming query when no endpoint applies; embedding_unavailable
// (503) when the endpoint fails.
func (q *Query) EmbedItemsQuery(ctx context.Context, tenant, text string) ([]float32, string, error) {
	cfg, server := q.Default, true
	tc, err := q.Store.TenantEmbedding(ctx, tenant)
	if err != nil {
		return nil, "", err
	}
	if tc != nil {
		cfg, server = tc, false
	}
	if cfg == nil {
		return nil, "", model.Invalid(model.FieldError{Field: "query",
			Message: "needs an embedding endpoint: none is configured for the tenant (PUT /v1/admin/embedding) or the server (--embedding-url)"})
	}
	v, err := q.embed(ctx, Endpoint{Config: *cfg, Tenant: tenant, Server: server}, text)
	return v, cfg.Model, err
}

// embed embeds text with ep, through the cache of recent queries.
func (q *Query) embed(ctx context.Context, ep Endpoint, text string) ([]float32, error) {
	key := queryKey{ep, text}
	q.mu.Lock()
	v, ok := q.cache[key]
	q.mu.Unlock()
	if ok {
		return v, nil
	}
	vecs, err := q.Client.Embed(ctx, ep, []string{text})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			q.Log.Warn().Str("tenant", ep.Tenant).Str("reason", e.Reason).AnErr("cause", e.Cause).Msg("embedding q: " + e.Msg)
		}
		return nil, model.Errorf(model.KindUnavailable, "embedding_unavailable", "embedding q: %s", err)
	}
	q.mu.Lock()
	if q.cache == nil || len(q.cache) >= queryCacheSize {
		q.cache = make(map[queryKey][]float32)
	}
	q.cache[key] = vecs[0]
	q.mu.Unlock()
	return vecs[0], nil
}
