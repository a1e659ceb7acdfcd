package model

// Page is one page of a keyset-paginated list. NextCursor is nil on the last page.
type Page[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// Paging limits shared by every list.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)
