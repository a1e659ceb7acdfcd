// Small helpers shared by the client, the live feed and the Agents session.

/** Waits ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const done = () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    };
    const t = setTimeout(done, Math.max(0, ms));
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Exponential backoff from base, capped, with full jitter on its upper half. */
export function backoff(attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return ceiling / 2 + (Math.random() * ceiling) / 2;
}

/** 32 hex digits of a UUIDv7: time-ordered, as the server's own ids are. */
export function uuid7Hex(): string {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  let ms = Date.now();
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** JSON with object keys sorted: equal for values JSON considers equal. */
export function canonicalJSON(v: unknown): string {
  return JSON.stringify(sortKeys(v));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .filter((k) => o[k] !== undefined)
        .sort()
        .map((k) => [k, sortKeys(o[k])]),
    );
  }
  return v;
}

/** Whether state already holds what the RFC 7396 merge patch would make of it. */
export function patchApplied(state: unknown, patch: Record<string, unknown>): boolean {
  if (!state || typeof state !== "object" || Array.isArray(state)) return false;
  const s = state as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) {
      if (k in s) return false;
    } else if (typeof v === "object" && !Array.isArray(v)) {
      if (!patchApplied(s[k], v as Record<string, unknown>)) return false;
    } else if (canonicalJSON(s[k]) !== canonicalJSON(v)) {
      return false;
    }
  }
  return true;
}

/** The environment variable, where there is an environment (Node, Deno, Bun). */
export function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = p?.env?.[name];
  return v === "" ? undefined : v;
}
