package model

import "strconv"

// A session export is NDJSON: one ExportLine a line, in this order — the session,
// the files its messages reference (each in chunks, one a line), its messages in
// seq order, the embeddings of those that have one (in seq order), its
// checkpoints oldest first, its compactions oldest first, and an end line whose
// sha256 covers every byte of the lines before it, newlines included.
// Exporting what an import restored gives the same bytes again.
const (
	LineSession    = "session"
	LineFile       = "file"
	LineMessage    = "message"
	LineEmbedding  = "embedding"
	LineCheckpoint = "checkpoint"
	LineCompaction = "compaction"
	// LineCheckpointWrite is one pending write of a task (PendingWrite),
	// with the checkpoint it belongs to.
	LineCheckpointWrite = "checkpoint_write"
	LineEnd             = "end"
)

// LineOrder ranks the line types as an export orders them.
var LineOrder = map[string]int{LineSession: 1, LineFile: 2, LineMessage: 3, LineEmbedding: 4, LineCheckpoint: 5,
	LineCheckpointWrite: 6, LineCompaction: 7}

// ExportEmbedding is a message's embedding, whoever made it (the client, on
// its append or by PUT, or the server's endpoint), bit for bit: an import
// stores it ready, under the session's agent, as an append's own would be.
type ExportEmbedding struct {
	Seq       int64     `json:"seq"`
	MessageID string    `json:"message_id"`
	Model     string    `json:"model"`
	Embedding []float32 `json:"embedding"`
}

// MaxFileChunk is the most bytes one file line of an export carries: a file
// travels in as many lines as it needs, so that no line is larger than an
// import reads whole.
const MaxFileChunk = 256 << 10

// ExportFile is one chunk of a file, with the file's description on every
// chunk so that each line stands on its own. Data is base64 in JSON.
type ExportFile struct {
	ID        string `json:"id"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	CreatedAt Time   `json:"created_at"`
	Offset    int64  `json:"offset"`
	Data      []byte `json:"data"`
}

// Describe is the file the chunk belongs to.
func (f *ExportFile) Describe() File {
	return File{ID: f.ID, SHA256: f.SHA256, Size: f.Size, MediaType: f.MediaType, CreatedAt: f.CreatedAt}
}

// ExportLine is one line of an export; Type says which of the other fields is set.
type ExportLine struct {
	Type       string           `json:"type"`
	Session    *Session         `json:"session,omitempty"`
	Message    *Message         `json:"message,omitempty"`
	Checkpoint *Checkpoint      `json:"checkpoint,omitempty"`
	File       *ExportFile      `json:"file,omitempty"`
	Compaction *Compaction      `json:"compaction,omitempty"`
	Embedding  *ExportEmbedding `json:"embedding,omitempty"`
	// CheckpointWrite is named so in JSON as its line type is.
	CheckpointWrite *ExportCheckpointWrite `json:"checkpoint_write,omitempty"`
	Counts          *ExportCounts          `json:"counts,omitempty"`
	SHA256          string                 `json:"sha256,omitempty"`
}

// ExportCounts is what the end line says the export holds.
type ExportCounts struct {
	Messages    int64 `json:"messages"`
	Checkpoints int64 `json:"checkpoints"`
	// Absent from exports made before files and compactions travelled: such
	// an export imports as before.
	Files       int64 `json:"files,omitempty"`
	Compactions int64 `json:"compactions,omitempty"`
	// Absent from exports made before messages' embeddings travelled.
	Embeddings int64 `json:"embeddings,omitempty"`
	// Absent from exports made before pending writes travelled.
	CheckpointWrites int64 `json:"checkpoint_writes,omitempty"`
}

// ExportCheckpointWrite is one stored pending write: a task's write against
// a checkpoint of a namespace (which need not exist: writes may come first).
type ExportCheckpointWrite struct {
	Namespace    string `json:"namespace"`
	CheckpointID string `json:"checkpoint_id"`
	TaskID       string `json:"task_id"`
	TaskPath     string `json:"task_path"`
	Idx          int64  `json:"idx"`
	Channel      string `json:"channel"`
	Value        JSON   `json:"value"`
	CreatedAt    Time   `json:"created_at"`
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

// CheckExportFile checks what a file line says of itself: the id is the one its
// sha256 and media type give, and the chunk lies within the file.
func CheckExportFile(f *ExportFile) error {
	var out []FieldError
	bad := func(field, msg string) { out = append(out, FieldError{Field: "file." + field, Message: msg}) }
	switch {
	case !validSHA256(f.SHA256):
		bad("sha256", "must be 64 lowercase hex digits")
	case !validMediaType(f.MediaType):
		bad("media_type", "must be a media type such as image/png")
	case f.ID != FileIDOf(f.SHA256, f.MediaType):
		bad("id", "is not the id this sha256 and media_type give ("+FileIDOf(f.SHA256, f.MediaType)+")")
	}
	switch {
	case f.Size < 0:
		bad("size", "must be at least 0")
	case f.CreatedAt == 0:
		bad("created_at", "is required")
	case len(f.Data) > MaxFileChunk:
		bad("data", "must be at most "+strconv.Itoa(MaxFileChunk)+" bytes a line")
	case len(f.Data) == 0 && f.Size > 0:
		bad("data", "is empty")
	case f.Offset < 0 || f.Offset+int64(len(f.Data)) > f.Size:
		bad("offset", "the chunk lies outside the file's size")
	}
	if out != nil {
		return Invalid(out...)
	}
	return nil
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
