// A Session for the OpenAI Agents SDK (@openai/agents) stored in Logbook.
// The SDK is only a type here: this module imports nothing from it at run time.

import type { AgentInputItem, Session } from "@openai/agents";
import { Client } from "./client.js";
import { ConnectionError, Problem } from "./errors.js";
import { uuid7Hex } from "./internal.js";
import type { Message, MessageInput, Part } from "./types.js";

type Json = Record<string, unknown>;

const MESSAGE_ROLES = new Set(["user", "assistant", "system", "developer"]);
const BATCH = 1000; // the most messages one append takes
// Refusals that mean "this item's typed fields do not fit here": store it untyped instead.
const DEGRADABLE = new Set(["validation_failed", "unknown_tool_call", "duplicate_tool_result"]);
const FIELD_MESSAGE = /^messages\[(\d+)\]/;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** An http(s) or data: URL, the only kind a part's `url` takes. */
function url(v: unknown): string | undefined {
  return typeof v === "string" && /^(https?:|data:)/i.test(v) ? v : undefined;
}

function validCallId(v: unknown): v is string {
  return typeof v === "string" && v.length > 0 && v.length <= 256;
}

// --- items to messages ----------------------------------------------------------

/** The SDK's content parts as Logbook parts; those Logbook has no typed place for (audio, a provider's file id) are left to the whole item. */
function partsIn(content: unknown[], role: string): Part[] {
  const parts: Part[] = [];
  for (const p of content) {
    if (!isObject(p)) continue;
    switch (p.type) {
      case "input_text":
      case "output_text":
      case "text":
        if (typeof p.text === "string") parts.push({ type: "text", text: p.text });
        break;
      case "refusal":
        if (role === "assistant" && typeof p.refusal === "string") parts.push({ type: "refusal", text: p.refusal });
        break;
      case "input_image":
      case "image": {
        const image = p.image;
        const u = url(image) ?? (isObject(image) ? url(image.url) : undefined);
        if (u && role !== "assistant") {
          const part: Part = { type: "image", url: u };
          const detail = str(p.detail);
          if (detail && detail.length <= 32) part.detail = detail;
          parts.push(part);
        }
        break;
      }
      case "input_file":
      case "file": {
        const file = p.file;
        const u = url(file) ?? (isObject(file) ? url(file.url) : undefined);
        if (u && role !== "assistant") {
          const part: Part = { type: "file", url: u };
          const name = str(p.filename) ?? (isObject(file) ? str(file.filename) : undefined);
          if (name) part.filename = name;
          parts.push(part);
        }
        break;
      }
    }
  }
  return parts;
}

/** The typed fields README's "OpenAI Responses" table gives an item, or undefined when it has no place for it. */
function typed(item: Json): MessageInput | undefined {
  const type = item.type;
  const role = item.role;
  if ((type === undefined || type === "message") && typeof role === "string" && MESSAGE_ROLES.has(role)) {
    const r = role as MessageInput["role"];
    if (typeof item.content === "string") return { role: r, content: item.content };
    if (Array.isArray(item.content)) {
      const parts = partsIn(item.content, r);
      return { role: r, content: parts.length > 0 ? parts : "" };
    }
    return undefined;
  }
  if (type === "function_call") {
    const { callId, name, arguments: args } = item;
    if (!validCallId(callId) || typeof name !== "string" || name.length === 0 || name.length > 256) return undefined;
    if (typeof args !== "string") return undefined;
    try {
      JSON.parse(args); // the server stores only arguments that are JSON
    } catch {
      return undefined;
    }
    return { role: "assistant", content: "", tool_calls: [{ id: callId, name, arguments: args }] };
  }
  if (type === "function_call_result") {
    if (!validCallId(item.callId)) return undefined;
    const msg: MessageInput = { role: "tool", tool_call_id: item.callId, content: "" };
    if (typeof item.name === "string" && item.name) msg.name = item.name;
    const out = item.output;
    if (typeof out === "string") msg.content = out;
    else if (isObject(out) && out.type === "text" && typeof out.text === "string") msg.content = out.text;
    else if (isObject(out)) msg.content = partsIn([out], "tool");
    else if (Array.isArray(out)) msg.content = partsIn(out, "tool");
    return msg;
  }
  if (type === "reasoning") {
    const part: Part = { type: "reasoning", summary: [] };
    for (const c of Array.isArray(item.content) ? item.content : []) {
      if (isObject(c) && typeof c.text === "string") part.summary!.push(c.text);
    }
    const raw = Array.isArray(item.rawContent) ? item.rawContent : [];
    if (raw.length === 1 && isObject(raw[0]) && typeof raw[0].text === "string") part.text = raw[0].text;
    const enc = isObject(item.providerData) ? str(item.providerData.encryptedContent ?? item.providerData.encrypted_content) : undefined;
    if (enc) part.encrypted_content = enc;
    return { role: "assistant", content: [part] };
  }
  return undefined; // hosted tool calls, computer and shell calls, compaction, unknown items
}

