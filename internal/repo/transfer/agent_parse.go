package transfer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strconv"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// ParseAgent reads an agent export from r once, a line at a time, as Parse
// reads a session export: each line checked with the rules the API applies to
// the same data, its sessions by the very checks a session import runs, and
// kept in a Spool that is returned only when the whole stream checks out,
// checksum and counts included. The spool holds every line before the
// agent_end line, the header and each session's end line included, so that a
// line read back has its number in the export.
//
// Errors: as Parse's (malformed_json, invalid_import naming the line).
func ParseAgent(r io.Reader) (*Spool, error) {
	sp := &Spool{}
	if err := parseAgentInto(r, sp); err != nil {
		sp.Close()
		return nil, err
	}
	return sp, nil
}

// agentParser checks an agent export line by line; a session's lines go to an
// importParser of their own. After the first problem it keeps reading, only to
// hash, as importParser does.
type agentParser struct {
	sp      *Spool
	h       hash.Hash
	line    int
	section string
	agent   *model.ExportAgent
	counts  model.AgentExportCounts
	labels  map[string]int // block label → its line
	passIDs map[string]int
	sesIDs  map[string]int
	ses     *importParser // the session whose lines are being read

	err     error
	end     *model.AgentExportLine
	endLine int
	sum     string
}

func parseAgentInto(r io.Reader, sp *Spool) error {
	p := &agentParser{sp: sp, h: sha256.New(), labels: map[string]int{}, passIDs: map[string]int{}, sesIDs: map[string]int{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
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
			return &model.Error{Kind: model.KindBadRequest, Code: "malformed_json",
				Msg: "could not read the import stream", Err: err}
		}
	}
	return p.finish()
}

func (p *agentParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = model.InvalidImport(p.line, fmt.Sprintf(format, args...))
	}
}

func (p *agentParser) take(raw []byte, whole bool) {
	if !whole { // readLine has hashed it
		p.fail("the line is longer than %d bytes: no export line can be", MaxLine)
		return
	}
	if p.end != nil {
		if len(trimSpace(raw)) > 0 {
			p.fail("data after the agent_end line")
		}
		return
	}
	typ, perr := lineType(raw)
	if perr == nil && typ == model.LineAgentEnd {
		var l model.AgentExportLine
		p.end, p.endLine, p.sum = &l, p.line, hex.EncodeToString(p.h.Sum(nil))
		if err := decodeLine(p.line, raw, &l); err != nil {
			if p.err == nil {
				p.err = err
			}
			return
		}
		if l.Counts == nil || l.SHA256 == "" || l.Agent != nil || l.Block != nil || l.Passage != nil || l.Format != "" || l.Version != 0 {
			p.fail(`an agent_end line holds "counts" and "sha256" and nothing else`)
		}
		return
	}
	p.h.Write(raw)
	if p.err != nil {
		return
	}
	if perr != nil {
		if raw[len(raw)-1] != '\n' {
			p.fail("the stream ends in the middle of a line: it is truncated")
			return
		}
		p.err = decodeLine(p.line, raw, &model.AgentExportLine{})
		if p.err == nil {
			p.err = malformedLine(p.line, "is not JSON")
		}
		return
	}
	if p.ses == nil && typ == model.LineSession {
		p.startSession()
	}
	if p.ses != nil {
		p.sessionLine(raw)
		return
	}
	var l model.AgentExportLine
	if err := decodeLine(p.line, raw, &l); err != nil {
		p.err = err
		return
	}
	if p.err = p.add(l); p.err == nil {
		p.err = p.sp.write(raw)
	}
}

// startSession begins a session's lines, after the agent's own.
func (p *agentParser) startSession() {
	switch {
	case p.agent == nil:
		p.fail("a session line before the agent line: an agent export holds the header, the agent, its blocks, its passages, then its sessions")
		return
	case p.counts.Sessions >= model.MaxAgentExportSessions:
		p.fail("more than %d sessions: an agent export holds at most that many", model.MaxAgentExportSessions)
		return
	}
	p.section = model.LineSession
	p.ses = newImportParser(p.sp)
}

// sessionLine hands one line to the session's parser, which spools it; the
// session's end line, which that parser does not spool, is spooled here, so
// that an import knows where each session ends.
func (p *agentParser) sessionLine(raw []byte) {
	s := p.ses
	s.line = p.line
	s.take(raw, true)
	if s.err != nil {
		p.err = s.err
		return
	}
	if s.end == nil {
		return
	}
	p.ses = nil
	if err := s.finish(); err != nil {
		p.err = err
		return
	}
	ses := s.session
	switch {
	case ses.AgentID == nil || *ses.AgentID != p.agent.ID:
		p.err = model.InvalidImport(s.first, fmt.Sprintf("session.agent_id must be the agent's id %q", p.agent.ID))
		return
	case p.sesIDs[ses.ID] != 0:
		p.err = model.InvalidImport(s.first, fmt.Sprintf("session.id %q repeats line %d", ses.ID, p.sesIDs[ses.ID]))
		return
	}
	p.sesIDs[ses.ID] = s.first
	p.counts.Sessions++
	p.err = p.sp.write(raw)
}

