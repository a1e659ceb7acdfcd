package sqlite

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"

	"github.com/logbook/logbook/internal/model"
)

// cursor is the position after the last row of a page. It is bound to the query
// that made it (Q, a fingerprint of the filters and order) so that a cursor reused
// with other filters is refused instead of silently skipping or repeating rows.
type cursor struct {
	Q string `json:"q"`
	N int64  `json:"n"`           // the numeric key: created_at, or seq
	S string `json:"s,omitempty"` // the tie-breaker: id
}

// fingerprint condenses a query's identity into a short string.
func fingerprint(parts ...any) string {
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

func encodeCursor(c cursor) *string {
	b, _ := json.Marshal(c)
	s := base64.RawURLEncoding.EncodeToString(b)
	return &s
}

// decodeCursor returns the zero position for an empty cursor.
func decodeCursor(s, query string) (cursor, bool, error) {
	if s == "" {
		return cursor{}, false, nil
	}
	bad := &model.Error{Kind: model.KindBadRequest, Code: "invalid_cursor",
		Msg:    "cursor is not valid for this list; start again without a cursor",
		Fields: []model.FieldError{{Field: "cursor", Message: "not a cursor of this list and filter"}}}
	if len(s) > 1024 {
		return cursor{}, false, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, false, bad
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return cursor{}, false, bad
	}
	if c.Q != query {
		return cursor{}, false, bad
	}
	return c, true, nil
}

// page trims the limit+1'th row that tells whether more exist and builds the cursor
// from the last row kept.
func page[T any](rows []T, limit int, next func(last T) cursor) model.Page[T] {
	p := model.Page[T]{Data: rows}
	if p.Data == nil {
		p.Data = []T{}
	}
	if len(rows) > limit {
		p.Data = rows[:limit]
		p.HasMore = true
		p.NextCursor = encodeCursor(next(p.Data[limit-1]))
	}
	return p
}
