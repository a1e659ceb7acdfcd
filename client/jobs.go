package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/logbook/logbook/client/api"
)

// A purge, an integrity check or a backup runs on the server as a job: the
// route answers as usual when the job ends within about 20 seconds, and 202
// with the job otherwise. The methods wait the job out, so that a caller
// sees the usual answer (or the usual *Problem) whichever the server gave.

// ErrJobInterrupted is what a job the server stopped or restarted under
// fails with (errors.Is). Nothing says how far it got: start it again.
var ErrJobInterrupted = errors.New("logbook: job interrupted")

// jobPollMax is the longest wait between two reads of a running job: jobs
// are minutes long and read cheaply, and a caller is told soon after one ends.
const jobPollMax = time.Second

// GetJob reads a job (a purge, an integrity check or a backup that outlasted
// its route's wait): its State, its Progress, then its Result or Error.
func (c *Client) GetJob(ctx context.Context, id string) (*api.Job, error) {
	return decode[api.Job](c.raw.GetJob(ctx, id))
}

// awaitJob reads the answer of a route that may answer 202 with a job: a
// T as usual, or, after polling the job until it ends, the T of its result.
func awaitJob[T any](ctx context.Context, c *Client, resp *http.Response, err error) (*T, error) {
	if err != nil || resp.StatusCode != http.StatusAccepted {
		return decode[T](resp, err)
	}
	job, err := decode[api.Job](resp, nil)
	if err != nil {
		return nil, err
	}
	wait := jobPollMax / 4 // a job asked for with respond-async may end at once
	for job.State == api.JobStateRunning {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("logbook: waiting for job %s: %w", job.ID, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, jobPollMax)
		if job, err = c.GetJob(ctx, job.ID); err != nil {
			return nil, err
		}
	}
	return jobResult[T](job)
}

// jobResult is what an ended job answers: its result as a T, or its error as
// the *Problem its route would have answered.
func jobResult[T any](job *api.Job) (*T, error) {
	switch job.State {
	case api.JobStateSucceeded:
		if job.Result == nil {
			return nil, fmt.Errorf("logbook: job %s succeeded without a result", job.ID)
		}
		raw, err := json.Marshal(job.Result)
		if err != nil {
			return nil, err
		}
		v := new(T)
		if err := json.Unmarshal(raw, v); err != nil {
			return nil, fmt.Errorf("logbook: decode job %s's result: %w", job.ID, err)
		}
		return v, nil
	case api.JobStateFailed:
		if job.Error == nil {
			return nil, fmt.Errorf("logbook: job %s failed without an error", job.ID)
		}
		e := job.Error
		return nil, &Problem{Problem: api.Problem{
			Type:   "urn:logbook:problem:" + e.Code,
			Title:  http.StatusText(e.Status),
			Status: e.Status,
			Code:   api.ErrorCode(e.Code),
			Detail: e.Detail,
		}}
	case api.JobStateInterrupted:
		return nil, fmt.Errorf("%w: job %s (%s) stopped when the server did; start it again", ErrJobInterrupted, job.ID, job.Kind)
	}
	return nil, fmt.Errorf("logbook: job %s is %q", job.ID, job.State)
}
