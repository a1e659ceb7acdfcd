package repo

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"

	"github.com/logbook/logbook/internal/model"
)

// Cursor is the position after the last row of a page. It is bound to the query
// that made it (Q, a fingerprint of the filters and order) so that a Cursor reused
// with other filters is refused instead of silently skipping or repeating rows.
type Cursor struct {
	Q string `json:"q"`
	N int64  `json:"n"`           // the numeric key: created_at, or seq
	S string `json:"s,omitempty"` // the tie-breaker: id
}

// Fingerprint condenses a query's identity into a short string.
func Fingerprint(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		b, _ := json.Marshal(p)
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:9])
}

func EncodeCursor(c Cursor) *string {
	b, _ := json.Marshal(c)
	s := base64.RawURLEncoding.EncodeToString(b)
	return &s
}

// RewriteCursorID returns the cursor s with the id it carries (the
// tie-breaker) passed through f: what the API shows a key of ids it stores
// otherwise (model.UserSessionID). A cursor that does not decode is returned
// as it is.
func RewriteCursorID(s *string, f func(id string) string) *string {
	if s == nil {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(*s)
	if err != nil {
		return s
	}
	var c Cursor
	if json.Unmarshal(b, &c) != nil {
		return s
	}
	c.S = f(c.S)
	return EncodeCursor(c)
}

// DecodeCursor returns the zero position for an empty cursor.
func DecodeCursor(s, query string) (Cursor, bool, error) {
	if s == "" {
		return Cursor{}, false, nil
	}
	bad := &model.Error{Kind: model.KindBadRequest, Code: "invalid_cursor",
		Msg:    "Cursor is not valid for this list; start again without a cursor",
		Fields: []model.FieldError{{Field: "cursor", Message: "not a Cursor of this list and filter"}}}
	if len(s) > 1024 {
		return Cursor{}, false, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, false, bad
	}
	var c Cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return Cursor{}, false, bad
	}
	if c.Q != query {
		return Cursor{}, false, bad
	}
	return c, true, nil
}

// NewPage trims the limit+1'th row that tells whether more exist and builds the cursor
// from the last row kept.
func NewPage[T any](rows []T, limit int, next func(last T) Cursor) model.Page[T] {
	p := model.Page[T]{Data: rows}
	if p.Data == nil {
		p.Data = []T{}
	}
	if len(rows) > limit {
		p.Data = rows[:limit]
		p.HasMore = true
		p.NextCursor = EncodeCursor(next(p.Data[limit-1]))
	}
	return p
}
