package model

import "strings"

// SchemaVersion is the newest checkpoint state schema this server understands.
const SchemaVersion = 1

// Checkpoint is a runtime's loop state after one iteration, with the session's
// last_seq at that moment and a SHA-256 that reads verify.
type Checkpoint struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	// Namespace, with the session, holds a line of iterations of its own.
	Namespace string `json:"namespace"`
	Iteration int64  `json:"iteration"`
	// ClientID is the client's name for the checkpoint (its ID when it gave
	// none), unique in the session and namespace.
	ClientID string `json:"client_id"`
	// ParentID and ParentIteration name the checkpoint this one follows in
	// its namespace: the one a graph write named, or the latest before it.
	ParentID        *string `json:"parent_id"`
	ParentIteration *int64  `json:"parent_iteration"`
	Metadata        Object  `json:"metadata"`
	// State is left out of a list asked for without values.
	State     JSON   `json:"state,omitempty"`
	LastSeq   int64  `json:"last_seq"`
	SHA256    string `json:"sha256"`
	CreatedAt Time   `json:"created_at"`
	// PendingWrites are the writes recorded against this checkpoint, by
	// (task_path, task_id, idx); ParentWrites the parent's to one channel,
	// when a read asked for them.
	PendingWrites []PendingWrite `json:"pending_writes,omitempty"`
	ParentWrites  []PendingWrite `json:"parent_writes,omitempty"`
}

// PendingToolCall is a tool call the runtime started and has not finished.
type PendingToolCall struct {
	ID        string `json:"id" validate:"required,max=256"`
	ToolName  string `json:"tool_name" validate:"required,max=256"`
	ToolInput JSON   `json:"tool_input,omitempty"`
	StartedAt *Time  `json:"started_at,omitempty"`
}

// CheckpointState is the part of a state the server reads; everything else in it
// is kept as given.
type CheckpointState struct {
	SchemaVersion    *int64            `json:"schema_version,omitempty" validate:"omitempty,min=1"`
	PauseUntilMs     *int64            `json:"pause_until_ms,omitempty" validate:"omitempty,min=0"`
	PendingToolCalls []PendingToolCall `json:"pending_tool_calls,omitempty" validate:"dive"`
	LastToolResult   JSON              `json:"last_tool_result,omitempty"`
	StopReason       *string           `json:"stop_reason,omitempty" validate:"omitempty,max=256"`
}

// PutCheckpoint is the input of PUT /v1/sessions/{id}/checkpoint. Iteration must
// be above the latest; ExpectedIteration, when given, must equal the latest (0
// when there is none): the fence that lets only one worker own a session.
type PutCheckpoint struct {
	Iteration         int64  `json:"iteration" validate:"gte=1"`
	State             JSON   `json:"state" validate:"required"`
	ExpectedIteration *int64 `json:"expected_iteration,omitempty" validate:"omitempty,gte=0"`
	// Namespace, ClientID and Metadata are those of CreateCheckpoint: each
	// namespace is fenced on its own.
	Namespace string `json:"namespace,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Metadata  Object `json:"metadata,omitempty"`
}

// Validate checks the names.
func (p PutCheckpoint) Validate() error {
	if f := checkNames(p.Namespace, p.ClientID); f != nil {
		return Invalid(f...)
	}
	return nil
}

// PatchCheckpoint is the input of PATCH /v1/sessions/{id}/checkpoint: iteration
// N is the latest checkpoint's state with StatePatch applied as an RFC 7396 merge
// patch, under the same fence as PutCheckpoint.
type PatchCheckpoint struct {
	Iteration         int64  `json:"iteration" validate:"gte=1"`
	StatePatch        JSON   `json:"state_patch" validate:"required"`
	ExpectedIteration *int64 `json:"expected_iteration,omitempty" validate:"omitempty,gte=0"`
	Namespace         string `json:"namespace,omitempty"`
	ClientID          string `json:"client_id,omitempty"`
	Metadata          Object `json:"metadata,omitempty"`
}

// Validate checks the names.
func (p PatchCheckpoint) Validate() error {
	if f := checkNames(p.Namespace, p.ClientID); f != nil {
		return Invalid(f...)
	}
	return nil
}

// MaxStateBytes bounds a checkpoint's state as canonical JSON, whether a PUT
// sends it or a PATCH grows it: a state past this could no longer travel as
// one line of an export (MaxExportLine).
const MaxStateBytes = 4 << 20

// ForkCheckpoint names the checkpoint a fork starts from: by client id or by
// iteration, in a namespace.
type ForkCheckpoint struct {
	Namespace string `json:"namespace,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Iteration int64  `json:"iteration,omitempty" validate:"gte=0"`
}

