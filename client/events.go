package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/logbook/logbook/client/api"
)

// Events follows one session live: each event as it commits
// (message.appended, checkpoint.created, session.updated, …), decoded from
// the text/event-stream. Read an event's object with ev.Data.AsMessage(),
// AsCheckpointEvent(), … according to ev.Event.
//
// The iterator remembers the last event's id; when the connection drops (a
// proxy, the server restarting, a read timeout) it reconnects with
// Last-Event-ID and goes on after that event, so nothing is missed and
// nothing comes twice. It ends when ctx ends or the loop breaks, and after
// yielding an error: a *Problem (an unknown session is not_found), or a
// connection that could not be made again within the client's retries.
//
// Where it starts: params.AfterSeq (0: the session's first event),
// params.After or params.LastEventID (after that event); with none, now. A
// feed that starts now and drops before its first event reconnects from
// the new now: pass AfterSeq (the session's last_seq) to miss nothing.
func (c *Client) Events(ctx context.Context, sessionID string, params *api.StreamSessionEventsParams) iter.Seq2[api.Event, error] {
	p := deref(params)
	return c.follow(ctx, p.LastEventID, func(ctx context.Context, lastID *string) (*http.Response, error) {
		p.LastEventID = lastID // wins over after and after_seq on the server
		return c.raw.StreamSessionEvents(ctx, sessionID, &p)
	})
}

// TenantEvents follows the whole tenant live (params.SessionID and
// params.Type filter), as Events follows one session.
func (c *Client) TenantEvents(ctx context.Context, params *api.StreamEventsParams) iter.Seq2[api.Event, error] {
	p := deref(params)
	return c.follow(ctx, p.LastEventID, func(ctx context.Context, lastID *string) (*http.Response, error) {
		p.LastEventID = lastID
		return c.raw.StreamEvents(ctx, &p)
	})
}

// reconnectDelay is the wait before reconnecting until the server sends its
// own ("retry:" in the stream), as EventSource does.
const reconnectDelay = time.Second

func (c *Client) follow(ctx context.Context, lastID *string, connect func(context.Context, *string) (*http.Response, error)) iter.Seq2[api.Event, error] {
	return func(yield func(api.Event, error) bool) {
		delay := reconnectDelay
		for {
			resp, err := connect(ctx, lastID)
			if err == nil && resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				err = problemFrom(resp, body)
			}
			if err != nil {
				if ctx.Err() == nil {
					yield(api.Event{}, err)
				}
				return
			}
			r := newSSEReader(resp.Body, lastID)
			for {
				ev, err := r.next()
				if err != nil {
					resp.Body.Close()
					if errors.Is(err, bufio.ErrTooLong) {
						yield(api.Event{}, fmt.Errorf("logbook: live feed: %w", err))
						return
					}
					break // the connection dropped: reconnect
				}
				if !yield(ev, nil) {
					resp.Body.Close()
					return
				}
			}
			lastID = r.lastID
			if r.retry > 0 {
				delay = r.retry
			}
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// sseReader parses text/event-stream as the HTML standard says: lines end
// with LF, CRLF or CR; a blank line dispatches the event; "data" lines join
// with a line break; comments (":") are skipped; "id" sets the last event id
// (even without data); "retry" sets the reconnection delay. An event cut
// short by the end of the stream is dropped, never half-delivered.
type sseReader struct {
	sc     *bufio.Scanner
	idBuf  *string // the id field seen last, applied when an event dispatches
	lastID *string // the last event id: sent as Last-Event-ID on reconnect
	retry  time.Duration
}

// maxSSELine bounds one line of the stream: a message is at most 8 MiB of
// JSON, and comes as one data line when it holds no line break.
const maxSSELine = 16 << 20

func newSSEReader(r io.Reader, lastID *string) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc, idBuf: lastID, lastID: lastID}
}

func (r *sseReader) next() (api.Event, error) {
	var (
		data    []byte
		hasData bool
		typ     string
	)
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 { // dispatch
			r.lastID = r.idBuf
			if !hasData {
				typ = ""
				continue
			}
			return r.event(typ, bytes.TrimSuffix(data, []byte("\n")))
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			typ = string(value)
		case "data":
			data = append(append(data, value...), '\n')
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				id := string(value)
				r.idBuf = &id
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				r.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return api.Event{}, err
	}
	return api.Event{}, io.EOF
}

func (r *sseReader) event(typ string, data []byte) (api.Event, error) {
	if typ == "" {
		typ = "message"
	}
	ev := api.Event{Event: api.EventType(typ)}
	if r.lastID != nil {
		ev.ID = *r.lastID // opaque: compared for equality, sent back to resume
	}
	if err := ev.Data.UnmarshalJSON(data); err != nil { // copies: the scanner reuses its buffer
		return api.Event{}, err
	}
	return ev, nil
}

// scanSSELines splits at LF, CRLF or a lone CR, dropping the line ending.
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0:
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	default:
		return 0, nil, nil // a CR at the end: is an LF next?
	}
}
