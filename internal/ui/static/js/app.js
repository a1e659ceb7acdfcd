// The dashboard's entry point: a hash router (#/sessions, #/sessions/{id},
// #/agents, #/agents/{id}, #/items, #/search, #/usage) that gives each view a fresh
// AbortController, aborted when the route changes, so that a view's requests
// and live feed end with it.

import { askForKey, key, onKeyChange } from "./auth.js";
import { h, notice, replace } from "./dom.js";
import { identity } from "./identity.js";
import { setLive } from "./live.js";
import * as sessions from "./views/sessions.js";
import * as session from "./views/session.js";
import * as agents from "./views/agents.js";
import * as agent from "./views/agent.js";
import * as items from "./views/items.js";
import * as search from "./views/search.js";
import * as usage from "./views/usage.js";

const routes = [
  { re: /^\/sessions\/?$/, view: sessions, nav: "sessions" },
  { re: /^\/sessions\/([^/]+)$/, view: session, nav: "sessions" },
  { re: /^\/agents\/?$/, view: agents, nav: "agents" },
  { re: /^\/agents\/([^/]+)$/, view: agent, nav: "agents" },
  { re: /^\/items\/?$/, view: items, nav: "items" },
  { re: /^\/search\/?$/, view: search, nav: "search" },
  { re: /^\/usage\/?$/, view: usage, nav: "usage" },
];

let current = null;

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/sessions";
  const [path, qs] = raw.split("?", 2);
  return { path, query: new URLSearchParams(qs || "") };
}

async function show() {
  current?.abort();
  const ctl = new AbortController();
  current = ctl;
  setLive("off");
  const root = document.getElementById("view");
  const { path, query } = parseHash();
  const match = routes.map((r) => ({ r, m: r.re.exec(path) })).find((x) => x.m);
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", Boolean(match) && a.dataset.nav === match.r.nav);
  }
  if (!match) {
    replace(root, notice("bad", "No such page: ", path, ". ", h("a", { href: "#/sessions" }, "Sessions")));
    return;
  }
  const params = match.m.slice(1).map((p) => decodeURIComponent(p));
  replace(root, h("p", { class: "loading" }, "Loading…"));
  try {
    await match.r.view.render(root, { params, query, signal: ctl.signal });
  } catch (err) {
    if (ctl.signal.aborted) return;
    console.warn("view failed", err);
    replace(root, notice("bad", "This page could not be shown: ", String(err?.message || err)));
  }
}

function keyButton() {
  const b = document.getElementById("key-button");
  b.textContent = key() ? "Key ✓" : "Key";
  b.title = key() ? "A key is set for this tab" : "No key: trying the server in open mode";
}

document.getElementById("key-button").addEventListener("click", async () => {
  await askForKey(key() ? "Replace or forget the key this tab uses." : "Set the key this tab sends.", true);
  show();
});
// scopeBadge says what the key may do, as the server says (GET /v1/whoami).
async function scopeBadge() {
  const el = document.getElementById("scope");
  try {
    const who = await identity();
    el.hidden = Boolean(who.unknown);
    el.dataset.scope = who.scope;
    el.textContent = who.open_mode ? "open mode" : `${who.scope} key`;
    el.title = who.open_mode ? "No key: this server is in open mode (every scope)"
      : `tenant ${who.tenant}${who.user_id ? `, bound to user ${who.user_id}` : ""}; key ${who.key_id}`;
  } catch {
    el.hidden = true;
  }
}

document.getElementById("key-origin").textContent = location.origin;
onKeyChange(keyButton);
onKeyChange(() => scopeBadge());
keyButton();
scopeBadge();
window.addEventListener("hashchange", show);
show();
