package api_test

import (
	"net/http"
	"testing"

	"github.com/logbook/logbook/internal/model"
)

// TestArchivalVectorSearch: the best answer shares no word with the query, so
// only a search by meaning finds it first.
func TestArchivalVectorSearch(t *testing.T) {
	c := newClient(t)
	c = c.as(mustKey(t, c, "mine", model.ScopeWrite).Key)
	mustCreateAgent(t, c, map[string]any{"id": "a", "name": "a"})
	mustCreateAgent(t, c, map[string]any{"id": "b", "name": "b"})
	add := func(c *client, agent, content string, vec []float32) model.Passage {
		var p model.Passage
		c.do("POST", "/v1/agents/"+agent+"/archival", map[string]any{"content": content, "embedding": vec, "embedding_model": "toy-4"}).
			want(t, http.StatusCreated, &p)
		return p
	}
	best := add(c, "a", "The user drives an automobile to work.", []float32{0.9, 0.1, 0, 0})
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "Car keys are kept by the door: car, car."}).want(t, http.StatusCreated, nil)
	add(c, "a", "The user likes tea.", []float32{0, 1, 0, 0})
	c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "No embedding, car."}).want(t, http.StatusCreated, nil)
	add(c, "b", "Another agent's automobile.", []float32{1, 0, 0, 0})
	other := mustKey(t, c, "other", model.ScopeWrite)
	oc := c.as(other.Key)
	mustCreateAgent(t, oc, map[string]any{"id": "a", "name": "a"})
	add(oc, "a", "Another tenant's automobile.", []float32{1, 0, 0, 0})

	query := []float32{1, 0, 0, 0} // "car"
	var hits struct{ Data []model.PassageHit }
	c.do("GET", "/v1/agents/a/archival/search?q=car", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) == 0 || hits.Data[0].ID == best.ID {
		t.Fatalf("keyword: %+v", hits.Data)
	}
	// Hybrid fuses: "work" is a weak keyword hit of the best answer, and the
	// cosine ranking lifts it over the passages that only say "car".
	for mode, q := range map[string]string{"vector": "car", "hybrid": "car work"} {
		c.do("POST", "/v1/agents/a/archival/search", map[string]any{"mode": mode, "q": q, "query_embedding": query}).
			want(t, http.StatusOK, &hits)
		if len(hits.Data) == 0 || hits.Data[0].ID != best.ID {
			t.Fatalf("%s: %+v", mode, hits.Data)
		}
		for _, h := range hits.Data {
			if h.AgentID != "a" || h.Content == "Another tenant's automobile." {
				t.Errorf("%s: leaked %+v", mode, h)
			}
		}
	}
	c.do("GET", "/v1/agents/a/archival/search?mode=vector&query_embedding=1,0,0,0&limit=1", nil).want(t, http.StatusOK, &hits)
	if len(hits.Data) != 1 || hits.Data[0].ID != best.ID {
		t.Fatalf("GET vector: %+v", hits.Data)
	}

	wantField := func(res *response, field string) {
		t.Helper()
		p := res.wantProblem(t, http.StatusUnprocessableEntity, "validation_failed")
		if len(p.Errors) != 1 || p.Errors[0].Field != field {
			t.Errorf("want an error naming %s: %+v", field, p)
		}
	}
	wantField(c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "x", "embedding": []float32{1, 0, 0}, "embedding_model": "toy-4"}), "embedding")
	wantField(c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "x", "embedding": []float32{1, 0, 0, 0}, "embedding_model": "other"}), "embedding_model")
	wantField(c.do("POST", "/v1/agents/a/archival", map[string]any{"content": "x", "embedding": []float32{1, 0, 0, 0}}), "embedding_model")
	wantField(c.do("POST", "/v1/agents/a/archival/search", map[string]any{"mode": "vector", "query_embedding": []float32{1, 0}}), "query_embedding")
	wantField(c.do("GET", "/v1/agents/a/archival/search?mode=hybrid&q=car&query_embedding=1,0", nil), "query_embedding")
	wantField(c.do("POST", "/v1/agents/a/archival/search", map[string]any{"mode": "vector"}), "query_embedding")
}
