// One session: its messages as a conversation (following new ones live), its
// checkpoints as a tree (namespaces, parents, pending writes, states),
// compactions, the fork tree and the resume report.

import { all, describe, get } from "../api.js";
import { checkpointTree } from "../checkpoints.js";
import { Conversation } from "../conversation.js";
import { flash, h, link, notice, replace, route } from "../dom.js";
import { forkTree } from "../forks.js";
import * as fmt from "../format.js";
import { setLive } from "../live.js";
import { Files, plain } from "../parts.js";
import { resumeReport } from "../resume.js";
import { follow } from "../sse.js";
import { tree } from "../tree.js";

// A longer session shows its newest messages only.
const MAX_MESSAGES = 5000;

function debounce(f, ms) {
  let t = 0;
  return () => {
    clearTimeout(t);
    t = setTimeout(f, ms);
  };
}

function head(ses) {
  return h("div", null,
    h("div", { class: "page-head" },
      h("h1", { id: "session-title" }, ses.title || ses.id),
      h("span", { class: ["badge", "status-" + ses.status], id: "session-status" }, ses.status),
      h("span", { class: "mono small muted" }, ses.id)),
    h("div", { class: "stats" },
      h("div", { class: "stat" }, h("b", { id: "session-messages" }, fmt.int(ses.message_count)), h("span", null, "messages")),
      h("div", { class: "stat" }, h("b", null, `#${ses.last_seq}`), h("span", null, "last seq")),
      h("div", { class: "stat" }, h("b", { id: "session-tokens" }, fmt.int(ses.total_tokens)), h("span", null, "tokens")),
      h("div", { class: "stat" }, h("b", { id: "session-cost" }, fmt.cost(ses.total_cost)), h("span", null, "cost")),
      h("div", { class: "stat" }, h("b", null, fmt.int(ses.turn_count)), h("span", null, "turns"))),
    h("dl", { class: "kv" },
      h("dt", null, "Agent"), h("dd", null, ses.agent_id ? link(route(["agents", ses.agent_id]), ses.agent_id) : "—"),
      ses.parent_id ? [h("dt", null, "Forked from"), h("dd", null, link(route(["sessions", ses.parent_id]), ses.parent_id), ` at #${ses.forked_at_seq}`)] : null,
      h("dt", null, "Created"), h("dd", null, fmt.time(ses.created_at)),
      h("dt", null, "Updated"), h("dd", null, fmt.time(ses.updated_at)),
      ses.closed_at ? [h("dt", null, "Closed"), h("dd", null, fmt.time(ses.closed_at))] : null,
      h("dt", null, "Metadata"), h("dd", null, Object.keys(ses.metadata || {}).length ? tree(ses.metadata, 1) : "{}")));
}

function compactionItem(c) {
  return h("li", { dataset: { id: c.id } },
    h("b", null, `through #${c.through_seq}`), ` · ${fmt.int(c.tokens)} tok`, c.model ? ` · ${c.model}` : "", ` · ${fmt.time(c.created_at)}`,
    h("div", null, fmt.short(plain(c.summary), 500)));
}

