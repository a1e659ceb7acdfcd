export { Client, Pager, newIdempotencyKey } from "./client.js";
export type { Answer, AppendOptions, CallOptions, ClientOptions, ItemOptions, RequestOptions } from "./client.js";
export { ConnectionError, LogbookError, Problem } from "./errors.js";
export { EventStream } from "./events.js";
export type { Connect, FollowOptions } from "./events.js";
export { parseEventStream } from "./sse.js";
export type { ParseOptions, SseEvent } from "./sse.js";
export type * from "./types.js";
export type { components, operations, paths } from "./schema.js";
