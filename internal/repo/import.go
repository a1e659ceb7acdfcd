package repo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/logbook/logbook/internal/model"
)

// ImportSession restores a session from an export (see ExportSession) read from
// r: ids, seqs, timestamps, counters, metadata, parent_id and forked_at_seq (as
// plain fields: the imported session stores every message itself) and its
// checkpoints. The whole stream is read and checked before anything is written,
// then one write stores it all or nothing. With opts.AsNew the session, its
// messages and checkpoints get new ids.
//
// Errors: malformed_json (KindBadRequest) for a line that is not JSON,
// invalid_import (KindInvalid) for anything else wrong with the content, the
// checksum or the order of the lines, each naming the line ("line 7"); conflict
// (KindConflict) when the session id, a message id or a checkpoint id exists.
// A failed read of r is KindBadRequest wrapping the reader's error.
func (s *Store) ImportSession(ctx context.Context, tenant string, r io.Reader, opts model.ImportOptions) (model.Session, error) {
	f, err := parseImport(r)
	if err != nil {
		return model.Session{}, err
	}
	if opts.AsNew {
		f.renumber()
	}
	var out model.Session
	err = s.write(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.importTx(ctx, tx, tenant, f)
		return err
	})
	return out, err
}

// importFile is a checked export, ready to insert.
type importFile struct {
	session     model.Session
	metadata    string
	pauseUntil  *int64 // the newest checkpoint's pause_until_ms, kept on the session
	messages    []importMessage
	checkpoints []importCheckpoint
}

type importMessage struct {
	msg       model.Message // Metadata and ToolCalls are dropped once encoded
	toolCalls *string
	metadata  string
	line      int
}

type importCheckpoint struct {
	c    model.Checkpoint
	line int
}

// renumber gives everything new ids; the checkpoints' hashes do not cover ids.
func (f *importFile) renumber() {
	f.session.ID = newID(model.PrefixSession)
	for i := range f.messages {
		f.messages[i].msg.ID = newID(model.PrefixMessage)
		f.messages[i].msg.SessionID = f.session.ID
	}
	for i := range f.checkpoints {
		f.checkpoints[i].c.ID = newID(model.PrefixCheckpoint)
		f.checkpoints[i].c.SessionID = f.session.ID
	}
}

// importParser reads an export line by line. After the first problem it keeps
// reading, only to hash: a damaged file is reported as a checksum mismatch
// rather than as whatever its damage looks like.
type importParser struct {
	f        importFile
	h        hash.Hash
	line     int // the line being read, from 1
	section  string
	msgIDs   map[string]int // id → the line that holds it
	ckpIDs   map[string]int
	lastIter int64
	tokens   int64

	err     error // the first problem found
	end     *model.ExportLine
	endLine int
	sum     string // the hash of the lines before the end line
}

func parseImport(r io.Reader) (*importFile, error) {
	p := &importParser{h: sha256.New(), msgIDs: map[string]int{}, ckpIDs: map[string]int{}}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		raw, err := br.ReadBytes('\n')
		if len(raw) > 0 {
			p.line++
			p.take(raw)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &model.Error{Kind: model.KindBadRequest, Code: "malformed_json",
				Msg: "could not read the import stream", Err: err}
		}
	}
	return p.finish()
}

