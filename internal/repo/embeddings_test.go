package repo

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// TestWalkEmbeddingClaimIsRoundRobin: a claim serves the tenants after the
// last one served first, wraps around once, skips those it is told to, and
// takes no more of a tenant than PerTenant, however long its backlog.
func TestWalkEmbeddingClaimIsRoundRobin(t *testing.T) {
	// pending: each tenant's due texts (0: pending, none due now).
	pending := map[string]int{"a": 1000, "b": 1, "c": 0, "d": 5, "e": 2}
	names := make([]string, 0, len(pending))
	for n := range pending {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, tc := range []struct {
		name string
		c    EmbeddingClaim
		want string // tenant of each job, in order
	}{
		{"from_the_start", EmbeddingClaim{Tenants: 2, PerTenant: 3}, "aaab"},
		{"after_a", EmbeddingClaim{After: "a", Tenants: 2, PerTenant: 3}, "bddd"},
		{"wraps_around", EmbeddingClaim{After: "d", Tenants: 3, PerTenant: 2}, "eeaab"},
		{"wraps_up_to_after_itself", EmbeddingClaim{After: "d", Tenants: 10, PerTenant: 1}, "eabd"},
		{"skips", EmbeddingClaim{Tenants: 2, PerTenant: 3, Skip: map[string]bool{"a": true, "b": true}}, "dddee"},
		{"all_skipped", EmbeddingClaim{Tenants: 2, PerTenant: 3, Skip: map[string]bool{"a": true, "b": true, "d": true, "e": true}}, ""},
		{"after_one_gone", EmbeddingClaim{After: "bb", Tenants: 4, PerTenant: 1}, "deab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := func(after string) (string, error) {
				i, _ := slices.BinarySearch(names, after)
				for ; i < len(names); i++ {
					if names[i] > after {
						return names[i], nil
					}
				}
				return "", nil
			}
			take := func(tenant string, n int) ([]model.EmbeddingJob, error) {
				jobs := make([]model.EmbeddingJob, min(n, pending[tenant]))
				for i := range jobs {
					jobs[i].Tenant = tenant
				}
				return jobs, nil
			}
			jobs, err := WalkEmbeddingClaim(tc.c, next, take)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for _, j := range jobs {
				got.WriteString(j.Tenant)
			}
			if got.String() != tc.want {
				t.Errorf("claimed %q, want %q", got.String(), tc.want)
			}
		})
	}
}
