// Search results: conversation hits (linking to the message in its session,
// under the session's title) and archival passages, with the matched words
// marked; and the sessions' titles, which hits do not carry, read once each.

import { get } from "./api.js";
import { embeddingState } from "./embedding.js";
import { h, link, route, snippet } from "./dom.js";
import * as fmt from "./format.js";

// Reads of the hits' sessions at once: a page of 200 hits names at most 200.
const PARALLEL = 6;

/** sessionTitles answers a Map of each session id to its title ("" for none, null when it could not be read). */
export async function sessionTitles(ids, signal, known = new Map()) {
  const todo = [...new Set(ids)].filter((id) => !known.has(id));
  const next = async () => {
    for (let id; (id = todo.shift()) !== undefined; ) {
      try {
        known.set(id, (await get(`/v1/sessions/${encodeURIComponent(id)}`, null, signal)).title || "");
      } catch (err) {
        if (signal?.aborted) return;
        known.set(id, null); // purged, or unreadable: the id alone
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, todo.length) }, next));
  return known;
}

function sessionLabel(id, titles) {
  const t = titles?.get(id);
  return t ? [h("b", { class: "hit-title" }, t), " ", h("span", { class: "mono" }, id)] : h("span", { class: "mono" }, id);
}

/** messageHits renders a search's answer; titles maps session ids to titles. */
export function messageHits(res, titles) {
  const lag = res.index_lag
    ? h("p", { class: "small muted" }, `${fmt.int(res.index_lag)} message(s) not indexed yet; search again in a moment.`)
    : null;
  if (!res.data.length) return h("div", { class: "hits" }, h("p", { class: "muted" }, "No message matches."), lag);
  return h("div", { class: "hits" },
    h("p", { class: "small muted", id: "hits-count" }, `${res.data.length} hit${res.data.length === 1 ? "" : "s"}, best first`),
    h("ol", { class: "hits message-hits" }, res.data.map((hit) => h("li", { dataset: { sessionId: hit.session_id, seq: hit.seq } },
      h("div", { class: "small" }, link(route(["sessions", hit.session_id], { seq: hit.seq }), sessionLabel(hit.session_id, titles), ` #${hit.seq}`)),
      h("div", null, snippet(hit.snippet)),
      h("div", { class: "small muted" }, `${hit.role} · ${fmt.time(hit.created_at)}`)))),
    lag);
}

export function passageHits(res) {
  if (!res.data.length) return h("div", { class: "hits" }, h("p", { class: "muted" }, "No passage matches."));
  return h("ol", { class: "hits passage-hits" }, res.data.map((p) => h("li", { dataset: { id: p.id } },
    h("div", null, snippet(p.snippet)),
    h("div", { class: "small muted" }, p.tags.map((t) => h("span", { class: "tag" }, t)), fmt.time(p.created_at), " · ", h("span", { class: "mono" }, p.id),
      " ", embeddingState(p)))));
}
