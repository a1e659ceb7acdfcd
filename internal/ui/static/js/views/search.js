// Conversation search across the tenant (GET /v1/messages/search), with the
// API's filters, by words or by meaning; the query lives in the route, so a
// search can be linked. Hits name their sessions by title.

import { describe, get } from "../api.js";
import { h, notice, replace, route } from "../dom.js";
import { meaningOff, noEndpoint, turnMeaningOff } from "../embedding.js";
import * as fmt from "../format.js";
import { messageHits, sessionTitles } from "../hits.js";
import { setLive } from "../live.js";

const ROLES = ["user", "assistant", "system", "developer", "tool"];
// A search answers its best hits, not pages: more means a larger answer, up
// to the API's 200.
const STEP = 50;
const MAX = 200;
const MODES = [["keyword", "words"], ["hybrid", "words and meaning"], ["vector", "meaning"]];

export async function render(root, { query, signal }) {
  setLive("off");
  const roles = new Set((query.get("role") || "").split(",").filter(Boolean));
  const mode = query.get("mode") || "keyword";
  const q = h("input", { id: "search-q", name: "q", value: query.get("q") || "", placeholder: "refund order 1042", size: 30, required: true });
  const session = h("input", { name: "session_id", value: query.get("session_id") || "", placeholder: "any session", size: 16 });
  const after = h("input", { name: "after", type: "date", value: query.get("after") || "" });
  const before = h("input", { name: "before", type: "date", value: query.get("before") || "" });
  const modeSel = h("select", { name: "mode", id: "search-mode" }, MODES.map(([v, l]) => h("option", { value: v, selected: v === mode }, l)));
  const modeField = h("label", { id: "search-mode-field", hidden: meaningOff("tenant") }, "By", modeSel);
  const boxes = ROLES.map((r) => h("label", { class: "inline" }, h("input", { type: "checkbox", value: r, checked: roles.has(r) }), r));
  const form = h("form", { class: "filters", id: "search-form" },
    h("label", null, "Words", q),
    modeField,
    h("div", { class: "field" }, h("span", null, "Roles"), h("span", { class: "roles" }, boxes)),
    h("label", null, "Session", session),
    h("label", null, "From", after),
    h("label", null, "To", before),
    h("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const picked = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
    location.hash = route(["search"], {
      q: q.value.trim(), mode: modeField.hidden || modeSel.value === "keyword" ? "" : modeSel.value,
      role: picked.join(","), session_id: session.value.trim(), after: after.value, before: before.value,
    });
  });
  const results = h("div", { id: "search-results" });
  const modeNote = h("div");
  const more = h("button", { type: "button", class: "ghost", id: "search-more", hidden: true }, "Show more");
  const note = h("span", { class: "small muted", id: "search-more-note" });
  replace(root,
    h("div", { class: "page-head" }, h("h1", null, "Search"), h("span", { class: "sub" }, "every conversation of the tenant, best match first")),
    h("div", { class: "panel" }, form),
    h("div", { class: "panel" }, modeNote, results, h("div", { class: "more" }, more, note)));
  if (!query.get("q")) {
    replace(results, h("p", { class: "muted" }, "Any word matches; messages with more of the words, or rarer ones, come first."));
    return;
  }
  const titles = new Map();
  let limit = STEP;
  const search = async () => {
    more.disabled = true;
    try {
      const res = await get("/v1/messages/search", {
        q: query.get("q"), mode: modeField.hidden ? "" : query.get("mode"), role: query.get("role"), session_id: query.get("session_id"),
        after: fmt.localDayStart(query.get("after")), before: fmt.localDayEnd(query.get("before")), limit,
      }, signal);
      await sessionTitles(res.data.map((x) => x.session_id), signal, titles);
      replace(results, messageHits(res, titles));
      const full = res.data.length >= limit;
      more.hidden = !full || limit >= MAX;
      replace(note, full && limit >= MAX ? `These are the best ${MAX}, the most a search answers: narrow the words or the filters to find others.` : "");
    } catch (err) {
      if (signal.aborted) return;
      if (noEndpoint(err)) {
        turnMeaningOff("tenant");
        modeField.hidden = true;
        replace(modeNote, notice("warn", h("span", { id: "meaning-unavailable" }, "Search by meaning needs an embedding endpoint, and none is configured for this tenant or server."),
          " Searching by words instead."));
        setTimeout(search, 0);
        return;
      }
      replace(results, notice("bad", describe(err)));
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", () => {
    limit = Math.min(MAX, limit * 2);
    search();
  });
  replace(results, h("p", { class: "loading" }, "Searching…"));
  await search();
}
