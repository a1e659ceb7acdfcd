// What a write key may do to a session from its page: close, reopen,
// archive or purge it, fork it from a message, rewind it to a message, and
// apply the repairs its resume report suggests. Each asks first
// (actions.js); the page refreshes itself after (the live feed brings most
// changes; onChange covers the rest).

import { write } from "./api.js";
import { confirmAction } from "./actions.js";
import { h, route } from "./dom.js";
import * as fmt from "./format.js";

/** named is how a dialog names a session: its title and id. */
export function named(ses) {
  return ses.title ? [h("b", null, `“${ses.title}”`), " (", h("code", null, ses.id), ")"] : h("code", null, ses.id);
}

function button(cls, label, onclick, danger) {
  return h("button", { type: "button", class: ["ghost", "small", "act", cls, danger ? "danger" : null], onclick }, label);
}

/**
 * statusActions answers the buttons that move the session ses through its
 * status machine, or purge it. onChange(ses) gets the session as the server
 * answered; onPurged() is called once it is gone.
 */
export function statusActions(base, ses, { onChange, onPurged }) {
  const out = [];
  const patch = (status) => ({ key }) => write("PATCH", base, { body: { status }, idempotencyKey: key });
  if (ses.status === "created" || ses.status === "active") {
    out.push(button("act-close", "Close", async () => {
      const r = await confirmAction({
        id: "close", title: "Close session", confirm: "Close",
        what: [h("p", null, "Close ", named(ses), ": its status becomes ", h("b", null, "completed"), " and it refuses new messages until it is reopened. Nothing is deleted.")],
        run: ({ key }) => write("DELETE", base, { idempotencyKey: key }),
      });
      if (r) onChange(r);
    }));
  }
  if (ses.status === "completed") {
    out.push(button("act-reopen", "Reopen", async () => {
      const r = await confirmAction({
        id: "reopen", title: "Reopen session", confirm: "Reopen",
        what: [h("p", null, "Reopen ", named(ses), ": its status becomes ", h("b", null, "active"), " again and it takes new messages.")],
        run: patch("active"),
      });
      if (r) onChange(r);
    }));
  }
  if (ses.status !== "archived") {
    out.push(button("act-archive", "Archive", async () => {
      const r = await confirmAction({
        id: "archive", title: "Archive session", confirm: "Archive",
        what: [h("p", null, "Archive ", named(ses), ": its status becomes ", h("b", null, "archived"), ", for good: an archived session cannot be reopened and takes no new messages. Nothing is deleted.")],
        run: patch("archived"),
      });
      if (r) onChange(r);
    }));
  }
  out.push(button("act-purge", "Purge…", async () => {
    const r = await confirmAction({
      id: "purge", title: "Purge session", confirm: "Purge for good", danger: true,
      what: [h("p", null, "Erase ", named(ses), " for good: its ", h("b", null, `${fmt.int(ses.message_count)} messages`),
        ", its checkpoints and their pending writes, in one transaction. This cannot be undone."),
      h("p", { class: "small muted" }, "Forks that share its first messages keep them, as their own.")],
      run: ({ key }) => write("DELETE", base, { query: { purge: "true" }, idempotencyKey: key }),
    });
    if (r) onPurged();
  }, true));
  return out;
}

/**
 * messageActions answers, for a message, the buttons that fork the session
 * from it or rewind the session to it. current() is the session as the page
 * knows it now; onForked(fork) and onRewound(result) follow a success.
 */
export function messageActions(base, current, { onForked, onRewound }) {
  return (msg) => [
    button("act-fork", "Fork here", async () => {
      const ses = current();
      const r = await confirmAction({
        id: "fork", title: "Fork session", confirm: "Fork",
        what: [h("p", null, "Make a new session that shares ", named(ses), "’s first ", h("b", null, `${msg.seq} message${msg.seq === 1 ? "" : "s"}`),
          ` (through #${msg.seq}) and continues on its own. The session itself does not change.`)],
        fields: [{ name: "title", label: "The fork's title", value: ses.title || "", placeholder: "the session's" }],
        run: ({ key, values }) => write("POST", `${base}/fork`, {
          body: { at_seq: msg.seq, ...(values.title.trim() ? { title: values.title.trim() } : {}) }, idempotencyKey: key,
        }),
      });
      if (r) onForked(r);
    }),
    button("act-rewind", "Rewind here", async () => {
      const ses = current();
      const n = ses.last_seq - msg.seq;
      const r = await confirmAction({
        id: "rewind", title: "Rewind session", confirm: "Rewind", danger: true,
        what: [h("p", null, "Rewind ", named(ses), ` to #${msg.seq}: `,
          n > 0 ? [h("b", null, `${fmt.int(n)} message${n === 1 ? "" : "s"} (#${msg.seq + 1}–#${ses.last_seq})`),
            " leave its history, and so do the checkpoints and compactions that reach past it; the next message gets #", String(msg.seq + 1), "."]
            : `it ends there as far as this page knows, so nothing should leave its history.`),
        h("p", { class: "small muted" }, `Fenced at #${ses.last_seq}: if anything was appended since this page last saw the session, the rewind is refused (stale_seq). Forks that share these messages keep them.`)],
        run: ({ key }) => write("POST", `${base}/rewind`, { body: { to_seq: msg.seq, expected_last_seq: ses.last_seq }, idempotencyKey: key }),
      });
      if (r) onRewound(r);
    }, true),
  ];
}

/** repairAction asks, then applies the automatic repairs of a resume report r. */
export async function repairAction(base, r) {
  const auto = (r.validation?.problems || []).concat(r.validation?.warnings || []).filter((p) => p.repair?.automatic);
  const ses = r.session;
  return confirmAction({
    id: "repair", title: "Apply the suggested repairs", confirm: "Repair",
    what: [h("p", null, "Apply to ", named(ses), ` the ${auto.length} repair${auto.length === 1 ? "" : "s"} the resume report marks automatic, in one transaction:`),
      h("ul", null, auto.map((p) => h("li", null, h("code", null, p.repair.action), p.seq !== null && p.seq !== undefined ? ` at #${p.seq}` : "", ": ", p.detail))),
      h("p", { class: "small muted" }, "An unanswered tool call gets a tool message saying it was interrupted (is_error, marked as a repair); no message a runtime wrote is changed. " +
        `Fenced at #${ses.last_seq}: refused (stale_seq) if the session moved meanwhile.`)],
    run: ({ key }) => write("POST", `${base}/repair`, { body: { expected_last_seq: ses.last_seq }, idempotencyKey: key }),
  });
}

/** forkRoute is where a new fork is shown. */
export function forkRoute(fork) {
  return route(["sessions", fork.id]);
}
