package api_test

import (
	"encoding/json"
	"testing"
	"time"
)

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

func sleep(ms int) { time.Sleep(time.Duration(ms) * time.Millisecond) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
