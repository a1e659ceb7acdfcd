package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/logbook/logbook/internal/model"
)

// jobsKept is how many finished jobs a tenant keeps: the newest.
const jobsKept = 100

// CreateJob records a running job of this process, and forgets the tenant's
// finished jobs past the newest jobsKept.
func (s *Store) CreateJob(ctx context.Context, tenant, kind string) (model.Job, error) {
	now := model.Now()
	j := model.Job{ID: newID(model.PrefixJob), Kind: kind, State: model.JobRunning, CreatedAt: now, UpdatedAt: now}
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE tenant_id = ?1 AND (state <> 'running' OR runner <> ?3) AND created_at <
			(SELECT created_at FROM jobs WHERE tenant_id = ?1 ORDER BY created_at DESC LIMIT 1 OFFSET ?2)`, tenant, jobsKept-1, s.runner); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO jobs (tenant_id, id, kind, state, runner, created_at, updated_at)
			VALUES (?, ?, ?, 'running', ?, ?, ?)`, tenant, j.ID, kind, s.runner, int64(now), int64(now))
		return err
	})
	return j, err
}

// UpdateJob writes a running job's progress, and so its heartbeat.
func (s *Store) UpdateJob(ctx context.Context, tenant, id string, p model.JobProgress) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET phase = ?, done = ?, total = ?, updated_at = ?
			WHERE tenant_id = ? AND id = ? AND state = 'running'`, p.Phase, p.Done, p.Total, int64(model.Now()), tenant, id)
		return err
	})
}

// FinishJob ends a running job.
func (s *Store) FinishJob(ctx context.Context, tenant, id string, state model.JobState, result []byte, jerr *model.JobError) error {
	var errText *string
	if jerr != nil {
		b, _ := json.Marshal(jerr)
		t := string(b)
		errText = &t
	}
	var res *string
	if result != nil {
		r := string(result)
		res = &r
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		now := int64(model.Now())
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET state = ?, result = ?, error = ?, updated_at = ?, finished_at = ?
			WHERE tenant_id = ? AND id = ? AND state = 'running'`, string(state), res, errText, now, now, tenant, id)
		return err
	})
}

// GetJob reads a job. One that reads as running but was started by another
// process (this file is served by one server at a time) was cut short by a
// restart, as was one its runner has stopped writing to.
func (s *Store) GetJob(ctx context.Context, tenant, id string) (model.Job, error) {
	var (
		j               model.Job
		runner          string
		result, errText sql.NullString
	)
	err := s.rdb.QueryRowContext(ctx, `SELECT id, kind, state, phase, done, total, result, error, runner, created_at, updated_at, finished_at
		FROM jobs WHERE tenant_id = ? AND id = ?`, tenant, id).Scan(&j.ID, &j.Kind, &j.State, &j.Progress.Phase, &j.Progress.Done,
		&j.Progress.Total, &result, &errText, &runner, &j.CreatedAt, &j.UpdatedAt, &j.FinishedAt)
	if err == sql.ErrNoRows {
		return j, model.NotFound("job", id)
	}
	if err != nil {
		return j, mapErr(err)
	}
	if result.Valid {
		j.Result = json.RawMessage(result.String)
	}
	if errText.Valid {
		j.Error = &model.JobError{}
		if err := json.Unmarshal([]byte(errText.String), j.Error); err != nil {
			return j, model.Internal(err)
		}
	}
	if j.State == model.JobRunning && runner != s.runner {
		j.Interrupted()
	}
	j.Settle(model.Now())
	return j, nil
}
