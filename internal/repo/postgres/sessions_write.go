package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// writeFaultedPG runs fn as one transaction (s.tx, retried on serialization
// failures) with the fault points SQLite's writer passes around each write:
// begin, exec, and commit, where a crash can lose the write (before) or only
// its answer (after). Once begun, it runs to its end whatever becomes of ctx:
// as on SQLite, a caller that went away must not be told "canceled" about a
// write that committed.
func (s *Store) writeFaultedPG(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.faults.Check(repo.PointBegin); err != nil {
		return err
	}
	wctx := context.WithoutCancel(ctx)
	var crashAfter bool
	err := s.tx(wctx, func(tx pgx.Tx) (err error) {
		defer func() { // one bad write must not take the process down
			if r := recover(); r != nil {
				err = model.Internal(fmt.Errorf("panic in write: %v", r))
			}
		}()
		crashAfter = false
		if err := s.faults.Check(repo.PointExec); err != nil {
			return err
		}
		if err := fn(wctx, tx); err != nil {
			return err
		}
		switch k := s.faults.Fire(repo.PointCommit); k {
		case repo.FaultError, repo.FaultCrashBeforeCommit:
			return model.Unavailable(fmt.Errorf("%w: %s at commit", repo.ErrInjected, k))
		case repo.FaultCrashAfterCommit:
			crashAfter = true
		}
		return nil
	})
	if err == nil && crashAfter { // stored, but the answer is lost
		return model.Unavailable(fmt.Errorf("%w: %s", repo.ErrInjected, repo.FaultCrashAfterCommit))
	}
	return err
}
