package sqlite

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// The integrity check must not report corruption that is not there. It used to,
// in most rounds of this test: a pooled read connection kept FTS5's cached
// picture of the conversation index from an earlier read, PRAGMA
// integrity_check does not refresh it, and after the writer had merged index
// segments the check read a segment that no longer existed.
func TestIntegrityCheckWhileIndexing(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	purgeSession(t, s, "a")
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 3; round++ {
		words := make([]string, 20)
		for i := range words {
			var b strings.Builder
			for j := 0; j < 2000; j++ {
				fmt.Fprintf(&b, "w%d ", rng.Intn(100000))
			}
			words[i] = b.String()
		}
		purgeAppend(t, s, "a", words...)
		for k := 0; k < 8; k++ {
			time.Sleep(20 * time.Millisecond)
			rep, err := s.CheckIntegrity(ctx, "t", false)
			if err != nil {
				t.Fatal(err)
			}
			if rep.IntegrityCheck != "ok" {
				t.Fatalf("round %d check %d: integrity_check says %q", round, k, rep.IntegrityCheck)
			}
		}
	}
	if _, err := s.SearchMessages(ctx, "t", model.MessageSearch{Query: "w1", Limit: 1}); err != nil {
		t.Fatal(err)
	}
}
