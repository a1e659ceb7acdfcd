package embed

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/logbook/logbook/internal/embed/standin"
	"github.com/logbook/logbook/internal/model"
)

// TestClientRefusesBadAnswers: an endpoint's answer is checked before any of
// it is stored; refusals and nonsense are permanent, overload and timeouts not.
func TestClientRefusesBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		permanent bool
	}{
		{"not json", 200, `<html>`, true},
		{"too few", 200, `{"data":[{"index":0,"embedding":[1,2]}]}`, true},
		{"index twice", 200, `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[1,2]}]}`, true},
		{"index out of range", 200, `{"data":[{"index":0,"embedding":[1,2]},{"index":5,"embedding":[1,2]}]}`, true},
		{"lengths differ", 200, `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2,3]}]}`, true},
		{"wrong dims", 200, `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1]}]}`, true},
		{"empty", 200, `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]}`, true},
		{"bad request", 400, `{"error":{"message":"too long"}}`, true},
		{"unauthorized", 401, `{}`, true},
		{"rate limited", 429, `{}`, false},
		{"overloaded", 503, `{}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			c := &Client{}
			_, err := c.Embed(context.Background(), model.EmbeddingConfig{URL: ts.URL, Model: "m", Dimensions: 2}, []string{"a", "b"})
			var e *Error
			if !errors.As(err, &e) || e.Permanent != tc.permanent {
				t.Fatalf("err = %#v, want permanent=%v", err, tc.permanent)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		st := &standin.Server{}
		st.SetDelay(time.Second)
		ts := httptest.NewServer(st)
		defer ts.Close()
		c := &Client{Timeout: 50 * time.Millisecond}
		_, err := c.Embed(context.Background(), model.EmbeddingConfig{URL: ts.URL, Model: "m"}, []string{"a"})
		var e *Error
		if !errors.As(err, &e) || e.Permanent || !strings.Contains(err.Error(), "did not answer") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestStandinIsDeterministicAndKnowsSynonyms: the same text gives the same
// vector, and a synonym is closer than an unrelated word.
func TestStandinIsDeterministicAndKnowsSynonyms(t *testing.T) {
	ts := httptest.NewServer(&standin.Server{Dims: 32})
	defer ts.Close()
	c := &Client{}
	vecs, err := c.Embed(context.Background(), model.EmbeddingConfig{URL: ts.URL, Model: standin.Model},
		[]string{"car", "automobile", "banana", "car"})
	if err != nil {
		t.Fatal(err)
	}
	dot := func(a, b []float32) (d float32) {
		for i := range a {
			d += a[i] * b[i]
		}
		return d
	}
	if dot(vecs[0], vecs[3]) < 0.999 || dot(vecs[0], vecs[1]) < 0.999 || dot(vecs[0], vecs[2]) > 0.9 {
		t.Fatalf("car·car %v car·automobile %v car·banana %v", dot(vecs[0], vecs[3]), dot(vecs[0], vecs[1]), dot(vecs[0], vecs[2]))
	}
}
