// One session: its messages as a conversation, a page at a time (following
// new ones live), its checkpoints as a tree, compactions, the fork tree, the
// resume report, what the model sees, and, for a write key, what can be done
// to it.

import { all, describe, get } from "../api.js";
import { checkpointTree } from "../checkpoints.js";
import { contextPanel } from "../context.js";
import { Conversation } from "../conversation.js";
import { flash, h, link, notice, replace, route } from "../dom.js";
import { forkTree } from "../forks.js";
import * as fmt from "../format.js";
import { canWrite } from "../identity.js";
import { setLive } from "../live.js";
import { Files, plain } from "../parts.js";
import { resumeReport } from "../resume.js";
import { forkRoute, messageActions, repairAction, statusActions } from "../session_actions.js";
import { follow } from "../sse.js";
import { tree } from "../tree.js";

// Messages come a page at a time (the API's largest), newest first; earlier
// and later ones on demand, so that a long session never renders whole.
const PAGE = 200;

function debounce(f, ms) {
  let t = 0;
  return () => {
    clearTimeout(t);
    t = setTimeout(f, ms);
  };
}

function head(ses, actions) {
  return h("div", null,
    h("div", { class: "page-head" },
      h("h1", { id: "session-title" }, ses.title || ses.id),
      h("span", { class: ["badge", "status-" + ses.status], id: "session-status" }, ses.status),
      h("span", { class: "mono small muted" }, ses.id),
      actions.length ? h("span", { class: "head-actions", id: "session-actions" }, actions) : null),
    h("div", { class: "stats" },
      h("div", { class: "stat" }, h("b", { id: "session-messages" }, fmt.int(ses.message_count)), h("span", null, "messages")),
      h("div", { class: "stat" }, h("b", null, `#${ses.last_seq}`), h("span", null, "last seq")),
      h("div", { class: "stat" }, h("b", { id: "session-tokens" }, fmt.int(ses.total_tokens)), h("span", null, "tokens")),
      h("div", { class: "stat" }, h("b", { id: "session-cost" }, fmt.cost(ses.total_cost)), h("span", null, "cost")),
      h("div", { class: "stat" }, h("b", null, fmt.int(ses.turn_count)), h("span", null, "turns"))),
    h("dl", { class: "kv" },
      h("dt", null, "Agent"), h("dd", null, ses.agent_id ? link(route(["agents", ses.agent_id]), ses.agent_id) : "—"),
      ses.user_id ? [h("dt", null, "User"), h("dd", null, ses.user_id)] : null,
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
  const writable = canWrite();
  const files = new Files(signal);
  let current = null; // the session as this page last saw it
  let mayWrite = false;
  const conv = new Conversation(files, {
    actions: (msg) => (mayWrite ? messageActions(base, () => current, {
      onForked: (fork) => { location.hash = forkRoute(fork); },
      onRewound: (res) => {
        conv.rewindTo(res.session.last_seq - res.messages.length);
        for (const m of res.messages) conv.add(m);
        showHead(res.session);
        count();
        refreshResume();
        refreshCheckpoints();
        loadCompactions();
      },
    })(msg) : null),
  });
  const headEl = h("div", { id: "session-head" }, h("p", { class: "loading" }, "Loading…"));
  const convNote = h("div");
  const earlier = h("button", { type: "button", class: "ghost", id: "messages-earlier", hidden: true }, "Load earlier messages");
  const later = h("button", { type: "button", class: "ghost", id: "messages-later", hidden: true }, "Load later messages");
  const resumeEl = h("div", null, h("p", { class: "loading" }, "Loading…"));
  const forksEl = h("div", { id: "forks" }, h("p", { class: "loading" }, "Loading…"));
  const checkpointsEl = h("div", { id: "checkpoints" }, h("p", { class: "loading" }, "Loading…"));
  const compactionsEl = h("div", { id: "compactions" }, h("p", { class: "loading" }, "Loading…"));
  const checkpointCount = h("span", { class: "muted" });
  replace(root,
    h("p", { class: "small" }, link("#/sessions", "← Sessions")),
    headEl,
    h("div", { class: "split" },
      h("section", { class: "panel" }, h("h2", null, "Conversation ", h("span", { class: "muted", id: "conversation-count" })),
        convNote, h("div", { class: "more" }, earlier), conv.el, h("div", { class: "more" }, later)),
      h("aside", null,
        h("section", { class: "panel" }, h("h2", null, "Resume report ",
          h("button", { type: "button", class: "ghost small", onclick: () => loadResume() }, "Refresh")), resumeEl),
        h("details", { class: "panel", id: "context-panel" }, h("summary", null, h("b", null, "What the model sees")), contextPanel(base, signal)),
        h("section", { class: "panel" }, h("h2", null, "Forks"), forksEl),
        h("section", { class: "panel" }, h("h2", null, "Checkpoints ", checkpointCount), checkpointsEl),
        h("section", { class: "panel" }, h("h2", null, "Compactions"), compactionsEl))));

  // Seqs are gap-free from 1: what is shown is one range, and what lies
  // outside it is counted, not guessed.
  const lastSeq = () => current?.last_seq ?? conv.lastSeq;
  const count = () => {
    const total = Math.max(lastSeq(), conv.lastSeq);
    const el = document.getElementById("conversation-count");
    if (el) el.textContent = conv.size >= total ? `(${fmt.int(conv.size)})` : `(${fmt.int(conv.size)} of ${fmt.int(total)})`;
    const lo = conv.lowSeq;
    earlier.hidden = !(conv.size && lo > 1);
    earlier.textContent = `Load earlier messages (${fmt.int(lo - 1)} before #${lo})`;
    later.hidden = !(conv.size && conv.lastSeq < lastSeq());
    later.textContent = `Load later messages (${fmt.int(lastSeq() - conv.lastSeq)} after #${conv.lastSeq})`;
  };
  const failed = (el) => (err) => {
    if (!signal.aborted) replace(el, notice("bad", describe(err)));
  };

  let shown = "";
  const showHead = (ses) => {
    current = ses;
    const json = JSON.stringify(ses);
    if (json !== shown) {
      // unchanged: leave what is open open
      replace(headEl, head(ses, mayWrite ? statusActions(base, ses, {
        onChange: (s) => { showHead(s); loadResume(); },
        onPurged: () => { location.hash = route(["sessions"], { purged: ses.id }); },
      }) : []));
      conv.markFork(ses);
    }
    shown = json;
    count();
  };
  const loadSession = async () => {
    const ses = await get(base, null, signal);
    showHead(ses);
    return ses;
  };
  const loadResume = () => get(`${base}/resume`, null, signal)
    .then((r) => replace(resumeEl, resumeReport(r, (seq) => reveal(seq), mayWrite ? async () => {
      const res = await repairAction(base, r);
      if (res) {
        for (const m of res.messages || []) if (m.seq === conv.lastSeq + 1) conv.add(m);
        showHead(res.session);
        loadResume();
      }
    } : null)))
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

  const page = async (q) => (await get(`${base}/messages`, { limit: PAGE, ...q }, signal)).data;
  const loading = (b, on) => { b.disabled = on; };
  earlier.addEventListener("click", async () => {
    loading(earlier, true);
    try {
      conv.prepend(await page({ order: "desc", before_seq: conv.lowSeq }));
    } catch (err) {
      failed(convNote)(err);
    } finally {
      loading(earlier, false);
      count();
    }
  });
  later.addEventListener("click", async () => {
    loading(later, true);
    try {
      for (const m of await page({ after_seq: conv.lastSeq })) conv.add(m);
    } catch (err) {
      failed(convNote)(err);
    } finally {
      loading(later, false);
      count();
    }
  });
  // reveal shows a message: at once when it is shown, else the page of the
  // conversation around it, in place of what was shown.
  const reveal = async (seq) => {
    if (conv.reveal(seq)) return;
    if (seq < 1 || seq > lastSeq()) return;
    try {
      const msgs = await page({ after_seq: Math.max(0, seq - 1 - PAGE / 4) });
      conv.clear();
      conv.prepend(msgs);
      count();
      conv.reveal(seq);
    } catch (err) {
      failed(convNote)(err);
    }
  };

  const refreshSession = debounce(() => loadSession().catch(() => {}), 300);
  const refreshResume = debounce(loadResume, 800);
  const refreshCheckpoints = debounce(loadCheckpoints, 300);

  let loaded = false;
  const early = [];
  const apply = ({ event, data }) => {
    if (!data || typeof data !== "object") return;
    switch (event) {
      case "message.appended": {
        // Shown when it follows what is shown; past a window of earlier
        // messages, it is counted (Load later) instead.
        if (data.seq === conv.lastSeq + 1 || conv.has(data.seq)) {
          const el = conv.add(data);
          if (el) flash(el);
        }
        if (current && data.seq > current.last_seq) current = { ...current, last_seq: data.seq };
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
        if (current) current = { ...current, last_seq: Math.min(current.last_seq, data.to_seq) };
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
      mayWrite = await writable;
      ses = await loadSession();
    } catch (err) {
      if (!signal.aborted) replace(root, notice("bad", describe(err)), h("p", null, link("#/sessions", "← Sessions")));
      return;
    }
    const seq = Number(query.get("seq"));
    try {
      if (seq && seq < ses.last_seq - PAGE + 1) {
        conv.prepend(await page({ after_seq: Math.max(0, seq - 1 - PAGE / 4) }));
      } else {
        conv.prepend(await page({ order: "desc" }));
      }
    } catch (err) {
      failed(convNote)(err);
    }
    loaded = true;
    early.splice(0).forEach(apply);
    count();
    await Promise.all([loadCompactions(), loadCheckpoints(), loadResume(), loadForks(ses)]);
    if (seq) reveal(seq);
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
