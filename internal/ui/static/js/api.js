// Calls to Logbook's /v1 API with the key, problem+json errors as ApiError,
// and a 401 answered by asking for a key and trying again.

import { askForKey, authHeaders, key, refused } from "./auth.js";

export class ApiError extends Error {
  constructor(status, problem, path) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code || "";
    this.problem = problem || null;
    this.path = path;
  }
}

/** url builds a same-origin URL for path with query values (arrays repeat; empty ones are left out). */
export function url(path, query) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (v === undefined || v === null || v === "") continue;
    if (Array.isArray(v)) v.forEach((x) => u.searchParams.append(k, String(x)));
    else u.searchParams.set(k, String(v));
  }
  return u;
}

async function problemOf(res) {
  try {
    return await res.json();
  } catch {
    return null;
  }
}

/**
 * send fetches path with the key and answers the Response once it is not a
 * 401: on 401 it asks for a key (dropping one the server refused) and tries
 * again, until the user cancels.
 */
export async function send(path, { query, method = "GET", headers = {}, body, signal } = {}) {
  for (;;) {
    const sent = key();
    const res = await fetch(url(path, query), {
      method,
      body,
      signal,
      headers: { Accept: "application/json", ...headers, ...authHeaders() },
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    if (res.status !== 401) return res;
    if (sent && sent === key()) refused();
    const got = await askForKey(sent ? "The server refused that key. Type another." : "This server asks for an API key.");
    if (!got) throw new ApiError(401, await problemOf(res), path);
  }
}

/** get answers the JSON of a GET, or throws ApiError. */
export async function get(path, query, signal) {
  const res = await send(path, { query, signal });
  if (!res.ok) throw new ApiError(res.status, await problemOf(res), path);
  return res.json();
}

/** post sends a JSON body (a search's) and answers the JSON, or throws ApiError. */
export async function post(path, body, query, signal) {
  const res = await send(path, { query, method: "POST", signal, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new ApiError(res.status, await problemOf(res), path);
  return res.json();
}

/** newIdempotencyKey names one write, so that sending it again (a retry after a lost answer) applies it once. */
export function newIdempotencyKey() {
  // getRandomValues, not randomUUID: the page may be served over plain HTTP
  // from another host than localhost, where randomUUID does not exist.
  const b = crypto.getRandomValues(new Uint8Array(16));
  return "ui-" + [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * write sends a write (POST, PUT, PATCH, DELETE) with an Idempotency-Key,
 * a JSON body when there is one, and any extra headers (If-Match); it
 * answers the JSON of the answer (null for a 204), or throws ApiError with
 * the problem.
 */
export async function write(method, path, { body, query, headers = {}, idempotencyKey, signal } = {}) {
  const h = { "Idempotency-Key": idempotencyKey || newIdempotencyKey(), ...headers };
  if (body !== undefined) h["Content-Type"] = "application/json";
  const res = await send(path, { query, method, signal, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) throw new ApiError(res.status, await problemOf(res), path);
  if (res.status === 204) return null;
  return res.json();
}

/** blob answers the bytes of a GET (a file), or throws ApiError. */
export async function blob(path, signal) {
  const res = await send(path, { signal, headers: { Accept: "*/*" } });
  if (!res.ok) throw new ApiError(res.status, await problemOf(res), path);
  return res.blob();
}

/** all reads every page of a list (at most max items), following next_cursor. */
export async function all(path, query, signal, max = 2000) {
  const out = [];
  let cursor = "";
  do {
    const page = await get(path, { ...query, limit: 200, cursor }, signal);
    out.push(...page.data);
    cursor = page.has_more ? page.next_cursor : "";
  } while (cursor && out.length < max);
  return { data: out, truncated: Boolean(cursor) };
}

/** describe says what went wrong, for a notice. */
export function describe(err) {
  if (err instanceof ApiError) {
    if (err.status === 401) return `${err.path}: this server needs an API key; set one with the Key button.`;
    const code = err.code ? ` (${err.code})` : "";
    return `${err.path}: ${err.status}${code} ${err.message}`;
  }
  return String(err?.message || err);
}
