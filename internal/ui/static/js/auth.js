// The API key: typed in once, kept in this tab's sessionStorage, sent only in
// the Authorization header. Without one the dashboard tries the API as it is
// (a server in open mode needs none) and asks when it answers 401.

const STORE = "logbook.key";
const listeners = new Set();

export function key() {
  try {
    return sessionStorage.getItem(STORE) || "";
  } catch {
    return "";
  }
}

function setKey(k) {
  try {
    if (k) sessionStorage.setItem(STORE, k);
    else sessionStorage.removeItem(STORE);
  } catch {
    /* storage refused (private mode): the key lives until the dialog asks again */
  }
  for (const f of listeners) f(k);
}

/** onKeyChange calls f with the new key whenever it changes. */
export function onKeyChange(f) {
  listeners.add(f);
}

/** authHeaders are the headers that carry the key, if there is one. */
export function authHeaders() {
  const k = key();
  return k ? { Authorization: "Bearer " + k } : {};
}

let pending = null;
let declined = false; // the user cancelled: ask again only when told to

/**
 * askForKey shows the key dialog and resolves with the key typed, or "" when
 * the user cancels. Concurrent callers (every request that met a 401) share
 * one dialog. After a cancel, only a manual call (the Key button) asks again.
 */
export function askForKey(reason, manual = false) {
  if (pending) return pending;
  if (declined && !manual) return Promise.resolve("");
  pending = new Promise((resolve) => {
    const dialog = document.getElementById("key-dialog");
    const form = document.getElementById("key-form");
    const input = document.getElementById("key-input");
    const error = document.getElementById("key-error");
    const forget = document.getElementById("key-forget");
    document.getElementById("key-reason").textContent = reason || "This server asks for an API key.";
    forget.hidden = !key();
    error.hidden = true;
    input.value = "";
    const done = (value) => {
      form.removeEventListener("submit", onSubmit);
      document.getElementById("key-cancel").removeEventListener("click", onCancel);
      forget.removeEventListener("click", onForget);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      pending = null;
      resolve(value);
    };
    const onSubmit = (e) => {
      e.preventDefault();
      const v = input.value.trim();
      if (!v) {
        error.textContent = "Type a key, or cancel.";
        error.hidden = false;
        return;
      }
      declined = false;
      setKey(v);
      done(v);
    };
    const onCancel = (e) => {
      e.preventDefault();
      declined = true;
      done("");
    };
    const onForget = () => {
      declined = true;
      setKey("");
      done("");
    };
    form.addEventListener("submit", onSubmit);
    document.getElementById("key-cancel").addEventListener("click", onCancel);
    forget.addEventListener("click", onForget);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    input.focus();
  });
  return pending;
}

/** refused is called when the server answered 401 to the key we hold: it is dropped. */
export function refused() {
  setKey("");
}
