// Package vecindex keeps the archival passages' embeddings in memory, per
// (tenant, agent), so that a vector search is one SIMD dot product per passage
// instead of reading and decoding every embedding from the database per query.
//
// Vectors are normalised once when they enter the index, so the cosine
// similarity of a query and a passage is their dot product (vek32.Dot, AVX2
// where the CPU has it, pure Go otherwise; no cgo). The search is exact (brute
// force): it ranks the same passages as repo.RankByVector, in the same order
// (distance, then created_at newest first, then id descending), with distances
// that agree to float32 precision (about 1e-6).
//
// An agent is loaded on its first search (or by Load, on start) from the
// store's Loader. After that the store keeps it in step: Add after a passage
// with an embedding commits, Remove after a delete or purge, Invalidate when
// the agent's passages changed in a way it does not report one by one (import,
// restore, agent deleted). Writes that arrive while an agent is loading are
// replayed over what the loader read, so a write committed during the load is
// never lost, as long as the store calls Add and Remove after the commit and in
// commit order (the SQLite writer goroutine does both).
package vecindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/viterin/vek/vek32"

	"github.com/logbook/logbook/internal/model"
)

// Row is one passage's embedding.
type Row struct {
	ID        string
	CreatedAt model.Time
	// ExpiresAt is when the passage stops being found; 0: never.
	ExpiresAt model.Time
	// Vector is the embedding. Add and the loader may pass it as stored; the
	// index keeps a normalised copy (Get returns a copy of that).
	Vector []float32
}

// Hit is one search result.
type Hit struct {
	ID        string
	CreatedAt model.Time
	// Distance is the cosine distance, 1 - similarity: lower is better, as the
	// rank of repo.RankByVector.
	Distance float64
}

// Query is a search of one agent's vectors.
type Query struct {
	Vector []float32
	// K is how many hits to return, best first; negative: all that pass.
	K int
	// Now hides the rows whose ExpiresAt is at or before it (0: none hidden),
	// as the stores' passageLive does.
	Now model.Time
	// After and Before bound created_at, both inclusive, as a passage search's
	// filters do.
	After, Before *model.Time
	// Allow, when set, keeps only the ids it returns true for (the passages
	// with the search's tags, say). It is called under the agent's read lock,
	// for every row that passes the other filters: keep it cheap (a map
	// lookup).
	Allow func(id string) bool
}

// Loader reads every live passage of the agent that has an embedding and
// hands each to add, which copies the row: the loader may reuse the vector's
// memory for the next row, so that a load needs no more memory than the index
// it builds. An error from add (ErrDims) should end the load with it.
type Loader func(ctx context.Context, tenant, agent string, add func(Row) error) error

// Config sets up an Index.
type Config struct {
	Load Loader
	// MaxBytes bounds the vectors kept (as Stats counts them); past it, loading
	// an agent drops the agents searched least recently. 0: no bound.
	MaxBytes int64
}

// ErrDims is returned when a vector's length is not the agent's.
var ErrDims = errors.New("vecindex: vector length differs from the agent's")

// Index is the cache of every loaded agent. Its methods are safe for
// concurrent use: searches of one agent run side by side (read lock), a write
// to it waits for the searches under way.
type Index struct {
	load     Loader
	maxBytes int64

	mu     sync.Mutex // guards agents
	agents map[key]*agent

	bytes atomic.Int64 // the loaded agents' bytes (agent.bytes summed)
	clock atomic.Int64 // ticks for agent.used

	// What Stats reports of the index's use since it was made.
	hits, misses, evictions atomic.Int64
}

type key struct{ tenant, agent string }

