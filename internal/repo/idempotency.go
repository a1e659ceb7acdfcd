package repo

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync/atomic"

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

// Idempotency keeps the Idempotency-Key of every write that has no
// idempotency of its own. A key is claimed by the write it answers, inside
// that write's transaction (an IdempotencyClaim in the write's context: see
// WithIdempotencyClaim), so the claim commits with the write or not at all;
// the answer is stored after, by SaveIdempotentAnswer.
type Idempotency interface {
	// IdempotentRequest returns the record of k made at since or later
	// (older records are expired), and whether there is one.
	IdempotentRequest(ctx context.Context, k model.IdempotencyKey, since model.Time) (model.IdempotentRecord, bool, error)
	// SaveIdempotentAnswer stores the answer of the request that claimed k
	// with fingerprint; a record that holds an answer, or another
	// fingerprint, is left as it is.
	SaveIdempotentAnswer(ctx context.Context, k model.IdempotencyKey, fingerprint []byte, a model.IdempotentAnswer) error
	// ExpireIdempotencyKeys deletes the records made before cutoff, in
	// batches, and returns how many it deleted.
	ExpireIdempotencyKeys(ctx context.Context, cutoff model.Time) (int64, error)
}

// IdempotencyClaim is a keyed request on its way to its write: the first
// write made with it in its context (through SQLite's writer or
// PostgreSQL's transaction helper) inserts the key's record in its own
// transaction, or fails with idempotency_in_progress when a record made at
// Since or later exists (another request claimed the key meanwhile); a
// record older than Since is replaced.
type IdempotencyClaim struct {
	Key   model.IdempotencyKey
	Route string
	Since model.Time

	fingerprint func() []byte
	fp          []byte
	claimed     atomic.Bool
}

// NewIdempotencyClaim makes a claim; fingerprint is asked once, by the
// write, before its transaction begins (the request's body is read by then).
func NewIdempotencyClaim(k model.IdempotencyKey, route string, since model.Time, fingerprint func() []byte) *IdempotencyClaim {
	return &IdempotencyClaim{Key: k, Route: route, Since: since, fingerprint: fingerprint}
}

// Fingerprint is the request's fingerprint, computed on the first call.
func (c *IdempotencyClaim) Fingerprint() []byte {
	if c.fp == nil {
		c.fp = c.fingerprint()
	}
	return c.fp
}

// Claimed reports whether a committed write holds the claim.
func (c *IdempotencyClaim) Claimed() bool { return c.claimed.Load() }

// Committed records that the write holding the claim committed; the
// request's later writes, if any, do not claim again.
func (c *IdempotencyClaim) Committed() { c.claimed.Store(true) }

type claimKey struct{}

// WithIdempotencyClaim carries c to the request's first write.
func WithIdempotencyClaim(ctx context.Context, c *IdempotencyClaim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// PendingClaim is the claim ctx carries that no write holds yet; nil when
// there is none.
func PendingClaim(ctx context.Context) *IdempotencyClaim {
	c, _ := ctx.Value(claimKey{}).(*IdempotencyClaim)
	if c == nil || c.Claimed() {
		return nil
	}
	return c
}

// ClaimTaken is a claim that found its key's record made by another request.
func ClaimTaken(c *IdempotencyClaim) error { return model.IdempotencyInProgress(c.Key.Key) }

// EncodeAnswerHeaders and DecodeAnswerHeaders are an answer's headers as
// the headers column holds them.
func EncodeAnswerHeaders(h map[string]string) string {
	b, _ := json.Marshal(h)
	return string(b)
}

func DecodeAnswerHeaders(s *string) (map[string]string, error) {
	h := map[string]string{}
	if s == nil {
		return h, nil
	}
	return h, json.Unmarshal([]byte(*s), &h)
}
