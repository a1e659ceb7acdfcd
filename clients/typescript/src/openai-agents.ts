// A Session for the OpenAI Agents SDK (@openai/agents) stored in Logbook, with
// every optional capability of the SDK's Session. The SDK is only a type here:
// this module imports nothing from it at run time.

import type {
  AgentInputItem,
  Session,
  SessionHistoryMutation,
  SessionHistoryRewriteArgs,
  SessionHistoryTransactionArgs,
} from "@openai/agents";
import { Client } from "./client.js";
import { ConnectionError, Problem } from "./errors.js";
import { uuid7Hex } from "./internal.js";
import { asJson, canonical, isObject, itemToMessage, messageToItems, untyped, type Json } from "./openai-agents-items.js";
import type { Message, MessageInput, Part } from "./types.js";

export { itemToMessage, messageToItems } from "./openai-agents-items.js";

const BATCH = 1000; // the most messages one append takes
// Refusals that mean "this item's typed fields do not fit here": store it untyped instead.
const DEGRADABLE = new Set(["validation_failed", "unknown_tool_call", "duplicate_tool_result"]);
const FIELD_MESSAGE = /^messages\[(\d+)\]/;
const TRIES = 100; // attempts of a fenced write that other writers keep beating

/** One visible item and the stored message it comes from. */
interface Entry {
  item: AgentInputItem;
  msg: Message;
}

/** The visible history: what follows the latest compaction, read from one snapshot. */
interface History {
  entries: Entry[];
  lastSeq: number;
  /** The seq the visible history starts after (the latest compaction's through_seq, or 0). */
  base: number;
  exists: boolean;
}

export interface LogbookSessionOptions {
  /** The Logbook session's id; left out, a new one (`ses_` + a UUIDv7). */
  sessionId?: string;
  /** Default: `new Client()` (`$LOGBOOK_URL`, `$LOGBOOK_API_KEY`). */
  client?: Client;
  /** For the session, when `addItems` creates it. */
  agentId?: string;
  title?: string;
  metadata?: Record<string, unknown>;
}

/** The error a history transaction fails with; the SDK's own UserError is not imported at run time. */
export class SessionHistoryError extends Error {
  override name = "SessionHistoryError";
}

/**
 * An OpenAI Agents SDK `Session` whose history is a Logbook session: pass
 * it to `run(agent, input, { session })`, alone or under the SDK's
 * `OpenAIResponsesCompactionSession`.
 *
 * Every change is one request, atomic and safe to resend:
 * - `addItems` appends the items as one batch (chunks of 1000) under one
 *   `Idempotency-Key`; the session is created on the first one.
 * - `replaceHistoryWithCompaction` records a compaction through the
 *   session's last message and appends the replacement in the same write:
 *   the replaced messages stay in Logbook (readable, searchable, exported);
 *   the session's items are what follows the latest compaction.
 * - `applyHistoryTransaction` appends, or replaces a suffix with a rewind
 *   fenced by `expected_last_seq`; its `operationId` keys the write, so
 *   repeating it does nothing, and a different transaction under the same
 *   id fails.
 * - `applyHistoryMutations` rewrites the calls it names with one fenced rewind.
 * - `popItem` is a fenced rewind by one; `clearSession` a rewind to 0.
 *
 * `clearSession` followed at once (in the same tick) by `addItems`, which
 * is how `OpenAIResponsesCompactionSession` and the runner replace a history,
 * is sent as ONE request: a crash between the two calls leaves the old
 * history whole, never an empty session. A `clearSession` with no write
 * after it is sent by the next read, or at the end of the tick, whichever
 * comes first; every later call waits for it (and reports its failure).
 *
 * Items come back exactly as added: each message keeps its item in
 * `provider_item`, except that a large `data:` URL is kept once, in the typed
 * part, which the server stores as a file. Reasoning items keep their ids.
 */
export class LogbookSession implements Session {
  readonly client: Client;
  readonly sessionId: string;
  readonly #create: { agent_id?: string; title?: string; metadata?: Record<string, unknown> };
  /** A clear not yet sent: taken by the next write, or sent on its own at the end of the tick. */
  #pendingClear: { taken: boolean } | undefined;
  /** A clear sent on its own, until it is answered. */
  #clearing: Promise<void> | undefined;
  #clearError: unknown;

