package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseCORSOrigins(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{" , ", nil, false},
		{"https://dash.example.com", []string{"https://dash.example.com"}, false},
		{"https://dash.example.com/, http://localhost:5173", []string{"https://dash.example.com", "http://localhost:5173"}, false},
		{"HTTPS://Dash.Example.COM:443", []string{"https://dash.example.com"}, false},
		{"http://localhost:80", []string{"http://localhost"}, false},
		{"http://localhost:443", []string{"http://localhost:443"}, false},
		{"http://[::1]:8080", []string{"http://[::1]:8080"}, false},
		{"chrome-extension://abcdef", []string{"chrome-extension://abcdef"}, false},
		{"*", []string{"*"}, false},
		{"dash.example.com", nil, true},
		{"https://dash.example.com/app", nil, true},
		{"https://dash.example.com?x=1", nil, true},
		{"https://dash.example.com#x", nil, true},
		{"https://user@dash.example.com", nil, true},
		{"https://dash.example.com//", nil, true},
		{"null", nil, true},
		{"https://ok.example, nope", nil, true},
	} {
		got, err := parseCORSOrigins(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseCORSOrigins(%q) error = %v, want an error: %v", tc.in, err, tc.wantErr)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("parseCORSOrigins(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCORSAnyOriginRefusedInOpenMode(t *testing.T) {
	db := filepath.Join(t.TempDir(), "logbook.db")
	err := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--cors-origins", "*"},
		envOf("LOGBOOK_DB", db, "LOGBOOK_LOG_LEVEL", "warn"), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "open mode") {
		t.Fatalf("run = %v, want a refusal naming open mode", err)
	}
}

func TestCORSOriginsFromEnvironment(t *testing.T) {
	db := filepath.Join(t.TempDir(), "logbook.db")
	base, _ := runInProcess(t, []string{"--addr", "127.0.0.1:0"},
		envOf("LOGBOOK_DB", db, "LOGBOOK_LOG_LEVEL", "warn", "LOGBOOK_CORS_ORIGINS", "https://dash.example.com/"))
	for _, tc := range []struct{ origin, want string }{
		{"https://dash.example.com", "https://dash.example.com"},
		{"https://other.example.com", ""},
	} {
		req, err := http.NewRequest("GET", base+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", tc.origin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != tc.want {
			t.Errorf("Origin %s: Access-Control-Allow-Origin = %q, want %q", tc.origin, got, tc.want)
		}
	}
}
