// A LangGraph checkpointer over Logbook: `new LogbookSaver({ client })`.
//
// A thread is a session; a LangGraph checkpoint is one Logbook checkpoint,
// named by its own id (`client_id`), hung under its parent (`parent_id`) in its
// namespace (`checkpoint_ns`), with its metadata beside the state for lists to
// filter on; a task's writes are Logbook pending writes, which the server keeps
// with LangGraph's precedence. Each call is one request.
//
// The state of a checkpoint is `{checkpoint, channel_values}`: the checkpoint
// without its values, and each channel's value, both as the serializer's typed
// pair `[type, payload]` (JSON kept as JSON, so the dashboard shows it; other
// types base64). `put` sends it as a merge patch of the parent's state that
// carries only the channels in `newVersions`: a channel that did not change is
// the parent's, and the server stores the rest (the parent as a reverse delta,
// compressed). A pair is an array, which a merge patch replaces whole.

import {
  BaseCheckpointSaver,
  TASKS,
  maxChannelVersion,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Client } from "./client.js";
import { Problem } from "./errors.js";
import type { Checkpoint as LogbookCheckpoint, PendingWrite as LogbookWrite } from "./types.js";

export interface LogbookSaverOptions {
  /** The Logbook client; `new Client()` (configured from the environment) when left out. */
  client?: Client;
  /** LangGraph's serializer; its JsonPlusSerializer when left out. */
  serde?: SerializerProtocol;
}

/** A serialized value as Logbook keeps it: JSON as JSON, anything else base64. */
type Typed = [string, unknown];

/** What a Logbook checkpoint's state holds for LangGraph. */
interface SavedState {
  checkpoint: Typed;
  channel_values?: Record<string, Typed>;
}

export class LogbookSaver extends BaseCheckpointSaver {
  readonly client: Client;