// Validate asks for exactly one of client_id and iteration.
func (f ForkCheckpoint) Validate() error {
	if (f.ClientID == "") == (f.Iteration == 0) {
		return Invalid(FieldError{Field: "at_checkpoint", Message: "needs exactly one of client_id and iteration"})
	}
	return nil
}

// NoCheckpoint is a PATCH of a session that has no checkpoint to patch.
func NoCheckpoint(sessionID string) *Error {
	return &Error{Kind: KindConflict, Code: "no_checkpoint",
		Msg: "session " + sessionID + " has no checkpoint to patch: write the first one with PUT"}
}

// ParsePatchedState is ParseState for the result of a PATCH: a problem is named
// under state_patch, the field the client sent, rather than state.
func ParsePatchedState(merged JSON) (CheckpointState, error) {
	st, err := ParseState(merged)
	if err == nil {
		return st, nil
	}
	e := AsError(err)
	if e.Kind != KindInvalid || len(e.Fields) == 0 {
		return st, err
	}
	fields := make([]FieldError, len(e.Fields))
	for i, f := range e.Fields {
		if rest, ok := strings.CutPrefix(f.Field, "state"); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			f.Field = "state_patch" + rest
		}
		fields[i] = FieldError{Field: f.Field, Message: f.Message + " (in the state once patched)"}
	}
	return st, Invalid(fields...)
}

// StaleIteration is a checkpoint write that lost the race to another worker.
func StaleIteration(msg string, latest int64) *Error {
	return &Error{Kind: KindConflict, Code: "stale_iteration", Msg: msg,
		Extra: map[string]any{"latest_iteration": latest}}
}

// Corrupted is a stored object whose content no longer matches its hash.
func Corrupted(what, id string) *Error {
	return &Error{Kind: KindConflict, Code: "corrupted",
		Msg:   what + " " + id + " does not match its SHA-256: it was damaged after it was written",
		Extra: map[string]any{"id": id}}
}

// ResumeProblem is one thing resume validation found wrong, with its remedy.
type ResumeProblem struct {
	Code   string `json:"code"`
	Seq    *int64 `json:"seq"`
	Detail string `json:"detail"`
	Repair Repair `json:"repair"`
}

// Validation is resume's report; OK when Problems is empty. Warnings are
// things off that do not stop a resume (a turn count that disagrees).
type Validation struct {
	OK            bool            `json:"ok"`
	SchemaVersion int64           `json:"schema_version"`
	Problems      []ResumeProblem `json:"problems"`
	Warnings      []ResumeProblem `json:"warnings"`
}

// Resume is everything a new worker needs to pick a session up.
type Resume struct {
	Session                 Session           `json:"session"`
	Checkpoint              *Checkpoint       `json:"checkpoint"`
	MessagesSinceCheckpoint []Message         `json:"messages_since_checkpoint"`
	MoreMessages            bool              `json:"more_messages"`
	PendingToolCalls        []PendingToolCall `json:"pending_tool_calls"`
	Validation              Validation        `json:"validation"`
}

// ResumeMessageLimit bounds messages_since_checkpoint; more_messages says if
// there are more to page through.
const ResumeMessageLimit = 1000

// ForkSession is the input of POST /v1/sessions/{id}/fork.
type ForkSession struct {
	ID    string `json:"id,omitempty" validate:"omitempty,max=128,clientid"`
	AtSeq *int64 `json:"at_seq,omitempty" validate:"omitempty,gte=0"`
	// AtCheckpoint forks at a checkpoint instead: the fork shares the
	// messages up to its last_seq and starts from a copy of it.
	AtCheckpoint *ForkCheckpoint `json:"at_checkpoint,omitempty"`
	Title        *string         `json:"title,omitempty" validate:"omitempty,max=1000"`
	Metadata     Object          `json:"metadata,omitempty"`
	// UserSpace takes ID in the parent's user's own id space, as
	// CreateSession.UserSpace does.
	UserSpace bool `json:"-"`
}

// Validate refuses at_seq beside at_checkpoint, and checks at_checkpoint.
func (f ForkSession) Validate() error {
	if f.AtCheckpoint == nil {
		return nil
	}
	if f.AtSeq != nil {
		return Invalid(FieldError{Field: "at_seq", Message: "must be left out with at_checkpoint (the checkpoint's last_seq is the fork point)"})
	}
	if fs := checkNames(f.AtCheckpoint.Namespace, f.AtCheckpoint.ClientID); fs != nil {
		for i := range fs {
			fs[i].Field = "at_checkpoint." + fs[i].Field
		}
		return Invalid(fs...)
	}
	return f.AtCheckpoint.Validate()
}
