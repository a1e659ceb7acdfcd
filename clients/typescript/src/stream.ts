// Streams: many messages to one session on one request (POST
// /v1/sessions/{id}/messages as application/x-ndjson, one message a line).
// The server answers each line as it commits, in order, so a turn's messages
// or a bulk load pay for HTTP once, and no message waits for the one before
// it to reach the disk.

import { LogbookError, Problem, retryAfterSeconds } from "./errors.js";
import { backoff, sleep } from "./internal.js";
import type { Message, MessageInput } from "./types.js";

export interface StreamOptions {
  /** Ends the stream: the messages not answered are reported with its reason. */
  signal?: AbortSignal;
  /**
   * The messages sent and not yet answered (default 256): `send` waits past
   * it. Once `results()` is called, results not yet read count too.
   */
  window?: number;
  /** The same, by size as JSON (default 8 MiB); a larger message goes alone. */
  windowBytes?: number;
  /**
   * Names the messages that carry no `idempotency_key`: message n gets
   * `keyPrefix + n`. Default: a random prefix, which makes the writer's own
   * resends safe; pass one derived from your load or turn to make a resend
   * after your process crashed safe too.
   */
  keyPrefix?: string;
  /**
   * How long one request carries new messages (default 20 s) before the
   * writer ends it and goes on with a new one: the server cuts a stream that,
   * after 30 s, arrives slower than 64 KiB/s.
   */
  requestAgeMs?: number;
  /**
   * `"stream"`: one request whose body is a `ReadableStream` (`duplex:
   * "half"`), read while it is sent: Node's fetch does this over HTTP/1.1.
   * `"batch"`: one request per batch of the messages waiting (up to the
   * window), each answered before the next is sent, for runtimes whose fetch
   * cannot stream a request body while it reads the answer (browsers).
   * Default: `"stream"` on Node (and runtimes that say they are Node), else
   * `"batch"`.
   */
  mode?: "stream" | "batch";
}

/** What became of one message of a stream. */
export interface LineResult {
  /** The message's number in the stream, from 1, in the order sent. */
  line: number;
  /** Its `idempotency_key`: its own, or the one the writer gave it. */
  key: string;
  /** The stored message (or the one stored before under `key`). */
  message?: Message;
  /** Why there is no `message`. */
  error?: LineError;
}

/**
 * A message of a stream that was not stored, or whose fate is unknown.
 * `cause` is a `Problem` when the server refused it (its own problem, with
 * `line` the stream's line; or, for a message after the one refused,
 * `stream_stopped`, made by this client: the server stored none of them),
 * and `refused` is true. Otherwise (the connection failed and the retries
 * ran out, the signal aborted) it may be stored: send it again with the same
 * `key`, and the server stores it once.
 */
export class LineError extends LogbookError {
  override name = "LineError";
  readonly line: number;
  readonly key: string;
  override readonly cause: Problem | Error;
  /** From `appendMany`: every message's result, this one's included. */
  results?: LineResult[];

  constructor(line: number, key: string, cause: Problem | Error) {
    // A line's problem names the line in its detail too: say it once.
    super(`line ${line}: ${cause.message.replace(`: line ${line}: `, ": ")}`, { cause });
    this.line = line;
    this.key = key;
    this.cause = cause;
  }

  /** The server refused it: it is not stored. */
  get refused(): boolean {
    return this.cause instanceof Problem;
  }

  /** The problem's code (`validation_failed`, `stream_stopped`, …), or undefined when no answer came. */
  get code(): string | undefined {
    return this.cause instanceof Problem ? this.cause.code : undefined;
  }
}

/** What the writer needs of its client. */
export interface StreamTransport {
  url: string;
  headers: () => Record<string, string>;
  fetch: typeof globalThis.fetch;
  maxRetries: number;
  backoffMs: number;
  maxBackoffMs: number;
  maxRetryAfterMs: number;
}

interface Line {
  n: number;
  key: string;
  raw: Uint8Array; // the JSON and its line break
}

