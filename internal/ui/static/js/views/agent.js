// One agent: its core memory blocks with their history and a diff between
// any two versions, its archival passages, and search over its conversations
// and its archival memory.

import { ApiError, all, describe, get, write } from "../api.js";
import { confirmAction } from "../actions.js";
import { lineDiff } from "../diff.js";
import { h, link, notice, replace, route } from "../dom.js";
import { embeddingState, meaningOff, noEndpoint, turnMeaningOff } from "../embedding.js";
import * as fmt from "../format.js";
import { messageHits, passageHits, sessionTitles } from "../hits.js";
import { canWrite } from "../identity.js";
import { setLive } from "../live.js";
import { markdown } from "../markdown.js";
import { tree } from "../tree.js";

function diffView(from, to) {
  const lines = lineDiff(from.value, to.value);
  const changed = lines.filter((l) => l.op !== " ").length;
  return h("div", null,
    h("p", { class: "small muted" }, `v${from.version} → v${to.version}: `,
      changed ? `${lines.filter((l) => l.op === "-").length} line(s) removed, ${lines.filter((l) => l.op === "+").length} added` : "no change in the text"),
    h("div", { class: "diff" }, lines.map((l) => h("div", { class: l.op === "+" ? "add" : l.op === "-" ? "del" : "same" }, `${l.op} ${l.text}`))));
}

function history(base, block, signal) {
  const el = h("div", { class: "history" }, h("p", { class: "loading" }, "Loading history…"));
  all(`${base}/blocks/${encodeURIComponent(block.label)}/history`, null, signal, 100).then(({ data }) => {
    if (data.length < 2) {
      replace(el, h("p", { class: "muted" }, "Only one version."));
      return;
    }
    const opt = (v, sel) => h("option", { value: v.version, selected: sel }, `v${v.version} · ${fmt.time(v.updated_at)}`);
    const fromSel = h("select", { class: "diff-from" }, data.map((v, i) => opt(v, i === 1)));
    const toSel = h("select", { class: "diff-to" }, data.map((v, i) => opt(v, i === 0)));
    const out = h("div", { class: "diff-out" });
    const show = () => {
      const pick = (sel) => data.find((v) => String(v.version) === sel.value);
      replace(out, diffView(pick(fromSel), pick(toSel)));
    };
    fromSel.addEventListener("change", show);
    toSel.addEventListener("change", show);
    replace(el,
      h("p", { class: "versions" }, h("b", null, `${data.length} versions`), " · compare ", fromSel, " with ", toSel),
      out);
    show();
  }).catch((err) => { if (!signal.aborted) replace(el, notice("bad", describe(err))); });
  return el;
}

/** sharing says where a shared block is kept and who else sees it. */
function sharing(b) {
  const others = (b.shared_with || []).filter((r) => !(r.agent_id === b.agent_id && r.label === b.label));
  if (!b.owner_agent_id && !others.length) return null;
  return h("span", { class: "badge shared", title: (b.shared_with || []).map((r) => `${r.agent_id}/${r.label}`).join(", ") },
    b.owner_agent_id ? `shared from ${b.owner_agent_id}/${b.owner_label}` : `shared with ${others.length} agent${others.length === 1 ? "" : "s"}`);
}

