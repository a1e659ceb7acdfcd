// Google's Agent Development Kit for TypeScript (@google/adk 2.x) on Logbook:
// LogbookSessionService keeps ADK sessions as Logbook sessions, their events
// as messages and their state in the item store; LogbookMemoryService keeps
// what sessions said as an agent's archival passages and searches them.
// README.md ("Google ADK") has the mapping.

import {
  BaseSessionService,
  createSession,
  mergeStates,
  State,
  trimTempDeltaState,
  type AppendEventRequest,
  type BaseMemoryService,
  type CreateSessionRequest,
  type DeleteSessionRequest,
  type Event,
  type GetSessionRequest,
  type ListSessionsRequest,
  type ListSessionsResponse,
  type MemoryEntry,
  type SearchMemoryRequest,
  type SearchMemoryResponse,
  type Session,
} from "@google/adk";
import { Client } from "./client.js";
import { Problem } from "./errors.js";
import type { ItemHit, ItemOp, Message, MessageInput, Part, Session as LogbookSession } from "./types.js";

type Json = Record<string, unknown>;
type AdkPart = NonNullable<NonNullable<Event["content"]>["parts"]>[number];

const BATCH = 100; // the most operations one item batch takes
const PAGE = 200; // the most items one search answers
// Refusals that mean "this event's typed fields do not fit here": store it untyped instead.
const DEGRADABLE = new Set(["validation_failed", "unknown_tool_call", "duplicate_tool_result"]);

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function validCallId(v: unknown): v is string {
  return typeof v === "string" && v.length > 0 && v.length <= 256;
}

function isNotFound(err: unknown): boolean {
  return err instanceof Problem && err.code === "not_found";
}

// --- events to messages -----------------------------------------------------------

/** The event's text and thought parts as Logbook parts; the rest (inline data, files, code) is left to the whole event. */
function partsIn(parts: AdkPart[]): Part[] {
  const out: Part[] = [];
  for (const p of parts) {
    if (typeof p.text !== "string") continue;
    out.push(p.thought ? { type: "reasoning", summary: [], text: p.text } : { type: "text", text: p.text });
  }
  return out;
}

/** The typed fields README's "Google ADK" table gives an event, or undefined when it has no place for it. */
function typedEvent(event: Event): MessageInput | undefined {
  const parts = event.content?.parts ?? [];
  const calls = parts.filter((p) => p.functionCall);
  const responses = parts.filter((p) => p.functionResponse);
  if (responses.length > 0) {
    const r = responses[0]!.functionResponse!;
    if (responses.length > 1 || calls.length > 0 || !validCallId(r.id)) return undefined;
    const msg: MessageInput = { role: "tool", tool_call_id: r.id, content: JSON.stringify(r.response ?? {}) };
    if (r.name) msg.name = r.name;
    return msg;
  }
  const content = partsIn(parts);
  if (event.author === "user" && calls.length === 0) return { role: "user", content: content.length > 0 ? content : "" };
  const msg: MessageInput = { role: "assistant", content: content.length > 0 ? content : "" };
  if (event.author && event.author.length <= 256) msg.name = event.author;
  if (calls.length > 0) {
    if (!calls.every((p) => validCallId(p.functionCall!.id) && p.functionCall!.name)) return undefined;
    msg.tool_calls = calls.map((p) => ({ id: p.functionCall!.id!, name: p.functionCall!.name!, arguments: JSON.stringify(p.functionCall!.args ?? {}) }));
  }
  if (event.modelVersion && event.modelVersion.length <= 256) msg.model = event.modelVersion;
  const tokens = event.usageMetadata?.totalTokenCount;
  if (typeof tokens === "number" && tokens >= 0) msg.tokens = tokens;
  return msg;
}

/** An event as JSON gives it back (so that what is stored is what is read). */
function asJson(event: Event): Json {
  return JSON.parse(JSON.stringify(event)) as Json;
}

