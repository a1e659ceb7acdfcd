// Embeddings as the pages show them: a passage's or item's state, and
// whether search by meaning can work here. The server says which: a search
// by meaning it cannot embed the words of answers 422 naming the query's
// embedding; the page then stops offering that search (for this agent, or
// the tenant, until the page is loaded again).

import { ApiError } from "./api.js";
import { h } from "./dom.js";

/** embeddingState is a badge for a passage's embedding_state (ready, pending, failed), or null when it has none. */
export function embeddingState(p) {
  const st = p.embedding_state;
  if (!st) return null;
  const cls = st === "ready" ? "ok" : st === "failed" ? "bad" : "warn";
  const title = st === "failed" ? p.embedding_error || "failed" : p.embedding_model ? `model ${p.embedding_model}` : st;
  return h("span", { class: ["badge", "embedding", cls], title, dataset: { embedding: st } }, `embedding ${st}`);
}

/**
 * noEndpoint says whether err is the server's answer that it cannot embed
 * the words searched for. The pages send words only, never a
 * query_embedding, so a 422 naming it (or, for items, the query) says just
 * that: no endpoint is configured, or this server computes no embeddings,
 * or the agent's embeddings come from another model than its endpoint's now.
 */
export function noEndpoint(err) {
  if (!(err instanceof ApiError) || err.status !== 422) return false;
  return (err.problem?.errors || []).some((e) => e.field === "query_embedding" || e.field === "query");
}

// Remembered until the page is loaded again, which asks anew: an operator
// may configure an endpoint meanwhile.
const off = new Set();

/** meaningOff says whether search by meaning was found not to work for scope (an agent's id, or "tenant"). */
export function meaningOff(scope) {
  return off.has(scope);
}

/** turnMeaningOff remembers that search by meaning does not work for scope. */
export function turnMeaningOff(scope) {
  off.add(scope);
}