  constructor(opts: LogbookSessionOptions = {}) {
    this.client = opts.client ?? new Client();
    this.sessionId = opts.sessionId ?? `ses_${uuid7Hex()}`;
    this.#create = { agent_id: opts.agentId, title: opts.title, metadata: opts.metadata };
  }

  async getSessionId(): Promise<string> {
    return this.sessionId;
  }

  /** Logbook keeps reasoning items' ids: the runner persists them as the model gave them. */
  preserveReasoningItemIdsForPersistence(): boolean {
    return true;
  }

  /** Items come back as they were added: nothing to take off before the model sees them. */
  prepareHistoryItemForModelInput(item: AgentInputItem): AgentInputItem {
    return item;
  }

  /** Items come back as they were added: nothing to normalize before a comparison. */
  prepareHistoryItemsForPersistenceComparison(items: AgentInputItem[]): AgentInputItem[] {
    return items;
  }

  /** The history (what follows the latest compaction), oldest first; with `limit`, only the newest `limit` items. */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    await this.#settle();
    if (this.#takeClear()) await this.#clearNow(); // a read sees what is stored
    if (limit !== undefined && limit <= 0) return [];
    const items = (await this.#history()).entries.map((e) => e.item);
    return limit === undefined ? items : items.slice(-limit);
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.#settle();
    if (this.#takeClear()) {
      await this.#replace(items.map(asJson));
      return;
    }
    for (let i = 0; i < items.length; i += BATCH) await this.#append(items.slice(i, i + BATCH).map(asJson));
  }

  /**
   * Replaces the history with a compaction item and the items kept after it,
   * in one write: a compaction record through the last message, and the
   * items appended after it.
   */
  async replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
    await this.#settle();
    this.#takeClear(); // replaced anyway
    await this.#replace(items.map(asJson));
  }

  /** Removes and answers the newest item (undefined when the history is empty). */
  async popItem(): Promise<AgentInputItem | undefined> {
    await this.#settle();
    if (this.#takeClear()) await this.#clearNow();
    for (let tries = 0; tries < TRIES; tries++) {
      const h = await this.#history();
      const last = h.entries.at(-1);
      if (!last) return undefined;
      const items = messageToItems(last.msg);
      // A message that stands for several items (parallel calls another
      // runtime stored in one message) gives back all but its last, in the
      // same transaction.
      const tail = items.slice(0, -1).map((i) => itemToMessage(i));
      try {
        await this.client.rewind(this.sessionId, {
          to_seq: last.msg.seq - 1,
          expected_last_seq: h.lastSeq,
          ...(tail.length > 0 ? { messages: tail } : {}),
        });
      } catch (err) {
        if (err instanceof Problem && err.code === "stale_seq") continue; // another writer came first: look again
        if (!(err instanceof ConnectionError && err.maybeApplied)) throw err;
        if (await this.#stillThere(last.msg)) continue; // it did not land: try again
        // Gone: our rewind landed before the connection broke.
      }
      return items.at(-1);
    }
    throw new SessionHistoryError("popItem: the session kept changing under 100 attempts");
  }

  /** Rewinds the session to 0 (the session stays); sent with the next write, or at the end of the tick. */
  async clearSession(): Promise<void> {
    await this.#settle();
    if (this.#pendingClear) return;
    const pending = { taken: false };
    this.#pendingClear = pending;
    setImmediate(() => {
      if (pending.taken) return;
      this.#pendingClear = undefined;
      this.#clearing = this.#clearNow()
        .catch((err: unknown) => {
          this.#clearError = err;
        })
        .finally(() => {
          this.#clearing = undefined;
        });
    });
  }

  /**
   * An atomic, idempotent history change: its operation id keys the write
   * (a repeat changes nothing; another transaction under the same id fails),
   * and a suffix replacement is fenced by the history it expects.
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    const { operationId, transaction } = checkTransaction(args);
    await this.#settle();
    if (this.#takeClear()) await this.#clearNow();
    const key = await operationKey(operationId);
    if (transaction.type === "append_items") {
      if (transaction.items.length > BATCH) throw new SessionHistoryError(`a history transaction appends at most ${BATCH} items`);
      await this.#append(transaction.items.map(asJson), key);
      return;
    }
    await this.#replaceSuffix(key, transaction.expectedSuffix, transaction.replacement);
  }

  /** Rewrites the history as the SDK's mutations say (a function call replaced), in one fenced rewind. */
  async applyHistoryMutations(args: SessionHistoryRewriteArgs): Promise<void> {
    const mutations = args.mutations ?? [];
    if (mutations.length === 0) return;
    await this.#settle();
    if (this.#takeClear()) await this.#clearNow();
    await this.#rewrite((items) => applyMutations(items, mutations));
  }

  // --- the writes ------------------------------------------------------------------

  /** Waits for a clear sent on its own, and reports how it failed. */
  async #settle(): Promise<void> {
    if (this.#clearing) await this.#clearing;
    if (this.#clearError !== undefined) {
      const err = this.#clearError;
      this.#clearError = undefined;
      throw err;
    }
  }

  /** Takes the pending clear for the write about to be sent; whether there was one. */
  #takeClear(): boolean {
    const p = this.#pendingClear;
    if (!p) return false;
    p.taken = true;
    this.#pendingClear = undefined;
    return true;
  }

  async #clearNow(): Promise<void> {
    try {
      await this.client.rewind(this.sessionId, { to_seq: 0 });
    } catch (err) {
      if (!(err instanceof Problem && err.code === "not_found")) throw err;
    }
  }

  /** The visible history, from one snapshot (GET …/context). */
  async #history(): Promise<History> {
    try {
      const ctx = await this.client.getContext(this.sessionId);
      const entries: Entry[] = [];
      for (const msg of ctx.messages) for (const item of messageToItems(msg)) entries.push({ item, msg });
      return { entries, lastSeq: ctx.last_seq, base: ctx.compaction?.through_seq ?? 0, exists: true };
    } catch (err) {
      if (err instanceof Problem && err.code === "not_found") return { entries: [], lastSeq: 0, base: 0, exists: false };
      throw err;
    }
  }

  async #ensureSession(): Promise<void> {
    await this.client.createSession({ id: this.sessionId, ...this.#create }).catch((e: unknown) => {
      if (!(e instanceof Problem && e.code === "conflict")) throw e; // made meanwhile by another writer
    });
  }