/**
 * The message that stores one event: the typed fields README's table has a
 * place for (role, text parts, function calls as tool calls, a function
 * response as a tool result), and the whole event in `provider_item`. An
 * event the table has no place for (several function responses, no
 * content) is an assistant message with empty content and the event.
 */
export function eventToMessage(event: Event): MessageInput {
  const whole = asJson(event);
  const msg = typedEvent(event);
  return msg ? { ...msg, provider_item: whole } : { role: "assistant", content: "", provider_item: whole };
}

// --- messages to events -----------------------------------------------------------

function textParts(content: Message["content"]): AdkPart[] {
  if (typeof content === "string") return content === "" ? [] : [{ text: content }];
  const out: AdkPart[] = [];
  for (const p of content) {
    if (p.type === "text" || p.type === "refusal") out.push({ text: p.text ?? "" });
    else if (p.type === "reasoning" && p.text !== undefined) out.push({ text: p.text, thought: true });
  }
  return out;
}

/**
 * The event a stored message stands for: its `provider_item` when that is a
 * whole event (it has `id` and `actions`), else one made by README's rules
 * from the typed fields (a message another runtime wrote).
 */
export function messageToEvent(m: Message): Event {
  const pi = m.provider_item;
  if (isObject(pi) && typeof pi.id === "string" && isObject(pi.actions)) {
    const e = pi as unknown as Event;
    const a = e.actions as Partial<Event["actions"]>;
    e.actions = { ...a, stateDelta: a.stateDelta ?? {}, artifactDelta: a.artifactDelta ?? {},
      requestedAuthConfigs: a.requestedAuthConfigs ?? {}, requestedToolConfirmations: a.requestedToolConfirmations ?? {} };
    return e;
  }
  const base = {
    id: m.id,
    invocationId: "",
    timestamp: Date.parse(m.created_at),
    actions: { stateDelta: {}, artifactDelta: {}, requestedAuthConfigs: {}, requestedToolConfirmations: {} },
  };
  if (m.role === "tool") {
    let response: unknown;
    const text = typeof m.content === "string" ? m.content : textParts(m.content).map((p) => p.text).join("");
    try {
      response = JSON.parse(text);
    } catch {
      response = { result: text };
    }
    return {
      ...base,
      author: m.name ?? "model",
      content: { role: "user", parts: [{ functionResponse: { id: m.tool_call_id ?? "", name: m.name ?? "", response: isObject(response) ? response : { result: response } } }] },
    };
  }
  const parts = textParts(m.content);
  for (const c of m.tool_calls ?? []) {
    let args: unknown;
    try {
      args = JSON.parse(c.arguments);
    } catch {
      args = {};
    }
    parts.push({ functionCall: { id: c.id, name: c.name, args: isObject(args) ? args : {} } });
  }
  const user = m.role === "user";
  return { ...base, author: user ? "user" : (m.name ?? "model"), content: { role: user ? "user" : "model", parts } };
}

// --- state -------------------------------------------------------------------------

/** A name as one namespace label: "." joins labels, so it is escaped (as "%" is). */
function label(s: string): string {
  return s.replaceAll("%", "%25").replaceAll(".", "%2E");
}

const appStateNs = (app: string) => ["adk", label(app), "app_state"];
const userStateNs = (app: string) => ["adk", label(app), "user_state"];
const sessionStateNs = (app: string, id: string) => ["adk", label(app), "session_state", label(id)];
const memoryNs = (app: string, sessionId: string) => ["adk", label(app), "memory", label(sessionId)];

/** The state keys of a delta by scope, their prefixes cut; temp: keys go nowhere. */
function splitState(delta: Json): { app: Json; user: Json; session: Json } {
  const out = { app: {} as Json, user: {} as Json, session: {} as Json };
  for (const [k, v] of Object.entries(delta)) {
    if (k.startsWith(State.TEMP_PREFIX)) continue;
    if (k.startsWith(State.APP_PREFIX)) out.app[k.slice(State.APP_PREFIX.length)] = v;
    else if (k.startsWith(State.USER_PREFIX)) out.user[k.slice(State.USER_PREFIX.length)] = v;
    else out.session[k] = v;
  }
  return out;
}

