package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/logbook/logbook/client/api"
)

// A stream sends many messages to one session on one connection (POST
// /v1/sessions/{id}/messages as application/x-ndjson, one message a line):
// the server answers each line as it commits, in order, so a turn's messages
// or a bulk load pay for HTTP once, and the client need not wait for one
// message's commit before sending the next.

// StreamOptions tunes a stream; the zero value (or nil) is the default.
type StreamOptions struct {
	// Window bounds the messages sent and not yet answered (default 256):
	// Send blocks while that many are outstanding (and, once Results is
	// being read, while that many answered ones are unread). It bounds what
	// this process holds and what a retry sends again.
	Window int
	// WindowBytes bounds the same messages by their size as JSON (default
	// 8 MiB); a message larger than it goes alone.
	WindowBytes int
	// KeyPrefix names the messages that carry no IdempotencyKey: the
	// stream's message n gets KeyPrefix+n. Default: a random prefix, which
	// makes the writer's own retries safe. Pass one derived from your load
	// or turn (e.g. "import-42:") to make a resend after your process
	// crashed safe too: the same messages sent again in the same order get
	// the same keys, and the server stores each once.
	KeyPrefix string
	// RequestAge is how long one request of the stream carries new messages
	// (default 20 s) before the writer ends it and goes on with a new one.
	// A server cuts a stream that, after --stream-grace (30 s by default),
	// arrives slower than 64 KiB/s, and its answer must end within the
	// server's write timeout (60 s): a writer fed slowly (a turn as it
	// happens) stays under both. Keep it below the Timeout of an
	// http.Client given with WithHTTPClient, which bounds each request.
	RequestAge time.Duration
}

const (
	defaultWindow      = 256
	defaultWindowBytes = 8 << 20
	defaultRequestAge  = 20 * time.Second
	// requestMaxBytes ends a request of a stream well below the server's
	// bound on one (--import-max-bytes, 256 MiB by default).
	requestMaxBytes = 32 << 20
	maxKeyPrefix    = 200 // leaves room for the number within 255
)

// LineResult is what became of one message of a stream.
type LineResult struct {
	// Line is the message's number in the stream, from 1, in the order sent.
	Line int
	// Key is its idempotency_key: its own, or the one the writer gave it.
	Key string
	// Message is the stored message (or the one stored before under Key).
	Message *api.Message
	// Err, a *LineError, says why there is no Message.
	Err error
}

// LineError is a message of a stream that was not stored, or whose fate is
// unknown. Err is a *Problem when the server refused it (its own problem,
// with Line set to the stream's line; or, for a message after the one that
// failed, stream_stopped, made by this client: the server stored none of
// them). Any other Err (the connection failed and the retries ran out, the
// context ended) leaves the message possibly stored: send it again with the
// same Key, and the server stores it once.
type LineError struct {
	Line int
	Key  string
	Err  error
}

func (e *LineError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "logbook: ")
	// A line's problem names the line in its detail too: say it once.
	msg = strings.Replace(msg, fmt.Sprintf(": line %d: ", e.Line), ": ", 1)
	return fmt.Sprintf("logbook: stream line %d: %s", e.Line, msg)
}

func (e *LineError) Unwrap() error { return e.Err }

// Refused says whether the server refused the message, so that it is
// certainly not stored (Err is a *Problem); otherwise no answer came, and it
// may be.
func (e *LineError) Refused() bool {
	_, ok := e.Err.(*Problem)
	return ok
}

// ErrStreamClosed is what Send answers after Close.
var ErrStreamClosed = errors.New("logbook: stream closed")

// StreamWriter sends messages to one session as they are produced, many in
// flight on one connection, and reports each one's result in order. Make one
// with [Client.OpenStream].
//
// Every message carries an idempotency_key (its own, or one the writer
// gives it), so when the connection breaks the writer sends the messages
// not yet answered again, on a new connection, and the server stores each
// exactly once; it retries as the client does (WithRetries), starting over
// whenever a try made progress. When the server refuses a message
// (validation_failed, session_closed, idempotency_conflict, …) the stream
// stops there: the messages after it are not stored (stream_stopped), so the
// session has no hole, and Send and Close answer that message's *LineError.
//
// Send may be called from several goroutines (the order is the order of the
// calls); Results is read from one.
type StreamWriter struct {
	c           *Client
	ctx         context.Context
	session     string
	window      int
	windowBytes int
	prefix      string
	requestAge  time.Duration
	stopWatch   func() bool

	send sync.Mutex // orders Sends; guards next
	next int        // the number of the next message sent

	mu      sync.Mutex
	changed *sync.Cond   // any change below
	lines   []*line      // sent or to send, not answered; oldest first
	base    int          // the number of lines[0] (of the next message when none)
	carried int          // the highest number written on a request so far
	held    int          // bytes of lines
	closed  bool         // Close was called
	err     *LineError   // the first message not stored; the stream is over
	keep    bool         // Results is being read: keep the results for it
	out     []LineResult // results not yet read
	over    bool         // no more results will come
	done    chan struct{}
}

