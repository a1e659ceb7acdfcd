package model

import (
	"strings"
	"testing"
)

// TestEmbeddingURLAllowlist: a URL is allowed only when its canonical form
// is an allowed prefix or below it on a segment boundary; a URL that only
// looks as if it were below one (dot segments, escapes of '/', '.' or '\',
// doubled slashes, credentials, another port or host) is refused, whatever
// a server at the other end would make of it.
func TestEmbeddingURLAllowlist(t *testing.T) {
	allowed := []string{"http://127.0.0.1:11435", "https://api.openai.com/v1/", "http://ollama:11434/v1", "http://[::1]:9000/"}
	for _, tc := range []struct {
		name, url string
		ok        bool
	}{
		{"below_a_host", "http://127.0.0.1:11435/v1/embeddings", true},
		{"the_host_itself", "http://127.0.0.1:11435", true},
		{"below_a_path", "https://api.openai.com/v1/embeddings", true},
		{"the_path_itself", "http://ollama:11434/v1", true},
		{"case_of_scheme_and_host", "HTTPS://API.OpenAI.com/v1/embeddings", true},
		{"default_port", "https://api.openai.com:443/v1/embeddings", true},
		{"escaped_unreserved", "https://api.openai.com/v1/%65mbeddings", true},
		{"query_kept", "https://api.openai.com/v1/embeddings?api-version=2024-02-01", true},
		{"ipv6", "http://[::1]:9000/v1/embeddings", true},
		{"trailing_dot", "http://ollama.:11434/v1/embeddings", true},

		{"path_continues_without_a_slash", "http://ollama:11434/v1x/embeddings", false},
		{"dot_dot", "https://api.openai.com/v1/../admin", false},
		{"dot_dot_at_the_end", "https://api.openai.com/v1/..", false},
		{"escaped_dot_dot", "https://api.openai.com/v1/%2e%2e/admin", false},
		{"escaped_dot_dot_upper", "https://api.openai.com/v1/%2E%2E/admin", false},
		{"half_escaped_dot_dot", "https://api.openai.com/v1/.%2e/admin", false},
		{"dot", "https://api.openai.com/v1/./embeddings", false},
		{"dot_dot_slash_dot", "https://api.openai.com/v1/./.././admin", false},
		{"double_slash", "https://api.openai.com/v1//embeddings", false},
		{"backslash", `https://api.openai.com/v1\..\admin`, false},
		{"escaped_backslash", "https://api.openai.com/v1/%5c..%5cadmin", false},
		{"escaped_slash", "https://api.openai.com/v1%2f..%2fadmin", false},
		{"escaped_slash_upper", "https://api.openai.com/v1/x%2F..%2F..%2Fadmin", false},
		{"escaped_nul", "https://api.openai.com/v1/x%00", false},
		{"control_character", "https://api.openai.com/v1/x\x01", false},
		{"space", "https://api.openai.com/v1/em beddings", false},
		{"non_ascii", "https://api.openai.com/v1/émbeddings", false},
		{"fragment", "https://api.openai.com/v1/embeddings#x", false},
		{"malformed_escape", "https://api.openai.com/v1/%zz", false},
		{"credentials", "https://user:pw@api.openai.com/v1/embeddings", false},
		{"credentials_that_look_like_the_host", "http://127.0.0.1:11435@evil.com/v1/embeddings", false},
		{"host_continues", "http://127.0.0.1:11435.evil.com/v1/embeddings", false},
		{"port_continues", "http://127.0.0.1:114350/v1/embeddings", false},
		{"other_port", "http://127.0.0.1:11436/v1/embeddings", false},
		{"other_scheme", "http://api.openai.com/v1/embeddings", false},
		{"other_host", "https://api.openai.com.evil.com/v1/embeddings", false},
		{"other_path", "https://api.openai.com/v2/embeddings", false},
		{"escaped_host", "http://127.0.0.1%2e:11435/v1", false},
		{"ipv6_zone", "http://[fe80::1%25eth0]:9000/", false},
		{"file", "file:///etc/passwd", false},
		{"no_host", "http:///v1/embeddings", false},
		{"opaque", "http:api.openai.com/v1", false},
		{"metadata_service", "http://169.254.169.254/latest/meta-data", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := EmbeddingConfig{URL: tc.url, Model: "m"}
			err := c.Check("embedding", "acme", allowed)
			if (err == nil) != tc.ok {
				t.Fatalf("%q: err = %v, want ok=%v", tc.url, err, tc.ok)
			}
			if err != nil {
				if e := AsError(err); len(e.Fields) != 1 || e.Fields[0].Field != "embedding.url" {
					t.Fatalf("%q: err = %+v, want one naming embedding.url", tc.url, e)
				}
				if EmbeddingURLAllowed(tc.url, allowed) {
					t.Fatalf("%q: refused by Check, allowed at call time", tc.url)
				}
				return
			}
			// What is stored is canonical, allowed, and canonical again.
			again, err := CanonicalEmbeddingURL(c.URL)
			if err != nil || again != c.URL || !EmbeddingURLAllowed(c.URL, allowed) {
				t.Fatalf("%q became %q: again %q, %v", tc.url, c.URL, again, err)
			}
		})
	}
}