/** One state key as an item's value: any JSON, wrapped, since an item's value is an object. */
function wrap(v: unknown): Json {
  return v === undefined ? {} : { v };
}

function unwrapAll(hits: ItemHit[]): Json {
  const out: Json = Object.create(null) as Json;
  for (const h of hits) out[h.key] = (h.value as Json).v;
  return out;
}

function putOps(namespace: string[], state: Json): ItemOp[] {
  return Object.entries(state).map(([key, v]) => ({ op: "put", namespace, key, value: wrap(v), index: false }));
}

/** Every live item under namespace in one space, following cursors. */
async function searchAll(client: Client, namespace: string[], userId?: string): Promise<ItemHit[]> {
  const out: ItemHit[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.searchItems({ namespace_prefix: namespace, limit: PAGE, ...(cursor ? { cursor } : {}) }, { userId });
    out.push(...page.data);
    cursor = page.has_more && page.next_cursor ? page.next_cursor : undefined;
  } while (cursor);
  return out;
}

export interface LogbookSessionServiceOptions {
  client: Client;
}

/**
 * ADK's `BaseSessionService` over Logbook. A session is a Logbook session
 * with the ADK session's id, `user_id` the ADK user and `metadata.adk_app`
 * the app; each event is one message (appended under the event's id as its
 * `Idempotency-Key`, so a retried append never stores it twice); `app:`
 * state is the app's shared items, `user:` state and the session's own
 * state the user's items, `temp:` state nothing. It needs a key that may
 * write the tenant's shared items (a key bound to a user cannot keep
 * `app:` state).
 */
export class LogbookSessionService extends BaseSessionService {
  readonly client: Client;

  constructor(opts: LogbookSessionServiceOptions) {
    super();
    this.client = opts.client;
  }

  override async createSession({ appName, userId, state, sessionId }: CreateSessionRequest): Promise<Session> {
    const id = sessionId || crypto.randomUUID();
    let created: LogbookSession;
    try {
      created = await this.client.createSession({ id, user_id: userId, metadata: { adk_app: appName } });
    } catch (err) {
      if (err instanceof Problem && err.code === "conflict") throw new Error(`Session with id ${id} already exists.`);
      throw err;
    }
    const parts = splitState(state ?? {});
    const stored = await this.#writeAndReadState(appName, userId, id, parts);
    return createSession({
      id,
      appName,
      userId,
      state: mergeStates(stored.app, stored.user, stored.session),
      events: [],
      lastUpdateTime: Date.parse(created.created_at),
    });
  }

