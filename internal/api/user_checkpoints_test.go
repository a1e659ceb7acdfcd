package api_test

import (
	"net/http"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// A checkpoint write with create_session, by a key bound to a user, makes
// that user's session in that user's id space, whoever else holds the id;
// without create_session a missing session is 404, as everywhere; and no
// write reaches another user's session of the same id.
func TestUserBoundCheckpointCreatesOwnSession(t *testing.T) {
	root := newClient(t)
	admin, ann, bob := userKeys(t, root)
	mustCreateSession(t, bob, map[string]any{"id": "thread", "title": "bob's"})

	ckpt := func(id string, create bool) map[string]any {
		return map[string]any{"client_id": id, "state": map[string]any{"step": id}, "create_session": create}
	}
	writes := func(create bool) map[string]any {
		return map[string]any{"checkpoint_id": "c1", "task_id": "t1", "create_session": create,
			"writes": []map[string]any{{"channel": "out", "value": 1}}}
	}
	ann.do("POST", "/v1/sessions/thread/checkpoints", ckpt("c1", false)).wantProblem(t, http.StatusNotFound, "not_found")
	ann.do("POST", "/v1/sessions/thread/checkpoint-writes", writes(false)).wantProblem(t, http.StatusNotFound, "not_found")

	ann.do("POST", "/v1/sessions/thread/checkpoints", ckpt("c1", true)).want(t, http.StatusCreated, nil)
	if s := mustGetSession(t, ann, "thread"); s.ID != "thread" || s.UserID == nil || *s.UserID != "ann" {
		t.Errorf("ann's new session: %+v", s)
	}
	// A retry of the same write, and a write of pending writes, go to it.
	ann.do("POST", "/v1/sessions/thread/checkpoints", ckpt("c1", true)).want(t, http.StatusOK, nil)
	ann.do("POST", "/v1/sessions/thread/checkpoint-writes", writes(true)).want(t, http.StatusNoContent, nil)

	// A session id no one holds yet: made by the pending writes themselves.
	ann.do("POST", "/v1/sessions/fresh/checkpoint-writes", writes(true)).want(t, http.StatusNoContent, nil)
	if s := mustGetSession(t, ann, "fresh"); s.UserID == nil || *s.UserID != "ann" {
		t.Errorf("ann's session made by writes: %+v", s)
	}

	// Bob's session of the same id got nothing.
	bob.do("GET", "/v1/sessions/thread/checkpoint", nil).wantProblem(t, http.StatusNotFound, "not_found")
	var c model.Checkpoint
	ann.do("GET", "/v1/sessions/thread/checkpoint", nil).want(t, http.StatusOK, &c)
	if c.ClientID != "c1" || len(c.PendingWrites) != 1 {
		t.Errorf("ann's checkpoint: %+v", c)
	}
	// Stored in ann's space, as keys bound to no user see it.
	admin.do("GET", "/v1/sessions/"+model.UserSessionID("thread", "ann")+"/checkpoint", nil).want(t, http.StatusOK, nil)
}
