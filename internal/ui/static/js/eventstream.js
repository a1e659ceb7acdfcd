// A text/event-stream parser, as the HTML standard describes it
// (https://html.spec.whatwg.org/multipage/server-sent-events.html): fed text
// in chunks cut anywhere, it calls back each event, and remembers the last
// event id, also from blocks without data (Logbook opens every feed with
// such a block, "id: <start>").

export class EventStreamParser {
  /**
   * @param {object} on
   * @param {(ev: {id: string, event: string, data: string}) => void} on.event
   * @param {(id: string) => void} [on.id] called when the last event id changes
   * @param {(ms: number) => void} [on.retry]
   * @param {(text: string) => void} [on.comment]
   */
  constructor(on) {
    this.on = on;
    this.buf = "";
    this.first = true;
    this.lastEventId = "";
    this.reset();
  }

  reset() {
    this.data = "";
    this.hasData = false;
    this.type = "";
    this.idBuf = null;
  }

  /** push feeds a chunk of decoded text. */
  push(text) {
    if (this.first && text.length > 0) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      this.first = false;
    }
    this.buf += text;
    let start = 0;
    for (;;) {
      let i = start;
      const n = this.buf.length;
      while (i < n && this.buf[i] !== "\n" && this.buf[i] !== "\r") i++;
      if (i >= n) break;
      // A CR at the very end may be the first half of a CRLF: wait for more.
      if (this.buf[i] === "\r" && i + 1 >= n) break;
      this.line(this.buf.slice(start, i));
      start = this.buf[i] === "\r" && this.buf[i + 1] === "\n" ? i + 2 : i + 1;
    }
    this.buf = this.buf.slice(start);
  }

  /** end is the end of the stream: a lone CR still ends its line; an unfinished event is dropped. */
  end() {
    if (this.buf.endsWith("\r")) this.line(this.buf.slice(0, -1));
    this.buf = "";
    this.reset();
  }

  line(line) {
    if (line === "") return this.dispatch();
    if (line[0] === ":") {
      this.on.comment?.(line.slice(1).trimStart());
      return;
    }
    const colon = line.indexOf(":");
    let field = line;
    let value = "";
    if (colon >= 0) {
      field = line.slice(0, colon);
      value = line.slice(colon + 1);
      if (value[0] === " ") value = value.slice(1);
    }
    switch (field) {
      case "event":
        this.type = value;
        break;
      case "data":
        this.data += value + "\n";
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\0")) this.idBuf = value;
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) this.on.retry?.(Number(value));
        break;
      default: // unknown fields are ignored
    }
  }

  dispatch() {
    if (this.idBuf !== null && this.idBuf !== this.lastEventId) {
      this.lastEventId = this.idBuf;
      this.on.id?.(this.lastEventId);
    }
    if (this.hasData) {
      this.on.event({ id: this.lastEventId, event: this.type || "message", data: this.data.slice(0, -1) });
    }
    this.reset();
  }
}
