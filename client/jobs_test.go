package client_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// preferAsync asks every request to be answered at once ("Prefer:
// respond-async"), so that the long operations answer 202 with a job as
// they do when they outlast the server's wait, and counts those 202s.
type preferAsync struct {
	next     http.RoundTripper
	accepted atomic.Int64
}

func (p *preferAsync) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Prefer", "respond-async")
	resp, err := p.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusAccepted {
		p.accepted.Add(1)
	}
	return resp, err
}

// asyncClient is a client of base whose long operations always go the
// job's way, every answer checked against openapi.yaml.
func asyncClient(t *testing.T, base string) (*client.Client, *preferAsync) {
	t.Helper()
	pa := &preferAsync{next: &checker{t: t, next: http.DefaultTransport}}
	c, _ := newClient(t, base, client.WithHTTPClient(&http.Client{Transport: pa}))
	return c, pa
}

// On a server of its own (its backups in its own directory), on both
// backends; PostgreSQL makes no backups over HTTP.
func TestJobsAnswerAsTheRoutesDo(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { jobsAnswerAsTheRoutesDo(t, filepath.Join(t.TempDir(), "jobs.db"), true) })
	t.Run("postgres", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts PostgreSQL and a second server")
		}
		jobsAnswerAsTheRoutesDo(t, startPostgres(t), false)
	})
}

func jobsAnswerAsTheRoutesDo(t *testing.T, db string, backups bool) {
	ctx := context.Background()
	stop, url, err := startServer(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	atOnce, _ := newClient(t, url)
	async, pa := asyncClient(t, url)
	newSession(t, atOnce)

	tests := []struct {
		name string
		run  func(c *client.Client, i int) (any, error)
		same func(a, b any) bool
	}{
		{"purge", func(c *client.Client, _ int) (any, error) {
			return c.PurgeSessions(ctx, api.PurgeRequest{DryRun: client.Ptr(true), Status: client.Ptr(api.SessionStatusCreated), OlderThan: client.Ptr(time.Now().Add(time.Hour))})
		}, func(a, b any) bool { x := a.(*api.PurgeResult); return *x == *b.(*api.PurgeResult) && x.Sessions == 1 }},
		{"integrity", func(c *client.Client, _ int) (any, error) {
			return c.CheckIntegrity(ctx, nil)
		}, func(a, b any) bool {
			x, y := a.(*api.IntegrityReport), b.(*api.IntegrityReport)
			return x.Ok && y.Ok && x.IntegrityCheck == y.IntegrityCheck && len(x.CounterDrift) == len(y.CounterDrift)
		}},
		{"backup", func(c *client.Client, i int) (any, error) {
			return c.BackupDatabase(ctx, api.BackupRequest{Name: client.Ptr([]string{"sync.db", "async.db"}[i])})
		}, func(a, b any) bool {
			x, y := a.(*api.Backup), b.(*api.Backup)
			return filepath.Dir(x.Path) == filepath.Dir(y.Path) && strings.HasSuffix(y.Path, "async.db") && y.Bytes > 0
		}},
	}
	if !backups {
		tests = tests[:2]
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := tt.run(atOnce, 0)
			if err != nil {
				t.Fatalf("answered at once: %v", err)
			}
			before := pa.accepted.Load()
			got, err := tt.run(async, 1)
			if err != nil {
				t.Fatalf("as a job: %v", err)
			}
			if pa.accepted.Load() != before+1 {
				t.Fatalf("the server answered %d 202s, want 1", pa.accepted.Load()-before)
			}
			if !tt.same(want, got) {
				t.Errorf("as a job %+v, at once %+v", got, want)
			}
		})
	}

	if !backups {
		return
	}
	t.Run("failed", func(t *testing.T) {
		_, err := async.BackupDatabase(ctx, api.BackupRequest{Name: client.Ptr("async.db")})
		if client.Code(err) != api.ErrorCodeConflict {
			t.Fatalf("a backup over an existing file: %v, want a conflict", err)
		}
		if !strings.Contains(err.Error(), "409") {
			t.Errorf("the job's problem %q does not say its status", err)
		}
	})
}

// A caller who would rather not wait starts the job through the generated
// layer and reads it with GetJob.
func TestGetJob(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	r, err := c.API.PurgeSessionsWithResponse(ctx, &api.PurgeSessionsParams{Prefer: client.Ptr("respond-async")},
		api.PurgeRequest{DryRun: client.Ptr(true), Expired: client.Ptr(true)})
	if err == nil {
		err = client.Check(r.HTTPResponse, r.Body)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON202 == nil || r.HTTPResponse.Header.Get("Location") != "/v1/admin/jobs/"+r.JSON202.ID {
		t.Fatalf("answered %d (Location %q), want 202 with the job", r.StatusCode(), r.HTTPResponse.Header.Get("Location"))
	}
	job := r.JSON202
	for deadline := time.Now().Add(30 * time.Second); job.State == api.JobStateRunning; {
		if time.Now().After(deadline) {
			t.Fatalf("job %s still runs", job.ID)
		}
		time.Sleep(50 * time.Millisecond)
		job = must[*api.Job](t, "get job")(c.GetJob(ctx, job.ID))
	}
	if job.State != api.JobStateSucceeded || job.Kind != api.JobKindPurge || job.FinishedAt == nil || job.Error != nil {
		t.Fatalf("finished job %+v", job)
	}
	if res, err := job.Result.AsPurgeResult(); err != nil || !res.DryRun {
		t.Errorf("its result %+v (%v), want a dry run's", res, err)
	}
	if _, err := c.GetJob(ctx, "job_nonesuch"); client.Code(err) != api.ErrorCodeNotFound {
		t.Errorf("an unknown job: %v", err)
	}
}
