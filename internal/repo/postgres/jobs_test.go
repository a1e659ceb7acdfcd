package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
)

// Any of several processes may run a job on PostgreSQL: one whose runner
// stopped writing to it reads as interrupted, and a finished one as it ended.
func TestJobsPG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	st := mustOpenURL(t, url)
	j, err := st.CreateJob(ctx, "t", model.JobPurge)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(10)
	if err := st.UpdateJob(ctx, "t", j.ID, model.JobProgress{Phase: "erase", Done: 3, Total: &total}); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetJob(ctx, "t", j.ID)
	if err != nil || got.State != model.JobRunning || got.Progress.Done != 3 || *got.Progress.Total != 10 {
		t.Fatalf("running job: %+v, %v", got, err)
	}
	if _, err := st.GetJob(ctx, "u", j.ID); !model.IsNotFound(err, "job") {
		t.Errorf("another tenant's job: %v", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE jobs SET updated_at = updated_at - $1`, model.JobStaleAfter.Milliseconds()+1000); err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetJob(ctx, "t", j.ID); err != nil || got.State != model.JobInterrupted || got.FinishedAt == nil {
		t.Errorf("a job nobody writes to: %+v, %v", got, err)
	}

	done, err := st.CreateJob(ctx, "t", model.JobBackup)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.FinishJob(ctx, "t", done.ID, model.JobFailed, nil, &model.JobError{Status: 409, Code: "conflict", Detail: "x"}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetJob(ctx, "t", done.ID); err != nil || got.State != model.JobFailed || got.Error == nil || got.Error.Code != "conflict" || got.Result != nil {
		t.Errorf("failed job: %+v, %v", got, err)
	}
}
