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

// Worker embeds what the store holds pending: it claims a batch, calls the
// endpoint with no transaction open, and stores the answers in one write, so
// an endpoint that is slow or down delays only embeddings, never a write.
type Worker struct {
	Store   repo.Store
	Client  *Client
	Default *model.EmbeddingConfig // the server's endpoint, for agents that name none
	Log     zerolog.Logger

	Batch       int           // texts per call; 32 if 0
	Lease       time.Duration // how long a claim holds; 2 minutes if 0
	MaxAttempts int           // before a text is failed; 6 if 0
	// Backoff is the wait before attempt n+1 after n failed ones;
	// 2^(n-1) seconds up to 5 minutes if nil.
	Backoff func(n int) time.Duration
	Poll    time.Duration // how often to look without being woken; 2 s if 0

	once sync.Once
	wake chan struct{}
}

// Wake makes the worker look for work now (a passage was stored pending).
func (w *Worker) Wake() {
	select {
	case w.wakeCh() <- struct{}{}:
	default:
	}
}

func (w *Worker) wakeCh() chan struct{} {
	w.once.Do(func() { w.wake = make(chan struct{}, 1) })
	return w.wake
}

// eventsSettle is how long the worker lets appends gather after the log
// moved, so that a busy session costs it one write per stretch of appends,
// not one per append.
const eventsSettle = 250 * time.Millisecond

// Run works until ctx ends. Store errors are logged and retried after Poll.
func (w *Worker) Run(ctx context.Context) {
	wake := w.wakeCh()
	for {
		more, err := w.Step(ctx)
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

// Step queues new messages and embeds one batch; more says there may be
// work left right away. Run calls it; a test may call it alone, to decide
// when the worker acts.
func (w *Worker) Step(ctx context.Context) (more bool, err error) {
	n, err := w.Store.QueueMessageEmbeddings(ctx, w.Default != nil, queueEvents)
	if err != nil {
		return false, err
	}
	jobs, err := w.Store.ClaimEmbeddings(ctx, w.batch(), w.lease())
	if err != nil || len(jobs) == 0 {
		return n == queueEvents, err
	}
	return true, w.Store.SaveEmbeddings(ctx, w.embed(ctx, jobs), w.maxAttempts())
}

// embed calls each endpoint once for the jobs that use it.
func (w *Worker) embed(ctx context.Context, jobs []model.EmbeddingJob) []repo.EmbeddingOutcome {
	type group struct {
		cfg  model.EmbeddingConfig
		jobs []model.EmbeddingJob
	}
	var groups []*group
	byCfg := map[model.EmbeddingConfig]*group{}
	out := make([]repo.EmbeddingOutcome, 0, len(jobs))
	for _, j := range jobs {
		cfg := j.Config
		if cfg == nil {
			cfg = w.Default
		}
		if cfg == nil {
			out = append(out, repo.EmbeddingOutcome{EmbeddingResult: model.EmbeddingResult{Job: j,
				Err: "no embedding endpoint is configured for the agent or the server", Permanent: true}})
			continue
		}
		g := byCfg[*cfg]
		if g == nil {
			g = &group{cfg: *cfg}
			byCfg[*cfg] = g
			groups = append(groups, g)
		}
		g.jobs = append(g.jobs, j)
	}
	now := time.Now()
	for _, g := range groups {
		texts := make([]string, len(g.jobs))
		for i, j := range g.jobs {
			texts[i] = j.Text
		}
		vecs, err := w.Client.Embed(ctx, g.cfg, texts)
		for i, j := range g.jobs {
			r := repo.EmbeddingOutcome{EmbeddingResult: model.EmbeddingResult{Job: j, Model: g.cfg.Model}}
			if err != nil {
				var e *Error
				r.Err, r.Permanent = err.Error(), errors.As(err, &e) && e.Permanent
				r.RetryAt = model.Time(now.Add(w.backoff(j.Attempts + 1)).UnixMilli())
			} else {
				r.Vector = vecs[i]
			}
			out = append(out, r)
		}
		if err != nil {
			w.Log.Warn().Str("url", g.cfg.URL).Str("model", g.cfg.Model).Int("texts", len(texts)).Err(err).Msg("embedding failed")
		}
	}
	return out
}

func (w *Worker) backoff(n int) time.Duration {
	if w.Backoff != nil {
		return w.Backoff(n)
	}
	return min(time.Second<<min(n-1, 20), 5*time.Minute)
}

func (w *Worker) batch() int       { return or(w.Batch, 32) }
func (w *Worker) maxAttempts() int { return or(w.MaxAttempts, 6) }
func (w *Worker) lease() time.Duration {
	return time.Duration(or(int(w.Lease), int(2*time.Minute)))
}
func (w *Worker) poll() time.Duration { return time.Duration(or(int(w.Poll), int(2*time.Second))) }

func or(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}
