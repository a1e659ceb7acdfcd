// A problem+json answer (RFC 9457) shown whole: its status and title, its
// stable code, its detail, and each field it names with what is wrong there.

import { ApiError } from "./api.js";
import { h } from "./dom.js";

/** problemView renders an error: an ApiError as its problem, anything else as its message. */
export function problemView(err, ...extra) {
  if (!(err instanceof ApiError)) {
    return h("div", { class: "problem", role: "alert" }, h("b", { class: "problem-title" }, String(err?.message || err)), extra);
  }
  const p = err.problem || {};
  const fields = Array.isArray(p.errors) ? p.errors : [];
  return h("div", { class: "problem", role: "alert", dataset: { status: err.status, code: err.code } },
    h("div", null,
      h("b", { class: "problem-title" }, `${err.status} ${p.title || "Error"}`),
      err.code ? [" ", h("code", { class: "problem-code" }, err.code)] : null),
    p.detail ? h("p", { class: "problem-detail" }, p.detail) : null,
    p.from || p.to ? h("p", { class: "small" }, `from ${p.from || "?"} to ${p.to || "?"}`) : null,
    fields.length ? h("ul", { class: "problem-fields" }, fields.map((f) =>
      h("li", { dataset: { field: f.field } }, h("code", null, f.field), " ", f.message))) : null,
    extra);
}
