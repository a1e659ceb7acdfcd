import { ConnectionError, JobInterrupted, LogbookError, Problem, retryAfterSeconds } from "./errors.js";
import { EventStream, type FollowOptions } from "./events.js";
import { backoff, canonicalJSON, env, patchApplied, sleep, uuid7Hex } from "./internal.js";
import { appendMany, type LineResult, type StreamOptions, StreamWriter } from "./stream.js";
import type {
  APIKey,
  APIKeyCreate,
  Backup,
  BackupRequest,
  BlockAppend,
  BlockAttach,
  BlockReplace,
  CheckpointQuery,
  EmbeddingConfig,
  ExportItemsQuery,
  File,
  IntegrityQuery,
  IntegrityReport,
  Job,
  ItemsImportResult,
  MessageEmbedding,
  MessageEmbeddingPut,
  NewAPIKey,
  PurgeRequest,
  PurgeResult,
  TenantEmbedding,
  ToolDef,
  ToolResult,
  Usage,
  UsageQuery,
  Agent,
  AgentCreate,
  AgentUpdate,
  Block,
  BlockPut,
  Checkpoint,
  CheckpointCreate,
  CheckpointPut,
  CheckpointRetention,
  CheckpointWrites,
  GetCheckpointQuery,
  ListAllCheckpointsQuery,
  ListCheckpointsQuery,
  SessionRetention,
  Compaction,
  CompactionCreate,
  CompactionCreated,
  ContextQuery,
  ForkCreate,
  Health,
  Identity,
  Item,
  ItemOp,
  ItemPage,
  ItemPut,
  ItemResult,
  ItemSearchRequest,
  ListAgentsQuery,
  ListItemNamespacesQuery,
  ListMessagesQuery,
  ListSessionsQuery,
  Message,
  MessageAppend,
  MessageInput,
  MessageSearchResult,
  NamespacePage,
  Page,
  Passage,
  PassageCreate,
  PassageSearchResult,
  PatchCheckpoint,
  RepairRequest,
  RepairResult,
  Resume,
  Rewind,
  RewindResult,
  SearchMessagesQuery,
  SearchPassagesQuery,
  Session,
  SessionContext,
  SessionCreate,
  SessionUpdate,
} from "./types.js";

export interface ClientOptions {
  /** Default: `$LOGBOOK_URL`, else `http://127.0.0.1:8080`. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer …`. Default: `$LOGBOOK_API_KEY`; none in open mode. */
  apiKey?: string;
  /** Headers sent with every request (an `X-Request-Id`, say). */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
  /** Resends after the first attempt (default 5). */
  maxRetries?: number;
  /** The first backoff (default 200 ms); it doubles up to `maxBackoffMs` (default 5 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** The longest `Retry-After` honoured as given (default 30 s); longer waits are cut to it. */
  maxRetryAfterMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface AppendOptions extends CallOptions {
  /**
   * Names this append (the `Idempotency-Key` header). Left out, the client
   * makes one per call and reuses it on that call's resends. Pass your own
   * (derived from your turn id) to make a resend after your process crashed
   * safe too.
   */
  idempotencyKey?: string;
}

export interface ItemOptions extends CallOptions {
  /** Act on this end user's items instead of the tenant's shared ones (a key bound to a user acts on its own user's whatever this says). */
  userId?: string;
}

export interface RequestOptions extends CallOptions {
  query?: Record<string, unknown>;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is, with `contentType` (a file's bytes, an export's NDJSON), instead of `body`. */
  data?: Uint8Array | ArrayBuffer | Blob | string;
  contentType?: string;
  /** How to read a 2xx answer: by its `Content-Type` (JSON parsed, anything else as text; the default), or as `bytes` (a `Uint8Array`) or a `blob`. */
  answer?: "auto" | "bytes" | "blob";
  headers?: Record<string, string>;
  idempotencyKey?: string;
  /** A resend after a broken connection cannot apply it twice (default: true for GET, PUT, DELETE and keyed requests; every POST is keyed). */
  safe?: boolean;
}

/** A whole answer, for `request()`. */
export interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
  requestId: string | null;
  /** `Idempotent-Replayed: true`: an earlier attempt stored it; nothing was written now. */
  replayed: boolean;
  attempts: number;
}

interface Call<T> extends RequestOptions {
  method: string;
  path: string;
  /** Asked about an error answer that follows an attempt which may have been applied: it may find what that attempt did. */
  recover?: (p: Problem) => Promise<T | undefined>;
}

// Connection failures that happen before a request leaves: always safe to resend.
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

function notSent(err: unknown): boolean {
  let e = err as { code?: unknown; cause?: unknown; errors?: unknown[] } | undefined;
  for (let i = 0; i < 5 && e; i++) {
    if (typeof e.code === "string" && NOT_SENT.has(e.code)) return true;
    if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(notSent)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * `/v1/sessions/${id}` with each value percent-encoded as one path segment,
 * but ":" (which ids may hold) kept: the server routes the path as sent, so
 * "%3A" would reach it as three characters of the id.
 */
function path(strings: TemplateStringsArray, ...values: (string | number)[]): string {
  const seg = (v: string | number) => encodeURIComponent(String(v)).replaceAll("%3A", ":");
  return strings.reduce((out, s, i) => out + s + (i < values.length ? seg(values[i]!) : ""), "");
}

/** Arrays repeat the parameter; objects (`metadata`) go as `name[key]=value`, as the contract's deepObject says. */
function queryString(q: Record<string, unknown> | undefined): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(q ?? {})) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) for (const x of v) sp.append(k, String(x));
    else if (typeof v === "object") {
      for (const [mk, mv] of Object.entries(v)) if (mv !== undefined && mv !== null) sp.append(`${k}[${mk}]`, String(mv));
    } else sp.append(k, String(v));
  }
  const s = sp.toString();
  return s ? `?${s}` : "";
}

/** Whether a request gets an `Idempotency-Key` of its own when it has none: every POST, and a checkpoint's PUT and PATCH. */
function keyed(method: string, p: string): boolean {
  const m = method.toUpperCase();
  return m === "POST" || ((m === "PUT" || m === "PATCH") && /\/checkpoint$/.test(p));
}

