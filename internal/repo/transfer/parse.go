package transfer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/ckstate"
)

// MaxLine bounds one line of an import: what an export writes at most
// (model.MaxExportLine). A longer line cannot be an export this server made,
// and it is refused after this many bytes instead of being held whole.
const MaxLine = model.MaxExportLine

// Parse reads an export from r once, a line at a time, checks each line with
// the rules the API applies to the same data (model.CheckStoredSession and
// friends), and keeps the lines in a Spool, so that memory stays bounded by
// one line however large the import. It returns the spool only when the whole
// stream checks out, checksum and counts included; the caller stores it and
// closes it. Both backends parse with this, so that they refuse the same
// exports with the same errors.
//
// Errors: malformed_json (KindBadRequest) for a line that is not JSON,
// invalid_import (KindInvalid) for anything else wrong with the content, the
// checksum or the order of the lines, each naming the line ("line 7"). A
// failed read of r is KindBadRequest wrapping the reader's error.
func Parse(r io.Reader) (*Spool, error) {
	sp := &Spool{}
	if err := parseInto(r, sp); err != nil {
		sp.Close()
		return nil, err
	}
	return sp, nil
}

// importParser checks an export line by line. After the first problem it keeps
// reading, only to hash: a damaged file is reported as a checksum mismatch
// rather than as whatever its damage looks like.
type importParser struct {
	sp       *Spool
	h        hash.Hash
	line     int // the line being read, from 1
	section  string
	session  model.Session
	first    int // the session line's number (1 in a session export)
	messages int64
	ckps     int64
	msgIDs   map[string]int // id → the line that holds it
	ckpIDs   map[string]int
	lastIter int64
	lastNS   *string // the namespace of the checkpoint before
	tokens   int64
	cost     float64
	files    int64
	fileIDs  map[string]bool // complete files
	file     *fileInProgress // the file whose chunks are being read
	cmps     int64
	cmpIDs   map[string]int
	cmpSeq   int64 // the latest compaction's through_seq
	msgLine  int   // the first message line: message seq n is on line msgLine+n-1
	embs     int64
	embSeq   int64  // the latest embedding's seq
	embModel string // the model and length every embedding of the export shares
	embDims  int
	writes   int64
	writeIDs map[writePlace]bool

	err     error // the first problem found
	end     *model.ExportLine
	endLine int
	sum     string // the hash of the lines before the end line
}

func newImportParser(sp *Spool) *importParser {
	return &importParser{sp: sp, h: sha256.New(), msgIDs: map[string]int{}, ckpIDs: map[string]int{},
		fileIDs: map[string]bool{}, cmpIDs: map[string]int{}}
}

func parseInto(r io.Reader, sp *Spool) error {
	p := newImportParser(sp)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte // reused from line to line: nothing keeps a line once taken
	for {
		raw, whole, err := readLine(br, buf[:0], MaxLine, p.h)
		buf = raw
		if len(raw) > 0 {
			p.line++
			p.take(raw, whole)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			// Wrapped, not replaced: the API tells its own body limit (413) by it.
			return &model.Error{Kind: model.KindBadRequest, Code: "malformed_json",
				Msg: "could not read the import stream", Err: err}
		}
	}
	return p.finish()
}

// readLine reads one line with its newline (the last line may lack one). A line
// longer than limit is read to its end, but only its first limit bytes are
// kept: whole is false, and every byte of it goes to h as it is read, so that
// memory stays bounded and the checksum still covers it.
func readLine(br *bufio.Reader, buf []byte, limit int, h io.Writer) (raw []byte, whole bool, err error) {
	over := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case over:
			h.Write(chunk)
		case len(buf)+len(chunk) > limit:
			over = true
			h.Write(buf) // what came before this chunk, not hashed yet
			h.Write(chunk)
			buf = append(buf, chunk[:limit-len(buf)]...)
		default:
			if len(buf)+len(chunk) > cap(buf) { // double: append's gentler growth copies a long line many times
				buf = slices.Grow(buf, max(len(chunk), cap(buf)))
			}
			buf = append(buf, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, !over, err
	}
}

