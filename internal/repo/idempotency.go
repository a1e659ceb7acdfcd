package repo

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/logbook/logbook/internal/model"
)

// HashMessage fingerprints a message for its idempotency_key: the same key
// with another body is a conflict, with the same body a replay.
func HashMessage(m model.NewMessage) []byte {
	b, _ := json.Marshal(m) // struct fields in a fixed order, map keys sorted
	h := sha256.Sum256(b)
	return h[:]
}

// HashRequest fingerprints a whole request, shape included, for its
// Idempotency-Key.
func HashRequest(req model.AppendRequest) []byte {
	h := sha256.New()
	if req.Batch {
		h.Write([]byte("batch\n"))
	} else {
		h.Write([]byte("single\n"))
	}
	b, _ := json.Marshal(req.Messages)
	h.Write(b)
	return h.Sum(nil)
}

// IdempotencyConflict is a key reused with a different body.
func IdempotencyConflict(field, key string) *model.Error {
	return &model.Error{Kind: model.KindConflict, Code: "idempotency_conflict",
		Msg:    fmt.Sprintf("idempotency key %q was already used with a different request body", key),
		Fields: []model.FieldError{{Field: field, Message: "already used with a different body"}}}
}
