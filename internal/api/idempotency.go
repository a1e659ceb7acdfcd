package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"hash"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Idempotency-Key on the write routes that have no idempotency of their own
// (appends have theirs: messages.go). The same key, from the same tenant
// and user, with the same request (method, path, query, media type and
// body) is answered as the first was (status, body, Content-Type, Location,
// ETag) with Idempotent-Replayed: true, and changes nothing; with another
// request it is 409 idempotency_conflict; while the first is in flight, 409
// idempotency_in_progress.
//
// Nothing can be applied twice: the key's record is inserted by the
// request's first write, inside that write's transaction (the store does it,
// from the claim this puts in the request's context), and the answer is
// stored just after. A server that stops between the two leaves the record
// without an answer; a retry then gets 409 idempotency_applied, which says
// so, rather than a second write. A request that writes nothing (a search,
// a backup, a tool that only reads) records nothing: its retry runs again,
// harmlessly.
//
// Threat model: a key is only ever looked up within its tenant and user, so
// it tells nobody else anything; what one client can make the server keep
// is one record per key it sends for --idempotency-ttl, each answer at most
// maxKeptAnswer bytes (larger ones are not kept: their retries get
// idempotency_applied), and the writes themselves cost more than that.

// answerNotKept are the keyed routes whose answer is never stored: a new
// API key's secret is shown once and kept nowhere. A retry after a lost
// answer gets idempotency_applied (list the keys, revoke the lost one).
var answerNotKept = map[routeKey]bool{
	{"POST", "/v1/admin/keys"}: true,
}

// keyedRoute says whether the generic Idempotency-Key applies to a route of
// the groups that use idempotent (appends, whose keys are their own, are
// not among them: routes.go): every POST, and a checkpoint's PUT and PATCH,
// whose fences (iteration) would refuse a retry whose first try was applied.
// Other PUTs, PATCHes and DELETEs are idempotent by themselves and ignore
// the header.
func keyedRoute(k routeKey) bool {
	switch k.method {
	case http.MethodPost:
		return true
	case http.MethodPut, http.MethodPatch:
		return k.pattern == "/v1/sessions/{id}/checkpoint"
	}
	return false
}

// maxKeptAnswer bounds a stored answer: a message's export line, the most
// any write route but a rewind with a long tail answers.
const maxKeptAnswer = model.MaxExportLine

// idempotent is the middleware of the write routes: it answers a retry of a
// keyed request from the store, or lets the request through carrying its
// claim and stores its answer after.
func (s *Server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || r.Method == http.MethodGet || r.Method == http.MethodDelete {
			next.ServeHTTP(w, r)
			return
		}
		route := routeKey{r.Method, chi.RouteContext(r.Context()).RoutePattern()}
		if !keyedRoute(route) {
			next.ServeHTTP(w, r)
			return
		}
		if err := model.CheckIdempotencyKey(key); err != nil {
			s.writeError(w, r, err)
			return
		}
		p := principalOf(r)
		k := model.IdempotencyKey{Tenant: p.Tenant, User: p.UserID, Key: key}
		if !s.keysInFlight.take(k) {
			s.writeError(w, r, model.IdempotencyInProgress(key))
			return
		}
		defer s.keysInFlight.give(k)

		body := newHashedBody(r)
		r.Body = body
		since := model.Now() - model.Time(s.idempotencyTTL.Milliseconds())
		rec, found, err := s.store.IdempotentRequest(r.Context(), k, since)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		name := route.method + " " + route.pattern
		if found {
			limit := s.drainLimit(r, route)
			if n, _ := io.Copy(io.Discard, io.LimitReader(body, limit+1)); n > limit {
				s.writeError(w, r, tooLarge(limit, 0))
				return
			}
			s.replay(w, r, key, rec, body.sum())
			return
		}

		claim := repo.NewIdempotencyClaim(k, name, since, func() []byte {
			_, _ = io.Copy(io.Discard, io.LimitReader(body, 1<<20)) // what a handler left unread
			return body.sum()
		})
		rw := &answerRecorder{ResponseWriter: w}
		next.ServeHTTP(rw, r.WithContext(repo.WithIdempotencyClaim(r.Context(), claim)))
		if !claim.Claimed() || rw.status < 200 || rw.status > 299 || rw.overflow || answerNotKept[route] {
			return
		}
		a := model.IdempotentAnswer{Status: rw.status, Headers: rw.headers, Body: rw.body.Bytes()}
		// The client may be gone; its retry still needs the answer.
		if err := s.store.SaveIdempotentAnswer(context.WithoutCancel(r.Context()), k, claim.Fingerprint(), a); err != nil {
			s.log.Error().Str("request_id", requestIDOf(r)).Err(err).Msg("store an idempotent answer")
		}
	})
}

