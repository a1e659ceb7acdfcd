// A session's messages as a conversation, in seq order: each assistant tool
// call folded together with the tool message that answers it (also when the
// two arrive on different pages), compactions marked where their summary
// ends, a fork's inherited messages marked where they end, and live changes
// (appends, rewinds) applied in place so that what is open stays open. The
// view loads a session a page at a time; earlier pages are put in front.

import { h, link, route } from "./dom.js";
import * as fmt from "./format.js";
import { content, plain } from "./parts.js";

function header(msg, actions) {
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
    msg.metadata?.logbook_repair ? h("span", { class: "badge warn" }, "repair") : null,
    actions ? h("span", { class: "msg-actions" }, actions(msg)) : null);
}

function callState(result) {
  if (!result) return h("span", { class: "badge warn state" }, "no result yet");
  return h("span", { class: ["badge", "state", result.is_error ? "bad" : "ok"] }, `${result.is_error ? "error" : "result"} #${result.seq}`);
}

function body(msg, files) {
  return content(msg.content, files, { tool: msg.role === "tool" });
}

export class Conversation {
  /** actions(msg), when given, answers the buttons each message's header carries. */
  constructor(files, { actions } = {}) {
    this.files = files;
    this.actions = actions || null;
    this.el = h("div", { class: "conversation", id: "conversation" });
    this.msgs = new Map(); // seq → {msg, el, call?}
    this.calls = new Map(); // tool_call_id → {details, summary, slot, seq, result}
    this.orphans = new Map(); // tool_call_id → seq of a result shown without its call
    this.markers = new Map(); // id → {through, el}
    this.firstArticle = Infinity; // the lowest seq of an article shown
    this.lastArticle = 0; // the highest
    this.empty = h("p", { class: "muted" }, "No messages yet.");
    this.el.append(this.empty);
  }

  get size() {
    return this.msgs.size;
  }

  /** lowSeq is the lowest seq shown (Infinity when none). */
  get lowSeq() {
    let m = Infinity;
    for (const s of this.msgs.keys()) m = Math.min(m, s);
    return m;
  }

  get lastSeq() {
    let m = 0;
    for (const s of this.msgs.keys()) m = Math.max(m, s);
    return m;
  }

  has(seq) {
    return this.msgs.has(seq);
  }

  /** add shows a message; one already shown (same seq) is left alone. */
  add(msg) {
    if (this.msgs.has(msg.seq)) return null;
    this.empty.remove();
    const call = msg.role === "tool" ? this.calls.get(msg.tool_call_id) : null;
    if (call && !call.result && call.seq < msg.seq) return this.fold(call, msg);
    const el = h("article", { class: ["msg", "role-" + msg.role], id: `m-${msg.seq}`, dataset: { seq: msg.seq } },
      header(msg, this.actions), body(msg, this.files));
    if (msg.role === "tool") {
      el.append(h("div", { class: "small muted orphan-note" }, "answers ", h("code", null, msg.tool_call_id || "?"), " (no earlier call shown)"));
      if (msg.tool_call_id) this.orphans.set(msg.tool_call_id, msg.seq);
    }
    const tcs = Array.isArray(msg.tool_calls) ? msg.tool_calls : [];
    if (tcs.length) {
      const list = h("div", { class: "tool-calls" });
      for (const tc of tcs) list.append(this.callNode(tc, msg.seq));
      el.append(list);
    }
    this.insert(el, msg.seq);
    this.msgs.set(msg.seq, { msg, el });
    for (const tc of tcs) this.adopt(tc.id, msg.seq);
    return el;
  }

  /** fold shows a tool message inside the call it answers. */
  fold(call, msg) {
    const el = h("div", { class: ["tool-result", msg.is_error ? "is-error" : null], dataset: { seq: msg.seq } },
      header(msg, this.actions), body(msg, this.files));
    call.slot.replaceChildren(el);
    call.result = msg;
    call.summary.querySelector(".state").replaceWith(callState(msg));
    this.msgs.set(msg.seq, { msg, el, call });
    return call.details;
  }

