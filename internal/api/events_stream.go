package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/model"
)

// A live feed outlives the request that authorised it, so it asks again
// while it runs (feedGuard): a stream ends, after its last whole event,
// within EventsRecheck of its reader losing the right to read it. The client
// then reconnects with Last-Event-ID and gets the real answer: 401, 403 or 404.
const (
	defaultEventsRecheck = 2 * time.Second
	// defaultEventsWriteTimeout bounds one write to a feed's client: a reader
	// that stops reading is let go after it (its events wait in the log; it
	// resumes with Last-Event-ID), and never holds more than its batch.
	defaultEventsWriteTimeout = 30 * time.Second
)

// errFeedEnded says that a stream's reader may no longer read it.
var errFeedEnded = errors.New("live feed: the reader may no longer read this stream")

// feedGuard re-checks, while a stream is open, what the request was checked
// for when it opened.
type feedGuard struct {
	s         *Server
	r         *http.Request // its Authorization header is presented again
	principal model.Principal
	// session is the session stream's session as it opened: the stream is
	// that session's, not its id's (nil for the tenant's feed).
	session *model.Session
	checked time.Time // when access was last checked
}

func (s *Server) newFeedGuard(r *http.Request, ses *model.Session) *feedGuard {
	return &feedGuard{s: s, r: r, principal: principalOf(r), session: ses, checked: time.Now()}
}

// due says whether access should be checked again before the next delivery.
func (g *feedGuard) due(now time.Time) bool { return now.Sub(g.checked) >= g.s.recheck }

// access checks the key again as a new request would present it: revoked,
// open mode ended (a key exists now), a scope that no longer allows reading,
// or another tenant or user than the stream's, all end the stream.
func (g *feedGuard) access(ctx context.Context, now time.Time) error {
	p, err := g.s.principal(g.r.WithContext(ctx))
	if err != nil {
		return err
	}
	if p.Tenant != g.principal.Tenant || p.UserID != g.principal.UserID || !p.Scope.Allows(model.ScopeRead) {
		return errFeedEnded
	}
	g.checked = now
	return nil
}

// sessionStill checks that the stream's session is still there, the same one
// (its incarnation), readable by the key (a user-bound key reads only its
// user's). Purged, expired, deleted, or replaced by another of the same id:
// the stream ends.
func (g *feedGuard) sessionStill(ctx context.Context) error {
	if g.session == nil {
		return nil
	}
	ses, err := g.s.store.GetSession(ctx, g.principal.Tenant, g.session.ID)
	if err != nil {
		return err
	}
	if ses.Incarnation != g.session.Incarnation {
		return errFeedEnded
	}
	if u := g.principal.UserID; u != "" && (ses.UserID == nil || *ses.UserID != u) {
		return errFeedEnded
	}
	return nil
}

// streamEvents writes ev's events as they commit until the client leaves,
// the server closes or the guard says the reader may no longer read, with a
// heartbeat comment whenever it is quiet.
//
// What it holds: one batch of events at a time (within s.batchBytes, or one
// event when a single event is larger), written straight from the events'
// data; a client that does not read blocks the write, and after
// s.writeTimeout the stream is cut.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, ids feed.TenantIDs, ev model.EventQuery, guard *feedGuard) {
	if err := s.feeds.take(guard.principal); err != nil {
		w.Header().Set("Retry-After", "5")
		s.writeError(w, r, err)
		return
	}
	defer s.feeds.release(guard.principal)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	// The server's WriteTimeout is for answers, not a stream: each write gets
	// its own deadline instead.
	_ = rc.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	// The opening id is where the feed starts: a client cut off before its
	// first event resumes from there (an EventSource keeps it as its last
	// event id; a block without data is no event).
	open := ids.AppendSeal([]byte("retry: 1000\nid: "), ev.After)
	if _, err := w.Write(append(open, "\n: live\n\n"...)); err != nil || rc.Flush() != nil {
		return
	}
	ev.MaxBytes = s.batchBytes
	reader := s.feed.Subscribe(guard.principal.Tenant, ev)
	defer reader.Close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() { // Close ends the wait for the next events at once
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	sse := sseWriter{w: w, ids: ids}
	lastWrite := time.Now()
	for {
		now := time.Now()
		wait := min(s.heartbeat-now.Sub(lastWrite), s.recheck-now.Sub(guard.checked))
		evs, err := reader.Next(ctx, max(wait, time.Millisecond))
		if err != nil {
			// The client left, or the server is stopping (the client resumes
			// elsewhere, from its Last-Event-ID): either way the stream ends
			// after the last whole event.
			if ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("live feed: read")
			}
			return
		}
		// Checked after the batch is read and before any of it is written:
		// every event in the batch committed before the read, and a session
		// found again after it, with the incarnation the stream opened on,
		// has been that incarnation since the stream opened (an incarnation
		// once gone never comes back, and a purge takes the session's events
		// with it in its commit). So no event of a later session of this id
		// can be in a batch that passes; one that fails ends the stream.
		now = time.Now()
		recheck := guard.due(now)
		if recheck {
			if err := guard.access(ctx, now); err != nil {
				s.endFeed(ctx, err)
				return
			}
		}
		if len(evs) > 0 || recheck {
			if err := guard.sessionStill(ctx); err != nil {
				s.endFeed(ctx, err)
				return
			}
		}
		if len(evs) == 0 && now.Sub(lastWrite) < s.heartbeat {
			continue
		}
		_ = rc.SetWriteDeadline(now.Add(s.writeTimeout))
		if len(evs) == 0 {
			err = sse.comment("heartbeat")
		}
		for i := 0; i < len(evs) && err == nil; i++ {
			err = sse.event(&evs[i])
		}
		if err != nil || rc.Flush() != nil {
			return
		}
		lastWrite = time.Now()
	}
}

// endFeed logs why a stream ended early, when it is not the reader's own
// doing (a revoked key is a 401 on reconnect, and no news to the log).
func (s *Server) endFeed(ctx context.Context, err error) {
	var me *model.Error
	if ctx.Err() != nil || errors.Is(err, errFeedEnded) || (errors.As(err, &me) && me.Kind != model.KindInternal && me.Kind != model.KindUnavailable) {
		return
	}
	s.log.Warn().Err(err).Msg("live feed: re-checking its reader")
}
