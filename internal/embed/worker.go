package embed

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Worker embeds what the store holds pending: it claims texts, calls their
// endpoints with no transaction open, and stores each call's answers in one
// write, so an endpoint that is slow or down delays only embeddings, never
// a write.
//
// It is fair: a claim visits the tenants round robin (repo.EmbeddingClaim),
// calls to different endpoints run at once, and what one endpoint, tenant
// or the whole worker may have in flight is bounded (PerEndpoint,
// PerTenant, Calls). A batch whose endpoint is busy is not held: it is
// handed back (due again, no attempt counted) and its tenant is left out of
// claims until a call it waits for ends. So an endpoint that never answers
// holds at most PerEndpoint calls, each until the client's timeout, and
// delays only its own texts.
type Worker struct {
	Store    repo.Store
	Client   *Client
	Default  *model.EmbeddingConfig // the server's endpoint, for agents that name none
	Log      zerolog.Logger
	Observer Observer // metrics; nil: none

	Batch int // texts per call, and per tenant and claim; 32 if 0
	// Lease is how long a claim holds its texts; if 0, 2 minutes or twice
	// the client's timeout, whichever is longer, so that a call under way
	// is never claimed again.
	Lease       time.Duration
	MaxAttempts int // before a text is failed; 6 if 0
	// Backoff is the wait before attempt n+1 after n failed ones;
	// 2^(n-1) seconds up to 5 minutes if nil.
	Backoff     func(n int) time.Duration
	Poll        time.Duration // how often to look without being woken; 2 s if 0
	PerEndpoint int           // calls in flight to one endpoint URL; 2 if 0
	PerTenant   int           // calls in flight for one tenant; 4 if 0
	Calls       int           // calls in flight in all; 8 if 0

	once  sync.Once
	wake  chan struct{}
	freed chan struct{} // a call ended: there is room again

	mu       sync.Mutex
	byURL    map[string]int    // calls in flight per endpoint URL
	byTenant map[string]int    // calls in flight per tenant
	running  int               // calls in flight
	blocked  map[string]string // tenant → what it waits for: an endpoint URL, anyCall, or ownCall
	cursor   string            // the tenant whose call started last: the next claim starts after it
	inFlight sync.WaitGroup
}

// What a blocked tenant waits for, besides an endpoint URL.
const (
	anyCall = "*" // any call to end: every call slot was taken
	ownCall = ""  // one of its own calls to end: it has PerTenant in flight
)

// Wake makes the worker look for work now (a passage was stored pending).
func (w *Worker) Wake() {
	select {
	case w.chans() <- struct{}{}:
	default:
	}
}

func (w *Worker) chans() chan struct{} {
	w.once.Do(func() {
		w.wake, w.freed = make(chan struct{}, 1), make(chan struct{}, 1)
		w.byURL, w.byTenant, w.blocked = map[string]int{}, map[string]int{}, map[string]string{}
	})
	return w.wake
}

// eventsSettle is how long the worker lets appends gather after the log
// moved, so that a busy session costs it one write per stretch of appends,
// not one per append.
const eventsSettle = 250 * time.Millisecond

// Run works until ctx ends, then waits for its calls under way (they end
// with ctx; their texts fall due again when their lease ends). Store errors
// are logged and retried after Poll.
func (w *Worker) Run(ctx context.Context) {
	wake := w.chans()
	defer w.inFlight.Wait()
	for {
		more, err := w.round(ctx, false)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.Log.Warn().Err(err).Msg("embedding worker")
			more = false
		}
		if more {
			continue
		}
		t := time.NewTimer(w.poll())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
		case <-w.freed:
		case <-w.Store.EventsChanged():
			t.Reset(eventsSettle)
			select {
			case <-ctx.Done():
			case <-wake:
			case <-t.C:
			}
		case <-t.C:
		}
		t.Stop()
	}
}

// queueEvents is how many log events one step reads.
const queueEvents = 1000

// Step queues new messages, claims what there is room for, and returns once
// the calls it started are stored; more says there may be work left right
// away. Run does the same without waiting; a test may call Step alone, to
// decide when the worker acts.
func (w *Worker) Step(ctx context.Context) (more bool, err error) {
	w.chans()
	return w.round(ctx, true)
}

// batch is one call's texts: one tenant's, for one endpoint.
type batch struct {
	ep   Endpoint
	jobs []model.EmbeddingJob
}

