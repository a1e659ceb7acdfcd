package model

import (
	"regexp"
	"time"
)

// PurgeRequest is the input of POST /v1/admin/purge: erase the tenant's sessions
// in Status whose updated_at is before OlderThan (RFC 3339), or, with Expired
// (and neither of those), the sessions and passages whose expires_at has passed.
// DryRun only counts.
type PurgeRequest struct {
	Status    Status `json:"status" validate:"required_without=Expired,omitempty,oneof=created active completed archived"`
	OlderThan string `json:"older_than" validate:"required_without=Expired"`
	Expired   bool   `json:"expired"`
	DryRun    bool   `json:"dry_run"`

	cutoff Time // OlderThan, parsed by Validate
}

// Validate parses OlderThan, naming the field when it is not a time.
func (p *PurgeRequest) Validate() error {
	if p.Expired {
		var fields []FieldError
		if p.Status != "" {
			fields = append(fields, FieldError{Field: "status", Message: "must be left out with expired"})
		}
		if p.OlderThan != "" {
			fields = append(fields, FieldError{Field: "older_than", Message: "must be left out with expired"})
		}
		if fields != nil {
			return Invalid(fields...)
		}
		p.cutoff = Now()
		return nil
	}
	t, err := ParseTime(p.OlderThan)
	if err != nil {
		return Invalid(FieldError{Field: "older_than", Message: err.Error()})
	}
	p.cutoff = t
	return nil
}

// Cutoff is OlderThan as a Time; valid after Validate (or WithCutoff).
func (p PurgeRequest) Cutoff() Time { return p.cutoff }

// WithCutoff returns p with its cutoff set, for callers that build a request in
// code rather than decoding one.
func (p PurgeRequest) WithCutoff(t Time) PurgeRequest {
	p.cutoff = t
	p.OlderThan = t.String()
	return p
}

// PurgeResult counts what a purge erased, or would erase on a dry run. Messages
// and Checkpoints are the rows the purged sessions stored themselves; a fork's
// inherited prefix is counted under the session that stored it.
type PurgeResult struct {
	DryRun      bool  `json:"dry_run"`
	Sessions    int64 `json:"sessions"`
	Messages    int64 `json:"messages"`
	Checkpoints int64 `json:"checkpoints"`
	// Passages counts the expired archival passages a purge with Expired deleted.
	Passages int64 `json:"passages"`
	// Items counts the expired items of the item store a purge with Expired deleted.
	Items int64 `json:"items"`
}

// CounterDrift is one session counter that disagrees with the session's messages.
type CounterDrift struct {
	SessionID string  `json:"session_id"`
	Field     string  `json:"field"` // message_count, last_seq, total_tokens or total_cost
	Stored    float64 `json:"stored"`
	Actual    float64 `json:"actual"`
}

// OrphanCounts counts rows whose session no longer exists, and forks sharing a
// prefix whose parent no longer exists (their history cannot be read).
type OrphanCounts struct {
	Messages    int64 `json:"messages"`
	Checkpoints int64 `json:"checkpoints"`
	RequestKeys int64 `json:"request_keys"`
	Forks       int64 `json:"forks"`
}

// Kinds of IndexDrift.
const (
	// IndexStaleRows: search-index rows whose message is gone.
	IndexStaleRows = "stale_index_rows"
	// IndexMissingRows: messages the indexer has passed that have no index row.
	IndexMissingRows = "missing_index_rows"
)

// IndexDrift is one disagreement between the conversation search index and the
// messages; Rows says how many rows of the session. FTSSeq and LastSeq are always
// nil: they carried an earlier version's per-session progress.
type IndexDrift struct {
	Kind      string `json:"kind"`
	SessionID string `json:"session_id"`
	FTSSeq    *int64 `json:"fts_seq"`
	LastSeq   *int64 `json:"last_seq"`
	Rows      *int64 `json:"rows"`
}

// IntegrityReport is the answer of GET /v1/admin/integrity. IntegrityCheck is the
// whole file's PRAGMA integrity_check; everything else is the caller's tenant only.
// Repaired lists the counters that ?repair=counters fixed (before the checks ran).
type IntegrityReport struct {
	OK             bool           `json:"ok"`
	IntegrityCheck string         `json:"integrity_check"`
	CounterDrift   []CounterDrift `json:"counter_drift"`
	Orphans        OrphanCounts   `json:"orphans"`
	IndexDrift     []IndexDrift   `json:"index_drift"`
	Repaired       []CounterDrift `json:"repaired"`
}

// BackupRequest is the input of POST /v1/admin/backup.
type BackupRequest struct {
	Name string `json:"name,omitempty"`
}

var backupName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Validate keeps the name a plain file name inside the backup directory.
func (b BackupRequest) Validate() error {
	if b.Name == "" {
		return nil
	}
	if !backupName.MatchString(b.Name) || b.Name == "." || b.Name == ".." {
		return Invalid(FieldError{Field: "name", Message: "must be 1 to 128 characters of A-Z a-z 0-9 _ . - (and not . or ..)"})
	}
	return nil
}

// DefaultBackupName names a backup made at t: logbook-20260102T150405.123Z.db.
func DefaultBackupName(t time.Time) string {
	return "logbook-" + t.UTC().Format("20060102T150405.000Z") + ".db"
}

// Backup describes a finished backup file.
type Backup struct {
	Path      string `json:"path"`
	Bytes     int64  `json:"bytes"`
	CreatedAt Time   `json:"created_at"`
}
