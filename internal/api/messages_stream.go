package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// streamInFlight bounds how many lines of a stream are queued and not yet
// answered: enough to keep the writer's groups full, few enough that a client
// that stops reading answers stops its own stream, not the server.
// streamInFlightBytes bounds the same lines by their size, since a line may
// hold a message of several megabytes: a line larger than that goes alone.
const (
	streamInFlight      = 64
	streamInFlightBytes = 32 << 20
)

// appendStream appends the messages of an NDJSON body (Content-Type
// application/x-ndjson), one message per line, in the order of the lines, and
// answers each line as it commits, on one connection: a runtime that writes many
// messages pays for HTTP once. Each answer line is the stored message, or a
// problem naming the line; once a line fails, every later line is refused
// (stream_stopped) and the answer ends, so a stream never leaves a hole in the
// session's history, only a tail to send again. Per-message idempotency_key
// makes that resend safe; so does an Idempotency-Key header, which names each
// line that names itself no key (lineKeys).
func (s *Server) appendStream(w http.ResponseWriter, r *http.Request) {
	tenant, session := tenantOf(r), chi.URLParam(r, "id")
	header := r.Header.Get("Idempotency-Key")
	if err := model.CheckIdempotencyKey(header); err != nil {
		s.writeError(w, r, err)
		return
	}
	if declaredTooLarge(w, r, s.importMax) {
		s.writeError(w, r, model.Errorf(model.KindTooLarge, "payload_too_large", "the stream exceeds the limit of %d bytes", s.importMax))
		return
	}
	keyOf := lineKeys(header)
	// The status goes out before any line is read, so a stream to no session at
	// all gets its 404 as a status, not as a 200 whose every line fails. Later
	// failures (the session closed or purged meanwhile) come as lines.
	if _, err := s.store.GetSession(r.Context(), tenant, session); err != nil {
		s.writeError(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex() // answers go out while the body is still coming in
	body := &deadlineReader{r: http.MaxBytesReader(w, r.Body, s.importMax), rc: rc, start: time.Now(), grace: s.streamGrace}
	w.Header().Set("Content-Type", "application/x-ndjson")
	// A stream that stops at a failed line leaves the rest of its body unread,
	// and the status was sent before anyone knew: the connection cannot carry
	// another request, so every stream's answer says so up front.
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusOK)

	type answer struct {
		line int
		wait func() (model.AppendResult, error)
		err  error // a line refused before it was queued
		size int64 // of a line queued: what it holds of queued
		lift *inlineLift
	}
	answers := make(chan answer, streamInFlight)
	stream := &repo.AppendStream{}
	queued := newStreamBytes(streamInFlightBytes)
	lineLimit := s.messageLineLimit()
	go func() {
		defer close(answers)
		br := bufio.NewReaderSize(body, 64<<10)
		for line := 1; ; line++ {
			hold := &bodyHold{m: s.bodies, tenant: tenant, free: s.maxBody}
			raw, err := readStreamLine(br, lineLimit, hold)
			if len(bytes.TrimSpace(raw)) == 0 && err == nil {
				hold.release()
				line--
				continue // blank lines between messages are allowed
			}
			if err == io.EOF && len(bytes.TrimSpace(raw)) == 0 {
				hold.release()
				return
			}
			if err != nil && err != io.EOF {
				hold.release()
				answers <- answer{line: line, err: streamReadError(err, lineLimit)}
				return
			}
			size := int64(len(raw))
			var m model.NewMessage
			derr := unmarshalStrict(raw, &m)
			hold.release() // m holds copies
			if derr != nil {
				answers <- answer{line: line, err: derr}
				return
			}
			if m.IdempotencyKey == "" {
				m.IdempotencyKey = keyOf(line)
			}
			msgs := []model.NewMessage{m}
			lift, verr := s.liftInline(r, msgs, func(int) string { return "" })
			if verr == nil {
				if verr = msgs[0].Validate(); verr != nil {
					lift.release()
				}
			}
			if verr == nil {
				verr = lift.storeFiles(r, s)
			}
			if verr != nil {
				answers <- answer{line: line, err: verr}
				return
			}
			queued.acquire(size)
			wait, qerr := s.store.QueueAppend(r.Context(), tenant, session,
				model.AppendRequest{Messages: msgs, BoundUser: principalOf(r).UserID}, stream)
			if qerr != nil {
				answers <- answer{line: line, err: qerr, size: size}
				return
			}
			answers <- answer{line: line, wait: wait, size: size, lift: lift}
			if err == io.EOF {
				return
			}
		}
	}()

	out := bufio.NewWriterSize(w, 16<<10)
	var buf []byte
	failed := false
	for a := range answers {
		err := a.err
		var res model.AppendResult
		if a.wait != nil {
			res, err = a.wait()
		}
		queued.release(a.size)
		buf = buf[:0]
		switch {
		case failed:
			continue // drain: what was queued after the failure was refused
		case err != nil:
			failed = true
			buf = s.problemLine(buf, r, a.line, err)
		default:
			a.lift.restore(res.Messages)
			buf = model.AppendMessageJSON(buf, &res.Messages[0])
		}
		buf = append(buf, '\n')
		if _, werr := out.Write(buf); werr != nil {
			failed = true
			continue
		}
		if len(answers) == 0 { // answer promptly, but in as few writes as the lines allow
			_ = out.Flush()
			_ = rc.Flush()
		}
	}
	_ = out.Flush()
}

// lineKeys gives a stream's lines keys from its Idempotency-Key header: line
// n (blank lines not counted) of a stream sent under key K is the message
// with idempotency_key "stream:<hash of K>:n", so that the same stream sent
// again under the same key appends only the lines the first did not, and a
// line that differs from the first time is idempotency_conflict. Without a
// header, a line has the key it names, if any.
func lineKeys(header string) func(line int) string {
	if header == "" {
		return func(int) string { return "" }
	}
	sum := sha256.Sum256([]byte(header))
	prefix := "stream:" + hex.EncodeToString(sum[:12]) + ":"
	return func(line int) string { return prefix + strconv.Itoa(line) }
}

// readStreamLine reads one line of at most limit bytes, taking what it holds
// from hold.
func readStreamLine(br *bufio.Reader, limit int64, hold *bodyHold) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		n := int64(len(line) + len(chunk))
		if n > limit {
			return nil, errLineTooLong
		}
		if n > int64(cap(line)) {
			size := min(max(n, 2*int64(cap(line))), limit)
			if herr := hold.grow(size); herr != nil {
				return nil, herr
			}
			line = append(make([]byte, 0, size), line...)
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

var errLineTooLong = errors.New("line too long")

// streamBytes counts the bytes of a stream's lines queued and not yet
// answered. One goroutine acquires (the reader) and one releases (the
// answers, each line once, failed or not), so a wait always ends; a line
// larger than the bound goes when nothing else is queued.
type streamBytes struct {
	mu        sync.Mutex
	freed     *sync.Cond
	used, max int64
}

func newStreamBytes(max int64) *streamBytes {
	b := &streamBytes{max: max}
	b.freed = sync.NewCond(&b.mu)
	return b
}

func (b *streamBytes) acquire(n int64) {
	n = min(n, b.max)
	b.mu.Lock()
	for b.used > 0 && b.used+n > b.max {
		b.freed.Wait()
	}
	b.used += n
	b.mu.Unlock()
}

func (b *streamBytes) release(n int64) {
	n = min(n, b.max)
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.freed.Signal()
}

func streamReadError(err error, limit int64) error {
	var tooBig *http.MaxBytesError
	var me *model.Error
	switch {
	case errors.As(err, &me):
		return me
	case errors.Is(err, errLineTooLong):
		return model.Errorf(model.KindTooLarge, "payload_too_large", "a line is longer than the limit of %d bytes", limit)
	case errors.As(err, &tooBig):
		return model.Errorf(model.KindTooLarge, "payload_too_large", "the stream exceeds the limit of %d bytes", tooBig.Limit)
	}
	return model.Errorf(model.KindBadRequest, "malformed_json", "could not read the stream")
}

// problemLine is a problem+json body on one line, naming the stream's line.
func (s *Server) problemLine(buf []byte, r *http.Request, line int, err error) []byte {
	e := model.AsError(err)
	status := statusOf(e.Kind)
	if e.Kind == model.KindInternal {
		s.log.Error().Str("request_id", requestIDOf(r)).Err(err).Msg("stream line failed")
	}
	p := problemOf(r, e, status)
	p.Detail = fmt.Sprintf("line %d: %s", line, p.Detail)
	line64 := line
	p.Line = &line64
	return appendProblemJSON(buf, p)
}

// isNDJSON reports a body sent as application/x-ndjson.
func isNDJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/x-ndjson"
}
