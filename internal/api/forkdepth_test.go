package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// A chain of forks, each forked from the one before and given one message of its
// own, reads its whole history at any depth: list, get by id, export, resume and
// search see every message, also after an ancestor is purged. An earlier build
// stopped walking at 64 ancestors and lost the oldest messages without a word.
func TestForkChainsReadTheirWholeHistory(t *testing.T) {
	c := newClient(t)
	deepest := 500
	if raceDetector {
		deepest = 150 // 500 is make test's plain pass's, where it takes a tenth of the time
	}
	name := func(d int) string { return fmt.Sprintf("chain-%d", d) }
	mustCreateSession(t, c, map[string]any{"id": name(0)})
	mustAppend(t, c, name(0), userMsg("hop0 at the root"))
	for d := 1; d <= deepest; d++ {
		c.do("POST", "/v1/sessions/"+name(d-1)+"/fork", map[string]any{"id": name(d)}).want(t, http.StatusCreated, nil)
		mustAppend(t, c, name(d), userMsg(fmt.Sprintf("hop%d", d)))
	}
	waitIndexed(t, c)

	depths := []int{1, 63, 64, 65, deepest}
	check := func(t *testing.T, when string) {
		for _, d := range depths {
			id := name(d)
			if s := mustGetSession(t, c, id); s.MessageCount != int64(d+1) || s.LastSeq != int64(d+1) {
				t.Fatalf("%s: %s has message_count %d, last_seq %d; want %d", when, id, s.MessageCount, s.LastSeq, d+1)
			}
			msgs := listAll[model.Message](t, c, "/v1/sessions/"+id+"/messages", 200)
			if len(msgs) != d+1 {
				t.Fatalf("%s: %s lists %d messages, want %d", when, id, len(msgs), d+1)
			}
			for i, m := range msgs {
				if m.Seq != int64(i+1) || m.SessionID != id || !bytes.HasPrefix([]byte(m.Content.Text), []byte(fmt.Sprintf("hop%d", i))) {
					t.Fatalf("%s: %s message %d is seq %d %q of %s", when, id, i, m.Seq, m.Content, m.SessionID)
				}
			}
			for _, m := range []model.Message{msgs[0], msgs[len(msgs)/2], msgs[len(msgs)-1]} {
				var got model.Message
				c.do("GET", "/v1/sessions/"+id+"/messages/"+m.ID, nil).want(t, http.StatusOK, &got)
				if got.Seq != m.Seq || got.SessionID != id {
					t.Fatalf("%s: get %s through %s: seq %d of %s", when, m.ID, id, got.Seq, got.SessionID)
				}
			}
			export := mustExport(t, c, id)
			if n := bytes.Count(export, []byte(`{"type":"message"`)); n != d+1 {
				t.Fatalf("%s: export of %s holds %d messages, want %d", when, id, n, d+1)
			}
			var res model.Resume
			c.do("GET", "/v1/sessions/"+id+"/resume", nil).want(t, http.StatusOK, &res)
			if !res.Validation.OK {
				t.Fatalf("%s: resume of %s: %+v", when, id, res.Validation.Problems)
			}
			var hits model.SearchResult[model.MessageHit]
			c.do("GET", "/v1/messages/search?q=hop0&session_id="+id, nil).want(t, http.StatusOK, &hits)
			if len(hits.Data) != 1 || hits.Data[0].Seq != 1 || hits.Data[0].SessionID != id {
				t.Fatalf("%s: search of %s for the root's message: %+v", when, id, hits.Data)
			}
		}
	}
	check(t, "before purge")

	// Purging ancestors hands their messages to the forks that read them.
	for _, d := range []int{0, 64, deepest / 2} {
		c.do("DELETE", "/v1/sessions/"+name(d)+"?purge=true", nil).want(t, http.StatusNoContent, nil)
	}
	depths = []int{1, 63, 65, deepest}
	waitIndexed(t, c)
	check(t, "after purge")
}

// waitIndexed waits for the conversation index to catch up with every message.
func waitIndexed(t *testing.T, c *client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r model.SearchResult[model.MessageHit]
		c.do("GET", "/v1/messages/search?q=anything", nil).want(t, http.StatusOK, &r)
		if r.IndexLag == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("index still %d messages behind", r.IndexLag)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
