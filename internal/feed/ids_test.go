package feed_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/feed"
)

func mustIDs(t testing.TB, secret []byte) *feed.IDs {
	t.Helper()
	ids, err := feed.NewIDs(secret)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

var testSecret = bytes.Repeat([]byte{7}, 32)

// An id opens, for its tenant, to the position it sealed, and to nothing
// for anyone else: another tenant, another database's secret, or a string
// that was edited, cut or made up.
func TestIDsOpenOnlyForTheirTenant(t *testing.T) {
	ids := mustIDs(t, testSecret)
	a, b := ids.For("tenant-a"), ids.For("tenant-b")
	other := mustIDs(t, bytes.Repeat([]byte{8}, 32)).For("tenant-a")
	for _, pos := range []int64{0, 1, 2, 255, 1 << 40, math.MaxInt64} {
		id := a.Seal(pos)
		if got, ok := a.Open(id); !ok || got != pos {
			t.Errorf("Open(Seal(%d)) = %d, %v", pos, got, ok)
		}
		if got := string(a.AppendSeal([]byte("x"), pos)); got != "x"+id {
			t.Errorf("AppendSeal(%d) = %q; want %q", pos, got, "x"+id)
		}
		if _, ok := b.Open(id); ok {
			t.Errorf("tenant b opened tenant a's id of %d", pos)
		}
		if _, ok := other.Open(id); ok {
			t.Errorf("another database's secret opened the id of %d", pos)
		}
		flipped := []byte(id)
		flipped[3] ^= 1
		if _, ok := a.Open(string(flipped)); ok {
			t.Errorf("an edited id of %d opened", pos)
		}
	}
	// Neighbouring positions give ids with nothing in common to count by.
	if x, y := a.Seal(10), a.Seal(11); x[:4] == y[:4] {
		t.Errorf("ids of 10 and 11 share a prefix: %s %s", x, y)
	}
	for _, bad := range []string{"", "1", "42", strings.Repeat("A", 22), strings.Repeat("A", 21), a.Seal(5) + "A",
		a.Seal(5)[:21], "!!!!!!!!!!!!!!!!!!!!!!", "AAAAAAAAAAAAAAAAAAAAA="} {
		if pos, ok := a.Open(bad); ok {
			t.Errorf("Open(%q) = %d; want refused", bad, pos)
		}
	}
}

func TestIDsNeedAWholeSecret(t *testing.T) {
	if _, err := feed.NewIDs(make([]byte, 16)); err == nil {
		t.Error("a 16-byte secret was taken")
	}
}

// Whatever a client sends, Open never panics, and what it accepts is exactly
// the text Seal makes for that position: one id per position.
func FuzzIDsOpen(f *testing.F) {
	ids := mustIDs(f, testSecret)
	a := ids.For("t")
	f.Add(a.Seal(0))
	f.Add(a.Seal(12345))
	f.Add(ids.For("u").Seal(12345))
	f.Add("")
	f.Add("12345")
	f.Add(strings.Repeat("_", 22))
	f.Add("AAAAAAAAAAAAAAAAAAAAAB")
	f.Fuzz(func(t *testing.T, id string) {
		pos, ok := a.Open(id)
		if !ok {
			return
		}
		if pos < 0 {
			t.Fatalf("Open(%q) = %d", id, pos)
		}
		if again := a.Seal(pos); again != id {
			t.Fatalf("Open(%q) = %d, which seals as %q", id, pos, again)
		}
	})
}