func (p *importParser) take(raw []byte) {
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
		if p.err == nil && (l.Counts == nil || l.SHA256 == "" || l.Session != nil || l.Message != nil || l.Checkpoint != nil) {
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
	p.err = p.add(l)
}

// decodeLine reads one line under the rules every request body follows
// (model.DecodeJSON): exact field names, no unknown or repeated fields, valid
// UTF-8, free-form values at most model.MaxJSONDepth deep.
func decodeLine(line int, raw []byte, l *model.ExportLine) error {
	err := model.DecodeJSON(raw, l)
	if err == nil {
		return nil
	}
	e := model.AsError(err)
	if e.Kind == model.KindBadRequest {
		return malformedLine(line, strings.TrimPrefix(e.Msg, "the body "))
	}
	if len(e.Fields) > 0 {
		return model.InvalidImport(line, e.Fields[0].Field+": "+e.Fields[0].Message)
	}
	return model.InvalidImport(line, e.Msg)
}

func malformedLine(line int, msg string) *model.Error {
	field := "line " + itoa(int64(line))
	return &model.Error{Kind: model.KindBadRequest, Code: "malformed_json", Msg: field + ": " + msg,
		Fields: []model.FieldError{{Field: field, Message: msg}}}
}

// add checks one line against the ones before it and keeps it.
func (p *importParser) add(l model.ExportLine) error {
	set := 0
	for _, ok := range []bool{l.Session != nil, l.Message != nil, l.Checkpoint != nil, l.Counts != nil, l.SHA256 != ""} {
		if ok {
			set++
		}
	}
	switch {
	case l.Type != model.LineSession && l.Type != model.LineMessage && l.Type != model.LineCheckpoint:
		return model.InvalidImport(p.line, fmt.Sprintf("unknown line type %q; want session, message, checkpoint or end", l.Type))
	case set != 1 || (l.Type == model.LineSession) != (l.Session != nil) ||
		(l.Type == model.LineMessage) != (l.Message != nil) || (l.Type == model.LineCheckpoint) != (l.Checkpoint != nil):
		return model.InvalidImport(p.line, fmt.Sprintf("a %s line holds %q and nothing else", l.Type, l.Type))
	case p.section == "" && l.Type != model.LineSession:
		return model.InvalidImport(p.line, "the first line must be the session")
	case p.section != "" && l.Type == model.LineSession:
		return model.InvalidImport(p.line, "a second session line: an export holds one session")
	case p.section == model.LineCheckpoint && l.Type == model.LineMessage:
		return model.InvalidImport(p.line, "a message after the checkpoints: messages come first")
	}
	p.section = l.Type
	switch l.Type {
	case model.LineSession:
		return p.addSession(*l.Session)
	case model.LineMessage:
		return p.addMessage(*l.Message)
	}
	return p.addCheckpoint(*l.Checkpoint)
}

func (p *importParser) fail(format string, args ...any) error {
	return model.InvalidImport(p.line, fmt.Sprintf(format, args...))
}

func (p *importParser) addSession(ses model.Session) error {
	switch {
	case !model.ValidClientID(ses.ID):
		return p.fail("session.id must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	case !ses.Status.Valid():
		return p.fail("session.status must be one of: created, active, completed, archived")
	case ses.MessageCount < 0 || ses.LastSeq < 0 || ses.TotalTokens < 0 || ses.TotalCost < 0:
		return p.fail("session counters must not be negative")
	case ses.ForkedAtSeq != nil && *ses.ForkedAtSeq < 0:
		return p.fail("session.forked_at_seq must not be negative")
	case ses.CreatedAt == 0 || ses.UpdatedAt == 0:
		return p.fail("session.created_at and session.updated_at are required")
	}
	if ses.Metadata == nil {
		ses.Metadata = model.Object("{}")
	}
	p.f.session, p.f.metadata = ses, ses.Metadata.String()
	return nil
}

func (p *importParser) addMessage(m model.Message) error {
	want := int64(len(p.f.messages)) + 1
	switch {
	case m.Seq != want:
		return p.fail("message.seq is %d, want %d: seqs run 1, 2, 3 … without gaps", m.Seq, want)
	case m.SessionID != p.f.session.ID:
		return p.fail("message.session_id is %q, not the session's id %q", m.SessionID, p.f.session.ID)
	case !model.ValidClientID(m.ID):
		return p.fail("message.id must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	case p.msgIDs[m.ID] != 0:
		return p.fail("message.id %q repeats line %d", m.ID, p.msgIDs[m.ID])
	case m.Role != model.RoleUser && m.Role != model.RoleAssistant && m.Role != model.RoleSystem && m.Role != model.RoleTool:
		return p.fail("message.role must be one of: user, assistant, system, tool")
	case m.Tokens < 0 || m.Cost < 0:
		return p.fail("message.tokens and message.cost must not be negative")
	case m.CreatedAt == 0:
		return p.fail("message.created_at is required")
	}
	row := importMessage{msg: m, line: p.line}
	row.metadata = m.Metadata.String()
	if m.ToolCalls != nil {
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return p.fail("message.tool_calls: %v", err)
		}
		tc := string(b)
		row.toolCalls = &tc
	}
	row.msg.Metadata, row.msg.ToolCalls = nil, nil
	p.msgIDs[m.ID] = p.line
	p.tokens += m.Tokens
	p.f.messages = append(p.f.messages, row)
	return nil
}

func (p *importParser) addCheckpoint(c model.Checkpoint) error {
	n := int64(len(p.f.messages))
	switch {
	case c.SessionID != p.f.session.ID:
		return p.fail("checkpoint.session_id is %q, not the session's id %q", c.SessionID, p.f.session.ID)
	case !model.ValidClientID(c.ID):
		return p.fail("checkpoint.id must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	case p.ckpIDs[c.ID] != 0:
		return p.fail("checkpoint.id %q repeats line %d", c.ID, p.ckpIDs[c.ID])
	case c.Iteration < 1:
		return p.fail("checkpoint.iteration must be at least 1")
	case c.Iteration <= p.lastIter:
		return p.fail("checkpoint.iteration %d is not above the one before it (%d): checkpoints come oldest first", c.Iteration, p.lastIter)
	case c.LastSeq < 0 || c.LastSeq > n:
		return p.fail("checkpoint.last_seq %d is outside the session's messages (0 to %d)", c.LastSeq, n)
	case c.CreatedAt == 0:
		return p.fail("checkpoint.created_at is required")
	}
	state, err := canonicalJSON(c.State)
	if err != nil {
		return p.fail("checkpoint.state must be a JSON object")
	}
	var st model.CheckpointState
	if err := json.Unmarshal(state, &st); err != nil {
		return p.fail("checkpoint.state: %v", err)
	}
	if checkpointHash(c.Iteration, c.LastSeq, state) != c.SHA256 {
		return p.fail("checkpoint.sha256 does not match its iteration, last_seq and state")
	}
	c.State = state
	p.ckpIDs[c.ID] = p.line
	p.lastIter = c.Iteration
	p.f.pauseUntil = st.PauseUntilMs
	p.f.checkpoints = append(p.f.checkpoints, importCheckpoint{c: c, line: p.line})
	return nil
}

// finish checks the end line against what was read.
func (p *importParser) finish() (*importFile, error) {
	if p.line == 0 {
		return nil, malformedLine(1, "the import is empty; send an export")
	}
	if p.end == nil {
		if p.err != nil {
			return nil, p.err
		}
		return nil, model.InvalidImport(p.line+1, "the stream ends without its end line: it is truncated")
	}
	if p.end.SHA256 != p.sum {
		return nil, model.InvalidImport(p.endLine,
			"sha256 does not match the lines before it: the export was changed or damaged after it was made")
	}
	if p.err != nil {
		return nil, p.err
	}
	if p.section == "" {
		return nil, model.InvalidImport(p.endLine, "the first line must be the session")
	}
	msgs, ckps := int64(len(p.f.messages)), int64(len(p.f.checkpoints))
	if c := p.end.Counts; c.Messages != msgs || c.Checkpoints != ckps {
		return nil, model.InvalidImport(p.endLine, fmt.Sprintf("counts say %d messages and %d checkpoints; the export holds %d and %d",
			c.Messages, c.Checkpoints, msgs, ckps))
	}
	ses := p.f.session
	switch {
	case ses.LastSeq != msgs || ses.MessageCount != msgs:
		return nil, model.InvalidImport(1, fmt.Sprintf("session.last_seq (%d) and session.message_count (%d) must equal the %d messages the export holds",
			ses.LastSeq, ses.MessageCount, msgs))
	case ses.TotalTokens != p.tokens:
		return nil, model.InvalidImport(1, fmt.Sprintf("session.total_tokens is %d but the messages' tokens add up to %d", ses.TotalTokens, p.tokens))
	}
	return &p.f, nil
}

func importConflict(line int, format string, args ...any) *model.Error {
	field := "line " + itoa(int64(line))
	msg := fmt.Sprintf(format, args...)
	return &model.Error{Kind: model.KindConflict, Code: "conflict", Msg: field + ": " + msg,
		Fields: []model.FieldError{{Field: field, Message: msg}}}
}

// importTx inserts a checked export. Any failure undoes the whole write (its
// savepoint), so a refused import leaves nothing behind.
func (s *Store) importTx(ctx context.Context, tx *sql.Tx, tenant string, f *importFile) (model.Session, error) {
	if err := s.faults.check(PointSessionWrite); err != nil {
		return model.Session{}, err
	}
	// Another process (the CLI) may have numbered messages since this store
	// opened; start above whatever the file holds.
	var maxGID int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(gid), 0) FROM messages`).Scan(&maxGID); err != nil {
		return model.Session{}, err
	}
	s.gid = max(s.gid, maxGID)

	ses := f.session
	var closedAt *int64
	if ses.ClosedAt != nil {
		c := int64(*ses.ClosedAt)
		closedAt = &c
	}
	// fts_seq 0: the idle-time indexer indexes the imported messages.
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (tenant_id, id, agent_id, title, status, metadata, message_count,
		last_seq, total_tokens, total_cost, parent_id, forked_at_seq, prefix_shared, fts_seq, pause_until,
		created_at, updated_at, closed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?)`,
		tenant, ses.ID, ses.AgentID, ses.Title, ses.Status, f.metadata, ses.MessageCount, ses.LastSeq,
		ses.TotalTokens, ses.TotalCost, ses.ParentID, ses.ForkedAtSeq, f.pauseUntil,
		int64(ses.CreatedAt), int64(ses.UpdatedAt), closedAt)
	if isConstraint(err) {
		return model.Session{}, importConflict(1, "a session with id %q already exists", ses.ID)
	}
	if err != nil {
		return model.Session{}, err
	}

	insert := tx.StmtContext(ctx, s.st.insertMessage)
	var (
		cumTokens int64
		cumCost   float64
	)
	for _, r := range f.messages {
		m := &r.msg
		cumTokens, cumCost = cumTokens+m.Tokens, cumCost+m.Cost
		_, err := insert.ExecContext(ctx, tenant, ses.ID, m.Seq, m.ID, m.Role, m.Content, m.Name, r.toolCalls,
			m.ToolCallID, m.AgentID, m.Model, m.Tokens, m.Cost, r.metadata, int64(m.CreatedAt), nil, nil,
			s.nextGID(), cumTokens, cumCost)
		if isConstraint(err) {
			return model.Session{}, importConflict(r.line, "a message with id %q already exists", m.ID)
		}
		if err != nil {
			return model.Session{}, err
		}
	}

	for _, ic := range f.checkpoints {
		c := &ic.c
		_, err := tx.ExecContext(ctx, `INSERT INTO checkpoints (tenant_id, session_id, iteration, id, state, last_seq, sha256, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, tenant, ses.ID, c.Iteration, c.ID, string(c.State), c.LastSeq, c.SHA256, int64(c.CreatedAt))
		if isConstraint(err) {
			return model.Session{}, importConflict(ic.line, "a checkpoint with id %q already exists", c.ID)
		}
		if err != nil {
			return model.Session{}, err
		}
	}
	return getSession(ctx, tx, tenant, ses.ID)
}
