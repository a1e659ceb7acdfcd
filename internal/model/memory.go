package model

// Passage is one entry of an agent's archival memory.
type Passage struct {
	ID        string   `json:"id"`
	AgentID   string   `json:"agent_id"`
	Content   string   `json:"content"`
	Tags      []string `json:"tags"`
	Metadata  Object   `json:"metadata"`
	CreatedAt Time     `json:"created_at"`
	// ExpiresAt is when the passage's time to live ends: from then on reads do
	// not find it, and a purge with Expired deletes it.
	ExpiresAt *Time `json:"expires_at"`
}

// CreatePassage is the input of POST /v1/agents/{id}/archival.
type CreatePassage struct {
	Content  string   `json:"content" validate:"required,max=1000000"`
	Tags     []string `json:"tags,omitempty" validate:"max=64,dive,min=1,max=128"`
	Metadata Object   `json:"metadata,omitempty"`
	// ExpiresAt, if set, is when the passage expires (RFC 3339).
	ExpiresAt *Time `json:"expires_at,omitempty"`
}

// PassageHit is a search result: the passage, a snippet with the matches marked,
// and its rank (bm25; lower is better, as SQLite reports it).
type PassageHit struct {
	Passage
	Snippet string  `json:"snippet"`
	Rank    float64 `json:"rank"`
}

// PassageSearch is an archival search.
type PassageSearch struct {
	Query  string
	Tags   []string // every tag must be present
	After  *Time
	Before *Time
	Limit  int
	Offset int // for Letta's page argument
}

// MessageHit is a conversation search result.
type MessageHit struct {
	SessionID string  `json:"session_id"`
	MessageID string  `json:"message_id"`
	Seq       int64   `json:"seq"`
	Role      Role    `json:"role"`
	CreatedAt Time    `json:"created_at"`
	Snippet   string  `json:"snippet"`
	Content   string  `json:"content"`
	Rank      float64 `json:"rank"`
}

// MessageSearch is a conversation search; AgentID empty searches the tenant.
type MessageSearch struct {
	Query     string
	AgentID   string
	Roles     []Role
	SessionID string
	After     *Time
	Before    *Time
	Limit     int
}

// SearchResult carries hits and how far the search index is behind the newest
// writes: messages are indexed by the writer in its idle time, so the newest few
// may not be searchable yet.
type SearchResult[T any] struct {
	Data     []T   `json:"data"`
	IndexLag int64 `json:"index_lag"` // messages written but not yet searchable
}