// agent is one agent's vectors, stored column-wise: row i is ids[i],
// created[i], expires[i] and vector(i), in chunks of chunkRows vectors so that
// growing an agent never copies (nor briefly doubles) all of its vectors.
type agent struct {
	ready chan struct{} // closed when the first load ends
	err   error         // that load's error, set before ready closes

	used atomic.Int64 // Index.clock at the last search

	mu      sync.RWMutex
	loading bool  // writes go to pending until the load ends
	pending []op  // writes made during the load, in call order
	stale   bool  // invalidated or evicted: searches must reload
	version int64 // bumped by every change applied
	bytes   int64
	dims    int
	ids     []string
	created []model.Time
	expires []model.Time
	vecs    [][]float32 // chunks of up to chunkRows*dims numbers
	pos     map[string]int
}

// chunkRows is how many vectors one chunk holds: 3 MB at 768 numbers, small
// beside the agents worth caching, big enough for the search's inner loop.
const chunkRows = 1024

// vector is row i's normalised vector.
func (a *agent) vector(i int) []float32 {
	j := (i % chunkRows) * a.dims
	return a.vecs[i/chunkRows][j : j+a.dims]
}

// op is a write held back while an agent loads: an Add (row set) or a Remove.
type op struct {
	row    Row
	remove string
	isAdd  bool
}

// New returns an empty index.
func New(cfg Config) *Index {
	return &Index{load: cfg.Load, maxBytes: cfg.MaxBytes, agents: map[key]*agent{}}
}

// BytesPerVector is what the index counts for one row of dims numbers with an
// id of idLen bytes: the float32s, the id, the two times and the id's entry in
// the position map (key, value and the map's slack). Stats sums it; the
// benchmarks compare it with the heap the index really takes.
func BytesPerVector(dims, idLen int) int64 {
	const (
		idHeader = 16 // string header in ids
		times    = 16 // created, expires
		mapEntry = 40 // string key 16 + int 8, ~7/8 load factor, control byte
	)
	return int64(4*dims + idLen + idHeader + times + mapEntry)
}

// Stats is the index's size, and how it has served since it was made.
type Stats struct {
	Agents  int
	Vectors int
	Bytes   int64
	// Hits are searches (and Loads) that found the agent loaded; Misses
	// those that waited for it to load (theirs or another's).
	Hits, Misses int64
	// Evictions are agents dropped to stay within MaxBytes.
	Evictions int64
}

// Stats counts the loaded agents and their vectors.
func (x *Index) Stats() Stats {
	x.mu.Lock()
	as := make([]*agent, 0, len(x.agents))
	for _, a := range x.agents {
		as = append(as, a)
	}
	x.mu.Unlock()
	st := Stats{Bytes: x.bytes.Load(), Hits: x.hits.Load(), Misses: x.misses.Load(), Evictions: x.evictions.Load()}
	for _, a := range as {
		a.mu.RLock()
		if !a.loading && !a.stale {
			st.Agents++
			st.Vectors += len(a.ids)
		}
		a.mu.RUnlock()
	}
	return st
}

// Load loads the agent if it is not loaded yet, as its first search would:
// a store calls it on start for the agents it wants warm.
func (x *Index) Load(ctx context.Context, tenant, agentID string) error {
	_, err := x.entry(ctx, key{tenant, agentID})
	return err
}

// entry returns the agent loaded, loading it first if need be (one load per
// agent at a time; other callers wait for it).
func (x *Index) entry(ctx context.Context, k key) (*agent, error) {
	hit := true
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		x.mu.Lock()
		a := x.agents[k]
		if a == nil {
			hit = false
			a = &agent{ready: make(chan struct{}), loading: true}
			x.agents[k] = a
			x.mu.Unlock()
			x.fill(ctx, k, a)
		} else {
			x.mu.Unlock()
			select {
			case <-a.ready:
			default:
				hit = false // another caller's load under way
			}
		}
		select {
		case <-a.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if a.err != nil {
			// Another caller's cancelled load is no reason to fail this one.
			if ctx.Err() == nil && (errors.Is(a.err, context.Canceled) || errors.Is(a.err, context.DeadlineExceeded)) {
				continue
			}
			return nil, a.err
		}
		a.mu.RLock()
		stale := a.stale
		a.mu.RUnlock()
		if !stale {
			a.used.Store(x.clock.Add(1))
			if hit {
				x.hits.Add(1)
			} else {
				x.misses.Add(1)
			}
			return a, nil
		}
		hit = false // dropped meanwhile: loaded again
	}
}

