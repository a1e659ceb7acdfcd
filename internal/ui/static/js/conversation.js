// A session's messages as a conversation, in seq order: each assistant tool
// call folded together with the tool message that answers it, compactions
// marked where their summary ends, and live changes (appends, rewinds)
// applied in place so that what is open stays open.

import { h } from "./dom.js";
import * as fmt from "./format.js";
import { content, plain } from "./parts.js";

function header(msg) {
  return h("header", null,
    h("span", { class: "seq" }, `#${msg.seq}`),
    h("span", { class: "role" }, msg.role),
    msg.name ? h("span", { class: "name" }, msg.name) : null,
    msg.model ? h("span", { class: "model" }, msg.model) : null,
    msg.agent_id ? h("span", { class: "agent" }, `agent ${msg.agent_id}`) : null,
    h("span", { class: "tokens" }, `${fmt.int(msg.tokens)} tok`),
    h("span", { class: "cost" }, fmt.cost(msg.cost)),
    h("time", { datetime: msg.created_at, title: msg.created_at }, fmt.time(msg.created_at)),
    msg.is_error ? h("span", { class: "badge bad" }, "error") : null,
    msg.metadata?.logbook_repair ? h("span", { class: "badge warn" }, "repair") : null);
}

function callState(result) {
  if (!result) return h("span", { class: "badge warn state" }, "no result yet");
  return h("span", { class: ["badge", "state", result.is_error ? "bad" : "ok"] }, `${result.is_error ? "error" : "result"} #${result.seq}`);
}

export class Conversation {
  constructor(files) {
    this.files = files;
    this.el = h("div", { class: "conversation", id: "conversation" });
    this.msgs = new Map(); // seq → {msg, el}
    this.calls = new Map(); // tool_call_id → {details, summary, slot, seq, result}
    this.markers = new Map(); // compaction id → {c, el}
    this.lastArticle = 0; // the highest seq of an article shown
    this.empty = h("p", { class: "muted" }, "No messages yet.");
    this.el.append(this.empty);
  }

  get size() {
    return this.msgs.size;
  }

  get lastSeq() {
    let m = 0;
    for (const s of this.msgs.keys()) m = Math.max(m, s);
    return m;
  }

  /** add shows a message; one already shown (same seq) is left alone. */
  add(msg) {
    if (this.msgs.has(msg.seq)) return null;
    this.empty.remove();
    const call = msg.role === "tool" ? this.calls.get(msg.tool_call_id) : null;
    if (call && !call.result) {
      const el = h("div", { class: ["tool-result", msg.is_error ? "is-error" : null], dataset: { seq: msg.seq } },
        header(msg), content(msg.content, this.files));
      call.slot.replaceChildren(el);
      call.result = msg;
      call.summary.querySelector(".state").replaceWith(callState(msg));
      this.msgs.set(msg.seq, { msg, el, call });
      return call.details;
    }
    const el = h("article", { class: ["msg", "role-" + msg.role], id: `m-${msg.seq}`, dataset: { seq: msg.seq } },
      header(msg), content(msg.content, this.files));
    if (msg.role === "tool") {
      el.append(h("div", { class: "small muted" }, "answers ", h("code", null, msg.tool_call_id || "?"), " (no earlier call shown)"));
    }
    if (Array.isArray(msg.tool_calls) && msg.tool_calls.length) {
      const list = h("div", { class: "tool-calls" });
      for (const tc of msg.tool_calls) list.append(this.callNode(tc, msg.seq));
      el.append(list);
    }
    this.insert(el, msg.seq);
    this.msgs.set(msg.seq, { msg, el });
    return el;
  }

  callNode(tc, seq) {
    const slot = h("div", { class: "tool-result-slot" });
    const summary = h("summary", null, h("span", { class: "badge call" }, "call"), " ", h("b", null, tc.name), "(", h("span", { class: "muted" }, fmt.short(tc.arguments, 80)), ")", callState(null));
    const details = h("details", { class: "tool-call", dataset: { callId: tc.id } }, summary,
      h("div", { class: "small muted" }, "call ", h("code", null, tc.id)),
      h("pre", { class: "args" }, fmt.json(tc.arguments)),
      slot);
    this.calls.set(tc.id, { details, summary, slot, seq, result: null });
    return details;
  }

  /** insert places an article by seq; appends, in order, go straight to the end. */
  insert(el, seq) {
    if (seq > this.lastArticle) {
      this.lastArticle = seq;
      this.el.append(el);
      return;
    }
    const next = [...this.el.querySelectorAll(":scope > article")].find((a) => Number(a.dataset.seq) > seq);
    this.el.insertBefore(el, next || null);
  }

  /** remove takes one message out (a rewind's). */
  remove(seq) {
    const m = this.msgs.get(seq);
    if (!m) return;
    this.msgs.delete(seq);
    if (m.call) {
      m.call.result = null;
      m.call.slot.replaceChildren();
      m.call.summary.querySelector(".state").replaceWith(callState(null));
      return;
    }
    m.el.remove();
    if (seq === this.lastArticle) {
      const last = [...this.el.querySelectorAll(":scope > article")].pop();
      this.lastArticle = last ? Number(last.dataset.seq) : 0;
    }
    for (const tc of m.msg.tool_calls || []) this.calls.delete(tc.id);
  }

  /** rewindTo removes every message after seq, and compactions reaching past it. */
  rewindTo(seq) {
    for (const s of [...this.msgs.keys()].sort((a, b) => b - a)) if (s > seq) this.remove(s);
    for (const [id, { c, el }] of this.markers) {
      if (c.through_seq > seq) {
        el.remove();
        this.markers.delete(id);
      }
    }
    if (this.msgs.size === 0) this.el.append(this.empty);
  }

  /** addCompaction marks where a compaction's summary ends. */
  addCompaction(c) {
    if (this.markers.has(c.id)) return;
    const el = h("div", { class: "compaction-marker", dataset: { through: c.through_seq } },
      h("b", null, `Compaction through #${c.through_seq}`), ` · ${fmt.int(c.tokens)} tok`, c.model ? ` · ${c.model}` : "",
      ": ", fmt.short(plain(c.summary), 300));
    const articles = [...this.el.querySelectorAll(":scope > article")];
    const after = articles.filter((a) => Number(a.dataset.seq) <= c.through_seq).pop();
    const next = after ? after.nextSibling : this.el.firstChild;
    this.el.insertBefore(el, next);
    this.markers.set(c.id, { c, el });
  }

  /** reveal scrolls to a message (opening the tool call it is folded into) and marks it. */
  reveal(seq) {
    const m = this.msgs.get(seq);
    if (!m) return false;
    if (m.call) m.call.details.open = true;
    const target = m.call ? m.call.details.closest("article") : m.el;
    target.classList.add("target");
    m.el.scrollIntoView({ block: "center" });
    return true;
  }
}