// replay answers a request whose key has a record.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, key string, rec model.IdempotentRecord, fingerprint []byte) {
	switch {
	case !bytes.Equal(rec.Fingerprint, fingerprint):
		s.writeError(w, r, model.IdempotencyReused(key, rec.Route))
		return
	case rec.Answer == nil:
		s.writeError(w, r, model.IdempotencyApplied(key, rec.Route))
		return
	}
	h := w.Header()
	for name, v := range rec.Answer.Headers {
		h.Set(name, v)
	}
	h.Set("Idempotent-Replayed", "true")
	w.WriteHeader(rec.Answer.Status)
	_, _ = w.Write(rec.Answer.Body)
}

// drainLimit is the most a keyed request's body may hold: what its route
// would read.
func (s *Server) drainLimit(r *http.Request, route routeKey) int64 {
	switch route.pattern {
	case "/v1/sessions/import", "/v1/agents/import":
		return s.importMax
	case "/v1/files":
		return s.maxFile
	}
	return s.bodyLimit(r)
}

// hashedBody is a request body that hashes what is read of it, after the
// request's method, path, query and media type: the request's fingerprint.
type hashedBody struct {
	io.ReadCloser
	h hash.Hash
}

func newHashedBody(r *http.Request) *hashedBody {
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Content-Type")} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return &hashedBody{ReadCloser: r.Body, h: h}
}

func (b *hashedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.h.Write(p[:n])
	return n, err
}

func (b *hashedBody) sum() []byte { return b.h.Sum(nil) }

// answerRecorder keeps a copy of an answer, up to maxKeptAnswer bytes, as it
// goes out.
type answerRecorder struct {
	http.ResponseWriter
	status   int
	headers  map[string]string
	body     bytes.Buffer
	overflow bool
}

// keptHeaders are the headers a replay gives back: they describe the body.
var keptHeaders = []string{"Content-Type", "Location", "ETag"}

func (a *answerRecorder) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
		a.headers = map[string]string{}
		for _, name := range keptHeaders {
			if v := a.Header().Get(name); v != "" {
				a.headers[name] = v
			}
		}
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *answerRecorder) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.WriteHeader(http.StatusOK)
	}
	if !a.overflow {
		if a.body.Len()+len(p) > maxKeptAnswer {
			a.overflow, a.body = true, bytes.Buffer{}
		} else {
			a.body.Write(p)
		}
	}
	return a.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushes) through the recorder.
func (a *answerRecorder) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// keysInFlight are the keys of the keyed requests being served: a second
// request with one of them is answered idempotency_in_progress at once
// instead of waiting (or, with another body, running beside the first).
// Across processes (PostgreSQL), the store's record decides.
type keysInFlight struct {
	mu sync.Mutex
	m  map[model.IdempotencyKey]struct{}
}

func (f *keysInFlight) take(k model.IdempotencyKey) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[model.IdempotencyKey]struct{}{}
	}
	if _, busy := f.m[k]; busy {
		return false
	}
	f.m[k] = struct{}{}
	return true
}

func (f *keysInFlight) give(k model.IdempotencyKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, k)
}

// defaultIdempotencyTTL is how long keys are remembered unless configured.
const defaultIdempotencyTTL = time.Duration(model.DefaultIdempotencyTTL) * time.Millisecond
