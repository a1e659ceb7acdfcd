// A session's fork family as a tree: up through parent_id to the root, then
// down. The API has no parent filter, so the children come from listing the
// sessions created since the root and grouping them by parent_id here.

import { ApiError, all, get } from "./api.js";
import { h, link, route } from "./dom.js";
import * as fmt from "./format.js";

const MAX_DEPTH = 64;

async function rootOf(ses, signal) {
  let root = ses;
  for (let i = 0; i < MAX_DEPTH && root.parent_id; i++) {
    try {
      root = await get(`/v1/sessions/${encodeURIComponent(root.parent_id)}`, null, signal);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) break; // the parent was purged
      throw err;
    }
  }
  return root;
}

function item(s, kids, currentId, depth) {
  const children = kids.get(s.id) || [];
  return h("li", { class: s.id === currentId ? "current" : null, dataset: { id: s.id } },
    link(route(["sessions", s.id]), s.title || s.id),
    " ", h("span", { class: "small muted" },
      s.forked_at_seq !== null && s.forked_at_seq !== undefined ? `at #${s.forked_at_seq} · ` : "",
      `${fmt.int(s.message_count)} msgs · ${s.status}`),
    children.length && depth < MAX_DEPTH
      ? h("ul", null, children.map((c) => item(c, kids, currentId, depth + 1)))
      : null);
}

/** forkTree answers the tree's element, or null when the session has no parent and no fork. */
export async function forkTree(ses, signal) {
  const root = await rootOf(ses, signal);
  const after = new Date(new Date(root.created_at).getTime() - 1).toISOString();
  const { data, truncated } = await all("/v1/sessions", { created_after: after }, signal, 5000);
  const kids = new Map();
  for (const s of data) {
    if (!s.parent_id) continue;
    if (!kids.has(s.parent_id)) kids.set(s.parent_id, []);
    kids.get(s.parent_id).push(s);
  }
  for (const list of kids.values()) list.sort((a, b) => (a.created_at < b.created_at ? -1 : 1));
  if (!ses.parent_id && !kids.has(ses.id)) return null;
  return h("div", null,
    root.parent_id ? h("p", { class: "small muted" }, `its root's parent ${root.parent_id} no longer exists`) : null,
    h("ul", { class: "forks", id: "fork-tree" }, item(root, kids, ses.id, 0)),
    truncated ? h("p", { class: "small muted" }, "Only the newest 5000 sessions were searched for forks.") : null);
}