  override async getSession({ appName, userId, sessionId, config }: GetSessionRequest): Promise<Session | undefined> {
    const s = await this.#find(appName, userId, sessionId);
    if (!s) return undefined;
    const [events, state] = await Promise.all([this.#events(sessionId, config?.numRecentEvents), this.#readState(appName, userId, sessionId)]);
    let shown = events;
    if (config?.afterTimestamp) {
      // As ADK's in-memory service: from the first event after the last one before the time.
      let i = shown.length - 1;
      while (i >= 0 && shown[i]!.timestamp >= config.afterTimestamp) i--;
      shown = shown.slice(i + 1);
    }
    const last = events.at(-1);
    return createSession({
      id: sessionId,
      appName,
      userId,
      state: mergeStates(state.app, state.user, state.session),
      events: shown,
      lastUpdateTime: last ? last.timestamp : Date.parse(s.created_at),
    });
  }

  override async listSessions({ appName, userId, limit, offset, page, order }: ListSessionsRequest): Promise<ListSessionsResponse> {
    const query: Record<string, unknown> = { metadata: { adk_app: appName }, limit: 200 };
    if (userId !== undefined) query.user_id = userId;
    const found = (await this.client.listSessions(query).toArray()).filter((s) => !s.metadata.adk_deleted && s.user_id);
    const all = found.map((s) =>
      createSession({ id: s.id, appName, userId: s.user_id!, state: {}, events: [], lastUpdateTime: Date.parse(s.updated_at) }),
    );
    if (order === "asc") all.sort((a, b) => a.lastUpdateTime - b.lastUpdateTime || a.id.localeCompare(b.id));
    else if (order === "desc") all.sort((a, b) => b.lastUpdateTime - a.lastUpdateTime || a.id.localeCompare(b.id));
    const total = all.length;
    if (limit === undefined) {
      const sliced = offset ? all.slice(offset) : all;
      return { sessions: sliced, page: 1, limit: total, totalItems: total, totalPages: total === 0 ? 0 : 1 };
    }
    const at = page !== undefined ? (page - 1) * limit : (offset ?? 0);
    return {
      sessions: all.slice(at, at + limit),
      page: page ?? (limit === 0 ? 1 : Math.floor(at / limit) + 1),
      limit,
      totalItems: total,
      totalPages: limit === 0 ? 0 : Math.ceil(total / limit),
    };
  }

  /**
   * Closes the Logbook session and marks it deleted (`metadata.adk_deleted`),
   * so that ADK finds it no more, and deletes its own state. Its messages stay
   * in Logbook, closed, until a purge erases them; its id cannot be used again.
   */
  override async deleteSession({ appName, userId, sessionId }: DeleteSessionRequest): Promise<void> {
    const s = await this.#find(appName, userId, sessionId);
    if (!s) return;
    await this.client.updateSession(sessionId, {
      metadata: { adk_deleted: true },
      ...(s.status === "archived" ? {} : { status: "completed" }),
    });
    const own = await this.#search(sessionStateNs(appName, sessionId), userId);
    const ops: ItemOp[] = own.map((h) => ({ op: "delete", namespace: h.namespace, key: h.key }));
    for (let i = 0; i < ops.length; i += BATCH) await this.client.itemBatch(ops.slice(i, i + BATCH), { userId });
  }

  /**
   * Stores the event, then its state delta, then applies both to `session`
   * as ADK's base service does. A partial (streamed) event is not stored.
   */
  override async appendEvent({ session, event }: AppendEventRequest): Promise<Event> {
    if (event.partial) return event;
    const trimmed = trimTempDeltaState(event);
    await this.#append(session.id, trimmed);
    const delta = trimmed.actions?.stateDelta ?? {};
    if (Object.keys(delta).length > 0) await this.#writeState(session.appName, session.userId, session.id, splitState(delta));
    await super.appendEvent({ session, event: trimmed });
    session.lastUpdateTime = trimmed.timestamp;
    return trimmed;
  }

  async #append(sessionId: string, event: Event): Promise<void> {
    const idempotencyKey = `adk-event-${event.id}`.slice(0, 255);
    try {
      await this.client.appendMessage(sessionId, eventToMessage(event), { idempotencyKey });
    } catch (err) {
      if (!(err instanceof Problem) || !DEGRADABLE.has(err.code)) throw err;
      await this.client.appendMessage(sessionId, { role: "assistant", content: "", provider_item: asJson(event) }, { idempotencyKey });
    }
  }

  /** The Logbook session of the ADK session, or undefined when there is none (another app's, another user's, deleted). */
  async #find(appName: string, userId: string, sessionId: string): Promise<LogbookSession | undefined> {
    try {
      const s = await this.client.getSession(sessionId);
      return s.metadata.adk_app === appName && s.user_id === userId && !s.metadata.adk_deleted ? s : undefined;
    } catch (err) {
      if (isNotFound(err) || (err instanceof Problem && err.code === "validation_failed")) return undefined;
      throw err;
    }
  }

