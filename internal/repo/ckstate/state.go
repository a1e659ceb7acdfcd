// Package ckstate is how a checkpoint's state is kept, apart from any
// database: its canonical JSON and hash, the full and delta encodings of a
// row, rebuilding a state from a chain of rows, and planning a write. Both
// backends store checkpoints through it, so that their rows, hashes and
// errors are the same and an export from either reads alike.
package ckstate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/logbook/logbook/internal/model"
)

// Canonical re-encodes JSON with sorted keys and no insignificant space,
// keeping numbers digit for digit, so that equal states hash equally.
func Canonical(raw []byte) ([]byte, error) {
	v, err := DecodeTree(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// DecodeTree decodes JSON with numbers kept as their text (json.Number), which
// Canonical, merge patches and deltas all work on.
func DecodeTree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Hash covers what a checkpoint asserts: its iteration, the session's last_seq
// then, and its state.
func Hash(iteration, lastSeq int64, state []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "logbook-checkpoint-v1\n%d\n%d\n", iteration, lastSeq)
	h.Write(state)
	return hex.EncodeToString(h.Sum(nil))
}

// Verify reports a checkpoint whose stored content no longer matches its hash.
func Verify(c model.Checkpoint) error {
	if Hash(c.Iteration, c.LastSeq, c.State) != c.SHA256 || !json.Valid(c.State) {
		return model.Corrupted("checkpoint", c.ID)
	}
	return nil
}

// IsCorrupted reports a read that found damage rather than failed.
func IsCorrupted(err error) bool {
	return err != nil && model.AsError(err).Code == "corrupted"
}
