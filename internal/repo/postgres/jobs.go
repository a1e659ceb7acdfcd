package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
)

// jobsKept is how many finished jobs a tenant keeps: the newest.
const jobsKept = 100

// CreateJob records a running job of this process, and forgets the tenant's
// finished jobs past the newest jobsKept.
func (s *Store) CreateJob(ctx context.Context, tenant, kind string) (model.Job, error) {
	now := model.Now()
	j := model.Job{ID: newID(model.PrefixJob), Kind: kind, State: model.JobRunning, CreatedAt: now, UpdatedAt: now}
	stale := int64(now) - model.JobStaleAfter.Milliseconds()
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM jobs WHERE tenant_id = $1 AND (state <> 'running' OR updated_at < $3) AND created_at <
			(SELECT created_at FROM jobs WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 1 OFFSET $2)`, tenant, jobsKept-1, stale); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO jobs (tenant_id, id, kind, state, runner, created_at, updated_at)
			VALUES ($1, $2, $3, 'running', $4, $5, $5)`, tenant, j.ID, kind, s.runner, int64(now))
		return err
	})
	return j, mapErr(err)
}

// UpdateJob writes a running job's progress, and so its heartbeat.
func (s *Store) UpdateJob(ctx context.Context, tenant, id string, p model.JobProgress) error {
	_, err := s.pool.Exec(ctx, `UPDATE jobs SET phase = $1, done = $2, total = $3, updated_at = $4
		WHERE tenant_id = $5 AND id = $6 AND state = 'running'`, p.Phase, p.Done, p.Total, int64(model.Now()), tenant, id)
	return mapErr(err)
}

// FinishJob ends a running job.
func (s *Store) FinishJob(ctx context.Context, tenant, id string, state model.JobState, result []byte, jerr *model.JobError) error {
	var errJSON, res *string
	if jerr != nil {
		b, _ := json.Marshal(jerr)
		t := string(b)
		errJSON = &t
	}
	if result != nil {
		r := string(result)
		res = &r
	}
	now := int64(model.Now())
	_, err := s.pool.Exec(ctx, `UPDATE jobs SET state = $1, result = $2::json, error = $3::json, updated_at = $4, finished_at = $4
		WHERE tenant_id = $5 AND id = $6 AND state = 'running'`, string(state), res, errJSON, now, tenant, id)
	return mapErr(err)
}

// GetJob reads a job. Any of several processes may run one: a running job
// whose runner has stopped writing to it reads as interrupted.
func (s *Store) GetJob(ctx context.Context, tenant, id string) (model.Job, error) {
	var (
		j               model.Job
		state           string
		result, errText *string
		created, upd    int64
		finished        *int64
	)
	err := s.pool.QueryRow(ctx, `SELECT id, kind, state, phase, done, total, result::text, error::text, created_at, updated_at, finished_at
		FROM jobs WHERE tenant_id = $1 AND id = $2`, tenant, id).Scan(&j.ID, &j.Kind, &state, &j.Progress.Phase, &j.Progress.Done,
		&j.Progress.Total, &result, &errText, &created, &upd, &finished)
	if errors.Is(err, pgx.ErrNoRows) {
		return j, model.NotFound("job", id)
	}
	if err != nil {
		return j, mapErr(err)
	}
	j.State, j.CreatedAt, j.UpdatedAt = model.JobState(state), model.Time(created), model.Time(upd)
	if finished != nil {
		f := model.Time(*finished)
		j.FinishedAt = &f
	}
	if result != nil {
		j.Result = json.RawMessage(*result)
	}
	if errText != nil {
		j.Error = &model.JobError{}
		if err := json.Unmarshal([]byte(*errText), j.Error); err != nil {
			return j, model.Internal(err)
		}
	}
	j.Settle(model.Now())
	return j, nil
}
