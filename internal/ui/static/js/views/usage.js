// Usage: tokens and cost per day, per agent and per model, from
// GET /v1/usage. A server without that route (404) gets a plain notice.

import { ApiError, describe, get } from "../api.js";
import { bars, columns } from "../charts.js";
import { h, notice, replace, route } from "../dom.js";
import * as fmt from "../format.js";
import { setLive } from "../live.js";

const DAY = 86400000;

function days(from, to) {
  const out = [];
  for (let t = Date.parse(from + "T00:00:00Z"); t <= Date.parse(to + "T00:00:00Z") && out.length < 400; t += DAY) {
    out.push(fmt.utcDay(new Date(t)));
  }
  return out;
}

// splitTokens says whether the server tells input and output tokens apart
// (newer servers do); the page shows them apart then, and only then.
function splitTokens(rows) {
  return rows.some((r) => r.input_tokens !== undefined || r.output_tokens !== undefined);
}

function table(rows, keyName) {
  const split = splitTokens(rows);
  return h("details", null, h("summary", { class: "small" }, "Table"),
    h("table", { class: "usage-table", dataset: { group: keyName } },
      h("thead", null, h("tr", null, h("th", null, keyName), h("th", { class: "num" }, "Messages"),
        split ? [h("th", { class: "num" }, "Input"), h("th", { class: "num" }, "Output")] : null,
        h("th", { class: "num" }, "Tokens"), h("th", { class: "num" }, "Cost"))),
      h("tbody", null, rows.map((r) => h("tr", null,
        h("td", null, r.key ?? "(none)"), h("td", { class: "num" }, fmt.int(r.messages)),
        split ? [h("td", { class: "num input" }, fmt.int(r.input_tokens)), h("td", { class: "num output" }, fmt.int(r.output_tokens))] : null,
        h("td", { class: "num" }, fmt.int(r.tokens)), h("td", { class: "num" }, fmt.cost(r.cost)))))));
}

function section(title, id, rows, chart, keyName) {
  const items = (metric) => rows.map((r) => ({ label: r.key ?? "(none)", value: Number(r[metric]) || 0 }));
  return h("section", { class: "panel", id },
    h("h2", null, title),
    h("div", { class: "grid-2" },
      h("div", null, h("h3", null, "Tokens"), chart(items("tokens"), { fmt: fmt.int, title: `${title}: tokens` })),
      h("div", null, h("h3", null, "Cost"), chart(items("cost"), { fmt: fmt.cost, cls: "cost", title: `${title}: cost` }))),
    table(rows, keyName));
}

export async function render(root, { query, signal }) {
  setLive("off");
  const today = fmt.utcDay(new Date());
  const from = query.get("from") || fmt.utcDay(new Date(Date.now() - 29 * DAY));
  const to = query.get("to") || today;
  const agentId = query.get("agent_id") || "";
  const fromIn = h("input", { type: "date", name: "from", value: from });
  const toIn = h("input", { type: "date", name: "to", value: to });
  const agentIn = h("input", { name: "agent_id", value: agentId, placeholder: "any agent", size: 14 });
  const form = h("form", { class: "filters", id: "usage-form" },
    h("label", null, "From (UTC)", fromIn), h("label", null, "To (UTC)", toIn), h("label", null, "Agent", agentIn),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = route(["usage"], { from: fromIn.value, to: toIn.value, agent_id: agentIn.value.trim() });
  });
  const body = h("div", { id: "usage" }, h("p", { class: "loading" }, "Loading…"));
  replace(root,
    h("div", { class: "page-head" }, h("h1", null, "Usage"), h("span", { class: "sub" }, "tokens and cost of the messages stored, by UTC day")),
    h("div", { class: "panel" }, form),
    body);

  const range = { from: from + "T00:00:00Z", to: new Date(Date.parse(to + "T00:00:00Z") + DAY).toISOString().replace(".000Z", "Z"), agent_id: agentId };
  let perDay;
  let perAgent;
  let perModel;
  try {
    [perDay, perAgent, perModel] = await Promise.all(["day", "agent", "model"].map((g) => get("/v1/usage", { group_by: g, ...range }, signal)));
  } catch (err) {
    if (signal.aborted) return;
    if (err instanceof ApiError && err.status === 404) {
      replace(body, notice("warn", h("b", { id: "usage-unavailable" }, "Usage is not available on this server."),
        " GET /v1/usage answered 404: this server does not have the usage API yet."));
      return;
    }
    replace(body, notice("bad", describe(err)));
    return;
  }
  const byDay = new Map(perDay.data.map((r) => [r.key, r]));
  const dayRows = days(from, to).map((d) => byDay.get(d) || { key: d, messages: 0, tokens: 0, cost: 0 });
  const byTokens = (a, b) => b.tokens - a.tokens || b.cost - a.cost;
  const t = perDay.total || { messages: 0, tokens: 0, cost: 0 };
  replace(body,
    h("div", { class: "panel" }, h("div", { class: "stats", id: "usage-total" },
      h("div", { class: "stat" }, h("b", { id: "usage-messages" }, fmt.int(t.messages)), h("span", null, "messages")),
      h("div", { class: "stat" }, h("b", { id: "usage-tokens" }, fmt.int(t.tokens)), h("span", null, "tokens")),
      splitTokens([t]) ? [
        h("div", { class: "stat" }, h("b", { id: "usage-input-tokens" }, fmt.int(t.input_tokens)), h("span", null, "input tokens")),
        h("div", { class: "stat" }, h("b", { id: "usage-output-tokens" }, fmt.int(t.output_tokens)), h("span", null, "output tokens"))] : null,
      h("div", { class: "stat" }, h("b", { id: "usage-cost" }, fmt.cost(t.cost)), h("span", null, "cost")))),
    section("Per day", "usage-day", dayRows, columns, "day"),
    h("div", { class: "grid-2" },
      section("Per agent", "usage-agent", [...perAgent.data].sort(byTokens), bars, "agent"),
      section("Per model", "usage-model", [...perModel.data].sort(byTokens), bars, "model")));
}
