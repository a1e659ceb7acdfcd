package postgres_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

func TestFilesCreatePG(t *testing.T) {
	st, url := keysFilesOpen(t, nil)
	conn := keysFilesRaw(t, url)
	big := bytes.Repeat([]byte("\x00\x01binary\xff"), 100_000) // ~1 MiB: four chunks
	cases := []struct {
		name, tenant, mediaType string
		data                    []byte
		created                 bool
		chunks                  int // the tenant's stored chunks of these bytes afterwards
	}{
		{"first", "a", "application/pdf", big, true, 4},
		{"same_again", "a", "application/pdf", big, false, 4},
		{"same_bytes_other_type", "a", "application/octet-stream", big, true, 4},
		{"same_bytes_other_tenant", "b", "application/pdf", big, true, 4},
		{"empty", "a", "text/plain; charset=utf-8", nil, true, 1},
		{"empty_again", "a", "text/plain; charset=utf-8", []byte{}, false, 1},
		{"one_chunk_exactly", "a", "text/plain", bytes.Repeat([]byte("x"), 256<<10), true, 1},
		{"one_byte_over", "a", "text/plain", bytes.Repeat([]byte("x"), 256<<10+1), true, 2},
	}
	first := map[string]model.File{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, created, err := st.CreateFile(t.Context(), c.tenant, "", c.mediaType, c.data)
			if err != nil || created != c.created {
				t.Fatalf("CreateFile: created %v, %v; want created %v", created, err, c.created)
			}
			sum := sha256.Sum256(c.data)
			if f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != int64(len(c.data)) || f.MediaType != c.mediaType ||
				f.ID != model.FileIDOf(f.SHA256, c.mediaType) || f.CreatedAt == 0 {
				t.Fatalf("file %+v", f)
			}
			key := c.tenant + " " + f.ID
			if old, ok := first[key]; ok && old != f {
				t.Fatalf("again: %+v, first %+v", f, old)
			}
			first[key] = f
			if got, err := st.GetFile(t.Context(), c.tenant, "", f.ID); err != nil || got != f {
				t.Fatalf("GetFile: %+v, %v; want %+v", got, err, f)
			}
			if n := keysFilesCount(t, conn, `SELECT count(*) FROM file_chunks WHERE tenant_id = $1 AND sha256 = $2`,
				c.tenant, f.SHA256); n != c.chunks {
				t.Fatalf("%d chunks stored, want %d", n, c.chunks)
			}
			var buf bytes.Buffer
			if err := st.WriteFile(t.Context(), c.tenant, "", f.ID, func(model.File) error { return nil }, &buf); err != nil ||
				!bytes.Equal(buf.Bytes(), c.data) {
				t.Fatalf("WriteFile: %d bytes, %v; want %d", buf.Len(), err, len(c.data))
			}
		})
	}
	// a's big file, b's and a's other type's: one copy of the bytes per tenant.
	if n := keysFilesCount(t, conn, `SELECT count(*) FROM files`); n != 6 {
		t.Errorf("%d files, want 6", n)
	}
}