func (w *Worker) round(ctx context.Context, wait bool) (more bool, err error) {
	n, err := w.Store.QueueMessageEmbeddings(ctx, w.Default != nil, queueEvents)
	if err != nil {
		return false, err
	}
	queued := n == queueEvents
	w.mu.Lock()
	free := w.calls() - w.running
	claim := repo.EmbeddingClaim{After: w.cursor, Tenants: free, PerTenant: w.batch(), Lease: w.lease(),
		Skip: make(map[string]bool, len(w.blocked))}
	for t := range w.blocked {
		claim.Skip[t] = true
	}
	w.mu.Unlock()
	if free <= 0 {
		return queued, nil
	}
	jobs, err := w.Store.ClaimEmbeddings(ctx, claim)
	if err != nil || len(jobs) == 0 {
		return queued, err
	}

	var (
		now     = time.Now()
		settled []repo.EmbeddingOutcome // failed without a call, or deferred
		started int
		errs    = make(chan error, len(jobs))
	)
	for _, b := range w.batches(jobs, &settled) {
		cl, e := w.Client.resolve(b.ep)
		if e != nil {
			w.logFailure(b, cl, e)
			settled = append(settled, w.outcomes(b, nil, e, now)...)
			continue
		}
		if !w.acquire(b.ep.Tenant, cl.url) {
			for _, j := range b.jobs {
				settled = append(settled, repo.EmbeddingOutcome{EmbeddingResult: model.EmbeddingResult{Job: j},
					Deferred: true, RetryAt: model.Time(now.UnixMilli())})
			}
			w.observeTexts(OutcomeDeferred, len(b.jobs))
			continue
		}
		// The next claim starts after the last tenant whose call started,
		// not after the last one claimed: tenants deferred for a busy
		// endpoint come first when it frees, rather than after the same
		// tenant that took its slot the time before.
		w.mu.Lock()
		w.cursor = b.ep.Tenant
		w.mu.Unlock()
		started++
		w.inFlight.Add(1)
		go func() {
			defer w.inFlight.Done()
			errs <- w.call(ctx, b, cl)
		}()
	}
	if len(settled) > 0 {
		err = w.Store.SaveEmbeddings(ctx, settled, w.maxAttempts())
	}
	if wait {
		for ; started > 0; started-- {
			err = errors.Join(err, <-errs)
		}
		return true, err
	}
	return started > 0 || queued, err
}

// batches groups jobs by tenant and endpoint, in the order claimed, at most
// Batch texts each; a job with no endpoint at all goes to settled, failed.
func (w *Worker) batches(jobs []model.EmbeddingJob, settled *[]repo.EmbeddingOutcome) []*batch {
	var out []*batch
	open := map[Endpoint]*batch{}
	for _, j := range jobs {
		ep := Endpoint{Tenant: j.Tenant}
		switch {
		case j.Config != nil:
			ep.Config = *j.Config
		case w.Default != nil:
			ep.Config, ep.Server = *w.Default, true
		default:
			*settled = append(*settled, repo.EmbeddingOutcome{EmbeddingResult: model.EmbeddingResult{Job: j,
				Err: "no embedding endpoint is configured for the agent or the server", Permanent: true}})
			w.observeTexts(OutcomeFailed, 1)
			continue
		}
		b := open[ep]
		if b == nil || len(b.jobs) >= w.batch() {
			b = &batch{ep: ep}
			open[ep] = b
			out = append(out, b)
		}
		b.jobs = append(b.jobs, j)
	}
	return out
}

// call embeds one batch and stores the outcome, then frees its slot. A call
// cut short by the worker's end stores nothing: its texts' lease lets the
// next worker try them, without an attempt counted against them.
func (w *Worker) call(ctx context.Context, b *batch, cl call) error {
	defer w.release(b.ep.Tenant, cl.url)
	texts := make([]string, len(b.jobs))
	for i, j := range b.jobs {
		texts[i] = j.Text
	}
	vecs, err := w.Client.embed(ctx, cl, texts)
	if ctx.Err() != nil {
		return nil
	}
	var e *Error
	if err != nil && !errors.As(err, &e) {
		e = &Error{Reason: ReasonUnreachable, Msg: "the embedding endpoint could not be reached", Cause: err}
	}
	if e != nil {
		w.logFailure(b, cl, e)
	}
	err = w.Store.SaveEmbeddings(ctx, w.outcomes(b, vecs, e, time.Now()), w.maxAttempts())
	if err != nil && ctx.Err() == nil {
		w.Log.Warn().Err(err).Str("tenant", b.ep.Tenant).Msg("embedding worker: storing embeddings")
	}
	return err
}

