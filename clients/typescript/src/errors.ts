import type { ErrorCode, FieldError } from "./types.js";

/** The base of everything this client throws on purpose. */
export class LogbookError extends Error {
  override name = "LogbookError";
}

/**
 * An error answer: the server's RFC 9457 problem (`application/problem+json`).
 * Branch on `code`, which is stable; `detail` is for people.
 */
export class Problem extends LogbookError {
  override name = "Problem";
  /** The HTTP status. */
  readonly status: number;
  /** The stable snake_case reason, e.g. `not_found`, `stale_iteration`. */
  readonly code: ErrorCode | (string & {});
  readonly title: string;
  readonly detail: string;
  /** `urn:logbook:problem:<code>`. */
  readonly type: string;
  readonly instance: string | undefined;
  /** Each bad field (`messages[1].tool_call_id`) with what is wrong with it. */
  readonly errors: FieldError[];
  /** The answer's `X-Request-Id`: quote it when reporting a 5xx. */
  readonly requestId: string | null;
  /** `Retry-After` in seconds, when the answer had one (429, 503). */
  readonly retryAfter: number | null;
  /** The whole problem, with the keys some codes add (`latest_iteration`, `last_seq`, `from`, `to`, `id`, `line`). */
  readonly body: Record<string, unknown>;

  constructor(status: number, body: Record<string, unknown>, requestId: string | null = null, retryAfter: number | null = null) {
    const code = typeof body.code === "string" ? body.code : `http_${status}`;
    const detail = typeof body.detail === "string" ? body.detail : "";
    super(`${status} ${code}${detail ? `: ${detail}` : ""}`);
    this.status = status;
    this.code = code;
    this.title = typeof body.title === "string" ? body.title : "";
    this.detail = detail;
    this.type = typeof body.type === "string" ? body.type : "about:blank";
    this.instance = typeof body.instance === "string" ? body.instance : undefined;
    this.errors = Array.isArray(body.errors) ? (body.errors as FieldError[]) : [];
    this.requestId = requestId;
    this.retryAfter = retryAfter;
    this.body = body;
  }

  /** The field errors as `{field: message}`. */
  get fields(): Record<string, string> {
    return Object.fromEntries(this.errors.map((e) => [e.field, e.message]));
  }

  /** `stale_iteration`: the iteration of the session's latest checkpoint. */
  get latestIteration(): number | undefined {
    return typeof this.body.latest_iteration === "number" ? this.body.latest_iteration : undefined;
  }

  /** `stale_seq`: the session's last seq. */
  get lastSeq(): number | undefined {
    return typeof this.body.last_seq === "number" ? this.body.last_seq : undefined;
  }

  /** The problem an answer carries; a body that is not a problem (a proxy's page) still gives status and text. */
  static fromAnswer(status: number, text: string, headers: Headers): Problem {
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      if (text) body = { detail: text.slice(0, 500) };
    }
    return new Problem(status, body, headers.get("x-request-id"), retryAfterSeconds(headers));
  }
}

/**
 * A job (a purge, an integrity check, a backup) that the server stopped or
 * restarted under: nothing says how far it got, so start it again.
 */
export class JobInterrupted extends LogbookError {
  override name = "JobInterrupted";
  readonly jobId: string;
  readonly kind: string;

  constructor(jobId: string, kind: string) {
    super(`job ${jobId} (${kind}) stopped when the server did; start it again`);
    this.jobId = jobId;
    this.kind = kind;
  }
}

/**
 * No answer came: the connection failed, or the retries ran out on one.
 * `maybeApplied` says whether a write may have landed anyway (the request
 * reached the server before the connection broke). For an append, send it
 * again with `idempotencyKey` and it is stored once.
 */
export class ConnectionError extends LogbookError {
  override name = "ConnectionError";
  readonly maybeApplied: boolean;
  readonly attempts: number;
  readonly idempotencyKey: string | undefined;

  constructor(message: string, opts: { cause: unknown; maybeApplied: boolean; attempts: number; idempotencyKey?: string }) {
    super(message, { cause: opts.cause });
    this.maybeApplied = opts.maybeApplied;
    this.attempts = opts.attempts;
    this.idempotencyKey = opts.idempotencyKey;
  }
}

/** `Retry-After` as seconds (a number of seconds, or an HTTP date), or null. */
export function retryAfterSeconds(headers: Headers): number | null {
  const v = headers.get("retry-after");
  if (v === null || v.trim() === "") return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, (at - Date.now()) / 1000);
}
