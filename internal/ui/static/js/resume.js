// The resume report (GET /v1/sessions/{id}/resume): whether a new worker can
// take the session over, and what is wrong if not, with each repair.

import { h } from "./dom.js";
import * as fmt from "./format.js";

function problem(p, kind, onSeq) {
  const r = p.repair || {};
  return h("li", { class: "problem", dataset: { code: p.code } },
    h("span", { class: ["badge", kind] }, p.code),
    p.seq !== null && p.seq !== undefined ? h("span", null, " at ", h("button", { type: "button", class: "ghost seq-link", onclick: () => onSeq?.(p.seq) }, `#${p.seq}`)) : null,
    h("div", null, p.detail),
    h("div", { class: "small muted" }, "repair: ", h("b", null, r.action || "—"),
      r.automatic ? " (automatic: POST …/repair applies it)" : " (the runtime decides)",
      r.method && r.path ? h("span", null, " · ", h("code", null, `${r.method} ${r.path}`)) : null,
      r.body ? h("pre", null, fmt.json(r.body)) : null));
}

/**
 * resumeReport renders the report; onSeq(seq) shows a message a problem
 * names; onRepair, when given (a write key), is what the button that applies
 * the automatic repairs does.
 */
export function resumeReport(r, onSeq, onRepair) {
  const v = r.validation || { ok: true, problems: [], warnings: [] };
  const ck = r.checkpoint;
  const automatic = v.problems.concat(v.warnings).filter((p) => p.repair?.automatic).length;
  return h("div", { class: "resume", id: "resume" },
    h("p", null,
      v.ok ? h("span", { class: "badge ok", id: "resume-status" }, "ready to resume")
        : h("span", { class: "badge bad", id: "resume-status" }, `${v.problems.length} problem${v.problems.length === 1 ? "" : "s"}`),
      v.warnings.length ? h("span", { class: "badge warn" }, ` ${v.warnings.length} warning${v.warnings.length === 1 ? "" : "s"}`) : null,
      onRepair && automatic ? [" ", h("button", { type: "button", class: "small act", id: "resume-repair", onclick: onRepair },
        `Apply ${automatic} repair${automatic === 1 ? "" : "s"}…`)] : null),
    h("dl", { class: "kv" },
      h("dt", null, "Checkpoint"), h("dd", null, ck ? `iteration ${ck.iteration} at #${ck.last_seq}` : "none"),
      h("dt", null, "Since it"), h("dd", null, `${fmt.int(r.messages_since_checkpoint?.length || 0)} message(s)${r.more_messages ? " and more" : ""}`),
      h("dt", null, "Pending calls"), h("dd", null, (r.pending_tool_calls || []).length
        ? (r.pending_tool_calls || []).map((c) => h("div", null, h("code", null, c.id), " ", c.tool_name))
        : "none"),
      h("dt", null, "Schema version"), h("dd", null, String(v.schema_version ?? "—"))),
    v.problems.length ? h("ul", { class: "problems" }, v.problems.map((p) => problem(p, "bad", onSeq))) : null,
    v.warnings.length ? h("ul", { class: "problems" }, v.warnings.map((p) => problem(p, "warn", onSeq))) : null);
}
