package transfer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"

	"github.com/logbook/logbook/internal/model"
)

// Writer writes the lines of an export (see model.ExportLine) and hashes them
// as it goes, so that both backends write the same bytes for the same
// session: the lines a store reads are encoded here and nowhere else. The
// caller writes them in the export's order (session, files, messages,
// embeddings, checkpoints, compactions), then End.
type Writer struct {
	w      io.Writer
	h      hash.Hash
	counts model.ExportCounts
}

// NewWriter starts an export on w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, h: sha256.New()}
}

func (e *Writer) line(l model.ExportLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return model.Internal(err)
	}
	return e.raw(b)
}

// raw writes one encoded line and hashes it.
func (e *Writer) raw(b []byte) error {
	b = append(b, '\n')
	e.h.Write(b)
	if _, err := e.w.Write(b); err != nil {
		return fmt.Errorf("export: write: %w", err)
	}
	return nil
}

// Session writes the session line. Fields added after the format was first
// released (user_id, expires_at) are left out while unset, so that an export of a session
// that does not use them still imports into a version that does not know them.
func (e *Writer) Session(s *model.Session) error {
	b, err := json.Marshal(struct {
		Type    string       `json:"type"`
		Session *sessionLine `json:"session"`
	}{model.LineSession, (*sessionLine)(s)})
	if err != nil {
		return model.Internal(err)
	}
	return e.raw(b)
}

// sessionLine is model.Session as an export writes it: the same fields, in the
// same order (the conversion fails to compile otherwise), newer ones omitempty.
type sessionLine struct {
	ID           string       `json:"id"`
	AgentID      *string      `json:"agent_id"`
	UserID       *string      `json:"user_id,omitempty"`
	Title        *string      `json:"title"`
	Status       model.Status `json:"status"`
	Metadata     model.Object `json:"metadata"`
	MessageCount int64        `json:"message_count"`
	LastSeq      int64        `json:"last_seq"`
	TotalTokens  int64        `json:"total_tokens"`
	TotalCost    float64      `json:"total_cost"`
	TurnCount    int64        `json:"turn_count"`
	ParentID     *string      `json:"parent_id"`
	ForkedAtSeq  *int64       `json:"forked_at_seq"`
	CreatedAt    model.Time   `json:"created_at"`
	UpdatedAt    model.Time   `json:"updated_at"`
	ClosedAt     *model.Time  `json:"closed_at"`
	ExpiresAt    *model.Time  `json:"expires_at,omitempty"`
	Incarnation  int64        `json:"-"` // this database's own: an import gets another
}

// Message writes one message line; m.SessionID must already be the exported
// session's (a fork's inherited messages read as its own).
func (e *Writer) Message(m *model.Message) error {
	if err := e.line(model.ExportLine{Type: model.LineMessage, Message: m}); err != nil {
		return err
	}
	e.counts.Messages++
	return nil
}

// Embedding writes one message's embedding, after every message line.
func (e *Writer) Embedding(x *model.ExportEmbedding) error {
	if err := e.line(model.ExportLine{Type: model.LineEmbedding, Embedding: x}); err != nil {
		return err
	}
	e.counts.Embeddings++
	return nil
}

// Checkpoint writes one checkpoint line, its state rebuilt.
func (e *Writer) Checkpoint(c *model.Checkpoint) error {
	e.counts.Checkpoints++
	return e.line(model.ExportLine{Type: model.LineCheckpoint, Checkpoint: c})
}

// Compaction writes one compaction line.
func (e *Writer) Compaction(c *model.Compaction) error {
	if err := e.line(model.ExportLine{Type: model.LineCompaction, Compaction: c}); err != nil {
		return err
	}
	e.counts.Compactions++
	return nil
}

// File starts the lines of one file; the caller hands it the file's stored
// chunks in order, then calls Done.
func (e *Writer) File(f model.File) *FileLines {
	return &FileLines{e: e, f: f, line: model.ExportFile{ID: f.ID, SHA256: f.SHA256, Size: f.Size,
		MediaType: f.MediaType, CreatedAt: f.CreatedAt}}
}

// FileLines writes a file a stored chunk a line: the stores keep a file's
// bytes in chunks of model.MaxFileChunk, the most a file line carries.
type FileLines struct {
	e    *Writer
	f    model.File
	line model.ExportFile
}

// Chunk writes the file's next stored chunk. A chunk larger than a line may
// carry, or one past the file's size, is damage (corrupted): exporting it
// would make an export no import takes.
func (fl *FileLines) Chunk(data []byte) error {
	if data == nil {
		data = []byte{} // "", as an import reads an empty file back
	}
	if len(data) > model.MaxFileChunk || fl.line.Offset+int64(len(data)) > fl.f.Size {
		return model.Corrupted("file", fl.f.ID)
	}
	fl.line.Data = data
	if err := fl.e.line(model.ExportLine{Type: model.LineFile, File: &fl.line}); err != nil {
		return err
	}
	fl.line.Offset += int64(len(data))
	return nil
}

// Done checks that the chunks made the whole file (corrupted otherwise).
func (fl *FileLines) Done() error {
	if fl.line.Offset != fl.f.Size {
		return model.Corrupted("file", fl.f.ID)
	}
	fl.e.counts.Files++
	return nil
}

// End writes the end line: the counts and the SHA-256 of every byte before it.
// A stream cut short before End lacks it, which an import refuses.
func (e *Writer) End() error {
	end, _ := json.Marshal(model.ExportLine{Type: model.LineEnd, Counts: &e.counts, SHA256: hex.EncodeToString(e.h.Sum(nil))})
	if _, err := e.w.Write(append(end, '\n')); err != nil {
		return fmt.Errorf("export: write: %w", err)
	}
	return nil
}

// CheckpointWrite writes one pending write line, after every checkpoint line.
func (e *Writer) CheckpointWrite(w *model.ExportCheckpointWrite) error {
	if err := e.line(model.ExportLine{Type: model.LineCheckpointWrite, CheckpointWrite: w}); err != nil {
		return err
	}
	e.counts.CheckpointWrites++
	return nil
}
