// Names for the generated types (src/schema.ts, made by `npm run generate`
// from openapi.yaml), so that callers need not spell components["schemas"].

import type { components, operations } from "./schema.js";

type S = components["schemas"];
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

export type Health = S["Health"];

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
export type Passage = S["Passage"];
export type PassageCreate = S["PassageCreate"];
export type PassageSearchResult = S["PassageSearchResult"];
export type MessageHit = S["MessageHit"];
export type MessageSearchResult = S["MessageSearchResult"];
export type ToolDef = S["ToolDef"];
export type ToolResult = S["ToolResult"];
export type File = S["File"];

export type ErrorCode = S["ErrorCode"];
export type FieldError = S["FieldError"];
export type ProblemBody = S["Problem"];

export type EventType = S["EventType"];
export type RewindEvent = S["RewindEvent"];
export type CheckpointEvent = S["CheckpointEvent"];
export type RemovedMessageEvent = S["RemovedMessageEvent"];

/** One event of the live feed, its `data` typed by its `event`. */
export type LogbookEvent =
  | { id: number; event: "message.appended"; data: Message | RemovedMessageEvent }
  | { id: number; event: "session.created" | "session.updated"; data: Session }
  | { id: number; event: "session.rewound"; data: RewindEvent }
  | { id: number; event: "compaction.created"; data: Compaction }
  | { id: number; event: "checkpoint.created"; data: CheckpointEvent };

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