func (p *importParser) take(raw []byte, whole bool) {
	if !whole { // readLine has hashed it
		if p.err == nil {
			p.err = model.InvalidImport(p.line, fmt.Sprintf("the line is longer than %d bytes: no export line can be", MaxLine))
		}
		return
	}
	if p.end != nil {
		if len(bytes.TrimSpace(raw)) > 0 && p.err == nil {
			p.err = model.InvalidImport(p.line, "data after the end line")
		}
		return
	}
	var l model.ExportLine
	derr := decodeLine(p.line, raw, &l)
	if derr == nil && l.Type == model.LineEnd {
		p.end, p.endLine, p.sum = &l, p.line, hex.EncodeToString(p.h.Sum(nil))
		if p.err == nil && (l.Counts == nil || l.SHA256 == "" || l.Session != nil || l.Message != nil || l.Checkpoint != nil ||
			l.File != nil || l.Compaction != nil || l.Embedding != nil || l.CheckpointWrite != nil) {
			p.err = model.InvalidImport(p.line, `an end line holds "counts" and "sha256" and nothing else`)
		}
		return
	}
	p.h.Write(raw)
	if p.err != nil {
		return
	}
	if derr != nil {
		if raw[len(raw)-1] != '\n' { // the last line, cut short
			derr = model.InvalidImport(p.line, "the stream ends in the middle of a line: it is truncated")
		}
		p.err = derr
		return
	}
	if p.err = p.add(l); p.err == nil {
		p.err = p.sp.write(raw)
	}
}

// decodeLine reads one line under the rules every request body follows
// (model.DecodeJSON): exact field names, no unknown or repeated fields, valid
// UTF-8, free-form values at most model.MaxJSONDepth deep.
func decodeLine(line int, raw []byte, l any) error {
	err := model.DecodeJSON(raw, l)
	if err == nil {
		return nil
	}
	e := model.AsError(err)
	if e.Kind == model.KindBadRequest {
		return malformedLine(line, strings.TrimPrefix(e.Msg, "the body "))
	}
	return lineError(line, "", e)
}

// lineError turns a check's error into invalid_import for a line, naming the
// field under the line's type ("message.content: must be at most …").
func lineError(line int, object string, e *model.Error) error {
	if len(e.Fields) == 0 {
		return model.InvalidImport(line, e.Msg)
	}
	f := e.Fields[0]
	name := f.Field
	if object != "" {
		name = object + "." + name
	}
	return model.InvalidImport(line, name+": "+f.Message)
}

func malformedLine(line int, msg string) *model.Error {
	field := "line " + strconv.Itoa(line)
	return &model.Error{Kind: model.KindBadRequest, Code: "malformed_json", Msg: field + ": " + msg,
		Fields: []model.FieldError{{Field: field, Message: msg}}}
}

// add checks one line against the ones before it.
func (p *importParser) add(l model.ExportLine) error {
	set := 0
	for _, ok := range []bool{l.Session != nil, l.Message != nil, l.Checkpoint != nil, l.File != nil, l.Compaction != nil,
		l.Embedding != nil, l.CheckpointWrite != nil, l.Counts != nil, l.SHA256 != ""} {
		if ok {
			set++
		}
	}
	rank, known := model.LineOrder[l.Type]
	holds := map[string]bool{model.LineSession: l.Session != nil, model.LineMessage: l.Message != nil,
		model.LineCheckpoint: l.Checkpoint != nil, model.LineFile: l.File != nil, model.LineCompaction: l.Compaction != nil,
		model.LineEmbedding: l.Embedding != nil, model.LineCheckpointWrite: l.CheckpointWrite != nil}
	switch {
	case !known:
		return model.InvalidImport(p.line, fmt.Sprintf("unknown line type %q; want session, file, message, embedding, checkpoint, checkpoint_write, compaction or end", l.Type))
	case set != 1 || !holds[l.Type]:
		return model.InvalidImport(p.line, fmt.Sprintf("a %s line holds %q and nothing else", l.Type, l.Type))
	case p.section == "" && l.Type != model.LineSession:
		return model.InvalidImport(p.line, "the first line must be the session")
	case p.section != "" && l.Type == model.LineSession:
		return model.InvalidImport(p.line, "a second session line: an export holds one session")
	case rank < model.LineOrder[p.section]:
		return model.InvalidImport(p.line, fmt.Sprintf("a %s line after the %s lines: an export holds the session, files, messages, embeddings, checkpoints, checkpoint writes, then compactions",
			l.Type, p.section))
	case p.file != nil && l.Type != model.LineFile:
		return model.InvalidImport(p.line, fmt.Sprintf("file %s ends at %d of its %d bytes: its chunks are missing", p.file.f.ID, p.file.offset, p.file.f.Size))
	}
	p.section = l.Type
	switch l.Type {
	case model.LineSession:
		return p.addSession(*l.Session)
	case model.LineFile:
		return p.addFile(l.File)
	case model.LineMessage:
		return p.addMessage(*l.Message)
	case model.LineCompaction:
		return p.addCompaction(*l.Compaction)
	case model.LineEmbedding:
		return p.addEmbedding(l.Embedding)
	case model.LineCheckpointWrite:
		return p.addCheckpointWrite(*l.CheckpointWrite)
	}
	return p.addCheckpoint(*l.Checkpoint)
}

