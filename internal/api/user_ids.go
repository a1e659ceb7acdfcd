package api

import (
	"bytes"
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// Session ids of keys bound to a user: threat model.
//
// A key bound to user U must learn nothing of other users' sessions: not
// their contents (userBound answers 404 for them, as for a missing id) and
// not their existence. An id is the one thing a client chooses that others
// can collide with, so U has an id space of its own (model.UserSessionID):
// POST /v1/sessions {"id": X}, a fork to X, answer exactly as for a free X
// whether or not another principal holds X; when one does, U's session is
// stored as X plus U's suffix. Every route U calls takes X ({id} is resolved
// here, in userBound, before the handler runs) and every answer shows X:
// shownWriter deletes U's suffix from all U is sent (bodies, SSE events,
// NDJSON exports and streams, problem details, Location), writeTagged hashes
// the shown body (an ETag of the stored one would tell the two apart), and
// a list's cursor carries the shown id (sessions sort the same by either,
// model.UserSessionID). An id that no client could choose (a stored form,
// with its suffix) is 404 to U: U addresses its sessions by the ids it chose.
// Keys bound to no user see the stored ids and the sessions' user_id.
//
// The deletion is of bytes, so a literal copy of U's suffix in U's own
// content ("!" and 16 hex digits of a hash of U's id, which nothing writes by
// chance) is deleted from what U is shown too; the stored content, and what
// keys bound to no user read, are as written. A file's bytes are never
// touched: downloads are not filtered.
//
// Other oracles a bound key could read, and why they are closed: a session
// of another user is 404 on every session route, never 403 or 409 (fork
// sources included); the routes that span users are 403 whatever their
// target (imports among them, so as_new=false cannot probe ids); idempotency
// keys are scoped to one session, so another user's keys never conflict.
//
// Cost: two point reads of the sessions table per session route a bound key
// calls (the moved id, then the one asked), always both, so that the time
// taken does not tell which one holds the session; and one scan of each
// answer for the suffix.

// userSession resolves the id a key bound to p.UserID asked for to the stored
// id of that user's session: its moved form (model.UserSessionID) when that
// is the user's, else the id itself when that is. Anything else (another
// user's session, a session of no user, none) is 404.
func (s *Server) userSession(ctx context.Context, p model.Principal, id string) (string, error) {
	notFound := model.NotFound("session", id)
	if !model.ValidClientID(id) {
		return "", notFound
	}
	found := ""
	for _, stored := range []string{id, model.UserSessionID(id, p.UserID)} {
		ses, err := s.store.GetSession(ctx, p.Tenant, stored)
		switch {
		case model.IsNotFound(err, "session"):
		case err != nil:
			return "", err
		case ses.UserID != nil && *ses.UserID == p.UserID:
			found = stored // the moved form, read second, wins
		}
	}
	if found == "" {
		return "", notFound
	}
	return found, nil
}

// setURLParam makes the route's parameter key read value from here on.
func setURLParam(r *http.Request, key, value string) {
	params := &chi.RouteContext(r.Context()).URLParams
	for i, k := range params.Keys {
		if k == key {
			params.Values[i] = value
		}
	}
}

const userSuffixKey ctxKey = iota + 200

// userSuffix is the suffix to delete from what the request's key is sent:
// nil for a key bound to no user.
func userSuffix(r *http.Request) []byte {
	b, _ := r.Context().Value(userSuffixKey).([]byte)
	return b
}

// shownBody is b as the request's key is shown it.
func shownBody(r *http.Request, b []byte) []byte {
	if suffix := userSuffix(r); suffix != nil {
		b, _ = deleteSuffixes(b, suffix, true)
	}
	return b
}

// deleteSuffixes deletes every suffix from data, in one pass left to right,
// and returns what is left; unless final, the end of data that may begin a
// suffix cut by the next write is kept back as held. out is data itself
// when there was nothing to delete (the common case: no copy); held never
// shares memory with data.
func deleteSuffixes(data, suffix []byte, final bool) (out, held []byte) {
	if bytes.Contains(data, suffix) {
		out = make([]byte, 0, len(data))
		for {
			i := bytes.Index(data, suffix)
			if i < 0 {
				break
			}
			out = append(out, data[:i]...)
			data = data[i+len(suffix):]
		}
	}
	keep := 0
	if !final {
		for k := min(len(data), len(suffix)-1); k > 0; k-- {
			if bytes.HasSuffix(data, suffix[:k]) {
				keep = k
				break
			}
		}
	}
	if out == nil {
		out = data[:len(data)-keep]
	} else {
		out = append(out, data[:len(data)-keep]...)
	}
	if keep == 0 {
		return out, nil
	}
	return out, bytes.Clone(data[len(data)-keep:])
}

// shownWriter deletes a suffix from everything written through it: the
// Location header and the body, streamed (a suffix cut by two writes is
// deleted too). The status is held until the body's first write: a body
// whose length the handler declared comes whole in that write (writeBody),
// and its Content-Length is corrected; any other loses it.
type shownWriter struct {
	http.ResponseWriter
	suffix []byte
	status int // held; 0 until WriteHeader
	sent   bool
	held   []byte
}

func (sw *shownWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

func (sw *shownWriter) WriteHeader(code int) {
	switch {
	case code >= 100 && code < 200, sw.sent: // informational, or superfluous (net/http reports it)
		sw.ResponseWriter.WriteHeader(code)
		return
	case sw.status != 0:
		return
	}
	sw.status = code
}

// send sends the held status, with what the headers show corrected: the
// body's length, or -1 when it is not known yet, or keepLength.
func (sw *shownWriter) send(length int) {
	if sw.sent {
		return
	}
	sw.sent = true
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	h := sw.Header()
	if loc := h.Get("Location"); loc != "" {
		h.Set("Location", string(bytes.ReplaceAll([]byte(loc), sw.suffix, nil)))
	}
	if h.Get("Content-Length") != "" && length != keepLength {
		if length >= 0 {
			h.Set("Content-Length", strconv.Itoa(length))
		} else {
			h.Del("Content-Length")
		}
	}
	sw.ResponseWriter.WriteHeader(sw.status)
}

// keepLength leaves a declared Content-Length as it is: no body was written.
const keepLength = -2

func (sw *shownWriter) Write(p []byte) (int, error) {
	if !sw.sent && sw.Header().Get("Content-Length") == strconv.Itoa(len(p)) {
		out, _ := deleteSuffixes(p, sw.suffix, true) // the whole body
		sw.send(len(out))
		if _, err := sw.ResponseWriter.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	sw.send(-1)
	data := p
	if len(sw.held) > 0 {
		data = append(sw.held, p...)
	}
	out, held := deleteSuffixes(data, sw.suffix, false)
	sw.held = held
	if _, err := sw.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// FlushError is what http.ResponseController calls: it sends what may be
// sent (not a held end that may begin a suffix: a stream's events and lines
// end with a newline, so none is held at their end) and flushes.
func (sw *shownWriter) FlushError() error {
	sw.send(-1)
	return http.NewResponseController(sw.ResponseWriter).Flush()
}

// Flush makes the writer an http.Flusher for handlers that assert one.
func (sw *shownWriter) Flush() { _ = sw.FlushError() }

// finish sends what the handler left held: a status without a body, or the
// body's end.
func (sw *shownWriter) finish() {
	if !sw.sent && sw.status != 0 {
		sw.send(keepLength)
	}
	if len(sw.held) > 0 {
		_, _ = sw.ResponseWriter.Write(sw.held)
		sw.held = nil
	}
}
