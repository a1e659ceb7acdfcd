package model

// An agent export is NDJSON too: a header line naming the format and its
// version, the agent, its core memory blocks (current values), its archival
// passages with their embeddings, then each of its sessions exactly as a
// session export writes it (session, files, messages, checkpoints,
// compactions and that session's own end line), and last an agent_end line
// whose sha256 covers every byte before it. Expired passages and sessions are
// left out, as reads leave them out.
const (
	LineAgentHeader = "header"
	LineAgent       = "agent"
	LineBlock       = "block"
	LinePassage     = "passage"
	LineAgentEnd    = "agent_end"
)

// AgentExportFormat and AgentExportVersion are what an agent export's header
// says; an import refuses any other.
const (
	AgentExportFormat  = "logbook.agent"
	AgentExportVersion = 1
)

// AgentLineOrder ranks an agent export's own lines as it orders them; the
// sessions come after the passages.
var AgentLineOrder = map[string]int{LineAgentHeader: 1, LineAgent: 2, LineBlock: 3, LinePassage: 4, LineSession: 5}

// ExportAgent is the agent as an export carries it: the agent and the
// embedding model and length its passages are pinned to, if any.
type ExportAgent struct {
	Agent
	EmbeddingModel *string `json:"embedding_model"`
	EmbeddingDims  *int    `json:"embedding_dims"`
}

// ExportBlock is a core memory block: its current value and settings. Its
// history is not exported; an import starts it at the exported version.
type ExportBlock struct {
	ID          string  `json:"id"`
	Label       string  `json:"label"`
	Value       string  `json:"value"`
	Limit       int     `json:"limit"`
	Description *string `json:"description"`
	ReadOnly    bool    `json:"read_only"`
	Version     int64   `json:"version"`
	UpdatedAt   Time    `json:"updated_at"`
}

// ExportPassage is an archival passage with its embedding, bit for bit.
type ExportPassage struct {
	ID             string    `json:"id"`
	Content        string    `json:"content"`
	Tags           []string  `json:"tags"`
	Metadata       Object    `json:"metadata"`
	CreatedAt      Time      `json:"created_at"`
	ExpiresAt      *Time     `json:"expires_at"`
	Embedding      []float32 `json:"embedding,omitempty"`
	EmbeddingModel string    `json:"embedding_model,omitempty"`
}

// AgentExportLine is one of an agent export's own lines; a session's lines
// inside it are ExportLines.
type AgentExportLine struct {
	Type    string             `json:"type"`
	Format  string             `json:"format,omitempty"`
	Version int                `json:"version,omitempty"`
	Agent   *ExportAgent       `json:"agent,omitempty"`
	Block   *ExportBlock       `json:"block,omitempty"`
	Passage *ExportPassage     `json:"passage,omitempty"`
	Counts  *AgentExportCounts `json:"counts,omitempty"`
	SHA256  string             `json:"sha256,omitempty"`
}

// AgentExportCounts is what the agent_end line says the export holds.
type AgentExportCounts struct {
	Blocks   int64 `json:"blocks"`
	Passages int64 `json:"passages"`
	Sessions int64 `json:"sessions"`
}

// MaxAgentExportBlocks and MaxAgentExportSessions bound what one agent
// import holds besides its bytes (passages are bounded by the body's size).
const (
	MaxAgentExportBlocks   = 10_000
	MaxAgentExportSessions = 100_000
)
