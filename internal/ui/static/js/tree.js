// A JSON value as a collapsible tree: objects and arrays are <details>,
// open to a given depth; every key and value is text.

import { h } from "./dom.js";

function leaf(v) {
  if (v === null) return h("span", { class: "null" }, "null");
  switch (typeof v) {
    case "string": return h("span", { class: "str" }, JSON.stringify(v));
    case "number": return h("span", { class: "num" }, String(v));
    case "boolean": return h("span", { class: "bool" }, String(v));
    default: return h("span", null, String(v));
  }
}

function node(label, v, depth, open) {
  const keyEl = label === null ? null : h("span", { class: "key" }, label, ": ");
  if (v === null || typeof v !== "object") return h("div", { class: "leaf" }, keyEl, leaf(v));
  const isArr = Array.isArray(v);
  const entries = isArr ? v.map((x, i) => [String(i), x]) : Object.entries(v);
  const summary = h("summary", null, keyEl,
    h("span", { class: "count" }, isArr ? `[${entries.length}]` : `{${entries.length}}`));
  const d = h("details", { open: depth < open }, summary);
  for (const [k, x] of entries) d.append(node(k, x, depth + 1, open));
  if (entries.length === 0) summary.append(h("span", { class: "count" }, " empty"));
  return d;
}

/** tree renders value; levels below openDepth start open. */
export function tree(value, openDepth = 1) {
  return h("div", { class: "tree" }, node(null, value, 0, openDepth));
}