/** An item's route: its namespace's labels joined by dots, and its key, each one encoded path segment. */
function itemPath(namespace: string[], key: string): string {
  return `/v1/items/${encodeURIComponent(namespace.join("."))}/${encodeURIComponent(key)}`;
}

/** An idempotency key: random, one per logical write. */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}

/**
 * A lazy walk over a keyset-paginated list: nothing is fetched until it is
 * iterated, then one page at a time, following `next_cursor`.
 *
 * ```ts
 * for await (const m of lb.listMessages(sid, { limit: 200 })) …
 * for await (const page of lb.listSessions({ status: "active" }).pages()) …
 * ```
 */
export class Pager<T> implements AsyncIterable<T> {
  readonly #fetch: (cursor: string | undefined) => Promise<Page<T>>;
  readonly #cursor: string | undefined;

  constructor(fetchPage: (cursor: string | undefined) => Promise<Page<T>>, cursor?: string) {
    this.#fetch = fetchPage;
    this.#cursor = cursor;
  }

  /** The pages, from the first (or the given `cursor`) to the last. */
  async *pages(): AsyncGenerator<Page<T>> {
    let cursor = this.#cursor;
    for (;;) {
      const page = await this.#fetch(cursor);
      yield page;
      if (!page.has_more || !page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** One page; its `next_cursor` can be passed back later as `cursor`. */
  firstPage(): Promise<Page<T>> {
    return this.#fetch(this.#cursor);
  }

  /** Every item (or the first `max`). */
  async toArray(max = Infinity): Promise<T[]> {
    const out: T[] = [];
    if (max <= 0) return out;
    for await (const x of this) {
      out.push(x);
      if (out.length >= max) break;
    }
    return out;
  }
}

/**
 * A client of one Logbook server. Methods answer the contract's objects
 * (typed from openapi.yaml) and throw `Problem` for error answers and
 * `ConnectionError` when no answer came.
 *
 * Retries: a request is resent (at most `maxRetries` times, with capped
 * exponential backoff) when the server answers 503 or 429 (after
 * `Retry-After`), or 409 `idempotency_in_progress`, since those mean nothing
 * was done, and when the connection fails, if a resend cannot write twice:
 * reads, every POST and a checkpoint's PUT and PATCH (each carries an
 * `Idempotency-Key`, the same on its resends: a resend whose first attempt
 * was applied gets that attempt's answer, `Answer.replayed`), and the other
 * idempotent writes. Should the server have lost the first attempt's answer,
 * the resend throws `Problem` `idempotency_applied`: read the resource back.
 * Any other error answer is thrown at once.
 */
export class Client {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof globalThis.fetch;
  readonly #maxRetries: number;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #maxRetryAfterMs: number;

  constructor(opts: ClientOptions = {}) {
    this.baseUrl = (opts.baseUrl ?? env("LOGBOOK_URL") ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
    this.#apiKey = opts.apiKey ?? env("LOGBOOK_API_KEY");
    this.#headers = { ...opts.headers };
    this.#fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.#maxRetries = opts.maxRetries ?? 5;
    this.#backoffMs = opts.backoffMs ?? 200;
    this.#maxBackoffMs = opts.maxBackoffMs ?? 5000;
    this.#maxRetryAfterMs = opts.maxRetryAfterMs ?? 30_000;
  }

  // --- the transport ---------------------------------------------------------

  #headersFor(extra?: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { Accept: "application/json", ...this.#headers, ...extra };
    if (this.#apiKey) h.Authorization = `Bearer ${this.#apiKey}`;
    return h;
  }

  /** Any route: the whole answer. Error answers throw `Problem`. */
  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<Answer<T>> {
    return this.#send<T>({ method, path, ...opts });
  }

  async #send<T>(c: Call<T>): Promise<Answer<T>> {
    const url = this.baseUrl + c.path + queryString(c.query);
    const headers = this.#headersFor(c.headers);
    if (c.data !== undefined) headers["Content-Type"] = c.contentType ?? ((c.data instanceof Blob && c.data.type) || "application/octet-stream");
    else if (c.body !== undefined) headers["Content-Type"] = "application/json";
    // Every POST (and a checkpoint's PUT and PATCH) carries a key, the same on
    // its resends: a resend whose first attempt was applied gets that
    // attempt's answer (`replayed`), never a second write.
    const key = c.idempotencyKey ?? headers["Idempotency-Key"] ?? (keyed(c.method, c.path) ? newIdempotencyKey() : undefined);
    if (key) headers["Idempotency-Key"] = key;
    const body = (c.data !== undefined ? c.data : c.body === undefined ? undefined : JSON.stringify(c.body)) as BodyInit | undefined;
    const safe = c.safe ?? (["GET", "HEAD", "PUT", "DELETE"].includes(c.method) || !!key);
    let ambiguous = false; // an earlier attempt may have been applied
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      let bytes: Uint8Array<ArrayBuffer>;
      try {
        res = await this.#fetch(url, { method: c.method, headers, body, signal: c.signal });
        bytes = new Uint8Array(await res.arrayBuffer());
      } catch (err) {
        if (c.signal?.aborted) throw c.signal.reason ?? err;
        const sent = !notSent(err);
        if ((safe || !sent) && attempt <= this.#maxRetries) {
          ambiguous ||= sent;
          await sleep(backoff(attempt, this.#backoffMs, this.#maxBackoffMs), c.signal);
          continue;
        }
        throw new ConnectionError(`${c.method} ${c.path}: no answer after ${attempt} attempt(s): ${describe(err)}`, {
          cause: err,
          maybeApplied: sent || ambiguous,
          attempts: attempt,
          idempotencyKey: key,
        });
      }
      if ((res.status === 503 || res.status === 429) && attempt <= this.#maxRetries) {
        const after = retryAfterSeconds(res.headers);
        const wait = after === null ? backoff(attempt, this.#backoffMs, this.#maxBackoffMs) : Math.min(after * 1000, this.#maxRetryAfterMs);
        await sleep(wait, c.signal);
        continue;
      }
      if (res.status >= 400) {
        const p = Problem.fromAnswer(res.status, utf8.decode(bytes), res.headers);
        if (p.code === "idempotency_in_progress" && attempt <= this.#maxRetries) {
          // The key's first attempt is still being served; this one did nothing.
          await sleep(backoff(attempt, this.#backoffMs, this.#maxBackoffMs), c.signal);
          continue;
        }
        if (ambiguous && c.recover) {
          const found = await c.recover(p);
          if (found !== undefined) {
            return { status: res.status, headers: res.headers, body: found, requestId: p.requestId, replayed: true, attempts: attempt };
          }
        }
        throw p;
      }
      return {
        status: res.status,
        headers: res.headers,
        body: readAnswer(bytes, res.headers.get("content-type") ?? "", c.answer) as T,
        requestId: res.headers.get("x-request-id"),
        replayed: res.headers.get("idempotent-replayed") === "true",
        attempts: attempt,
      };
    }
  }

  async #call<T>(c: Call<T>): Promise<T> {
    return (await this.#send<T>(c)).body;
  }

  #pager<T>(p: string, query: Record<string, unknown> & { cursor?: string } = {}, signal?: AbortSignal): Pager<T> {
    const { cursor, ...rest } = query;
    return new Pager<T>((c) => this.#call<Page<T>>({ method: "GET", path: p, query: { ...rest, cursor: c }, signal }), cursor);
  }

  // --- health ------------------------------------------------------------------

  /** The process is up (with its version). */
  getHealth(opts: CallOptions = {}): Promise<Health> {
    return this.#call({ method: "GET", path: "/healthz", ...opts });
  }

  /** The server can serve: its database answers (`503` otherwise). */
  getReadiness(opts: CallOptions = {}): Promise<Health> {
    return this.#call({ method: "GET", path: "/readyz", ...opts });
  }

  /** Who the key acts as: its tenant, scope, id and the end user it is bound to (`open_mode` with no key). */
  getWhoAmI(opts: CallOptions = {}): Promise<Identity> {
    return this.#call({ method: "GET", path: "/v1/whoami", ...opts });
  }

  // --- sessions ----------------------------------------------------------------

  /** Creates a session. Without `id`, the client picks one (`ses_` + a UUIDv7), so a resend cannot make two. */
  createSession(body: SessionCreate = {}, opts: CallOptions = {}): Promise<Session> {
    const b = { ...body, id: body.id ?? `ses_${uuid7Hex()}` };
    return this.#call<Session>({
      method: "POST",
      path: "/v1/sessions",
      body: b,
      safe: true,
      signal: opts.signal,
      recover: async (p) => {
        if (p.code !== "conflict") return undefined;
        const s = await this.getSession(b.id, opts);
        return s.agent_id === (b.agent_id ?? null) && s.title === (b.title ?? null) ? s : undefined;
      },
    });
  }

  getSession(id: string, opts: CallOptions = {}): Promise<Session> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${id}`, ...opts });
  }

  /** Status, title, metadata (a merge patch: `null` removes a key). */
  updateSession(id: string, patch: SessionUpdate, opts: CallOptions = {}): Promise<Session> {
    return this.#call({ method: "PATCH", path: path`/v1/sessions/${id}`, body: patch, safe: true, ...opts });
  }

  /** Erases the session for good (a write key that can see it may): messages, checkpoints, pending writes. */
  async purgeSession(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#call({ method: "DELETE", path: path`/v1/sessions/${id}`, query: { purge: true }, ...opts });
  }

  /** The soft close (status `completed`); nothing is deleted. */
  closeSession(id: string, opts: CallOptions = {}): Promise<Session> {
    return this.#call({ method: "DELETE", path: path`/v1/sessions/${id}`, ...opts });
  }

  /** Newest first. `metadata: {key: "value"}` filters on top-level metadata keys. */
  listSessions(query: ListSessionsQuery = {}, opts: CallOptions = {}): Pager<Session> {
    return this.#pager("/v1/sessions", query, opts.signal);
  }

  /** A new session holding the first `at_seq` messages (default all). */
  forkSession(sessionId: string, body: ForkCreate = {}, opts: CallOptions = {}): Promise<Session> {
    const b = { ...body, id: body.id ?? `ses_${uuid7Hex()}` };
    return this.#call<Session>({
      method: "POST",
      path: path`/v1/sessions/${sessionId}/fork`,
      body: b,
      safe: true,
      signal: opts.signal,
      recover: async (p) => {
        if (p.code !== "conflict") return undefined;
        const s = await this.getSession(b.id, opts);
        return s.parent_id === sessionId ? s : undefined;
      },
    });
  }

  /**
   * The session as NDJSON, its last line the SHA-256 of the others: keep the
   * bytes as they are (`importSession` checks them).
   */
  exportSession(id: string, opts: CallOptions = {}): Promise<Uint8Array> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${id}/export`, answer: "bytes", ...opts });
  }

  /** Restores a session from its export's bytes, all or nothing (`asNew`: under new ids). */
  importSession(data: Uint8Array | Blob | string, opts: CallOptions & { asNew?: boolean } = {}): Promise<Session> {
    return this.#call({
      method: "POST",
      path: "/v1/sessions/import",
      query: { as_new: opts.asNew },
      data,
      contentType: "application/x-ndjson",
      signal: opts.signal,
    });
  }

