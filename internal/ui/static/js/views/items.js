// The item store: one space's namespaces (the tenant's shared items, or an
// end user's), and the items under a namespace, each with its value as a
// tree; found by meaning when a query is given. Everything lives in the
// route (#/items?user_id=&ns=a.b&q=), so a view can be linked.

import { describe, get, post } from "../api.js";
import { h, link, notice, replace, route } from "../dom.js";
import * as fmt from "../format.js";
import { setLive } from "../live.js";
import { tree } from "../tree.js";

const SEP = ".";

function itemsRoute(query, change) {
  const q = { user_id: query.get("user_id") || "", ns: query.get("ns") || "", q: query.get("q") || "", ...change };
  return route(["items"], q);
}

function itemRow(it) {
  const ns = it.namespace.join(SEP);
  const state = it.embedding_state
    ? h("span", { class: ["badge", it.embedding_state === "ready" ? "ok" : it.embedding_state === "failed" ? "bad" : "warn"],
      title: it.embedding_error || `embedded: ${(it.index || []).join(", ")}` }, it.embedding_state)
    : null;
  return h("details", { class: "item", dataset: { ns, key: it.key } },
    h("summary", null,
      h("span", { class: "mono small muted" }, ns, " / "), h("b", { class: "key" }, it.key),
      " ", h("span", { class: "badge" }, `v${it.version}`),
      it.score !== null && it.score !== undefined ? h("span", { class: "score small" }, ` ${it.score.toFixed(3)}`) : null,
      " ", state,
      h("span", { class: "small muted" }, " · ", fmt.time(it.updated_at)),
      it.expires_at ? h("span", { class: "small muted" }, " · expires ", fmt.time(it.expires_at)) : null),
    tree(it.value, 2));
}

export async function render(root, { query, signal }) {
  setLive("off");
  const user = query.get("user_id") || "";
  const ns = query.get("ns") || "";
  const text = query.get("q") || "";
  const prefix = ns ? ns.split(SEP) : [];

  const userIn = h("input", { name: "user_id", value: user, placeholder: "shared items", size: 16 });
  const nsIn = h("input", { name: "ns", value: ns, placeholder: "users.u1.memories", size: 24 });
  const qIn = h("input", { name: "q", value: text, placeholder: "by meaning (optional)", size: 24 });
  const form = h("form", { class: "filters", id: "items-form" },
    h("label", null, "User", userIn), h("label", null, "Namespace", nsIn), h("label", null, "Query", qIn),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = itemsRoute(query, { user_id: userIn.value.trim(), ns: nsIn.value.trim(), q: qIn.value.trim() });
  });

  const crumbs = h("p", { id: "items-crumbs", class: "small" },
    link(itemsRoute(query, { ns: "", q: "" }), user ? `${user}'s items` : "shared items"),
    prefix.map((l, i) => [" / ", link(itemsRoute(query, { ns: prefix.slice(0, i + 1).join(SEP), q: "" }), l)]));
  const nsList = h("ul", { id: "namespaces", class: "namespaces" });
  const nsNote = h("div");
  const itemsEl = h("div", { id: "items" });
  const itemsNote = h("div");
  const more = h("button", { type: "button", class: "ghost", id: "items-more", hidden: true }, "Load more");
  replace(root,
    h("div", { class: "page-head" }, h("h1", null, "Items"), h("span", { class: "sub" }, "the item store: namespaced JSON memories")),
    h("div", { class: "panel" }, form),
    crumbs,
    h("div", { class: "split" },
      h("section", { class: "panel" }, h("h2", null, text ? "Found by meaning" : "Items"), itemsNote, itemsEl, h("div", { class: "more" }, more)),
      h("aside", null, h("section", { class: "panel" }, h("h2", null, "Namespaces"), nsNote, nsList))));

  // The namespaces one level below the current one, each a step down.
  get("/v1/items/namespaces", { user_id: user, prefix: ns, max_depth: prefix.length + 1, limit: 1000 }, signal).then((page) => {
    const below = page.data.filter((n) => n.length > prefix.length);
    for (const n of below) {
      nsList.append(h("li", { dataset: { ns: n.join(SEP) } }, link(itemsRoute(query, { ns: n.join(SEP), q: "" }), n.join(SEP))));
    }
    if (!below.length) replace(nsNote, h("p", { class: "muted" }, "No namespaces below this one."));
    if (page.has_more) nsNote.append(h("p", { class: "small muted" }, "More namespaces than shown."));
  }).catch((err) => { if (!signal.aborted) replace(nsNote, notice("bad", describe(err))); });

  let cursor = "";
  const load = async () => {
    more.disabled = true;
    try {
      const body = { namespace_prefix: prefix, limit: 50 };
      if (text) body.query = text;
      else if (cursor) body.cursor = cursor;
      const page = await post("/v1/items/search", body, { user_id: user }, signal);
      itemsEl.append(...page.data.map(itemRow));
      if (!itemsEl.children.length) replace(itemsNote, h("p", { class: "muted" }, "No items here."));
      cursor = !text && page.has_more ? page.next_cursor : "";
      more.hidden = !cursor;
    } catch (err) {
      if (!signal.aborted) replace(itemsNote, notice("bad", describe(err)));
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", load);
  await load();
}
