package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/model"
)

// sessionEvents streams one session's events as Server-Sent Events: every
// message, rewind, compaction, checkpoint and session change as it commits.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	q := parseQuery(r, "after", "after_seq", "type")
	ev := model.EventQuery{SessionID: id, Types: eventTypes(q)}
	afterSeq, hasSeq := q.v.Get("after_seq"), q.v.Has("after_seq")
	seq := q.seq("after_seq")
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	tenant := tenantOf(r)
	ids, err := s.tenantIDs(tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after, field, ok, err := eventsAfter(r, q, ids)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ses, err := s.store.GetSession(r.Context(), tenant, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The stream starts no earlier than the session's creation: the server's
	// memory may still hold events of a purged session of the same id, which
	// are no events of this one.
	start, err := s.store.EventPosOfSeq(r.Context(), tenant, id, 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case ok:
		ev.After = after
		err = s.checkNotPastHead(r, field, after)
	case hasSeq && afterSeq != "" && seq == 0:
		ev.After = start // from the session's first event
	case hasSeq:
		if seq > ses.LastSeq {
			err = model.InvalidQuery("after_seq", "is past the session's last_seq "+strconv.FormatInt(ses.LastSeq, 10))
			break
		}
		ev.After, err = s.store.EventPosOfSeq(r.Context(), tenant, id, seq)
	default:
		ev.After, err = s.store.EventHead(r.Context())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ev.After = max(ev.After, start)
	s.streamEvents(w, r, ids, ev, s.newFeedGuard(r, &ses))
}

// tenantEvents streams every event of the caller's tenant (a dashboard's
// feed), optionally of one session and of some types.
func (s *Server) tenantEvents(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "after", "session_id", "type")
	ev := model.EventQuery{SessionID: q.str("session_id"), Types: eventTypes(q)}
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	tenant := tenantOf(r)
	ids, err := s.tenantIDs(tenant)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	after, field, ok, err := eventsAfter(r, q, ids)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ok {
		ev.After = after
		err = s.checkNotPastHead(r, field, after)
	} else {
		ev.After, err = s.store.EventHead(r.Context())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.streamEvents(w, r, ids, ev, s.newFeedGuard(r, nil))
}

// tenantIDs are the ids of tenant's feed.
func (s *Server) tenantIDs(tenant string) (feed.TenantIDs, error) {
	if s.feedIDs == nil {
		return feed.TenantIDs{}, model.Internal(s.feedIDsErr)
	}
	return s.feedIDs.For(tenant), nil
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

// eventsAfter reads where to resume, and from which field: the Last-Event-ID
// header an EventSource sends when it reconnects, else ?after=. An id opens
// only for the tenant whose feed gave it (feed.TenantIDs).
func eventsAfter(r *http.Request, q *query, ids feed.TenantIDs) (pos int64, field string, ok bool, err error) {
	id, field := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if id == "" {
		if !q.v.Has("after") {
			return 0, "", false, nil
		}
		id, field = q.v.Get("after"), "after"
	}
	pos, ok = ids.Open(strings.TrimSpace(id))
	if !ok {
		return 0, field, false, model.InvalidEventID(field,
			"is not the id of an event of this feed: send back an id the feed gave you, unchanged")
	}
	return pos, field, true, nil
}

// checkNotPastHead refuses a resume position past the newest event: no feed
// gave it (or it comes from a database this one was restored from a backup
// of), and a stream after it would deliver nothing, ever, without saying so.
func (s *Server) checkNotPastHead(r *http.Request, field string, pos int64) error {
	head, err := s.store.EventHead(r.Context())
	if err != nil {
		return err
	}
	if pos > head {
		return model.InvalidEventID(field, "is past the newest event of this feed (was the database restored from an older backup?): "+
			"start again without it, or with after_seq")
	}
	return nil
}