/** One request of a stream. */
interface Request {
  start: number;
  first: number; // the number of the first message it carries
  next: number; // the number of the next message to write on it
  bytes: number;
  ended: boolean; // its body is whole
  dead: boolean; // given up: stop writing
}

interface Outcome {
  progress?: boolean;
  final?: boolean;
  cause?: Error; // why to try again; undefined: it ended whole
  afterMs?: number;
}

const requestMaxBytes = 32 << 20; // well below the server's bound on one (256 MiB by default)
// One answer line is a stored message (at most 8 MiB as the server writes it):
// a server gone wrong cannot make the client hold more than this of one.
const maxAnswerLine = 64 << 20;
const chunkBytes = 256 << 10;

/** Resolves its waiters at the next notify(). */
class Signal {
  #waiters: (() => void)[] = [];
  wait(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
  notify(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }
}

const encoder = new TextEncoder();

function randomPrefix(): string {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("") + ".";
}

function defaultMode(): "stream" | "batch" {
  const p = (globalThis as { process?: { versions?: { node?: unknown } } }).process;
  return typeof p?.versions?.node === "string" ? "stream" : "batch";
}

/** The server's stream_stopped, which it does not send: its answer ends at the refused line. */
function stoppedBy(failed: number): Problem {
  return new Problem(409, {
    type: "urn:logbook:problem:stream_stopped",
    title: "Conflict",
    status: 409,
    code: "stream_stopped",
    detail: `line ${failed} failed: this message and every later one were not appended`,
  });
}

/**
 * Whether a problem, for a whole request or one line, means the server stored
 * nothing that a later try would not: busy (503, 429), the same key being
 * served, or the stream unreadable (`malformed_json`: the lines are JSON this
 * client made, so that is the server's read of the body failing).
 */
function retryable(p: Problem): boolean {
  return p.status === 503 || p.status === 429 || p.code === "idempotency_in_progress" || p.code === "malformed_json";
}

/**
 * Sends messages to one session as they are produced, many in flight on one
 * request, and reports each one's result in order. Made by
 * `Client.openStream`.
 *
 * Every message carries an `idempotency_key` (its own, or `keyPrefix` + its
 * number), so when the connection breaks the writer sends the messages not
 * yet answered again on a new request and the server stores each once. The
 * first message the server refuses stops the stream: the ones after it are
 * not stored (`stream_stopped`), and `send` and `close` throw its
 * `LineError`.
 */
export class StreamWriter {
  readonly #t: StreamTransport;
  readonly #signal: AbortSignal | undefined;
  readonly #window: number;
  readonly #windowBytes: number;
  readonly #prefix: string;
  readonly #requestAgeMs: number;
  readonly #mode: "stream" | "batch";

  #next = 1; // the number the next send gets
  #lines: Line[] = []; // sent or to send, not answered; oldest first
  #base = 1; // the number of #lines[0] (of the next message when none)
  #held = 0; // bytes of #lines
  #carried = 0; // the highest number written on a request so far
  #closed = false;
  #err: LineError | undefined; // the first message not stored: the stream is over
  #keep = false; // results() was called: keep the results for it
  #out: LineResult[] = [];
  #over = false; // no more results will come
  readonly #changed = new Signal();
  #sending: Promise<void> = Promise.resolve();
  readonly #done: Promise<void>;

  constructor(t: StreamTransport, opts: StreamOptions = {}) {
    this.#t = t;
    this.#signal = opts.signal;
    this.#window = Math.max(1, opts.window ?? 256);
    this.#windowBytes = Math.max(1, opts.windowBytes ?? 8 << 20);
    this.#requestAgeMs = opts.requestAgeMs ?? 20_000;
    this.#mode = opts.mode ?? defaultMode();
    const p = opts.keyPrefix ?? randomPrefix();
    if (p.length > 200 || !/^[\x20-\x7e]*$/.test(p)) throw new TypeError("keyPrefix: at most 200 printable ASCII characters");
    this.#prefix = p;
    this.#signal?.addEventListener("abort", () => this.#changed.notify(), { once: true });
    this.#done = this.#run();
  }

  /** The key message n gets when it carries none. */
  keyOf(n: number): string {
    return this.#prefix + n;
  }

