package model

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// DefaultMaxFileBytes is the largest file POST /v1/files takes unless the
// server is told otherwise (--max-file-bytes).
const DefaultMaxFileBytes = 20 << 20

// File is bytes a tenant uploaded for messages to reference (an image, a PDF).
type File struct {
	ID        string `json:"id"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	CreatedAt Time   `json:"created_at"`
}

// FileIDOf names the file with these bytes (their SHA-256, hex) and media type.
// The id is derived, not drawn: the same bytes uploaded twice are one file, and
// a session exported from one server names the same files on another.
func FileIDOf(sum, mediaType string) string {
	h := sha256.Sum256([]byte("logbook-file-v1\n" + mediaType + "\n" + sum))
	return PrefixFile + hex.EncodeToString(h[:16])
}

// ValidFileID reports whether s has the form FileIDOf gives.
func ValidFileID(s string) bool {
	hexPart, ok := strings.CutPrefix(s, PrefixFile)
	if !ok || len(hexPart) != 32 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		c := hexPart[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
