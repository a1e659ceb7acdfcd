package api

import (
	"bufio"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// defaultImportMaxBytes bounds an import's body when Config.ImportMaxBytes is 0.
const defaultImportMaxBytes = 256 << 20

// An export or an import may take longer than the server's usual timeouts (a
// session can be large), but not by dribbling: after a grace period the bytes
// must keep up an average of streamMinRate, or the connection is cut. A deadline
// renewed on every read, as before, let a client that sent one byte every few
// seconds hold a connection (and, for an export, a read snapshot) for ever.
const (
	defaultStreamGrace = 30 * time.Second
	streamMinRate      = 64 << 10 // bytes a second
)

// streamDeadline is when a stream that began at start and has moved n bytes
// must have moved its next ones.
func streamDeadline(start time.Time, grace time.Duration, n int64) time.Time {
	return start.Add(grace + time.Duration(float64(n)/streamMinRate*float64(time.Second)))
}

// exportSession streams a session as NDJSON. Problems found before the first
// byte (not found, a damaged checkpoint) are answered as problems; after it, the
// connection is cut, so the client sees a failed download rather than a short
// file (which an import would refuse anyway: it lacks its end line).
func (s *Server) exportSession(w http.ResponseWriter, r *http.Request) {
	s.streamExport(w, r, func(out io.Writer) error {
		return s.store.ExportSession(r.Context(), tenantOf(r), chi.URLParam(r, "id"), out)
	})
}

// exportAgent streams an agent, its memory and its sessions as NDJSON, as
// exportSession streams a session.
func (s *Server) exportAgent(w http.ResponseWriter, r *http.Request) {
	s.streamExport(w, r, func(out io.Writer) error {
		return s.store.ExportAgent(r.Context(), tenantOf(r), chi.URLParam(r, "id"), out)
	})
}

// streamExport runs export on the response: a problem before its first byte,
// a cut connection after it.
func (s *Server) streamExport(w http.ResponseWriter, r *http.Request, export func(io.Writer) error) {
	out := &lazyStream{w: w, rc: http.NewResponseController(w), start: time.Now(), grace: s.streamGrace}
	buf := bufio.NewWriterSize(out, 64<<10)
	err := export(buf)
	if err == nil {
		err = buf.Flush()
	}
	if err == nil {
		return
	}
	if !out.started {
		s.writeError(w, r, err)
		return
	}
	s.log.Warn().Str("request_id", requestIDOf(r)).Err(err).Msg("export stopped after it began")
	panic(http.ErrAbortHandler)
}

// lazyStream sends the 200 and its headers with the first bytes, so that an
// error found before then can still be a problem+json answer.
type lazyStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	start   time.Time
	grace   time.Duration
	n       int64
}

func (l *lazyStream) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", "application/x-ndjson")
		l.w.WriteHeader(http.StatusOK)
	}
	_ = l.rc.SetWriteDeadline(streamDeadline(l.start, l.grace, l.n)) // not every writer supports it
	n, err := l.w.Write(p)
	l.n += int64(n)
	return n, err
}

// importSession restores a session from an export. The body has its own limit
// (exports are larger than any other request); nothing is written unless all of
// it checks out.
func (s *Server) importSession(w http.ResponseWriter, r *http.Request) {
	body, opts, ok := s.importBody(w, r)
	if !ok {
		return
	}
	ses, err := s.store.ImportSession(r.Context(), tenantOf(r), body, opts)
	if err != nil {
		s.writeError(w, r, importError(err))
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+ses.ID)
	s.writeJSON(w, r, http.StatusCreated, ses)
}

// importAgent restores an agent, its memory and its sessions from an agent
// export, as importSession restores a session: all of it or nothing.
func (s *Server) importAgent(w http.ResponseWriter, r *http.Request) {
	body, opts, ok := s.importBody(w, r)
	if !ok {
		return
	}
	a, err := s.store.ImportAgent(r.Context(), tenantOf(r), body, opts)
	if err != nil {
		s.writeError(w, r, importError(err))
		return
	}
	w.Header().Set("Location", "/v1/agents/"+a.ID)
	s.writeJSON(w, r, http.StatusCreated, a)
}

// importBody reads an import's options and hands back its body, under its own
// size limit and the stream deadline; ok is false once a problem is answered.
func (s *Server) importBody(w http.ResponseWriter, r *http.Request) (io.Reader, model.ImportOptions, bool) {
	q := parseQuery(r, "as_new")
	asNew := q.oneOf("as_new", "true", "false") == "true"
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return nil, model.ImportOptions{}, false
	}
	body, ok := s.ndjsonBody(w, r)
	return body, model.ImportOptions{AsNew: asNew}, ok
}

// ndjsonBody hands back an import's NDJSON body under the import size limit
// and the stream deadline; ok is false once a problem is answered.
func (s *Server) ndjsonBody(w http.ResponseWriter, r *http.Request) (io.Reader, bool) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/x-ndjson" && mt != "application/json") {
		s.writeError(w, r, model.Errorf(model.KindUnsupported, "unsupported_media_type",
			"Content-Type must be application/x-ndjson (or application/json), not %q", ct))
		return nil, false
	}
	if declaredTooLarge(w, r, s.importMax) {
		s.writeError(w, r, model.Errorf(model.KindTooLarge, "payload_too_large", "the import exceeds the limit of %d bytes", s.importMax))
		return nil, false
	}
	return &deadlineReader{r: http.MaxBytesReader(w, r.Body, s.importMax), rc: http.NewResponseController(w),
		start: time.Now(), grace: s.streamGrace}, true
}

// importError tells a body over the import limit (413) from the rest.
func importError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return model.Errorf(model.KindTooLarge, "payload_too_large", "the import exceeds the limit of %d bytes", tooBig.Limit)
	}
	return err
}

// deadlineReader holds a large body to streamDeadline.
type deadlineReader struct {
	r     io.Reader
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	n     int64
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	_ = d.rc.SetReadDeadline(streamDeadline(d.start, d.grace, d.n)) // not every writer supports it
	n, err := d.r.Read(p)
	d.n += int64(n)
	return n, err
}
