// Search results: conversation hits (linking to the message in its session)
// and archival passages, with the matched words marked.

import { h, link, route, snippet } from "./dom.js";
import * as fmt from "./format.js";

export function messageHits(res) {
  const lag = res.index_lag
    ? h("p", { class: "small muted" }, `${fmt.int(res.index_lag)} message(s) not indexed yet; search again in a moment.`)
    : null;
  if (!res.data.length) return h("div", { class: "hits" }, h("p", { class: "muted" }, "No message matches."), lag);
  return h("div", { class: "hits" },
    h("p", { class: "small muted" }, `${res.data.length} hit${res.data.length === 1 ? "" : "s"}, best first`),
    h("ol", { class: "hits message-hits" }, res.data.map((hit) => h("li", { dataset: { sessionId: hit.session_id, seq: hit.seq } },
      h("div", null, snippet(hit.snippet)),
      h("div", { class: "small muted" },
        link(route(["sessions", hit.session_id], { seq: hit.seq }), `${hit.session_id} #${hit.seq}`),
        ` · ${hit.role} · ${fmt.time(hit.created_at)}`)))),
    lag);
}

export function passageHits(res) {
  if (!res.data.length) return h("div", { class: "hits" }, h("p", { class: "muted" }, "No passage matches."));
  return h("ol", { class: "hits passage-hits" }, res.data.map((p) => h("li", { dataset: { id: p.id } },
    h("div", null, snippet(p.snippet)),
    h("div", { class: "small muted" }, p.tags.map((t) => h("span", { class: "tag" }, t)), fmt.time(p.created_at), " · ", h("span", { class: "mono" }, p.id)))));
}