  /** Every event, oldest first, or the newest `recent`. */
  async #events(sessionId: string, recent?: number): Promise<Event[]> {
    if (!recent) return (await this.client.listMessages(sessionId, { limit: 200 }).toArray()).map(messageToEvent);
    const newest = await this.client.listMessages(sessionId, { order: "desc", limit: Math.min(recent, 200) }).toArray(recent);
    return newest.reverse().map(messageToEvent);
  }

  #search(namespace: string[], userId?: string): Promise<ItemHit[]> {
    return searchAll(this.client, namespace, userId);
  }

  async #readState(app: string, userId: string, sessionId: string): Promise<{ app: Json; user: Json; session: Json }> {
    return this.#writeAndReadState(app, userId, sessionId, { app: {}, user: {}, session: {} });
  }

  /**
   * Writes state and reads every key of the three scopes back, in one batch
   * per space (the shared one for app:, the user's for the others): a batch
   * reads before it writes, so what it wrote is laid over what it read.
   */
  async #writeAndReadState(app: string, userId: string, sessionId: string, parts: { app: Json; user: Json; session: Json }) {
    const search = (namespace: string[]): ItemOp => ({ op: "search", namespace_prefix: namespace, limit: PAGE });
    const shared = [search(appStateNs(app)), ...putOps(appStateNs(app), parts.app)];
    const own = [search(userStateNs(app)), search(sessionStateNs(app, sessionId)),
      ...putOps(userStateNs(app), parts.user), ...putOps(sessionStateNs(app, sessionId), parts.session)];
    const [a, u] = await Promise.all([this.#readBatch(shared, undefined), this.#readBatch(own, userId)]);
    return {
      app: { ...unwrapAll(a[0]!), ...parts.app },
      user: { ...unwrapAll(u[0]!), ...parts.user },
      session: { ...unwrapAll(u[1]!), ...parts.session },
    };
  }

  /** Runs a batch whose leading searches read whole namespaces, and answers their items (more pages when a search had more). */
  async #readBatch(ops: ItemOp[], userId: string | undefined): Promise<ItemHit[][]> {
    const first = ops.slice(0, BATCH);
    const results = await this.client.itemBatch(first, { userId });
    for (let i = BATCH; i < ops.length; i += BATCH) await this.client.itemBatch(ops.slice(i, i + BATCH), { userId });
    const out: ItemHit[][] = [];
    for (let i = 0; i < results.length && ops[i]!.op === "search"; i++) {
      const r = results[i]!;
      const hits = [...(r.items ?? [])];
      if (r.has_more) {
        hits.length = 0;
        hits.push(...(await this.#search(ops[i]!.namespace_prefix!, userId)));
      }
      out.push(hits);
    }
    return out;
  }

  async #writeState(app: string, userId: string, sessionId: string, parts: { app: Json; user: Json; session: Json }): Promise<void> {
    const shared = putOps(appStateNs(app), parts.app);
    const own = [...putOps(userStateNs(app), parts.user), ...putOps(sessionStateNs(app, sessionId), parts.session)];
    const write = async (ops: ItemOp[], userId?: string) => {
      for (let i = 0; i < ops.length; i += BATCH) await this.client.itemBatch(ops.slice(i, i + BATCH), { userId });
    };
    await Promise.all([write(shared), write(own, userId)]);
  }
}

// --- memory --------------------------------------------------------------------------

export interface LogbookMemoryServiceOptions {
  client: Client;
  /** The Logbook agent whose archival memory holds an app's memories (default `adk:<appName>`; made on first use). */
  agentId?: (appName: string) => string;
  /** How `searchMemory` ranks: `keyword` (the default, no embedding endpoint needed), `vector` or `hybrid` (the server embeds the query). */
  mode?: "keyword" | "vector" | "hybrid";
  /** The most memories one search answers (default 50, at most 200). */
  limit?: number;
}

interface StoredMemory {
  app: string;
  user_id: string;
  session_id: string;
  event_id: string;
  author?: string;
  timestamp: number;
  content: Json;
}

/** The text a memory is found by: the event's text parts, joined as ADK's in-memory service joins them. */
function memoryText(event: Event): string {
  return (event.content?.parts ?? []).map((p) => p.text).filter((t): t is string => !!t).join(" ");
}

