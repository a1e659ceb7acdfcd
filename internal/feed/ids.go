package feed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// The feed's ids are positions sealed for one tenant. A position counts every
// write of the database, whoever made it, so a tenant that saw two of them
// would learn how much every other tenant wrote in between; an id shows
// nothing of it. An id is one AES-128 block, base64url without padding:
//
//	[ position, 8 bytes big-endian | tag: the first 8 bytes of HMAC-SHA256(tagKey, tenant) ]
//
// AES is a pseudorandom permutation, so a string that was not made with the
// key decrypts to 16 random bytes, whose tag matches the caller's with odds
// of 2^-64; and one tenant's id decrypts, for another, to the first tenant's
// tag, which is refused. Ids are opaque to clients: equal or not, and sent
// back to resume; nothing else.

// IDs seals and opens the feed's ids with keys derived from the database's
// feed secret (repo.Events.FeedSecret).
type IDs struct {
	block  cipher.Block
	tagKey []byte
}

// idLen is an id's length: 16 bytes in base64 without padding.
const idLen = 22

var idEncoding = base64.RawURLEncoding.Strict() // one text per id: equal ids are equal strings

// NewIDs derives the two keys from secret (at least 32 random bytes), each
// for its one use.
func NewIDs(secret []byte) (*IDs, error) {
	if len(secret) < 32 {
		return nil, errors.New("feed: the secret must hold at least 32 bytes")
	}
	derive := func(use string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte("logbook feed ids: " + use))
		return m.Sum(nil)
	}
	block, err := aes.NewCipher(derive("position cipher")[:16])
	if err != nil {
		return nil, err
	}
	return &IDs{block: block, tagKey: derive("tenant tag")}, nil
}

// TenantIDs are the ids of one tenant's feed.
type TenantIDs struct {
	block cipher.Block
	tag   [8]byte
}

// For returns the ids of tenant's feed.
func (c *IDs) For(tenant string) TenantIDs {
	m := hmac.New(sha256.New, c.tagKey)
	m.Write([]byte(tenant))
	t := TenantIDs{block: c.block}
	copy(t.tag[:], m.Sum(nil))
	return t
}

// Seal returns the id of position pos (pos >= 0).
func (t TenantIDs) Seal(pos int64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(pos))
	copy(b[8:], t.tag[:])
	t.block.Encrypt(b[:], b[:])
	return idEncoding.EncodeToString(b[:])
}

// AppendSeal appends the id of pos to dst, without allocating.
func (t TenantIDs) AppendSeal(dst []byte, pos int64) []byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(pos))
	copy(b[8:], t.tag[:])
	t.block.Encrypt(b[:], b[:])
	return idEncoding.AppendEncode(dst, b[:])
}

// Open returns the position id names; false for anything but an id Seal made
// for this tenant: another tenant's, a forged or a malformed one.
func (t TenantIDs) Open(id string) (int64, bool) {
	if len(id) != idLen {
		return 0, false
	}
	var b [16]byte
	if n, err := idEncoding.Decode(b[:], []byte(id)); err != nil || n != len(b) {
		return 0, false
	}
	t.block.Decrypt(b[:], b[:])
	if subtle.ConstantTimeCompare(b[8:], t.tag[:]) != 1 {
		return 0, false
	}
	pos := binary.BigEndian.Uint64(b[:8])
	if pos > 1<<63-1 {
		return 0, false // Seal never makes one
	}
	return int64(pos), true
}
