package embed

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
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
			c := &Client{Allowed: []string{ts.URL}}
			_, err := c.Embed(context.Background(), endpoint(ts.URL, 2), []string{"a", "b"})
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
		c := &Client{Timeout: 50 * time.Millisecond, Allowed: []string{ts.URL}}
		_, err := c.Embed(context.Background(), endpoint(ts.URL, 0), []string{"a"})
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
	c := &Client{Allowed: []string{ts.URL}}
	vecs, err := c.Embed(context.Background(), Endpoint{Config: model.EmbeddingConfig{URL: ts.URL, Model: standin.Model}, Tenant: "t"},
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

// endpoint is tenant t's config of url.
func endpoint(url string, dims int) Endpoint {
	return Endpoint{Config: model.EmbeddingConfig{URL: url, Model: "m", Dimensions: dims}, Tenant: "t"}
}

// outside is a server outside every allowlist that counts what reaches it.
type outside struct {
	*httptest.Server
	calls atomic.Int32
}

func newOutside(t *testing.T) *outside {
	o := &outside{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.calls.Add(1)
		(&standin.Server{Dims: 2}).ServeHTTP(w, r)
	}))
	t.Cleanup(o.Close)
	return o
}

// TestClientNeverFollowsRedirects: whatever redirect an allowed endpoint
// answers, nothing reaches where it points (neither the key nor the texts),
// and the call fails for good, in fixed words; also with a transport of
// its own, as cmd/server passes one.
func TestClientNeverFollowsRedirects(t *testing.T) {
	out := newOutside(t)
	for _, code := range []int{301, 302, 303, 307, 308} {
		for _, tr := range []http.RoundTripper{nil, &http.Transport{}} {
			t.Run(strconv.Itoa(code), func(t *testing.T) {
				ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, out.URL+"/v1/embeddings", code)
				}))
				defer ep.Close()
				c := &Client{Transport: tr, Allowed: []string{ep.URL}, Getenv: func(string) string { return "sk-tenant" }}
				e := endpoint(ep.URL+"/v1/embeddings", 2)
				e.Config.APIKeyEnv = model.TenantEmbeddingKeyEnv("t")
				_, err := c.Embed(context.Background(), e, []string{"secret text"})
				var ee *Error
				if !errors.As(err, &ee) || ee.Reason != ReasonRedirect || !ee.Permanent {
					t.Fatalf("err = %#v", err)
				}
				if want := "the embedding endpoint answered HTTP " + strconv.Itoa(code); !strings.HasPrefix(ee.Msg, want) || strings.Contains(ee.Msg, out.URL) {
					t.Fatalf("message %q", ee.Msg)
				}
				if n := out.calls.Load(); n != 0 {
					t.Fatalf("the redirect's target was called %d times", n)
				}
			})
		}
	}
}

