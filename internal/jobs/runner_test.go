package jobs_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/jobs"
	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/sqlite"
)

func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func describe(err error) model.JobError {
	e := model.AsError(err)
	return model.JobError{Status: 500, Code: e.Code, Detail: e.Msg}
}

// waitState polls a job until it is in want, or fails after a few seconds.
func waitState(t *testing.T, st *sqlite.Store, tenant, id string, want model.JobState) model.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := st.GetJob(context.Background(), tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, want %s", id, j.State, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A job's progress, outcome and error are kept; a tenant runs at most its
// limit at once, others are not held by it; Close ends a running job as
// interrupted; and a job the process left running reads as interrupted once
// another process opens the file.
func TestRunnerKeepsJobsAndTheirEnds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	st := openStore(t, path)
	r := jobs.New(st, describe, jobs.Limits{PerTenant: 1, Total: 3})

	ok, err := r.Start(ctx, "t", model.JobBackup, func(ctx context.Context) (any, error) {
		repo.ReportProgress(ctx, "copy", 10, 10)
		return model.PurgeResult{Sessions: 3}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res, err, done := ok.Wait(ctx, 30*time.Second); !done || err != nil || res.(model.PurgeResult).Sessions != 3 {
		t.Fatalf("wait: %v %v %v", res, err, done)
	}
	if j := waitState(t, st, "t", ok.ID, model.JobSucceeded); string(j.Result) != `{"dry_run":false,"sessions":3,"messages":0,"checkpoints":0,"passages":0,"items":0}` || j.FinishedAt == nil {
		t.Errorf("succeeded job: %+v", j)
	}

	failed, err := r.Start(ctx, "t", model.JobPurge, func(context.Context) (any, error) {
		return nil, model.Errorf(model.KindConflict, "conflict", "no")
	})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitState(t, st, "t", failed.ID, model.JobFailed); j.Error == nil || j.Error.Code != "conflict" || j.Result != nil {
		t.Errorf("failed job: %+v", j)
	}

	release := make(chan struct{})
	blocked, err := r.Start(ctx, "t", model.JobIntegrity, func(ctx context.Context) (any, error) {
		repo.ReportProgress(ctx, "integrity_check", 0, -1)
		select {
		case <-release:
			return model.IntegrityReport{OK: true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(ctx, "t", model.JobPurge, func(context.Context) (any, error) { return nil, nil }); !errors.Is(err, jobs.ErrTooMany) {
		t.Errorf("a second job of tenant t: %v, want too_many_jobs", err)
	}
	other, err := r.Start(ctx, "u", model.JobPurge, func(context.Context) (any, error) { return model.PurgeResult{}, nil })
	if err != nil {
		t.Fatalf("tenant u is held by tenant t's job: %v", err)
	}
	waitState(t, st, "u", other.ID, model.JobSucceeded)
	if j := waitState(t, st, "t", blocked.ID, model.JobRunning); j.FinishedAt != nil {
		t.Errorf("running job: %+v", j)
	}
	if _, err := st.GetJob(ctx, "u", blocked.ID); !model.IsNotFound(err, "job") {
		t.Errorf("tenant u reads tenant t's job: %v", err)
	}

	r.Close()
	if j := waitState(t, st, "t", blocked.ID, model.JobInterrupted); j.FinishedAt == nil {
		t.Errorf("interrupted job: %+v", j)
	}

	// A process that stops without a word (kill -9) leaves its job running in
	// the file; the next process reads it as interrupted.
	lost, err := st.CreateJob(ctx, "t", model.JobPurge)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, path)
	defer st.Close()
	if j := waitState(t, st, "t", lost.ID, model.JobInterrupted); j.FinishedAt == nil {
		t.Errorf("job of a gone process: %+v", j)
	}
}
