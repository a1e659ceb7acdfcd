package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/logbook/logbook/internal/repo/sqlite"
)

// --wal-max-bytes reaches the serving SQLite store: its default, a size, and
// 0 for no bound (which the store spells negatively, its own 0 being the
// default). A one-shot command's store leaves the bound to the server.
func TestWALMaxBytesReachesTheStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     []string
		serving bool
		want    int64
	}{
		{"default", nil, true, sqlite.DefaultWALMaxBytes},
		{"size", []string{"LOGBOOK_WAL_MAX_BYTES", "1048576"}, true, 1 << 20},
		{"zero_is_no_bound", []string{"LOGBOOK_WAL_MAX_BYTES", "0"}, true, 0},
		{"one_shot_command", []string{"LOGBOOK_WAL_MAX_BYTES", "1048576"}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := parseConfig("logbook", []string{"--db", filepath.Join(t.TempDir(), "l.db")}, envOf(tc.env...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Migrate = true
			st, err := openStore(context.Background(), cfg, tc.serving)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if got := st.(*sqlite.Store).WALMaxBytes(); got != tc.want {
				t.Errorf("the store's WAL bound = %d, want %d", got, tc.want)
			}
		})
	}
}
