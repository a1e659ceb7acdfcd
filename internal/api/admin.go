package api

import (
	"context"
	"net/http"
	"path/filepath"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// Retention and maintenance: hard deletion (purge), integrity checks and backups.
// All need admin scope; purges and checks act on the caller's tenant only.

// purgeSession is DELETE /v1/sessions/{id}?purge=true: the session, its messages,
// checkpoints and their pending writes, idempotency keys and index rows are
// erased, as POST /v1/admin/purge erases each session it picks. A write key
// may purge any session it can see (a runtime deleting its thread); a key
// bound to an end user sees only that user's (userBound).
func (s *Server) purgeSession(w http.ResponseWriter, r *http.Request) {
	if err := s.store.PurgeSession(r.Context(), tenantOf(r), chi.URLParam(r, "id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) purgeSessions(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.PurgeRequest](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tenant := tenantOf(r)
	s.runJob(w, r, model.JobPurge, http.StatusOK, func(ctx context.Context) (any, error) {
		return s.store.PurgeSessions(ctx, tenant, in)
	})
}

func (s *Server) checkIntegrity(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "repair")
	repair := q.oneOf("repair", "counters")
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	tenant := tenantOf(r)
	s.runJob(w, r, model.JobIntegrity, http.StatusOK, func(ctx context.Context) (any, error) {
		return s.store.CheckIntegrity(ctx, tenant, repair == "counters")
	})
}

// backupDatabase copies the whole database into the backup directory, under a
// plain file name the caller may choose: the API never writes anywhere else.
// backupDatabase copies the whole file, every tenant's data included, so only the
// operator's tenant (the one open mode and the first CLI key use) may ask for it.
func (s *Server) backupDatabase(w http.ResponseWriter, r *http.Request) {
	if tenantOf(r) != model.DefaultTenant {
		s.writeError(w, r, &model.Error{Kind: model.KindForbidden, Code: "forbidden",
			Msg: "a backup copies every tenant's data: only an admin key of tenant \"default\" may make one"})
		return
	}
	in, err := decode[model.BackupRequest](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	dir := s.backupDir
	if dir == "" {
		db, err := s.store.DatabasePath(r.Context())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		dir = filepath.Join(filepath.Dir(db), "backups")
	}
	name := in.Name
	if name == "" {
		name = model.DefaultBackupName(time.Now())
	}
	dest := filepath.Join(dir, name)
	s.runJob(w, r, model.JobBackup, http.StatusCreated, func(ctx context.Context) (any, error) {
		return s.store.Backup(ctx, dest)
	})
}

// boolean reads true or false; false when absent.
func (q *query) boolean(name string) bool {
	switch q.v.Get(name) {
	case "", "false":
		return false
	case "true":
		return true
	}
	q.fail(name, "must be true or false")
	return false
}