  /** adopt moves a result shown on its own into its call, now that the call is here. */
  adopt(callID, callSeq) {
    const seq = this.orphans.get(callID);
    if (seq === undefined || seq <= callSeq) return;
    const m = this.msgs.get(seq);
    this.orphans.delete(callID);
    if (!m || m.call) return;
    this.msgs.delete(seq);
    this.detach(m.el, seq);
    this.fold(this.calls.get(callID), m.msg);
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

  articles() {
    return [...this.el.querySelectorAll(":scope > article")];
  }

  /** insert places an article by seq: appends and earlier pages go straight to their end. */
  insert(el, seq) {
    if (seq > this.lastArticle) {
      this.lastArticle = seq;
      this.firstArticle = Math.min(this.firstArticle, seq);
      this.el.append(el);
      return;
    }
    if (seq < this.firstArticle) {
      const first = this.el.querySelector(":scope > article");
      this.firstArticle = seq;
      this.el.insertBefore(el, first);
      return;
    }
    const next = this.articles().find((a) => Number(a.dataset.seq) > seq);
    this.el.insertBefore(el, next || null);
  }

  /** detach takes an article out and keeps the bounds right. */
  detach(el, seq) {
    el.remove();
    if (seq === this.lastArticle || seq === this.firstArticle) {
      const as = this.articles();
      this.lastArticle = as.length ? Number(as[as.length - 1].dataset.seq) : 0;
      this.firstArticle = as.length ? Number(as[0].dataset.seq) : Infinity;
    }
  }

  /** clear takes every message out (to show another part of the session); markers stay, placed again as messages come. */
  clear() {
    for (const a of this.articles()) a.remove();
    this.msgs.clear();
    this.calls.clear();
    this.orphans.clear();
    this.firstArticle = Infinity;
    this.lastArticle = 0;
  }

  /** prepend shows a page of messages older than every one shown, in seq order. */
  prepend(msgs) {
    for (const m of [...msgs].sort((a, b) => b.seq - a.seq)) this.add(m);
    this.placeMarkers();
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
    this.detach(m.el, seq);
    if (m.msg.role === "tool") this.orphans.delete(m.msg.tool_call_id);
    for (const tc of m.msg.tool_calls || []) this.calls.delete(tc.id);
  }

  /** rewindTo removes every message after seq, and compactions reaching past it. */
  rewindTo(seq) {
    for (const s of [...this.msgs.keys()].sort((a, b) => b - a)) if (s > seq) this.remove(s);
    for (const [id, mk] of this.markers) {
      if (mk.rewind && mk.through > seq) {
        mk.el.remove();
        this.markers.delete(id);
      }
    }
    if (this.msgs.size === 0) this.el.prepend(this.empty);
  }

  /** mark places a marker after the messages up to through (a rewind past through removes it when rewind is set). */
  mark(id, through, el, rewind) {
    this.markers.get(id)?.el.remove();
    this.markers.set(id, { through, el, rewind });
    this.place(el, through);
  }

  place(el, through) {
    const as = this.articles();
    const after = as.filter((a) => Number(a.dataset.seq) <= through).pop();
    if (after) this.el.insertBefore(el, after.nextSibling);
    else this.el.insertBefore(el, as[0] || null);
  }

  placeMarkers() {
    for (const { through, el } of this.markers.values()) this.place(el, through);
  }

  /** addCompaction marks where a compaction's summary ends. */
  addCompaction(c) {
    if (this.markers.has(c.id)) return;
    this.mark(c.id, c.through_seq, h("div", { class: "compaction-marker", dataset: { through: c.through_seq } },
      h("b", null, `Compaction through #${c.through_seq}`), ` · ${fmt.int(c.tokens)} tok`, c.model ? ` · ${c.model}` : "",
      ": ", fmt.short(plain(c.summary), 300)), true);
  }

  /** markFork marks where a fork's inherited messages end. */
  markFork(ses) {
    if (!ses.parent_id || ses.forked_at_seq === null || ses.forked_at_seq === undefined) return;
    const at = ses.forked_at_seq;
    this.mark("fork", at, h("div", { class: "fork-marker", id: "fork-marker", dataset: { through: at } },
      h("b", null, at ? `↑ #1–#${at} are ${ses.parent_id}'s` : `Forked from ${ses.parent_id} before its first message`),
      at ? [" (inherited, shared with ", link(route(["sessions", ses.parent_id], { seq: at }), ses.parent_id), ")"] : null,
      h("span", { class: "muted" }, " · this fork's own messages follow ↓")), false);
  }

  /** reveal scrolls to a message (opening the tool call it is folded into) and marks it; false when it is not shown. */
  reveal(seq) {
    const m = this.msgs.get(seq);
    if (!m) return false;
    if (m.call) m.call.details.open = true;
    const target = m.call ? m.call.details.closest("article") : m.el;
    for (const t of this.el.querySelectorAll(".target")) t.classList.remove("target");
    target.classList.add("target");
    m.el.scrollIntoView({ block: "center" });
    return true;
  }
}