/**
 * ADK's `BaseMemoryService` over Logbook's archival memory: each event of a
 * session that has text becomes a passage of the app's agent, tagged with
 * the user, its event (author, time, content) in the passage's metadata.
 * Adding a session again adds only its events not added yet: an item per
 * event added (the user's `["adk", app, "memory", sessionId]`) remembers
 * which. `searchMemory` is the agent's archival search, within
 * the user's passages.
 */
export class LogbookMemoryService implements BaseMemoryService {
  readonly client: Client;
  readonly #agentId: (appName: string) => string;
  readonly #mode: "keyword" | "vector" | "hybrid";
  readonly #limit: number;
  readonly #agents = new Set<string>();

  constructor(opts: LogbookMemoryServiceOptions) {
    this.client = opts.client;
    this.#agentId = opts.agentId ?? ((app) => `adk:${app}`);
    this.#mode = opts.mode ?? "keyword";
    this.#limit = Math.min(opts.limit ?? 50, 200);
  }

  async addSessionToMemory(session: Session): Promise<void> {
    const agentId = await this.#agent(session.appName);
    const tag = userTag(session.userId);
    const ns = memoryNs(session.appName, session.id);
    const added = new Set((await searchAll(this.client, ns, session.userId)).map((h) => h.key));
    const marks: ItemOp[] = [];
    for (const event of session.events) {
      const text = memoryText(event);
      if (!text || added.has(event.id)) continue;
      const content = event.content as unknown as Json;
      const memory: StoredMemory = {
        app: session.appName,
        user_id: session.userId,
        session_id: session.id,
        event_id: event.id,
        timestamp: event.timestamp,
        // The whole content when it is small, else its text: metadata holds at most 64 KiB.
        content: JSON.stringify(content).length <= 32 << 10 ? content : { role: event.content?.role, parts: [{ text }] },
      };
      if (event.author) memory.author = event.author;
      const p = await this.client.insertPassage(agentId, { content: text, tags: [tag], metadata: { adk: memory } });
      added.add(event.id);
      marks.push({ op: "put", namespace: ns, key: event.id, value: { passage_id: p.id }, index: false });
    }
    for (let i = 0; i < marks.length; i += BATCH) await this.client.itemBatch(marks.slice(i, i + BATCH), { userId: session.userId });
  }

  async searchMemory({ appName, userId, query }: SearchMemoryRequest): Promise<SearchMemoryResponse> {
    if (!query.trim()) return { memories: [] };
    let hits;
    try {
      hits = await this.client.searchArchival(this.#agentId(appName), { q: query, tags: [userTag(userId)], mode: this.#mode, limit: this.#limit });
    } catch (err) {
      if (isNotFound(err)) return { memories: [] }; // nothing was ever added for the app
      throw err;
    }
    const memories: MemoryEntry[] = [];
    for (const h of hits.data) {
      const m = (h.metadata as Json).adk as StoredMemory | undefined;
      if (!m || m.app !== appName || m.user_id !== userId) continue;
      const entry: MemoryEntry = { content: m.content as unknown as MemoryEntry["content"], timestamp: new Date(m.timestamp).toISOString() };
      if (m.author) entry.author = m.author;
      memories.push(entry);
    }
    return { memories };
  }

  /** The app's agent, made the first time it is needed. */
  async #agent(appName: string): Promise<string> {
    const id = this.#agentId(appName);
    if (this.#agents.has(id)) return id;
    try {
      await this.client.getAgent(id);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await this.client.createAgent({ id, name: `ADK app ${appName}`.slice(0, 200), metadata: { adk_app: appName } });
      } catch (e) {
        if (!(e instanceof Problem && e.code === "conflict")) throw e; // made meanwhile
      }
    }
    this.#agents.add(id);
    return id;
  }
}

/** The tag a user's memories carry. */
function userTag(userId: string): string {
  const tag = `user:${userId}`;
  if (tag.length > 128) throw new Error(`LogbookMemoryService: user ids are at most 123 characters (a passage's tag holds "user:" and the id): ${userId.slice(0, 40)}…`);
  return tag;
}
