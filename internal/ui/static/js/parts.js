// A message's content: a string, or typed parts (text, image, file,
// reasoning, refusal). Images stored as Logbook files are fetched with the
// key and shown from blob: URLs; other URLs are never loaded, only named.

import { blob, describe } from "./api.js";
import { h } from "./dom.js";
import * as fmt from "./format.js";
import { markdown } from "./markdown.js";

// A tool's output longer than this is folded: its first line shows, the
// rest opens on demand.
const FOLD_LINES = 12;
const FOLD_CHARS = 1500;

/** Files is one view's cache of file blobs, revoked when the view ends. */
export class Files {
  constructor(signal) {
    this.signal = signal;
    this.urls = new Map(); // file_id → Promise<string>
    signal.addEventListener("abort", () => {
      for (const p of this.urls.values()) p.then((u) => URL.revokeObjectURL(u)).catch(() => {});
    }, { once: true });
  }

  url(id) {
    if (!this.urls.has(id)) {
      this.urls.set(id, blob(`/v1/files/${encodeURIComponent(id)}`, this.signal).then((b) => URL.createObjectURL(b)));
    }
    return this.urls.get(id);
  }
}

/** toolOutput shows what a tool answered: JSON pretty-printed, anything else as it is, in monospace; long output folded. */
export function toolOutput(text, cls) {
  let shown = text;
  let json = false;
  const t = text.trim();
  if ((t.startsWith("{") && t.endsWith("}")) || (t.startsWith("[") && t.endsWith("]"))) {
    try {
      shown = JSON.stringify(JSON.parse(t), null, 2);
      json = true;
    } catch {
      /* not JSON after all: as it is */
    }
  }
  const pre = h("pre", { class: ["tool-output", json ? "json" : null] }, shown);
  const lines = shown.split("\n").length;
  if (lines <= FOLD_LINES && shown.length <= FOLD_CHARS) return h("div", { class: ["part", "text", "output", cls] }, pre);
  const first = fmt.short(shown.split("\n", 1)[0], 100);
  return h("div", { class: ["part", "text", "output", cls] },
    h("details", { class: "fold" },
      h("summary", null, h("code", null, first), h("span", { class: "muted small" }, ` ${fmt.int(lines)} lines, ${fmt.int(shown.length)} characters${json ? ", JSON" : ""}`)),
      pre));
}

function textPart(text, cls, tool) {
  if (tool) return toolOutput(text, cls);
  if (cls === "refusal") return h("div", { class: ["part", "text", cls] }, text);
  return h("div", { class: ["part", "text", cls] }, markdown(text));
}

function imagePart(p, files) {
  const el = h("div", { class: "part image" });
  if (p.file_id) {
    const img = h("img", { alt: `image ${p.file_id}`, dataset: { fileId: p.file_id } });
    el.append(img, h("div", { class: "small muted" }, p.file_id, p.detail ? ` · detail ${p.detail}` : ""));
    files.url(p.file_id).then((u) => { img.src = u; }).catch((err) => {
      if (!files.signal.aborted) el.append(h("div", { class: "error small" }, "could not load: ", describe(err)));
    });
  } else if (typeof p.url === "string" && /^data:image\//i.test(p.url)) {
    el.append(h("img", { alt: "inline image", src: p.url }));
  } else {
    el.append(h("div", { class: "muted" }, "image at ", h("code", null, fmt.short(p.url || "?", 200)), " (not loaded: the dashboard fetches nothing from other origins)"));
  }
  return el;
}

function filePart(p, files) {
  const name = p.filename || p.file_id || "file";
  const el = h("div", { class: "part file" }, h("span", { class: "badge" }, "file"), h("b", null, name), h("span", { class: "muted small" }, p.media_type || ""));
  if (p.file_id) {
    el.append(h("button", { type: "button", class: "ghost", onclick: async () => {
      const u = await files.url(p.file_id);
      const a = h("a", { href: u, download: name });
      document.body.append(a);
      a.click();
      a.remove();
    } }, "Download"));
  } else if (p.url) {
    el.append(h("code", { class: "small" }, fmt.short(p.url, 120)));
  }
  return el;
}

function reasoningPart(p) {
  const summary = Array.isArray(p.summary) ? p.summary : [];
  const bits = [];
  if (summary.length) bits.push(`${summary.length} summary item${summary.length === 1 ? "" : "s"}`);
  if (p.text) bits.push(`${fmt.int(p.text.length)} chars of thinking`);
  if (p.encrypted_content) bits.push("encrypted");
  return h("details", { class: "part reasoning" },
    h("summary", null, "Reasoning", bits.length ? ` (${bits.join(", ")})` : ""),
    summary.map((t) => h("p", { class: "text" }, t)),
    p.text ? h("pre", null, p.text) : null,
    p.encrypted_content ? h("div", { class: "small muted" }, `encrypted_content: ${fmt.int(p.encrypted_content.length)} chars`) : null,
    p.signature ? h("div", { class: "small muted" }, `signature: ${fmt.short(p.signature, 40)}`) : null);
}

/**
 * content renders a message's content (or a compaction's summary): text as
 * Markdown, or, for a tool's message (tool: true), as the tool's output.
 */
export function content(c, files, { tool = false } = {}) {
  if (typeof c === "string") {
    return c === "" ? h("div", { class: "part empty" }, "(no text)") : textPart(c, null, tool);
  }
  if (!Array.isArray(c)) return textPart(JSON.stringify(c), null, true);
  return h("div", { class: "parts" }, c.map((p) => {
    switch (p?.type) {
      case "text": return textPart(p.text ?? "", null, tool);
      case "refusal": return textPart(p.text ?? "", "refusal");
      case "image": return imagePart(p, files);
      case "file": return filePart(p, files);
      case "reasoning": return reasoningPart(p);
      default: return h("pre", { class: "part" }, fmt.json(p));
    }
  }));
}

/** plain is content as one line of text, for summaries. */
export function plain(c) {
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return "";
  return c.map((p) => (p?.type === "text" || p?.type === "refusal" ? p.text : p?.type ? `[${p.type}]` : "")).join(" ");
}
