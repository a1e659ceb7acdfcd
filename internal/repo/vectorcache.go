package repo

import (
	"context"
	"sync"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/vecindex"
)

// VectorCache is the passages' embeddings in memory (vecindex), kept
// coherent with the database through each agent's vec_version, which a
// trigger bumps on every change to the agent's embedded passages, whoever
// makes it (this process, another one on the same PostgreSQL, an import, a
// purge). A search passes the version it read with the agent; a cached agent
// of another version is loaded again. The process's own writes tell the
// cache the version they made, so an insert costs no reload.
type VectorCache struct {
	ix   *vecindex.Index
	mu   sync.Mutex
	seen map[[2]string]int64 // the vec_version each cached agent reflects
}

// NewVectorCache caches at most maxBytes of vectors (0: no bound), loaded by load.
func NewVectorCache(load vecindex.Loader, maxBytes int64) *VectorCache {
	return &VectorCache{ix: vecindex.New(vecindex.Config{Load: load, MaxBytes: maxBytes}), seen: map[[2]string]int64{}}
}

// Search ranks the agent's embedded passages for q, best first.
func (c *VectorCache) Search(ctx context.Context, tenant, agent string, version int64, q vecindex.Query) ([]vecindex.Hit, error) {
	k := [2]string{tenant, agent}
	c.mu.Lock()
	if v, ok := c.seen[k]; !ok || v != version {
		// The version is noted before the load reads: a write during the
		// load makes the next search load again, never miss the write.
		c.ix.Invalidate(tenant, agent)
		c.seen[k] = version
	}
	c.mu.Unlock()
	return c.ix.TopK(ctx, tenant, agent, q)
}

// Wrote tells the cache that a write of this process moved the agent from
// vec_version before to after, adding rows and removing ids: applied in
// place when the cache reflects before, else the agent is loaded again.
func (c *VectorCache) Wrote(tenant, agent string, before, after int64, rows []vecindex.Row, removed []string) {
	if c == nil {
		return
	}
	k := [2]string{tenant, agent}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.seen[k]; !ok || v != before {
		c.ix.Invalidate(tenant, agent)
		delete(c.seen, k)
		return
	}
	c.ix.Remove(tenant, agent, removed...)
	if err := c.ix.Add(tenant, agent, rows...); err != nil {
		c.ix.Invalidate(tenant, agent)
		delete(c.seen, k)
		return
	}
	c.seen[k] = after
}

// Stats says what the cache holds.
func (c *VectorCache) Stats() vecindex.Stats { return c.ix.Stats() }

// VectorHits turns the cache's hits into passage hits, reading the passages
// with get (by id, any order; missing ones are skipped: deleted since).
func VectorHits(hits []vecindex.Hit, get func(ids []string) ([]model.Passage, error)) ([]model.PassageHit, error) {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	ps, err := get(ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]model.Passage, len(ps))
	for _, p := range ps {
		byID[p.ID] = p
	}
	out := make([]model.PassageHit, 0, len(hits))
	for _, h := range hits {
		if p, ok := byID[h.ID]; ok {
			out = append(out, model.PassageHit{Passage: p, Snippet: leadSnippet(p.Content), Rank: h.Distance})
		}
	}
	return out, nil
}

// ExpiresAt is a passage's expires_at as the cache keeps it (0: never).
func ExpiresAt(t *model.Time) model.Time {
	if t == nil {
		return 0
	}
	return *t
}
