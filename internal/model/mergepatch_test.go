package model

import (
	"encoding/json"
	"testing"
)

// The examples of RFC 7396, appendix A.
func TestMergePatchRFC7396(t *testing.T) {
	cases := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tc := range cases {
		var target, patch any
		if err := json.Unmarshal([]byte(tc.target), &target); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tc.patch), &patch); err != nil {
			t.Fatal(err)
		}
		targetBefore, _ := json.Marshal(target)
		got, _ := json.Marshal(MergePatch(target, patch))
		if string(got) != tc.want {
			t.Errorf("MergePatch(%s, %s) = %s, want %s", tc.target, tc.patch, got, tc.want)
		}
		if after, _ := json.Marshal(target); string(after) != string(targetBefore) {
			t.Errorf("MergePatch modified its target: %s → %s", targetBefore, after)
		}
	}
}
