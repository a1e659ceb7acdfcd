package postgres_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/model"
	"github.com/logbook/logbook/internal/repo"
	"github.com/logbook/logbook/internal/repo/postgres"
	"github.com/logbook/logbook/internal/repo/postgres/pgtest"
)

// With a synchronous standby, a commit is acknowledged only once the standby
// has it: kill the primary under load, promote the standby, and every append
// that was answered is there, once, with seqs still gap-free. (docs/scale.md
// shows the same by hand.)
func TestFailoverToSynchronousStandbyLosesNothing(t *testing.T) {
	if missing != nil {
		t.Skipf("%v: the PostgreSQL half of this test is skipped", missing)
	}
	ctx := context.Background()
	primary := pgtest.Start(t)
	if err := postgres.Migrate(ctx, primary.URL("postgres"), "up", io.Discard); err != nil {
		t.Fatal(err)
	}
	standby, err := primary.StartStandby(ctx)
	if standby != nil {
		t.Cleanup(func() { standby.Stop() })
	}
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: primary.URL("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, "t", model.CreateSession{ID: "s"}); err != nil {
		t.Fatal(err)
	}

	var (
		acked   sync.Map // content → seq
		nAcked  atomic.Int64
		stopped atomic.Bool
		wg      sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stopped.Load(); n++ {
				text := fmt.Sprintf("w%d-%d", w, n)
				res, err := st.AppendMessages(ctx, "t", "s", model.AppendRequest{Messages: []model.NewMessage{{
					Role: model.RoleUser, Content: model.TextContent(text), IdempotencyKey: text}}})
				if err != nil {
					return // the primary is gone: this one was never acknowledged
				}
				acked.Store(text, res.Messages[0].Seq)
				nAcked.Add(1)
			}
		}()
	}
	for nAcked.Load() < 200 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := primary.Kill(); err != nil {
		t.Fatal(err)
	}
	stopped.Store(true)
	wg.Wait()
	st.Close()
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}

	after, err := postgres.Open(ctx, postgres.Config{URL: standby.URL("postgres")})
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	seen := map[string]int64{}
	var last int64
	p := repo.PageRequest{Limit: 200}
	for {
		page, err := after.ListMessages(ctx, "t", "s", model.MessageFilter{}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Data {
			if m.Seq != last+1 {
				t.Fatalf("seq %d follows %d: a gap after failover", m.Seq, last)
			}
			last = m.Seq
			if _, dup := seen[m.Content.Text]; dup {
				t.Errorf("%s stored twice", m.Content.Text)
			}
			seen[m.Content.Text] = m.Seq
		}
		if !page.HasMore {
			break
		}
		p.Cursor = *page.NextCursor
	}
	lost := 0
	acked.Range(func(k, v any) bool {
		if seq, ok := seen[k.(string)]; !ok || seq != v.(int64) {
			lost++
		}
		return true
	})
	ses, err := after.GetSession(ctx, "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d appends acknowledged before the primary was killed; %d on the promoted standby; %d lost", nAcked.Load(), len(seen), lost)
	if lost != 0 || ses.LastSeq != last || ses.MessageCount != int64(len(seen)) {
		t.Errorf("%d acknowledged appends lost; session says last_seq %d, %d messages; rows say %d, %d",
			lost, ses.LastSeq, ses.MessageCount, last, len(seen))
	}
	// The promoted standby takes writes, numbering on.
	res, err := after.AppendMessages(ctx, "t", "s", model.AppendRequest{Messages: []model.NewMessage{{Role: model.RoleUser,
		Content: model.TextContent("after failover")}}})
	if err != nil || res.Messages[0].Seq != last+1 {
		t.Errorf("append after failover: %+v %v", res, err)
	}
}
