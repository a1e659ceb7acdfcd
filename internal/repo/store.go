// Package repo is what the API asks of storage: the Store interface, and the
// parts every backend shares (paging, fault injection). Each backend lives in
// its own folder beside it: sqlite/ (the embedded default: one writer
// goroutine, group commit) and, for those who outgrow one machine, postgres/.
// Backends map their database's errors to model's error kinds; the API maps
// those to HTTP, so handlers never see a backend.
package repo

import (
	"context"
	"io"

	"github.com/logbook/logbook/internal/model"
)

// Store is the storage the API uses. Every method's errors are model errors
// (model.AsError): KindNotFound for a missing session, agent, block …,
// KindConflict for a lost compare-and-set, and so on, as each method says.
type Store interface {
	Sessions
	Messages
	Checkpoints
	Memory
	Files
	Keys
	Admin
	Jobs
	Events
	Usage
	Embeddings
	Idempotency
	Items
	Ping(ctx context.Context) error
	Close() error
}

// Sessions: create, read, list, transition, fork, rewind, export and import.
type Sessions interface {
	CreateSession(ctx context.Context, tenant string, in model.CreateSession) (model.Session, error)
	GetSession(ctx context.Context, tenant, id string) (model.Session, error)
	ListSessions(ctx context.Context, tenant string, f model.SessionFilter, p PageRequest) (model.Page[model.Session], error)
	// CountSessions counts what ListSessions with f lists, all pages
	// together, up to model.SessionCountMax.
	CountSessions(ctx context.Context, tenant string, f model.SessionFilter) (model.SessionCount, error)
	UpdateSession(ctx context.Context, tenant, id string, in model.UpdateSession) (model.Session, error)
	CloseSession(ctx context.Context, tenant, id string) (model.Session, error)
	ForkSession(ctx context.Context, tenant, parentID string, in model.ForkSession) (model.Session, error)
	Rewind(ctx context.Context, tenant, id string, in model.Rewind) (model.RewindResult, error)
	ExportSession(ctx context.Context, tenant, id string, w io.Writer) error
	ImportSession(ctx context.Context, tenant string, r io.Reader, opts model.ImportOptions) (model.Session, error)
	// ExportAgent writes an agent, its memory and its sessions as NDJSON
	// (model.AgentExportLine); ImportAgent restores one, all of it or nothing.
	ExportAgent(ctx context.Context, tenant, id string, w io.Writer) error
	ImportAgent(ctx context.Context, tenant string, r io.Reader, opts model.ImportOptions) (model.Agent, error)
	PurgeSession(ctx context.Context, tenant, id string) error
}

// Messages: appends (one, a batch, or a stream's, in order), reads, search,
// compactions and the context window.
type Messages interface {
	AppendMessages(ctx context.Context, tenant, sessionID string, req model.AppendRequest) (model.AppendResult, error)
	// QueueAppend queues an append and returns at once with a wait for its
	// outcome; appends queued one after another from one goroutine are stored
	// in that order. stream may be nil.
	QueueAppend(ctx context.Context, tenant, sessionID string, req model.AppendRequest,
		stream *AppendStream) (wait func() (model.AppendResult, error), err error)
	GetMessage(ctx context.Context, tenant, sessionID, id string) (model.Message, error)
	ListMessages(ctx context.Context, tenant, sessionID string, f model.MessageFilter, p PageRequest) (model.Page[model.Message], error)
	SearchMessages(ctx context.Context, tenant string, in model.MessageSearch) (model.SearchResult[model.MessageHit], error)
	// CreateCompaction records a compaction and, with in.Messages, appends
	// them after it in the same write.
	CreateCompaction(ctx context.Context, tenant, sessionID string, in model.CreateCompaction) (model.CompactionResult, error)
	// GetMessageByClientID reads a message of a session's history by its
	// client id. Errors: KindNotFound.
	GetMessageByClientID(ctx context.Context, tenant, sessionID, clientID string) (model.Message, error)
	ListCompactions(ctx context.Context, tenant, sessionID string, p PageRequest) (model.Page[model.Compaction], error)
	Context(ctx context.Context, tenant, id string, q model.ContextQuery) (model.Context, error)
}

