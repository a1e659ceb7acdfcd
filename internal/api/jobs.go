package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/jobs"
	"github.com/logbook/logbook/internal/model"
)

// Long operations (purge, integrity check, backup) run as jobs: the route
// starts one and waits for it up to jobWait; one that finishes in time is
// answered as it always was, one that does not is answered 202 with the job,
// which the client polls at GET /v1/admin/jobs/{id}. "Prefer: respond-async"
// asks for the 202 at once. Either way the job goes on if the client leaves.

// defaultJobWait is how long a route waits for its job before answering 202:
// well under the server's 60 s write timeout and the 30 s many proxies allow.
const defaultJobWait = 20 * time.Second

// runJob starts fn as a job of kind and answers it: status and its result
// when it ends within the wait, its error when it fails within it, else 202
// and the job.
func (s *Server) runJob(w http.ResponseWriter, r *http.Request, kind string, status int, fn jobs.Func) {
	h, err := s.jobs.Start(r.Context(), tenantOf(r), kind, fn)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !prefersAsync(r) {
		if res, err, done := h.Wait(r.Context(), s.jobWait); done {
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			s.writeJSON(w, r, status, res)
			return
		}
	} else {
		w.Header().Set("Preference-Applied", "respond-async")
	}
	// The answer outlives the request's own context: the job does too.
	job, err := s.store.GetJob(context.WithoutCancel(r.Context()), tenantOf(r), h.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/admin/jobs/"+job.ID)
	s.writeJSON(w, r, http.StatusAccepted, job)
}

// prefersAsync reports whether the request's Prefer header (RFC 7240) asks
// for respond-async.
func prefersAsync(r *http.Request) bool {
	for _, v := range r.Header.Values("Prefer") {
		for _, pref := range strings.Split(v, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(pref), ";")
			if strings.EqualFold(strings.TrimSpace(name), "respond-async") {
				return true
			}
		}
	}
	return false
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	job, err := s.store.GetJob(r.Context(), tenantOf(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, job)
}

// jobError is how a failed job's error reads: as its route would have
// answered it, without what only the log may see.
func jobError(err error) model.JobError {
	e := model.AsError(err)
	status := statusOf(e.Kind)
	detail := e.Msg
	if e.Kind == model.KindInternal {
		detail = "internal error; the job's id identifies it in the server's log"
	}
	return model.JobError{Status: status, Code: e.Code, Detail: detail}
}

// StopJobs stops the jobs that run (each ends as interrupted) and waits for
// them to say so. Call it after the HTTP server has shut down and before the
// store closes.
func (s *Server) StopJobs() { s.jobs.Close() }
