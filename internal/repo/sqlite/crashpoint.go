package sqlite

import (
	"fmt"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// crashPoint fires a point inside a write where a crash may be injected: an error
// or a crash before the commit fails the write; a crash after the commit is left
// to the writer (pending) to apply once the group has committed.
func (s *Store) crashPoint(p repo.FaultPoint) error {
	switch k := s.faults.Fire(p); k {
	case "":
		return nil
	case repo.FaultCrashAfterCommit, repo.FaultCrashBeforeCommit:
		s.pendingCrash = k
		if k == repo.FaultCrashAfterCommit {
			return nil
		}
		fallthrough
	default:
		return model.Unavailable(fmt.Errorf("%w: %s at %s", repo.ErrInjected, k, p))
	}
}
