// Markdown as messages use it, rendered without ever parsing HTML: the text
// is cut into blocks and spans here, and each becomes an element of a short
// list (p, br, strong, em, del, code, pre, ul, ol, li, blockquote, hr, a)
// whose text goes in as text nodes, so markup in a message stays text and
// nothing it holds can run. Links are made only to http and https URLs, with
// rel="noopener noreferrer"; any other is shown as its text. Raw HTML is not
// a Markdown feature here: "<b>" is the four characters.

import { h } from "./dom.js";

// Past these sizes a text is shown as it is: the span patterns are cheap on
// a paragraph, not on a megabyte with thousands of unclosed "**".
const MAX_TEXT = 50000;
const MAX_PARAGRAPH = 4000;

/** safeURL answers the URL as a string when it is absolute http(s), else null. */
export function safeURL(raw) {
  let u;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
}

/** link is [text](raw): the text as Markdown, linked when raw is http(s). */
function link(text, raw) {
  const href = safeURL(raw);
  if (!href) return [inline(text), h("span", { class: "md-nolink" }, ` (${raw})`)];
  // A link inside a link's text would be a link in a link: its text stands.
  const label = inline(text).map((n) => (n instanceof Element && n.tagName === "A" ? n.textContent : n));
  return h("a", { href, rel: "noopener noreferrer", target: "_blank", class: "md-link" }, label);
}

/** autolink is a URL written out: its text as it is (read as Markdown, it would be this URL again). */
function autolink(raw) {
  const href = safeURL(raw);
  if (!href) return raw;
  return h("a", { href, rel: "noopener noreferrer", target: "_blank", class: "md-link" }, raw);
}

// The span patterns, tried at once; the one that matches first in the text wins.
const SPANS = [
  { re: /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/y, make: (m) => h("code", null, m[2]) },
  { re: /\[([^\[\]\n]{1,1000})\]\(\s*<?([^()<>\s]{1,2000})>?(?:\s+"[^"\n]*")?\s*\)/y, make: (m) => link(m[1], m[2]) },
  { re: /<(https?:\/\/[^<>\s]{1,2000})>/y, make: (m) => autolink(m[1]) },
  { re: /https?:\/\/[^\s<>()\[\]"']{1,2000}[^\s<>()\[\]"'.,;:!?]/y, make: (m) => autolink(m[0]) },
  { re: /\*\*(?=\S)([\s\S]*?\S)\*\*/y, make: (m) => h("strong", null, inline(m[1])) },
  { re: /__(?=[^\s_])([\s\S]*?[^\s_])__(?![A-Za-z0-9_])/y, make: (m) => h("strong", null, inline(m[1])) },
  { re: /~~(?=\S)([\s\S]*?\S)~~/y, make: (m) => h("del", null, inline(m[1])) },
  { re: /\*(?=[^\s*])([\s\S]*?[^\s*])\*(?!\*)/y, make: (m) => h("em", null, inline(m[1])) },
  { re: /_(?=[^\s_])([\s\S]*?[^\s_])_(?![A-Za-z0-9_])/y, make: (m) => h("em", null, inline(m[1])) },
];
// Where a span may start: a character that opens one. "_" only at the start
// of a run of them after a non-word character, and a run closes only before
// one, so that snake_case_names and a.__dunder stay as they are.
const OPENERS = /[`\[<*~]|https?:\/\/|(?:^|(?<=[^A-Za-z0-9_]))_/g;

/** inline renders one paragraph's text: spans, and line breaks as <br>. */
export function inline(text) {
  const out = [];
  let plain = "";
  const flush = () => {
    if (!plain) return;
    plain.split("\n").forEach((line, i) => {
      if (i > 0) out.push(h("br"));
      if (line) out.push(line);
    });
    plain = "";
  };
  OPENERS.lastIndex = 0;
  let at = 0;
  for (let m; (m = OPENERS.exec(text)); ) {
    const i = m.index;
    if (i < at) continue;
    let made = null;
    for (const s of SPANS) {
      s.re.lastIndex = i;
      const sm = s.re.exec(text);
      if (sm) {
        made = { node: s.make(sm), end: i + sm[0].length };
        break;
      }
    }
    if (!made) {
      OPENERS.lastIndex = i + m[0].length || i + 1;
      continue;
    }
    plain += text.slice(at, i);
    flush();
    out.push(made.node);
    at = made.end;
    OPENERS.lastIndex = at;
  }
  plain += text.slice(at);
  flush();
  return out;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,6})([-*+]|\d{1,9}[.)])\s+(.*)$/;

function paragraph(lines) {
  const text = lines.join("\n");
  return h("p", null, text.length > MAX_PARAGRAPH ? text : inline(text));
}

function list(items, ordered, start) {
  const attrs = ordered && start !== 1 ? { start } : null;
  return h(ordered ? "ol" : "ul", attrs, items.map((it) => h("li", null, blocks(it.join("\n")))));
}

/** blocks renders text as a list of block elements. */
function blocks(text) {
  const lines = text.split("\n");
  const out = [];
  let para = [];
  const endPara = () => {
    if (para.length) out.push(paragraph(para));
    para = [];
  };
  for (let i = 0; i < lines.length; ) {
    const line = lines[i];
    let m;
    if ((m = FENCE.exec(line))) {
      endPara();
      const close = new RegExp("^ {0,3}" + (m[1][0] === "`" ? "`" : "~") + "{" + m[1].length + ",}\\s*$");
      const body = [];
      for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
      i++; // the closing fence, or the end
      out.push(h("pre", { class: "md-code", dataset: m[2] ? { lang: m[2] } : null }, h("code", null, body.join("\n"))));
      continue;
    }
    if (line.trim() === "") {
      endPara();
      i++;
      continue;
    }
    if ((m = HEADING.exec(line))) {
      endPara();
      out.push(h("p", { class: ["md-h", "md-h" + m[1].length] }, h("strong", null, inline(m[2]))));
      i++;
      continue;
    }
    if (RULE.test(line) && !para.length) {
      out.push(h("hr"));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      endPara();
      const body = [];
      for (; i < lines.length && (m = QUOTE.exec(lines[i])); i++) body.push(m[1]);
      out.push(h("blockquote", null, blocks(body.join("\n"))));
      continue;
    }
    if ((m = ITEM.exec(line))) {
      endPara();
      const ordered = /\d/.test(m[2]);
      const start = ordered ? parseInt(m[2], 10) : 1;
      const indent = m[1].length;
      const items = [];
      for (; i < lines.length; i++) {
        const l = lines[i];
        const im = ITEM.exec(l);
        if (im && im[1].length <= indent + 1 && /\d/.test(im[2]) === ordered) {
          items.push([im[3]]);
        } else if (l.trim() === "") {
          const next = lines[i + 1];
          if (next === undefined || !/^\s/.test(next) && !ITEM.test(next)) break;
          items[items.length - 1].push("");
        } else if (/^\s/.test(l) || !(FENCE.test(l) || HEADING.test(l) || QUOTE.test(l) || ITEM.test(l))) {
          items[items.length - 1].push(l.replace(/^ {1,6}/, "")); // its continuation, or a nested list
        } else {
          break;
        }
      }
      out.push(list(items, ordered, start));
      continue;
    }
    para.push(line);
    i++;
  }
  endPara();
  return out;
}

/** markdown renders a message's text; a very long one is shown as it is. */
export function markdown(text) {
  const s = String(text ?? "").replace(/\r\n?/g, "\n");
  if (s.length > MAX_TEXT) return h("div", { class: "md md-plain" }, s);
  return h("div", { class: "md" }, blocks(s));
}