// Checkpoints: fenced writes (whole or as a merge patch), graph writes (the
// client's ids, parents, namespaces), pending writes, reads, lists, retention,
// resume and repair. def is the server's retention policy, for a session that
// has none of its own.
type Checkpoints interface {
	PutCheckpoint(ctx context.Context, tenant, sessionID string, in model.PutCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error)
	PatchCheckpoint(ctx context.Context, tenant, sessionID string, in model.PatchCheckpoint, def model.CheckpointRetention) (model.Checkpoint, error)
	CreateCheckpoint(ctx context.Context, tenant, sessionID string, in model.CreateCheckpoint, def model.CheckpointRetention) (c model.Checkpoint, created bool, err error)
	PutCheckpointWrites(ctx context.Context, tenant, sessionID string, in model.PutCheckpointWrites) error
	ReadCheckpoint(ctx context.Context, tenant, sessionID string, sel model.CheckpointSelector) (model.Checkpoint, error)
	FindCheckpoints(ctx context.Context, tenant string, f model.CheckpointFilter, p PageRequest) (model.Page[model.Checkpoint], error)
	CheckpointRetention(ctx context.Context, tenant, sessionID string) (*model.CheckpointRetention, error)
	SetCheckpointRetention(ctx context.Context, tenant, sessionID string, p *model.CheckpointRetention) error
	Resume(ctx context.Context, tenant, sessionID string) (model.Resume, error)
	RepairSession(ctx context.Context, tenant, id string, in model.RepairSession) (model.RepairResult, error)
}

// Memory: agents, their core memory blocks and archival passages.
type Memory interface {
	CreateAgent(ctx context.Context, tenant string, in model.CreateAgent) (model.Agent, error)
	GetAgent(ctx context.Context, tenant, id string) (model.Agent, error)
	ListAgents(ctx context.Context, tenant string, f model.AgentFilter, p PageRequest) (model.Page[model.Agent], error)
	UpdateAgent(ctx context.Context, tenant, id string, in model.UpdateAgent) (model.Agent, error)
	DeleteAgent(ctx context.Context, tenant, id string) error

	GetBlock(ctx context.Context, tenant, agentID, label string) (model.Block, error)
	ListBlocks(ctx context.Context, tenant, agentID string) ([]model.Block, error)
	PutBlock(ctx context.Context, tenant, agentID, label string, in model.PutBlock, ifMatch *int64) (b model.Block, created bool, err error)
	AppendBlock(ctx context.Context, tenant, agentID, label, content string, by BlockEdit) (model.Block, error)
	ReplaceBlock(ctx context.Context, tenant, agentID, label, old, new string, by BlockEdit) (model.Block, error)
	// EditBlock changes a block atomically by edit (a pure function of the block,
	// which may run more than once); with create, a missing block reaches edit
	// new, at Version 0.
	EditBlock(ctx context.Context, tenant, agentID, label string, by BlockEdit, create bool, edit func(*model.Block) error) (model.Block, error)
	DeleteBlock(ctx context.Context, tenant, agentID, label string) error
	// RenameBlock moves a block, its value and its history, to label to, in one
	// write. Errors: KindNotFound, block_exists, read_only (tools).
	RenameBlock(ctx context.Context, tenant, agentID, from, to string, by BlockEdit) (model.Block, error)
	BlockHistory(ctx context.Context, tenant, agentID, label string, p PageRequest) (model.Page[model.Block], error)
	// AttachBlock shares agent in.AgentID's block in.Label with agentID, under
	// the label in.As (in.Label when empty): every read and write of that label
	// through agentID then acts on the one owner's block. Errors: KindNotFound
	// (either agent, the block), block_exists (the label is taken under agentID),
	// already_attached, block_attached (in.Label is itself an attachment),
	// KindInvalid (agentID is the owner).
	AttachBlock(ctx context.Context, tenant, agentID string, in model.AttachBlock) (model.Block, error)
	// DetachBlock removes agentID's attachment label; the owner's block stays.
	// Errors: KindNotFound, not_attached (label is agentID's own block).
	DetachBlock(ctx context.Context, tenant, agentID, label string) error

	CreatePassage(ctx context.Context, tenant, agentID string, in model.CreatePassage) (model.Passage, error)
	GetPassage(ctx context.Context, tenant, agentID, id string) (model.Passage, error)
	ListPassages(ctx context.Context, tenant, agentID string, p PageRequest) (model.Page[model.Passage], error)
	SearchPassages(ctx context.Context, tenant, agentID string, in model.PassageSearch) ([]model.PassageHit, error)
	DeletePassage(ctx context.Context, tenant, agentID, id string) error
}

