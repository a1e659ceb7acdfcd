// Building DOM nodes from data without ever parsing it as HTML: text goes in
// as text nodes, attributes through setAttribute, handlers as functions.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") {
      el.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    } else if (name === "text") {
      el.textContent = String(value);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "style" || name === "innerHTML" || name === "srcdoc" || name.startsWith("on")) {
      throw new Error(`dom: refusing attribute ${name}`);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

/** append adds children: nodes, strings (as text), arrays of them; skips null and false. */
export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

/** h makes an HTML element: h("a", {href: "#/x", class: "y"}, "text", child). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** s makes an SVG element. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** replace swaps el's children for these. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** link is an in-page route link; route parts are encoded here, once. */
export function link(route, ...children) {
  return h("a", { href: route }, ...children);
}

/** route builds "#/a/b?x=1" from parts and query values, encoding each. */
export function route(parts, query) {
  let r = "#/" + parts.map((p) => encodeURIComponent(p)).join("/");
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const qs = q.toString();
  return qs ? r + "?" + qs : r;
}

/** snippet renders a search snippet, whose matched words come in [ ], as text with <mark>s. */
export function snippet(text) {
  const out = h("span", { class: "snippet" });
  const re = /\[([^\[\]]*)\]/g;
  let last = 0;
  for (let m; (m = re.exec(text)); ) {
    if (m.index > last) out.append(text.slice(last, m.index));
    out.append(h("mark", null, m[1]));
    last = re.lastIndex;
  }
  if (last < text.length) out.append(text.slice(last));
  return out;
}

/** flash marks a node as just changed, for a moment. */
export function flash(el) {
  el.classList.remove("fresh");
  void el.offsetWidth; // restart the animation
  el.classList.add("fresh");
}

/** notice is a message box: kind is "", "bad" or "warn". */
export function notice(kind, ...children) {
  return h("div", { class: ["notice", kind], role: kind === "bad" ? "alert" : "status" }, ...children);
}
