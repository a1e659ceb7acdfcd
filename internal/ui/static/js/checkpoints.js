// A session's checkpoints as the tree they form: a group per namespace (a
// subgraph's are its own), newest first, each checkpoint with its parent,
// its pending writes and its state. The line that leads to a namespace's
// latest is lane 0; a branch off it (a fork from an older checkpoint, "time
// travel") is lane 1, with the checkpoint it branched from named.

import { h } from "./dom.js";
import * as fmt from "./format.js";
import { tree } from "./tree.js";

/** lanes marks the ancestors of the newest checkpoint 0, the rest 1. */
function lanes(list) {
  const byId = new Map(list.map((c) => [c.client_id, c]));
  const main = new Set();
  for (let c = list[0]; c && !main.has(c.client_id); c = byId.get(c.parent_id)) main.add(c.client_id);
  const children = new Map();
  for (const c of list) if (c.parent_id) children.set(c.parent_id, (children.get(c.parent_id) || 0) + 1);
  return { lane: (c) => (main.has(c.client_id) ? 0 : 1), forks: (c) => children.get(c.client_id) || 0, known: (id) => byId.has(id) };
}

function writesList(ws) {
  return h("ul", { class: "pending-writes" }, ws.map((w) =>
    h("li", { dataset: { task: w.task_id, channel: w.channel } },
      h("span", { class: "mono" }, w.channel), ` ← ${w.task_id.slice(0, 12)} `,
      h("span", { class: "muted" }, fmt.short(JSON.stringify(w.value), 120)))));
}

function item(c, open, l) {
  const st = c.state || {};
  const ws = c.pending_writes || [];
  const pending = Array.isArray(st.pending_tool_calls) ? st.pending_tool_calls.length : 0;
  const named = c.client_id !== c.id;
  const meta = c.metadata || {};
  return h("details", { class: ["checkpoint", "lane-" + l.lane(c)], open,
    dataset: { iteration: c.iteration, clientId: c.client_id, parentId: c.parent_id || "", lane: l.lane(c) } },
  h("summary", null, h("b", null, `Iteration ${c.iteration}`), ` · at #${c.last_seq} · ${fmt.time(c.created_at)} `,
    named ? h("span", { class: "mono small" }, fmt.short(c.client_id, 24), " ") : null,
    meta.source !== undefined ? h("span", { class: "badge" }, String(meta.source)) : null,
    l.forks(c) > 1 ? h("span", { class: "badge fork" }, `${l.forks(c)} branches`) : null,
    ws.length ? h("span", { class: "badge writes" }, `${ws.length} write${ws.length === 1 ? "" : "s"}`) : null,
    pending ? h("span", { class: "badge warn" }, `${pending} pending`) : null,
    st.stop_reason ? h("span", { class: "badge" }, st.stop_reason) : null),
  h("div", { class: "small muted mono" },
    c.parent_id ? [`after ${fmt.short(c.parent_id, 24)}`, l.known(c.parent_id) ? "" : " (pruned)", " · "] : "root · ",
    `sha256 ${c.sha256.slice(0, 16)}…`),
  Object.keys(meta).length ? h("div", { class: "small" }, "metadata ", tree(meta, 0)) : null,
  ws.length ? writesList(ws) : null,
  tree(st, 2));
}

/** checkpointTree renders a session's checkpoints (newest first, as listed). */
export function checkpointTree(data) {
  const groups = new Map();
  for (const c of data) {
    if (!groups.has(c.namespace)) groups.set(c.namespace, []);
    groups.get(c.namespace).push(c);
  }
  const names = [...groups.keys()].sort(); // "" (the graph itself) first
  let first = true;
  return names.map((ns) => {
    const list = groups.get(ns);
    const l = lanes(list);
    const items = list.map((c) => {
      const el = item(c, first, l);
      first = false;
      return el;
    });
    return h("div", { class: "ck-namespace", dataset: { namespace: ns } },
      names.length > 1 || ns !== "" ? h("h3", { class: "small" }, ns === "" ? "namespace \"\"" : `namespace ${ns}`, h("span", { class: "muted" }, ` (${list.length})`)) : null,
      items);
  });
}
