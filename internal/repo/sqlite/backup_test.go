package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
)

// A backup taken while appends go on, over many paced steps, is one snapshot:
// whatever was written meanwhile, the copy is sound, every session's counters
// agree with the messages the copy holds, and it is one file, with no WAL
// beside it. Its progress is reported as it goes.
func TestBackupIsOneSnapshotUnderWrites(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	text := strings.Repeat("words of a message ", 60)
	for i := range 10 {
		var req model.AppendRequest
		for range 100 {
			req.Messages = append(req.Messages, model.NewMessage{Role: model.RoleUser, Content: model.TextContent(text), Tokens: 3})
		}
		id := fmt.Sprintf("s%02d", i)
		if _, err := s.CreateSession(ctx, "t", model.CreateSession{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, "t", id, req); err != nil {
			t.Fatal(err)
		}
	}
	defer func(n int32) { backupStepPages = n }(backupStepPages)
	backupStepPages = 16 // a few hundred steps, each a chance for a write to come between
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { done <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("s%02d", n%10)
			if _, err := s.AppendMessages(ctx, "t", id, model.AppendRequest{Messages: []model.NewMessage{
				{Role: model.RoleUser, Content: model.TextContent(text), Tokens: 3}}}); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	var reports []model.JobProgress
	pctx := repo.WithProgress(ctx, func(p model.JobProgress) { reports = append(reports, p) })
	dest := filepath.Join(t.TempDir(), "copy.db")
	b, err := s.Backup(pctx, dest)
	close(stop)
	written := <-done
	if err != nil {
		t.Fatal(err)
	}
	if written == 0 {
		t.Fatal("no append went on beside the backup")
	}
	if last := reports[len(reports)-1]; last.Phase != "copy" || last.Total == nil || last.Done != *last.Total || last.Done != b.Bytes {
		t.Errorf("last progress %+v, backup %+v", last, b)
	}
	if _, err := os.Stat(dest + "-wal"); err == nil {
		t.Error("the backup left a WAL beside it")
	}
	cp, err := Open(ctx, Config{Path: dest, ReadConns: 1, NoSearch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if got, err := cp.IntegrityCheck(ctx); err != nil || got != "ok" {
		t.Fatalf("the copy: %q, %v", got, err)
	}
	var sessions, drift int
	if err := cp.rdb.QueryRow(`SELECT COUNT(*), COALESCE(SUM(s.message_count <> (SELECT COUNT(*) FROM messages m
		WHERE m.tenant_id = s.tenant_id AND m.session_id = s.id)), 0) FROM sessions s`).Scan(&sessions, &drift); err != nil {
		t.Fatal(err)
	}
	if sessions != 10 || drift != 0 {
		t.Errorf("the copy holds %d sessions, %d of them with counters that disagree with their messages", sessions, drift)
	}
}
