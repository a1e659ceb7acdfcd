package transfer

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/logbook/logbook/internal/model"
)

// SpoolMemory is how much of an import is kept in memory before the spool moves
// to a temporary file: small imports, the usual case, touch no file.
const SpoolMemory = 4 << 20

// Spool keeps the checked lines of an import between the pass that checks them
// and the write that stores them, in memory up to SpoolMemory and in a
// temporary file past it, so that an import's memory does not grow with its size.
type Spool struct {
	mem  bytes.Buffer
	file *os.File
	w    *bufio.Writer
}

func (s *Spool) write(p []byte) error {
	if s.file == nil && s.mem.Len()+len(p) <= SpoolMemory {
		s.mem.Write(p)
		return nil
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "logbook-import-*")
		if err != nil {
			return err
		}
		s.file, s.w = f, bufio.NewWriterSize(f, 64<<10)
		if _, err := s.w.Write(s.mem.Bytes()); err != nil {
			return err
		}
		s.mem = bytes.Buffer{}
	}
	_, err := s.w.Write(p)
	return err
}

// Lines reads back everything spooled, from the start. A write that is tried
// again (a transaction retried) calls it again.
func (s *Spool) Lines() (*SpoolLines, error) {
	if s.file == nil {
		return &SpoolLines{br: bufio.NewReader(bytes.NewReader(s.mem.Bytes()))}, nil
	}
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return &SpoolLines{br: bufio.NewReaderSize(s.file, 64<<10)}, nil
}

// Close removes the temporary file, if there is one. A nil Spool is closed.
func (s *Spool) Close() {
	if s != nil && s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
		s.file = nil
	}
}

// SpoolLines hands back the spooled lines of a checked export, decoded. The
// spool holds every line before the end line and nothing else, so a line's
// number is the one it had in the export, and conflicts found while storing
// it can name it.
type SpoolLines struct {
	br   *bufio.Reader
	line int
}

// Next returns the next line and its number, or io.EOF after the last.
// Anything else is an internal error: the lines were checked once already.
func (r *SpoolLines) Next() (line int, l model.ExportLine, err error) {
	raw, err := r.br.ReadBytes('\n')
	if err == io.EOF && len(raw) == 0 {
		return 0, l, io.EOF
	}
	if err != nil && err != io.EOF {
		return 0, l, model.Internal(err)
	}
	r.line++
	if err := model.DecodeJSON(raw, &l); err != nil {
		return 0, l, model.Internal(fmt.Errorf("spooled line %d no longer decodes: %w", r.line, err))
	}
	return r.line, l, nil
}

// NextAgent returns the next line of a spooled agent export: one of the
// agent's own lines (a.Type set), or else a line of one of its sessions, its
// end line included (l). io.EOF after the last.
func (r *SpoolLines) NextAgent() (line int, a model.AgentExportLine, l model.ExportLine, err error) {
	raw, err := r.br.ReadBytes('\n')
	if err == io.EOF && len(raw) == 0 {
		return 0, a, l, io.EOF
	}
	if err != nil && err != io.EOF {
		return 0, a, l, model.Internal(err)
	}
	r.line++
	typ, err := lineType(raw)
	if err != nil {
		return 0, a, l, model.Internal(fmt.Errorf("spooled line %d no longer decodes: %w", r.line, err))
	}
	if _, own := model.AgentLineOrder[typ]; own && typ != model.LineSession {
		err = model.DecodeJSON(raw, &a)
	} else {
		err = model.DecodeJSON(raw, &l)
	}
	if err != nil {
		return 0, a, l, model.Internal(fmt.Errorf("spooled line %d no longer decodes: %w", r.line, err))
	}
	return r.line, a, l, nil
}
