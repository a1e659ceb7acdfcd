package repo

import (
	"context"

	"github.com/logbook/logbook/internal/model"
)

// A long operation (a purge, an integrity check, a backup) says how far it
// has got through its context, so that the same store method serves a
// request and a job: the job's runner puts a reporter in the context, and a
// request has none.

type progressKey struct{}

// WithProgress returns ctx with report as its progress reporter.
func WithProgress(ctx context.Context, report func(model.JobProgress)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// ReportProgress tells ctx's reporter, if it has one, that the operation is
// at done of total (total < 0: unknown) in phase.
func ReportProgress(ctx context.Context, phase string, done, total int64) {
	report, ok := ctx.Value(progressKey{}).(func(model.JobProgress))
	if !ok {
		return
	}
	p := model.JobProgress{Phase: phase, Done: done}
	if total >= 0 {
		p.Total = &total
	}
	report(p)
}

// Reporting says whether ctx has a progress reporter: an operation may skip
// the work of knowing its total when nobody asks.
func Reporting(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(func(model.JobProgress))
	return ok
}
