package repo

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// Key text: "lb_" + 16 hex (the key's id) + "_" + 64 hex (256 random bits). The id
// part lets a key be found by primary key; the whole text is what is hashed.
// Every backend shares this, so that a key made through one authenticates the
// same way through another.
const (
	keyTextPrefix = "lb_"
	keyIDHex      = 16
	keySecretHex  = 64
	keyTextLen    = len(keyTextPrefix) + keyIDHex + 1 + keySecretHex
	keyIDPrefix   = "key_"
)

// NewKeyText draws a new key: its id (what is stored and listed) and its text
// (what the caller is given once; only HashKey of it is stored).
func NewKeyText() (id, text string, err error) {
	var raw [keyIDHex/2 + keySecretHex/2]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", err
	}
	idHex := hex.EncodeToString(raw[:keyIDHex/2])
	return keyIDPrefix + idHex, keyTextPrefix + idHex + "_" + hex.EncodeToString(raw[keyIDHex/2:]), nil
}

// KeyIDOf returns the id of the key a text names; false for a malformed text.
func KeyIDOf(text string) (string, bool) {
	if len(text) != keyTextLen || !strings.HasPrefix(text, keyTextPrefix) || text[len(keyTextPrefix)+keyIDHex] != '_' {
		return "", false
	}
	return keyIDPrefix + text[len(keyTextPrefix):len(keyTextPrefix)+keyIDHex], true
}

// HashKey is what is stored of a key's text.
func HashKey(text string) []byte {
	h := sha256.Sum256([]byte(text))
	return h[:]
}

// unknownKeyHash stands in for the stored hash when no key has the presented
// id, so that an unknown id costs the same time as a wrong secret.
var unknownKeyHash = HashKey("lb_0000000000000000_" + strings.Repeat("0", keySecretHex))

// KeyMatches compares text with a stored hash in constant time. Pass nil for
// a key that was not found: the comparison still runs, and fails.
func KeyMatches(text string, stored []byte) bool {
	found := stored != nil
	if !found {
		stored = unknownKeyHash
	}
	return subtle.ConstantTimeCompare(HashKey(text), stored) == 1 && found
}