  /**
   * Queues `message` as the stream's next one; resolves once it is on its
   * way (waiting while the window is full). After the stream stopped it
   * throws the `LineError` that stopped it (the message is not sent); after
   * `close`, an error. Calls are sent in the order made.
   */
  send(message: MessageInput): Promise<void> {
    const p = this.#sending.then(() => this.#send(message));
    this.#sending = p.catch(() => undefined);
    return p;
  }

  async #send(message: MessageInput): Promise<void> {
    const n = this.#next;
    const key = message.idempotency_key || this.keyOf(n);
    const raw = encoder.encode(JSON.stringify({ ...message, idempotency_key: key }) + "\n");
    while (!this.#err && !this.#closed && !this.#signal?.aborted && this.#full(raw.byteLength)) await this.#changed.wait();
    if (this.#err) throw this.#err;
    if (this.#closed) throw new LogbookError("the stream is closed");
    if (this.#signal?.aborted) throw this.#signal.reason;
    this.#lines.push({ n, key, raw });
    this.#held += raw.byteLength;
    this.#next++;
    this.#changed.notify();
  }

  #full(size: number): boolean {
    return this.#lines.length + this.#out.length >= this.#window || (this.#held > 0 && this.#held + size > this.#windowBytes);
  }

  /**
   * Each message's result in the order sent, from the first answered after
   * this call (call it before the first `send` to see them all), ending once
   * the stream is over. Results not yet read count against the window, so
   * read them alongside the sends (`Promise.all`). A writer whose results
   * nobody asks for keeps none; `send` and `close` still throw the first
   * failure.
   */
  results(): AsyncIterableIterator<LineResult> {
    this.#keep = true;
    return this.#results();
  }

  async *#results(): AsyncIterableIterator<LineResult> {
    try {
      for (;;) {
        while (this.#out.length === 0 && !this.#over) await this.#changed.wait();
        if (this.#out.length === 0) return;
        const batch = this.#out;
        this.#out = [];
        this.#changed.notify(); // room in the window
        yield* batch;
      }
    } finally {
      if (!this.#over) {
        this.#keep = false; // nobody reads on: stop keeping them
        this.#out = [];
        this.#changed.notify();
      }
    }
  }

  /**
   * Ends the stream: waits until every message sent is answered (or given
   * up on) and throws the `LineError` of the first one not stored, if any.
   */
  async close(): Promise<void> {
    await this.#sending;
    this.#closed = true;
    this.#changed.notify();
    await this.#done;
    if (this.#err) throw this.#err;
  }

  // --- the requests --------------------------------------------------------

  /** Answers the oldest message with r. */
  #answered(r: LineResult): void {
    this.#held -= this.#lines[0]!.raw.byteLength;
    this.#lines.shift();
    this.#base++;
    if (r.error && !this.#err) this.#err = r.error;
    if (this.#keep) this.#out.push(r);
    this.#changed.notify();
  }

  /** The oldest message was refused by p; every later one is not stored. */
  #stopAt(p: Problem): void {
    const failed = this.#lines[0]!.n;
    while (this.#lines.length > 0) {
      const l = this.#lines[0]!;
      this.#answered({ line: l.n, key: l.key, error: new LineError(l.n, l.key, l.n === failed ? p : stoppedBy(failed)) });
    }
  }

  #giveUp(cause: Error): void {
    while (this.#lines.length > 0) {
      const l = this.#lines[0]!;
      this.#answered({ line: l.n, key: l.key, error: new LineError(l.n, l.key, cause) });
    }
  }

  async #run(): Promise<void> {
    let failures = 0; // tries in a row that answered nothing
    try {
      for (;;) {
        while (this.#lines.length === 0 && !this.#closed && !this.#signal?.aborted) await this.#changed.wait();
        if (this.#lines.length === 0) return;
        if (this.#signal?.aborted) {
          this.#giveUp(asError(this.#signal.reason));
          return;
        }
        const o = await this.#try();
        if (o.final) return;
        if (!o.cause) {
          failures = 0;
          continue;
        }
        if (o.progress) failures = 0;
        failures++;
        if (failures > this.#t.maxRetries || (o.afterMs ?? 0) > this.#t.maxRetryAfterMs) {
          this.#giveUp(new LogbookError(`no answer after ${failures} tries: ${o.cause.message}`, { cause: o.cause }));
          return;
        }
        try {
          await sleep(Math.max(o.afterMs ?? 0, backoff(failures, this.#t.backoffMs, this.#t.maxBackoffMs)), this.#signal);
        } catch {
          // aborted: the loop reports it
        }
      }
    } catch (err) {
      this.#giveUp(asError(err)); // a fault of this code: nothing is left waiting
    } finally {
      this.#over = true;
      this.#changed.notify();
    }
  }

  /** Whether the request may carry more: every one carries what waits when it starts, and more until its age or size. */
  #open(r: Request): boolean {
    return r.next === r.first || (this.#mode === "stream" && Date.now() - r.start < this.#requestAgeMs && r.bytes < requestMaxBytes);
  }

  /** The next bytes of r's body, waiting for messages; undefined once it is whole. */
  async #nextChunk(r: Request): Promise<Uint8Array | undefined> {
    for (;;) {
      if (r.dead) return undefined;
      const i = r.next - this.#base;
      if (this.#open(r) && i < this.#lines.length) {
        const parts: Uint8Array[] = [];
        let size = 0;
        // In a stream, everything waiting goes as one chunk, up to a bound
        // that keeps the answers flowing meanwhile; a batch is whole.
        const limit = this.#mode === "stream" ? chunkBytes : requestMaxBytes;
        for (let j = i; j < this.#lines.length && size < limit; j++) {
          parts.push(this.#lines[j]!.raw);
          size += this.#lines[j]!.raw.byteLength;
          r.next++;
        }
        r.bytes += size;
        this.#carried = Math.max(this.#carried, r.next - 1);
        return concat(parts, size);
      }
      if (!this.#open(r) || this.#closed || this.#signal?.aborted || this.#mode === "batch") {
        r.ended = true;
        return undefined;
      }
      await this.#changed.wait();
    }
  }

  async #try(): Promise<Outcome> {
    const r: Request = { start: Date.now(), first: this.#base, next: this.#base, bytes: 0, ended: false, dead: false };
    const carried = this.#carried; // messages an earlier request carried, stored or not
    const abort = new AbortController();
    const onAbort = () => abort.abort(this.#signal?.reason);
    this.#signal?.addEventListener("abort", onAbort, { once: true });
    const age = setTimeout(() => this.#changed.notify(), this.#requestAgeMs); // to notice the age while waiting
    let progress = false;
    try {
      let body: BodyInit;
      if (this.#mode === "stream") {
        body = new ReadableStream<Uint8Array>(
          {
            pull: async (ctl) => {
              const chunk = await this.#nextChunk(r);
              try {
                if (chunk) ctl.enqueue(chunk);
                else if (r.dead) ctl.error(new Error("stream request over"));
                else ctl.close();
              } catch {
                // the request was cancelled meanwhile
              }
            },
            cancel: () => {
              r.dead = true;
              this.#changed.notify();
            },
          },
          { highWaterMark: 0 },
        );
      } else {
        const parts: Uint8Array[] = [];
        for (let c = await this.#nextChunk(r); c; c = await this.#nextChunk(r)) parts.push(c);
        body = concat(parts, parts.reduce((n, p) => n + p.byteLength, 0)) as Uint8Array<ArrayBuffer>;
      }
      let res: Response;
      try {
        res = await this.#t.fetch(this.#t.url, {
          method: "POST",
          headers: this.#t.headers(),
          body,
          signal: abort.signal,
          duplex: "half",
        } as RequestInit);
      } catch (err) {
        return { cause: asError(err) };
      }
      if (res.status !== 200) {
        const p = Problem.fromAnswer(res.status, await res.text().catch(() => ""), res.headers);
        if (retryable(p)) {
          const after = retryAfterSeconds(res.headers);
          return { cause: p, ...(after === null ? {} : { afterMs: after * 1000 }) };
        }
        // Refused whole; an earlier request that broke may have stored some of what it carried.
        while (this.#lines.length > 0 && this.#lines[0]!.n <= carried) {
          const l = this.#lines[0]!;
          this.#answered({
            line: l.n,
            key: l.key,
            error: new LineError(l.n, l.key, new LogbookError(`no answer, and the request that sent it again was refused: ${p.message}`, { cause: p })),
          });
        }
        if (this.#lines.length > 0) this.#stopAt(p);
        return { final: true };
      }
      const requestId = res.headers.get("x-request-id");
      const decoder = new TextDecoder();
      let pending = "";
      const reader = res.body!.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          pending += decoder.decode(value, { stream: true });
          if (pending.length > maxAnswerLine && pending.indexOf("\n") < 0) throw new Error("a stream answer line is longer than 64 MiB");
          let nl: number;
          while ((nl = pending.indexOf("\n")) >= 0) {
            const text = pending.slice(0, nl);
            pending = pending.slice(nl + 1);
            if (text.trim() === "") continue;
            const o = this.#answer(r, text, requestId);
            if (o) return { ...o, progress };
            progress = true;
          }
        }
      } catch (err) {
        return { progress, cause: asError(err) };
      }
      if (r.ended && this.#base === r.next) return { progress };
      return { progress, cause: new Error("the answer ended before the messages did") };
    } finally {
      r.dead = true;
      clearTimeout(age);
      this.#signal?.removeEventListener("abort", onAbort);
      abort.abort(); // a request not read to its end is dropped
      this.#changed.notify();
    }
  }

  /** Matches an answer line to the oldest message not answered; an outcome when the request is over. */
  #answer(r: Request, text: string, requestId: string | null): Outcome | undefined {
    let a: Record<string, unknown>;
    try {
      a = JSON.parse(text) as Record<string, unknown>;
    } catch (err) {
      return { cause: asError(err) };
    }
    if (this.#lines.length === 0 || this.#base >= r.next) return { cause: new Error("the stream answered a message it was not sent") };
    const l = this.#lines[0]!;
    if (typeof a.code !== "string" || typeof a.status !== "number") {
      this.#answered({ line: l.n, key: l.key, message: a as unknown as Message });
      return undefined;
    }
    let p = new Problem(a.status, a, requestId);
    if (retryable(p)) return { cause: p };
    // Name the stream's line, not the request's (a retried request starts again at 1).
    const was = `line ${typeof a.line === "number" ? a.line : l.n - r.first + 1}: `;
    const detail = typeof a.detail === "string" && a.detail.startsWith(was) ? `line ${l.n}: ${a.detail.slice(was.length)}` : a.detail;
    p = new Problem(a.status, { ...a, line: l.n, detail }, requestId);
    this.#stopAt(p);
    return { final: true };
  }
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * Sends `messages` on one writer and answers every message's result, in
 * order. Throws the first message not stored (a `LineError` whose `results`
 * holds every message's result: those before it stored, those after it
 * `stream_stopped`).
 */
export async function appendMany(w: StreamWriter, messages: MessageInput[]): Promise<LineResult[]> {
  const results = w.results();
  const sending = (async (): Promise<unknown> => {
    for (const m of messages) {
      try {
        await w.send(m);
      } catch (err) {
        return err;
      }
    }
    return undefined;
  })();
  const closing = sending.then(() => w.close()).catch(() => undefined);
  const out: LineResult[] = [];
  for await (const r of results) out.push(r);
  const sendErr = await sending;
  await closing;
  let err: unknown;
  try {
    await w.close();
  } catch (e) {
    err = e;
  }
  err ??= sendErr;
  for (let n = out.length + 1; n <= messages.length; n++) {
    // never sent: the stream stopped first
    const key = messages[n - 1]!.idempotency_key || w.keyOf(n);
    const cause = err instanceof LineError ? (err.line < n ? stoppedBy(err.line) : err.cause) : asError(err);
    out.push({ line: n, key, error: new LineError(n, key, cause) });
  }
  if (err instanceof LineError) {
    err.results = out;
    throw err;
  }
  if (err !== undefined) throw err;
  return out;
}
