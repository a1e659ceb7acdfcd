package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Inline data (model/inline.go): a part's data: URL of standard base64 past
// model.MinLiftedChars is stored as a file and the part kept in its lifted
// form; every read gives it back whole.
//
// Threat model. Who may read it: whoever may read the message; the file is
// also the appending user's own upload (file_owners), so a key bound to that
// user may download it, and no other user may, exactly as for POST /v1/files.
// What one client can make the server hold: one request's data: URLs hold at
// most --max-file-bytes decoded together (a 422 naming the part past it), so
// a request holds its body, the URL strings decoded from it and their bytes
// once each, within the route's body limit (bodylimits.go, inlineBody) and
// the tenant's body-memory budget. A read holds what it gives back: a page of
// messages stops early (has_more) once its lifted data pass
// maxInflatedPage, so a page of 200 large images is not 200 × 20 MiB.
//
// The hot path: a message with string content, or parts with no data: URL,
// costs one prefix test per part and nothing more. The files are written
// before the append, each in a write of its own, so the append's transaction
// holds only the parts' file ids, never the bytes.

// maxInflatedPage bounds what one page of messages holds of lifted data.
const maxInflatedPage = 64 << 20

// liftedPart is a part the request sent as a data: URL, with the URL.
type liftedPart struct {
	msg, part int
	url       string
}

// inlineLift is what liftInline did to a request's messages.
type inlineLift struct {
	files []model.InlineData
	ids   []string
	parts []liftedPart
	hold  *bodyHold // the files' bytes, counted against the tenant's body memory until stored
}

// liftInline puts the request's large data: URLs in their lifted form, in
// memory: their files are stored by storeFiles once the messages have passed
// their checks. field names message i as a client does ("messages[i]." or "").
// nil when nothing was lifted.
func (s *Server) liftInline(r *http.Request, msgs []model.NewMessage, field func(i int) string) (l *inlineLift, err error) {
	defer func() {
		if err != nil {
			l.release()
		}
	}()
	var total int64
	for i := range msgs {
		parts := msgs[i].Content.Parts
		if parts == nil || !model.HasDataURL(parts) {
			continue
		}
		for j := range parts {
			p := &parts[j]
			if p.Type != model.PartImage && p.Type != model.PartFile {
				continue
			}
			mt, data, ok := model.LiftableDataURL(p.URL)
			if !ok {
				continue
			}
			total += int64(len(data))
			if total > s.maxFile {
				name := field(i) + "content[" + strconv.Itoa(j) + "].url"
				return l, model.Invalid(model.FieldError{Field: name, Message: "the request's data: URLs hold " +
					strconv.FormatInt(total, 10) + " bytes or more; one request's may hold at most " +
					strconv.FormatInt(s.maxFile, 10) + " (--max-file-bytes): upload the files with POST /v1/files"})
			}
			if l == nil {
				l = &inlineLift{hold: &bodyHold{m: s.bodies, tenant: tenantOf(r)}}
			}
			if err := l.hold.grow(total); err != nil {
				return l, err
			}
			sum := sha256.Sum256(data)
			id := model.FileIDOf(hex.EncodeToString(sum[:]), mt)
			l.parts = append(l.parts, liftedPart{msg: i, part: j, url: p.URL})
			if !slices.Contains(l.ids, id) {
				l.files = append(l.files, model.InlineData{MediaType: mt, Data: data})
				l.ids = append(l.ids, id)
			}
			p.Lift(id)
		}
	}
	return l, nil
}

// storeFiles stores the lifted files, as the caller's uploads, before the
// append that names them.
func (l *inlineLift) storeFiles(r *http.Request, s *Server) error {
	if l == nil {
		return nil
	}
	defer l.release()
	for i, f := range l.files {
		stored, _, err := s.store.CreateFile(r.Context(), tenantOf(r), principalOf(r).UserID, f.MediaType, f.Data)
		if err != nil {
			return err
		}
		if stored.ID != l.ids[i] {
			return model.Internal(errLiftedID)
		}
		l.files[i].Data = nil // let the bytes go before the append
	}
	return nil
}

// release gives back what the lifted bytes held of the body memory; the
// bytes are not stored after it.
func (l *inlineLift) release() {
	if l != nil && l.hold != nil {
		l.hold.release()
		l.files = nil
	}
}

var errLiftedID = &model.Error{Kind: model.KindInternal, Code: "internal", Msg: "a lifted file was stored under another id"}

// restore gives the answer's messages their parts as the request sent them:
// msgs[i] answers the request's message i. A replay answers the same parts
// (its hash is the request's), so it is restored the same way.
func (l *inlineLift) restore(msgs []model.Message) {
	if l == nil {
		return
	}
	cloned := map[int]bool{}
	for _, lp := range l.parts {
		if lp.msg >= len(msgs) || lp.part >= len(msgs[lp.msg].Content.Parts) {
			continue
		}
		m := &msgs[lp.msg]
		if !cloned[lp.msg] { // the stored row's parts may be shared: change a copy
			m.Content.Parts = slices.Clone(m.Content.Parts)
			cloned[lp.msg] = true
		}
		p := &m.Content.Parts[lp.part]
		p.URL, p.FileID = lp.url, ""
	}
}

// inflate gives the messages' lifted parts their data: URLs whole, reading
// their files. It stops before the message that would take what it holds past
// budget (0: no bound), the first message always included, and says how many
// it inflated.
func (s *Server) inflate(ctx context.Context, tenant string, msgs []model.Message, budget int64) (int, error) {
	var held int64
	var buf bytes.Buffer
	for i := range msgs {
		m := &msgs[i]
		if m.Content.Parts == nil || !model.HasDataURL(m.Content.Parts) {
			continue
		}
		cloned := false
		for j := range m.Content.Parts {
			if !m.Content.Parts[j].Lifted() {
				continue
			}
			if !cloned { // rows may be shared with a cache: change a copy
				m.Content.Parts = slices.Clone(m.Content.Parts)
				cloned = true
			}
			p := &m.Content.Parts[j]
			buf.Reset()
			// The message is readable, so its files are: read as the tenant.
			err := s.store.WriteFile(ctx, tenant, "", p.FileID, func(f model.File) error {
				held += p.InflatedLen(f.Size)
				if budget > 0 && i > 0 && held > budget {
					return errPageFull
				}
				buf.Grow(int(f.Size))
				return nil
			}, &buf)
			if err == errPageFull {
				return i, nil
			}
			if err != nil {
				return i, err
			}
			p.Inflate(buf.Bytes())
		}
	}
	return len(msgs), nil
}

var errPageFull = &model.Error{Kind: model.KindInternal, Code: "internal", Msg: "page full"}

// inflatePage inflates a page of messages, ending it early (has_more, and a
// cursor after its last message) when its lifted data would pass
// s.inflatedPage (maxInflatedPage unless told otherwise).
func (s *Server) inflatePage(ctx context.Context, tenant, session string, f model.MessageFilter, page *model.Page[model.Message]) error {
	n, err := s.inflate(ctx, tenant, page.Data, s.inflatedPage)
	if err != nil || n == len(page.Data) {
		return err
	}
	page.Data = page.Data[:n]
	page.HasMore = true
	page.NextCursor = repo.EncodeCursor(repo.Cursor{Q: repo.Fingerprint("messages", session, f), N: page.Data[n-1].Seq})
	return nil
}
