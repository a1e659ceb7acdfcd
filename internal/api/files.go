package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
)

// Files: threat model.
//
// Who may read a file: every key of its tenant that is bound to no user; a
// key bound to user U (Principal.UserID) only the files U uploaded and those
// that messages of U's sessions reference (repo.Files states the rule; each
// backend says it in SQL). A file U may not read answers 404, exactly as a
// file never uploaded, and an append of U's naming it is refused as naming no
// file (so U cannot reference B's file id in U's own session and then
// download it); appends, batches, streams and rewinds all check it. Imports
// are refused to bound keys (userBound), and a fork copies no parts.
//
// What an upload tells: 201 the first time the caller uploads those bytes
// (for U: the first time U does, whoever else holds them), 200 when the caller
// uploaded them before; created_at is the caller's own first upload. So U
// learns nothing of what other users hold. The file id stays content-
// addressed (the same bytes and type are the same id for everyone): it tells
// U nothing, since U has the bytes already, and it is what lets one file be
// stored once per tenant and move between servers in exports.
//
// What one client can make the server hold: an upload is read whole, at most
// --max-file-bytes (refused at once, from Content-Length, when it says more);
// a download streams a chunk (256 KiB) at a time.

// uploadFile stores the request body, as it is, as a file whose media type is
// the request's Content-Type. The same bytes and type again are the same file:
// 200 with it instead of 201 when the caller uploaded them before.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	mediaType, err := fileMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tooBig := model.Errorf(model.KindTooLarge, "payload_too_large", "a file may be at most %d bytes (--max-file-bytes)", s.maxFile)
	if declaredTooLarge(w, r, s.maxFile) {
		s.writeError(w, r, tooBig)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxFile))
	if err != nil {
		var over *http.MaxBytesError
		if errors.As(err, &over) {
			s.writeError(w, r, tooBig)
			return
		}
		s.writeError(w, r, model.Errorf(model.KindBadRequest, "malformed_json", "could not read the request body"))
		return
	}
	f, created, err := s.store.CreateFile(r.Context(), tenantOf(r), principalOf(r).UserID, mediaType, data)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	w.Header().Set("Location", "/v1/files/"+f.ID)
	s.writeJSON(w, r, status, f)
}

// fileMediaType is the upload's Content-Type, normalised; a form upload is
// refused, since its body is not the file.
func fileMediaType(ct string) (string, error) {
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case ct == "":
		return "", model.Errorf(model.KindUnsupported, "unsupported_media_type",
			"send the file's bytes as the body with its media type as Content-Type (image/png, application/pdf, …)")
	case err != nil || strings.Count(mt, "/") != 1 || len(ct) > 255:
		return "", model.Errorf(model.KindUnsupported, "unsupported_media_type", "Content-Type %q is not a media type", ct)
	case strings.HasPrefix(mt, "multipart/"):
		return "", model.Errorf(model.KindUnsupported, "unsupported_media_type",
			"send the file's bytes as the body, not a %s form", mt)
	}
	return mime.FormatMediaType(mt, params), nil
}

// errNotModified stops a download whose copy the client already has.
var errNotModified = errors.New("not modified")

// downloadFile streams a file's bytes. A file's id names its bytes, which never
// change, so caches may keep them; the sandbox policy keeps an uploaded HTML or
// SVG file from running as a page of this server's origin.
func (s *Server) downloadFile(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if !model.ValidFileID(id) {
		s.writeError(w, r, model.NotFound("file", id))
		return
	}
	started := false
	err := s.store.WriteFile(r.Context(), tenantOf(r), principalOf(r).UserID, id, func(f model.File) error {
		h := w.Header()
		etag := `"` + f.SHA256 + `"`
		h.Set("ETag", etag)
		h.Set("Cache-Control", "private, max-age=31536000, immutable")
		if notModified(r, etag) {
			w.WriteHeader(http.StatusNotModified)
			return errNotModified
		}
		h.Set("Content-Type", f.MediaType)
		h.Set("Content-Length", strconv.FormatInt(f.Size, 10))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		w.WriteHeader(http.StatusOK)
		started = true
		return nil
	}, w)
	switch {
	case err == nil, errors.Is(err, errNotModified):
	case !started:
		s.writeError(w, r, err)
	default:
		// The status went out with the first byte: all that is left is to cut
		// the connection, so the client sees a short body, not a whole one.
		s.log.Error().Str("request_id", requestIDOf(r)).Err(err).Msg("file download failed midway")
		panic(http.ErrAbortHandler)
	}
}
