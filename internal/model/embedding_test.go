package model

import "testing"

func TestEmbeddingURLMustBeUnderAnAllowedOne(t *testing.T) {
	allowed := []string{"http://127.0.0.1:11435", "https://api.openai.com/v1/"}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:11435/v1/embeddings", true},
		{"http://127.0.0.1:11435", true},
		{"https://api.openai.com/v1/embeddings", true},
		{"http://127.0.0.1:11435.evil.com/v1/embeddings", false},
		{"http://127.0.0.1:114350/v1/embeddings", false},
		{"http://127.0.0.1:11435@evil.com/v1/embeddings", false},
		{"https://api.openai.com/v2/embeddings", false},
		{"http://api.openai.com/v1/embeddings", false},
		{"https://api.openai.com.evil.com/v1/embeddings", false},
		{"file:///etc/passwd", false},
		{"http://169.254.169.254/latest/meta-data", false},
	} {
		err := EmbeddingConfig{URL: tc.url, Model: "m"}.Check("embedding", allowed)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
	if err := (EmbeddingConfig{URL: "http://127.0.0.1:11435/v1", Model: "m", APIKeyEnv: "AWS_SECRET_ACCESS_KEY"}).Check("embedding", allowed); err == nil {
		t.Error("a key variable outside LOGBOOK_EMBEDDING_KEY* was allowed")
	}
}
