package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/logbook/logbook/internal/model"
)

// eventsWriteTimeout bounds one write to a live feed's client: a reader that
// stops reading is let go after it (its events wait in the log; it resumes
// with Last-Event-ID), and never holds anything but its own connection.
const eventsWriteTimeout = 30 * time.Second

// sessionEvents streams one session's events as Server-Sent Events: every
// message, rewind, compaction, checkpoint and session change as it commits.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	q := parseQuery(r, "after", "after_seq", "type")
	ev := model.EventQuery{SessionID: id, Types: eventTypes(q)}
	afterSeq, hasSeq := q.v.Get("after_seq"), q.v.Has("after_seq")
	seq := q.seq("after_seq")
	after, ok := eventsAfter(r, q)
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	tenant := tenantOf(r)
	ses, err := s.store.GetSession(r.Context(), tenant, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case ok:
		ev.After = after
	case hasSeq && afterSeq != "" && seq == 0:
		ev.After = 0 // from the session's first event
	case hasSeq:
		if seq > ses.LastSeq {
			s.writeError(w, r, model.InvalidQuery("after_seq", "is past the session's last_seq "+strconv.FormatInt(ses.LastSeq, 10)))
			return
		}
		pos, err := s.store.EventPosOfSeq(r.Context(), tenant, id, seq)
		if err != nil {
			var me *model.Error
			if errors.As(err, &me) && me.Kind == model.KindNotFound {
				err = &model.Error{Kind: model.KindConflict, Code: "event_not_found",
					Msg: "no event appended message seq " + strconv.FormatInt(seq, 10) +
						" of this session (it was imported or forked in); resume with Last-Event-ID, or after_seq=0 for every event"}
			}
			s.writeError(w, r, err)
			return
		}
		ev.After = pos
	default:
		if ev.After, err = s.store.EventHead(r.Context()); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.streamEvents(w, r, tenant, ev)
}

// tenantEvents streams every event of the caller's tenant (a dashboard's
// feed), optionally of one session and of some types.
func (s *Server) tenantEvents(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "after", "session_id", "type")
	ev := model.EventQuery{SessionID: q.str("session_id"), Types: eventTypes(q)}
	after, ok := eventsAfter(r, q)
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	if ok {
		ev.After = after
	} else {
		var err error
		if ev.After, err = s.store.EventHead(r.Context()); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.streamEvents(w, r, tenantOf(r), ev)
}

// eventTypes reads ?type= (repeated or comma-separated).
func eventTypes(q *query) []model.EventType {
	var out []model.EventType
	for _, t := range q.list("type") {
		if !model.EventType(t).Valid() {
			names := make([]string, len(model.EventTypes))
			for i, e := range model.EventTypes {
				names[i] = string(e)
			}
			q.fail("type", strconv.Quote(t)+" is not an event type; one of: "+strings.Join(names, ", "))
			continue
		}
		out = append(out, model.EventType(t))
	}
	return out
}

// eventsAfter reads where to resume: the Last-Event-ID header an
// EventSource sends when it reconnects, else ?after=.
func eventsAfter(r *http.Request, q *query) (int64, bool) {
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(h), 10, 64)
		if err != nil || n < 0 {
			q.fail("Last-Event-ID", "must be the id of an event of this feed (a non-negative integer)")
			return 0, false
		}
		return n, true
	}
	if q.v.Has("after") {
		return q.seq("after"), true
	}
	return 0, false
}

// streamEvents writes ev's events as they commit until the client leaves or
// the server closes, with a heartbeat comment whenever it is quiet.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, tenant string, ev model.EventQuery) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	// The server's WriteTimeout is for answers, not a stream: each write gets
	// its own deadline instead.
	_ = rc.SetWriteDeadline(time.Now().Add(eventsWriteTimeout))
	// The opening id is where the feed starts: a client cut off before its
	// first event resumes from there (an EventSource keeps it as its last
	// event id; a block without data is no event).
	open := strconv.AppendInt([]byte("retry: 1000\nid: "), ev.After, 10)
	if _, err := w.Write(append(open, "\n: live\n\n"...)); err != nil || rc.Flush() != nil {
		return
	}
	reader := s.feed.Subscribe(tenant, ev)
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
	var buf []byte
	for {
		evs, err := reader.Next(ctx, s.heartbeat)
		if err != nil {
			// The client left, or the server is stopping (the client resumes
			// elsewhere, from its Last-Event-ID): either way the stream ends
			// after the last whole event.
			if ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("live feed: read")
			}
			return
		}
		buf = buf[:0]
		if len(evs) == 0 {
			buf = append(buf, ": heartbeat\n\n"...)
		}
		for i := range evs {
			buf = appendSSE(buf, &evs[i])
		}
		_ = rc.SetWriteDeadline(time.Now().Add(eventsWriteTimeout))
		if _, err := w.Write(buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// appendSSE appends one event in the text/event-stream format. Data is JSON
// the store wrote; should it ever hold line breaks, each line goes
// in a data field of its own, which a client joins back with "\n".
func appendSSE(b []byte, e *model.Event) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, e.Pos, 10)
	b = append(b, "\nevent: "...)
	b = append(b, e.Type...)
	data := e.Data
	for {
		i := bytes.IndexAny(data, "\r\n")
		b = append(b, "\ndata: "...)
		if i < 0 {
			b = append(b, data...)
			break
		}
		b = append(b, data[:i]...)
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(b, "\n\n"...)
}
