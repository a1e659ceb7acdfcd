package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

type blockList struct {
	Data []model.Block `json:"data"`
}

func (s *Server) listBlocks(w http.ResponseWriter, r *http.Request) {
	blocks, err := s.store.ListBlocks(r.Context(), tenantOf(r), chi.URLParam(r, "id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, blockList{blocks})
}

// writeBlock answers with a block and its version as a strong ETag, which a
// client sends back in If-Match to update it safely.
func (s *Server) writeBlock(w http.ResponseWriter, r *http.Request, status int, b model.Block) {
	w.Header().Set("ETag", etag(b.Version))
	s.writeJSON(w, r, status, b)
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

func (s *Server) getBlock(w http.ResponseWriter, r *http.Request) {
	b, err := s.store.GetBlock(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "label"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeBlock(w, r, http.StatusOK, b)
}

// putBlock creates or replaces a block; with If-Match it replaces only the
// version the client read (412 otherwise), so two editors cannot overwrite each
// other unseen.
func (s *Server) putBlock(w http.ResponseWriter, r *http.Request) {
	label, err := blockLabel(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := decode[model.PutBlock](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, created, err := s.store.PutBlock(r.Context(), tenantOf(r), chi.URLParam(r, "id"), label, in, ifMatch(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", r.URL.Path)
	}
	s.writeBlock(w, r, status, b)
}

// ifMatch reads If-Match as RFC 9110 does for a strong validator: nil when absent,
// repo.AnyVersion for "*", and -1 (matches no version) for a weak tag or one this
// server could not have made.
func ifMatch(r *http.Request) *int64 {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	v := int64(-1)
	switch {
	case h == "":
		return nil
	case h == "*":
		v = repo.AnyVersion
	case strings.HasPrefix(h, `"`) && strings.HasSuffix(h, `"`) && len(h) > 2:
		if n, err := strconv.ParseInt(h[1:len(h)-1], 10, 64); err == nil && n > 0 {
			v = n
		}
	}
	return &v
}

func blockLabel(r *http.Request) (string, error) {
	label := chi.URLParam(r, "label")
	if !model.ValidLabel(label) {
		return "", model.Invalid(model.FieldError{Field: "label", Message: "must be 1 to 64 characters of A-Z a-z 0-9 _ . : -"})
	}
	return label, nil
}

func (s *Server) deleteBlock(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DeleteBlock(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "label")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) appendBlock(w http.ResponseWriter, r *http.Request) {
	label, err := blockLabel(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := decode[model.AppendBlock](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.store.AppendBlock(r.Context(), tenantOf(r), chi.URLParam(r, "id"), label, in.Content, repo.EditByAPI)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeBlock(w, r, http.StatusOK, b)
}

func (s *Server) replaceBlock(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.ReplaceBlock](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.store.ReplaceBlock(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "label"), in.Old, in.New, repo.EditByAPI)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeBlock(w, r, http.StatusOK, b)
}

func (s *Server) blockHistory(w http.ResponseWriter, r *http.Request) {
	q := parseQuery(r, "limit", "cursor")
	p := q.page()
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.store.BlockHistory(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "label"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, page)
}

// attachBlock shares another agent's block with this one: from then on the
// label names that one block, through either agent.
func (s *Server) attachBlock(w http.ResponseWriter, r *http.Request) {
	in, err := decode[model.AttachBlock](s, w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.store.AttachBlock(r.Context(), tenantOf(r), chi.URLParam(r, "id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", strings.TrimSuffix(r.URL.Path, "/attach")+"/"+b.Label)
	s.writeBlock(w, r, http.StatusCreated, b)
}

func (s *Server) detachBlock(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DetachBlock(r.Context(), tenantOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "label")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
