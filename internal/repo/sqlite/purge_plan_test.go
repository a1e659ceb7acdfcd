package sqlite

import (
	"strings"
	"testing"
)

// A purge erases a session's rows from every table that holds them, a
// session at a time: each delete must be an index range of that session, or
// a purge of 10% of a tenant's sessions reads the tenant's rows once per
// session it erases (usage_sessions, keyed by day first, did: 185 s at 10M
// messages).
func TestPurgeDeletesReadTheSessionsRowsOnly(t *testing.T) {
	s := mustOpen(t)
	for _, table := range append([]string{"messages", "checkpoints"}, purgedTables...) {
		rows, err := s.rdb.Query(`EXPLAIN QUERY PLAN DELETE FROM `+table+` WHERE tenant_id = ? AND session_id = ?`, "t", "s")
		if err != nil {
			t.Fatal(err)
		}
		if plan := explainPlan(t, rows); !strings.Contains(plan, "tenant_id=? AND session_id=?") || strings.Contains(plan, "SCAN") {
			t.Errorf("%s: plan:\n%s", table, plan)
		}
	}
}
