package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/logbook/logbook/client/api"
)

// run carries the stream's messages on one request after another: a new one
// after a request ends (its age or size, see StreamOptions.RequestAge), and
// after one breaks, from the oldest message not answered. It ends when the
// stream is closed and every message answered, or the stream stops.
func (w *StreamWriter) run() {
	defer func() {
		w.mu.Lock()
		w.over = true
		w.changed.Broadcast()
		w.mu.Unlock()
		close(w.done)
	}()
	policy := w.c.retry
	failures := 0 // tries in a row that answered nothing
	for {
		w.mu.Lock()
		for len(w.lines) == 0 && !w.closed && w.ctx.Err() == nil {
			w.changed.Wait()
		}
		if len(w.lines) == 0 {
			w.mu.Unlock()
			return
		}
		if err := w.ctx.Err(); err != nil {
			w.giveUp(err)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()

		t := w.try()
		switch {
		case t.final:
			return
		case t.cause == nil:
			failures = 0
			continue
		case t.progress:
			failures = 0
		}
		failures++
		if failures > policy.attempts || t.after > policy.maxWait {
			w.mu.Lock()
			w.giveUp(fmt.Errorf("logbook: no answer after %d tries: %w", failures, t.cause))
			w.mu.Unlock()
			return
		}
		timer := time.NewTimer(max(t.after, policy.backoff(failures-1)))
		select {
		case <-w.ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
	}
}

// outcome is how one request of a stream ended.
type outcome struct {
	progress bool          // it answered at least one message
	final    bool          // the stream is over (a message refused)
	cause    error         // why to try again; nil: it ended whole
	after    time.Duration // the server's Retry-After
}

// request is one HTTP request of a stream. Its fields are guarded by the
// writer's mu.
type request struct {
	w     *StreamWriter
	body  *io.PipeWriter
	start time.Time
	first int  // the number of the first message it carries
	next  int  // the number of the next message to write on it
	bytes int  // written so far
	ended bool // its body is whole: it carries no more messages
	dead  bool // given up: stop writing
}

// open says whether the request may carry more messages: every request
// carries what is waiting when it starts, and more until its age or size.
func (r *request) open() bool {
	return r.next == r.first || time.Since(r.start) < r.w.requestAge && r.bytes < requestMaxBytes
}

// try sends the messages not yet answered, and those that come, on one
// request, and reads their answers.
func (w *StreamWriter) try() outcome {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	pr, pw := io.Pipe()
	r := &request{w: w, body: pw, start: time.Now()}
	w.mu.Lock()
	r.first, r.next = w.base, w.base
	carried := w.carried // messages an earlier request carried, stored or not
	w.mu.Unlock()
	go r.pump()
	defer r.stop()

	resp, err := w.c.raw.AppendMessageWithBody(ctx, w.session, nil, "application/x-ndjson", pr)
	if err != nil {
		return outcome{cause: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		p := problemFrom(resp, body)
		if retryable(p) {
			return outcome{cause: p, after: p.RetryAfter}
		}
		w.mu.Lock()
		// The request was refused whole, but an earlier one that broke may
		// have stored some of what it carried.
		for len(w.lines) > 0 && w.lines[0].n <= carried {
			l := w.lines[0]
			w.answered(LineResult{Line: l.n, Key: l.key, Err: &LineError{Line: l.n, Key: l.key,
				Err: fmt.Errorf("logbook: no answer, and the request that sent it again was refused: %w", p)}})
		}
		if len(w.lines) > 0 {
			w.stopAt(p)
		}
		w.mu.Unlock()
		return outcome{final: true}
	}
	requestID := resp.Header.Get("X-Request-Id")
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	progress := false
	for {
		raw, err := readAnswerLine(br)
		if err != nil { // a line without its line break is an answer cut short
			w.mu.Lock()
			whole := r.ended && w.base == r.next
			w.mu.Unlock()
			if err == io.EOF && whole {
				return outcome{progress: progress}
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the answer ended before the messages did
			}
			return outcome{progress: progress, cause: err}
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		o, answered := w.answer(r, raw, requestID)
		if !answered {
			o.progress = progress
			return o
		}
		progress = true
	}
}

// maxAnswerLine bounds one answer line, a stored message (at most 8 MiB as
// the server writes it), so that a server gone wrong cannot make the client
// hold without bound.
const maxAnswerLine = 64 << 20

var errAnswerTooLong = errors.New("logbook: a stream answer line is longer than 64 MiB")

func readAnswerLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxAnswerLine {
			return nil, errAnswerTooLong
		}
		line = append(line, chunk...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// answer matches an answer line to the oldest message not answered: a stored
// message, or a problem that stops the stream (or, when the server could not
// serve it, is tried again).
func (w *StreamWriter) answer(r *request, raw []byte, requestID string) (outcome, bool) {
	var a struct {
		api.Message
		Status int           `json:"status"`
		Code   api.ErrorCode `json:"code"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return outcome{cause: fmt.Errorf("logbook: stream answer: %w", err)}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lines) == 0 || w.base >= r.next {
		return outcome{cause: errors.New("logbook: the stream answered a message it was not sent")}, false
	}
	l := w.lines[0]
	if a.Status == 0 && a.Code == "" {
		m := a.Message
		w.answered(LineResult{Line: l.n, Key: l.key, Message: &m})
		return outcome{}, true
	}
	p := &Problem{RequestID: requestID}
	if err := json.Unmarshal(raw, &p.Problem); err != nil {
		return outcome{cause: fmt.Errorf("logbook: stream answer: %w", err)}, false
	}
	if retryable(p) {
		return outcome{cause: p}, false
	}
	renumber(p, l.n-r.first+1, l.n)
	w.stopAt(p)
	return outcome{final: true}, false
}

// retryable says whether a problem, for a whole request or one line of it,
// means the server stored nothing that a later try would not: it was busy
// (503, 429), another request with the same key was being served, or it could
// not read the stream (malformed_json: the lines are JSON this client made,
// so that is the server's read of the body failing, a stream cut for being
// too slow or a connection cut midway).
func retryable(p *Problem) bool {
	switch {
	case p.Status == http.StatusServiceUnavailable, p.Status == http.StatusTooManyRequests:
		return true
	case p.Code == api.ErrorCodeIdempotencyInProgress, p.Code == api.ErrorCodeMalformedJSON:
		return true
	}
	return false
}

// renumber makes a line's problem name the stream's line, not the request's
// (a retried request starts again at 1).
func renumber(p *Problem, requestLine, streamLine int) {
	if p.Line != nil {
		requestLine = *p.Line
	}
	p.Line = Ptr(streamLine)
	if was := fmt.Sprintf("line %d: ", requestLine); strings.HasPrefix(p.Detail, was) {
		p.Detail = fmt.Sprintf("line %d: ", streamLine) + p.Detail[len(was):]
	}
}

// pump writes the request's body: the messages not yet written on it, as
// they come, until the stream is closed, the request is past its age or size,
// or it is given up.
func (r *request) pump() {
	w := r.w
	timer := time.AfterFunc(w.requestAge, w.wake) // to notice the age while waiting
	defer timer.Stop()
	var buf []byte
	for {
		w.mu.Lock()
		for !r.dead && r.open() && !w.closed && w.ctx.Err() == nil && r.next-w.base >= len(w.lines) {
			w.changed.Wait()
		}
		if r.dead {
			w.mu.Unlock()
			return
		}
		buf = buf[:0]
		if r.open() {
			// Everything waiting goes in one write (one chunk on the wire),
			// up to a bound that keeps the answers flowing meanwhile.
			for i := r.next - w.base; i < len(w.lines) && len(buf) < 256<<10; i++ {
				buf = append(buf, w.lines[i].raw...)
				r.next++
			}
			w.carried = max(w.carried, r.next-1)
		}
		r.bytes += len(buf)
		r.ended = len(buf) == 0
		w.mu.Unlock()
		if r.ended {
			_ = r.body.Close()
			return
		}
		if _, err := r.body.Write(buf); err != nil {
			return // the request is over; try reports why
		}
	}
}

// stop ends the request's body, if it is not whole yet, with an error: the
// transport then drops the connection instead of ending the body cleanly.
func (r *request) stop() {
	r.w.mu.Lock()
	r.dead = true
	r.w.changed.Broadcast()
	r.w.mu.Unlock()
	_ = r.body.CloseWithError(errRequestOver)
}

var errRequestOver = errors.New("logbook: stream request over")