/** editBlock asks for the block's new text and writes it only if the block is still at the version shown. */
async function editBlock(base, b, reload) {
  const url = `${base}/blocks/${encodeURIComponent(b.label)}`;
  let stale = false;
  const r = await confirmAction({
    id: "edit-block", title: `Edit block ${b.label}`, confirm: "Save",
    what: [h("p", null, "Replace the text of block ", h("b", null, b.label), ` (version ${b.version}, at most ${fmt.int(b.limit)} characters)`,
      b.owner_agent_id ? [" kept by ", h("b", null, b.owner_agent_id), ": every agent it is attached to sees the change"] : null,
      `. Saved only if nobody changed it since version ${b.version}.`)],
    fields: [{ name: "value", label: "Text", value: b.value, textarea: true, rows: Math.min(20, Math.max(6, b.value.split("\n").length + 2)) }],
    run: ({ key, values }) => write("PUT", url, {
      body: { value: values.value, limit: b.limit, description: b.description, read_only: b.read_only },
      headers: { "If-Match": `"${b.version}"` }, idempotencyKey: key,
    }),
    retry: (err) => !(err instanceof ApiError && err.status === 412), // the same If-Match would fail again
    explain: (err) => {
      if (!(err instanceof ApiError) || err.status !== 412) return null;
      stale = true;
      return h("p", { class: "stale", id: "block-stale" }, h("b", null, "Changed meanwhile: reload."),
        " Someone wrote this block after the version shown; your text was not saved. ",
        h("button", { type: "button", class: "small", id: "block-reload", onclick: () => { document.getElementById("action-cancel")?.click(); } }, "Reload"),
        " (copy your text first if you want it).");
    },
  });
  if (r || stale) reload();
}

function blockCard(base, b, signal, editable, reload) {
  let hist = null;
  const toggle = h("button", { type: "button", class: "ghost history-toggle" }, "History");
  const card = h("div", { class: "block-card", dataset: { label: b.label, version: b.version } },
    h("header", null,
      h("h3", null, b.label),
      h("span", { class: "badge" }, `v${b.version}`),
      h("meter", { min: 0, max: b.limit, value: [...b.value].length, title: `${[...b.value].length} of ${b.limit} characters` }),
      h("span", { class: "small muted" }, `${fmt.int([...b.value].length)} / ${fmt.int(b.limit)} chars`),
      b.read_only ? h("span", { class: "badge warn" }, "read-only") : null,
      sharing(b),
      toggle,
      editable ? h("button", { type: "button", class: "ghost small act act-edit", onclick: () => editBlock(base, b, reload) }, "Edit…") : null),
    b.description ? h("p", { class: "small muted" }, b.description) : null,
    h("pre", { class: "block-value" }, b.value === "" ? "(empty)" : b.value));
  toggle.addEventListener("click", () => {
    if (hist) {
      hist.remove();
      hist = null;
      return;
    }
    hist = history(base, b, signal);
    card.append(hist);
  });
  return card;
}

