package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/logbook/logbook/client"
	"github.com/logbook/logbook/client/api"
)

// A graph runtime's calls: a root and a child by client id, a task's pending
// writes read back with their checkpoint, a list across the tenant filtered
// by metadata, a retention policy, and the thread's deletion.
func TestGraphCheckpoints(t *testing.T) {
	ctx := context.Background()
	c, _ := newClient(t, server.url)
	thread := "go-client-" + t.Name()
	root, err := c.CreateCheckpoint(ctx, thread, api.CheckpointCreate{ClientID: client.Ptr("a"), CreateSession: client.Ptr(true),
		StatePatch: map[string]any{"x": 1}, Metadata: map[string]any{"source": "input"}})
	if err != nil {
		t.Fatal(err)
	}
	child, err := c.CreateCheckpoint(ctx, thread, api.CheckpointCreate{ClientID: client.Ptr("b"), ParentID: client.Ptr("a"),
		StatePatch: map[string]any{"y": 2}, Metadata: map[string]any{"source": "loop"}})
	if err != nil || root.Iteration != 1 || child.Iteration != 2 || *child.ParentID != "a" {
		t.Fatalf("root %+v child %+v: %v", root, child, err)
	}
	err = c.PutCheckpointWrites(ctx, thread, api.CheckpointWrites{CheckpointID: "b", TaskID: "t",
		Writes: []api.CheckpointWrite{{Channel: "out", Value: "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.FindCheckpoint(ctx, thread, &api.GetLatestCheckpointParams{ClientID: client.Ptr("b")})
	if err != nil || len(got.PendingWrites) != 1 || got.PendingWrites[0].Value != "v" {
		t.Fatalf("b %+v: %v", got, err)
	}
	var ids []string
	for ck, err := range c.ListAllCheckpoints(ctx, &api.ListAllCheckpointsParams{SessionID: client.Ptr(thread),
		Metadata: map[string]string{"source": "loop"}}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ck.ClientID)
	}
	if len(ids) != 1 || ids[0] != "b" {
		t.Errorf("listed %v, want [b]", ids)
	}
	ret, err := c.SetCheckpointRetention(ctx, thread, &api.CheckpointRetention{Keep: api.CheckpointRetentionKeepAll})
	if err != nil || ret.Default || ret.Keep != api.SessionRetentionKeepAll {
		t.Errorf("retention %+v: %v", ret, err)
	}
	if ret, err = c.SetCheckpointRetention(ctx, thread, nil); err != nil || !ret.Default {
		t.Errorf("back to the default: %+v %v", ret, err)
	}
	if err := c.PurgeSession(ctx, thread); err != nil {
		t.Fatal(err)
	}
	var p *client.Problem
	if _, err := c.GetSession(ctx, thread); !errors.As(err, &p) || p.Status != 404 {
		t.Errorf("after the purge: %v", err)
	}
}