func TestFilesGetAndWritePG(t *testing.T) {
	st, url := keysFilesOpen(t, nil)
	data := bytes.Repeat([]byte("0123456789"), 60_000) // three chunks
	f, _, err := st.CreateFile(t.Context(), "a", "", "image/png", data)
	if err != nil {
		t.Fatal(err)
	}
	missing := "file_00000000000000000000000000000000"
	errHead := errors.New("the client went away")
	cases := []struct {
		name, tenant, id string
		head             func(model.File) error
		wantErr          error
		wantBytes        []byte
	}{
		{"whole", "a", f.ID, nil, nil, data},
		{"head_first", "a", f.ID, func(got model.File) error {
			if got != f {
				return errors.New("head got another file")
			}
			return nil
		}, nil, data},
		{"head_fails", "a", f.ID, func(model.File) error { return errHead }, errHead, nil},
		{"missing", "a", missing, nil, model.NotFound("file", missing), nil},
		{"other_tenant", "b", f.ID, nil, model.NotFound("file", f.ID), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			headed := false
			err := st.WriteFile(t.Context(), c.tenant, "", c.id, func(got model.File) error {
				if buf.Len() != 0 {
					t.Error("head called after bytes")
				}
				headed = true
				if c.head != nil {
					return c.head(got)
				}
				return nil
			}, &buf)
			var me *model.Error
			switch {
			case errors.As(c.wantErr, &me):
				keysFilesSameError(t, err, me)
				if headed {
					t.Error("head called for a missing file")
				}
			case err != c.wantErr:
				t.Fatalf("WriteFile: %v, want %v", err, c.wantErr)
			}
			if !bytes.Equal(buf.Bytes(), c.wantBytes) {
				t.Fatalf("wrote %d bytes, want %d", buf.Len(), len(c.wantBytes))
			}
			if c.wantErr != nil {
				return
			}
			got, err := st.GetFile(t.Context(), c.tenant, "", c.id)
			if err != nil || got != f {
				t.Fatalf("GetFile: %+v, %v", got, err)
			}
		})
	}
	if _, err := st.GetFile(t.Context(), "a", "", missing); err == nil {
		t.Fatal("GetFile of a missing file")
	} else {
		keysFilesSameError(t, err, model.NotFound("file", missing))
	}

	// A lost chunk is found out, after the bytes before it were sent.
	conn := keysFilesRaw(t, url)
	if _, err := conn.Exec(t.Context(), `DELETE FROM file_chunks WHERE tenant_id = 'a' AND sha256 = $1 AND n = 2`, f.SHA256); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err = st.WriteFile(t.Context(), "a", "", f.ID, func(model.File) error { return nil }, &buf)
	keysFilesSameError(t, err, model.Corrupted("file", f.ID))
	if buf.Len() != 2*256<<10 {
		t.Fatalf("wrote %d bytes before the missing chunk", buf.Len())
	}
}

// WriteFile reads one snapshot: bytes removed meanwhile are still served whole.
func TestFilesWriteFromOneSnapshotPG(t *testing.T) {
	st, url := keysFilesOpen(t, nil)
	data := bytes.Repeat([]byte("snapshot"), 100_000)
	f, _, err := st.CreateFile(t.Context(), "a", "", "application/pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	conn := keysFilesRaw(t, url)
	var buf bytes.Buffer
	err = st.WriteFile(t.Context(), "a", "", f.ID, func(model.File) error {
		_, err := conn.Exec(t.Context(), `DELETE FROM file_chunks WHERE tenant_id = 'a' AND sha256 = $1`, f.SHA256)
		return err
	}, &buf)
	if err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("WriteFile: %d bytes, %v; want %d", buf.Len(), err, len(data))
	}
}

func TestFilesFaultPG(t *testing.T) {
	faults, err := repo.NewFaults(1, repo.FaultRule{Point: repo.PointFileWrite, Kind: repo.FaultError, Rate: 1, Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	st, url := keysFilesOpen(t, faults)
	_, created, err := st.CreateFile(t.Context(), "a", "", "text/plain", []byte("hello"))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.KindUnavailable || !errors.Is(err, repo.ErrInjected) || created {
		t.Fatalf("CreateFile with a fault: %v, created %v", err, created)
	}
	conn := keysFilesRaw(t, url)
	if n := keysFilesCount(t, conn, `SELECT (SELECT count(*) FROM files) + (SELECT count(*) FROM file_chunks)`); n != 0 {
		t.Fatalf("a failed upload left %d rows", n)
	}
	if _, created, err := st.CreateFile(t.Context(), "a", "", "text/plain", []byte("hello")); err != nil || !created {
		t.Fatalf("CreateFile once the fault is spent: created %v, %v", created, err)
	}
	if ev := faults.Events(); len(ev) != 1 || ev[0].Point != repo.PointFileWrite {
		t.Fatalf("faults fired: %v", ev)
	}
}
