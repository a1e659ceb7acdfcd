import { ConnectionError, Problem } from "./errors.js";
import { backoff, sleep } from "./internal.js";
import { parseEventStream } from "./sse.js";
import type { EventType, LogbookEvent } from "./types.js";

export interface FollowOptions {
  /** Abort to stop following: the iteration then ends (no error). */
  signal?: AbortSignal;
  /** Resume after this event (its opaque id, as `Last-Event-ID`); wins over `after`/`afterSeq`. */
  lastEventId?: string;
  /** Only events of these types. */
  types?: EventType[];
  /** Reconnect after a dropped connection, a 503 or a 429 (default true); false ends the iteration, or throws. */
  reconnect?: boolean;
  /** The longest wait between reconnections (default 30 s); the server's `retry:` (1 s) is the shortest. */
  maxReconnectDelayMs?: number;
}

/** Opens one connection of the feed: from lastEventId when set, else from the feed's first position. */
export type Connect = (lastEventId: string | undefined, signal: AbortSignal) => Promise<Response>;

/**
 * A live feed: an async iterable of the events as they commit. It follows
 * the connection's `id:`s and, when the connection drops (or the server
 * restarts), reconnects with `Last-Event-ID`, so it misses nothing and
 * repeats nothing. Heartbeat comments are skipped. It ends when `signal`
 * aborts or the loop breaks; it throws a `Problem` for an error answer other
 * than 503 and 429 (a missing session: `not_found`).
 *
 * Iterating again continues after `lastEventId`.
 */
export class EventStream implements AsyncIterable<LogbookEvent> {
  /** The id of the last event received; resume from it later with `lastEventId`. */
  lastEventId: string | undefined;
  /** How many connections were opened (1 plus the reconnections). */
  connections = 0;

  readonly #connect: Connect;
  readonly #opts: FollowOptions;

  constructor(connect: Connect, opts: FollowOptions = {}) {
    this.#connect = connect;
    this.#opts = opts;
    this.lastEventId = opts.lastEventId;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<LogbookEvent> {
    const outer = this.#opts.signal;
    const reconnect = this.#opts.reconnect ?? true;
    const maxDelay = this.#opts.maxReconnectDelayMs ?? 30_000;
    let retryMs = 1000; // until the server says (`retry:`)
    let failures = 0;
    while (!outer?.aborted) {
      const ctl = new AbortController();
      const onAbort = () => ctl.abort(outer?.reason);
      outer?.addEventListener("abort", onAbort, { once: true });
      let wait: number;
      try {
        let res: Response;
        try {
          res = await this.#connect(this.lastEventId, ctl.signal);
        } catch (err) {
          if (outer?.aborted) return;
          const transient = !(err instanceof Problem) || err.status === 503 || err.status === 429;
          if (!reconnect || !transient) {
            if (err instanceof Problem) throw err;
            throw new ConnectionError("live feed: cannot connect", { cause: err, maybeApplied: false, attempts: 1 });
          }
          failures++;
          const asked = err instanceof Problem && err.retryAfter !== null ? err.retryAfter * 1000 : 0;
          await sleep(Math.max(asked, backoff(failures, retryMs, maxDelay)), outer).catch(() => {});
          continue;
        }
        this.connections++;
        try {
          const parsing = {
            onRetry: (ms: number) => (retryMs = ms),
            // The server opens with `id: <start>` (a block without data), so
            // even a connection cut before its first event resumes exactly.
            onLastEventId: (id: string) => {
              if (id !== "") this.lastEventId = id;
            },
          };
          for await (const ev of parseEventStream(res.body!, parsing)) {
            failures = 0;
            yield { id: ev.id, event: ev.event, data: JSON.parse(ev.data) } as LogbookEvent;
          }
        } catch (err) {
          if (outer?.aborted) return;
          if (err instanceof SyntaxError) throw err; // data that is not JSON: not a Logbook feed
          // The connection dropped: reconnect below.
        }
        if (!reconnect) return;
        failures++;
        wait = Math.min(maxDelay, failures === 1 ? retryMs : backoff(failures, retryMs, maxDelay));
      } finally {
        outer?.removeEventListener("abort", onAbort);
        ctl.abort(); // ends this connection, if it is still open
      }
      await sleep(wait, outer).catch(() => {});
    }
  }
}