  // --- messages ----------------------------------------------------------------

  /** Appends one message under an `Idempotency-Key` (yours, or one made for this call). */
  appendMessage(sessionId: string, message: MessageAppend, opts: AppendOptions = {}): Promise<Message> {
    return this.#call({
      method: "POST",
      path: path`/v1/sessions/${sessionId}/messages`,
      body: message,
      idempotencyKey: opts.idempotencyKey ?? newIdempotencyKey(),
      signal: opts.signal,
    });
  }

  /**
   * Appends 1–1000 messages, all or nothing, under one `Idempotency-Key`;
   * answers the stored messages in input order. `expectedLastSeq` refuses the
   * batch (`409 stale_seq`) if the session has moved on.
   */
  async appendMessages(
    sessionId: string,
    messages: MessageInput[],
    opts: AppendOptions & { expectedLastSeq?: number } = {},
  ): Promise<Message[]> {
    const r = await this.#call<{ data: Message[] }>({
      method: "POST",
      path: path`/v1/sessions/${sessionId}/messages/batch`,
      body: { messages, expected_last_seq: opts.expectedLastSeq },
      idempotencyKey: opts.idempotencyKey ?? newIdempotencyKey(),
      signal: opts.signal,
    });
    return r.data;
  }

  /**
   * Appends `messages` in order on one stream (NDJSON on one request, each
   * answered as it commits) and answers each one's result, in order. Not all
   * or nothing, unlike `appendMessages`: throws the first message the server
   * refused as a `LineError`, those before it stored and those after it not
   * (`stream_stopped`); its `results` holds every message's result. A broken
   * connection is retried from the first message not answered, each message
   * keyed so that it is stored once. See `openStream`.
   */
  appendMany(sessionId: string, messages: MessageInput[], opts: StreamOptions = {}): Promise<LineResult[]> {
    return appendMany(this.openStream(sessionId, opts), messages);
  }

  /**
   * A writer that sends messages to a session as they come, many in flight
   * on one request, with `results()` in order. See `StreamWriter`.
   */
  openStream(sessionId: string, opts: StreamOptions = {}): StreamWriter {
    return new StreamWriter(
      {
        url: this.baseUrl + path`/v1/sessions/${sessionId}/messages`,
        headers: () => this.#headersFor({ Accept: "application/x-ndjson", "Content-Type": "application/x-ndjson" }),
        fetch: this.#fetch,
        maxRetries: this.#maxRetries,
        backoffMs: this.#backoffMs,
        maxBackoffMs: this.#maxBackoffMs,
        maxRetryAfterMs: this.#maxRetryAfterMs,
      },
      opts,
    );
  }

  getMessage(sessionId: string, messageId: string, opts: CallOptions = {}): Promise<Message> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${sessionId}/messages/${messageId}`, ...opts });
  }

  /** The message of the session's history whose `client_id` is this (`404 not_found` when none). */
  getMessageByClientId(sessionId: string, clientId: string, opts: CallOptions = {}): Promise<Message> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${sessionId}/messages-by-client-id/${clientId}`, ...opts });
  }

  /** A message's embedding and its state (`pending`, `ready`, `failed`). */
  getMessageEmbedding(sessionId: string, messageId: string, opts: CallOptions = {}): Promise<MessageEmbedding> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${sessionId}/messages/${messageId}/embedding`, ...opts });
  }

  /** Stores your embedding of a message, ready for search by meaning at once. */
  putMessageEmbedding(sessionId: string, messageId: string, body: MessageEmbeddingPut, opts: CallOptions = {}): Promise<MessageEmbedding> {
    return this.#call({ method: "PUT", path: path`/v1/sessions/${sessionId}/messages/${messageId}/embedding`, body, ...opts });
  }

  /** Oldest first (`order: "desc"` for newest first); `after_seq` to tail. */
  listMessages(sessionId: string, query: ListMessagesQuery = {}, opts: CallOptions = {}): Pager<Message> {
    return this.#pager(path`/v1/sessions/${sessionId}/messages`, query, opts.signal);
  }

  /**
   * Drops the messages after `to_seq` (0 clears the session), optionally
   * appending a new tail in the same transaction. With `expected_last_seq`
   * it is fenced (`409 stale_seq`); resent after a broken connection, it is
   * answered with its first attempt's answer (its `Idempotency-Key`).
   */
  rewind(sessionId: string, body: Rewind, opts: CallOptions & { idempotencyKey?: string } = {}): Promise<RewindResult> {
    return this.#call({
      method: "POST",
      path: path`/v1/sessions/${sessionId}/rewind`,
      body,
      ...opts,
    });
  }

  /** What the next LLM call needs: the latest compaction's summary and the messages after it (`max_tokens`, `include: "blocks"`). */
  getContext(sessionId: string, query: ContextQuery = {}, opts: CallOptions = {}): Promise<SessionContext> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${sessionId}/context`, query, ...opts });
  }

  /**
   * Resent after a broken connection under its `Idempotency-Key`: stored once.
   * With `messages`, they are appended after the compaction in the same write.
   */
  createCompaction(sessionId: string, body: CompactionCreate, opts: CallOptions & { idempotencyKey?: string } = {}): Promise<CompactionCreated> {
    return this.#call({ method: "POST", path: path`/v1/sessions/${sessionId}/compactions`, body, ...opts });
  }

  listCompactions(sessionId: string, query: { limit?: number; cursor?: string } = {}, opts: CallOptions = {}): Pager<Compaction> {
    return this.#pager(path`/v1/sessions/${sessionId}/compactions`, query, opts.signal);
  }

  // --- search ------------------------------------------------------------------

  /** The tenant's messages, best first (`q` is searched as words, never as syntax). */
  searchMessages(query: SearchMessagesQuery, opts: CallOptions = {}): Promise<MessageSearchResult> {
    return this.#call({ method: "GET", path: "/v1/messages/search", query, ...opts });
  }

  /** The messages of an agent's sessions and those carrying its `agent_id`. */
  searchAgentMessages(agentId: string, query: SearchMessagesQuery, opts: CallOptions = {}): Promise<MessageSearchResult> {
    return this.#call({ method: "GET", path: path`/v1/agents/${agentId}/messages/search`, query, ...opts });
  }

  /**
   * An agent's passages, best first: by words (`q`), by meaning
   * (`query_embedding`) or both, as `mode` says. A query with an embedding
   * is posted, where a vector of any length fits; one without goes in the URL.
   */
  searchArchival(agentId: string, query: SearchPassagesQuery, opts: CallOptions = {}): Promise<PassageSearchResult> {
    const p = path`/v1/agents/${agentId}/archival/search`;
    if (query.query_embedding?.length) return this.#call({ method: "POST", path: p, body: query, ...opts });
    return this.#call({ method: "GET", path: p, query, ...opts });
  }

  // --- checkpoints, resume, repair -------------------------------------------

  /**
   * Writes iteration `iteration`'s state, fenced by `expected_iteration`
   * (`409 stale_iteration` with `latestIteration` when another worker moved
   * on). A resend that finds its own first attempt stored answers that.
   */
  putCheckpoint(sessionId: string, body: CheckpointPut, opts: CallOptions = {}): Promise<Checkpoint> {
    return this.#call<Checkpoint>({
      method: "PUT",
      path: path`/v1/sessions/${sessionId}/checkpoint`,
      body,
      signal: opts.signal,
      recover: (p) =>
        this.#ownCheckpoint(sessionId, body.iteration, p, (c) => canonicalJSON(c.state) === canonicalJSON(body.state), opts),
    });
  }

  /** As `putCheckpoint`, with `state_patch` (an RFC 7396 merge patch) applied to the latest state. */
  patchCheckpoint(sessionId: string, body: PatchCheckpoint, opts: CallOptions = {}): Promise<Checkpoint> {
    return this.#call<Checkpoint>({
      method: "PATCH",
      path: path`/v1/sessions/${sessionId}/checkpoint`,
      body,
      safe: true,
      signal: opts.signal,
      recover: (p) => this.#ownCheckpoint(sessionId, body.iteration, p, (c) => patchApplied(c.state, body.state_patch), opts),
    });
  }

  async #ownCheckpoint(
    sessionId: string,
    iteration: number,
    p: Problem,
    same: (c: Checkpoint) => boolean,
    opts: CallOptions,
  ): Promise<Checkpoint | undefined> {
    if (p.code !== "idempotency_applied" && (p.code !== "stale_iteration" || p.latestIteration !== iteration)) return undefined;
    const c = await this.getCheckpoint(sessionId, iteration, {}, opts);
    return same(c) ? c : undefined;
  }

  /**
   * Iteration `iteration`'s checkpoint (of `namespace`; `parent_writes` adds
   * its parent's pending writes), or without one the latest
   * (`404 not_found` when there is none).
   */
  getCheckpoint(sessionId: string, iteration?: number, query: CheckpointQuery = {}, opts: CallOptions = {}): Promise<Checkpoint> {
    const p =
      iteration === undefined ? path`/v1/sessions/${sessionId}/checkpoint` : path`/v1/sessions/${sessionId}/checkpoints/${iteration}`;
    return this.#call({ method: "GET", path: p, query, ...opts });
  }

  /**
   * The latest checkpoint of a namespace, or the one `client_id` names, with
   * its pending writes (`404 not_found` when there is none).
   */
  findCheckpoint(sessionId: string, query: GetCheckpointQuery = {}, opts: CallOptions = {}): Promise<Checkpoint> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${sessionId}/checkpoint`, query, ...opts });
  }

  /** Newest first, every namespace unless `namespace` is given; filters by `metadata`, `before`. */
  listCheckpoints(sessionId: string, query: ListCheckpointsQuery = {}, opts: CallOptions = {}): Pager<Checkpoint> {
    return this.#pager(path`/v1/sessions/${sessionId}/checkpoints`, query, opts.signal);
  }

  /** Checkpoints across the tenant's sessions, newest first. */
  listAllCheckpoints(query: ListAllCheckpointsQuery = {}, opts: CallOptions = {}): Pager<Checkpoint> {
    return this.#pager("/v1/checkpoints", query, opts.signal);
  }

  /**
   * A graph runtime's write: the next checkpoint of a namespace, named by
   * `client_id` and hung under `parent_id`, its state whole or as a merge patch
   * of the parent's. The answer leaves the state out. A resend is safe: the
   * same client id with the same content answers the stored checkpoint.
   */
  createCheckpoint(sessionId: string, body: CheckpointCreate, opts: CallOptions = {}): Promise<Checkpoint> {
    return this.#call({
      method: "POST",
      path: path`/v1/sessions/${sessionId}/checkpoints`,
      body,
      safe: body.client_id !== undefined && body.expected_iteration === undefined,
      ...opts,
    });
  }

  /** Records one task's pending writes against a checkpoint (which need not exist yet). Safe to resend: the first write stored wins. */
  async putCheckpointWrites(sessionId: string, body: CheckpointWrites, opts: CallOptions = {}): Promise<void> {
    await this.#call({ method: "POST", path: path`/v1/sessions/${sessionId}/checkpoint-writes`, body, safe: true, ...opts });
  }

  /** The session's checkpoint retention policy (its own, or the server's default). */
  getCheckpointRetention(sessionId: string, opts: CallOptions = {}): Promise<SessionRetention> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${sessionId}/checkpoint-retention`, ...opts });
  }

  /** Sets the session's own retention policy; `null` returns it to the server's default. */
  setCheckpointRetention(sessionId: string, policy: CheckpointRetention | null, opts: CallOptions = {}): Promise<SessionRetention> {
    const p = path`/v1/sessions/${sessionId}/checkpoint-retention`;
    return this.#call(policy === null ? { method: "DELETE", path: p, ...opts } : { method: "PUT", path: p, body: policy, ...opts });
  }

  /** The hand-over: session, latest checkpoint, messages since, pending tool calls, validation. */
  resume(sessionId: string, opts: CallOptions = {}): Promise<Resume> {
    return this.#call({ method: "GET", path: path`/v1/sessions/${sessionId}/resume`, ...opts });
  }

  /** Applies resume's automatic repairs; a resend (fenced or not) gets its first attempt's answer. */
  repair(sessionId: string, body: RepairRequest = {}, opts: CallOptions = {}): Promise<RepairResult> {
    return this.#call({
      method: "POST",
      path: path`/v1/sessions/${sessionId}/repair`,
      body,
      ...opts,
    });
  }

  // --- the live feed -------------------------------------------------------------

  /**
   * Follows one session's events as they commit (Server-Sent Events).
   * `afterSeq: 0` starts from its first event, `afterSeq: n` after message
   * n, `after`/`lastEventId` after an event; with none of them, the feed
   * starts now.
   */
  events(sessionId: string, opts: FollowOptions & { afterSeq?: number; after?: string } = {}): EventStream {
    const { afterSeq, after, ...rest } = opts;
    return this.#follow(path`/v1/sessions/${sessionId}/events`, { after, after_seq: afterSeq, type: rest.types }, rest);
  }

  /** Follows every event of the tenant (optionally of one session). */
  tenantEvents(opts: FollowOptions & { sessionId?: string; after?: string } = {}): EventStream {
    const { sessionId, after, ...rest } = opts;
    return this.#follow("/v1/events", { after, session_id: sessionId, type: rest.types }, rest);
  }

  #follow(p: string, query: Record<string, unknown>, opts: FollowOptions): EventStream {
    return new EventStream(async (lastEventId, signal) => {
      const q = { ...query };
      const headers = this.#headersFor({ Accept: "text/event-stream" });
      if (lastEventId !== undefined) {
        headers["Last-Event-ID"] = lastEventId; // it alone says where to resume
        delete q.after;
        delete q.after_seq;
      }
      const res = await this.#fetch(this.baseUrl + p + queryString(q), { headers, signal });
      if (!res.ok) throw Problem.fromAnswer(res.status, await res.text(), res.headers);
      return res;
    }, opts);
  }

  // --- agents and memory -----------------------------------------------------------

  /** Without `id`, the client picks one (`agt_` + a UUIDv7), so a resend cannot make two. */
  createAgent(body: AgentCreate, opts: CallOptions = {}): Promise<Agent> {
    const b = { ...body, id: body.id ?? `agt_${uuid7Hex()}` };
    return this.#call<Agent>({
      method: "POST",
      path: "/v1/agents",
      body: b,
      safe: true,
      signal: opts.signal,
      recover: async (p) => {
        if (p.code !== "conflict") return undefined;
        const a = await this.getAgent(b.id, opts);
        return a.name === b.name ? a : undefined;
      },
    });
  }

  getAgent(id: string, opts: CallOptions = {}): Promise<Agent> {
    return this.#call({ method: "GET", path: path`/v1/agents/${id}`, ...opts });
  }

  updateAgent(id: string, patch: AgentUpdate, opts: CallOptions = {}): Promise<Agent> {
    return this.#call({ method: "PATCH", path: path`/v1/agents/${id}`, body: patch, safe: true, ...opts });
  }

  async deleteAgent(id: string, opts: CallOptions = {}): Promise<void> {
    await this.#call({ method: "DELETE", path: path`/v1/agents/${id}`, ...opts });
  }

  listAgents(query: ListAgentsQuery = {}, opts: CallOptions = {}): Pager<Agent> {
    return this.#pager("/v1/agents", query, opts.signal);
  }

  /**
   * The agent, its memory and its sessions as NDJSON, its last line the
   * SHA-256 of the others: keep the bytes as they are (`importAgent` checks them).
   */
  exportAgent(id: string, opts: CallOptions = {}): Promise<Uint8Array> {
    return this.#call({ method: "GET", path: path`/v1/agents/${id}/export`, answer: "bytes", ...opts });
  }

  /** Restores an agent from its export's bytes, all or nothing (`asNew`: the agent and its sessions under new ids). */
  importAgent(data: Uint8Array | Blob | string, opts: CallOptions & { asNew?: boolean } = {}): Promise<Agent> {
    return this.#call({
      method: "POST",
      path: "/v1/agents/import",
      query: { as_new: opts.asNew },
      data,
      contentType: "application/x-ndjson",
      signal: opts.signal,
    });
  }

  async listBlocks(agentId: string, opts: CallOptions = {}): Promise<Block[]> {
    return (await this.#call<{ data: Block[] }>({ method: "GET", path: path`/v1/agents/${agentId}/blocks`, ...opts })).data;
  }

  getBlock(agentId: string, label: string, opts: CallOptions = {}): Promise<Block> {
    return this.#call({ method: "GET", path: path`/v1/agents/${agentId}/blocks/${label}`, ...opts });
  }

  /** Replaces the block; with `ifMatch` (its last `version`), only if nobody changed it since (`412 precondition_failed`). */
  putBlock(agentId: string, label: string, body: BlockPut, opts: CallOptions & { ifMatch?: number | string } = {}): Promise<Block> {
    const headers = opts.ifMatch === undefined ? undefined : { "If-Match": `"${opts.ifMatch}"` };
    return this.#call({
      method: "PUT",
      path: path`/v1/agents/${agentId}/blocks/${label}`,
      body,
      headers,
      safe: opts.ifMatch === undefined, // a resend of a fenced write that landed would fail its own fence
      signal: opts.signal,
    });
  }

  /** Deletes a block of the agent's own (or its attachment of another's). */
  async deleteBlock(agentId: string, label: string, opts: CallOptions = {}): Promise<void> {
    await this.#call({ method: "DELETE", path: path`/v1/agents/${agentId}/blocks/${label}`, ...opts });
  }

  /**
   * Shares agent `body.agent_id`'s block `body.label` with `agentId`, under
   * `body.as` (the same label by default): one block, one version and history,
   * read and written through either agent.
   */
  attachBlock(agentId: string, body: BlockAttach, opts: CallOptions = {}): Promise<Block> {
    return this.#call<Block>({
      method: "POST",
      path: path`/v1/agents/${agentId}/blocks/attach`,
      body,
      signal: opts.signal,
      recover: async (p) => {
        // A resend after a lost answer finds the label taken by this very attachment.
        if (p.code !== "block_exists") return undefined;
        const b = await this.getBlock(agentId, body.as ?? body.label, opts);
        return b.owner_agent_id === body.agent_id && b.owner_label === body.label ? b : undefined;
      },
    });
  }

  /** Removes the attachment `label` of `agentId`; the owner's block stays. */
  async detachBlock(agentId: string, label: string, opts: CallOptions = {}): Promise<void> {
    await this.#call({
      method: "POST",
      path: path`/v1/agents/${agentId}/blocks/${label}/detach`,
      signal: opts.signal,
      recover: async (p) => (p.code === "not_found" ? null : undefined), // the first attempt detached it
    });
  }

  /** Adds `content` to the block on a new line (creating the block if missing), atomically. */
  appendBlock(agentId: string, label: string, body: BlockAppend, opts: CallOptions = {}): Promise<Block> {
    return this.#call({ method: "POST", path: path`/v1/agents/${agentId}/blocks/${label}/append`, body, ...opts });
  }

  /** Replaces every occurrence of `old` with `new` (`422 old_not_found` when there is none). */
  replaceBlock(agentId: string, label: string, body: BlockReplace, opts: CallOptions = {}): Promise<Block> {
    return this.#call({ method: "POST", path: path`/v1/agents/${agentId}/blocks/${label}/replace`, body, ...opts });
  }

  /** Every version of the block, newest first. */
  getBlockHistory(agentId: string, label: string, query: { limit?: number; cursor?: string } = {}, opts: CallOptions = {}): Pager<Block> {
    return this.#pager(path`/v1/agents/${agentId}/blocks/${label}/history`, query, opts.signal);
  }

  /** The agent's passages, newest first. */
  listPassages(agentId: string, query: { limit?: number; cursor?: string } = {}, opts: CallOptions = {}): Pager<Passage> {
    return this.#pager(path`/v1/agents/${agentId}/archival`, query, opts.signal);
  }

  getPassage(agentId: string, passageId: string, opts: CallOptions = {}): Promise<Passage> {
    return this.#call({ method: "GET", path: path`/v1/agents/${agentId}/archival/${passageId}`, ...opts });
  }

  async deletePassage(agentId: string, passageId: string, opts: CallOptions = {}): Promise<void> {
    await this.#call({ method: "DELETE", path: path`/v1/agents/${agentId}/archival/${passageId}`, ...opts });
  }

  /** The memory tools (Letta's), with their JSON Schemas, to give a model as they are. */
  async listTools(opts: CallOptions = {}): Promise<ToolDef[]> {
    return (await this.#call<{ data: ToolDef[] }>({ method: "GET", path: "/v1/tools", ...opts })).data;
  }

  /**
   * Runs a memory tool on the agent's memory with the model's arguments (its
   * JSON text, or the parsed object), and answers what the model reads back:
   * a tool that failed in a way the model can fix is `is_error`, not a throw.
   */
  runTool(agentId: string, toolName: string, args: string | Record<string, unknown>, opts: CallOptions = {}): Promise<ToolResult> {
    return this.#call({
      method: "POST",
      path: path`/v1/agents/${agentId}/tools/${toolName}`,
      body: typeof args === "string" ? JSON.parse(args) : args,
      ...opts,
    });
  }

  // --- files ---------------------------------------------------------------------

  /**
   * Stores bytes for `image` and `file` parts (their `file_id`); the media
   * type is `mediaType`, else the `Blob`'s. The same bytes and media type are
   * the same file, so a resend is safe.
   */
  uploadFile(data: Uint8Array | ArrayBuffer | Blob | string, mediaType?: string, opts: CallOptions = {}): Promise<File> {
    return this.#call({ method: "POST", path: "/v1/files", data, contentType: mediaType, ...opts });
  }

  /** A file's bytes, as a `Blob` whose `type` is its media type. */
  downloadFile(fileId: string, opts: CallOptions = {}): Promise<Blob> {
    return this.#call({ method: "GET", path: path`/v1/files/${fileId}`, answer: "blob", ...opts });
  }

  // --- the item store --------------------------------------------------------------
  //
  // JSON objects under a namespace (a list of labels) and a key, found by key,
  // by filters on their values and by meaning. Each call acts on one space: the
  // tenant's shared items, or `userId`'s.

  /** One item; a missing (or expired) one throws `Problem` `not_found`. `refreshTtl` moves its expiry ahead (a write). */
  getItem(namespace: string[], key: string, opts: ItemOptions & { refreshTtl?: boolean } = {}): Promise<Item> {
    return this.#call({
      method: "GET",
      path: itemPath(namespace, key),
      query: { user_id: opts.userId, refresh_ttl: opts.refreshTtl ? true : undefined },
      signal: opts.signal,
    });
  }

  /**
   * Creates or replaces an item's whole value. `ifVersion` writes only at that
   * version, `ifAbsent` only a new item (`412 precondition_failed`
   * otherwise); a fenced put is not resent after a broken connection.
   */
  putItem(namespace: string[], key: string, body: ItemPut, opts: ItemOptions & { ifVersion?: number; ifAbsent?: boolean } = {}): Promise<Item> {
    const headers: Record<string, string> = {};
    if (opts.ifVersion !== undefined) headers["If-Match"] = `"${opts.ifVersion}"`;
    if (opts.ifAbsent) headers["If-None-Match"] = "*";
    return this.#call({
      method: "PUT",
      path: itemPath(namespace, key),
      query: { user_id: opts.userId },
      body,
      headers,
      safe: Object.keys(headers).length === 0,
      signal: opts.signal,
    });
  }

  /** Deletes an item; a missing one throws `Problem` `not_found`. */
  async deleteItem(namespace: string[], key: string, opts: ItemOptions & { ifVersion?: number } = {}): Promise<void> {
    await this.#call({
      method: "DELETE",
      path: itemPath(namespace, key),
      query: { user_id: opts.userId },
      headers: opts.ifVersion === undefined ? undefined : { "If-Match": `"${opts.ifVersion}"` },
      safe: false, // a resend after the first landed would answer 404
      signal: opts.signal,
    });
  }

  /** One page of the items under `namespace_prefix` that pass `filter`, ranked by meaning when `query` is given. */
  searchItems(body: ItemSearchRequest = {}, opts: ItemOptions = {}): Promise<ItemPage> {
    return this.#call({
      method: "POST",
      path: "/v1/items/search",
      query: { user_id: opts.userId },
      body,
      signal: opts.signal,
    });
  }

  /** The namespaces of a space's items (`prefix` and `suffix` are labels joined by dots, `*` for any label). */
  listItemNamespaces(query: ListItemNamespacesQuery = {}, opts: CallOptions = {}): Promise<NamespacePage> {
    return this.#call({ method: "GET", path: "/v1/items/namespaces", query, signal: opts.signal });
  }

  /**
   * Up to 100 operations in one request, their results in order: the reads
   * first, on the items as they were, then the writes in one transaction,
   * all or nothing. Resent after a broken connection under its
   * `Idempotency-Key`: a batch that wrote is answered again, not applied twice.
   */
  async itemBatch(ops: ItemOp[], opts: ItemOptions = {}): Promise<ItemResult[]> {
    const r = await this.#call<{ results: ItemResult[] }>({
      method: "POST",
      path: "/v1/items/batch",
      query: { user_id: opts.userId },
      body: { ops },
      signal: opts.signal,
    });
    return r.results;
  }

  /**
   * A space's items as NDJSON (`namespace_prefix`, `user_id`, or
   * `all_users` for every space), for `importItems`.
   */
  exportItems(query: ExportItemsQuery = {}, opts: CallOptions = {}): Promise<Uint8Array> {
    return this.#call({ method: "GET", path: "/v1/items/export", query, answer: "bytes", ...opts });
  }

  /** Stores the items of an export, all or nothing (`replace`: over the items of the same keys, else `409 conflict`). */
  importItems(data: Uint8Array | Blob | string, opts: CallOptions & { replace?: boolean } = {}): Promise<ItemsImportResult> {
    return this.#call({
      method: "POST",
      path: "/v1/items/import",
      query: { replace: opts.replace },
      data,
      contentType: "application/x-ndjson",
      signal: opts.signal,
    });
  }

  /**
   * Writes a passage to the agent's archival memory (with your `embedding`,
   * or embedded by the server when the agent names an endpoint). Resent after
   * a broken connection under its `Idempotency-Key`: stored once.
   */
  insertPassage(agentId: string, body: PassageCreate, opts: CallOptions = {}): Promise<Passage> {
    return this.#call({ method: "POST", path: path`/v1/agents/${agentId}/archival`, body, ...opts });
  }

  // --- usage and administration (admin scope) ---------------------------------------

  /** The tenant's tokens and cost over UTC days, grouped by `group_by` (`day`, `agent`, `model`, `session`). */
  getUsage(query: UsageQuery = {}, opts: CallOptions = {}): Promise<Usage> {
    return this.#call({ method: "GET", path: "/v1/usage", query, ...opts });
  }

  /**
   * A new key of the caller's tenant; its secret (`key`) is answered this
   * once. With `user_id` it sees only that end user's sessions. A resend
   * after a lost answer makes no second key: it throws `Problem`
   * `idempotency_applied` (list the keys and revoke the one made).
   */
  createAPIKey(body: APIKeyCreate, opts: CallOptions = {}): Promise<NewAPIKey> {
    return this.#call({ method: "POST", path: "/v1/admin/keys", body, ...opts });
  }

  /** The tenant's keys (never their secrets). */
  listAPIKeys(query: { limit?: number; cursor?: string } = {}, opts: CallOptions = {}): Pager<APIKey> {
    return this.#pager("/v1/admin/keys", query, opts.signal);
  }

  async revokeAPIKey(keyId: string, opts: CallOptions = {}): Promise<void> {
    await this.#call({ method: "DELETE", path: path`/v1/admin/keys/${keyId}`, ...opts });
  }

  // A purge, an integrity check and a backup run on the server as jobs: one
  // that outlasts the server's wait (about 20 s) is answered 202 with the job,
  // which these methods poll until it ends, so that a caller sees the usual
  // answer or the usual Problem either way. `signal` ends the wait, not the job.

  /** Erases, for good, the sessions in `status` not updated since `older_than` (or, with `dry_run`, counts them). Waits out a long purge's job. */
  purgeSessions(body: PurgeRequest, opts: CallOptions = {}): Promise<PurgeResult> {
    return this.#awaitJob({ method: "POST", path: "/v1/admin/purge", body, ...opts });
  }

  /** Checks the database file and the tenant's counters and search index (`repair: "counters"` repairs drifted counters first). Waits out a long check's job. */
  checkIntegrity(query: IntegrityQuery = {}, opts: CallOptions = {}): Promise<IntegrityReport> {
    return this.#awaitJob({ method: "GET", path: "/v1/admin/integrity", query, ...opts });
  }

  /** A job (a purge, an integrity check or a backup that outlasted its route's wait): its `state` and `progress`, then its `result` or `error`. */
  getJob(id: string, opts: CallOptions = {}): Promise<Job> {
    return this.#call({ method: "GET", path: path`/v1/admin/jobs/${id}`, ...opts });
  }

  /** A route's usual answer, or, when it answers 202, its job's once the job ends. */
  async #awaitJob<T>(c: Call<T>): Promise<T> {
    const a = await this.#send<T | Job>(c);
    if (a.status !== 202) return a.body as T;
    let job = a.body as Job;
    // A job asked for with `Prefer: respond-async` may end at once: look soon, then every second.
    for (let wait = JOB_POLL_MAX_MS / 4; job.state === "running"; wait = Math.min(2 * wait, JOB_POLL_MAX_MS)) {
      await sleep(wait, c.signal);
      job = await this.getJob(job.id, { signal: c.signal });
    }
    return jobResult<T>(job);
  }

  getTenantEmbedding(opts: CallOptions = {}): Promise<TenantEmbedding> {
    return this.#call({ method: "GET", path: "/v1/admin/embedding", ...opts });
  }

  /** Sets the embedding endpoint of the tenant's agents that name none (under one of the server's `--embedding-allowed-urls`). */
  putTenantEmbedding(body: EmbeddingConfig, opts: CallOptions = {}): Promise<TenantEmbedding> {
    return this.#call({ method: "PUT", path: "/v1/admin/embedding", body, ...opts });
  }

  async deleteTenantEmbedding(opts: CallOptions = {}): Promise<void> {
    await this.#call({ method: "DELETE", path: "/v1/admin/embedding", ...opts });
  }

  /** A consistent copy of the whole database in the server's backup directory (an admin key of the tenant `default` only). Waits out a long backup's job. */
  backupDatabase(body: BackupRequest = {}, opts: CallOptions = {}): Promise<Backup> {
    return this.#awaitJob({ method: "POST", path: "/v1/admin/backup", body, ...opts });
  }
}

