// Conversation search across the tenant (GET /v1/messages/search), with the
// API's filters; the query lives in the route, so a search can be linked.

import { describe, get } from "../api.js";
import { h, notice, replace, route } from "../dom.js";
import * as fmt from "../format.js";
import { messageHits } from "../hits.js";
import { setLive } from "../live.js";

const ROLES = ["user", "assistant", "system", "developer", "tool"];

export async function render(root, { query, signal }) {
  setLive("off");
  const roles = new Set((query.get("role") || "").split(",").filter(Boolean));
  const q = h("input", { id: "search-q", name: "q", value: query.get("q") || "", placeholder: "refund order 1042", size: 30, required: true });
  const session = h("input", { name: "session_id", value: query.get("session_id") || "", placeholder: "any session", size: 16 });
  const after = h("input", { name: "after", type: "date", value: query.get("after") || "" });
  const before = h("input", { name: "before", type: "date", value: query.get("before") || "" });
  const boxes = ROLES.map((r) => h("label", { class: "inline" }, h("input", { type: "checkbox", value: r, checked: roles.has(r) }), r));
  const form = h("form", { class: "filters", id: "search-form" },
    h("label", null, "Words", q),
    h("div", { class: "field" }, h("span", null, "Roles"), h("span", { class: "roles" }, boxes)),
    h("label", null, "Session", session),
    h("label", null, "From", after),
    h("label", null, "To", before),
    h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const picked = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
    location.hash = route(["search"], {
      q: q.value.trim(), role: picked.join(","), session_id: session.value.trim(), after: after.value, before: before.value,
    });
  });
  const results = h("div", { id: "search-results" });
  replace(root,
    h("div", { class: "page-head" }, h("h1", null, "Search"), h("span", { class: "sub" }, "every conversation of the tenant, best match first")),
    h("div", { class: "panel" }, form),
    h("div", { class: "panel" }, results));
  if (!query.get("q")) {
    replace(results, h("p", { class: "muted" }, "Any word matches; messages with more of the words, or rarer ones, come first."));
    return;
  }
  replace(results, h("p", { class: "loading" }, "Searching…"));
  try {
    const res = await get("/v1/messages/search", {
      q: query.get("q"), role: query.get("role"), session_id: query.get("session_id"),
      after: fmt.localDayStart(query.get("after")), before: fmt.localDayEnd(query.get("before")), limit: 50,
    }, signal);
    replace(results, messageHits(res));
  } catch (err) {
    if (!signal.aborted) replace(results, notice("bad", describe(err)));
  }
}
