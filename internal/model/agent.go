package model

import "strconv"

// Agent is a stored agent definition: what it is, which model and tools it uses.
// Its memory (blocks and passages) belongs to it and goes when it goes; sessions
// keep their agent_id as history.
type Agent struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	AgentType string   `json:"agent_type"`
	Model     *string  `json:"model"`
	System    *string  `json:"system"`
	ToolIDs   []string `json:"tool_ids"`
	Tags      []string `json:"tags"`
	Metadata  Object   `json:"metadata"`
	// Embedding is the endpoint that embeds the agent's passages and messages
	// (null: the server's default, if it has one).
	Embedding *EmbeddingConfig `json:"embedding"`
	// EmbeddingModel and EmbeddingDims are pinned by the agent's first
	// embedding: every later one must match them.
	EmbeddingModel *string `json:"embedding_model"`
	EmbeddingDims  *int    `json:"embedding_dims"`
	CreatedAt      Time    `json:"created_at"`
	UpdatedAt      Time    `json:"updated_at"`
}

// DefaultAgentType is Letta's default.
const DefaultAgentType = "memgpt_agent"

// MaxSystemChars bounds an agent's system prompt; the validate tag on
// CreateAgent.System says the same.
const MaxSystemChars = 100000

// CreateAgent is the input of POST /v1/agents.
type CreateAgent struct {
	ID        string           `json:"id,omitempty" validate:"omitempty,max=128,clientid"`
	Name      string           `json:"name" validate:"required,max=200"`
	AgentType string           `json:"agent_type,omitempty" validate:"omitempty,max=64"`
	Model     *string          `json:"model,omitempty" validate:"omitempty,max=256"`
	System    *string          `json:"system,omitempty" validate:"omitempty,max=100000"`
	ToolIDs   []string         `json:"tool_ids,omitempty" validate:"max=256,dive,min=1,max=256"`
	Tags      []string         `json:"tags,omitempty" validate:"max=64,dive,min=1,max=128"`
	Metadata  Object           `json:"metadata,omitempty"`
	Embedding *EmbeddingConfig `json:"embedding,omitempty"`
}

// UpdateAgent is the input of PATCH /v1/agents/{id}: present fields replace,
// metadata merges (RFC 7396).
type UpdateAgent struct {
	Name      Optional[string]          `json:"name"`
	AgentType Optional[string]          `json:"agent_type"`
	Model     Optional[string]          `json:"model"`
	System    Optional[string]          `json:"system"`
	ToolIDs   Optional[[]string]        `json:"tool_ids"`
	Tags      Optional[[]string]        `json:"tags"`
	Metadata  Optional[Object]          `json:"metadata"`
	Embedding Optional[EmbeddingConfig] `json:"embedding"`
}

// Validate checks what tags cannot reach inside Optional.
func (u UpdateAgent) Validate() error {
	var fields []FieldError
	bad := func(field, msg string) { fields = append(fields, FieldError{Field: field, Message: msg}) }
	if u.Name.Set && (u.Name.Null || u.Name.Value == "" || len(u.Name.Value) > 200) {
		bad("name", "must be 1 to 200 characters long")
	}
	if u.AgentType.Set && (u.AgentType.Null || u.AgentType.Value == "" || len(u.AgentType.Value) > 64) {
		bad("agent_type", "must be 1 to 64 characters long")
	}
	if u.Model.Set && len(u.Model.Value) > 256 {
		bad("model", "must be at most 256 characters long")
	}
	if u.System.Set && len(u.System.Value) > 100000 {
		bad("system", "must be at most 100000 characters long")
	}
	if u.ToolIDs.Set && len(u.ToolIDs.Value) > 256 {
		bad("tool_ids", "must have at most 256 items")
	}
	for i, id := range u.ToolIDs.Value {
		if id == "" || len(id) > 256 {
			bad("tool_ids["+strconv.Itoa(i)+"]", "must be 1 to 256 characters long")
		}
	}
	if u.Tags.Set && len(u.Tags.Value) > 64 {
		bad("tags", "must have at most 64 items")
	}
	for i, tag := range u.Tags.Value {
		if tag == "" || len(tag) > 128 {
			bad("tags["+strconv.Itoa(i)+"]", "must be 1 to 128 characters long")
		}
	}
	if fields != nil {
		return Invalid(fields...)
	}
	return nil
}

// AgentFilter selects agents for a list.
type AgentFilter struct {
	Name string // exact name
	Tag  string // carries this tag
}
