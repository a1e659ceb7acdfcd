package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// keysFilesTwoProcesses opens two stores on one database, as two Logbook
// processes would.
func keysFilesTwoProcesses(t *testing.T) ([2]*postgres.Store, string) {
	t.Helper()
	first, url := keysFilesOpen(t, nil)
	second, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { second.Close() })
	return [2]*postgres.Store{first, second}, url
}

// The same bytes uploaded at once through two processes are one file: exactly
// one upload creates it (201), the others find it (200), all get the same file.
func TestFilesConcurrentUploadPG(t *testing.T) {
	stores, url := keysFilesTwoProcesses(t)
	conn := keysFilesRaw(t, url)
	data := bytes.Repeat([]byte("race"), 200_000) // four chunks
	for round := range 5 {
		mediaType := fmt.Sprintf("application/x-round-%d", round)
		const uploads = 8
		var (
			wg      sync.WaitGroup
			files   [uploads]model.File
			created [uploads]bool
			errs    [uploads]error
		)
		for i := range uploads {
			wg.Go(func() {
				files[i], created[i], errs[i] = stores[i%2].CreateFile(t.Context(), "a", "", mediaType, data)
			})
		}
		wg.Wait()
		n := 0
		for i := range uploads {
			if errs[i] != nil {
				t.Fatalf("round %d upload %d: %v", round, i, errs[i])
			}
			if files[i] != files[0] {
				t.Fatalf("round %d: upload %d got %+v, upload 0 %+v", round, i, files[i], files[0])
			}
			if created[i] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d uploads created the file, want 1", round, n)
		}
		for _, st := range stores {
			var buf bytes.Buffer
			if err := st.WriteFile(t.Context(), "a", "", files[0].ID, func(model.File) error { return nil }, &buf); err != nil ||
				!bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("round %d: WriteFile %d bytes, %v", round, buf.Len(), err)
			}
		}
	}
	if n := keysFilesCount(t, conn, `SELECT count(*) FROM files`); n != 5 {
		t.Errorf("%d files, want 5", n)
	}
	if n := keysFilesCount(t, conn, `SELECT count(*) FROM file_chunks`); n != 4 {
		t.Errorf("%d chunks, want the one copy's 4", n)
	}
}

// An upload of bytes that a release is removing at the same moment either
// finds them kept or stores them again: never a file without its bytes.
func TestFilesUploadRacesReleasePG(t *testing.T) {
	stores, url := keysFilesTwoProcesses(t)
	conn := keysFilesRaw(t, url)
	ctx := t.Context()
	for round := range 20 {
		// Bytes of the round's own: no earlier round's twin keeps them.
		data := append(bytes.Repeat([]byte("contended"), 50_000), byte(round))
		session := fmt.Sprintf("s%d", round)
		old, _, err := stores[0].CreateFile(ctx, "a", "", "image/png", data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO message_files (tenant_id, session_id, seq, file_id) VALUES ('a', $1, 1, $2)`,
			session, old.ID); err != nil {
			t.Fatal(err)
		}
		var (
			wg      sync.WaitGroup
			twin    model.File
			errs    [2]error
			twinTyp = fmt.Sprintf("application/x-twin-%d", round)
		)
		wg.Go(func() { errs[0] = postgres.FilesReleaseForTest(ctx, stores[0], "a", session, 0) })
		wg.Go(func() { twin, _, errs[1] = stores[1].CreateFile(ctx, "a", "", twinTyp, data) })
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: release %v, upload %v", round, errs[0], errs[1])
		}
		if err := stores[0].WriteFile(ctx, "a", "", twin.ID, func(model.File) error { return nil }, io.Discard); err != nil {
			t.Fatalf("round %d: the twin uploaded during a release: %v", round, err)
		}
		if _, err := stores[0].GetFile(ctx, "a", "", old.ID); !model.IsNotFound(err, "file") {
			t.Fatalf("round %d: the released file: %v", round, err)
		}
	}
}

// Two processes revoking one key at once both succeed and agree on when it was
// revoked.
func TestKeysConcurrentRevokePG(t *testing.T) {
	stores, _ := keysFilesTwoProcesses(t)
	for round := range 10 {
		k := keysMust(t, stores[round%2], "acme", model.ScopeWrite, "")
		const revokes = 6
		var (
			wg   sync.WaitGroup
			got  [revokes]model.APIKey
			errs [revokes]error
		)
		for i := range revokes {
			tenant := "acme"
			if i%3 == 2 {
				tenant = "" // the CLI's
			}
			wg.Go(func() { got[i], errs[i] = stores[i%2].RevokeAPIKey(t.Context(), tenant, k.ID) })
		}
		wg.Wait()
		for i := range revokes {
			if errs[i] != nil || got[i].RevokedAt == nil || *got[i].RevokedAt != *got[0].RevokedAt || got[i].ID != k.ID {
				t.Fatalf("round %d revoke %d: %+v, %v; revoke 0: %+v", round, i, got[i], errs[i], got[0])
			}
		}
		for _, st := range stores {
			if _, err := st.Authenticate(t.Context(), k.Key); err != model.ErrUnauthorized {
				t.Fatalf("round %d: a revoked key authenticates: %v", round, err)
			}
		}
	}
	for _, st := range stores {
		if has, err := st.HasActiveKeys(t.Context()); err != nil || has {
			t.Fatalf("HasActiveKeys: %v, %v", has, err)
		}
	}
}