// addEmbedding checks a message's embedding: a message of the export, once,
// in seq order, with the numbers an append's would need, of the one model
// and length every embedding of a session (its agent's) shares.
func (p *importParser) addEmbedding(x *model.ExportEmbedding) error {
	switch {
	case x.Seq < 1 || x.Seq > p.messages:
		return p.fail("embedding.seq %d is outside the session's messages (1 to %d)", x.Seq, p.messages)
	case x.Seq <= p.embSeq:
		return p.fail("embedding.seq %d is not past the one before it (%d): embeddings come in seq order, one a message", x.Seq, p.embSeq)
	case p.msgIDs[x.MessageID] != p.msgLine+int(x.Seq)-1:
		return p.fail("embedding.message_id %q is not the id of message %d", x.MessageID, x.Seq)
	case x.Model == "" || utf8.RuneCountInString(x.Model) > 256:
		return p.fail("embedding.model must be 1 to 256 characters long")
	}
	if err := model.CheckVector("embedding.embedding", x.Embedding); err != nil {
		return lineError(p.line, "", model.AsError(err))
	}
	if p.embs == 0 {
		p.embModel, p.embDims = x.Model, len(x.Embedding)
	} else if x.Model != p.embModel || len(x.Embedding) != p.embDims {
		return p.fail("embedding of message %d is %d numbers of %q; the session's others are %d of %q (one agent's embeddings share a model)",
			x.Seq, len(x.Embedding), x.Model, p.embDims, p.embModel)
	}
	p.embSeq = x.Seq
	p.embs++
	return nil
}

// fileInProgress is a file whose chunks are being read, hashed as they come.
type fileInProgress struct {
	f      model.File
	offset int64
	h      hash.Hash
}

func (p *importParser) addFile(c *model.ExportFile) error {
	if err := model.CheckExportFile(c); err != nil {
		return lineError(p.line, "", model.AsError(err))
	}
	if p.file == nil {
		switch {
		case p.fileIDs[c.ID]:
			return p.fail("file %s is in the export twice", c.ID)
		case c.Offset != 0:
			return p.fail("file.offset is %d: a file's first line starts at 0", c.Offset)
		}
		p.file = &fileInProgress{f: c.Describe(), h: sha256.New()}
	}
	fp := p.file
	switch {
	case c.Describe() != fp.f:
		return p.fail("file %s begins before file %s ends (at %d of its %d bytes)", c.ID, fp.f.ID, fp.offset, fp.f.Size)
	case c.Offset != fp.offset:
		return p.fail("file.offset is %d, want %d: a file's chunks come in order", c.Offset, fp.offset)
	}
	fp.h.Write(c.Data)
	fp.offset += int64(len(c.Data))
	if fp.offset == fp.f.Size {
		if hex.EncodeToString(fp.h.Sum(nil)) != fp.f.SHA256 {
			return p.fail("file %s: its bytes do not match its sha256", fp.f.ID)
		}
		p.fileIDs[fp.f.ID] = true
		p.files++
		p.file = nil
	}
	return nil
}

func (p *importParser) addCompaction(c model.Compaction) error {
	switch {
	case c.SessionID != p.session.ID:
		return p.fail("compaction.session_id is %q, not the session's id %q", c.SessionID, p.session.ID)
	case p.cmpIDs[c.ID] != 0:
		return p.fail("compaction.id %q repeats line %d", c.ID, p.cmpIDs[c.ID])
	case c.ThroughSeq <= p.cmpSeq:
		return p.fail("compaction.through_seq %d is not past the one before it (%d): compactions come oldest first", c.ThroughSeq, p.cmpSeq)
	case c.ThroughSeq > p.messages:
		return p.fail("compaction.through_seq %d is past the session's %d messages", c.ThroughSeq, p.messages)
	}
	if err := model.CheckStoredCompaction(c); err != nil {
		return lineError(p.line, "compaction", model.AsError(err))
	}
	p.cmpIDs[c.ID] = p.line
	p.cmpSeq = c.ThroughSeq
	p.cmps++
	return nil
}

