package api_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// Each of the new writes fails whole at its fault point: a clean 503, and
// nothing of it stored (the simulation covers rewinds and compactions among
// other traffic; this is the rest, one write at a time).
func TestNewWritesFailWhole(t *testing.T) {
	for _, tc := range []struct {
		point repo.FaultPoint
		write func(c *client) *response
		check func(t *testing.T, c *client)
	}{
		{repo.PointFileWrite, func(c *client) *response {
			return c.do("POST", "/v1/files", []byte("bytes"), "Content-Type", "application/pdf")
		}, func(t *testing.T, c *client) {
			c.do("GET", "/v1/files/"+model.FileIDOf("2ca1e8f8ae4ba4b3c5ff1e4b3fd2fdc68ae4a5e8f9f0d25fb98ad6c2a4a4e94b", "application/pdf"), nil).
				wantProblem(t, http.StatusNotFound, "not_found")
		}},
		{repo.PointRepair, func(c *client) *response {
			return c.do("POST", "/v1/sessions/s/repair", map[string]any{})
		}, func(t *testing.T, c *client) {
			if s := mustGetSession(t, c, "s"); s.LastSeq != 2 {
				t.Errorf("last_seq %d after a failed repair, want 2", s.LastSeq)
			}
		}},
		{repo.PointRewind, func(c *client) *response {
			return c.do("POST", "/v1/sessions/s/rewind", map[string]any{"to_seq": 0})
		}, func(t *testing.T, c *client) {
			if s := mustGetSession(t, c, "s"); s.LastSeq != 2 {
				t.Errorf("last_seq %d after a failed rewind, want 2", s.LastSeq)
			}
		}},
		{repo.PointCompaction, func(c *client) *response {
			return c.do("POST", "/v1/sessions/s/compactions", map[string]any{"through_seq": 1, "summary": "x"})
		}, func(t *testing.T, c *client) {
			var p model.Page[model.Compaction]
			c.do("GET", "/v1/sessions/s/compactions", nil).want(t, http.StatusOK, &p)
			if len(p.Data) != 0 {
				t.Errorf("%d compactions after a failed write", len(p.Data))
			}
		}},
		{repo.PointCheckpointWrite, func(c *client) *response {
			return c.do("PATCH", "/v1/sessions/s/checkpoint", map[string]any{"iteration": 2, "state_patch": map[string]any{"x": 1}})
		}, func(t *testing.T, c *client) {
			var cp model.Checkpoint
			c.do("GET", "/v1/sessions/s/checkpoint", nil).want(t, http.StatusOK, &cp)
			if cp.Iteration != 1 {
				t.Errorf("latest iteration %d after a failed patch, want 1", cp.Iteration)
			}
		}},
	} {
		t.Run(string(tc.point), func(t *testing.T) {
			faults, err := repo.NewFaults(1, repo.FaultRule{Point: tc.point, Kind: repo.FaultError, Rate: 1, Times: 1})
			if err != nil {
				t.Fatal(err)
			}
			// The set-up goes through a server without faults on the same file,
			// so that the fault hits the write under test and nothing before it.
			path := filepath.Join(t.TempDir(), "l.db")
			setup := newClient(t, withDB(path))
			if tc.point != repo.PointFileWrite {
				mustCreateSession(t, setup, map[string]any{"id": "s"})
				mustAppend(t, setup, "s", userMsg("hi"))
				mustAppend(t, setup, "s", map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{
					{"id": "call_1", "name": "f", "arguments": "{}"}}})
				putCheckpoint(setup, "s", 1, nil, map[string]any{"x": 0}).want(t, http.StatusCreated, nil)
			}
			c := newClient(t, withDB(path), withFaults(faults))
			tc.write(c).wantProblem(t, http.StatusServiceUnavailable, "storage_unavailable")
			tc.check(t, c)
			if len(faults.Events()) == 0 {
				t.Fatalf("no fault fired at %s", tc.point)
			}
		})
	}
}
