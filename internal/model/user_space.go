package model

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// A key bound to one end user (Principal.UserID) has session ids of its own:
// POST /v1/sessions {"id": X} from it must answer the same whether or not
// another user of the tenant holds X, or the answer tells that X exists.
// Sessions keep one primary key per tenant, so when X is held by another
// principal the user's session is stored as UserSessionID(X, user), and every
// route the user's key calls shows it, and takes it, as X.
//
// The suffix begins with '!', which no client id holds (ValidClientID), so a
// stored id never collides with one a client chose; and '!' sorts below every
// character a client id may hold, so a user's sessions sort by their stored
// ids exactly as by the ids the user chose: a list's order and its cursors
// (which carry an id) cannot tell which of them were moved. Go's URL parsing
// reads '!' raw or escaped (%21) alike, so tenant-wide keys can address the
// stored id in a path.

// userSpaceMark begins every suffix UserSessionID adds.
const userSpaceMark = "!"

// UserSpaceSuffix is what UserSessionID appends to an id for user: "!" and
// 16 hex digits of a hash of the user's id.
func UserSpaceSuffix(user string) string {
	h := sha256.Sum256([]byte("logbook-user-space\n" + user))
	return userSpaceMark + hex.EncodeToString(h[:8])
}

// UserSessionID is the id a session that user asked to create as id is
// stored under when another principal already holds id.
func UserSessionID(id, user string) string { return id + UserSpaceSuffix(user) }

// ShownSessionID is the id that a session stored as id has in user's own id
// space: the id the user chose.
func ShownSessionID(id, user string) string { return strings.TrimSuffix(id, UserSpaceSuffix(user)) }

// ValidStoredSessionID reports whether id may name a stored session of user
// (nil: none): a client id, or a client id moved into user's space.
func ValidStoredSessionID(id string, user *string) bool {
	if ValidClientID(id) {
		return true
	}
	if user == nil {
		return false
	}
	shown := ShownSessionID(id, *user)
	return shown != id && ValidClientID(shown)
}
