package client

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestSSEReader(t *testing.T) {
	stream := "retry: 250\r\n: live\r\n\r\n" +
		"id: 7\nevent: message.appended\ndata: {\"a\":\ndata:  [1,\ndata: 2]}\n\n" + // data lines join with \n; one leading space goes
		": heartbeat\n\n" +
		"id: 8\r\n\r\n" + // an id alone moves the last id, delivers nothing
		"data:{\"b\":1}\revent:session.updated\r\r" + // lone CRs; no space after the colon
		"data\n\n" + // a field without a colon is an empty value
		"id: 10\nevent: message.appended\ndata: {\"cut\": true}\n" // the stream ends mid-event: dropped
	r := newSSEReader(strings.NewReader(stream), nil)
	var got []string
	for {
		ev, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ev.Data.MarshalJSON()
		got = append(got, fmt.Sprintf("%s %s %s", ev.ID, ev.Event, b))
	}
	want := []string{
		"7 message.appended {\"a\":\n [1,\n2]}",
		"8 session.updated {\"b\":1}",
		"8 message null", // empty data: the union marshals as null
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events:\n%q\nwant\n%q", got, want)
	}
	if r.lastID == nil || *r.lastID != "8" {
		t.Errorf("last id = %v, want 8 (the cut event's id must not count)", r.lastID)
	}
	if r.retry != 250*time.Millisecond {
		t.Errorf("retry = %v, want 250ms", r.retry)
	}
}
