// Bar charts drawn as SVG by hand: columns over time (one per day), and
// horizontal bars for categories (agents, models), whose names may be long.

import { h, s } from "./dom.js";

/** nice rounds a maximum up to 1, 2 or 5 times a power of ten, for the axis. */
function nice(max) {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

/**
 * columns draws one column per item ({label, value}), in order.
 * fmt formats values; cls is the bars' extra class.
 */
export function columns(items, { fmt, cls = "", title = "" }) {
  if (!items.length) return h("div", { class: "chart" }, h("p", { class: "empty" }, "No data in this range."));
  const W = 640;
  const H = 200;
  const left = 56;
  const bottom = 36;
  const top = 12;
  const max = nice(Math.max(...items.map((i) => i.value)));
  const step = (W - left - 8) / items.length;
  const bw = Math.max(1, step * 0.75);
  const y = (v) => top + (H - top - bottom) * (1 - v / max);
  const every = Math.ceil(items.length / 10);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title },
    s("line", { class: "axis", x1: left, y1: H - bottom, x2: W - 4, y2: H - bottom }),
    [0, 0.5, 1].map((f) => [
      s("line", { class: "axis", x1: left - 4, y1: y(max * f), x2: left, y2: y(max * f) }),
      s("text", { x: left - 6, y: y(max * f) + 4, "text-anchor": "end" }, fmt(max * f)),
    ]),
    items.map((it, i) => {
      const x = left + i * step + (step - bw) / 2;
      return s("g", null,
        s("rect", { class: ["bar", cls], x, y: y(it.value), width: bw, height: Math.max(0, H - bottom - y(it.value)), dataset: { key: it.label, value: it.value } },
          s("title", null, `${it.label}: ${fmt(it.value)}`)),
        i % every === 0 ? s("text", { x: x + bw / 2, y: H - bottom + 14, "text-anchor": "middle" }, it.label.slice(5)) : null);
    }));
  return h("div", { class: "chart" }, svg);
}

/** bars draws one horizontal bar per item ({label, value}), in order. */
export function bars(items, { fmt, cls = "", title = "" }) {
  if (!items.length) return h("div", { class: "chart" }, h("p", { class: "empty" }, "No data in this range."));
  const W = 640;
  const row = 24;
  const labelW = 170;
  const valueW = 90;
  const H = items.length * row + 8;
  const max = Math.max(...items.map((i) => i.value)) || 1;
  const span = W - labelW - valueW - 8;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title },
    items.map((it, i) => {
      const y = 4 + i * row;
      const w = Math.max(it.value > 0 ? 2 : 0, span * (it.value / max));
      const label = it.label.length > 26 ? it.label.slice(0, 25) + "…" : it.label;
      return s("g", null,
        s("text", { x: labelW - 6, y: y + 15, "text-anchor": "end" }, label, s("title", null, it.label)),
        s("rect", { class: ["bar", cls], x: labelW, y: y + 3, width: w, height: row - 8, dataset: { key: it.label, value: it.value } },
          s("title", null, `${it.label}: ${fmt(it.value)}`)),
        s("text", { class: "value", x: labelW + w + 6, y: y + 15 }, fmt(it.value)));
    }));
  return h("div", { class: "chart" }, svg);
}