  /**
   * Sends items as messages through send, typed where the server takes their
   * typed fields, each refused one stored untyped instead; creates the
   * session once if it is missing.
   */
  async #send(items: Json[], send: (msgs: MessageInput[]) => Promise<void>, clientIds?: (i: number) => string): Promise<void> {
    const typedMsgs = items.map((item, i) => itemToMessage(item as unknown as AgentInputItem, clientIds?.(i)));
    const opaque = new Set<number>();
    let created = false;
    for (;;) {
      const body = items.map((item, i) => {
        if (!opaque.has(i)) return typedMsgs[i]!;
        const m = untyped(item);
        if (clientIds) m.client_id = clientIds(i);
        return m;
      });
      try {
        await send(body);
        return;
      } catch (err) {
        if (!(err instanceof Problem)) throw err;
        if (err.code === "not_found" && !created && err.body.resource !== "message") {
          created = true;
          await this.#ensureSession();
          continue;
        }
        if (!DEGRADABLE.has(err.code)) throw err;
        // Items whose typed fields the server refuses (a tool result whose
        // call it does not know, say) are stored with the item alone.
        const named = err.errors
          .map((e) => FIELD_MESSAGE.exec(e.field)?.[1])
          .filter((n): n is string => n !== undefined)
          .map(Number)
          .filter((n) => n < items.length && !opaque.has(n));
        if (named.length === 0) throw err;
        for (const n of named) opaque.add(n);
      }
    }
  }

  async #append(items: Json[], key?: string): Promise<void> {
    try {
      await this.#send(
        items,
        async (msgs) => {
          await this.client.appendMessages(this.sessionId, msgs, key ? { idempotencyKey: key } : {});
        },
        key ? (i) => `${key}:${i}` : undefined,
      );
    } catch (err) {
      if (!key && err instanceof Problem && err.code === "payload_too_large" && items.length > 1) {
        const half = Math.ceil(items.length / 2);
        await this.#append(items.slice(0, half));
        await this.#append(items.slice(half));
        return;
      }
      if (key && err instanceof Problem && err.code === "idempotency_conflict") {
        throw new SessionHistoryError("Session history operation was already applied with a different transaction.");
      }
      throw err;
    }
  }

  /**
   * Replaces the whole history with items in one write: when they hold a
   * compaction item and there is a history to compact, a compaction record
   * through the last message and the items after it (the replaced messages
   * stay in Logbook); a rewind to 0 with the items otherwise.
   */
  async #replace(items: Json[]): Promise<void> {
    if (items.length > BATCH) throw new SessionHistoryError(`a history is replaced by at most ${BATCH} items at once`);
    const compaction = items.find((i) => i.type === "compaction");
    for (let tries = 0; tries < TRIES; tries++) {
      let lastSeq = 0;
      try {
        lastSeq = (await this.client.getSession(this.sessionId)).last_seq;
      } catch (err) {
        if (!(err instanceof Problem && err.code === "not_found")) throw err;
      }
      try {
        await this.#send(items, async (messages) => {
          if (lastSeq > 0 && compaction) {
            try {
              await this.client.createCompaction(this.sessionId, {
                through_seq: lastSeq,
                expected_last_seq: lastSeq,
                summary: compactionSummary(compaction),
                provider_item: compaction,
                messages,
              });
              return;
            } catch (err) {
              // Nothing follows the latest compaction: nothing to compact, only items to add.
              if (!(err instanceof Problem && err.errors[0]?.field === "through_seq")) throw err;
            }
            await this.client.rewind(this.sessionId, { to_seq: lastSeq, expected_last_seq: lastSeq, messages });
          } else if (lastSeq > 0) {
            await this.client.rewind(this.sessionId, { to_seq: 0, expected_last_seq: lastSeq, messages });
          } else if (messages.length > 0) {
            await this.client.appendMessages(this.sessionId, messages, { expectedLastSeq: 0 });
          }
        });
        return;
      } catch (err) {
        if (err instanceof Problem && err.code === "stale_seq") continue;
        throw err;
      }
    }
    throw new SessionHistoryError("the session kept changing under 100 attempts to replace its history");
  }

  /** replace_suffix: the history must end with expected; it then ends with replacement instead. */
  async #replaceSuffix(key: string, expected: AgentInputItem[], replacement: AgentInputItem[]): Promise<void> {
    const want = replacement.map((i) => canonical(asJson(i)));
    for (let tries = 0; tries < TRIES; tries++) {
      const h = await this.#history();
      // Applied already (a resend after a crash): its first message is there under the operation's id.
      if (replacement.length > 0) {
        const at = h.entries.findIndex((e) => e.msg.client_id === `${key}:0`);
        if (at >= 0) {
          const got = h.entries.slice(at, at + replacement.length).map((e) => canonical(e.item));
          if (got.length === want.length && got.every((g, i) => g === want[i])) return;
          throw new SessionHistoryError("Session history operation was already applied with a different transaction.");
        }
      }
      const n = h.entries.length;
      const cut = n - expected.length;
      const matches =
        cut >= 0 && expected.every((item, i) => canonical(asJson(item)) === canonical(h.entries[cut + i]!.item));
      if (!matches) throw new SessionHistoryError("Session history suffix no longer matches the transaction precondition.");
      try {
        await this.#rewindFrom(h, cut, replacement.map(asJson), key);
        return;
      } catch (err) {
        if (err instanceof Problem && err.code === "stale_seq") continue;
        throw err;
      }
    }
    throw new SessionHistoryError("the session kept changing under 100 attempts to apply a history transaction");
  }

  /** Rewrites the visible history as transform says, from its first changed item on. */
  async #rewrite(transform: (items: AgentInputItem[]) => AgentInputItem[]): Promise<void> {
    for (let tries = 0; tries < TRIES; tries++) {
      const h = await this.#history();
      const old = h.entries.map((e) => canonical(e.item));
      const next = transform(h.entries.map((e) => e.item));
      let first = 0;
      while (first < old.length && first < next.length && old[first] === canonical(asJson(next[first]))) first++;
      if (first === old.length && first === next.length) return; // nothing changes: applied already
      try {
        await this.#rewindFrom(h, first, next.slice(first).map(asJson));
        return;
      } catch (err) {
        if (err instanceof Problem && err.code === "stale_seq") continue;
        throw err;
      }
    }
    throw new SessionHistoryError("the session kept changing under 100 attempts to rewrite its history");
  }

  /**
   * One fenced rewind that keeps the visible items before index `from` and
   * appends tail after them. A message that stands for several items, cut
   * inside, is removed whole and its items before the cut re-added.
   */
  async #rewindFrom(h: History, from: number, tail: Json[], key?: string): Promise<void> {
    let toSeq = h.lastSeq;
    let keep: Json[] = [];
    if (from < h.entries.length) {
      const msg = h.entries[from]!.msg;
      toSeq = msg.seq - 1;
      const start = h.entries.findIndex((e) => e.msg.seq === msg.seq);
      keep = h.entries.slice(start, from).map((e) => asJson(e.item));
    }
    const items = [...keep, ...tail];
    if (items.length > BATCH) throw new SessionHistoryError(`a history rewrite appends at most ${BATCH} items at once`);
    if (!h.exists && items.length === 0) return;
    await this.#send(
      items,
      async (messages) => {
        if (!h.exists) {
          await this.client.appendMessages(this.sessionId, messages, { expectedLastSeq: 0, ...(key ? { idempotencyKey: key } : {}) });
          return;
        }
        await this.client.rewind(
          this.sessionId,
          { to_seq: toSeq, expected_last_seq: h.lastSeq, ...(messages.length > 0 ? { messages } : {}) },
          key ? { idempotencyKey: `${key}:${toSeq}:${h.lastSeq}` } : {},
        );
      },
      key ? (i) => (i >= keep.length ? `${key}:${i - keep.length}` : `${key}:kept:${i}`) : undefined,
    );
  }

  async #stillThere(m: Message): Promise<boolean> {
    try {
      return (await this.client.getMessage(this.sessionId, m.id)).seq === m.seq;
    } catch (err) {
      if (err instanceof Problem && err.code === "not_found") return false;
      throw err;
    }
  }
}

