package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

func mustExportItems(t *testing.T, c *client, query string) []byte {
	t.Helper()
	res := c.do("GET", "/v1/items/export"+query, nil).want(t, http.StatusOK, nil)
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type = %q", ct)
	}
	lines := splitLines(t, res.Body)
	if string(lines[0]) != `{"type":"header","format":"logbook.items","version":1}`+"\n" {
		t.Fatalf("first line %s", lines[0])
	}
	last := lines[len(lines)-1]
	var end model.ItemsExportLine
	if err := json.Unmarshal(last, &end); err != nil || end.Type != model.LineItemsEnd || end.Counts.Items != int64(len(lines)-2) {
		t.Fatalf("last line %s (%v)", last, err)
	}
	sum := sha256.Sum256(res.Body[:len(res.Body)-len(last)])
	if end.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("sha256 %s, want %x", end.SHA256, sum)
	}
	return res.Body
}

func importItems(c *client, body []byte, query string) *response {
	return c.do("POST", "/v1/items/import"+query, body, "Content-Type", "application/x-ndjson")
}

func TestItemExportImport(t *testing.T) {
	_, withEmb := withEmbedding(t, true)
	src := newClient(t, withEmb)
	mustPutItem(t, src, "mem.a/1", map[string]any{"value": map[string]any{"text": "a car"}, "index": []string{"text"}, "ttl_seconds": 3600})
	mustPutItem(t, src, "mem.a/1", map[string]any{"value": map[string]any{"text": "a car", "v": 2}, "index": []string{"text"}})
	mustPutItem(t, src, "mem.b/2", map[string]any{"value": map[string]any{"n": 1}})
	mustPutItem(t, src, "mem.b/2?user_id=ada", map[string]any{"value": map[string]any{"n": "ada's"}})
	mustPutItem(t, src, "other/3", map[string]any{"value": map[string]any{}})
	waitItemsEmbedded(t, src, "mem.a/1")

	shared := mustExportItems(t, src, "?namespace_prefix=mem")
	if n := len(splitLines(t, shared)); n != 4 {
		t.Fatalf("shared export under mem has %d lines:\n%s", n, shared)
	}
	if !bytes.Contains(shared, []byte(`"vectors":[{"field":"text","text":"a car","model":"logbook-standin","embedding":[`)) {
		t.Fatalf("export lacks the embedding:\n%s", shared)
	}
	all := mustExportItems(t, src, "?all_users=true")
	if n := len(splitLines(t, all)); n != 6 {
		t.Fatalf("all_users export has %d lines:\n%s", n, all)
	}

	// Into another server: the same items, the same bytes again, the
	// embedding kept (nothing to embed: no endpoint here).
	dst := newClient(t)
	var res model.ItemsImportResult
	importItems(dst, all, "").want(t, http.StatusOK, &res)
	if res.Items != 4 {
		t.Fatalf("imported %d items", res.Items)
	}
	if again := mustExportItems(t, dst, "?all_users=true"); !bytes.Equal(again, all) {
		t.Fatalf("export after import differs:\n%s\nwas\n%s", again, all)
	}
	var it model.Item
	dst.do("GET", "/v1/items/mem.a/1", nil).want(t, http.StatusOK, &it)
	if it.Version != 2 || it.EmbeddingState == nil || *it.EmbeddingState != model.EmbeddingReady {
		t.Fatalf("imported item %+v", it)
	}
	dst.do("GET", "/v1/items/mem.b/2?user_id=ada", nil).want(t, http.StatusOK, &it)
	if string(it.Value) != `{"n":"ada's"}` {
		t.Fatalf("ada's item %s", it.Value)
	}

	t.Run("conflict_then_replace", func(t *testing.T) {
		p := importItems(dst, all, "").wantProblem(t, http.StatusConflict, "conflict")
		if len(p.Errors) != 1 || p.Errors[0].Field != "line 2" {
			t.Fatalf("errors %+v", p.Errors)
		}
		mustPutItem(t, dst, "mem.b/2", map[string]any{"value": map[string]any{"n": "changed"}})
		importItems(dst, all, "?replace=true").want(t, http.StatusOK, nil)
		dst.do("GET", "/v1/items/mem.b/2", nil).want(t, http.StatusOK, &it)
		if string(it.Value) != `{"n":1}` {
			t.Fatalf("replace left %s", it.Value)
		}
	})

	t.Run("refused", func(t *testing.T) {
		lines := splitLines(t, shared)
		cases := []struct {
			name   string
			body   string
			status int
			code   string
		}{
			{"changed", strings.Replace(string(shared), `"a car"`, `"a bus"`, 1), 422, "invalid_import"},
			{"truncated", string(bytes.Join(lines[:len(lines)-1], nil)), 422, "invalid_import"},
			{"not_json", "nope\n", 400, "malformed_json"},
			{"no_header", string(bytes.Join(lines[1:], nil)), 422, "invalid_import"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				importItems(newClient(t), []byte(tc.body), "").wantProblem(t, tc.status, tc.code)
			})
		}
	})

	t.Run("user_bound", func(t *testing.T) {
		admin := mustKey(t, src, "default", model.ScopeAdmin)
		var bound model.NewAPIKey
		src.as(admin.Key).do("POST", "/v1/admin/keys", map[string]any{"scope": "write", "user_id": "ada"}).want(t, http.StatusCreated, &bound)
		bc := src.as(bound.Key)
		own := mustExportItems(t, bc, "")
		if n := len(splitLines(t, own)); n != 3 || !bytes.Contains(own, []byte(`"user_id":"ada"`)) {
			t.Fatalf("ada's export:\n%s", own)
		}
		bc.do("GET", "/v1/items/export?all_users=true", nil).wantProblem(t, http.StatusForbidden, "forbidden")
		importItems(bc, own, "?replace=true").wantProblem(t, http.StatusForbidden, "forbidden")
	})
}