// line is one message of a stream, ready to send.
type line struct {
	n   int
	key string
	raw []byte // the JSON and its line break
}

// OpenStream starts a stream of messages to a session. Nothing is sent
// until the first Send; Close ends the stream (always call it: it also ends
// the writer's goroutine). ctx bounds the whole stream: when it ends, the
// messages not yet answered are reported with its error.
//
//	w, err := c.OpenStream(ctx, sessionID, nil)
//	results := w.Results()
//	go func() { for _, m := range msgs { if w.Send(m) != nil { break } }; w.Close() }()
//	for r := range results { … r.Message.Seq, or r.Err … }
//	err = w.Close() // the first message not stored, if any
func (c *Client) OpenStream(ctx context.Context, sessionID string, opts *StreamOptions) (*StreamWriter, error) {
	var o StreamOptions
	if opts != nil {
		o = *opts
	}
	if o.Window <= 0 {
		o.Window = defaultWindow
	}
	if o.WindowBytes <= 0 {
		o.WindowBytes = defaultWindowBytes
	}
	if o.RequestAge <= 0 {
		o.RequestAge = defaultRequestAge
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = rand.Text() + "."
	} else if err := checkKeyPrefix(o.KeyPrefix); err != nil {
		return nil, err
	}
	w := &StreamWriter{c: c, ctx: ctx, session: sessionID, window: o.Window, windowBytes: o.WindowBytes,
		prefix: o.KeyPrefix, requestAge: o.RequestAge, next: 1, base: 1, done: make(chan struct{})}
	w.changed = sync.NewCond(&w.mu)
	w.stopWatch = context.AfterFunc(ctx, w.wake)
	go w.run()
	return w, nil
}

func checkKeyPrefix(p string) error {
	if len(p) > maxKeyPrefix {
		return fmt.Errorf("logbook: KeyPrefix is %d bytes long; at most %d", len(p), maxKeyPrefix)
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] > 0x7e {
			return fmt.Errorf("logbook: KeyPrefix must be printable ASCII")
		}
	}
	return nil
}

// Send queues m as the stream's next message and returns once it is on its
// way; it blocks while the window is full. After the stream stopped it
// answers the *LineError of the message that stopped it (m is not sent);
// after Close, ErrStreamClosed.
func (w *StreamWriter) Send(m api.MessageInput) error {
	w.send.Lock()
	defer w.send.Unlock()
	n := w.next
	if m.IdempotencyKey == nil || *m.IdempotencyKey == "" {
		m.IdempotencyKey = Ptr(w.prefix + strconv.Itoa(n))
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("logbook: stream line %d: %w", n, err)
	}
	l := &line{n: n, key: *m.IdempotencyKey, raw: append(raw, '\n')}

	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && !w.closed && w.ctx.Err() == nil && w.full(len(l.raw)) {
		w.changed.Wait()
	}
	switch {
	case w.err != nil:
		return w.err
	case w.closed:
		return ErrStreamClosed
	case w.ctx.Err() != nil:
		return w.ctx.Err()
	}
	w.lines = append(w.lines, l)
	w.held += len(l.raw)
	w.next++
	w.changed.Broadcast()
	return nil
}

// full says whether a message of size bytes must wait for room.
func (w *StreamWriter) full(size int) bool {
	return len(w.lines)+len(w.out) >= w.window || w.held > 0 && w.held+size > w.windowBytes
}