// fill runs the loader for a new entry, builds its rows, replays the writes
// made meanwhile and opens the entry to searches.
func (x *Index) fill(ctx context.Context, k key, a *agent) {
	// Built aside: Add and Get read a's fields under its lock meanwhile.
	b := agent{pos: map[string]int{}}
	err := x.load(ctx, k.tenant, k.agent, b.add)
	a.mu.Lock()
	a.dims, a.ids, a.created, a.expires, a.vecs, a.pos, a.bytes = b.dims, b.ids, b.created, b.expires, b.vecs, b.pos, b.bytes
	if err != nil {
		a.err, a.stale, a.loading, a.pending = err, true, false, nil
		a.mu.Unlock()
		x.drop(k, a)
		close(a.ready)
		return
	}
	for _, o := range a.pending {
		if o.isAdd {
			_ = a.add(o.row) // a bad row was refused when it was added
		} else {
			a.remove(o.remove)
		}
	}
	a.loading, a.pending = false, nil
	stale := a.stale
	if !stale {
		x.bytes.Add(a.bytes)
		a.used.Store(x.clock.Add(1))
	}
	a.mu.Unlock()
	if !stale {
		x.evict(a)
	}
	close(a.ready)
}

// Add puts rows into a loaded or loading agent, replacing a row of the same id.
// An agent not loaded is left alone: its loader will read the rows. Errors:
// ErrDims when a vector's length is not the agent's (nothing is added then).
func (x *Index) Add(tenant, agentID string, rows ...Row) error {
	a := x.lookup(key{tenant, agentID})
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range rows {
		if len(r.Vector) == 0 || (a.dims != 0 && len(r.Vector) != a.dims) {
			return fmt.Errorf("vecindex: passage %s: %w", r.ID, ErrDims)
		}
	}
	if a.loading {
		for _, r := range rows {
			a.pending = append(a.pending, op{row: Row{ID: r.ID, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
				Vector: slices.Clone(r.Vector)}, isAdd: true})
		}
		return nil
	}
	before := a.bytes
	for _, r := range rows {
		_ = a.add(r) // lengths checked above
	}
	if !a.stale {
		x.bytes.Add(a.bytes - before)
	}
	return nil
}

// Remove takes rows out of a loaded or loading agent; ids it does not hold are
// ignored.
func (x *Index) Remove(tenant, agentID string, ids ...string) {
	a := x.lookup(key{tenant, agentID})
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loading {
		for _, id := range ids {
			a.pending = append(a.pending, op{remove: id})
		}
		return
	}
	before := a.bytes
	for _, id := range ids {
		a.remove(id)
	}
	if !a.stale {
		x.bytes.Add(a.bytes - before)
	}
}

