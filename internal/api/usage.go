package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// usage sums tokens and cost of the caller's stored messages by day, agent,
// model or session, over UTC days (the rollups' grain).
func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "group_by", "from", "to", "agent_id", "limit")
	in := model.UsageQuery{GroupBy: model.UsageGroupBy(q.oneOf("group_by", "day", "agent", "model", "session")),
		AgentID: q.str("agent_id"), Limit: 100}
	if in.GroupBy == "" {
		in.GroupBy = model.UsageByDay
	}
	today := model.DayOf(model.Now())
	in.FromDay, in.ToDay = today-29, today
	if d, ok := usageDay(q, "from"); ok {
		in.FromDay = d
	}
	if d, ok := usageDay(q, "to"); ok {
		in.ToDay = d
	}
	if s := q.str("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			q.fail("limit", "must be an integer from 1 to 1000")
		}
		in.Limit = n
	}
	if in.FromDay > in.ToDay {
		q.fail("from", "is after to")
	}
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := s.store.Usage(r.Context(), tenantOf(r), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, u)
}

// usageDay reads a day as a date (2026-11-23) or an RFC 3339 time (its UTC
// day).
func usageDay(q *query, name string) (int64, bool) {
	v := q.str(name)
	if v == "" {
		return 0, false
	}
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		return model.DayOf(model.TimeOf(d)), true
	}
	t, err := model.ParseTime(v)
	if err != nil {
		q.fail(name, "must be a date (2026-11-23) or an RFC 3339 time")
		return 0, false
	}
	return model.DayOf(t), true
}