export async function render(root, { params: [id], query, signal }) {
  const base = `/v1/sessions/${encodeURIComponent(id)}`;
  const files = new Files(signal);
  const conv = new Conversation(files);
  const headEl = h("div", { id: "session-head" }, h("p", { class: "loading" }, "Loading…"));
  const convNote = h("div");
  const resumeEl = h("div", null, h("p", { class: "loading" }, "Loading…"));
  const forksEl = h("div", { id: "forks" }, h("p", { class: "loading" }, "Loading…"));
  const checkpointsEl = h("div", { id: "checkpoints" }, h("p", { class: "loading" }, "Loading…"));
  const compactionsEl = h("div", { id: "compactions" }, h("p", { class: "loading" }, "Loading…"));
  const checkpointCount = h("span", { class: "muted" });
  replace(root,
    h("p", { class: "small" }, link("#/sessions", "← Sessions")),
    headEl,
    h("div", { class: "split" },
      h("section", { class: "panel" }, h("h2", null, "Conversation ", h("span", { class: "muted", id: "conversation-count" })), convNote, conv.el),
      h("aside", null,
        h("section", { class: "panel" }, h("h2", null, "Resume report ",
          h("button", { type: "button", class: "ghost small", onclick: () => loadResume() }, "Refresh")), resumeEl),
        h("section", { class: "panel" }, h("h2", null, "Forks"), forksEl),
        h("section", { class: "panel" }, h("h2", null, "Checkpoints ", checkpointCount), checkpointsEl),
        h("section", { class: "panel" }, h("h2", null, "Compactions"), compactionsEl))));

  const count = () => {
    document.getElementById("conversation-count").textContent = `(${fmt.int(conv.size)})`;
  };
  const failed = (el) => (err) => {
    if (!signal.aborted) replace(el, notice("bad", describe(err)));
  };

  let shown = "";
  const showHead = (ses) => {
    const json = JSON.stringify(ses);
    if (json !== shown) replace(headEl, head(ses)); // unchanged: leave what is open open
    shown = json;
  };
  const loadSession = async () => {
    const ses = await get(base, null, signal);
    showHead(ses);
    return ses;
  };
  const loadResume = () => get(`${base}/resume`, null, signal)
    .then((r) => replace(resumeEl, resumeReport(r, (seq) => conv.reveal(seq))))
    .catch(failed(resumeEl));
  const loadCheckpoints = () => all(`${base}/checkpoints`, null, signal, 200)
    .then(({ data }) => {
      checkpointCount.textContent = `(${data.length})`;
      replace(checkpointsEl, data.length ? checkpointTree(data) : h("p", { class: "muted" }, "No checkpoints."));
    })
    .catch(failed(checkpointsEl));
  const loadCompactions = () => all(`${base}/compactions`, null, signal, 200)
    .then(({ data }) => {
      for (const c of data) conv.addCompaction(c);
      replace(compactionsEl, data.length ? h("ul", null, data.map(compactionItem)) : h("p", { class: "muted" }, "No compactions."));
    })
    .catch(failed(compactionsEl));
  const loadForks = (ses) => forkTree(ses, signal)
    .then((t) => replace(forksEl, t || h("p", { class: "muted" }, "No forks.")))
    .catch(failed(forksEl));

  const refreshSession = debounce(() => loadSession().catch(() => {}), 300);
  const refreshResume = debounce(loadResume, 800);
  const refreshCheckpoints = debounce(loadCheckpoints, 300);

  let loaded = false;
  const early = [];
  const apply = ({ event, data }) => {
    if (!data || typeof data !== "object") return;
    switch (event) {
      case "message.appended": {
        const el = conv.add(data);
        if (el) flash(el);
        count();
        refreshSession();
        refreshResume();
        break;
      }
      case "session.created":
      case "session.updated":
        showHead(data);
        break;
      case "session.rewound":
        conv.rewindTo(data.to_seq);
        count();
        refreshSession();
        refreshResume();
        refreshCheckpoints();
        loadCompactions();
        break;
      case "compaction.created":
        loadCompactions();
        break;
      case "checkpoint.created":
        refreshCheckpoints();
        refreshResume();
        break;
      default:
    }
  };

  let started = false;
  const start = async () => {
    if (started || signal.aborted) return;
    started = true;
    let ses;
    try {
      ses = await loadSession();
    } catch (err) {
      if (!signal.aborted) replace(root, notice("bad", describe(err)), h("p", null, link("#/sessions", "← Sessions")));
      return;
    }
    try {
      const newest = ses.message_count > MAX_MESSAGES;
      const { data } = await all(`${base}/messages`, newest ? { order: "desc" } : null, signal, MAX_MESSAGES);
      if (newest) data.reverse();
      for (const m of data) conv.add(m);
      if (newest) {
        replace(convNote, notice("warn", `Showing the newest ${fmt.int(data.length)} of ${fmt.int(ses.message_count)} messages (from #${data[0]?.seq}).`));
      }
    } catch (err) {
      failed(convNote)(err);
    }
    loaded = true;
    early.splice(0).forEach(apply);
    count();
    await Promise.all([loadCompactions(), loadCheckpoints(), loadResume(), loadForks(ses)]);
    const seq = Number(query.get("seq"));
    if (seq) conv.reveal(seq);
  };
  follow(`${base}/events`, null, {
    open: (first) => { if (first) start(); },
    event: (ev) => (loaded ? apply(ev) : early.push(ev)),
    state: (s, err) => {
      setLive(s, err);
      if (s === "error" || s === "off") start();
    },
  }, signal);
  setTimeout(start, 3000);
}
