package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// pollJob reads a job until it has ended, and returns it.
func pollJob(t *testing.T, c *client, location string) model.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var j model.Job
		c.do("GET", location, nil).want(t, http.StatusOK, &j)
		if j.State != model.JobRunning {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still running: %+v", j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startJob sends a job's request asking for the answer at once, and returns
// where to poll it.
func startJob(t *testing.T, c *client, method, path string, body any, kind string) string {
	t.Helper()
	var j model.Job
	res := c.do(method, path, body, "Prefer", "respond-async").want(t, http.StatusAccepted, &j)
	loc := res.Header.Get("Location")
	if j.Kind != kind || j.ID == "" || loc != "/v1/admin/jobs/"+j.ID || res.Header.Get("Preference-Applied") != "respond-async" {
		t.Fatalf("202: %+v, Location %q", j, loc)
	}
	return loc
}

// The operations an operator runs are jobs: asked to answer at once, each
// answers 202 with its job, whose result, once done, is what the route
// answers when it waits; a failed job says why as the route would have. A
// job is its tenant's alone.
func TestOperationsRunAsJobs(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	w, admin := adminClientsOf(t, c, model.DefaultTenant)
	ses := mustCreateSession(t, w, map[string]any{"id": "old"})
	mustAppend(t, w, ses.ID, userMsg("one"))
	w.do("DELETE", "/v1/sessions/old", nil).want(t, http.StatusOK, nil)
	waitSearchable(t, w)

	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	purge := startJob(t, admin, "POST", "/v1/admin/purge", map[string]any{"status": "completed", "older_than": later}, model.JobPurge)
	j := pollJob(t, admin, purge)
	var res model.PurgeResult
	if err := json.Unmarshal(j.Result, &res); err != nil || j.State != model.JobSucceeded || res.Sessions != 1 || res.Messages != 1 ||
		j.FinishedAt == nil || j.Error != nil || j.Progress.Phase != "erase" || j.Progress.Done != 1 || j.Progress.Total == nil || *j.Progress.Total != 1 {
		t.Errorf("purge job: %+v (%v)", j, err)
	}

	integrity := startJob(t, admin, "GET", "/v1/admin/integrity", nil, model.JobIntegrity)
	j = pollJob(t, admin, integrity)
	var rep model.IntegrityReport
	if err := json.Unmarshal(j.Result, &rep); err != nil || j.State != model.JobSucceeded || !rep.OK ||
		j.Progress.Done != 4 || j.Progress.Total == nil || *j.Progress.Total != 4 {
		t.Errorf("integrity job: %+v (%v)", j, err)
	}

	if !onPostgres {
		backup := startJob(t, admin, "POST", "/v1/admin/backup", map[string]any{"name": "b.db"}, model.JobBackup)
		j = pollJob(t, admin, backup)
		var b model.Backup
		if err := json.Unmarshal(j.Result, &b); err != nil || j.State != model.JobSucceeded || !strings.HasSuffix(b.Path, "b.db") ||
			j.Progress.Phase != "copy" || j.Progress.Total == nil || j.Progress.Done != *j.Progress.Total {
			t.Errorf("backup job: %+v (%v)", j, err)
		}
	}
	if !onPostgres {
		// The same name again fails, in the job, with the route's answer.
		failed := startJob(t, admin, "POST", "/v1/admin/backup", map[string]any{"name": "b.db"}, model.JobBackup)
		j = pollJob(t, admin, failed)
		if j.State != model.JobFailed || j.Error == nil || j.Error.Status != http.StatusConflict || j.Error.Code != "conflict" ||
			string(j.Result) != "null" {
			t.Errorf("failed backup job: %+v", j)
		}
	}

	_, otherAdmin := adminClients(t, c)
	otherAdmin.do("GET", purge, nil).wantProblem(t, http.StatusNotFound, "not_found")
	w.do("GET", purge, nil).wantProblem(t, http.StatusForbidden, "forbidden")
	admin.do("GET", "/v1/admin/jobs/job_nothing", nil).wantProblem(t, http.StatusNotFound, "not_found")
}

// A job that outlasts the route's wait is answered 202, and goes on.
func TestSlowJobIsAnswered202(t *testing.T) {
	c := newClient(t, withJobWait(time.Nanosecond))
	mustCreateSession(t, c, nil)
	var j model.Job
	res := c.do("GET", "/v1/admin/integrity", nil).want(t, http.StatusAccepted, &j)
	if done := pollJob(t, c, res.Header.Get("Location")); done.State != model.JobSucceeded || done.ID != j.ID {
		t.Errorf("job %+v, then %+v", j, done)
	}
}
