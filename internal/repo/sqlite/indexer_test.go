package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// textOf is n bytes of distinct words, so that FTS5 has real tokens to index.
func textOf(prefix string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s%d ", prefix, i)
	}
	return b.String()[:n]
}

// An index step is bounded by the text it indexes, not by a count of messages:
// a message of a megabyte is indexed a few KiB at a time, every part of it ends
// up searchable, and a step never takes more than its budget plus one part.
// (Steps run in the indexer's goroutine, beside the writer, never in it.)
func TestIndexStepsAreBoundedByText(t *testing.T) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "l.db"), Migrate: true, NoMessageIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	purgeSession(t, s, "big")
	huge := textOf("alpha", 1<<20-10) + " omegaword"
	purgeAppend(t, s, "big", "small one", huge, "tail message")

	st, err := s.readIndexState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	steps := 0
	for more := true; more; steps++ {
		if more, err = s.indexStep(ctx, &st, busyStep); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := s.idb.QueryRow(`SELECT COUNT(*) FROM messages_fts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if added := (n - rows) * indexPartBytes; added > indexStepBytes+indexPartBytes+2*indexPartBytes {
			t.Fatalf("step %d indexed %d parts (%d bytes), over its budget of %d", steps, n-rows, added, indexStepBytes)
		}
		rows = n
	}
	if steps < (1<<20)/indexStepBytes {
		t.Errorf("1 MiB indexed in %d steps; a step's budget is %d bytes", steps, indexStepBytes)
	}
	for _, word := range []string{"small", "alpha0", "alpha90000", "omegaword", "tail"} {
		res, err := s.SearchMessages(ctx, "t", model.MessageSearch{Query: word, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != 1 || res.IndexLag != 0 {
			t.Errorf("search %q: %d hits (index lag %d), want the one message", word, len(res.Data), res.IndexLag)
		}
	}
	// Purging removes every part (the indexer's next step applies it), and the
	// index stays consistent.
	if err := s.PurgeSession(ctx, "t", "big"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.indexStep(ctx, &st, busyStep); err != nil {
		t.Fatal(err)
	}
	var left int64
	if err := s.idb.QueryRow(`SELECT COUNT(*) FROM messages_fts WHERE tenant_id = 't'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d index rows left after purge", left)
	}
	rep, err := s.CheckIntegrity(ctx, "t", false)
	if err != nil || !rep.OK {
		t.Errorf("integrity after purge: %+v %v", rep, err)
	}
}

func TestIndexParts(t *testing.T) {
	for _, text := range []string{"", "short", textOf("w", 3*indexPartBytes+17), strings.Repeat("é", indexPartBytes),
		strings.Repeat("x", 5*indexPartBytes), textOf("w", 300*indexPartBytes)} {
		parts := indexParts(text)
		if strings.Join(parts, "") != text {
			t.Fatalf("parts of a %d-byte text do not join back into it", len(text))
		}
		if len(parts) > maxIndexParts {
			t.Fatalf("%d parts", len(parts))
		}
		for i, p := range parts[:len(parts)-1] {
			if len(p) > indexPartBytes || len(p) < indexPartBytes/2 {
				t.Fatalf("part %d of a %d-byte text is %d bytes", i, len(text), len(p))
			}
		}
	}
}