// Files: content-addressed bytes that parts reference.
//
// Who may read a file (download it, or name it in a part it appends): a key
// bound to no user (user "") every file of its tenant; a key bound to user U
// only a file U uploaded, or one that a message of one of U's sessions
// references. Any other file is as missing to U as one never uploaded, so
// that U learns nothing of what other users hold.
//
// A file lives while a message references it or a user holds an upload of
// it. A user's upload is used up when the last of that user's messages that
// reference the file goes (a rewind, a purge, an expiry); a file no message
// ever referenced stays, uploaded for messages yet to come.
type Files interface {
	// CreateFile stores data as a file. created is whether the upload is the
	// first one: of the tenant for user "", of that user otherwise (whose
	// File.CreatedAt is then its own first upload), so that the answer a
	// user sees depends only on what that user did.
	CreateFile(ctx context.Context, tenant, user, mediaType string, data []byte) (f model.File, created bool, err error)
	// GetFile describes a file user may read. Errors: KindNotFound.
	GetFile(ctx context.Context, tenant, user, id string) (model.File, error)
	// WriteFile calls head with the file's description before its first byte,
	// then writes the bytes to w from one snapshot; a file user may not read
	// is KindNotFound.
	WriteFile(ctx context.Context, tenant, user, id string, head func(model.File) error, w io.Writer) error
}

// Keys: API keys and the principals they authenticate.
type Keys interface {
	CreateAPIKey(ctx context.Context, tenant string, in model.CreateAPIKey) (model.NewAPIKey, error)
	ListAPIKeys(ctx context.Context, tenant string, p PageRequest) (model.Page[model.APIKey], error)
	RevokeAPIKey(ctx context.Context, tenant, id string) (model.APIKey, error)
	Authenticate(ctx context.Context, text string) (model.Principal, error)
	HasActiveKeys(ctx context.Context) (bool, error)
}

// Jobs: the operations an operator starts that may outlast a request
// (model.Job). The store keeps them; the API runs them (internal/jobs).
type Jobs interface {
	// CreateJob records a job of kind, running, of this process. Old
	// finished jobs of the tenant beyond the newest 100 go.
	CreateJob(ctx context.Context, tenant, kind string) (model.Job, error)
	// UpdateJob writes a running job's progress; it is also its heartbeat.
	UpdateJob(ctx context.Context, tenant, id string, p model.JobProgress) error
	// FinishJob ends a running job: succeeded with result, failed with jerr,
	// or interrupted.
	FinishJob(ctx context.Context, tenant, id string, state model.JobState, result []byte, jerr *model.JobError) error
	// GetJob reads a job; one whose runner is gone reads as interrupted.
	// Errors: KindNotFound.
	GetJob(ctx context.Context, tenant, id string) (model.Job, error)
}

// Admin: retention, integrity and backups.
type Admin interface {
	PurgeSessions(ctx context.Context, tenant string, in model.PurgeRequest) (model.PurgeResult, error)
	// ExpiredTenants lists the tenants with sessions or passages whose
	// expires_at is before cutoff: the expiry sweep spans tenants.
	ExpiredTenants(ctx context.Context, cutoff model.Time) ([]string, error)
	CheckIntegrity(ctx context.Context, tenant string, repairCounters bool) (model.IntegrityReport, error)
	IntegrityCheck(ctx context.Context) (string, error)
	Backup(ctx context.Context, dest string) (model.Backup, error)
	DatabasePath(ctx context.Context) (string, error)
}
