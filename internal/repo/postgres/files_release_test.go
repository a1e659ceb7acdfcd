package postgres_test

import (
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo/postgres"
)

// A file goes with the last message that references it, its bytes with the
// last file that has them; a file nothing ever referenced stays.
func TestFilesReleasePG(t *testing.T) {
	st, url := keysFilesOpen(t, nil)
	conn := keysFilesRaw(t, url)
	ctx := t.Context()
	mk := func(tenant, mediaType, data string) model.File {
		f, _, err := st.CreateFile(ctx, tenant, "", mediaType, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	shared := mk("a", "image/png", "shared by two sessions")
	tail := mk("a", "image/png", "only in one's tail")
	tailTwin := mk("a", "application/octet-stream", "only in one's tail") // the same bytes, never referenced
	head := mk("a", "image/png", "only in one's head")
	alone := mk("a", "image/png", "referenced once, bytes its own")
	never := mk("a", "image/png", "never referenced")
	otherTenant := mk("b", "image/png", "only in one's tail")
	refs := []struct {
		tenant, session string
		seq             int64
		file            model.File
	}{
		{"a", "one", 1, head},
		{"a", "one", 2, shared},
		{"a", "one", 2, tail},
		{"a", "one", 3, tail},
		{"a", "one", 3, alone},
		{"a", "two", 1, shared},
		{"b", "one", 2, otherTenant},
	}
	for _, r := range refs {
		if _, err := conn.Exec(ctx, `INSERT INTO message_files (tenant_id, session_id, seq, file_id) VALUES ($1, $2, $3, $4)`,
			r.tenant, r.session, r.seq, r.file.ID); err != nil {
			t.Fatal(err)
		}
	}

	steps := []struct {
		name, tenant, session string
		from                  int64
		kept, gone            []model.File // of tenant a, but otherTenant
		chunks                int          // tenant a's stored bytes afterwards
		refs                  int          // message_files rows afterwards
	}{
		{"nothing_referenced", "a", "three", 1, []model.File{shared, tail, tailTwin, head, alone, never}, nil, 5, 7},
		{"past_the_end", "a", "one", 4, []model.File{shared, tail, tailTwin, head, alone, never}, nil, 5, 7},
		{"one_from_2", "a", "one", 2, []model.File{shared, tailTwin, head, never}, []model.File{tail, alone}, 4, 3},
		{"again", "a", "one", 2, []model.File{shared, tailTwin, head, never}, nil, 4, 3},
		{"two_whole", "a", "two", 0, []model.File{tailTwin, head, never}, []model.File{shared}, 3, 2},
		{"one_whole", "a", "one", 1, []model.File{tailTwin, never}, []model.File{head}, 2, 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := postgres.FilesReleaseForTest(ctx, st, s.tenant, s.session, s.from); err != nil {
				t.Fatal(err)
			}
			for _, f := range s.kept {
				if _, err := st.GetFile(ctx, "a", "", f.ID); err != nil {
					t.Errorf("%s (%s) went: %v", f.ID, f.MediaType, err)
				}
			}
			for _, f := range s.gone {
				if _, err := st.GetFile(ctx, "a", "", f.ID); !model.IsNotFound(err, "file") {
					t.Errorf("%s (%s) stayed: %v", f.ID, f.MediaType, err)
				}
			}
			if _, err := st.GetFile(ctx, "b", "", otherTenant.ID); err != nil {
				t.Errorf("the other tenant's file went: %v", err)
			}
			if n := keysFilesCount(t, conn, `SELECT count(DISTINCT sha256) FROM file_chunks WHERE tenant_id = 'a'`); n != s.chunks {
				t.Errorf("%d of tenant a's byte sets stored, want %d", n, s.chunks)
			}
			if n := keysFilesCount(t, conn, `SELECT count(*) FROM message_files`); n != s.refs {
				t.Errorf("%d references left, want %d", n, s.refs)
			}
		})
	}
	if n := keysFilesCount(t, conn, `SELECT count(*) FROM file_chunks WHERE tenant_id = 'b'`); n != 1 {
		t.Errorf("tenant b's bytes: %d chunks", n)
	}
}
