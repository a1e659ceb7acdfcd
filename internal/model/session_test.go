package model

import "testing"

func TestCanTransition(t *testing.T) {
	want := map[Status][]Status{
		StatusCreated:   {StatusCreated, StatusActive, StatusCompleted, StatusArchived},
		StatusActive:    {StatusActive, StatusCompleted, StatusArchived},
		StatusCompleted: {StatusCompleted, StatusActive, StatusArchived},
		StatusArchived:  {StatusArchived},
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			ok := false
			for _, w := range want[from] {
				ok = ok || w == to
			}
			if got := CanTransition(from, to); got != ok {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, ok)
			}
		}
	}
	if CanTransition("bogus", "bogus") || CanTransition(StatusCreated, "bogus") {
		t.Error("an unknown status may never be entered or left")
	}
}