/** An item as JSON gives it back (so that what is stored is what is read). */
function asJson(item: AgentInputItem): Json {
  return JSON.parse(JSON.stringify(item)) as Json;
}

function untyped(item: Json): MessageInput {
  return { role: "assistant", content: "", provider_item: item };
}

/**
 * The message that stores one SDK item: the typed fields README's mapping
 * table has a place for (role, content as text or parts, tool calls, tool
 * results, reasoning), and the whole item in `provider_item`. An item the
 * table has no place for is an assistant message with empty content and the
 * item.
 */
export function itemToMessage(item: AgentInputItem): MessageInput {
  const whole = asJson(item);
  const msg = typed(whole);
  return msg ? { ...msg, provider_item: whole } : untyped(whole);
}

// --- messages to items ---------------------------------------------------------

function partsOut(content: Message["content"], role: string): unknown[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: role === "assistant" ? "output_text" : "input_text", text: content }];
  const out: unknown[] = [];
  for (const p of content) {
    if (p.type === "text") out.push({ type: role === "assistant" ? "output_text" : "input_text", text: p.text ?? "" });
    else if (p.type === "refusal") out.push({ type: "refusal", refusal: p.text ?? "" });
    else if (p.type === "image" && p.url) out.push({ type: "input_image", image: p.url, ...(p.detail ? { detail: p.detail } : {}) });
    else if (p.type === "file" && p.url) out.push({ type: "input_file", file: p.url, ...(p.filename ? { filename: p.filename } : {}) });
  }
  return out;
}

function textOf(content: Message["content"]): string {
  return typeof content === "string" ? content : content.map((p) => (p.type === "text" ? (p.text ?? "") : "")).join("");
}

/**
 * The SDK items a stored message stands for: its `provider_item` when that
 * is a whole item (it has `type` or `role`), else an item made by README's
 * rules from the typed fields (a message another runtime wrote): a `tool`
 * message is a `function_call_result`, each tool call a `function_call`, a
 * lone reasoning part a `reasoning` item, anything else a message.
 */
export function messageToItems(m: Message): AgentInputItem[] {
  const pi = m.provider_item;
  if (isObject(pi) && ("type" in pi || "role" in pi)) return [pi as unknown as AgentInputItem];
  const items: Json[] = [];
  if (m.role === "tool") {
    const output = typeof m.content === "string" ? m.content : partsOut(m.content, "tool");
    items.push({ type: "function_call_result", callId: m.tool_call_id ?? "", name: m.name ?? "", status: "completed", output });
  } else if (m.tool_calls && m.tool_calls.length > 0) {
    if (textOf(m.content) !== "") items.push({ type: "message", role: "assistant", status: "completed", content: partsOut(m.content, "assistant") });
    for (const c of m.tool_calls) {
      items.push({ type: "function_call", callId: c.id, name: c.name, arguments: c.arguments, status: "completed" });
    }
  } else if (Array.isArray(m.content) && m.content.length === 1 && m.content[0]!.type === "reasoning") {
    const p = m.content[0]!;
    const item: Json = { type: "reasoning", content: (p.summary ?? []).map((text) => ({ type: "input_text", text })) };
    if (p.text !== undefined) item.rawContent = [{ type: "reasoning_text", text: p.text }];
    if (p.encrypted_content) item.providerData = { encryptedContent: p.encrypted_content };
    items.push(item);
  } else if (m.role === "assistant") {
    items.push({ type: "message", role: "assistant", status: "completed", content: partsOut(m.content, "assistant") });
  } else if (m.role === "user") {
    items.push({ type: "message", role: "user", content: typeof m.content === "string" ? m.content : partsOut(m.content, "user") });
  } else {
    items.push({ type: "message", role: "system", content: textOf(m.content) }); // the SDK has no developer role
  }
  if (isObject(pi) && typeof pi.id === "string" && items.length === 1) items[0]!.id = pi.id;
  return items as unknown as AgentInputItem[];
}

// --- the session -------------------------------------------------------------------

export interface LogbookSessionOptions {
  /** The Logbook session's id; left out, a new one (`ses_` + a UUIDv7). */
  sessionId?: string;
  /** Default: `new Client()` (`$LOGBOOK_URL`, `$LOGBOOK_API_KEY`). */
  client?: Client;
  /** For the session, when `addItems` creates it. */
  agentId?: string;
  title?: string;
  metadata?: Record<string, unknown>;
  /** Messages per page when reading the history (1–200, default 200). */
  pageSize?: number;
}

