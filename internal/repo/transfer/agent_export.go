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

// AgentWriter writes the lines of an agent export (see model.AgentExportLine)
// and hashes every byte it writes, its sessions' lines included, so that both
// backends write the same bytes for the same agent. The caller writes the
// agent, its blocks, its passages, then each session through Session, then End.
type AgentWriter struct {
	w      io.Writer
	h      hash.Hash
	counts model.AgentExportCounts
}

// NewAgentWriter starts an agent export on w with its header line.
func NewAgentWriter(w io.Writer) (*AgentWriter, error) {
	e := &AgentWriter{w: w, h: sha256.New()}
	return e, e.line(model.AgentExportLine{Type: model.LineAgentHeader, Format: model.AgentExportFormat, Version: model.AgentExportVersion})
}

// Write hashes and writes bytes of the export: a session's Writer writes through it.
func (e *AgentWriter) Write(p []byte) (int, error) {
	e.h.Write(p)
	n, err := e.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("export: write: %w", err)
	}
	return n, nil
}

func (e *AgentWriter) line(l model.AgentExportLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return model.Internal(err)
	}
	_, err = e.Write(append(b, '\n'))
	return err
}

// Agent writes the agent line.
func (e *AgentWriter) Agent(a *model.ExportAgent) error {
	return e.line(model.AgentExportLine{Type: model.LineAgent, Agent: a})
}

// Block writes one block line.
func (e *AgentWriter) Block(b *model.ExportBlock) error {
	e.counts.Blocks++
	return e.line(model.AgentExportLine{Type: model.LineBlock, Block: b})
}

// Passage writes one passage line.
func (e *AgentWriter) Passage(p *model.ExportPassage) error {
	e.counts.Passages++
	return e.line(model.AgentExportLine{Type: model.LinePassage, Passage: p})
}

// Session starts one session's lines: the caller writes them as a session
// export does, its End included.
func (e *AgentWriter) Session() *Writer {
	e.counts.Sessions++
	return NewWriter(e)
}

// End writes the agent_end line: the counts and the SHA-256 of every byte before it.
func (e *AgentWriter) End() error {
	end, _ := json.Marshal(model.AgentExportLine{Type: model.LineAgentEnd, Counts: &e.counts, SHA256: hex.EncodeToString(e.h.Sum(nil))})
	if _, err := e.w.Write(append(end, '\n')); err != nil {
		return fmt.Errorf("export: write: %w", err)
	}
	return nil
}
