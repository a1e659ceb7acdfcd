package api

import (
	"bytes"
	"testing"

	"github.com/logbook/logbook/internal/feed"
	"github.com/logbook/logbook/internal/model"
)

// Data that holds line breaks goes out as one data field per line, which an
// EventSource joins back with "\n"; a CR LF or a lone CR is a line break too.
// The id is the position sealed for the tenant.
func TestSSEWriterSplitsDataLines(t *testing.T) {
	ids, err := feed.NewIDs(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	tenant := ids.For("t")
	id := "id: " + tenant.Seal(7) + "\n"
	for _, tc := range []struct {
		data, want string
	}{
		{`{"a":1}`, id + "event: session.updated\ndata: {\"a\":1}\n\n"},
		{"{\n \"a\": 1\n}", id + "event: session.updated\ndata: {\ndata:  \"a\": 1\ndata: }\n\n"},
		{"{\r\n\"a\":1\r}", id + "event: session.updated\ndata: {\ndata: \"a\":1\ndata: }\n\n"},
		{"", id + "event: session.updated\ndata: \n\n"},
	} {
		var out bytes.Buffer
		w := sseWriter{w: &out, ids: tenant}
		if err := w.event(&model.Event{Pos: 7, Type: model.EventSessionUpdated, Data: []byte(tc.data)}); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != tc.want {
			t.Errorf("event(%q) = %q; want %q", tc.data, got, tc.want)
		}
	}
}
