package model

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A user's sessions sort by their stored ids as by the ids the user chose,
// and a cursor that carries a chosen id splits the stored ones where it
// splits the chosen ones: so neither a list's order nor its pages tell which
// ids were moved (UserSessionID). Checked over ids that are prefixes of one
// another, where a suffix could change the order, and over random ones.
func TestUserSessionIDsSortAsChosen(t *testing.T) {
	ids := []string{"a", "a-", "a-b", "a.", "a0", "a:", "a_", "aa", "aZ", "ab", "b"}
	const alphabet = "-.0:A_az"
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		if ValidClientID(b.String()) {
			ids = append(ids, b.String())
		}
	}
	for _, user := range []string{"ann", "bob"} {
		stored := func(id string, moved bool) string {
			if moved {
				return UserSessionID(id, user)
			}
			return id
		}
		for _, x := range ids {
			for _, y := range ids {
				for _, mx := range []bool{false, true} {
					sx := stored(x, mx)
					if got := ShownSessionID(sx, user); got != x {
						t.Fatalf("ShownSessionID(%q) = %q, want %q", sx, got, x)
					}
					// The cursor condition: stored id < chosen id of the last row.
					if x != y && (sx < y) != (x < y) {
						t.Errorf("user %s: %q < %q is %v, but %q < %q is %v", user, sx, y, sx < y, x, y, x < y)
					}
					if x == y && sx < y {
						t.Errorf("user %s: %q sorts before its own chosen id", user, sx)
					}
					for _, my := range []bool{false, true} {
						if sy := stored(y, my); x != y && (sx < sy) != (x < y) {
							t.Errorf("user %s: %q < %q is %v, but %q < %q is %v", user, sx, sy, sx < sy, x, y, x < y)
						}
					}
				}
			}
		}
	}
}

func TestValidStoredSessionID(t *testing.T) {
	ann, bob := "ann", "bob"
	for _, tc := range []struct {
		id   string
		user *string
		want bool
	}{
		{"run-1", nil, true},
		{"run-1", &ann, true},
		{UserSessionID("run-1", "ann"), &ann, true},
		{UserSessionID("run-1", "ann"), &bob, false},
		{UserSessionID("run-1", "ann"), nil, false},
		{UserSessionID("..", "ann"), &ann, false},
		{"run-1!0123456789abcdef", &ann, false},
		{"", &ann, false},
	} {
		if got := ValidStoredSessionID(tc.id, tc.user); got != tc.want {
			t.Errorf("ValidStoredSessionID(%q, %v) = %v, want %v", tc.id, tc.user, got, tc.want)
		}
	}
}