func (p *importParser) fail(format string, args ...any) error {
	return model.InvalidImport(p.line, fmt.Sprintf(format, args...))
}

func (p *importParser) addSession(ses model.Session) error {
	if err := model.CheckStoredSession(ses); err != nil {
		return lineError(p.line, "session", model.AsError(err))
	}
	p.session = ses
	p.first = p.line
	return nil
}

func (p *importParser) addMessage(m model.Message) error {
	want := p.messages + 1
	switch {
	case m.Seq != want:
		return p.fail("message.seq is %d, want %d: seqs run 1, 2, 3 … without gaps", m.Seq, want)
	case m.SessionID != p.session.ID:
		return p.fail("message.session_id is %q, not the session's id %q", m.SessionID, p.session.ID)
	case p.msgIDs[m.ID] != 0:
		return p.fail("message.id %q repeats line %d", m.ID, p.msgIDs[m.ID])
	}
	if err := model.CheckStoredMessage(m); err != nil {
		return lineError(p.line, "message", model.AsError(err))
	}
	for i, part := range m.Content.Parts {
		if part.FileID != "" && !p.fileIDs[part.FileID] {
			return p.fail("message.content[%d].file_id %s is not among the export's files", i, part.FileID)
		}
	}
	p.tokens += m.Tokens
	p.cost += m.Cost
	if p.tokens > model.MaxTotalTokens || p.cost > model.MaxTotalCost {
		return p.fail("the messages' tokens or cost add up past a session's limits (%d tokens, %g cost)",
			int64(model.MaxTotalTokens), float64(model.MaxTotalCost))
	}
	if p.messages == 0 {
		p.msgLine = p.line
	}
	p.msgIDs[m.ID] = p.line
	p.messages++
	return nil
}

