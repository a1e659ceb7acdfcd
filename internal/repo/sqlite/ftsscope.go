package sqlite

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// Every index row carries, in its scope column, a token for its tenant and one
// for its session (the one that stores the message), so that FTS5 itself can
// narrow a match to a tenant or to a session: `{scope}: t… AND {content}: …`
// walks the word's rows and the scope's together, in rowid order, and costs
// about what the rows it returns cost instead of every row of the word in the
// whole file.
//
// A token is a digest of the id, not the id: ids may hold any character, and
// the tokenizer would cut them into words. Digits end it, so that the porter
// stemmer leaves it whole. SHA-256 (truncated to 64 bits) and not a fast hash:
// a tenant chooses its session ids, and must not be able to make one whose
// token is another tenant's. A match on a token is still checked against the
// row's tenant_id and session_id columns before it is used.

// tenantToken is the scope token of a tenant's rows.
func tenantToken(tenant string) string { return "t" + digest64("t", tenant, "") }

// sessionToken is the scope token of the rows a session stores.
func sessionToken(tenant, session string) string { return "s" + digest64("s", tenant, session) }

// scopeOf is the scope column of a message's rows.
func scopeOf(tenant, session string) string {
	return tenantToken(tenant) + " " + sessionToken(tenant, session)
}

func digest64(kind, a, b string) string {
	h := sha256.New()
	var n [8]byte
	for _, part := range []string{kind, a, b} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part))) // lengths keep ("ab","c") apart from ("a","bc")
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return strconv.FormatUint(binary.BigEndian.Uint64(h.Sum(nil)), 10)
}
