// Writes from the dashboard: every action asks first, in a dialog that says
// what will happen and names what it happens to, then sends its request with
// an Idempotency-Key. A failure shows the problem in the dialog, which stays
// open to try again (with the same key while nothing was changed, so a
// retry after a lost answer is applied once) or to cancel; a success closes
// it and lets the page refresh.

import { newIdempotencyKey } from "./api.js";
import { h } from "./dom.js";
import { problemView } from "./problem.js";

let open = null; // one action at a time

function field(f) {
  const attrs = { name: f.name, id: "action-field-" + f.name, placeholder: f.placeholder || "", spellcheck: "false", autocomplete: "off" };
  const input = f.textarea
    ? h("textarea", { ...attrs, rows: f.rows || 10 }, f.value ?? "")
    : h("input", { ...attrs, type: f.type || "text", value: f.value ?? "" });
  return { f, input, el: h("label", { class: "action-field" }, h("span", null, f.label), input, f.hint ? h("span", { class: "hint" }, f.hint) : null) };
}

/**
 * confirmAction asks, then acts. opts:
 *   title: the dialog's heading ("Close session");
 *   what: nodes saying what will happen, naming the object;
 *   confirm: the button's label; danger: true for what cannot be undone;
 *   fields: [{name, label, value, placeholder, hint, textarea, type}] to fill in;
 *   run({key, values}): sends the request with the Idempotency-Key key and
 *     answers its result, or throws (an ApiError, shown as its problem);
 *   explain(err): extra nodes for a failure (what to do about a 412, say);
 *   retry(err): false when trying again cannot help (the default: it can).
 * It resolves with run's result, or null when the user cancelled.
 */
export function confirmAction(opts) {
  if (open) open.cancel();
  return new Promise((resolve) => {
    const inputs = (opts.fields || []).map(field);
    const problem = h("div", { class: "action-problem" });
    const cancel = h("button", { type: "button", class: "ghost", id: "action-cancel" }, "Cancel");
    const ok = h("button", { type: "submit", id: "action-confirm", class: opts.danger ? "danger" : null }, opts.confirm || "Confirm");
    const form = h("form", { method: "dialog" },
      h("h2", { id: "action-title" }, opts.title),
      h("div", { class: "action-what", id: "action-what" }, opts.what),
      inputs.map((i) => i.el),
      problem,
      h("div", { class: "actions" }, cancel, ok));
    const dialog = h("dialog", { id: "action-dialog", class: "action", "aria-labelledby": "action-title", dataset: { action: opts.id || "" } }, form);
    let key = newIdempotencyKey();
    let sentWith = null; // the values the key was last sent with
    let busy = false;
    const finish = (result) => {
      if (open?.dialog === dialog) open = null;
      if (dialog.open) dialog.close();
      dialog.remove();
      resolve(result);
    };
    const values = () => Object.fromEntries(inputs.map((i) => [i.f.name, i.input.value]));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (busy) return;
      const v = values();
      const json = JSON.stringify(v);
      if (sentWith !== null && sentWith !== json) key = newIdempotencyKey(); // another request: another key
      sentWith = json;
      busy = true;
      ok.disabled = true;
      cancel.disabled = true;
      problem.replaceChildren(h("p", { class: "loading" }, "Working…"));
      try {
        const result = await opts.run({ key, values: v });
        finish(result ?? true);
      } catch (err) {
        problem.replaceChildren(problemView(err, opts.explain?.(err)));
        ok.textContent = "Try again";
        ok.hidden = opts.retry ? !opts.retry(err) : false;
      } finally {
        busy = false;
        ok.disabled = false;
        cancel.disabled = false;
      }
    });
    const onCancel = (e) => {
      e?.preventDefault();
      if (!busy) finish(null);
    };
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    document.body.append(dialog);
    open = { dialog, cancel: () => finish(null) };
    dialog.showModal();
    (inputs[0]?.input || cancel).focus();
  });
}