const utf8 = new TextDecoder();

/** The longest wait between two reads of a running job. */
const JOB_POLL_MAX_MS = 1000;

/** What an ended job answers: its result, or the Problem its route would have thrown. */
function jobResult<T>(job: Job): T {
  if (job.state === "succeeded") return job.result as T;
  if (job.state === "failed" && job.error) {
    const e = job.error;
    throw new Problem(e.status, { type: `urn:logbook:problem:${e.code}`, status: e.status, code: e.code, detail: e.detail });
  }
  if (job.state === "interrupted") throw new JobInterrupted(job.id, job.kind);
  throw new LogbookError(`job ${job.id} is ${job.state}`);
}

/** A 2xx answer's body as `request()`'s `answer` asks. */
function readAnswer(bytes: Uint8Array<ArrayBuffer>, contentType: string, answer: RequestOptions["answer"]): unknown {
  if (answer === "bytes") return bytes;
  if (answer === "blob") return new Blob([bytes], { type: contentType });
  if (bytes.length === 0) return undefined;
  const text = utf8.decode(bytes);
  return /\bjson\b/i.test(contentType) ? JSON.parse(text) : text;
}

function describe(err: unknown): string {
  const parts: string[] = [];
  let e = err as { message?: unknown; code?: unknown; cause?: unknown } | undefined;
  for (let i = 0; i < 4 && e; i++) {
    const m = typeof e.message === "string" ? e.message : String(e);
    parts.push(typeof e.code === "string" ? `${m} (${e.code})` : m);
    e = e.cause as typeof e;
  }
  return parts.join(": ");
}
