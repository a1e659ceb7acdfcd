// "What the model sees": the context read of a session (GET
// /v1/sessions/{id}/context?include=blocks), as a runtime would put it in
// front of its model: the agent's core memory blocks, the latest
// compaction's summary, then the messages after it, within an optional
// token budget, with what the budget left out.

import { describe, get } from "./api.js";
import { h, notice, replace } from "./dom.js";
import * as fmt from "./format.js";
import { plain } from "./parts.js";

function blockItem(b) {
  return h("li", { dataset: { label: b.label } },
    h("b", null, b.label), h("span", { class: "muted small" }, ` v${b.version} · ${fmt.int([...b.value].length)} / ${fmt.int(b.limit)} chars`),
    b.owner_agent_id ? h("span", { class: "badge shared" }, `shared from ${b.owner_agent_id}`) : null,
    h("pre", null, b.value === "" ? "(empty)" : b.value));
}

function messageItem(m) {
  const calls = (m.tool_calls || []).map((c) => `${c.name}(${fmt.short(c.arguments, 60)})`).join(", ");
  return h("li", { dataset: { seq: m.seq } },
    h("span", { class: "mono small" }, `#${m.seq} `), h("b", null, m.role), ` · ${fmt.int(m.tokens)} tok · `,
    fmt.short(plain(m.content), 160), calls ? h("span", { class: "muted" }, ` → ${calls}`) : null);
}

function view(c) {
  const om = c.omitted || {};
  return h("div", { id: "context-view" },
    h("p", { class: "small", id: "context-summary" },
      h("b", null, `${fmt.int(c.tokens)} tokens`), ` · ${fmt.int(c.messages.length)} messages`,
      c.max_tokens !== null && c.max_tokens !== undefined ? ` · budget ${fmt.int(c.max_tokens)}` : "",
      om.messages ? ` · left out: ${fmt.int(om.messages)} messages (#${om.first_seq}–#${om.last_seq}, ${fmt.int(om.tokens)} tok)` : "",
      c.over_budget ? h("span", { class: "badge warn" }, " over budget") : null),
    h("h3", null, "Core memory"),
    c.blocks === null ? h("p", { class: "muted" }, "not asked for")
      : c.blocks.length ? h("ul", { class: "context-blocks" }, c.blocks.map(blockItem)) : h("p", { class: "muted" }, "No blocks (the session names no agent, or its agent has none)."),
    h("h3", null, "Summary"),
    c.compaction ? h("div", { class: "compaction-marker" }, h("b", null, `Compaction through #${c.compaction.through_seq}`), ": ", plain(c.compaction.summary))
      : h("p", { class: "muted" }, "No compaction: every message counts."),
    h("h3", null, "Messages"),
    c.messages.length ? h("ol", { class: "context-messages" }, c.messages.map(messageItem)) : h("p", { class: "muted" }, "None."));
}

/** contextPanel is the panel's body: a budget to try, and the read shown on demand. */
export function contextPanel(base, signal) {
  const out = h("div");
  const budget = h("input", { id: "context-budget", name: "max_tokens", type: "number", min: 0, placeholder: "all", size: 8 });
  const form = h("form", { class: "filters", id: "context-form" },
    h("label", null, "Token budget", budget), h("button", { type: "submit", class: "ghost" }, "Show what the model sees"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(out, h("p", { class: "loading" }, "Loading…"));
    try {
      replace(out, view(await get(`${base}/context`, { include: "blocks", max_tokens: budget.value.trim() }, signal)));
    } catch (err) {
      if (!signal.aborted) replace(out, notice("bad", describe(err)));
    }
  });
  return h("div", null, form, out);
}
