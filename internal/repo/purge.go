package repo

import (
	"context"
	"time"

	"github.com/logbook/logbook/internal/model"
)

// PurgeCursor is where a pass of PurgeSessions has got to, in the
// (created_at, id) order it walks sessions in.
type PurgeCursor struct {
	CreatedAt int64
	ID        string
}

// Purger is what PurgeSessions needs of a backend.
type Purger interface {
	// PurgeCount counts what erasing in's sessions (and with in.Expired its
	// passages and items) would erase: a dry run.
	PurgeCount(ctx context.Context, tenant string, in model.PurgeRequest, cutoff model.Time) (model.PurgeResult, error)
	// PurgeBatch erases, in one transaction of bounded size, the next batch
	// of matching sessions after `after` (nil: from the start of a pass) that
	// no matching fork shares a prefix with, each as PurgeSession does, and
	// says what it erased and where it stopped (nil: nothing was left).
	PurgeBatch(ctx context.Context, tenant string, in model.PurgeRequest, cutoff model.Time, after *PurgeCursor) (model.PurgeResult, *PurgeCursor, error)
	// PurgeExpiredPassages deletes the tenant's passages whose expires_at is
	// before cutoff, in bounded batches, and counts them.
	PurgeExpiredPassages(ctx context.Context, tenant string, cutoff model.Time) (int64, error)
	// PurgeExpiredItems does the same for the tenant's items (of every user).
	PurgeExpiredItems(ctx context.Context, tenant string, cutoff model.Time) (int64, error)
}

// PurgeRester is a Purger that rests between batches, after one that took
// took, so that the writes queued behind a batch go first (SQLite's single
// writer; PostgreSQL's writers do not queue behind a purge).
type PurgeRester interface {
	RestAfterBatch(ctx context.Context, took time.Duration)
}

// PurgeSessions erases the tenant's sessions in in.Status whose updated_at is
// before in.Cutoff() (or with in.Expired those past their expires_at, and
// then the expired passages and items), in batches of bounded size, and counts what it
// erased; a dry run counts what it would erase and writes nothing. Both
// backends purge through it.
//
// Sessions are erased leaves first: a matching session waits until no matching
// fork still shares its prefix, so no copy is made for a fork that this purge
// erases too, and the dry run's counts are what the real run erases (unless the
// data changes in between). The batches walk the sessions in (created_at, id)
// order with a cursor, so a batch never rescans what earlier ones passed; a pass
// that erased something is followed by another, for the sessions that waited for
// their forks. Sessions that come to match while the purge runs are left for the
// next purge: the cutoff is clamped to the purge's start.
//
// A purge cut short (an error, or ctx ended) keeps the batches it committed; the
// result counts them. Errors: KindUnavailable, context errors.
func PurgeSessions(ctx context.Context, p Purger, tenant string, in model.PurgeRequest) (model.PurgeResult, error) {
	out := model.PurgeResult{DryRun: in.DryRun}
	cutoff := min(in.Cutoff(), model.Now()+1)
	if in.DryRun {
		return p.PurgeCount(ctx, tenant, in, cutoff)
	}
	var (
		after      *PurgeCursor // nil: from the start of a pass
		passErased int64
		total      int64 = -1
	)
	if Reporting(ctx) { // a job: its progress is worth a dry run first
		n, err := p.PurgeCount(ctx, tenant, in, cutoff)
		if err != nil {
			return out, err
		}
		total = n.Sessions
		ReportProgress(ctx, "erase", 0, total)
	}
	rester, _ := p.(PurgeRester)
	for {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		began := time.Now()
		batch, last, err := p.PurgeBatch(ctx, tenant, in, cutoff, after)
		if err != nil {
			return out, err
		}
		if rester != nil {
			rester.RestAfterBatch(ctx, time.Since(began))
		}
		out.Sessions += batch.Sessions
		out.Messages += batch.Messages
		out.Checkpoints += batch.Checkpoints
		passErased += batch.Sessions
		ReportProgress(ctx, "erase", out.Sessions, max(total, out.Sessions))
		if last != nil {
			after = last
			continue
		}
		if passErased == 0 {
			if in.Expired {
				n, err := p.PurgeExpiredPassages(ctx, tenant, cutoff)
				out.Passages = n
				if err != nil {
					return out, err
				}
				out.Items, err = p.PurgeExpiredItems(ctx, tenant, cutoff)
				return out, err
			}
			return out, nil
		}
		after, passErased = nil, 0 // another pass, for the sessions that waited
	}
}

// Purge bounds: one transaction erases at most PurgeBatch sessions and stops
// adding sessions once it holds PurgeBatchRows messages, so that other
// requests are served between batches however large the purge.
const (
	PurgeBatch     = 50
	PurgeBatchRows = 20000
)

// CandidateRows are a batch query's rows (created_at, id, message_count), in
// order: *sql.Rows and pgx.Rows alike.
type CandidateRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// TakeCandidates takes a batch's sessions from rows while their messages
// stay within PurgeBatchRows (at least one session).
func TakeCandidates(rows CandidateRows) ([]PurgeCursor, error) {
	var (
		out   []PurgeCursor
		total int64
	)
	for rows.Next() {
		var (
			c PurgeCursor
			n int64
		)
		if err := rows.Scan(&c.CreatedAt, &c.ID, &n); err != nil {
			return nil, err
		}
		if len(out) > 0 && total+n > PurgeBatchRows {
			break
		}
		out, total = append(out, c), total+n
	}
	return out, rows.Err()
}
