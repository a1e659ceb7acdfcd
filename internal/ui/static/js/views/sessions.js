// The sessions list: filters (title, status, agent, metadata, creation
// dates), newest or oldest first, keyset paging, the total the filters
// select, token and cost totals, and live updates from the tenant's feed.

import { all, describe, get } from "../api.js";
import { flash, h, link, notice, replace, route } from "../dom.js";
import * as fmt from "../format.js";
import { setLive } from "../live.js";
import { follow } from "../sse.js";

const STATUSES = ["", "created", "active", "completed", "archived"];
// What changes a row; checkpoints and compactions do not.
const FEED_TYPES = ["session.created", "session.updated", "message.appended", "session.rewound"];
// The agents offered in the filter's list; a tenant with more gets a text box.
const MAX_AGENTS = 1000;

function readFilters(q) {
  return {
    title: q.get("title") || "",
    status: q.get("status") || "",
    agent_id: q.get("agent_id") || "",
    meta: q.get("meta") || "",
    after: q.get("after") || "",
    before: q.get("before") || "",
    order: q.get("order") === "asc" ? "asc" : "desc",
  };
}

/** metaPairs reads "key=value, key2=value2". */
function metaPairs(text) {
  const out = [];
  for (const item of text.split(",")) {
    const i = item.indexOf("=");
    if (i <= 0) continue;
    out.push([item.slice(0, i).trim(), item.slice(i + 1).trim()]);
  }
  return out;
}

function apiQuery(f) {
  const q = {
    title: f.title, status: f.status, agent_id: f.agent_id, order: f.order === "asc" ? "asc" : "",
    created_after: fmt.localDayStart(f.after), created_before: fmt.localDayEnd(f.before),
  };
  for (const [k, v] of metaPairs(f.meta)) q[`metadata[${k}]`] = v;
  return q;
}

