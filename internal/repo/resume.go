package repo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
	"github.com/logbook/logbook/internal/repo/history"
)

// ResumeReader is what a resume reads of one session, all from one snapshot.
// A backend walks the session's lineage once and reads its messages through
// it (a fork's inherited ones as its own).
type ResumeReader interface {
	Session(ctx context.Context) (model.Session, error)
	// LatestCheckpoint is the latest checkpoint of namespace "" (KindNotFound
	// when none; corrupted with as much as could be rebuilt).
	LatestCheckpoint(ctx context.Context) (model.Checkpoint, error)
	// History feeds every message of the lineage, in seq order, to c.
	History(ctx context.Context, c *history.Checker) error
	// MessagesAfter reads up to n+1 messages after seq after: the one past n
	// says there are more.
	MessagesAfter(ctx context.Context, after int64, n int) ([]model.Message, error)
}

// Resume gathers what a new worker needs to continue a session: the latest
// checkpoint, the messages after it, the tool calls it left pending, and a
// report of anything inconsistent. It reads only; it never repairs. Both
// backends resume through it. Errors: KindNotFound.
func Resume(ctx context.Context, r ResumeReader, sessionID string) (model.Resume, error) {
	var (
		res model.Resume
		err error
	)
	if res.Session, err = r.Session(ctx); err != nil {
		return res, err
	}
	problems := []model.ResumeProblem{}
	report := func(code string, seq *int64, format string, args ...any) {
		problems = append(problems, model.ResumeProblem{Code: code, Seq: seq, Detail: fmt.Sprintf(format, args...)})
	}
	iteration := int64(0)

	res.Validation.SchemaVersion = model.SchemaVersion
	res.PendingToolCalls = []model.PendingToolCall{}
	since := int64(0)
	cp, err := r.LatestCheckpoint(ctx)
	corrupted := ckstate.IsCorrupted(err)
	switch {
	case model.IsNotFound(err, "checkpoint"):
	case corrupted && cp.State == nil:
		// Nothing of its state could be rebuilt: there is no checkpoint to
		// hand over, and the worker starts from the messages.
		report("checkpoint_corrupted", nil, "checkpoint %s (iteration %d) cannot be read back", cp.ID, cp.Iteration)
		iteration = cp.Iteration
	case err != nil && !corrupted:
		return res, err
	default:
		res.Checkpoint = &cp
		since = cp.LastSeq
		iteration = cp.Iteration
		if err != nil {
			report("checkpoint_corrupted", nil, "checkpoint %s (iteration %d) does not match its SHA-256", cp.ID, cp.Iteration)
		}
		var st model.CheckpointState
		if err := json.Unmarshal(cp.State, &st); err != nil {
			report("checkpoint_corrupted", nil, "checkpoint %s state is not readable: %v", cp.ID, err)
		}
		if st.SchemaVersion != nil {
			res.Validation.SchemaVersion = *st.SchemaVersion
			if *st.SchemaVersion > model.SchemaVersion {
				report("schema_version_newer", nil, "checkpoint state is schema version %d; this server understands up to %d",
					*st.SchemaVersion, model.SchemaVersion)
			}
		}
		if st.PendingToolCalls != nil {
			res.PendingToolCalls = st.PendingToolCalls
		}
		if cp.LastSeq > res.Session.LastSeq {
			report("checkpoint_ahead", &cp.LastSeq, "checkpoint %s records last_seq %d but the session's last_seq is %d",
				cp.ID, cp.LastSeq, res.Session.LastSeq)
		}
	}

	c := history.NewChecker()
	if err := r.History(ctx, c); err != nil {
		return res, err
	}
	h := c.Finish(res.Session, res.PendingToolCalls)
	problems = append(problems, h.Problems...)
	for i := range problems {
		problems[i].Repair = model.SuggestRepair(problems[i].Code, problems[i].Seq, res.Session, iteration)
	}
	for i := range h.Warnings {
		h.Warnings[i].Repair = model.SuggestRepair(h.Warnings[i].Code, h.Warnings[i].Seq, res.Session, iteration)
	}
	res.Validation.Warnings = h.Warnings

	page, err := r.MessagesAfter(ctx, since, model.ResumeMessageLimit)
	if err != nil {
		return res, err
	}
	for i := range page {
		page[i].SessionID = sessionID
	}
	res.MoreMessages = len(page) > model.ResumeMessageLimit
	res.MessagesSinceCheckpoint = page[:min(len(page), model.ResumeMessageLimit)]
	res.Validation.Problems = problems
	res.Validation.OK = len(problems) == 0
	return res, nil
}
