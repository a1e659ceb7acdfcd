package ckstore

import (
	"strings"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// ListSQL is the condition of a list of checkpoints (alias c) in one
// dialect: arg adds a parameter and returns its placeholder; metadata is
// the dialect's match of one metadata filter over c.metadata. The order is
// the checkpoints' ids, newest first: ids are UUIDv7, so that is the order
// they were written in, within a session and across a tenant's.
type ListSQL struct {
	Arg      func(v any) string
	Metadata func(key, value string) string
}

// Where is the condition for f after the checkpoint before (or from the
// newest when it is nil), and after the cursor's, at time now.
func (d ListSQL) Where(tenant string, f model.CheckpointFilter, before, cur *repo.Cursor, now model.Time) string {
	where := []string{"c.tenant_id = " + d.Arg(tenant)}
	if f.SessionID != "" {
		where = append(where, "c.session_id = "+d.Arg(f.SessionID))
	}
	if f.Namespace != nil {
		where = append(where, "c.namespace = "+d.Arg(*f.Namespace))
	}
	for _, m := range f.Metadata {
		where = append(where, d.Metadata(d.Arg(m.Key), d.Arg(m.Value)))
	}
	for _, at := range []*repo.Cursor{before, cur} {
		if at != nil {
			where = append(where, "(c.created_at, c.id) < ("+d.Arg(at.N)+", "+d.Arg(at.S)+")")
		}
	}
	// The session must be live (and the key's user's): its checkpoints are
	// hidden with it.
	live := "s.tenant_id = c.tenant_id AND s.id = c.session_id AND (s.expires_at IS NULL OR s.expires_at > " + d.Arg(int64(now)) + ")"
	if f.UserID != "" {
		live += " AND s.user_id = " + d.Arg(f.UserID)
	}
	where = append(where, "EXISTS (SELECT 1 FROM sessions s WHERE "+live+")")
	return strings.Join(where, " AND ")
}

// OrderBy is a list's order.
const OrderBy = ` ORDER BY c.created_at DESC, c.id DESC`

// Fingerprint binds a list's cursors to its filter.
func Fingerprint(f model.CheckpointFilter) string {
	return repo.Fingerprint("checkpoints", f)
}
