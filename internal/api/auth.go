package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

const principalKey ctxKey = iota + 100

// authenticate puts the request's principal in its context: the key's tenant and
// scope, or, in open mode, the default tenant with every scope.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.principal(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="logbook"`)
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
	})
}

func (s *Server) principal(r *http.Request) (model.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		open, err := s.open.isOpen(r.Context())
		if err != nil {
			return model.Principal{}, err
		}
		if open {
			return model.Principal{Tenant: model.DefaultTenant, Scope: model.ScopeAdmin}, nil
		}
		return model.Principal{}, model.ErrUnauthorized
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return model.Principal{}, model.ErrUnauthorized
	}
	return s.store.Authenticate(r.Context(), strings.TrimSpace(token))
}

// require refuses requests whose key's scope does not reach need.
func (s *Server) require(need model.Scope) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p := principalOf(r); !p.Scope.Allows(need) {
				s.writeError(w, r, model.Forbidden(p.Scope, need))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// userBound keeps a key bound to one end user to that user's sessions: a
// session of another user (or of none) is 404, as if it did not exist, and the
// routes that span users are 403. It gives the user an id space of its own
// (user_ids.go has the threat model): {id} is resolved to the stored id of the
// user's session, and every answer but a file's bytes shows the ids the user
// chose. It runs after routing, so it reads the route's pattern and
// parameters as the handler will.
func (s *Server) userBound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principalOf(r)
		if p.UserID == "" {
			next.ServeHTTP(w, r)
			return
		}
		pattern := chi.RouteContext(r.Context()).RoutePattern()
		if pattern == "/v1/files/{id}" { // a file's bytes are the file's, shown as they are
			s.userRoute(w, r, p, pattern, next)
			return
		}
		suffix := []byte(model.UserSpaceSuffix(p.UserID))
		sw := &shownWriter{ResponseWriter: w, suffix: suffix}
		s.userRoute(sw, r.WithContext(context.WithValue(r.Context(), userSuffixKey, suffix)), p, pattern, next)
		// Not deferred: a handler that panics (an export cut midway) must
		// not have its body's held end sent as if it ended there.
		sw.finish()
	})
}

// userRoute is userBound's decision, for a route the bound key p calls.
func (s *Server) userRoute(w http.ResponseWriter, r *http.Request, p model.Principal, pattern string, next http.Handler) {
	switch {
	case spansUsers[pattern],
		pattern == "/v1/agents/{id}/tools/{tool_name}" && chi.URLParam(r, "tool_name") == "conversation_search":
		s.writeError(w, r, model.ForbiddenForUser(p.UserID))
		return
	case strings.HasPrefix(pattern, "/v1/sessions/{id}"):
		id, err := s.userSession(r.Context(), p, chi.URLParam(r, "id"))
		switch {
		case model.IsNotFound(err, "session") && createsSession[pattern] && r.Method == http.MethodPost &&
			model.ValidClientID(chi.URLParam(r, "id")):
			r = markUnresolved(r) // the handler may make it: writeSessionID
		case err != nil:
			s.writeError(w, r, err)
			return
		default:
			setURLParam(r, "id", id)
		}
	}
	next.ServeHTTP(w, r)
}

// spansUsers are the routes that read or write the sessions of every user of
// the tenant at once; a key bound to one user may not use them.
var spansUsers = map[string]bool{
	"/v1/messages/search":             true,
	"/v1/agents/{id}/messages/search": true,
	"/v1/events":                      true,
	"/v1/usage":                       true,
	"/v1/sessions/import":             true,
	"/v1/agents/{id}/export":          true,
	"/v1/agents/import":               true,
	"/v1/items/import":                true, // an export may hold every user's items
}

func principalOf(r *http.Request) model.Principal {
	p, _ := r.Context().Value(principalKey).(model.Principal)
	return p
}

// tenantOf names the tenant a request acts for; every repo call is scoped by it.
func tenantOf(r *http.Request) string { return principalOf(r).Tenant }

// openMode answers "may a request without a key act as the default tenant?".
// It may only while the server allows it (it started with no key, on loopback or
// with --insecure-no-auth) and no key has appeared since. Open mode only ever
// ends: once a key exists, made here or by the CLI in another process, keys are
// demanded until the process exits, even if every key is revoked later. Revoking
// the last key must not hand its tenant's data (and every other tenant's, through
// an admin backup) to anyone without a key. The database is asked at most once a
// second, since a key made by the CLI can only be seen there.
type openMode struct {
	allowed bool
	has     func(context.Context) (bool, error)

	mu      sync.Mutex
	ended   bool
	checked time.Time
}

const openModeTTL = time.Second

func (o *openMode) isOpen(ctx context.Context) (bool, error) {
	if !o.allowed {
		return false, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended || time.Since(o.checked) < openModeTTL {
		return !o.ended, nil
	}
	hasKeys, err := o.has(ctx)
	if err != nil {
		return false, err
	}
	o.ended, o.checked = hasKeys, time.Now()
	return !o.ended, nil
}

// forget drops the cached answer, after this server made a key, so that open mode
// ends with the answer that shows the key.
func (o *openMode) forget() {
	o.mu.Lock()
	o.checked = time.Time{}
	o.mu.Unlock()
}
