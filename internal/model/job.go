package model

import (
	"encoding/json"
	"time"
)

// A job is an operator's operation that may outlast an HTTP request (a purge,
// an integrity check, a backup): started by its route, run by the server
// beside requests, polled at GET /v1/admin/jobs/{id}, and kept in the
// database so that a job a restart cut short reads as interrupted.

// Kinds of Job.
const (
	JobPurge     = "purge"
	JobIntegrity = "integrity"
	JobBackup    = "backup"
)

// JobState is where a job is: running, or one of the three ends.
type JobState string

const (
	JobRunning     JobState = "running"
	JobSucceeded   JobState = "succeeded"
	JobFailed      JobState = "failed"
	JobInterrupted JobState = "interrupted" // the server stopped or restarted while it ran
)

// A running job's runner writes its progress at least every JobHeartbeat; one
// not heard of for JobStaleAfter has lost its process (on PostgreSQL, any of
// several processes may have run it), and reads as interrupted.
const (
	JobHeartbeat  = 5 * time.Second
	JobStaleAfter = 6 * JobHeartbeat
)

// JobProgress is how far a job has got: Done of Total units of its current
// Phase (Total null when unknown), e.g. sessions erased, bytes copied.
type JobProgress struct {
	Phase string `json:"phase"`
	Done  int64  `json:"done"`
	Total *int64 `json:"total"`
}

// JobError is why a job failed, as its route would have answered it.
type JobError struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// Job is GET /v1/admin/jobs/{id}'s answer. Result is what the job's route
// answers when it finishes in time (a PurgeResult, an IntegrityReport, a
// Backup), null until the job succeeds; Error is set when it failed.
type Job struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	State      JobState        `json:"state"`
	Progress   JobProgress     `json:"progress"`
	Result     json.RawMessage `json:"result"`
	Error      *JobError       `json:"error"`
	CreatedAt  Time            `json:"created_at"`
	UpdatedAt  Time            `json:"updated_at"`
	FinishedAt *Time           `json:"finished_at"`
}

// Settle reads a running job that no runner has written to for JobStaleAfter
// as interrupted, as of now.
func (j *Job) Settle(now Time) {
	if j.State == JobRunning && now.Std().Sub(j.UpdatedAt.Std()) > JobStaleAfter {
		j.Interrupted()
	}
}

// Interrupted marks the job as cut short, at its last update.
func (j *Job) Interrupted() {
	j.State = JobInterrupted
	at := j.UpdatedAt
	j.FinishedAt = &at
}