  constructor(opts: LogbookSaverOptions = {}) {
    super(opts.serde);
    this.client = opts.client ?? new Client();
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    if (config.configurable?.thread_id === undefined) return undefined; // no thread holds nothing
    const { threadId, ns, checkpointId } = target(config, "get a checkpoint");
    let c: LogbookCheckpoint;
    try {
      c = await this.client.findCheckpoint(threadId, {
        namespace: ns,
        ...(checkpointId ? { client_id: checkpointId } : {}),
        parent_writes: TASKS,
      });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    return this.#tuple(threadId, c);
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const threadId = config.configurable?.thread_id as string | undefined;
    const ns = config.configurable?.checkpoint_ns as string | undefined;
    const { limit, before, filter } = options;
    const query: Record<string, unknown> = { parent_writes: TASKS, limit: Math.min(limit ?? 200, 200) };
    if (ns !== undefined) query.namespace = ns;
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(filter ?? {})) {
      if (v !== undefined) metadata[k] = typeof v === "string" ? v : JSON.stringify(v);
    }
    if (Object.keys(metadata).length > 0) query.metadata = metadata;
    const b = before?.configurable;
    if (b?.checkpoint_id) {
      query.before = b.checkpoint_id;
      query.before_namespace = b.checkpoint_ns ?? "";
      if (threadId === undefined && b.thread_id !== undefined) query.before_session = String(b.thread_id);
    }
    const pager =
      threadId === undefined ? this.client.listAllCheckpoints(query) : this.client.listCheckpoints(String(threadId), query);
    let n = 0;
    try {
      for await (const c of pager) {
        if (limit !== undefined && n >= limit) return;
        n++;
        yield await this.#tuple(c.session_id, c);
      }
    } catch (err) {
      if (isNotFound(err)) return; // no such thread, or no such checkpoint to list before
      throw err;
    }
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const { threadId, ns, checkpointId: parentId } = target(config, "put a checkpoint");
    const { channel_values: values, ...rest } = checkpoint;
    const changed: Record<string, Typed | null> = {};
    for (const ch of Object.keys(newVersions)) {
      changed[ch] = Object.prototype.hasOwnProperty.call(values, ch) ? await this.#encode(values[ch]) : null;
    }
    await this.client.createCheckpoint(threadId, {
      namespace: ns,
      client_id: checkpoint.id,
      ...(parentId ? { parent_id: parentId } : {}),
      state_patch: { checkpoint: await this.#encode(rest), channel_values: changed },
      metadata: plain(metadata) as Record<string, unknown>,
      create_session: true,
    });
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const { threadId, ns, checkpointId } = target(config, "put writes");
    if (!checkpointId) {
      throw new Error('Failed to put writes: the config is missing "checkpoint_id" in its "configurable" property.');
    }
    await this.client.putCheckpointWrites(threadId, {
      namespace: ns,
      checkpoint_id: checkpointId,
      task_id: taskId,
      ...(taskPath ? { task_path: taskPath } : {}),
      writes: await Promise.all(writes.map(async ([channel, value]) => ({ channel, value: await this.#encode(value) }))),
      create_session: true,
    });
  }

  async deleteThread(threadId: string): Promise<void> {
    try {
      await this.client.purgeSession(threadId);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async #tuple(threadId: string, c: LogbookCheckpoint): Promise<CheckpointTuple> {
    const state = c.state as unknown as SavedState;
    const checkpoint = (await this.#decode(state.checkpoint)) as Checkpoint;
    checkpoint.channel_values = {};
    for (const [ch, v] of Object.entries(state.channel_values ?? {})) {
      checkpoint.channel_values[ch] = await this.#decode(v);
    }
    // Checkpoints before format 4 kept the sends of a step as their parent's
    // writes to TASKS: LangGraph's savers move them into the channel.
    if (checkpoint.v < 4 && c.parent_id) {
      checkpoint.channel_values[TASKS] = await Promise.all((c.parent_writes ?? []).map((w) => this.#decode(w.value as Typed)));
      const versions = Object.values(checkpoint.channel_versions);
      checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
    }
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: c.namespace, checkpoint_id: c.client_id } },
      checkpoint,
      metadata: c.metadata as CheckpointMetadata,
      pendingWrites: await Promise.all(
        (c.pending_writes ?? []).map(
          async (w: LogbookWrite): Promise<CheckpointPendingWrite> => [w.task_id, w.channel, await this.#decode(w.value as Typed)],
        ),
      ),
    };
    if (c.parent_id) {
      tuple.parentConfig = { configurable: { thread_id: threadId, checkpoint_ns: c.namespace, checkpoint_id: c.parent_id } };
    }
    return tuple;
  }

  async #encode(value: unknown): Promise<Typed> {
    const [type, bytes] = await this.serde.dumpsTyped(value);
    if (type === "json") return [type, JSON.parse(new TextDecoder().decode(bytes))];
    return [type, Buffer.from(bytes).toString("base64")];
  }

  async #decode([type, payload]: Typed): Promise<unknown> {
    if (type === "json") return this.serde.loadsTyped(type, JSON.stringify(payload));
    return this.serde.loadsTyped(type, new Uint8Array(Buffer.from(payload as string, "base64")));
  }
}

/** The thread, namespace and checkpoint a config names; a missing thread_id throws, as LangGraph's savers do. */
function target(config: RunnableConfig, what: string): { threadId: string; ns: string; checkpointId: string | undefined } {
  const c = config.configurable;
  if (c === undefined || c.thread_id === undefined || c.thread_id === null || c.thread_id === "") {
    throw new Error(
      `Failed to ${what}: the config is missing "thread_id" in its "configurable" property: a checkpointer needs one to know the thread (a Logbook session).`,
    );
  }
  return { threadId: String(c.thread_id), ns: (c.checkpoint_ns as string | undefined) ?? "", checkpointId: c.checkpoint_id as string | undefined };
}

function isNotFound(err: unknown): boolean {
  return err instanceof Problem && err.status === 404;
}

/** Metadata as JSON keeps it (undefined members dropped). */
function plain(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v ?? {}));
}

// LogbookStore is a graph's long-term memory store (config.store) over
// Logbook's item store.
export { LogbookStore } from "./langgraph-store.js";
export type { LogbookStoreOptions } from "./langgraph-store.js";
