package model

import (
	"slices"
	"testing"
)

// The texts LangGraph's getTextAtPath picks from the same value (checked
// against @langchain/langgraph-checkpoint 1.x by hand).
func TestItemTexts(t *testing.T) {
	value := Object(`{"text":"hello","n":1.5,"ok":true,"none":null,"tags":["a","b",{"c":1}],"meta":{"title":"T","sub":{"x":"y"}},"e":""}`)
	cases := []struct {
		path string
		want []ItemText
	}{
		{"text", []ItemText{{"text", "hello"}}},
		{"n", []ItemText{{"n", "1.5"}}},
		{"ok", []ItemText{{"ok", "true"}}},
		{"none", nil},
		{"missing", nil},
		{"e", nil},
		{"meta.title", []ItemText{{"meta.title", "T"}}},
		{"meta.sub", []ItemText{{"meta.sub", "{\n  \"x\": \"y\"\n}"}}},
		{"tags[0]", []ItemText{{"tags[0]", "a"}}},
		{"tags[-1]", []ItemText{{"tags[-1]", "{\n  \"c\": 1\n}"}}},
		{"tags[*]", []ItemText{{"tags[*].0", "a"}, {"tags[*].1", "b"}, {"tags[*].2", "{\n  \"c\": 1\n}"}}},
		{"tags[9]", nil},
		{"{text,meta.title}", []ItemText{{"{text,meta.title}.0", "hello"}, {"{text,meta.title}.1", "T"}}},
		{"meta.*", []ItemText{{"meta.*.0", "T"}, {"meta.*.1", "{\n  \"x\": \"y\"\n}"}}},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			got, err := ItemTexts(value, []string{tc.path})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	whole, _ := ItemTexts(Object(`{"b":1,"a":[1,2],"c":{}}`), []string{"$"})
	if want := "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    2\n  ],\n  \"c\": {}\n}"; len(whole) != 1 || whole[0].Text != want {
		t.Fatalf("$ = %q, want %q (JSON.stringify(v, null, 2), keys in order)", whole, want)
	}
}

func TestItemTextsBound(t *testing.T) {
	b := []byte(`{"xs":["a"`)
	for i := 0; i < MaxItemTexts; i++ {
		b = append(b, `,"a"`...)
	}
	b = append(b, `]}`...)
	if _, err := ItemTexts(Object(b), []string{"xs[*]"}); err == nil {
		t.Fatalf("%d texts accepted", MaxItemTexts+1)
	}
}

func TestNamespaceQueryMatches(t *testing.T) {
	ns := []string{"a", "b", "c"}
	cases := []struct {
		q    NamespaceQuery
		want bool
	}{
		{NamespaceQuery{}, true},
		{NamespaceQuery{Prefix: []string{"a", "*"}}, true},
		{NamespaceQuery{Prefix: []string{"b"}}, false},
		{NamespaceQuery{Suffix: []string{"*", "c"}}, true},
		{NamespaceQuery{Suffix: []string{"b"}}, false},
		{NamespaceQuery{Prefix: []string{"a", "b", "c", "d"}}, false},
	}
	for _, tc := range cases {
		if got := tc.q.Matches(ns); got != tc.want {
			t.Errorf("%+v matches %v = %v, want %v", tc.q, ns, got, tc.want)
		}
	}
}
