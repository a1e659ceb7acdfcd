package model

import "testing"

// LangGraph's WRITES_IDX_MAP: the special channels' indexes, and which
// writes replace.
func TestWriteIndex(t *testing.T) {
	for _, tc := range []struct {
		channel string
		pos     int
		want    int64
	}{
		{"messages", 0, 0}, {"messages", 3, 3},
		{"__error__", 5, -1}, {"__scheduled__", 0, -2}, {"__interrupt__", 1, -3}, {"__resume__", 2, -4},
		{"__pregel_tasks", 4, 4}, // sends are ordinary writes
	} {
		if got := WriteIndex(tc.channel, tc.pos); got != tc.want {
			t.Errorf("WriteIndex(%q, %d) = %d, want %d", tc.channel, tc.pos, got, tc.want)
		}
		if got := WriteReplaces(tc.want); got != (tc.want < 0) {
			t.Errorf("WriteReplaces(%d) = %v", tc.want, got)
		}
	}
}

func TestCheckpointRetention(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for name, tc := range map[string]struct {
		r     CheckpointRetention
		field string // "" when valid
	}{
		"all":                    {CheckpointRetention{Keep: KeepAll}, ""},
		"last":                   {CheckpointRetention{Keep: KeepLast, Last: n(5)}, ""},
		"younger_than":           {CheckpointRetention{Keep: KeepYoungerThan, MaxAgeSeconds: n(60)}, ""},
		"last_without_n":         {CheckpointRetention{Keep: KeepLast}, "last"},
		"younger_without_age":    {CheckpointRetention{Keep: KeepYoungerThan}, "max_age_seconds"},
		"all_with_n":             {CheckpointRetention{Keep: KeepAll, Last: n(3)}, "last"},
		"last_with_age":          {CheckpointRetention{Keep: KeepLast, Last: n(3), MaxAgeSeconds: n(3)}, "max_age_seconds"},
		"unknown_keep":           {CheckpointRetention{Keep: "some"}, "keep"},
		"last_zero_out_of_range": {CheckpointRetention{Keep: KeepLast, Last: n(0)}, "last"},
	} {
		err := Check(&tc.r)
		switch e := AsError(err); {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.field != "" && (err == nil || len(e.Fields) == 0 || e.Fields[0].Field != tc.field):
			t.Errorf("%s: %v, want a problem with %s", name, err, tc.field)
		}
	}
	def := KeepLastN(7)
	if got := (CheckpointRetention{}).Or(def); got.Keep != KeepLast || *got.Last != 7 {
		t.Errorf("zero.Or(last 7) = %+v", got)
	}
	if got := (CheckpointRetention{}).Or(CheckpointRetention{}); got.Keep != KeepLast || *got.Last != DefaultCheckpointKeep {
		t.Errorf("zero.Or(zero) = %+v", got)
	}
	if got := (CheckpointRetention{Keep: KeepAll}).Or(def); got.Keep != KeepAll {
		t.Errorf("all.Or(last 7) = %+v", got)
	}
}
