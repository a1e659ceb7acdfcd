package repo

import "testing"

func TestSnippet(t *testing.T) {
	long := "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty zebra twentytwo"
	for _, tc := range []struct{ text, query, want string }{
		{"My flight to Oslo leaves Friday.", "oslo", "My flight to [Oslo] leaves Friday."},
		{"Running late, the runner runs.", "run", "[Running] late, the runner [runs]."},
		{"Peanuts and a peanut.", "peanut", "[Peanuts] and a [peanut]."},
		{long, "zebra", "…seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty [zebra] twentytwo"},
		{long, "nothing", "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen…"},
		{"", "x", ""},
		{"¡¿", "x", ""},
	} {
		if got := Snippet(tc.text, tc.query); got != tc.want {
			t.Errorf("Snippet(%q, %q)\n got %q\nwant %q", tc.text, tc.query, got, tc.want)
		}
	}
}
