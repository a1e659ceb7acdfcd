// A text/event-stream parser, as the HTML standard's "Server-sent events"
// section says an EventSource reads one, over a fetch body.

/** One dispatched event. */
export interface SseEvent {
  /** The last event id seen so far on this stream (ids persist across events), or "" if none. */
  id: string;
  /** The `event` field, or "message" when the event had none. */
  event: string;
  /** The `data` fields joined with "\n". */
  data: string;
}

export interface ParseOptions {
  /** Called with each `retry:` field (the reconnection delay the server asks for, in ms). */
  onRetry?: (ms: number) => void;
  /**
   * Called at the end of each block (a blank line) with the last event id so
   * far, whether or not the block was an event: what an EventSource would
   * send as `Last-Event-ID` if the connection dropped now.
   */
  onLastEventId?: (id: string) => void;
}

/**
 * The events of a text/event-stream body, in order. Lines may end in CRLF, LF
 * or CR (also split across chunks); comments (`:` lines) are skipped; an
 * event's `data:` lines are joined with "\n"; a blank line dispatches the
 * event, and one with no data is not dispatched. Whatever follows the last
 * blank line is an incomplete event and is dropped, as the standard says.
 */
export async function* parseEventStream(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  opts: ParseOptions = {},
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder("utf-8"); // replaces bad bytes; ignores a leading BOM
  let buf = "";
  let lastId = "";
  let event = "";
  let data: string[] = [];
  let afterCR = false;

  // The lines of buf that are complete, leaving the rest in buf.
  function* lines(): Generator<string> {
    let start = 0;
    for (let i = 0; i < buf.length; i++) {
      const c = buf.charCodeAt(i);
      if (afterCR && i === start && c === 10) {
        start = i + 1; // the LF of a CRLF whose CR ended the previous read
        afterCR = false;
        continue;
      }
      afterCR = false;
      if (c === 10 || c === 13) {
        yield buf.slice(start, i);
        if (c === 13) {
          if (i + 1 < buf.length) {
            if (buf.charCodeAt(i + 1) === 10) i++;
          } else {
            afterCR = true;
          }
        }
        start = i + 1;
      }
    }
    buf = buf.slice(start);
  }

  function* take(): Generator<SseEvent> {
    for (const line of lines()) {
      if (line === "") {
        opts.onLastEventId?.(lastId);
        if (data.length > 0) yield { id: lastId, event: event || "message", data: data.join("\n") };
        data = [];
        event = "";
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      switch (field) {
        case "data":
          data.push(value);
          break;
        case "event":
          event = value;
          break;
        case "id":
          if (!value.includes("\0")) lastId = value;
          break;
        case "retry":
          if (/^\d+$/.test(value)) opts.onRetry?.(Number(value));
          break;
      }
    }
  }

  for await (const chunk of chunks(body)) {
    buf += decoder.decode(chunk, { stream: true });
    yield* take();
  }
  buf += decoder.decode();
  yield* take();
}

async function* chunks(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (!("getReader" in body)) {
    yield* body;
    return;
  }
  // getReader rather than async iteration: not every browser iterates streams.
  const reader = body.getReader();
  let done = false;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) {
        done = true;
        return;
      }
      yield r.value;
    }
  } finally {
    // Left early (the caller stopped reading): the rest is not wanted.
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