/** foldTitle folds as the API's title filter does: A–Z only. */
function foldTitle(s) {
  return String(s || "").replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** matches says whether a session the feed announced belongs in the filtered list. */
function matches(f, ses) {
  if (f.title && !foldTitle(ses.title).includes(foldTitle(f.title))) return false;
  if (f.status && ses.status !== f.status) return false;
  if (f.agent_id && ses.agent_id !== f.agent_id) return false;
  for (const [k, v] of metaPairs(f.meta)) {
    const have = ses.metadata?.[k];
    if (have === undefined || (typeof have === "string" ? have : JSON.stringify(have)) !== v) return false;
  }
  const created = new Date(ses.created_at).getTime();
  if (f.after && created <= new Date(fmt.localDayStart(f.after)).getTime()) return false;
  if (f.before && created >= new Date(fmt.localDayEnd(f.before)).getTime()) return false;
  return true;
}

/** agentPicker is a select of the tenant's agents, or a text box when they are too many to list. */
function agentPicker(current, signal) {
  const select = h("select", { name: "agent_id", id: "agent-filter" }, h("option", { value: "" }, "any"),
    current ? h("option", { value: current, selected: true }, current) : null);
  const box = h("span", null, select);
  all("/v1/agents", null, signal, MAX_AGENTS).then(({ data, truncated }) => {
    if (truncated) {
      box.replaceChildren(h("input", { name: "agent_id", id: "agent-filter", value: current, placeholder: "agent id", size: 14 }));
      return;
    }
    const known = new Set(data.map((a) => a.id));
    replace(select, h("option", { value: "" }, "any"),
      data.map((a) => h("option", { value: a.id, selected: a.id === current }, a.name === a.id ? a.id : `${a.name} (${a.id})`)),
      current && !known.has(current) ? h("option", { value: current, selected: true }, `${current} (not stored)`) : null);
  }).catch(() => {}); // the list stays as it is: "any" and the current one
  return { el: box, value: () => box.querySelector("[name=agent_id]").value.trim() };
}

function filterForm(f, signal) {
  const title = h("input", { name: "title", id: "title-filter", value: f.title, placeholder: "refund", size: 16, type: "search" });
  const status = h("select", { name: "status" }, STATUSES.map((s) => h("option", { value: s, selected: s === f.status }, s || "any")));
  const agent = agentPicker(f.agent_id, signal);
  const meta = h("input", { name: "meta", value: f.meta, placeholder: "channel=web, tier=gold", size: 22 });
  const after = h("input", { name: "after", type: "date", value: f.after });
  const before = h("input", { name: "before", type: "date", value: f.before });
  const order = h("select", { name: "order", id: "order-filter" },
    h("option", { value: "desc", selected: f.order === "desc" }, "newest first"),
    h("option", { value: "asc", selected: f.order === "asc" }, "oldest first"));
  const form = h("form", { class: "filters", id: "session-filters" },
    h("label", null, "Title", title),
    h("label", null, "Status", status),
    h("label", null, "Agent", agent.el),
    h("label", null, "Metadata", meta),
    h("label", null, "Created from", after),
    h("label", null, "Created to", before),
    h("label", null, "Order", order),
    h("button", { type: "submit" }, "Apply"),
    h("button", { type: "button", class: "ghost", onclick: () => { location.hash = "#/sessions"; } }, "Reset"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = route(["sessions"], {
      title: title.value.trim(), status: status.value, agent_id: agent.value(), meta: meta.value.trim(),
      after: after.value, before: before.value, order: order.value === "asc" ? "asc" : "",
    });
  });
  // A choice in a list applies at once.
  for (const el of [status, order]) el.addEventListener("change", () => form.requestSubmit());
  agent.el.addEventListener("change", () => form.requestSubmit());
  return form;
}

function row(ses) {
  const title = ses.title || ses.id;
  return h("tr", { class: "row-link", dataset: { id: ses.id }, onclick: (e) => { if (!e.target.closest("a")) location.hash = route(["sessions", ses.id]); } },
    h("td", null,
      link(route(["sessions", ses.id]), h("b", null, title)),
      ses.title ? h("div", { class: "mono small muted" }, ses.id) : null,
      ses.parent_id ? h("div", { class: "small muted" }, "fork of ", link(route(["sessions", ses.parent_id]), ses.parent_id), ` at #${ses.forked_at_seq}`) : null),
    h("td", null, h("span", { class: ["badge", "status-" + ses.status] }, ses.status)),
    h("td", null, ses.agent_id ? link(route(["agents", ses.agent_id]), ses.agent_id) : h("span", { class: "muted" }, "—")),
    h("td", { class: "num messages" }, fmt.int(ses.message_count)),
    h("td", { class: "num tokens" }, fmt.int(ses.total_tokens)),
    h("td", { class: "num cost", title: `$${ses.total_cost}` }, fmt.cost(ses.total_cost)),
    h("td", { class: "small" }, fmt.time(ses.created_at)),
    h("td", { class: "small", title: fmt.time(ses.updated_at) }, fmt.ago(ses.updated_at)));
}

export async function render(root, { query, signal }) {
  const f = readFilters(query);
  const newestFirst = f.order !== "asc";
  const summary = h("p", { class: "summary", id: "sessions-summary" }, "Loading…");
  const tbody = h("tbody", { id: "sessions-body" });
  const status = h("div", { class: "status-line" });
  const more = h("button", { type: "button", class: "ghost", id: "sessions-more", hidden: true }, "Load more");
  const purged = query.get("purged");
  replace(root,
    h("div", { class: "page-head" }, h("h1", null, "Sessions"),
      h("span", { class: "sub" }, `${newestFirst ? "newest" : "oldest"} first; follows the tenant's live feed`)),
    purged ? notice("", "Purged ", h("code", { id: "purged-id" }, purged), ": nothing of it remains.") : null,
    h("div", { class: "panel" }, filterForm(f, signal)),
    summary, status,
    h("div", { class: "panel" }, h("table", { class: "sessions" },
      h("thead", null, h("tr", null, ["Session", "Status", "Agent", "Messages", "Tokens", "Cost", "Created", "Updated"]
        .map((c, i) => h("th", { class: i >= 3 && i <= 5 ? "num" : null }, c)))),
      tbody)),
    h("div", { class: "more" }, more));

  const rows = new Map(); // id → {ses, tr}
  let cursor = "";
  let hasMore = false;
  let total = null; // {count, exact} from the first page, kept up with the feed
  let loaded = false;
  const early = [];

  const totals = () => {
    let tokens = 0;
    let cost = 0;
    let messages = 0;
    for (const { ses } of rows.values()) {
      tokens += ses.total_tokens;
      cost += ses.total_cost;
      messages += ses.message_count;
    }
    const n = total ? total.count : rows.size;
    const many = total && !total.exact;
    replace(summary,
      h("b", { id: "sessions-count" }, `${many ? "more than " : ""}${fmt.int(n)} session${n === 1 && !many ? "" : "s"}`),
      rows.size < n || many ? h("span", { id: "sessions-shown" }, ` · ${fmt.int(rows.size)} shown`) : "",
      ` · ${fmt.int(messages)} messages · `, h("b", { id: "sessions-tokens" }, fmt.int(tokens)), " tokens · ",
      h("b", { id: "sessions-cost" }, fmt.cost(cost)), hasMore ? " in the sessions shown" : "");
    more.hidden = !hasMore;
  };

  // before says whether a comes before b in the list's order.
  const before = (a, b) => (newestFirst ? a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id)
    : a.created_at < b.created_at || (a.created_at === b.created_at && a.id < b.id));
  const put = (ses, where) => {
    const tr = row(ses);
    const old = rows.get(ses.id);
    if (old) old.tr.replaceWith(tr);
    else if (where === "sorted") {
      const next = [...tbody.children].find((r) => { const s = rows.get(r.dataset.id)?.ses; return s && before(ses, s); });
      tbody.insertBefore(tr, next || null);
    } else tbody.append(tr);
    rows.set(ses.id, { ses, tr });
    return tr;
  };

  const loadPage = async () => {
    more.disabled = true;
    try {
      // The count is asked for once, with the first page; the feed keeps it.
      const page = await get("/v1/sessions", { ...apiQuery(f), limit: 50, cursor, count: cursor ? "" : "true" }, signal);
      if (page.total) total = { ...page.total };
      for (const ses of page.data) if (!rows.has(ses.id)) put(ses, "end");
      hasMore = page.has_more;
      cursor = page.next_cursor || "";
      replace(status);
    } catch (err) {
      if (signal.aborted) return;
      replace(status, notice("bad", describe(err)));
    } finally {
      more.disabled = false;
      totals();
    }
  };
  more.addEventListener("click", loadPage);

  const last = () => {
    const tr = tbody.lastElementChild;
    return tr ? rows.get(tr.dataset.id)?.ses : null;
  };

  const apply = ({ event, data }) => {
    if (!data || typeof data !== "object") return;
    if (event === "session.created" || event === "session.updated") {
      const have = rows.get(data.id);
      if (have) {
        if (data.updated_at < have.ses.updated_at) return;
        if (!matches(f, data)) {
          have.tr.remove();
          rows.delete(data.id);
          if (total?.exact) total.count--;
        } else flash(put(data));
      } else if (matches(f, data)) {
        if (total?.exact && event === "session.created") total.count++;
        const l = last();
        // A session past the last one shown belongs to a page not loaded yet.
        if (!hasMore || !l || before(data, l)) flash(put(data, "sorted"));
      }
      totals();
    } else if (event === "message.appended") {
      const have = rows.get(data.session_id);
      if (!have || data.seq <= have.ses.last_seq) return;
      const ses = { ...have.ses };
      ses.message_count += 1;
      ses.last_seq = data.seq;
      ses.total_tokens += data.tokens || 0;
      ses.total_cost += data.cost || 0;
      ses.updated_at = data.created_at;
      if (ses.status === "created") ses.status = "active";
      flash(put(ses));
      totals();
    } else if (event === "session.rewound") {
      if (!rows.has(data.session_id)) return;
      get(`/v1/sessions/${encodeURIComponent(data.session_id)}`, null, signal)
        .then((ses) => { flash(put(ses)); totals(); })
        .catch(() => {});
    }
  };

  let started = false;
  const start = async () => {
    if (started || signal.aborted) return;
    started = true;
    await loadPage();
    loaded = true;
    early.splice(0).forEach(apply);
  };
  // The list loads once the feed is open, so that no change falls between the
  // two; should the feed not open, it loads anyway.
  follow("/v1/events", { type: FEED_TYPES }, {
    open: (first) => { if (first) start(); },
    event: (ev) => (loaded ? apply(ev) : early.push(ev)),
    state: (s, err) => {
      setLive(s, err);
      if (s === "error" || s === "off") start();
    },
  }, signal);
  setTimeout(start, 3000);
}
