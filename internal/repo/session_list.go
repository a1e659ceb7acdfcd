package repo

import "github.com/logbook/logbook/internal/model"

// MaxIndexedMetadata is the longest metadata key, and the longest value as a
// filter compares it, in bytes, that the session_meta table holds (the
// migrations' triggers apply the same bound). A filter on a longer key or
// value is answered by reading the tenant's sessions' metadata.
const MaxIndexedMetadata = 256

// IndexedMetadata picks, of a list's metadata filters, one the session_meta
// index can answer: the list then reads that key and value's sessions newest
// first from the index, and checks the rest on each. ok is false when none can.
func IndexedMetadata(ms []model.MetadataMatch) (by model.MetadataMatch, rest []model.MetadataMatch, ok bool) {
	for i, m := range ms {
		if len(m.Key) <= MaxIndexedMetadata && len(m.Value) <= MaxIndexedMetadata {
			rest = append(append(rest, ms[:i]...), ms[i+1:]...)
			return m, rest, true
		}
	}
	return model.MetadataMatch{}, ms, false
}

// SessionRange is where a page of sessions, newest first, lies in (created_at,
// id) order: after After (created_at >), and below either Before
// (created_at <) or the cursor ((created_at, id) <), never both. One upper
// bound, so that the database reads the page as one range of an index and
// not every session below the looser of the two.
type SessionRange struct {
	After  *int64
	Before *int64
	Cursor *Cursor
}

// SessionRangeOf merges a filter's created range with a page's cursor.
func SessionRangeOf(f model.SessionFilter, cur Cursor, hasCur bool) SessionRange {
	var r SessionRange
	if f.CreatedAfter != nil {
		after := int64(*f.CreatedAfter)
		r.After = &after
	}
	if f.CreatedBefore != nil {
		before := int64(*f.CreatedBefore)
		r.Before = &before
	}
	if hasCur {
		// Below a cursor under Before, every row is under Before too; a
		// cursor at or over Before excludes nothing Before does not.
		if r.Before == nil || cur.N < *r.Before {
			r.Before, r.Cursor = nil, &cur
		}
	}
	return r
}
