package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Each session list is one range of an index, whatever the tenant holds: a
// metadata filter reads session_meta's rows of its key and value, and a deep
// page with a created range is bounded by its cursor. The plans are checked,
// not timed: SQLite answers a small file the same way whatever its plan.
func TestSessionListsReadAnIndexRange(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	for i := range 30 {
		meta := model.Object(fmt.Sprintf(`{"customer":"c%d","tier":"gold","n":%d}`, i%3, i))
		if _, err := s.CreateSession(ctx, "t", model.CreateSession{Metadata: meta}); err != nil {
			t.Fatal(err)
		}
	}
	at := func(ms int64) *model.Time { v := model.Time(ms); return &v }
	cur := repo.Cursor{N: 1 << 50, S: "ses_x"}
	for _, tc := range []struct {
		name   string
		f      model.SessionFilter
		cursor bool
		want   []string // each must be in the plan
	}{
		{"metadata", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "customer", Value: "c1"}}}, false,
			[]string{"SEARCH k USING PRIMARY KEY (tenant_id=? AND key=? AND value=?)", "SEARCH s USING PRIMARY KEY (tenant_id=? AND id=?)"}},
		{"metadata, deep page", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "customer", Value: "c1"}, {Key: "tier", Value: "gold"}}}, true,
			[]string{"SEARCH k USING PRIMARY KEY (tenant_id=? AND key=? AND value=? AND (created_at,session_id)<(?,?))"}},
		{"metadata and a created range, deep page", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: "tier", Value: "gold"}},
			CreatedAfter: at(1), CreatedBefore: at(1 << 52)}, true,
			[]string{"SEARCH k USING PRIMARY KEY (tenant_id=? AND key=? AND value=? AND created_at>? AND (created_at,session_id)<(?,?))"}},
		{"created range, deep page", model.SessionFilter{CreatedAfter: at(1), CreatedBefore: at(1 << 52)}, true,
			[]string{"SEARCH s USING INDEX sessions_by_created (tenant_id=? AND created_at>? AND (created_at,id)<(?,?))"}},
		{"status, deep page", model.SessionFilter{Status: model.StatusCreated}, true,
			[]string{"SEARCH s USING INDEX sessions_by_status (tenant_id=? AND status=? AND (created_at,id)<(?,?))"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			query, args := listSessionsSQL("t", tc.f, nil, cur, tc.cursor, 10)
			rows, err := s.rdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
			if err != nil {
				t.Fatal(err)
			}
			plan := explainPlan(t, rows)
			for _, w := range tc.want {
				if !strings.Contains(plan, w) {
					t.Errorf("plan lacks %q:\n%s", w, plan)
				}
			}
			if strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("plan sorts:\n%s", plan)
			}
		})
	}
}

// The metadata index follows every write of a session's metadata: a list by
// a value finds exactly the sessions that have it now, and a key or value too
// long for the index is still found, by reading the sessions.
func TestSessionMetadataIndexFollowsWrites(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	long := strings.Repeat("v", repo.MaxIndexedMetadata+1)
	a, err := s.CreateSession(ctx, "t", model.CreateSession{Metadata: model.Object(`{"k":"one","n":1.5,"b":true,"long":"` + long + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateSession(ctx, "t", model.CreateSession{Metadata: model.Object(`{"k":"one"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, "u", model.CreateSession{Metadata: model.Object(`{"k":"one"}`)}); err != nil {
		t.Fatal(err)
	}
	list := func(key, value string) []string {
		t.Helper()
		page, err := s.ListSessions(ctx, "t", model.SessionFilter{Metadata: []model.MetadataMatch{{Key: key, Value: value}}}, repo.PageRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ses := range page.Data {
			ids = append(ids, ses.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		key, value string
		want       []string
	}{
		{"k", "one", []string{b.ID, a.ID}}, {"n", "1.5", []string{a.ID}}, {"b", "true", []string{a.ID}}, {"long", long, []string{a.ID}},
	} {
		if got := list(tc.key, tc.value); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s=%.10s: %v, want %v", tc.key, tc.value, got, tc.want)
		}
	}
	if _, err := s.UpdateSession(ctx, "t", a.ID, model.UpdateSession{Metadata: model.Optional[model.Object]{Set: true, Value: model.Object(`{"k":"two"}`)}}); err != nil {
		t.Fatal(err)
	}
	if got := list("k", "one"); fmt.Sprint(got) != fmt.Sprint([]string{b.ID}) {
		t.Errorf("after the update k=one lists %v", got)
	}
	if got := list("k", "two"); fmt.Sprint(got) != fmt.Sprint([]string{a.ID}) {
		t.Errorf("after the update k=two lists %v", got)
	}
	if err := s.PurgeSession(ctx, "t", a.ID); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.rdb.QueryRow(`SELECT COUNT(*) FROM session_meta WHERE tenant_id = 't' AND session_id = ?`, a.ID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d index rows left of a purged session", left)
	}
}