// TestClientErrorsQuoteNothingRemote: a tenant reads an endpoint's failure
// in Logbook's words only: never the answer's body, nor an address.
func TestClientErrorsQuoteNothingRemote(t *testing.T) {
	const secret = "internal-db.corp:5432 password=hunter2"
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"refusal", 400, `{"error":{"message":"` + secret + `"}}`, "the embedding endpoint answered HTTP 400"},
		{"overload", 503, secret, "the embedding endpoint answered HTTP 503"},
		{"not_json", 200, secret, "the embedding endpoint's answer is not an embeddings list"},
		{"json_error", 200, `{"data": "` + secret + `"}`, "the embedding endpoint's answer is not an embeddings list"},
		{"redirect", 302, secret, "the embedding endpoint answered HTTP 302, a redirect, which the server does not follow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "http://"+secret)
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer ep.Close()
			c := &Client{Allowed: []string{ep.URL}}
			_, err := c.Embed(context.Background(), endpoint(ep.URL, 2), []string{"a"})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			var e *Error
			if errors.As(err, &e); e.Cause == nil || !strings.Contains(e.Cause.Error(), "hunter2") && tc.status != 200 {
				t.Errorf("the log's cause lost the details: %v", e.Cause)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		ep := httptest.NewServer(http.NotFoundHandler())
		url := ep.URL
		ep.Close()
		c := &Client{Allowed: []string{url}}
		_, err := c.Embed(context.Background(), endpoint(url, 2), []string{"a"})
		if err == nil || err.Error() != "the embedding endpoint could not be reached" {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestClientRefusesNumbersOutsideFloat32: embeddings are stored as float32,
// so a number finite as a float64 but not as a float32 is refused; what a
// float32 holds (its largest, subnormals, -0, numbers rounding to 0) is not.
func TestClientRefusesNumbersOutsideFloat32(t *testing.T) {
	for _, tc := range []struct {
		num string
		ok  bool
	}{
		{"1e39", false},
		{"-1e39", false},
		{"3.5e38", false},
		{"3.4028236e38", false},
		{"1e308", false},
		{"3.4028234e38", true},
		{"-3.4028234e38", true},
		{"1e-45", true},
		{"1e-50", true},
		{"-0", true},
		{`"NaN"`, false},
		{`"Infinity"`, false},
	} {
		t.Run(tc.num, func(t *testing.T) {
			ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"data":[{"index":0,"embedding":[1,` + tc.num + `]}]}`))
			}))
			defer ep.Close()
			c := &Client{Allowed: []string{ep.URL}}
			vecs, err := c.Embed(context.Background(), endpoint(ep.URL, 2), []string{"a"})
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if err == nil && (math.IsInf(float64(vecs[0][1]), 0) || math.IsNaN(float64(vecs[0][1]))) {
				t.Fatalf("stored %v", vecs[0][1])
			}
		})
	}
}

// TestClientChecksEveryCall: what a config names is checked again at each
// call, since the allowlist may have changed since it was stored, and a
// config stored before the rules may break them: no call is made for a URL
// outside the allowlist now, or not canonical, and a tenant's config sends
// only the tenant's own key.
func TestClientChecksEveryCall(t *testing.T) {
	var got atomic.Value
	got.Store("")
	calls := atomic.Int32{}
	ep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		got.Store(r.Header.Get("Authorization"))
		(&standin.Server{Dims: 2}).ServeHTTP(w, r)
	}))
	defer ep.Close()
	env := map[string]string{"LOGBOOK_EMBEDDING_KEY": "sk-server", "LOGBOOK_EMBEDDING_KEY_A": "sk-a", "LOGBOOK_EMBEDDING_KEY_B": "sk-b"}
	c := &Client{Allowed: []string{ep.URL + "/v1"}, Getenv: func(k string) string { return env[k] }}
	for _, tc := range []struct {
		name    string
		ep      Endpoint
		wantKey string // "-": refused, no call
	}{
		{"own_key", Endpoint{Config: model.EmbeddingConfig{URL: ep.URL + "/v1/embeddings", Model: "m", APIKeyEnv: "LOGBOOK_EMBEDDING_KEY_A"}, Tenant: "a"}, "Bearer sk-a"},
		{"no_key", Endpoint{Config: model.EmbeddingConfig{URL: ep.URL + "/v1/embeddings", Model: "m"}, Tenant: "a"}, ""},
		{"server_key", Endpoint{Config: model.EmbeddingConfig{URL: ep.URL + "/v1/embeddings", Model: "m", APIKeyEnv: "LOGBOOK_EMBEDDING_KEY"}, Server: true}, "Bearer sk-server"},
		{"another_tenants_key", Endpoint{Config: model.EmbeddingConfig{URL: ep.URL + "/v1/embeddings", Model: "m", APIKeyEnv: "LOGBOOK_EMBEDDING_KEY_B"}, Tenant: "a"}, "-"},
		{"the_servers_key", Endpoint{Config: model.EmbeddingConfig{URL: ep.URL + "/v1/embeddings", Model: "m", APIKeyEnv: "LOGBOOK_EMBEDDING_KEY"}, Tenant: "a"}, "-"},
		{"not_allowed_now", Endpoint{Config: model.EmbeddingConfig{URL: ep.URL + "/v2/embeddings", Model: "m"}, Tenant: "a"}, "-"},
		{"dot_segments", Endpoint{Config: model.EmbeddingConfig{URL: ep.URL + "/v1/../v2/embeddings", Model: "m"}, Tenant: "a"}, "-"},
		{"escaped_dot_segments", Endpoint{Config: model.EmbeddingConfig{URL: ep.URL + "/v1/%2e%2e/v2", Model: "m"}, Tenant: "a"}, "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			_, err := c.Embed(context.Background(), tc.ep, []string{"a"})
			if tc.wantKey == "-" {
				var e *Error
				if !errors.As(err, &e) || e.Reason != ReasonRefused || !e.Permanent || calls.Load() != before {
					t.Fatalf("err = %v, calls %d → %d: want a refusal without a call", err, before, calls.Load())
				}
				return
			}
			if err != nil || got.Load() != tc.wantKey {
				t.Fatalf("err = %v, Authorization %q, want %q", err, got.Load(), tc.wantKey)
			}
		})
	}
}
