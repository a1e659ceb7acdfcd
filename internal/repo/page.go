package repo

import "github.com/logbook/logbook/internal/model"

// PageRequest is the paging part of a list call; Limit is already validated.
type PageRequest struct {
	Limit  int
	Cursor string
}

// Clamp is the page size to read: the default for none, at most the maximum.
func (p PageRequest) Clamp() int {
	switch {
	case p.Limit <= 0:
		return model.DefaultLimit
	case p.Limit > model.MaxLimit:
		return model.MaxLimit
	}
	return p.Limit
}

// BlockEdit says who edits a block: an agent's tool call may not touch a
// read-only block; the block API (a person or the runtime) may.
type BlockEdit int

const (
	EditByAPI BlockEdit = iota
	EditByTool
)

// AnyVersion is If-Match: * — the block must exist, at any version.
const AnyVersion int64 = 0

// AppendStream ties together the appends of one stream (an NDJSON body): once
// one of them fails, every later one is refused (stream_stopped), so that a
// stream never leaves a hole in a session's history, only a tail to resend.
// Only the backend's writer touches it.
type AppendStream struct {
	failed bool
}

// Fail marks the stream failed: its later appends are refused.
func (a *AppendStream) Fail() { a.failed = true }

// Failed reports whether an append of the stream failed.
func (a *AppendStream) Failed() bool { return a.failed }

// CountOf is a count read with LIMIT model.SessionCountMax+1: past the
// maximum, the answer says "more than" it.
func CountOf(n int64) model.SessionCount {
	if n > model.SessionCountMax {
		return model.SessionCount{Count: model.SessionCountMax, Exact: false}
	}
	return model.SessionCount{Count: n, Exact: true}
}
