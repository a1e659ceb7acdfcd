package api_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// graphPut is a graph runtime's write: POST …/checkpoints.
func graphPut(c *client, session string, body map[string]any) *response {
	return c.do("POST", "/v1/sessions/"+session+"/checkpoints", body)
}

func mustGraphPut(t *testing.T, c *client, session string, body map[string]any) model.Checkpoint {
	t.Helper()
	var cp model.Checkpoint
	graphPut(c, session, body).want(t, http.StatusCreated, &cp)
	return cp
}

func mustRead(t *testing.T, c *client, path string) model.Checkpoint {
	t.Helper()
	var cp model.Checkpoint
	c.do("GET", path, nil).want(t, http.StatusOK, &cp)
	return cp
}

// A thread's checkpoints form a tree: the client names them, each names its
// parent, a patch applies to the parent's state, a fork from an older one
// leaves the first branch whole, and a retry answers what was stored.
func TestGraphCheckpointTree(t *testing.T) {
	c := newClient(t)
	root := mustGraphPut(t, c, "thread", map[string]any{"client_id": "a", "create_session": true,
		"state": map[string]any{"v": map[string]any{"x": 1, "y": 2}}, "metadata": map[string]any{"source": "input", "step": -1}})
	if root.Iteration != 1 || root.ClientID != "a" || root.ParentID != nil || root.State != nil || root.Namespace != "" {
		t.Fatalf("root %+v", root)
	}
	b := mustGraphPut(t, c, "thread", map[string]any{"client_id": "b", "parent_id": "a",
		"state_patch": map[string]any{"v": map[string]any{"y": 3}}, "metadata": map[string]any{"source": "loop", "step": 0}})
	if b.Iteration != 2 || *b.ParentID != "a" || *b.ParentIteration != 1 {
		t.Fatalf("child %+v", b)
	}
	got := mustRead(t, c, "/v1/sessions/thread/checkpoint?client_id=b")
	if string(got.State) != `{"v":{"x":1,"y":3}}` || string(got.Metadata) != `{"source":"loop","step":0}` {
		t.Errorf("b reads %s %s", got.State, got.Metadata)
	}
	// Time travel: a fork from a, beside b.
	mustGraphPut(t, c, "thread", map[string]any{"client_id": "c", "parent_id": "a",
		"state_patch": map[string]any{"v": map[string]any{"x": nil}}, "metadata": map[string]any{"source": "fork"}})
	if got := mustRead(t, c, "/v1/sessions/thread/checkpoint"); got.ClientID != "c" || string(got.State) != `{"v":{"y":2}}` {
		t.Errorf("latest is %s %s, want the fork", got.ClientID, got.State)
	}
	if got := mustRead(t, c, "/v1/sessions/thread/checkpoint?client_id=b"); string(got.State) != `{"v":{"x":1,"y":3}}` {
		t.Errorf("the first branch reads %s after the fork", got.State)
	}
	if got := mustRead(t, c, "/v1/sessions/thread/checkpoints/1"); got.ClientID != "a" || string(got.State) != `{"v":{"x":1,"y":2}}` {
		t.Errorf("iteration 1 reads %+v", got)
	}

	t.Run("retry_is_200_other_content_409", func(t *testing.T) {
		var again model.Checkpoint
		graphPut(c, "thread", map[string]any{"client_id": "b", "parent_id": "a",
			"state_patch": map[string]any{"v": map[string]any{"y": 3}}}).want(t, http.StatusOK, &again)
		if again.ID != b.ID {
			t.Errorf("retry answered %s, want %s", again.ID, b.ID)
		}
		graphPut(c, "thread", map[string]any{"client_id": "b", "parent_id": "a",
			"state_patch": map[string]any{"v": map[string]any{"y": 4}}}).wantProblem(t, http.StatusConflict, "checkpoint_exists")
		graphPut(c, "thread", map[string]any{"client_id": "z", "parent_id": "nope",
			"state": map[string]any{}}).wantProblem(t, http.StatusConflict, "no_parent")
		graphPut(c, "no-such", map[string]any{"state": map[string]any{}}).wantProblem(t, http.StatusNotFound, "not_found")
	})
	t.Run("lists", func(t *testing.T) {
		ids := func(path string) string {
			var out []string
			for _, c := range listAll[model.Checkpoint](t, c, path, 2) {
				out = append(out, c.ClientID)
			}
			return strings.Join(out, ",")
		}
		for _, tc := range []struct{ path, want string }{
			{"/v1/sessions/thread/checkpoints", "c,b,a"},
			{"/v1/sessions/thread/checkpoints?before=c", "b,a"},
			{"/v1/sessions/thread/checkpoints?metadata[source]=loop", "b"},
			{"/v1/sessions/thread/checkpoints?metadata.step=-1", "a"},
			{"/v1/sessions/thread/checkpoints?namespace=other", ""},
			{"/v1/checkpoints?session_id=thread&before=b&before_session=thread", "a"},
			{"/v1/checkpoints?metadata[source]=fork", "c"},
		} {
			if got := ids(tc.path); got != tc.want {
				t.Errorf("%s lists %q, want %q", tc.path, got, tc.want)
			}
		}
		var page model.Page[model.Checkpoint]
		c.do("GET", "/v1/sessions/thread/checkpoints?values=false", nil).want(t, http.StatusOK, &page)
		if len(page.Data) != 3 || page.Data[0].State != nil || page.Data[0].PendingWrites != nil {
			t.Errorf("values=false still carries values: %+v", page.Data[0])
		}
		c.do("GET", "/v1/sessions/thread/checkpoints?before=nope", nil).wantProblem(t, http.StatusNotFound, "not_found")
		c.do("GET", "/v1/sessions/thread/checkpoints?before_namespace=x", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
		c.do("GET", "/v1/sessions/thread/checkpoints?session_id=x", nil).wantProblem(t, http.StatusBadRequest, "invalid_query")
	})
}

// Two workers on two namespaces of one session each run their own fenced
// line of iterations: neither ever sees the other's fence.
func TestNamespacesFenceApart(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for _, ns := range []string{"", "sub:1"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := int64(1); it <= 25; it++ {
				r := c.do("PUT", "/v1/sessions/s/checkpoint", map[string]any{"iteration": it, "expected_iteration": it - 1,
					"namespace": ns, "state": map[string]any{"n": it}})
				if r.Status != http.StatusCreated {
					errs <- fmt.Sprintf("namespace %q iteration %d: %d %s", ns, it, r.Status, r.Body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := mustRead(t, c, "/v1/sessions/s/checkpoint?namespace=sub:1"); got.Iteration != 25 || *got.ParentIteration != 24 {
		t.Errorf("sub:1 latest %+v", got)
	}
	// The fence of one namespace still holds within it.
	c.do("PUT", "/v1/sessions/s/checkpoint", map[string]any{"iteration": 26, "expected_iteration": 3, "namespace": "sub:1",
		"state": map[string]any{}}).wantProblem(t, http.StatusConflict, "stale_iteration")
}

// Pending writes: recorded before or after their checkpoint, read with it
// in a runtime's order, the first write at an index kept and a special
// channel's last, and gone with their checkpoint.
func TestPendingWrites(t *testing.T) {
	c := newClient(t)
	put := func(ckpt, task, path string, writes ...[2]any) {
		t.Helper()
		var ws []map[string]any
		for _, w := range writes {
			ws = append(ws, map[string]any{"channel": w[0], "value": w[1]})
		}
		c.do("POST", "/v1/sessions/t/checkpoint-writes", map[string]any{"checkpoint_id": ckpt, "task_id": task, "task_path": path,
			"writes": ws, "create_session": true}).want(t, http.StatusNoContent, nil)
	}
	// Before the checkpoint (and its session) exists.
	put("a", "t2", "", [2]any{"x", 1}, [2]any{"__interrupt__", "first"})
	mustGraphPut(t, c, "t", map[string]any{"client_id": "a", "state": map[string]any{}})
	put("a", "t2", "", [2]any{"x", 2}, [2]any{"__interrupt__", "second"}) // x stays 1; the interrupt is replaced
	put("a", "t1", "~b", [2]any{"y", "z"})
	put("a", "t0", "~a", [2]any{"w", true})
	got := mustRead(t, c, "/v1/sessions/t/checkpoint?client_id=a")
	var seen []string
	for _, w := range got.PendingWrites {
		seen = append(seen, fmt.Sprintf("%s/%s/%d/%s=%s", w.TaskPath, w.TaskID, w.Idx, w.Channel, w.Value))
	}
	want := `/t2/-3/__interrupt__="second" /t2/0/x=1 ~a/t0/0/w=true ~b/t1/0/y="z"`
	if strings.Join(seen, " ") != want {
		t.Errorf("writes %v\nwant %s", seen, want)
	}
	// A child reads its parent's writes to one channel on request.
	mustGraphPut(t, c, "t", map[string]any{"client_id": "b", "parent_id": "a", "state": map[string]any{}})
	child := mustRead(t, c, "/v1/sessions/t/checkpoint?client_id=b&parent_writes=x")
	if len(child.ParentWrites) != 1 || string(child.ParentWrites[0].Value) != "1" || len(child.PendingWrites) != 0 {
		t.Errorf("child %+v", child)
	}
	// Pruned with their checkpoint.
	c.do("PUT", "/v1/sessions/t/checkpoint-retention", map[string]any{"keep": "last", "last": 1}).want(t, http.StatusOK, nil)
	mustGraphPut(t, c, "t", map[string]any{"client_id": "c", "parent_id": "b", "state": map[string]any{}})
	c.do("GET", "/v1/sessions/t/checkpoint?client_id=a", nil).wantProblem(t, http.StatusNotFound, "not_found")
	mustGraphPut(t, c, "t", map[string]any{"client_id": "a", "state": map[string]any{}})
	if got := mustRead(t, c, "/v1/sessions/t/checkpoint?client_id=a"); len(got.PendingWrites) != 0 {
		t.Errorf("a new a has the pruned one's writes: %+v", got.PendingWrites)
	}
	t.Run("bad_input", func(t *testing.T) {
		many := make([]map[string]any, model.MaxWritesPerRequest+1)
		for i := range many {
			many[i] = map[string]any{"channel": "c", "value": i}
		}
		for _, body := range []map[string]any{
			{"checkpoint_id": "a", "task_id": "t", "writes": many},
			{"checkpoint_id": "a", "task_id": "t", "writes": []any{}},
			{"checkpoint_id": "", "task_id": "t", "writes": []any{map[string]any{"channel": "c", "value": 1}}},
			{"checkpoint_id": "a", "task_id": "t\n", "writes": []any{map[string]any{"channel": "c", "value": 1}}},
			{"checkpoint_id": "a", "task_id": "t", "writes": []any{map[string]any{"channel": "c"}}},
		} {
			c.do("POST", "/v1/sessions/t/checkpoint-writes", body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		}
		c.do("POST", "/v1/sessions/none/checkpoint-writes", map[string]any{"checkpoint_id": "a", "task_id": "t",
			"writes": []any{map[string]any{"channel": "c", "value": 1}}}).wantProblem(t, http.StatusNotFound, "not_found")
	})
}

// Retention as a policy: keep all keeps a 500-step graph whole, every
// checkpoint readable, listable by metadata and a fork point; keep last N and
// younger than prune each namespace apart, never its latest.
func TestCheckpointRetentionPolicies(t *testing.T) {
	c := newClient(t, withCheckpointKeep(5))
	var r model.SessionRetention
	mustCreateSession(t, c, map[string]any{"id": "long"})
	c.do("GET", "/v1/sessions/long/checkpoint-retention", nil).want(t, http.StatusOK, &r)
	if !r.Default || r.Keep != model.KeepLast || *r.Last != 5 {
		t.Errorf("default policy %+v", r)
	}
	c.do("PUT", "/v1/sessions/long/checkpoint-retention", map[string]any{"keep": "all"}).want(t, http.StatusOK, &r)
	if r.Default || r.Keep != model.KeepAll {
		t.Errorf("set policy %+v", r)
	}
	parent := ""
	for step := 1; step <= 500; step++ {
		body := map[string]any{"client_id": fmt.Sprintf("s%03d", step), "metadata": map[string]any{"step": step},
			"state_patch": map[string]any{"step": step, "pad": strings.Repeat("x", 64)}}
		if parent != "" {
			body["parent_id"] = parent
		}
		mustGraphPut(t, c, "long", body)
		parent = fmt.Sprintf("s%03d", step)
	}
	for _, step := range []int{1, 2, 250, 499, 500} {
		if got := mustRead(t, c, fmt.Sprintf("/v1/sessions/long/checkpoint?client_id=s%03d", step)); !strings.Contains(string(got.State), fmt.Sprintf(`"step":%d}`, step)) {
			t.Errorf("step %d reads %s", step, got.State)
		}
	}
	var page model.Page[model.Checkpoint]
	c.do("GET", "/v1/sessions/long/checkpoints?metadata[step]=250", nil).want(t, http.StatusOK, &page)
	if len(page.Data) != 1 || page.Data[0].ClientID != "s250" {
		t.Errorf("metadata step 250 lists %+v", page.Data)
	}
	if all := listAll[model.Checkpoint](t, c, "/v1/sessions/long/checkpoints?values=false", 200); len(all) != 500 {
		t.Errorf("%d checkpoints kept, want 500", len(all))
	}
	var fork model.Session
	c.do("POST", "/v1/sessions/long/fork", map[string]any{"id": "from-100", "at_checkpoint": map[string]any{"client_id": "s100"}}).
		want(t, http.StatusCreated, &fork)
	if got := mustRead(t, c, "/v1/sessions/from-100/checkpoint"); got.ClientID != "s100" || got.ParentID != nil ||
		!strings.Contains(string(got.State), `"step":100}`) {
		t.Errorf("the fork starts from %+v", got)
	}

	t.Run("last_n_per_namespace", func(t *testing.T) {
		mustCreateSession(t, c, map[string]any{"id": "short"}) // the server's default: the newest 5
		for it := int64(1); it <= 8; it++ {
			for _, ns := range []string{"", "sub"} {
				c.do("PUT", "/v1/sessions/short/checkpoint", map[string]any{"iteration": it, "namespace": ns, "state": map[string]any{}}).
					want(t, http.StatusCreated, nil)
			}
		}
		for _, ns := range []string{"", "sub"} {
			if n := len(listAll[model.Checkpoint](t, c, "/v1/sessions/short/checkpoints?namespace="+ns, 50)); n != 5 {
				t.Errorf("namespace %q keeps %d, want 5", ns, n)
			}
		}
	})
	t.Run("younger_than_keeps_the_latest", func(t *testing.T) {
		mustCreateSession(t, c, map[string]any{"id": "aged"})
		for it := int64(1); it <= 3; it++ {
			c.do("PUT", "/v1/sessions/aged/checkpoint", map[string]any{"iteration": it, "state": map[string]any{}}).want(t, http.StatusCreated, nil)
		}
		c.do("PUT", "/v1/sessions/aged/checkpoint-retention", map[string]any{"keep": "younger_than", "max_age_seconds": 3600}).want(t, http.StatusOK, nil)
		c.do("PUT", "/v1/sessions/aged/checkpoint", map[string]any{"iteration": 4, "state": map[string]any{}}).want(t, http.StatusCreated, nil)
		if n := len(listAll[model.Checkpoint](t, c, "/v1/sessions/aged/checkpoints", 50)); n != 4 {
			t.Errorf("kept %d, want all 4 (younger than an hour)", n)
		}
		c.do("DELETE", "/v1/sessions/aged/checkpoint-retention", nil).want(t, http.StatusOK, &r)
		if !r.Default {
			t.Errorf("after DELETE: %+v", r)
		}
	})
	t.Run("bad_policies", func(t *testing.T) {
		for _, body := range []map[string]any{
			{"keep": "last"}, {"keep": "younger_than"}, {"keep": "all", "last": 3}, {"keep": "some"}, {"keep": "last", "last": 0},
		} {
			c.do("PUT", "/v1/sessions/long/checkpoint-retention", body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		}
		c.do("PUT", "/v1/sessions/nope/checkpoint-retention", map[string]any{"keep": "all"}).wantProblem(t, http.StatusNotFound, "not_found")
	})
}

// What a graph write refuses, naming the field, and never half-written.
func TestGraphCheckpointBadInput(t *testing.T) {
	c := newClient(t)
	mustCreateSession(t, c, map[string]any{"id": "s"})
	for name, body := range map[string]map[string]any{
		"neither_state_nor_patch": {"client_id": "a"},
		"both_state_and_patch":    {"state": map[string]any{}, "state_patch": map[string]any{}},
		"state_not_object":        {"state": []int{1}},
		"namespace_control_char":  {"namespace": "a\tb", "state": map[string]any{}},
		"client_id_too_long":      {"client_id": strings.Repeat("x", model.MaxCheckpointIDSize+1), "state": map[string]any{}},
		"empty_parent_id":         {"parent_id": "", "state": map[string]any{}},
		"unknown_field":           {"state": map[string]any{}, "iteration": 3},
		"bad_session_to_create":   {"state": map[string]any{}, "create_session": true},
	} {
		t.Run(name, func(t *testing.T) {
			session := "s"
			if name == "bad_session_to_create" {
				session = "has%20space"
			}
			graphPut(c, session, body).wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		})
	}
	c.do("POST", "/v1/sessions/s/fork", map[string]any{"at_seq": 0, "at_checkpoint": map[string]any{"iteration": 1}}).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	c.do("POST", "/v1/sessions/s/fork", map[string]any{"at_checkpoint": map[string]any{}}).
		wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
	c.do("POST", "/v1/sessions/s/fork", map[string]any{"at_checkpoint": map[string]any{"client_id": "none"}}).
		wantProblem(t, http.StatusNotFound, "not_found")
	var page model.Page[model.Checkpoint]
	c.do("GET", "/v1/sessions/s/checkpoints", nil).want(t, http.StatusOK, &page)
	if len(page.Data) != 0 {
		t.Errorf("a refused write stored %+v", page.Data)
	}
}

// A page of a list holds at most ckstore.MaxPageBytes of states: one hostile
// or careless list of 200 large states does not make the server hold them
// all at once. It ends early with has_more, and the next page goes on.
func TestCheckpointPageIsBoundedInBytes(t *testing.T) {
	c := newClient(t, withMaxBody(8<<20))
	mustCreateSession(t, c, map[string]any{"id": "big"})
	c.do("PUT", "/v1/sessions/big/checkpoint-retention", map[string]any{"keep": "all"}).want(t, http.StatusOK, nil)
	for i := range 7 {
		mustGraphPut(t, c, "big", map[string]any{"client_id": fmt.Sprint("c", i),
			"state": map[string]any{"blob": strings.Repeat(string(rune('a'+i)), 3<<20)}})
	}
	var page model.Page[model.Checkpoint]
	c.do("GET", "/v1/sessions/big/checkpoints?limit=200", nil).want(t, http.StatusOK, &page)
	if len(page.Data) != 6 || !page.HasMore || page.NextCursor == nil {
		t.Fatalf("first page: %d checkpoints, has_more %v", len(page.Data), page.HasMore)
	}
	var rest model.Page[model.Checkpoint]
	c.do("GET", "/v1/sessions/big/checkpoints?limit=200&cursor="+*page.NextCursor, nil).want(t, http.StatusOK, &rest)
	if len(rest.Data) != 1 || rest.HasMore || rest.Data[0].ClientID != "c0" {
		t.Errorf("second page: %+v", rest)
	}
}

// A thread's tree travels through export and import: namespaces, client
// ids, parents and metadata come back as they were.
func TestGraphCheckpointsExportImport(t *testing.T) {
	c := newClient(t)
	mustGraphPut(t, c, "tree", map[string]any{"client_id": "a", "state": map[string]any{"n": 1}, "metadata": map[string]any{"step": 0}, "create_session": true})
	mustGraphPut(t, c, "tree", map[string]any{"client_id": "b", "parent_id": "a", "state_patch": map[string]any{"n": 2}})
	mustGraphPut(t, c, "tree", map[string]any{"client_id": "c", "parent_id": "a", "state_patch": map[string]any{"n": 3}})
	mustGraphPut(t, c, "tree", map[string]any{"namespace": "sub:1", "client_id": "x", "state": map[string]any{"inner": true}})
	export := mustExport(t, c, "tree")
	var copy model.Session
	importNDJSON(c, export, "?as_new=true").want(t, http.StatusCreated, &copy)
	show := func(session string) string {
		var out []string
		for _, ck := range listAll[model.Checkpoint](t, c, "/v1/sessions/"+session+"/checkpoints", 50) {
			parent := "-"
			if ck.ParentID != nil {
				parent = *ck.ParentID
			}
			out = append(out, fmt.Sprintf("%q/%d/%s<%s %s %s", ck.Namespace, ck.Iteration, ck.ClientID, parent, ck.Metadata, ck.State))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	if got, want := show(copy.ID), show("tree"); got != want {
		t.Errorf("imported:\n%s\nwant:\n%s", got, want)
	}
}

// A key bound to an end user lists only that user's sessions' checkpoints
// across the tenant, and cannot write to another user's thread.
func TestGraphCheckpointsUserBound(t *testing.T) {
	c := newClient(t, withoutOpenMode())
	_, admin := adminClients(t, c)
	keyFor := func(user string) *client {
		var k model.NewAPIKey
		admin.do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "user_id": user}).want(t, http.StatusCreated, &k)
		return c.as(k.Key)
	}
	ann, bob := keyFor("ann"), keyFor("bob")
	mustCreateSession(t, ann, map[string]any{"id": "ann-thread"})
	mustCreateSession(t, bob, map[string]any{"id": "bob-thread"})
	mustGraphPut(t, ann, "ann-thread", map[string]any{"client_id": "a", "state": map[string]any{}})
	mustGraphPut(t, bob, "bob-thread", map[string]any{"client_id": "b", "state": map[string]any{}})
	var page model.Page[model.Checkpoint]
	ann.do("GET", "/v1/checkpoints", nil).want(t, http.StatusOK, &page)
	if len(page.Data) != 1 || page.Data[0].SessionID != "ann-thread" {
		t.Errorf("ann lists %+v", page.Data)
	}
	graphPut(ann, "bob-thread", map[string]any{"client_id": "x", "state": map[string]any{}}).wantProblem(t, http.StatusNotFound, "not_found")
	ann.do("POST", "/v1/sessions/bob-thread/checkpoint-writes", map[string]any{"checkpoint_id": "b", "task_id": "t",
		"writes": []any{map[string]any{"channel": "c", "value": 1}}}).wantProblem(t, http.StatusNotFound, "not_found")
	ann.do("GET", "/v1/checkpoints?session_id=bob-thread", nil).want(t, http.StatusOK, &page)
	if len(page.Data) != 0 {
		t.Errorf("ann reads bob's checkpoints: %+v", page.Data)
	}
}
