package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/logbook/logbook/internal/model"
)

type ctxKey int

const requestIDKey ctxKey = iota

// closeAfterChunked closes the connection after answering a request whose body
// came with Transfer-Encoding. RFC 9112 §6.1 says a server that receives both
// Transfer-Encoding and Content-Length must close the connection after
// responding, as the two may frame the body differently for a proxy in front
// (request smuggling). net/http drops Content-Length before a handler can see
// that both were sent, so every chunked request is answered this way; clients
// that send bodies chunked pay one new connection per such request.
func closeAfterChunked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// requestID gives every request an id, echoed in X-Request-Id and in every log
// line about it. A caller's own id is kept when it is short and printable, so that
// a runtime can correlate its logs with ours.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = s.ids.next()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

// requestIDs makes request ids: a random prefix per process and a counter. They
// only need to be unique within the logs; a UUID per request cost more CPU than
// routing it.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (g *requestIDs) next() string {
	return g.prefix + strconv.FormatUint(g.n.Add(1), 36)
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func requestIDOf(r *http.Request) string {
	id, _ := r.Context().Value(requestIDKey).(string)
	return id
}

// accessLog writes one JSON line per request.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		if s.requests != nil {
			s.requests.ObserveRequest(r.Method, routePattern(r), status, time.Since(start))
		}
		ev := s.log.Info()
		if status >= 500 {
			ev = s.log.Warn()
		}
		ev.Str("request_id", requestIDOf(r)).
			Str("method", r.Method).
			Str("path", r.URL.Path).
			Int("status", status).
			Int("bytes", ww.BytesWritten()).
			Float64("duration_ms", float64(time.Since(start).Microseconds())/1000).
			Str("remote", r.RemoteAddr).
			Msg("request")
	})
}

// recoverer turns a handler panic into a logged stack and a problem+json 500 with
// no internals in the body.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler {
				panic(rec)
			}
			s.log.Error().Str("request_id", requestIDOf(r)).Interface("panic", rec).
				Bytes("stack", debug.Stack()).Msg("handler panicked")
			s.writeError(w, r, model.Internal(nil))
		}()
		next.ServeHTTP(w, r)
	})
}
