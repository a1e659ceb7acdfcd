package api

import (
	"bytes"
	"io"

	"github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/model"
)

// sseWriter writes events in the text/event-stream format, each event's data
// straight from the event (no copy of a batch, or of a large message, is
// made to frame it).
type sseWriter struct {
	w   io.Writer
	ids feed.TenantIDs
	buf []byte // an event's id and type lines
}

// event writes one event. Data is JSON the store wrote; should it ever hold
// line breaks, each line goes in a data field of its own, which a client
// joins back with "\n".
func (s *sseWriter) event(e *model.Event) error {
	s.buf = append(s.ids.AppendSeal(append(s.buf[:0], "id: "...), e.Pos), "\nevent: "...)
	s.buf = append(append(s.buf, e.Type...), "\ndata: "...)
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	data := e.Data
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		if _, err := s.w.Write(data[:i]); err != nil {
			return err
		}
		if _, err := io.WriteString(s.w, "\ndata: "); err != nil {
			return err
		}
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	if _, err := s.w.Write(data); err != nil {
		return err
	}
	_, err := io.WriteString(s.w, "\n\n")
	return err
}

// comment writes a comment line, which clients skip (a heartbeat).
func (s *sseWriter) comment(text string) error {
	_, err := io.WriteString(s.w, ": "+text+"\n\n")
	return err
}
