package model

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Checkpoints as graph runtimes keep them: beside the line of iterations that
// one agent loop writes, a checkpoint may carry the client's own id, its
// parent's, a namespace (a subgraph's, say) and metadata, and a task's outputs
// may be recorded against it as pending writes. Each namespace of a session
// has its own line of iterations, its own latest and its own fence.

// Limits of a graph checkpoint's names: long enough for LangGraph's nested
// namespaces ("outer:task-id|inner:task-id") and any uuid, short enough that
// a key of the checkpoints table stays small.
const (
	MaxNamespaceBytes   = 512
	MaxCheckpointIDSize = 256
	MaxTaskIDBytes      = 256
	MaxChannelBytes     = 256
	MaxWritesPerRequest = 1000
)

// PendingWrite is one output of a task, recorded against a checkpoint of its
// session and namespace before the next checkpoint folds it in.
type PendingWrite struct {
	TaskID   string `json:"task_id"`
	Idx      int64  `json:"idx"`
	Channel  string `json:"channel"`
	Value    JSON   `json:"value"`
	TaskPath string `json:"task_path"`
}

// CreateCheckpoint is the input of POST /v1/sessions/{id}/checkpoints: the next
// checkpoint of Namespace, numbered by the server (its latest iteration + 1),
// named by the client (ClientID, else its own id) and hung under ParentID.
// The state is given whole (State) or as an RFC 7396 merge patch of the
// parent's state (StatePatch; of {} without a parent).
type CreateCheckpoint struct {
	Namespace         string  `json:"namespace,omitempty"`
	ClientID          string  `json:"client_id,omitempty"`
	ParentID          *string `json:"parent_id,omitempty"`
	State             JSON    `json:"state,omitempty"`
	StatePatch        JSON    `json:"state_patch,omitempty"`
	Metadata          Object  `json:"metadata,omitempty"`
	ExpectedIteration *int64  `json:"expected_iteration,omitempty" validate:"omitempty,gte=0"`
	// CreateSession makes the session first when it does not exist: a
	// runtime's thread comes into being with its first checkpoint.
	CreateSession bool `json:"create_session,omitempty"`
}

// Validate checks what tags cannot say: the names, and one form of the state.
func (c CreateCheckpoint) Validate() error {
	fields := checkNames(c.Namespace, c.ClientID)
	if c.ParentID != nil {
		if f := checkName("parent_id", *c.ParentID, MaxCheckpointIDSize, false); f != nil {
			fields = append(fields, *f)
		}
	}
	switch {
	case len(c.State) == 0 && len(c.StatePatch) == 0:
		fields = append(fields, FieldError{Field: "state", Message: "is required (or state_patch)"})
	case len(c.State) > 0 && len(c.StatePatch) > 0:
		fields = append(fields, FieldError{Field: "state_patch", Message: "must be left out with state"})
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}

// checkNames checks a write's namespace and client id.
func checkNames(namespace, clientID string) []FieldError {
	var fields []FieldError
	if f := checkName("namespace", namespace, MaxNamespaceBytes, true); f != nil {
		fields = append(fields, *f)
	}
	if f := checkName("client_id", clientID, MaxCheckpointIDSize, true); f != nil {
		fields = append(fields, *f)
	}
	return fields
}

// checkName refuses a name that is too long, not UTF-8, or holds a control
// character (a NUL would be a 422 on PostgreSQL only).
func checkName(field, s string, max int, empty bool) *FieldError {
	switch {
	case s == "" && !empty:
		return &FieldError{Field: field, Message: "must not be empty"}
	case len(s) > max:
		return &FieldError{Field: field, Message: fmt.Sprintf("must be at most %d bytes long", max)}
	case !utf8.ValidString(s):
		return &FieldError{Field: field, Message: "must be valid UTF-8"}
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return &FieldError{Field: field, Message: "must not hold control characters"}
		}
	}
	return nil
}

