package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Counters that disagree with the rows are reported, repaired on request, and
// the repair is reported once; the search index is checked against the rows.
func TestCheckIntegrityPG(t *testing.T) {
	ctx := context.Background()
	url := mustDatabase(t)
	st := mustOpenURL(t, url)
	insertSessionRow(t, url, "ok", "active", 2)
	insertMessageRows(t, url, "ok", "one", "two")
	insertSessionRow(t, url, "drift", "active", 5) // says 5, holds 2
	insertMessageRows(t, url, "drift", "one", "two")

	rep, err := st.CheckIntegrity(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.CounterDrift) != 2 || rep.CounterDrift[0].SessionID != "drift" || rep.IntegrityCheck != "ok" {
		t.Fatalf("report %+v", rep)
	}
	rep, err = st.CheckIntegrity(ctx, "t", true)
	if err != nil || !rep.OK || len(rep.Repaired) != 2 {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if rep, _ := st.CheckIntegrity(ctx, "t", true); len(rep.Repaired) != 0 || !rep.OK {
		t.Errorf("second repair: %+v", rep)
	}

	// A message the index lost (its trigger dropped, by hand) is reported.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DELETE FROM message_search WHERE session_id = 'ok' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	rep, _ = st.CheckIntegrity(ctx, "t", false)
	if rep.OK || len(rep.IndexDrift) != 1 || rep.IndexDrift[0].SessionID != "ok" || *rep.IndexDrift[0].Rows != 1 {
		t.Errorf("index drift %+v", rep.IndexDrift)
	}
}
