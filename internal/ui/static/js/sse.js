// Following a live feed (GET /v1/events, /v1/sessions/{id}/events) with
// fetch() and a streaming body reader, since EventSource cannot send the
// Authorization header. Reconnects after a cut with Last-Event-ID, so that
// nothing is missed and nothing comes twice.

import { askForKey, authHeaders, key, refused } from "./auth.js";
import { ApiError, url } from "./api.js";
import { EventStreamParser } from "./eventstream.js";

const MAX_WAIT = 30000;

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

/**
 * follow reads a feed until signal aborts.
 * on.open(first) is called each time the stream is open (first: the first
 * time): from then on, every change that commits comes as an event, so a view
 * may load its state then. on.event({id, event, data}) gets each event with
 * data parsed as JSON; on.state(s, err) gets "connecting", "live",
 * "reconnecting", "error" or "off".
 */
export async function follow(path, query, on, signal) {
  let lastId = "";
  let retry = 1000;
  let failures = 0;
  let opened = false;
  // A feed that was told to stop says nothing more: the next view owns the badge.
  const state = (s, err) => { if (!signal.aborted) on.state?.(s, err); };
  while (!signal.aborted) {
    state(opened ? "reconnecting" : "connecting");
    try {
      const headers = { Accept: "text/event-stream", ...authHeaders() };
      if (lastId) headers["Last-Event-ID"] = lastId;
      const sent = key();
      const res = await fetch(url(path, query), { headers, signal, cache: "no-store", credentials: "omit" });
      if (res.status === 401) {
        if (sent && sent === key()) refused();
        if (!(await askForKey(sent ? "The server refused that key. Type another." : "This server asks for an API key."))) {
          state("off");
          return;
        }
        continue;
      }
      if (!res.ok) {
        let problem = null;
        try { problem = await res.json(); } catch { /* not JSON */ }
        const err = new ApiError(res.status, problem, path);
        // A client error will not mend by retrying (429 and 5xx may).
        if (res.status >= 400 && res.status < 500 && res.status !== 429) {
          state("error", err);
          return;
        }
        throw err;
      }
      failures = 0;
      state("live");
      on.open?.(!opened);
      opened = true;
      const parser = new EventStreamParser({
        id: (id) => { lastId = id; },
        retry: (ms) => { retry = ms; },
        event: (ev) => {
          let data = null;
          try { data = JSON.parse(ev.data); } catch { data = ev.data; }
          on.event({ id: ev.id, event: ev.event, data });
        },
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
      }
      parser.end();
    } catch (err) {
      if (signal.aborted) break;
      state("reconnecting", err);
    }
    if (signal.aborted) break;
    failures++;
    await sleep(Math.min(MAX_WAIT, retry * 2 ** Math.min(failures - 1, 5)), signal);
  }
  state("off");
}
