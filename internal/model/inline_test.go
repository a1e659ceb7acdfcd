package model

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Only base64 that re-encodes to the same text is lifted: anything else could
// not be given back byte for byte.
func TestLiftableDataURL(t *testing.T) {
	data := []byte(strings.Repeat("\x00\x01\xfe\xff", MinLiftedChars/4+1))
	b64 := base64.StdEncoding.EncodeToString(data)
	for name, tc := range map[string]struct {
		url       string
		mediaType string
		lifted    bool
	}{
		"png":                {"data:image/png;base64," + b64, "image/png", true},
		"params":             {"data:image/png;name=a.png;base64," + b64, "image/png; name=a.png", true},
		"no_media_type":      {"data:;base64," + b64, "text/plain; charset=US-ASCII", true},
		"bad_media_type":     {"data:not a type;base64," + b64, "application/octet-stream", true},
		"short":              {"data:image/png;base64,AAAA", "", false},
		"not_base64":         {"data:text/plain," + strings.Repeat("a", MinLiftedChars), "", false},
		"line_break":         {"data:image/png;base64," + b64[:76] + "\n" + b64[76:], "", false},
		"url_safe_alphabet":  {"data:image/png;base64," + strings.ReplaceAll(strings.ReplaceAll(b64, "+", "-"), "/", "_"), "", false},
		"unpadded":           {"data:image/png;base64," + strings.TrimRight(base64.StdEncoding.EncodeToString(data[1:]), "="), "", false},
		"padding_bits_not_0": {"data:image/png;base64," + b64[:len(b64)-3] + "B==", "", false},
		"https":              {"https://example.com/" + strings.Repeat("a", MinLiftedChars), "", false},
	} {
		t.Run(name, func(t *testing.T) {
			mt, got, ok := LiftableDataURL(tc.url)
			if ok != tc.lifted || mt != tc.mediaType {
				t.Fatalf("lifted %v as %q, want %v as %q", ok, mt, tc.lifted, tc.mediaType)
			}
			if !ok {
				return
			}
			p := Part{Type: PartImage, URL: tc.url}
			p.Lift("file_00000000000000000000000000000000")
			if !p.Lifted() || !IsCutDataURL(p.URL) {
				t.Fatalf("lifted form %+v", p)
			}
			p.Inflate(got)
			if p.URL != tc.url || p.FileID != "" {
				t.Errorf("inflated back to %.60q…, want the URL as sent", p.URL)
			}
		})
	}
}
