package model

import "strconv"

// A session export is NDJSON: one ExportLine a line, in this order — the session,
// its messages in seq order, its checkpoints oldest first, and an end line whose
// sha256 covers every byte of the lines before it, newlines included. Exporting
// what an import restored gives the same bytes again.
const (
	LineSession    = "session"
	LineMessage    = "message"
	LineCheckpoint = "checkpoint"
	LineEnd        = "end"
)

// ExportLine is one line of an export; Type says which of the other fields is set.
type ExportLine struct {
	Type       string        `json:"type"`
	Session    *Session      `json:"session,omitempty"`
	Message    *Message      `json:"message,omitempty"`
	Checkpoint *Checkpoint   `json:"checkpoint,omitempty"`
	Counts     *ExportCounts `json:"counts,omitempty"`
	SHA256     string        `json:"sha256,omitempty"`
}

// ExportCounts is what the end line says the export holds.
type ExportCounts struct {
	Messages    int64 `json:"messages"`
	Checkpoints int64 `json:"checkpoints"`
}

// ImportOptions changes how an export is restored.
type ImportOptions struct {
	// AsNew gives the session, its messages and its checkpoints new ids, so that
	// an export can be imported next to its original (or twice).
	AsNew bool
}

// InvalidImport reports an export that cannot be restored, naming its line.
func InvalidImport(line int, msg string) *Error {
	field := "line " + strconv.Itoa(line)
	return &Error{Kind: KindInvalid, Code: "invalid_import", Msg: field + ": " + msg,
		Fields: []FieldError{{Field: field, Message: msg}}}
}