// add checks one of the agent's own lines against the ones before it.
func (p *agentParser) add(l model.AgentExportLine) error {
	set := 0
	for _, ok := range []bool{l.Agent != nil, l.Block != nil, l.Passage != nil, l.Counts != nil, l.SHA256 != "", l.Format != "" || l.Version != 0} {
		if ok {
			set++
		}
	}
	rank, known := model.AgentLineOrder[l.Type]
	holds := map[string]bool{model.LineAgentHeader: l.Format != "" || l.Version != 0, model.LineAgent: l.Agent != nil,
		model.LineBlock: l.Block != nil, model.LinePassage: l.Passage != nil}
	fail := func(format string, args ...any) error {
		return model.InvalidImport(p.line, fmt.Sprintf(format, args...))
	}
	switch {
	case !known || l.Type == model.LineSession:
		return fail("unknown line type %q; want header, agent, block, passage, session (and a session's lines) or agent_end", l.Type)
	case set != 1 || !holds[l.Type]:
		if l.Type == model.LineAgentHeader {
			return fail(`a header line holds "format" and "version" and nothing else`)
		}
		return fail("a %s line holds %q and nothing else", l.Type, l.Type)
	case p.section == "" && l.Type != model.LineAgentHeader:
		return fail(`the first line must be the header {"type":"header","format":%q,"version":%d}`, model.AgentExportFormat, model.AgentExportVersion)
	case p.section != "" && (l.Type == model.LineAgentHeader || l.Type == model.LineAgent) && p.section != model.LineAgentHeader:
		return fail("a second %s line: an agent export holds one", l.Type)
	case p.section == model.LineAgentHeader && l.Type != model.LineAgent:
		return fail("the line after the header must be the agent")
	case rank < model.AgentLineOrder[p.section]:
		return fail("a %s line after the %s lines: an agent export holds the header, the agent, its blocks, its passages, then its sessions",
			l.Type, p.section)
	}
	p.section = l.Type
	switch l.Type {
	case model.LineAgentHeader:
		if l.Format != model.AgentExportFormat || l.Version != model.AgentExportVersion {
			return fail("format %q version %d: this server reads format %q version %d", l.Format, l.Version,
				model.AgentExportFormat, model.AgentExportVersion)
		}
		return nil
	case model.LineAgent:
		return p.addAgent(l.Agent)
	case model.LineBlock:
		return p.addBlock(l.Block)
	}
	return p.addPassage(l.Passage)
}

func (p *agentParser) addAgent(a *model.ExportAgent) error {
	in := model.CreateAgent{ID: a.ID, Name: a.Name, AgentType: a.AgentType, Model: a.Model, System: a.System,
		ToolIDs: a.ToolIDs, Tags: a.Tags, Metadata: a.Metadata}
	if err := model.Check(&in); err != nil {
		return lineError(p.line, "agent", model.AsError(err))
	}
	fail := func(field, msg string) error { return model.InvalidImport(p.line, "agent."+field+": "+msg) }
	switch {
	case a.ID == "":
		return fail("id", "is required")
	case a.AgentType == "":
		return fail("agent_type", "is required")
	case a.CreatedAt == 0 || a.UpdatedAt == 0:
		return fail("created_at", "and updated_at are required")
	case (a.EmbeddingModel == nil) != (a.EmbeddingDims == nil):
		return fail("embedding_model", "and embedding_dims come both or neither")
	case a.EmbeddingModel != nil && (*a.EmbeddingModel == "" || len(*a.EmbeddingModel) > 256):
		return fail("embedding_model", "must be 1 to 256 characters long")
	case a.EmbeddingDims != nil && (*a.EmbeddingDims < 1 || *a.EmbeddingDims > 8192):
		return fail("embedding_dims", "must be 1 to 8192")
	}
	p.agent = a
	return nil
}