/** A compaction item as a compaction record's summary: its opaque payload, as a reasoning part. */
function compactionSummary(item: Json): Part[] | string {
  const enc = typeof item.encrypted_content === "string" ? item.encrypted_content : "";
  return enc !== "" ? [{ type: "reasoning", encrypted_content: enc }] : "(compacted history)";
}

/** Checks a transaction's arguments as the SDK's MemorySession does, before anything is sent. */
function checkTransaction(args: SessionHistoryTransactionArgs): SessionHistoryTransactionArgs {
  if (!isObject(args)) throw new SessionHistoryError("Session history transaction arguments are invalid.");
  const { operationId, transaction } = args;
  if (typeof operationId !== "string" || !operationId.trim()) {
    throw new SessionHistoryError("Session history transaction operationId must be a non-empty string.");
  }
  if (!isObject(transaction)) throw new SessionHistoryError("Session history transaction must be an object.");
  if (transaction.type === "append_items" && Array.isArray(transaction.items)) return args;
  if (transaction.type === "replace_suffix" && Array.isArray(transaction.expectedSuffix) && Array.isArray(transaction.replacement)) {
    return args;
  }
  throw new SessionHistoryError("Unsupported session history transaction type.");
}

/** An operation id as an Idempotency-Key (at most 255 characters): its SHA-256. */
async function operationKey(operationId: string): Promise<string> {
  const sum = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(operationId));
  return "agents-op:" + Array.from(new Uint8Array(sum), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The SDK's history mutations, as its applySessionHistoryMutations applies them. */
function applyMutations(items: AgentInputItem[], mutations: SessionHistoryMutation[]): AgentInputItem[] {
  let next = items;
  for (const m of mutations) {
    if (m.type !== "replace_function_call") continue;
    const out: AgentInputItem[] = [];
    let kept = false;
    for (const item of next) {
      if (item.type === "function_call" && item.callId === m.callId) {
        if (!kept) out.push(asJson(m.replacement) as unknown as AgentInputItem);
        kept = true;
        continue;
      }
      out.push(item);
    }
    next = out;
  }
  return next;
}
