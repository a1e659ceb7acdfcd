import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Client, parseEventStream, type LogbookEvent, type Message, type SseEvent } from "../src/index.js";
import { sharedServer } from "./harness.js";
import { FaultProxy } from "./proxy.js";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      c.close();
    },
  });
}

async function parse(chunks: string[], onRetry?: (ms: number) => void): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of parseEventStream(streamOf(chunks), { onRetry })) out.push(e);
  return out;
}

describe("text/event-stream parsing", () => {
  it("joins multi-line data with \\n and skips comments", async () => {
    const got = await parse([": live\n\nid: 7\nevent: message.appended\ndata: {\"a\":\ndata: 1}\n\n: heartbeat\n\n"]);
    assert.deepEqual(got, [{ id: "7", event: "message.appended", data: '{"a":\n1}' }]);
  });

  it("reads events split anywhere, with CRLF, CR or LF line ends", async () => {
    const text = "retry: 1500\r\nid: 1\r\nevent: x\r\ndata: one\r\n\r\nid: 2\rdata: two\r\rdata:three\n\n";
    const whole = await parse([text]);
    const expected = [
      { id: "1", event: "x", data: "one" },
      { id: "2", event: "message", data: "two" },
      { id: "2", event: "message", data: "three" }, // the id persists; no space after the colon is fine
    ];
    assert.deepEqual(whole, expected);
    for (let cut = 1; cut < text.length; cut++) {
      assert.deepEqual(await parse([text.slice(0, cut), text.slice(cut)]), expected, `split at ${cut}`);
    }
    const bytes = Array.from(text); // one character a chunk
    let retry = 0;
    assert.deepEqual(await parse(bytes, (ms) => (retry = ms)), expected);
    assert.equal(retry, 1500);
  });

  it("keeps multi-byte characters split across chunks, and drops an unfinished event", async () => {
    const enc = new TextEncoder().encode("data: é€😀\n\ndata: unfinished");
    const chunks: Uint8Array[] = Array.from(enc, (b) => new Uint8Array([b]));
    const out: SseEvent[] = [];
    for await (const e of parseEventStream((async function* () { yield* chunks; })())) out.push(e);
    assert.deepEqual(out, [{ id: "", event: "message", data: "é€😀" }]);
  });

  it("does not dispatch a block without data, but keeps its id", async () => {
    const ids: string[] = [];
    const out: SseEvent[] = [];
    for await (const e of parseEventStream(streamOf(["retry: 1000\nid: 41\n: live\n\n", "id: 42\ndata\n\nid: 43\ndata: cut off"]), {
      onLastEventId: (id) => ids.push(id),
    })) {
      out.push(e);
    }
    assert.deepEqual(out, [{ id: "42", event: "message", data: "" }]);
    assert.deepEqual(ids, ["41", "42"], "an unfinished block does not move the last event id");
  });
});

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; !cond(); i++) {
    if (i > 1000) assert.fail("gave up waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("the live feed", () => {
  let proxy: FaultProxy;
  let direct: Client;
  let lb: Client;

  before(async () => {
    const srv = await sharedServer();
    proxy = await new FaultProxy(srv.url).start();
    direct = new Client({ baseUrl: srv.url });
    lb = new Client({ baseUrl: proxy.url });
  });

  after(() => proxy.close());

  it("receives appended messages and resumes after its connection is cut", { timeout: 30_000 }, async (t) => {
    const s = await direct.createSession();
    await direct.appendMessage(s.id, { role: "user", content: "before the feed" });

    const ctl = new AbortController();
    t.after(() => ctl.abort()); // also when an assertion fails
    const feed = lb.events(s.id, { afterSeq: 0, types: ["message.appended"], signal: ctl.signal });
    const got: LogbookEvent[] = [];
    const iter = feed[Symbol.asyncIterator]();
    const next = async (): Promise<LogbookEvent> => {
      const r = await Promise.race([
        iter.next(),
        new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`no event after ${got.length}`)), 10_000)),
      ]);
      assert.equal(r.done, false);
      got.push(r.value as LogbookEvent);
      return r.value as LogbookEvent;
    };

    assert.equal(((await next()).data as Message).content, "before the feed");
    await direct.appendMessage(s.id, { role: "assistant", content: "live 2" });
    await direct.appendMessages(s.id, [
      { role: "user", content: "line one\nline two" },
      { role: "assistant", content: "live 4", metadata: { note: "a\nb" } },
    ]);
    await next();
    await next();
    await next();
    const lastBeforeCut = feed.lastEventId;
    assert.equal(lastBeforeCut, got.at(-1)!.id);

    assert.equal(proxy.cutStreams(), 1, "one feed connection was open");
    // Written while the feed is down: it must still arrive, once.
    await direct.appendMessage(s.id, { role: "user", content: "while cut 5" });
    await direct.appendMessage(s.id, { role: "assistant", content: "while cut 6" });
    await next();
    await next();
    await direct.appendMessage(s.id, { role: "user", content: "after 7" });
    await next();

    assert.deepEqual(
      got.map((e) => (e.data as Message).seq),
      [1, 2, 3, 4, 5, 6, 7],
    );
    assert.equal((got[2]!.data as Message).content, "line one\nline two");
    assert.deepEqual((got[3]!.data as Message).metadata, { note: "a\nb" });
    const ids = got.map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length, "each event has an id of its own");
    assert.ok(ids.every((id) => typeof id === "string" && !/^\d+$/.test(id)), "ids are opaque strings, not numbers");
    assert.ok(got.every((e) => e.event === "message.appended"));
    assert.equal(feed.connections, 2);

    const conns = proxy.requests("GET", `/v1/sessions/${s.id}/events`);
    assert.equal(conns.length, 2);
    assert.equal(conns[0]!.headers["last-event-id"], undefined);
    assert.match(conns[0]!.url, /after_seq=0/);
    assert.equal(conns[1]!.headers["last-event-id"], lastBeforeCut, "it resumed with Last-Event-ID");
    assert.doesNotMatch(conns[1]!.url, /after_seq/);

    // Aborting ends the iteration, without an error.
    const pending = iter.next();
    ctl.abort();
    assert.deepEqual(await pending, { done: true, value: undefined });
  });

  it("a for-await loop over the tenant feed ends on abort and can resume later", { timeout: 30_000 }, async () => {
    const s = await direct.createSession();
    const ctl = new AbortController();
    const feed = lb.tenantEvents({ sessionId: s.id, signal: ctl.signal });
    const seen: string[] = [];
    const loop = (async () => {
      for await (const e of feed) {
        seen.push(e.event);
        if (seen.length === 2) ctl.abort();
      }
    })();
    try {
      // The feed starts now: write once it has read where (its opening block).
      await until(() => feed.lastEventId !== undefined);
      await direct.updateSession(s.id, { title: "renamed" });
      await direct.appendMessage(s.id, { role: "user", content: "hello" });
      await loop;
    } finally {
      ctl.abort();
    }
    assert.deepEqual(seen, ["session.updated", "message.appended"]);

    // Later, from where it stopped.
    await direct.appendMessage(s.id, { role: "assistant", content: "missed nothing" });
    const again = lb.tenantEvents({ sessionId: s.id, lastEventId: feed.lastEventId!, reconnect: false });
    for await (const e of again) {
      assert.equal(e.event, "message.appended");
      assert.equal((e.data as Message).content, "missed nothing");
      break;
    }
  });

  it("a feed cut before its first event resumes from where it started", { timeout: 30_000 }, async (t) => {
    const s = await direct.createSession();
    const ctl = new AbortController();
    t.after(() => ctl.abort());
    const feed = lb.events(s.id, { signal: ctl.signal }); // from now
    const iter = feed[Symbol.asyncIterator]();
    const first = iter.next();
    await until(() => feed.lastEventId !== undefined); // its opening block read
    const start = feed.lastEventId;
    assert.match(start ?? "", /^[A-Za-z0-9_-]+$/, "the opening block names the start");
    proxy.cutStreams();
    await direct.appendMessage(s.id, { role: "user", content: "written while cut" });
    const r = await first;
    assert.equal((r.value as LogbookEvent).event, "message.appended");
    assert.equal(((r.value as LogbookEvent).data as Message).content, "written while cut");
    const conns = proxy.requests("GET", `/v1/sessions/${s.id}/events`);
    assert.equal(conns.at(-1)!.headers["last-event-id"], start);
    await iter.return(undefined);
  });

  it("an unknown session is a Problem, not a reconnect loop", { timeout: 30_000 }, async () => {
    await assert.rejects(
      (async () => {
        for await (const _ of lb.events("no-such-session")) assert.fail("no event expected");
      })(),
      (err: unknown) => (err as { code?: string }).code === "not_found",
    );
  });
});