func (p *agentParser) addBlock(b *model.ExportBlock) error {
	fail := func(field, msg string) error { return model.InvalidImport(p.line, "block."+field+": "+msg) }
	in := model.PutBlock{Value: b.Value, Limit: b.Limit, Description: b.Description, ReadOnly: b.ReadOnly}
	if err := model.Check(&in); err != nil {
		return lineError(p.line, "block", model.AsError(err))
	}
	switch {
	case !model.ValidClientID(b.ID):
		return fail("id", "must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	case !model.ValidLabel(b.Label):
		return fail("label", "must be 1 to 64 characters of A-Z a-z 0-9 _ . : -")
	case p.labels[b.Label] != 0:
		return fail("label", fmt.Sprintf("%q repeats line %d", b.Label, p.labels[b.Label]))
	case b.Limit < 1:
		return fail("limit", "must be at least 1")
	case b.Version < 1:
		return fail("version", "must be at least 1")
	case b.UpdatedAt == 0:
		return fail("updated_at", "is required")
	case p.counts.Blocks >= model.MaxAgentExportBlocks:
		return fail("label", "more than "+strconv.Itoa(model.MaxAgentExportBlocks)+" blocks: an agent export holds at most that many")
	}
	if err := model.CheckLimit(b.Label, b.Value, b.Limit); err != nil {
		return lineError(p.line, "block", model.AsError(err))
	}
	p.labels[b.Label] = p.line
	p.counts.Blocks++
	return nil
}

func (p *agentParser) addPassage(ps *model.ExportPassage) error {
	fail := func(field, msg string) error { return model.InvalidImport(p.line, "passage."+field+": "+msg) }
	in := model.CreatePassage{Content: ps.Content, Tags: ps.Tags, Metadata: ps.Metadata, ExpiresAt: ps.ExpiresAt,
		Embedding: ps.Embedding, EmbeddingModel: ps.EmbeddingModel}
	if err := model.Check(&in); err != nil {
		return lineError(p.line, "passage", model.AsError(err))
	}
	pinModel, pinDims := "", 0
	if p.agent.EmbeddingModel != nil {
		pinModel, pinDims = *p.agent.EmbeddingModel, *p.agent.EmbeddingDims
	}
	if err := repo.CheckEmbedding(in, pinModel, pinDims); err != nil {
		return lineError(p.line, "passage", model.AsError(err))
	}
	switch {
	case !model.ValidClientID(ps.ID):
		return fail("id", "must be 1 to 128 characters of A-Z a-z 0-9 _ . : -")
	case p.passIDs[ps.ID] != 0:
		return fail("id", fmt.Sprintf("%q repeats line %d", ps.ID, p.passIDs[ps.ID]))
	case ps.CreatedAt == 0:
		return fail("created_at", "is required")
	case len(ps.Embedding) > 0 && pinDims == 0:
		return fail("embedding", "the agent line pins no embedding_model: a passage with an embedding needs one")
	}
	p.passIDs[ps.ID] = p.line
	p.counts.Passages++
	return nil
}

// finish checks the agent_end line against what was read.
func (p *agentParser) finish() error {
	if p.line == 0 {
		return malformedLine(1, "the import is empty; send an agent export")
	}
	if p.end == nil {
		if p.err != nil {
			return p.err
		}
		return model.InvalidImport(p.line+1, "the stream ends without its agent_end line: it is truncated")
	}
	if p.end.SHA256 != p.sum {
		return model.InvalidImport(p.endLine,
			"sha256 does not match the lines before it: the export was changed or damaged after it was made")
	}
	if p.err != nil {
		return p.err
	}
	switch {
	case p.agent == nil:
		return model.InvalidImport(p.endLine, "the export holds no agent line")
	case p.ses != nil:
		return model.InvalidImport(p.endLine, fmt.Sprintf("the session of line %d has no end line: it is truncated", p.ses.first))
	}
	if c := p.end.Counts; *c != p.counts {
		return model.InvalidImport(p.endLine, fmt.Sprintf("counts say %d blocks, %d passages and %d sessions; the export holds %d, %d and %d",
			c.Blocks, c.Passages, c.Sessions, p.counts.Blocks, p.counts.Passages, p.counts.Sessions))
	}
	return nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}

// lineType reads a line's "type" without decoding the rest: at once when the
// line begins with it, as every line an export writes does, else by decoding
// the line (loosely: the line's own checks come after).
func lineType(raw []byte) (string, error) {
	const prefix = `{"type":"`
	if bytes.HasPrefix(raw, []byte(prefix)) {
		rest := raw[len(prefix):]
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return string(rest[:i]), nil
		}
	}
	var peek struct {
		Type string `json:"type"`
	}
	err := json.Unmarshal(raw, &peek)
	return peek.Type, err
}

// InheritedThrough is the seq up to which a session's messages are a fork's
// inherited ones whose parent this import has stored already (0: none). The
// export gives them the parent's message ids, which the parent now holds, so
// they are stored under new ones.
func InheritedThrough(ses *model.Session, imported map[string]bool) int64 {
	if ses.ParentID == nil || ses.ForkedAtSeq == nil || !imported[*ses.ParentID] {
		return 0
	}
	return *ses.ForkedAtSeq
}
