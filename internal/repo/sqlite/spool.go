package sqlite

import (
	"bufio"
	"bytes"
	"io"
	"os"
)

// spoolMemory is how much of an import is kept in memory before the spool moves
// to a temporary file: small imports, the usual case, touch no file.
const spoolMemory = 4 << 20

// spool keeps the checked lines of an import between the pass that checks them
// and the write that stores them, in memory up to spoolMemory and in a
// temporary file past it, so that an import's memory does not grow with its size.
type spool struct {
	mem  bytes.Buffer
	file *os.File
	w    *bufio.Writer
}

func (s *spool) write(p []byte) error {
	if s.file == nil && s.mem.Len()+len(p) <= spoolMemory {
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

// reader reads back everything written, from the start.
func (s *spool) reader() (*bufio.Reader, error) {
	if s.file == nil {
		return bufio.NewReader(bytes.NewReader(s.mem.Bytes())), nil
	}
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return bufio.NewReaderSize(s.file, 64<<10), nil
}

// close removes the temporary file, if there is one.
func (s *spool) close() {
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
	}
}