/**
 * An OpenAI Agents SDK `Session` whose history is a Logbook session: pass
 * it to `run(agent, input, { session })`.
 *
 * - `addItems` appends the items as one all-or-nothing batch (chunks of
 *   1000) under one `Idempotency-Key`, so the client's retries never store an
 *   item twice. The Logbook session is created on the first `addItems` if it
 *   does not exist.
 * - `getItems` answers the items exactly as they were added (each message
 *   keeps its whole item in `provider_item`).
 * - `popItem` removes the newest item with a rewind fenced by
 *   `expected_last_seq`: of two concurrent pops, each pops a different item.
 * - `clearSession` rewinds the session to 0; the session stays.
 */
export class LogbookSession implements Session {
  readonly client: Client;
  readonly sessionId: string;
  readonly #create: { agent_id?: string; title?: string; metadata?: Record<string, unknown> };
  readonly #pageSize: number;

  constructor(opts: LogbookSessionOptions = {}) {
    this.client = opts.client ?? new Client();
    this.sessionId = opts.sessionId ?? `ses_${uuid7Hex()}`;
    this.#create = { agent_id: opts.agentId, title: opts.title, metadata: opts.metadata };
    this.#pageSize = Math.max(1, Math.min(200, opts.pageSize ?? 200));
  }

  async getSessionId(): Promise<string> {
    return this.sessionId;
  }

  /** The history, oldest first; with `limit`, only the newest `limit` items. */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && limit <= 0) return [];
    try {
      if (limit === undefined) {
        const items: AgentInputItem[] = [];
        for await (const m of this.client.listMessages(this.sessionId, { limit: this.#pageSize })) items.push(...messageToItems(m));
        return items;
      }
      const newest: AgentInputItem[] = []; // newest first
      const size = Math.min(this.#pageSize, limit);
      for await (const m of this.client.listMessages(this.sessionId, { order: "desc", limit: size })) {
        newest.push(...messageToItems(m).reverse());
        if (newest.length >= limit) break;
      }
      return newest.slice(0, limit).reverse();
    } catch (err) {
      if (err instanceof Problem && err.code === "not_found") return [];
      throw err;
    }
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    for (let i = 0; i < items.length; i += BATCH) await this.#append(items.slice(i, i + BATCH).map(asJson));
  }

  /** Removes and answers the newest item (undefined when the history is empty). */
  async popItem(): Promise<AgentInputItem | undefined> {
    for (let tries = 0; tries < 100; tries++) {
      let last: Message | undefined;
      try {
        last = (await this.client.listMessages(this.sessionId, { order: "desc", limit: 1 }).firstPage()).data[0];
      } catch (err) {
        if (err instanceof Problem && err.code === "not_found") return undefined;
        throw err;
      }
      if (!last) return undefined;
      const items = messageToItems(last);
      // A message that stands for several items (parallel calls another
      // runtime stored in one message) gives back all but its last, in the
      // same transaction.
      const tail = items.slice(0, -1).map(itemToMessage);
      try {
        await this.client.rewind(this.sessionId, {
          to_seq: last.seq - 1,
          expected_last_seq: last.seq,
          ...(tail.length > 0 ? { messages: tail } : {}),
        });
      } catch (err) {
        if (err instanceof Problem && err.code === "stale_seq") continue; // another writer came first: look again
        if (!(err instanceof ConnectionError && err.maybeApplied)) throw err;
        if (await this.#stillThere(last)) continue; // it did not land: try again
        // Gone: our rewind landed before the connection broke.
      }
      return items.at(-1);
    }
    throw new Error("popItem: the session kept changing under 100 attempts");
  }

  async clearSession(): Promise<void> {
    try {
      await this.client.rewind(this.sessionId, { to_seq: 0 });
    } catch (err) {
      if (!(err instanceof Problem && err.code === "not_found")) throw err;
    }
  }

  async #stillThere(m: Message): Promise<boolean> {
    try {
      return (await this.client.getMessage(this.sessionId, m.id)).seq === m.seq;
    } catch (err) {
      if (err instanceof Problem && err.code === "not_found") return false;
      throw err;
    }
  }

  async #append(items: Json[]): Promise<void> {
    const typedMsgs = items.map((i) => itemToMessage(i as unknown as AgentInputItem));
    const opaque = new Set<number>();
    let created = false;
    for (;;) {
      const body = items.map((item, i) => (opaque.has(i) ? untyped(item) : typedMsgs[i]!));
      try {
        await this.client.appendMessages(this.sessionId, body);
        return;
      } catch (err) {
        if (!(err instanceof Problem)) throw err;
        if (err.code === "not_found" && !created) {
          created = true;
          await this.client.createSession({ id: this.sessionId, ...this.#create }).catch((e: unknown) => {
            if (!(e instanceof Problem && e.code === "conflict")) throw e; // made meanwhile by another writer
          });
          continue;
        }
        if (err.code === "payload_too_large" && items.length > 1) {
          const half = Math.ceil(items.length / 2);
          await this.#append(items.slice(0, half));
          await this.#append(items.slice(half));
          return;
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
}
