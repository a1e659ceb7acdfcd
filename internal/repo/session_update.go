package repo

import "github.com/logbook/logbook/internal/model"

// ApplySessionUpdate applies in to ses as both backends do once they hold the
// session's row: a status change the state machine allows (invalid_transition
// otherwise), the title, and the metadata as an RFC 7396 merge patch (null
// clears it). changed says whether anything is to be written.
func ApplySessionUpdate(ses *model.Session, in model.UpdateSession) (changed bool, err error) {
	if in.Status.Set && in.Status.Value != ses.Status {
		to := in.Status.Value
		if !model.CanTransition(ses.Status, to) {
			return false, model.InvalidTransition(ses.Status, to)
		}
		SetSessionStatus(ses, to)
		changed = true
	}
	if in.Title.Set {
		ses.Title = in.Title.Ptr()
		changed = true
	}
	if in.ExpiresAt.Set {
		ses.ExpiresAt = in.ExpiresAt.Ptr()
		changed = true
	}
	if in.Metadata.Set {
		if ses.Metadata, err = MergeMetadata(ses.Metadata, in.Metadata); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// SetSessionStatus moves ses to status to, stamping closed_at on the first
// close and clearing it on a reopen.
func SetSessionStatus(ses *model.Session, to model.Status) {
	switch {
	case to.Closed() && ses.ClosedAt == nil:
		now := model.Now()
		ses.ClosedAt = &now
	case !to.Closed():
		ses.ClosedAt = nil
	}
	ses.Status = to
}

// MergeMetadata applies a metadata merge patch: null clears it.
func MergeMetadata(stored model.Object, patch model.Optional[model.Object]) (model.Object, error) {
	if patch.Null {
		return model.Object("{}"), nil
	}
	return stored.Merge(patch.Value, "metadata")
}
