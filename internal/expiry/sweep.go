// Package expiry is the server's expiry sweep: on a schedule, it erases every
// tenant's sessions, archival passages and items whose expires_at has
// passed, which reads already hide, through the store's batched purge, and
// the Idempotency-Keys older than their time to live, which look-ups already
// ignore.
package expiry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/logbook/logbook/internal/model"
)

// Store is what a sweep needs of the store (repo.Store has it): which tenants
// have expired rows, and the purge that erases them in bounded batches.
type Store interface {
	ExpiredTenants(ctx context.Context, cutoff model.Time) ([]string, error)
	PurgeSessions(ctx context.Context, tenant string, in model.PurgeRequest) (model.PurgeResult, error)
	ExpireIdempotencyKeys(ctx context.Context, cutoff model.Time) (int64, error)
}

// Observer is told what each sweep removed, by kind ("session", "passage"
// or "item"); metrics.Registry is one.
type Observer interface {
	ExpiredRemoved(kind string, n int64)
}

// Kinds of what a sweep removes, as Observer is told them.
const (
	KindSession        = "session"
	KindPassage        = "passage"
	KindItem           = "item"
	KindIdempotencyKey = "idempotency_key"
)

// Sweeper runs the sweep; make it with New. One sweep runs at a time.
type Sweeper struct {
	store Store
	log   zerolog.Logger
	obs   Observer // nil: nobody counts
	keys  time.Duration

	running sync.Mutex // held by the sweep under way
}

// New returns a sweeper over store; obs may be nil. Idempotency-Keys are
// kept for model.DefaultIdempotencyTTL unless KeepKeys says otherwise.
func New(store Store, log zerolog.Logger, obs Observer) *Sweeper {
	return &Sweeper{store: store, log: log, obs: obs, keys: time.Duration(model.DefaultIdempotencyTTL) * time.Millisecond}
}

// KeepKeys sets how long Idempotency-Keys are kept (the server's
// --idempotency-ttl, which its look-ups honour too).
func (s *Sweeper) KeepKeys(ttl time.Duration) *Sweeper {
	if ttl > 0 {
		s.keys = ttl
	}
	return s
}

// Run sweeps every interval until ctx ends, the first time one interval after
// it starts, and returns once the sweep under way (if any) has stopped: the
// purge checks ctx between its batches, so that is at most one batch later.
// Ticks that come while a sweep runs are dropped, not queued.
func (s *Sweeper) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = s.Sweep(ctx)
		}
	}
}

// ErrBusy is Sweep's answer while another sweep runs.
var ErrBusy = errors.New("an expiry sweep is already running")

// Sweep erases, tenant by tenant, the sessions, passages and items whose
// expires_at is before now, logs and counts what it removed, and returns the
// sum. Each tenant's purge commits in batches of bounded size (at most 50
// sessions or about 20,000 messages, or 500 passages, or 500 items, to a
// writer transaction), each
// queued behind the writes that came meanwhile, so appends go on while a
// large sweep runs. A sweep cut short (ctx ended, an error) keeps, logs and
// counts what it committed; the next one goes on from there.
func (s *Sweeper) Sweep(ctx context.Context) (model.PurgeResult, error) {
	var total model.PurgeResult
	if !s.running.TryLock() {
		return total, ErrBusy
	}
	defer s.running.Unlock()
	start := time.Now()
	cutoff := model.Now()
	tenants, err := s.store.ExpiredTenants(ctx, cutoff)
	if err != nil {
		s.failed(ctx, "", err)
		return total, err
	}
	for _, tenant := range tenants {
		res, err := s.store.PurgeSessions(ctx, tenant, model.PurgeRequest{Expired: true}.WithCutoff(cutoff))
		s.count(res)
		total.Sessions += res.Sessions
		total.Messages += res.Messages
		total.Checkpoints += res.Checkpoints
		total.Passages += res.Passages
		total.Items += res.Items
		if res.Sessions > 0 || res.Passages > 0 || res.Items > 0 {
			s.log.Info().Str("tenant", tenant).Int64("sessions", res.Sessions).Int64("messages", res.Messages).
				Int64("checkpoints", res.Checkpoints).Int64("passages", res.Passages).Int64("items", res.Items).Msg("expired rows removed")
		}
		if err != nil {
			s.failed(ctx, tenant, err)
			return total, err
		}
	}
	keys, err := s.store.ExpireIdempotencyKeys(ctx, cutoff-model.Time(s.keys.Milliseconds()))
	if keys > 0 && s.obs != nil {
		s.obs.ExpiredRemoved(KindIdempotencyKey, keys)
	}
	if err != nil {
		s.failed(ctx, "", err)
		return total, err
	}
	s.log.Debug().Int("tenants", len(tenants)).Int64("sessions", total.Sessions).Int64("passages", total.Passages).Int64("items", total.Items).
		Int64("idempotency_keys", keys).Dur("took", time.Since(start)).Msg("expiry sweep done")
	return total, nil
}

func (s *Sweeper) count(res model.PurgeResult) {
	if s.obs == nil {
		return
	}
	if res.Sessions > 0 {
		s.obs.ExpiredRemoved(KindSession, res.Sessions)
	}
	if res.Passages > 0 {
		s.obs.ExpiredRemoved(KindPassage, res.Passages)
	}
	if res.Items > 0 {
		s.obs.ExpiredRemoved(KindItem, res.Items)
	}
}

// failed logs a sweep that stopped: an error, unless the server is stopping.
func (s *Sweeper) failed(ctx context.Context, tenant string, err error) {
	ev := s.log.Error()
	if ctx.Err() != nil {
		ev = s.log.Info() // shutting down: the next start goes on
	}
	ev.Err(err).Str("tenant", tenant).Msg("expiry sweep stopped")
}