// Get returns a row of a loaded agent, its vector normalised (a copy).
func (x *Index) Get(tenant, agentID, id string) (Row, bool) {
	a := x.lookup(key{tenant, agentID})
	if a == nil {
		return Row{}, false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	i, ok := a.pos[id]
	if !ok || a.loading {
		return Row{}, false
	}
	return Row{ID: id, CreatedAt: a.created[i], ExpiresAt: a.expires[i],
		Vector: slices.Clone(a.vector(i))}, true
}

// Version is a counter of the changes applied to a loaded agent (false: not
// loaded). It moves on every Add and Remove that changes something, so a store
// or a test can tell whether the index saw a write.
func (x *Index) Version(tenant, agentID string) (int64, bool) {
	a := x.lookup(key{tenant, agentID})
	if a == nil {
		return 0, false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.loading {
		return 0, false
	}
	return a.version, true
}

// Invalidate forgets an agent: its next search loads it again. A load under
// way is thrown away when it ends, and the searches waiting for it load anew.
func (x *Index) Invalidate(tenant, agentID string) {
	k := key{tenant, agentID}
	x.mu.Lock()
	a := x.agents[k]
	delete(x.agents, k)
	x.mu.Unlock()
	if a != nil {
		x.retire(a)
	}
}

// InvalidateAll forgets every agent (after a restore, say).
func (x *Index) InvalidateAll() {
	x.mu.Lock()
	as := x.agents
	x.agents = map[key]*agent{}
	x.mu.Unlock()
	for _, a := range as {
		x.retire(a)
	}
}

// retire marks an agent taken out of the map stale and stops counting it.
func (x *Index) retire(a *agent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stale {
		return
	}
	a.stale = true
	if !a.loading {
		x.bytes.Add(-a.bytes)
	}
}

// lookup returns the agent's entry, loaded or loading, or nil.
func (x *Index) lookup(k key) *agent {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.agents[k]
}

// drop takes a failed entry out of the map if it is still there.
func (x *Index) drop(k key, a *agent) {
	x.mu.Lock()
	if x.agents[k] == a {
		delete(x.agents, k)
	}
	x.mu.Unlock()
}

// evict drops the agents searched least recently, other than keep, until the
// index is within MaxBytes.
func (x *Index) evict(keep *agent) {
	if x.maxBytes <= 0 {
		return
	}
	for x.bytes.Load() > x.maxBytes {
		x.mu.Lock()
		var (
			oldest  key
			victim  *agent
			victimT int64 = math.MaxInt64
		)
		for k, a := range x.agents {
			t := a.used.Load()
			if a == keep || t == 0 { // 0: still loading
				continue
			}
			if t < victimT {
				oldest, victim, victimT = k, a, t
			}
		}
		if victim == nil {
			x.mu.Unlock()
			return
		}
		delete(x.agents, oldest)
		x.mu.Unlock()
		x.retire(victim)
		x.evictions.Add(1)
	}
}

// add sets row r (a.mu held for writing, length checked or first row).
func (a *agent) add(r Row) error {
	if a.dims == 0 {
		a.dims = len(r.Vector)
	}
	if len(r.Vector) == 0 || len(r.Vector) != a.dims {
		return fmt.Errorf("vecindex: passage %s: %w", r.ID, ErrDims)
	}
	if a.pos == nil {
		a.pos = map[string]int{}
	}
	i, ok := a.pos[r.ID]
	if !ok {
		i = len(a.ids)
		a.pos[r.ID] = i
		a.ids = append(a.ids, r.ID)
		a.created = append(a.created, 0)
		a.expires = append(a.expires, 0)
		if c := len(a.vecs) - 1; c < 0 || len(a.vecs[c]) == chunkRows*a.dims {
			// The first chunk grows as the agent does; an agent past one
			// chunk is big, and takes whole chunks.
			size := chunkRows * a.dims
			if c < 0 {
				size = a.dims
			}
			a.vecs = append(a.vecs, make([]float32, 0, size))
		}
		c := len(a.vecs) - 1
		a.vecs[c] = append(a.vecs[c], make([]float32, a.dims)...)
		a.bytes += BytesPerVector(a.dims, len(r.ID))
	}
	a.created[i], a.expires[i] = r.CreatedAt, r.ExpiresAt
	normalise(a.vector(i), r.Vector)
	a.version++
	return nil
}

// remove deletes row id by moving the last row into its place.
func (a *agent) remove(id string) {
	i, ok := a.pos[id]
	if !ok {
		return
	}
	last := len(a.ids) - 1
	if i != last {
		a.ids[i], a.created[i], a.expires[i] = a.ids[last], a.created[last], a.expires[last]
		copy(a.vector(i), a.vector(last))
		a.pos[a.ids[i]] = i
	}
	a.ids[last] = "" // let the string go
	a.ids, a.created, a.expires = a.ids[:last], a.created[:last], a.expires[:last]
	c := len(a.vecs) - 1
	if a.vecs[c] = a.vecs[c][:len(a.vecs[c])-a.dims]; len(a.vecs[c]) == 0 {
		a.vecs = a.vecs[:c]
	}
	delete(a.pos, id)
	a.bytes -= BytesPerVector(a.dims, len(id))
	a.version++
}

// normalise writes v / |v| into dst, the norm summed in float64 as
// repo.Cosine does; the zero vector stays zero (similarity 0 to anything, as
// repo.Cosine says).
func normalise(dst, v []float32) {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	if n == 0 {
		clear(dst)
		return
	}
	inv := 1 / math.Sqrt(n)
	for i, f := range v {
		dst[i] = float32(float64(f) * inv)
	}
}

// TopK searches an agent, loading it first if need be. Errors: the loader's,
// ctx's, ErrDims when the query's length is not the agent's. An agent with no
// vectors gives no hits.
func (x *Index) TopK(ctx context.Context, tenant, agentID string, q Query) ([]Hit, error) {
	a, err := x.entry(ctx, key{tenant, agentID})
	if err != nil {
		return nil, err
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	n := len(a.ids)
	if n == 0 || q.K == 0 {
		return []Hit{}, nil
	}
	if len(q.Vector) != a.dims {
		return nil, ErrDims
	}
	qn := make([]float32, a.dims)
	normalise(qn, q.Vector)
	k := q.K
	if k < 0 || k > n {
		k = n
	}
	h := topHeap{a: a, rows: make([]scored, 0, k)}
	d := a.dims
	for i := range n {
		c, j := i/chunkRows, (i%chunkRows)*d
		if e := a.expires[i]; e != 0 && q.Now != 0 && e <= q.Now {
			continue
		}
		if c := a.created[i]; (q.After != nil && c < *q.After) || (q.Before != nil && c > *q.Before) {
			continue
		}
		if q.Allow != nil && !q.Allow(a.ids[i]) {
			continue
		}
		h.offer(scored{sim: vek32.Dot(qn, a.vecs[c][j:j+d]), i: i}, k)
	}
	rows := h.rows
	slices.SortFunc(rows, func(p, q scored) int {
		if h.better(p, q) {
			return -1
		}
		return 1 // rows are distinct, never equal
	})
	hits := make([]Hit, len(rows))
	for j, r := range rows {
		hits[j] = Hit{ID: a.ids[r.i], CreatedAt: a.created[r.i], Distance: 1 - float64(r.sim)}
	}
	return hits, nil
}

// scored is row i with its similarity to the query.
type scored struct {
	sim float32
	i   int
}

// topHeap keeps the k best rows seen, the worst at the root.
type topHeap struct {
	a    *agent
	rows []scored
}

// better orders as repo.RankByVector: higher similarity (lower distance),
// then newer, then the greater id.
func (h *topHeap) better(p, q scored) bool {
	if p.sim != q.sim {
		return p.sim > q.sim
	}
	if cp, cq := h.a.created[p.i], h.a.created[q.i]; cp != cq {
		return cp > cq
	}
	return h.a.ids[p.i] > h.a.ids[q.i]
}

func (h *topHeap) offer(s scored, k int) {
	if len(h.rows) < k {
		h.rows = append(h.rows, s)
		h.up(len(h.rows) - 1)
		return
	}
	if s.sim < h.rows[0].sim || !h.better(s, h.rows[0]) {
		return
	}
	h.rows[0] = s
	h.down(0)
}

func (h *topHeap) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !h.better(h.rows[p], h.rows[j]) {
			return
		}
		h.rows[p], h.rows[j] = h.rows[j], h.rows[p]
		j = p
	}
}

func (h *topHeap) down(j int) {
	n := len(h.rows)
	for {
		w := j
		if l := 2*j + 1; l < n && h.better(h.rows[w], h.rows[l]) {
			w = l
		}
		if r := 2*j + 2; r < n && h.better(h.rows[w], h.rows[r]) {
			w = r
		}
		if w == j {
			return
		}
		h.rows[w], h.rows[j] = h.rows[j], h.rows[w]
		j = w
	}
}