export async function render(root, { params: [id], signal }) {
  setLive("off");
  const base = `/v1/agents/${encodeURIComponent(id)}`;
  let a;
  try {
    a = await get(base, null, signal);
  } catch (err) {
    replace(root, notice("bad", describe(err)), h("p", null, link("#/agents", "← Agents")));
    return;
  }
  const blocksEl = h("div", { id: "blocks" }, h("p", { class: "loading" }, "Loading…"));
  const passagesEl = h("ol", { id: "passages", class: "hits" });
  const passagesNote = h("div");
  const passagesMore = h("button", { type: "button", class: "ghost", hidden: true }, "Load more");
  const q = h("input", { id: "agent-search-q", name: "q", placeholder: "refund order", size: 28, required: true });
  const scope = h("select", { id: "agent-search-scope", name: "scope" },
    h("option", { value: "messages" }, "conversations"), h("option", { value: "archival" }, "archival memory"));
  const mode = h("select", { id: "agent-search-mode", name: "mode" },
    h("option", { value: "keyword" }, "words"), h("option", { value: "hybrid" }, "words and meaning"), h("option", { value: "vector" }, "meaning"));
  const modeField = h("label", { id: "agent-search-mode-field", hidden: meaningOff(id) }, "By", mode);
  const results = h("div", { id: "agent-search-results" });
  const modeNote = h("div");
  const titles = new Map();
  const form = h("form", { class: "filters", id: "agent-search" },
    h("label", null, "Search", q), h("label", null, "In", scope), modeField, h("button", { type: "submit" }, "Search"));
  const search = async () => {
    replace(results, h("p", { class: "loading" }, "Searching…"));
    const m = modeField.hidden ? "" : mode.value;
    try {
      if (scope.value === "archival") {
        replace(results, passageHits(await get(`${base}/archival/search`, { q: q.value, mode: m, limit: 20 }, signal)));
      } else {
        const res = await get(`${base}/messages/search`, { q: q.value, mode: m, limit: 20 }, signal);
        await sessionTitles(res.data.map((x) => x.session_id), signal, titles);
        replace(results, messageHits(res, titles));
      }
    } catch (err) {
      if (signal.aborted) return;
      if (noEndpoint(err)) {
        // No endpoint embeds for this agent: stop offering it, and search by words.
        turnMeaningOff(id);
        modeField.hidden = true;
        mode.value = "keyword";
        replace(modeNote, notice("warn", h("span", { id: "meaning-unavailable" }, "Search by meaning needs an embedding endpoint, and none is configured for this agent or server."),
          " Searched by words instead."));
        search();
        return;
      }
      replace(results, notice("bad", describe(err)));
    }
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    search();
  });

  replace(root,
    h("p", { class: "small" }, link("#/agents", "← Agents")),
    h("div", { class: "page-head" }, h("h1", { id: "agent-name" }, a.name), h("span", { class: "mono small muted" }, a.id),
      link(route(["sessions"], { agent_id: a.id }), "its sessions →")),
    h("dl", { class: "kv" },
      h("dt", null, "Model"), h("dd", null, a.model || "—"),
      h("dt", null, "Type"), h("dd", null, a.agent_type),
      h("dt", null, "Tags"), h("dd", null, a.tags.length ? a.tags.map((t) => h("span", { class: "tag" }, t)) : "—"),
      h("dt", null, "Tools"), h("dd", null, a.tool_ids.length ? a.tool_ids.join(", ") : "—"),
      h("dt", null, "Updated"), h("dd", null, fmt.time(a.updated_at)),
      h("dt", null, "Metadata"), h("dd", null, Object.keys(a.metadata || {}).length ? tree(a.metadata, 1) : "{}")),
    a.system ? h("details", { class: "panel" }, h("summary", null, "System prompt"), markdown(a.system)) : null,
    h("div", { class: "split" },
      h("section", { class: "panel" }, h("h2", null, "Core memory"), blocksEl),
      h("aside", null,
        h("section", { class: "panel" }, h("h2", null, "Search"), form, modeNote, results),
        h("section", { class: "panel" }, h("h2", null, "Archival memory"), passagesNote, passagesEl, passagesMore))));

  const editable = await canWrite();
  const loadBlocks = () => get(`${base}/blocks`, null, signal).then(({ data }) => {
    replace(blocksEl, data.length ? data.map((b) => blockCard(base, b, signal, editable, loadBlocks)) : h("p", { class: "muted" }, "No blocks."));
  }).catch((err) => { if (!signal.aborted) replace(blocksEl, notice("bad", describe(err))); });
  loadBlocks();

  let cursor = "";
  const loadPassages = async () => {
    passagesMore.disabled = true;
    try {
      const page = await get(`${base}/archival`, { limit: 50, cursor }, signal);
      for (const p of page.data) {
        passagesEl.append(h("li", { dataset: { id: p.id } },
          h("div", { class: "text" }, markdown(p.content)),
          h("div", { class: "small muted" }, p.tags.map((t) => h("span", { class: "tag" }, t)), fmt.time(p.created_at), " ", embeddingState(p))));
      }
      if (!passagesEl.children.length) replace(passagesNote, h("p", { class: "muted" }, "No passages."));
      cursor = page.has_more ? page.next_cursor : "";
      passagesMore.hidden = !cursor;
    } catch (err) {
      if (!signal.aborted) replace(passagesNote, notice("bad", describe(err)));
    } finally {
      passagesMore.disabled = false;
    }
  };
  passagesMore.addEventListener("click", loadPassages);
  loadPassages();
}
