package sqlite

import (
	"bytes"
	"context"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// An empty file is a file, whether its bytes come as nil or as an empty slice.
func TestEmptyFileFromNil(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	f, created, err := s.CreateFile(ctx, "t", "", "text/plain", nil)
	if err != nil || !created || f.Size != 0 {
		t.Fatalf("nil bytes: %+v %v %v", f, created, err)
	}
	var buf bytes.Buffer
	if err := s.WriteFile(ctx, "t", "", f.ID, func(model.File) error { return nil }, &buf); err != nil || buf.Len() != 0 {
		t.Errorf("read back: %d bytes, %v", buf.Len(), err)
	}
}
