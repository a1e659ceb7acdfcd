package api

import (
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// Data that holds line breaks goes out as one data field per line, which an
// EventSource joins back with "\n"; a CR LF or a lone CR is a line break too.
func TestAppendSSESplitsDataLines(t *testing.T) {
	for _, tc := range []struct {
		data, want string
	}{
		{`{"a":1}`, "id: 7\nevent: session.updated\ndata: {\"a\":1}\n\n"},
		{"{\n \"a\": 1\n}", "id: 7\nevent: session.updated\ndata: {\ndata:  \"a\": 1\ndata: }\n\n"},
		{"{\r\n\"a\":1\r}", "id: 7\nevent: session.updated\ndata: {\ndata: \"a\":1\ndata: }\n\n"},
		{"", "id: 7\nevent: session.updated\ndata: \n\n"},
	} {
		got := string(appendSSE(nil, &model.Event{Pos: 7, Type: model.EventSessionUpdated, Data: []byte(tc.data)}))
		if got != tc.want {
			t.Errorf("appendSSE(%q) = %q; want %q", tc.data, got, tc.want)
		}
	}
}