// PutCheckpointWrites is the input of POST /v1/sessions/{id}/checkpoint-writes:
// one task's writes against checkpoint CheckpointID of Namespace, which need
// not exist yet (a runtime may record a task's outputs before the checkpoint
// they belong to is stored).
type PutCheckpointWrites struct {
	Namespace     string       `json:"namespace,omitempty"`
	CheckpointID  string       `json:"checkpoint_id"`
	TaskID        string       `json:"task_id"`
	TaskPath      string       `json:"task_path,omitempty"`
	Writes        []WriteInput `json:"writes" validate:"required,min=1,max=1000,dive"`
	CreateSession bool         `json:"create_session,omitempty"`
}

// WriteInput is one write of a task: a value for a channel.
type WriteInput struct {
	Channel string `json:"channel" validate:"required"`
	Value   JSON   `json:"value" validate:"required"`
}

// Validate checks the names.
func (p PutCheckpointWrites) Validate() error {
	var fields []FieldError
	for _, f := range []*FieldError{
		checkName("namespace", p.Namespace, MaxNamespaceBytes, true),
		checkName("checkpoint_id", p.CheckpointID, MaxCheckpointIDSize, false),
		checkName("task_id", p.TaskID, MaxTaskIDBytes, false),
		checkName("task_path", p.TaskPath, MaxNamespaceBytes, true),
	} {
		if f != nil {
			fields = append(fields, *f)
		}
	}
	for i, w := range p.Writes {
		if f := checkName(fmt.Sprintf("writes[%d].channel", i), w.Channel, MaxChannelBytes, false); f != nil {
			fields = append(fields, *f)
		}
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}

// Special channels are a runtime's own: an error, an interrupt, a scheduled or
// resumed task. Their writes take negative indexes, one per channel, so that
// a later write replaces an earlier one; every other write keeps its position
// in its task's list, and the first one stored wins. These are LangGraph's
// names and indexes (WRITES_IDX_MAP), so that a LangGraph runtime's writes
// land where its own savers put them.
var specialChannels = map[string]int64{
	"__error__":     -1,
	"__scheduled__": -2,
	"__interrupt__": -3,
	"__resume__":    -4,
}

// WriteIndex is where a task's write at position pos in its list is kept.
func WriteIndex(channel string, pos int) int64 {
	if i, ok := specialChannels[channel]; ok {
		return i
	}
	return int64(pos)
}

// WriteReplaces reports whether a write at idx replaces one already stored
// there (special channels), rather than yielding to it (the first one wins).
func WriteReplaces(idx int64) bool { return idx < 0 }

// CheckpointSelector names one checkpoint of a session: by ClientID, by
// Iteration, or the latest of Namespace when neither is given.
type CheckpointSelector struct {
	Namespace string
	ClientID  string
	Iteration int64
	// ParentWrites, when set, asks for the parent's pending writes to this
	// channel with the checkpoint (ParentWrites on the answer).
	ParentWrites string
}

// CheckpointFilter selects checkpoints for a list, newest first (the order
// they were written in). Every set field must match.
type CheckpointFilter struct {
	SessionID string // empty: every session of the tenant
	UserID    string // a key bound to an end user sees only that user's sessions
	Namespace *string
	Metadata  []MetadataMatch
	// Before, with BeforeSession and BeforeNamespace, names a checkpoint:
	// only those written before it are listed.
	Before, BeforeSession, BeforeNamespace string
	// NoValues leaves out each checkpoint's state and pending writes.
	NoValues     bool
	ParentWrites string
}

// Retention policies: what older checkpoints of a namespace a session keeps
// as new ones arrive. The latest of a namespace is always kept.
const (
	KeepAll         = "all"
	KeepLast        = "last"
	KeepYoungerThan = "younger_than"
)

// DefaultCheckpointKeep is how many checkpoints of a namespace are kept when
// neither the session nor the server says otherwise.
const DefaultCheckpointKeep = 100

// CheckpointRetention is a retention policy: the body of
// PUT /v1/sessions/{id}/checkpoint-retention, and the server's default
// (--checkpoint-retention). The zero value keeps the newest
// DefaultCheckpointKeep.
type CheckpointRetention struct {
	Keep          string `json:"keep" validate:"required,oneof=all last younger_than"`
	Last          *int64 `json:"last,omitempty" validate:"omitempty,min=1,max=1000000"`
	MaxAgeSeconds *int64 `json:"max_age_seconds,omitempty" validate:"omitempty,min=1"`
}

// Validate asks for the number each policy needs, and no other.
func (r CheckpointRetention) Validate() error {
	var fields []FieldError
	switch r.Keep {
	case KeepLast:
		if r.Last == nil {
			fields = append(fields, FieldError{Field: "last", Message: "is required with keep last"})
		}
	case KeepYoungerThan:
		if r.MaxAgeSeconds == nil {
			fields = append(fields, FieldError{Field: "max_age_seconds", Message: "is required with keep younger_than"})
		}
	}
	if r.Last != nil && r.Keep != KeepLast {
		fields = append(fields, FieldError{Field: "last", Message: "goes only with keep last"})
	}
	if r.MaxAgeSeconds != nil && r.Keep != KeepYoungerThan {
		fields = append(fields, FieldError{Field: "max_age_seconds", Message: "goes only with keep younger_than"})
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}

// Or is r, or def when r is the zero value, or the built-in default when
// both are.
func (r CheckpointRetention) Or(def CheckpointRetention) CheckpointRetention {
	if r.Keep != "" {
		return r
	}
	if def.Keep != "" {
		return def
	}
	n := int64(DefaultCheckpointKeep)
	return CheckpointRetention{Keep: KeepLast, Last: &n}
}

// KeepLastN is the policy that keeps the newest n of each namespace; for n
// below 1 it is the zero value (the default).
func KeepLastN(n int64) CheckpointRetention {
	if n < 1 {
		return CheckpointRetention{}
	}
	return CheckpointRetention{Keep: KeepLast, Last: &n}
}

// MaxAge is a younger_than policy's age.
func (r CheckpointRetention) MaxAge() time.Duration {
	if r.MaxAgeSeconds == nil {
		return 0
	}
	return time.Duration(*r.MaxAgeSeconds) * time.Second
}

// SessionRetention is a session's retention as GET and PUT
// /v1/sessions/{id}/checkpoint-retention answer it: its own policy, or the
// server's default (Default true).
type SessionRetention struct {
	CheckpointRetention
	Default bool `json:"default"`
}

// NoParent is a write naming a parent its namespace does not hold.
func NoParent(id, namespace string) *Error {
	return &Error{Kind: KindConflict, Code: "no_parent",
		Msg:   fmt.Sprintf("parent_id %q names no checkpoint of namespace %q of this session", id, namespace),
		Extra: map[string]any{"parent_id": id, "namespace": namespace}}
}

// CheckpointExists is a write reusing a client id for other content.
func CheckpointExists(id, namespace string) *Error {
	return &Error{Kind: KindConflict, Code: "checkpoint_exists",
		Msg: fmt.Sprintf("namespace %q of this session already holds a checkpoint %q with other content: a client id names one checkpoint",
			namespace, id),
		Extra: map[string]any{"client_id": id, "namespace": namespace}}
}

// Check refuses a pending write an import could not have stored through
// POST /v1/sessions/{id}/checkpoint-writes: its names as that route checks
// them, a JSON value, and the index WriteIndex gives its channel (a special
// channel's own, else a position, from 0).
func (w ExportCheckpointWrite) Check() error {
	var fields []FieldError
	for _, f := range []*FieldError{
		checkName("namespace", w.Namespace, MaxNamespaceBytes, true),
		checkName("checkpoint_id", w.CheckpointID, MaxCheckpointIDSize, false),
		checkName("task_id", w.TaskID, MaxTaskIDBytes, false),
		checkName("task_path", w.TaskPath, MaxNamespaceBytes, true),
		checkName("channel", w.Channel, MaxChannelBytes, false),
	} {
		if f != nil {
			fields = append(fields, *f)
		}
	}
	if len(w.Value) == 0 || !json.Valid(w.Value) {
		fields = append(fields, FieldError{Field: "value", Message: "must be a JSON value"})
	}
	if special, ok := specialChannels[w.Channel]; (ok && w.Idx != special) || (!ok && w.Idx < 0) {
		fields = append(fields, FieldError{Field: "idx", Message: fmt.Sprintf("%d is not an index channel %q is written at", w.Idx, w.Channel)})
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}