// outcomes are b's results: vecs, or e's fixed description.
func (w *Worker) outcomes(b *batch, vecs [][]float32, e *Error, now time.Time) []repo.EmbeddingOutcome {
	out := make([]repo.EmbeddingOutcome, len(b.jobs))
	ready, retry, failed := 0, 0, 0
	for i, j := range b.jobs {
		r := repo.EmbeddingOutcome{EmbeddingResult: model.EmbeddingResult{Job: j, Model: b.ep.Config.Model}}
		if e != nil {
			r.Err, r.Permanent = e.Msg, e.Permanent
			r.RetryAt = model.Time(now.Add(w.backoff(j.Attempts + 1)).UnixMilli())
			if state, _ := repo.EmbeddingRetry(r, w.maxAttempts()); state == model.EmbeddingFailed {
				failed++
			} else {
				retry++
			}
		} else {
			r.Vector = vecs[i]
			ready++
		}
		out[i] = r
	}
	w.observeTexts(OutcomeReady, ready)
	w.observeTexts(OutcomeRetry, retry)
	w.observeTexts(OutcomeFailed, failed)
	return out
}

// logFailure tells the operator what the tenant is not told: the
// endpoint's answer or the network's error, in Cause.
func (w *Worker) logFailure(b *batch, cl call, e *Error) {
	ev := w.Log.Warn().Str("tenant", b.ep.Tenant).Str("reason", e.Reason).Int("texts", len(b.jobs))
	if cl.url != "" {
		ev = ev.Str("url", cl.url).Str("model", cl.cfg.Model)
	}
	ev.AnErr("cause", e.Cause).Msg(e.Msg)
}

// acquire takes a call slot for tenant's call to url, or says why not by
// leaving the tenant blocked until the slot it lacks frees.
func (w *Worker) acquire(tenant, url string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.byURL[url] >= w.perEndpoint():
		w.blocked[tenant] = url
	case w.byTenant[tenant] >= w.perTenant():
		w.blocked[tenant] = ownCall
	case w.running >= w.calls():
		w.blocked[tenant] = anyCall
	default:
		w.byURL[url]++
		w.byTenant[tenant]++
		w.running++
		return true
	}
	return false
}

// release frees the slot of tenant's call to url, and lets the tenants
// that waited for it be claimed again.
func (w *Worker) release(tenant, url string) {
	w.mu.Lock()
	if w.byURL[url]--; w.byURL[url] <= 0 {
		delete(w.byURL, url)
	}
	if w.byTenant[tenant]--; w.byTenant[tenant] <= 0 {
		delete(w.byTenant, tenant)
	}
	w.running--
	for t, waits := range w.blocked {
		if waits == url || waits == anyCall || (t == tenant && waits == ownCall) {
			delete(w.blocked, t)
		}
	}
	w.mu.Unlock()
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

func (w *Worker) observeTexts(outcome string, n int) {
	if w.Observer != nil && n > 0 {
		w.Observer.EmbeddingTexts(outcome, n)
	}
}

func (w *Worker) backoff(n int) time.Duration {
	if w.Backoff != nil {
		return w.Backoff(n)
	}
	return min(time.Second<<min(n-1, 20), 5*time.Minute)
}

func (w *Worker) batch() int       { return or(w.Batch, 32) }
func (w *Worker) maxAttempts() int { return or(w.MaxAttempts, 6) }
func (w *Worker) perEndpoint() int { return or(w.PerEndpoint, 2) }
func (w *Worker) perTenant() int   { return or(w.PerTenant, 4) }
func (w *Worker) calls() int       { return or(w.Calls, 8) }
func (w *Worker) poll() time.Duration {
	return time.Duration(or(int(w.Poll), int(2*time.Second)))
}

func (w *Worker) lease() time.Duration {
	if w.Lease > 0 {
		return w.Lease
	}
	return max(2*time.Minute, 2*w.Client.timeout())
}

func or(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}