// Results yields each message's result in the order sent, from the first one
// answered after it is called (call it before the first Send to see them
// all), and ends once the stream is over (Close, a message that stopped it,
// or ctx). Read it from another goroutine than Send's: the results unread
// count against the window. A writer whose Results nobody reads keeps no
// results; Send and Close still report the first failure.
func (w *StreamWriter) Results() iter.Seq[LineResult] {
	w.mu.Lock()
	w.keep = true
	w.mu.Unlock()
	return func(yield func(LineResult) bool) {
		for {
			w.mu.Lock()
			for len(w.out) == 0 && !w.over {
				w.changed.Wait()
			}
			batch := w.out
			w.out = nil
			if len(batch) > 0 {
				w.changed.Broadcast() // room in the window
			}
			w.mu.Unlock()
			if len(batch) == 0 {
				return
			}
			for _, r := range batch {
				if !yield(r) {
					w.mu.Lock()
					w.keep = false // nobody reads on: stop keeping them
					w.out = nil
					w.changed.Broadcast()
					w.mu.Unlock()
					return
				}
			}
		}
	}
}

// Close ends the stream: it waits until every message sent is answered (or
// given up on) and answers the *LineError of the first one not stored, if
// any. Calling it again answers the same.
func (w *StreamWriter) Close() error {
	w.mu.Lock()
	w.closed = true
	w.changed.Broadcast()
	w.mu.Unlock()
	<-w.done
	w.stopWatch()
	if w.err != nil {
		return w.err
	}
	return nil
}

func (w *StreamWriter) wake() {
	w.mu.Lock()
	w.changed.Broadcast()
	w.mu.Unlock()
}

// answered takes the oldest message off the window with its result. Called
// with mu held.
func (w *StreamWriter) answered(r LineResult) {
	w.held -= len(w.lines[0].raw)
	w.lines[0] = nil
	w.lines = w.lines[1:]
	w.base++
	if r.Err != nil && w.err == nil {
		w.err = r.Err.(*LineError)
	}
	if w.keep {
		w.out = append(w.out, r)
	}
	w.changed.Broadcast()
}

// stopAt reports the oldest message as refused by p, and every later one as
// not stored: the server stops a stream at its first failed line. Called
// with mu held.
func (w *StreamWriter) stopAt(p *Problem) {
	failed := w.lines[0].n
	for len(w.lines) > 0 {
		l := w.lines[0]
		err := error(p)
		if l.n != failed {
			err = stoppedBy(failed)
		}
		w.answered(LineResult{Line: l.n, Key: l.key, Err: &LineError{Line: l.n, Key: l.key, Err: err}})
	}
}

// giveUp reports every message not answered with why no answer came.
// Called with mu held.
func (w *StreamWriter) giveUp(cause error) {
	for len(w.lines) > 0 {
		l := w.lines[0]
		w.answered(LineResult{Line: l.n, Key: l.key, Err: &LineError{Line: l.n, Key: l.key, Err: cause}})
	}
}

// stoppedBy is the problem of a message after the failed line failed: the
// server's stream_stopped, which the server does not send (its answer ends
// at the failed line).
func stoppedBy(failed int) *Problem {
	return &Problem{Problem: api.Problem{Type: "urn:logbook:problem:stream_stopped", Title: "Conflict", Status: 409,
		Code: api.ErrorCodeStreamStopped, Detail: fmt.Sprintf("line %d failed: this message and every later one were not appended", failed)}}
}

// AppendMany appends msgs to a session in order on one stream and answers a
// result for each, in order: the stored message, or why not. Unlike
// AppendMessages it is not all or nothing: when a message is refused, those
// before it are stored and those after it are not (stream_stopped), and the
// error is that message's *LineError. Connection failures are retried as
// OpenStream's writer retries them.
func (c *Client) AppendMany(ctx context.Context, sessionID string, msgs []api.MessageInput, opts *StreamOptions) ([]LineResult, error) {
	w, err := c.OpenStream(ctx, sessionID, opts)
	if err != nil {
		return nil, err
	}
	results := w.Results()
	sent := make(chan error, 1)
	go func() {
		var err error
		for _, m := range msgs {
			if err = w.Send(m); err != nil {
				break
			}
		}
		_ = w.Close()
		sent <- err
	}()
	out := make([]LineResult, 0, len(msgs))
	for r := range results {
		out = append(out, r)
	}
	sendErr := <-sent
	err = w.Close()
	if err == nil && sendErr != nil {
		err = sendErr
	}
	for n := len(out) + 1; n <= len(msgs); n++ { // never sent
		key := w.prefix + strconv.Itoa(n)
		if k := msgs[n-1].IdempotencyKey; k != nil && *k != "" {
			key = *k
		}
		cause := err
		if le, ok := err.(*LineError); ok && le.Line < n {
			cause = stoppedBy(le.Line)
		}
		out = append(out, LineResult{Line: n, Key: key, Err: &LineError{Line: n, Key: key, Err: cause}})
	}
	return out, err
}
