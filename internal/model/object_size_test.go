package model

import (
	"strings"
	"testing"
)

// A value's size does not depend on whether its writer escaped < > & and
// U+2028/9: Logbook escapes them on the way out, and an import of its own
// export must fit the limit the value fitted on the way in.
func TestJSONSizeIgnoresHTMLEscapes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`{"a":"<&>"}`, 11},
		{`{"a":"\u003c\u0026\u003E"}`, 11},
		{`{"a":"\u2028"}`, len(`{"a":"` + "\u2028" + `"}`)},
		{`{"a":"\\u003c"}`, len(`{"a":"\\u003c"}`)}, // an escaped backslash, then text
		{`{"a":"\"\u0041"}`, len(`{"a":"\"\u0041"}`)},
	} {
		if got := jsonSize([]byte(tc.in)); got != tc.want {
			t.Errorf("jsonSize(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
	escaped := `{"k":"` + strings.Repeat(`\u0026`, MaxObjectBytes-8) + `"}`
	var o Object
	if err := o.UnmarshalJSON([]byte(escaped)); err != nil {
		t.Errorf("%d escaped ampersands: %v", MaxObjectBytes-8, err)
	}
}
