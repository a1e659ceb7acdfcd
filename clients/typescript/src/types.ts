// Names for the generated types (src/schema.ts, made by `npm run generate`
// from openapi.yaml), so that callers need not spell components["schemas"].

import type { components, operations } from "./schema.js";

type S = components["schemas"];
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

export type Health = S["Health"];
export type Identity = S["Identity"];

export type Session = S["Session"];
export type SessionCreate = S["SessionCreate"];
export type SessionUpdate = S["SessionUpdate"];
export type SessionStatus = S["SessionStatus"];
export type ForkCreate = S["ForkCreate"];

export type Message = S["Message"];
export type MessageRole = S["MessageRole"];
/** One message of a batch or of a rewind's new tail. */
export type MessageInput = S["MessageInput"];
/** One message sent alone (it may also carry `expected_last_seq`). */
export type MessageAppend = S["MessageAppend"];
export type Content = S["Content"];
export type Part = S["Part"];
export type ToolCall = S["ToolCall"];
export type ToolCallInput = S["ToolCallInput"];

export type Checkpoint = S["Checkpoint"];
export type CheckpointPut = S["CheckpointPut"];
export type CheckpointState = S["CheckpointState"];
export type PatchCheckpoint = S["PatchCheckpoint"];
export type PendingToolCall = S["PendingToolCall"];
export type CheckpointCreate = S["CheckpointCreate"];
export type CheckpointWrites = S["CheckpointWrites"];
export type PendingWrite = S["PendingWrite"];
export type CheckpointRetention = S["CheckpointRetention"];
export type SessionRetention = S["SessionRetention"];
export type Resume = S["Resume"];
export type ResumeProblem = S["ResumeProblem"];
export type RepairRequest = S["RepairRequest"];
export type RepairResult = S["RepairResult"];

export type Rewind = S["Rewind"];
export type RewindResult = S["RewindResult"];
export type Compaction = S["Compaction"];
export type CompactionCreate = S["CompactionCreate"];
export type CompactionCreated = S["CompactionCreated"];
export type SessionContext = S["SessionContext"];

export type Agent = S["Agent"];
export type AgentCreate = S["AgentCreate"];
export type AgentUpdate = S["AgentUpdate"];
export type Block = S["Block"];
export type BlockPut = S["BlockPut"];
export type BlockAttach = S["BlockAttach"];
export type BlockAppend = S["BlockAppend"];
export type BlockReplace = S["BlockReplace"];
export type Passage = S["Passage"];
export type PassageCreate = S["PassageCreate"];
export type PassageSearchResult = S["PassageSearchResult"];
export type PassageSearchRequest = S["PassageSearchRequest"];
export type MessageHit = S["MessageHit"];
export type MessageSearchResult = S["MessageSearchResult"];
export type ToolDef = S["ToolDef"];
export type ToolResult = S["ToolResult"];
export type File = S["File"];
export type MessageEmbedding = S["MessageEmbedding"];
export type MessageEmbeddingPut = S["MessageEmbeddingPut"];
export type ItemsImportResult = S["ItemsImportResult"];

export type Usage = S["Usage"];
export type APIKey = S["APIKey"];
export type APIKeyCreate = S["APIKeyCreate"];
export type NewAPIKey = S["NewAPIKey"];
export type PurgeRequest = S["PurgeRequest"];
export type PurgeResult = S["PurgeResult"];
export type IntegrityReport = S["IntegrityReport"];
export type TenantEmbedding = S["TenantEmbedding"];
export type EmbeddingConfig = S["EmbeddingConfig"];
export type Backup = S["Backup"];
export type BackupRequest = S["BackupRequest"];
/** A purge, an integrity check or a backup that outlasted its route's wait (`getJob`). */
export type Job = S["Job"];
export type JobProgress = S["JobProgress"];
export type JobError = S["JobError"];

export type Item = S["Item"];
export type ItemHit = S["ItemHit"];
export type ItemPut = S["ItemPut"];
export type ItemIndex = S["ItemIndex"];
export type ItemPage = S["ItemPage"];
export type ItemSearchRequest = S["ItemSearchRequest"];
export type ItemFilter = S["ItemFilter"];
export type ItemOp = S["ItemOp"];
export type ItemResult = S["ItemResult"];
export type NamespacePage = S["NamespacePage"];

export type ErrorCode = S["ErrorCode"];
export type FieldError = S["FieldError"];
export type ProblemBody = S["Problem"];

export type EventType = S["EventType"];
export type RewindEvent = S["RewindEvent"];
export type CheckpointEvent = S["CheckpointEvent"];

/**
 * One event of the live feed, its `data` typed by its `event`. `id` is opaque:
 * compare ids for equality only, and pass one back (`lastEventId`) to resume.
 */
export type LogbookEvent =
  | { id: string; event: "message.appended"; data: Message }
  | { id: string; event: "session.created" | "session.updated"; data: Session }
  | { id: string; event: "session.rewound"; data: RewindEvent }
  | { id: string; event: "compaction.created"; data: Compaction }
  | { id: string; event: "checkpoint.created"; data: CheckpointEvent };

/** Every list answers one page of this shape. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export type ListSessionsQuery = Query<"listSessions">;
export type ListMessagesQuery = Query<"listMessages">;
export type ListAgentsQuery = Query<"listAgents">;
export type SearchMessagesQuery = Query<"searchMessages">;
export type SearchPassagesQuery = Query<"searchPassages">;
export type ContextQuery = Query<"getSessionContext">;
export type ListItemNamespacesQuery = Query<"listItemNamespaces">;
export type ListCheckpointsQuery = Query<"listCheckpoints">;
export type ListAllCheckpointsQuery = Query<"listAllCheckpoints">;
export type GetCheckpointQuery = Query<"getLatestCheckpoint">;
export type CheckpointQuery = Query<"getCheckpoint">;
export type ExportItemsQuery = Query<"exportItems">;
export type UsageQuery = Query<"getUsage">;
export type IntegrityQuery = Query<"checkIntegrity">;
