package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"10k": 10_000, "1M": 1_000_000, "250000": 250_000} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1k", "1G"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("%q parses", bad)
		}
	}
}

// A plan holds the messages asked for, its named sessions and a tag value
// that about 1 session in 5,000 has.
func TestPlan(t *testing.T) {
	sessions, facts := plan(200_000)
	if facts.Messages != 200_000 || facts.Sessions != int64(len(sessions)) || facts.BigMessages != 20_000 {
		t.Fatalf("facts %+v", facts)
	}
	named, tagged := map[string]bool{}, 0
	for _, s := range sessions {
		named[s.id] = true
		if s.meta["tag"] == facts.RareTag {
			tagged++
		}
	}
	if !named[facts.BigSession] || !named[facts.RareSession] || !named[facts.SmallSession] || len(named) != len(sessions) {
		t.Errorf("sessions: big %v rare %v small %v, %d ids for %d sessions", named[facts.BigSession], named[facts.RareSession],
			named[facts.SmallSession], len(named), len(sessions))
	}
	if want := int(facts.Sessions)/tagValues + 1; tagged > want || tagged < want-1 {
		t.Errorf("%d sessions tagged %s, want about %d", tagged, facts.RareTag, want)
	}
}
