package sqlite

import (
	"encoding/hex"

	"github.com/google/uuid"
)

// newID returns prefix + a UUIDv7 in hex: ids sort by creation time, which keeps
// index inserts at the right-hand edge of the b-tree.
func newID(prefix string) string {
	u := uuid.Must(uuid.NewV7())
	return prefix + hex.EncodeToString(u[:])
}
