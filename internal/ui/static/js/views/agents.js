// The agents list, with the API's name and tag filters and keyset paging.

import { describe, get } from "../api.js";
import { h, link, notice, replace, route } from "../dom.js";
import * as fmt from "../format.js";
import { setLive } from "../live.js";

export async function render(root, { query, signal }) {
  setLive("off");
  const name = h("input", { name: "name", value: query.get("name") || "", placeholder: "name", size: 16 });
  const tag = h("input", { name: "tag", value: query.get("tag") || "", placeholder: "tag", size: 12 });
  const form = h("form", { class: "filters" },
    h("label", null, "Name", name), h("label", null, "Tag", tag),
    h("button", { type: "submit" }, "Apply"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = route(["agents"], { name: name.value.trim(), tag: tag.value.trim() });
  });
  const tbody = h("tbody", { id: "agents-body" });
  const status = h("div");
  const more = h("button", { type: "button", class: "ghost", hidden: true }, "Load more");
  replace(root,
    h("div", { class: "page-head" }, h("h1", null, "Agents")),
    h("div", { class: "panel" }, form),
    status,
    h("div", { class: "panel" }, h("table", null,
      h("thead", null, h("tr", null, ["Agent", "Model", "Type", "Tags", "Created"].map((c) => h("th", null, c)))),
      tbody)),
    h("div", { class: "more" }, more));
  let cursor = "";
  const load = async () => {
    more.disabled = true;
    try {
      const page = await get("/v1/agents", { name: query.get("name"), tag: query.get("tag"), limit: 50, cursor }, signal);
      for (const a of page.data) {
        tbody.append(h("tr", { dataset: { id: a.id } },
          h("td", null, link(route(["agents", a.id]), h("b", null, a.name)), h("div", { class: "mono small muted" }, a.id)),
          h("td", null, a.model || "—"),
          h("td", null, a.agent_type),
          h("td", null, a.tags.map((t) => h("span", { class: "tag" }, t))),
          h("td", { class: "small" }, fmt.time(a.created_at))));
      }
      if (!tbody.children.length) replace(status, h("p", { class: "muted" }, "No agents."));
      cursor = page.has_more ? page.next_cursor : "";
      more.hidden = !cursor;
    } catch (err) {
      if (!signal.aborted) replace(status, notice("bad", describe(err)));
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", load);
  await load();
}