func TestCanonicalEmbeddingURL(t *testing.T) {
	for in, want := range map[string]string{
		"HTTP://Ollama:11434/v1/embeddings":           "http://ollama:11434/v1/embeddings",
		"http://ollama:80/v1/embeddings":              "http://ollama/v1/embeddings",
		"https://h:0443/v1":                           "https://h/v1",
		"http://h":                                    "http://h/",
		"http://h:/x":                                 "http://h/x",
		"http://h/%7e%41%3b%3B":                       "http://h/~A%3B%3B",
		"http://[0:0::1]:8080/x?a=1&b=%2F":            "http://[::1]:8080/x?a=1&b=%2F",
		"http://h/v1/embeddings/":                     "http://h/v1/embeddings/",
		"https://api.openai.com/v1/embeddings?x=../y": "https://api.openai.com/v1/embeddings?x=../y",
	} {
		got, err := CanonicalEmbeddingURL(in)
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"http://h/x?y#z", "http://h:99999/", "http://h:0/", "http://a..b/", "http://h/a/%2e"} {
		if got, err := CanonicalEmbeddingURL(bad); err == nil {
			t.Errorf("%q: got %q, want an error", bad, got)
		}
	}
	if err := CheckEmbeddingPrefix("http://h/v1?x=1"); err == nil {
		t.Error("a prefix with a query was accepted")
	}
}

// TestTenantEmbeddingKeyEnv: each tenant has its own variable, no two
// tenants the same one (case, punctuation and the hex form included), and
// none is the server's.
func TestTenantEmbeddingKeyEnv(t *testing.T) {
	tenants := []string{"acme", "ACME", "Acme", "a.b", "a_b", "a-b", "a:b", "ab", "x", "x_61",
		"61", "default", "x41434d45", strings.Repeat("z", 128), strings.Repeat("Z.", 64)}
	seen := map[string]string{}
	for _, tn := range tenants {
		v := TenantEmbeddingKeyEnv(tn)
		if other, ok := seen[v]; ok {
			t.Errorf("%q and %q share %s", tn, other, v)
		}
		seen[v] = tn
		if v == EmbeddingKeyEnvPrefix || !strings.HasPrefix(v, EmbeddingKeyEnvPrefix+"_") || len(v) > MaxEmbeddingKeyEnv {
			t.Errorf("%q: %s", tn, v)
		}
		if strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
			t.Errorf("%q: %s is not a portable variable name", tn, v)
		}
	}
	if got := TenantEmbeddingKeyEnv("acme"); got != "LOGBOOK_EMBEDDING_KEY_ACME" {
		t.Errorf("acme: %s", got)
	}
	if got := TenantEmbeddingKeyEnv("Acme.eu"); got != "LOGBOOK_EMBEDDING_KEY_X_41636D652E6575" {
		t.Errorf("Acme.eu: %s", got)
	}

	// A config may name its own tenant's variable, or none; never another's.
	for _, tc := range []struct {
		env string
		ok  bool
	}{
		{"", true},
		{"LOGBOOK_EMBEDDING_KEY_ACME", true},
		{"LOGBOOK_EMBEDDING_KEY_OTHER", false},
		{"LOGBOOK_EMBEDDING_KEY", false},
		{"LOGBOOK_EMBEDDING_KEY_acme", false},
		{"AWS_SECRET_ACCESS_KEY", false},
	} {
		c := EmbeddingConfig{URL: "http://h/v1/embeddings", Model: "m", APIKeyEnv: tc.env}
		err := c.Check("embedding", "acme", []string{"http://h/"})
		if (err == nil) != tc.ok {
			t.Errorf("%q: err = %v, want ok=%v", tc.env, err, tc.ok)
		}
		if err != nil && AsError(err).Fields[0].Field != "embedding.api_key_env" {
			t.Errorf("%q: %v", tc.env, err)
		}
	}
}
