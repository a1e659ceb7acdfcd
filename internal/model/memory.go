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
	// EmbeddingModel is the model of the passage's embedding, once it has one.
	EmbeddingModel *string `json:"embedding_model"`
	// EmbeddingState is null when the passage has no embedding and none is
	// coming; ready when it has one; pending or failed while the server embeds it.
	EmbeddingState *string `json:"embedding_state"`
	EmbeddingError *string `json:"embedding_error"`
}

// CreatePassage is the input of POST /v1/agents/{id}/archival.
type CreatePassage struct {
	Content  string   `json:"content" validate:"required,max=1000000"`
	Tags     []string `json:"tags,omitempty" validate:"max=64,dive,min=1,max=128"`
	Metadata Object   `json:"metadata,omitempty"`
	// ExpiresAt, if set, is when the passage expires (RFC 3339).
	ExpiresAt *Time `json:"expires_at,omitempty"`
	// Embedding and EmbeddingModel, both or neither, are the client's vector of
	// the content. The agent's first passage with one pins model and length.
	Embedding      []float32 `json:"embedding,omitempty" validate:"max=8192"`
	EmbeddingModel string    `json:"embedding_model,omitempty" validate:"max=256"`
	// ServerEmbeds says the server has a default embedding endpoint: a passage
	// without an embedding then waits for one even if its agent names none.
	ServerEmbeds bool `json:"-"`
}

// PassageHit is a search result: the passage, a snippet with the matches marked,
// and its rank, lower is better: bm25 as SQLite reports it (keyword), cosine
// distance (vector), or minus the reciprocal rank fusion score (hybrid).
type PassageHit struct {
	Passage
	Snippet string  `json:"snippet"`
	Rank    float64 `json:"rank"`
}

// Archival search modes.
const (
	SearchKeyword = "keyword" // full-text ranking of Query (the default)
	SearchVector  = "vector"  // cosine similarity to QueryEmbedding
	SearchHybrid  = "hybrid"  // reciprocal rank fusion of both
)

// PassageSearch is an archival search.
type PassageSearch struct {
	Mode           string    // SearchKeyword when empty
	Query          string    // for keyword and hybrid
	QueryEmbedding []float32 // for vector and hybrid
	Tags           []string  // every tag must be present
	After          *Time
	Before         *Time
	Limit          int
	Offset         int // for Letta's page argument
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
	Query          string
	AgentID        string
	Mode           string    // SearchKeyword when empty
	QueryEmbedding []float32 // for vector and hybrid
	Roles          []Role
	SessionID      string
	After          *Time
	Before         *Time
	Limit          int
}

// SearchResult carries hits and how far the search index is behind the newest
// writes: messages are indexed by the writer in its idle time, so the newest few
// may not be searchable yet.
type SearchResult[T any] struct {
	Data     []T   `json:"data"`
	IndexLag int64 `json:"index_lag"` // messages written but not yet searchable
	// Partial says the search bounded its work: some of the query's words
	// match too many messages to rank them all, so hits of those words alone
	// are the newest ones (and rank ignores those words), not the best of all.
	Partial bool `json:"partial"`
}
