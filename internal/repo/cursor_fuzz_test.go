package repo

import (
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// FuzzDecodeCursor feeds arbitrary text as a cursor: it must be refused cleanly
// (invalid_cursor) or decode to a position that encodes back to itself.
func FuzzDecodeCursor(f *testing.F) {
	q := Fingerprint("messages", "s1", model.MessageFilter{})
	f.Add(*EncodeCursor(Cursor{Q: q, N: 42}))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok, err := DecodeCursor(s, q)
		if err != nil {
			if model.AsError(err).Code != "invalid_cursor" {
				t.Fatalf("error %v, want invalid_cursor", err)
			}
			return
		}
		if !ok {
			if s != "" {
				t.Fatalf("%q decoded to no position", s)
			}
			return
		}
		again, ok2, err := DecodeCursor(*EncodeCursor(c), q)
		if err != nil || !ok2 || again != c {
			t.Fatalf("%q: %+v re-encodes to %+v (%v)", s, c, again, err)
		}
	})
}