func (p *importParser) addCheckpoint(c model.Checkpoint) error {
	switch {
	case c.SessionID != p.session.ID:
		return p.fail("checkpoint.session_id is %q, not the session's id %q", c.SessionID, p.session.ID)
	case !model.ValidClientID(c.ID):
		return p.fail("checkpoint.id must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	case p.ckpIDs[c.ID] != 0:
		return p.fail("checkpoint.id %q repeats line %d", c.ID, p.ckpIDs[c.ID])
	case c.Iteration < 1:
		return p.fail("checkpoint.iteration must be at least 1")
	case p.lastNS != nil && c.Namespace < *p.lastNS:
		return p.fail("checkpoint.namespace %q comes after %q: checkpoints come by namespace, then oldest first", c.Namespace, *p.lastNS)
	case (p.lastNS == nil || c.Namespace == *p.lastNS) && c.Iteration <= p.lastIter:
		return p.fail("checkpoint.iteration %d is not above the one before it (%d): checkpoints come oldest first", c.Iteration, p.lastIter)
	case c.LastSeq < 0 || c.LastSeq > p.messages:
		return p.fail("checkpoint.last_seq %d is outside the session's messages (0 to %d)", c.LastSeq, p.messages)
	case c.CreatedAt == 0:
		return p.fail("checkpoint.created_at is required")
	}
	if _, err := model.ParseState(c.State); err != nil {
		return lineError(p.line, "checkpoint", model.AsError(err))
	}
	state, err := ckstate.Canonical(c.State)
	if err != nil {
		return p.fail("checkpoint.state must be a JSON object")
	}
	if ckstate.Hash(c.Iteration, c.LastSeq, state) != c.SHA256 {
		return p.fail("checkpoint.sha256 does not match its iteration, last_seq and state")
	}
	if fs := model.Check(model.PatchCheckpoint{Iteration: 1, StatePatch: model.JSON("{}"), Namespace: c.Namespace, ClientID: c.ClientID}); fs != nil {
		return lineError(p.line, "checkpoint", model.AsError(fs))
	}
	p.ckpIDs[c.ID] = p.line
	p.lastIter = c.Iteration
	p.lastNS = &c.Namespace
	p.ckps++
	return nil
}

// finish checks the end line against what was read.
func (p *importParser) finish() error {
	if p.line == 0 {
		return malformedLine(1, "the import is empty; send an export")
	}
	if p.end == nil {
		if p.err != nil {
			return p.err
		}
		return model.InvalidImport(p.line+1, "the stream ends without its end line: it is truncated")
	}
	if p.end.SHA256 != p.sum {
		return model.InvalidImport(p.endLine,
			"sha256 does not match the lines before it: the export was changed or damaged after it was made")
	}
	if p.err != nil {
		return p.err
	}
	if p.section == "" {
		return model.InvalidImport(p.endLine, "the first line must be the session")
	}
	if p.file != nil {
		return model.InvalidImport(p.endLine, fmt.Sprintf("file %s ends at %d of its %d bytes: its chunks are missing", p.file.f.ID, p.file.offset, p.file.f.Size))
	}
	if c := p.end.Counts; c.Messages != p.messages || c.Checkpoints != p.ckps || c.Files != p.files || c.Compactions != p.cmps ||
		c.Embeddings != p.embs || c.CheckpointWrites != p.writes {
		return model.InvalidImport(p.endLine, fmt.Sprintf("counts say %d files, %d messages, %d embeddings, %d checkpoints, %d checkpoint writes and %d compactions; the export holds %d, %d, %d, %d, %d and %d",
			c.Files, c.Messages, c.Embeddings, c.Checkpoints, c.CheckpointWrites, c.Compactions, p.files, p.messages, p.embs, p.ckps, p.writes, p.cmps))
	}
	ses := p.session
	switch {
	case ses.LastSeq != p.messages || ses.MessageCount != p.messages:
		return model.InvalidImport(p.first, fmt.Sprintf("session.last_seq (%d) and session.message_count (%d) must equal the %d messages the export holds",
			ses.LastSeq, ses.MessageCount, p.messages))
	case ses.TotalTokens != p.tokens:
		return model.InvalidImport(p.first, fmt.Sprintf("session.total_tokens is %d but the messages' tokens add up to %d", ses.TotalTokens, p.tokens))
	case math.Abs(ses.TotalCost-p.cost) > 1e-9*math.Max(1, math.Abs(p.cost)):
		// the running total and this sum may differ in the last bits, never more
		return model.InvalidImport(p.first, fmt.Sprintf("session.total_cost is %v but the messages' costs add up to %v", ses.TotalCost, p.cost))
	}
	return nil
}

// Conflict refuses an import over something the tenant already has (an id),
// naming the line that holds it.
func Conflict(line int, format string, args ...any) *model.Error {
	field := "line " + strconv.Itoa(line)
	msg := fmt.Sprintf(format, args...)
	return &model.Error{Kind: model.KindConflict, Code: "conflict", Msg: field + ": " + msg,
		Fields: []model.FieldError{{Field: field, Message: msg}}}
}

// InLine names line in a conflict (as Conflict) and passes any other error as
// it is.
func InLine(line int, err error) error {
	if e := model.AsError(err); e.Kind == model.KindConflict {
		return Conflict(line, "%s", e.Msg)
	}
	return err
}

// MissingFile refuses a message whose part names a file found neither in the
// tenant nor in the export. Parse lets no such export through; a store that
// checks anyway says it in these words.
func MissingFile(line, part int) *model.Error {
	return model.InvalidImport(line, "message.content["+strconv.Itoa(part)+"].file_id: names a file that is neither in this tenant nor in the export")
}

// addCheckpointWrite checks one pending write: what the writes route would
// have stored, once per place (namespace, checkpoint, task, index). Its
// checkpoint need not be in the export: a runtime may record writes first.
func (p *importParser) addCheckpointWrite(w model.ExportCheckpointWrite) error {
	if err := w.Check(); err != nil {
		return lineError(p.line, "checkpoint_write", model.AsError(err))
	}
	key := writePlace{w.Namespace, w.CheckpointID, w.TaskID, w.Idx}
	if p.writeIDs[key] {
		return p.fail("checkpoint_write %q/%q/%q/%d is in the export twice", w.Namespace, w.CheckpointID, w.TaskID, w.Idx)
	}
	if p.writeIDs == nil {
		p.writeIDs = map[writePlace]bool{}
	}
	p.writeIDs[key] = true
	p.writes++
	return nil
}

// writePlace is where a pending write is kept: its table's key in a session.
type writePlace struct {
	namespace, checkpoint, task string
	idx                         int64
}
