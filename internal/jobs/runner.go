// Package jobs runs the operations an operator starts that may outlast an HTTP
// request (a purge, an integrity check, a backup) beside the requests, and
// keeps each one's progress and outcome in the store (model.Job), so that a
// client polls GET /v1/admin/jobs/{id} instead of holding a request open past
// the server's write timeout, and a job a restart cut short reads as
// interrupted.
package jobs

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Store is what the runner keeps jobs in.
type Store interface {
	CreateJob(ctx context.Context, tenant, kind string) (model.Job, error)
	UpdateJob(ctx context.Context, tenant, id string, p model.JobProgress) error
	FinishJob(ctx context.Context, tenant, id string, state model.JobState, result []byte, jerr *model.JobError) error
}

// Func is a job's work. It reports progress through ctx
// (repo.ReportProgress) and returns what its route answers when it is done.
type Func func(ctx context.Context) (any, error)

// Limits bound what jobs may hold at once.
type Limits struct {
	PerTenant int // running jobs of one tenant; 0 means 2
	Total     int // running jobs of the process; 0 means 4
}

// Runner runs jobs. Its methods are safe for concurrent use.
type Runner struct {
	store    Store
	describe func(error) model.JobError
	limits   Limits
	ctx      context.Context // every job's; Close cancels it
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	running  map[string]int // tenant → running jobs
	total    int
	closed   bool
	flushGap time.Duration // least time between two progress writes
}

// New makes a runner over store; describe says how a failed job's error reads
// (status, code and detail, as its route would answer it).
func New(store Store, describe func(error) model.JobError, limits Limits) *Runner {
	if limits.PerTenant <= 0 {
		limits.PerTenant = 2
	}
	if limits.Total <= 0 {
		limits.Total = 4
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{store: store, describe: describe, limits: limits, ctx: ctx, cancel: cancel,
		running: map[string]int{}, flushGap: time.Second}
}

// ErrTooMany is Start's answer when a tenant, or the process, runs as many
// jobs as it may.
var ErrTooMany = &model.Error{Kind: model.KindRateLimited, Code: "too_many_jobs",
	Msg: "as many jobs run as may: poll the running ones (GET /v1/admin/jobs/{id}) and start this one when one has finished"}

// Handle is a started job.
type Handle struct {
	ID     string
	done   chan struct{}
	result any
	err    error
}

// Wait waits up to d (or until ctx ends) for the job to finish, and says
// whether it did, with its outcome.
func (h *Handle) Wait(ctx context.Context, d time.Duration) (result any, err error, done bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-h.done:
		return h.result, h.err, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, nil, false
}

// Start records a job of kind for tenant and runs fn beside the caller, not
// under the caller's context: a client that goes away does not stop it.
// Errors: ErrTooMany; the store's.
func (r *Runner) Start(ctx context.Context, tenant, kind string, fn Func) (*Handle, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, model.Errorf(model.KindUnavailable, "storage_unavailable", "the server is stopping")
	}
	if r.running[tenant] >= r.limits.PerTenant || r.total >= r.limits.Total {
		r.mu.Unlock()
		return nil, ErrTooMany
	}
	r.running[tenant]++
	r.total++
	r.wg.Add(1)
	r.mu.Unlock()

	job, err := r.store.CreateJob(ctx, tenant, kind)
	if err != nil {
		r.release(tenant)
		return nil, err
	}
	h := &Handle{ID: job.ID, done: make(chan struct{})}
	go r.run(tenant, h, fn)
	return h, nil
}

func (r *Runner) release(tenant string) {
	r.mu.Lock()
	if r.running[tenant]--; r.running[tenant] == 0 {
		delete(r.running, tenant)
	}
	r.total--
	r.mu.Unlock()
	r.wg.Done()
}

// run runs one job: its progress is written at most once every flushGap,
// and at least every model.JobHeartbeat (the heartbeat that keeps it from
// reading as interrupted), then its outcome.
func (r *Runner) run(tenant string, h *Handle, fn Func) {
	defer r.release(tenant)
	var (
		mu      sync.Mutex
		latest  model.JobProgress
		changed bool
	)
	ctx := repo.WithProgress(r.ctx, func(p model.JobProgress) {
		mu.Lock()
		latest, changed = p, true
		mu.Unlock()
	})
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		tick := time.NewTicker(r.flushGap)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mu.Lock()
			p, write := latest, changed || time.Since(last) >= model.JobHeartbeat
			changed = false
			mu.Unlock()
			if write {
				// A lost heartbeat is retried at the next tick; the job goes on.
				_ = r.store.UpdateJob(r.ctx, tenant, h.ID, p)
				last = time.Now()
			}
		}
	}()
	h.result, h.err = r.work(ctx, fn)
	close(stop)
	<-flushed
	mu.Lock()
	p, write := latest, changed
	mu.Unlock()
	if write { // what the job reported since the last write: its end, often
		_ = r.store.UpdateJob(context.WithoutCancel(r.ctx), tenant, h.ID, p)
	}

	state, jerr := model.JobSucceeded, (*model.JobError)(nil)
	var result []byte
	switch {
	case h.err != nil && r.ctx.Err() != nil:
		state = model.JobInterrupted
	case h.err != nil:
		state = model.JobFailed
		d := r.describe(h.err)
		jerr = &d
	default:
		var err error
		if result, err = json.Marshal(h.result); err != nil {
			state, h.err = model.JobFailed, model.Internal(err)
			d := r.describe(h.err)
			jerr = &d
		}
	}
	// The outcome is written even while the runner closes: that is when an
	// interrupted job must say so.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = r.store.FinishJob(ctx, tenant, h.ID, state, result, jerr)
	close(h.done)
}

// work runs fn on a goroutine of lowered priority (lowerPriority), whose OS
// thread ends with it.
func (r *Runner) work(ctx context.Context, fn Func) (any, error) {
	type outcome struct {
		res any
		err error
	}
	out := make(chan outcome, 1)
	go func() {
		lowerPriority()
		res, err := fn(ctx)
		out <- outcome{res, err}
	}()
	o := <-out
	return o.res, o.err
}

// Close stops every running job (each ends as interrupted) and waits for
// them to record it. Call it before the store closes.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}
