import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Client, LineError, Problem, type LineResult, type MessageInput } from "../src/index.js";
import { sharedServer, startServer, type RunningServer } from "./harness.js";
import { sharedPostgres } from "./postgres.js";
import { TcpProxy } from "./proxy.js";

let url: string;
let lb: Client;

/** A client that counts its requests. */
function counted(baseUrl: string, opts: { headers?: Record<string, string> } = {}): { client: Client; requests: () => number } {
  let n = 0;
  const client = new Client({
    baseUrl,
    backoffMs: 1,
    maxBackoffMs: 10,
    ...opts,
    fetch: (input, init) => {
      n++;
      return fetch(input, init);
    },
  });
  return { client, requests: () => n };
}

function userMessages(n: number, label: string): MessageInput[] {
  return Array.from({ length: n }, (_, i) => ({ role: "user" as const, content: `${label} ${i + 1}`, tokens: 1 }));
}

/** Fails unless results are messages stored in order from seq 1, and the session holds exactly them. */
async function wantStored(sessionId: string, results: LineResult[], messages: MessageInput[]): Promise<void> {
  assert.equal(results.length, messages.length);
  results.forEach((r, i) => {
    assert.equal(r.error, undefined, `line ${i + 1}: ${r.error?.message}`);
    assert.equal(r.line, i + 1);
    assert.ok(r.key);
    assert.equal(r.message!.seq, i + 1, `line ${i + 1}'s seq`);
    assert.equal(r.message!.content, messages[i]!.content);
  });
  const s = await lb.getSession(sessionId);
  assert.equal(s.last_seq, messages.length, "stored once each");
  assert.equal(s.message_count, messages.length);
}

async function lineError(p: Promise<unknown>): Promise<LineError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof LineError) return err;
    throw err;
  }
  assert.fail("expected a LineError");
}

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`streams of messages (${backend})`, () => {
    let own: RunningServer | undefined;
    let skip: string | undefined;
    before(async () => {
      if (backend === "SQLite") {
        url = (await sharedServer()).url;
      } else {
        const pg = await sharedPostgres();
        if (typeof pg === "string") {
          skip = pg;
          return;
        }
        own = await startServer({ db: await pg.database("streams") });
        url = own.url;
      }
      lb = new Client({ baseUrl: url });
    });
    after(async () => own?.stop());

    it("stores 1,000 messages on one request, in order, and a resend under the same keys stores none", async (t) => {
      if (skip) return t.skip(skip);
      const { client, requests } = counted(url);
      const s = await lb.createSession();
      const msgs = userMessages(1000, "message");
      const res = await client.appendMany(s.id, msgs, { keyPrefix: "load-1:" });
      assert.equal(requests(), 1, "one request");
      await wantStored(s.id, res, msgs);
      assert.equal(res[41]!.key, "load-1:42");

      const again = await client.appendMany(s.id, msgs, { keyPrefix: "load-1:" });
      await wantStored(s.id, again, msgs);
      assert.equal(again[999]!.message!.id, res[999]!.message!.id, "the resend answers what was stored");
    });

    it("in batch mode (fetch without streamed bodies), one request per batch, in order", async (t) => {
      if (skip) return t.skip(skip);
      const { client, requests } = counted(url);
      const s = await lb.createSession();
      const msgs = userMessages(600, "batched");
      const res = await client.appendMany(s.id, msgs, { mode: "batch", window: 100 });
      await wantStored(s.id, res, msgs);
      assert.ok(requests() >= 6, `${requests()} requests for 600 messages in batches of at most 100`);
    });

    describe("the first refusal stops the stream", () => {
      const cases: { name: string; session: () => Promise<string>; bad: MessageInput; at: number; code: string; field?: string; lastSeq?: number }[] = [
        {
          name: "a tool result without its call",
          session: async () => (await lb.createSession()).id,
          bad: { role: "tool", content: '{"refundable": true}' } as MessageInput,
          at: 4,
          code: "validation_failed",
          field: "tool_call_id",
          lastSeq: 3,
        },
        {
          name: "a key of another message (refused at commit)",
          session: async () => {
            const s = await lb.createSession();
            await lb.appendMany(s.id, [{ role: "user", content: "first", idempotency_key: "taken" }]);
            return s.id;
          },
          bad: { role: "user", content: "another", idempotency_key: "taken" },
          at: 2,
          code: "idempotency_conflict",
          lastSeq: 2,
        },
        { name: "no such session (refused whole)", session: async () => "ses_nope", bad: { role: "user", content: "x" }, at: 1, code: "not_found" },
      ];
      for (const tc of cases) {
        it(tc.name, async (t) => {
          if (skip) return t.skip(skip);
          const sid = await tc.session();
          const msgs = userMessages(8, "stopped");
          msgs[tc.at - 1] = tc.bad;
          const err = await lineError(lb.appendMany(sid, msgs));
          assert.equal(err.line, tc.at);
          assert.equal(err.message.split(`line ${tc.at}`).length, 2, `names the line once: ${err.message}`);
          assert.equal(err.code, tc.code);
          assert.ok(err.refused);
          const res = err.results!;
          assert.equal(res.length, msgs.length);
          for (const r of res) {
            if (r.line < tc.at) assert.ok(r.message, `line ${r.line} stored`);
            else if (r.line === tc.at) {
              const p = r.error!.cause as Problem;
              assert.equal(p.code, tc.code);
              if (tc.field) assert.ok(p.fields[tc.field], `names ${tc.field}: ${JSON.stringify(p.errors)}`);
              if (tc.lastSeq !== undefined) assert.equal(p.body.line, tc.at, "the problem names the line");
            } else {
              assert.equal(r.error?.code, "stream_stopped", `line ${r.line}`);
              assert.ok(r.error!.refused);
            }
          }
          if (tc.lastSeq !== undefined) assert.equal((await lb.getSession(sid)).last_seq, tc.lastSeq);
        });
      }
    });

    describe("a connection cut midway is resent from the first message not answered, and each stored once", () => {
      const body = '{"type":"urn:logbook:problem:storage_unavailable","title":"Service Unavailable","status":503,"detail":"injected","code":"storage_unavailable"}';
      const answer503 =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 0\r\nX-Request-Id: proxy\r\n" +
        `Connection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      for (const [name, fault] of [
        ["the request cut mid-line", { cutRequestAfter: 16 << 10 }],
        ["the answer cut after messages were stored", { cutAnswerAfter: 4 << 10 }],
        ["a 503 from a proxy", { answer: answer503 }],
      ] as const) {
        it(name, async (t) => {
          if (skip) return t.skip(skip);
          const proxy = await new TcpProxy(url).start();
          try {
            const s = await lb.createSession();
            proxy.plan(fault);
            const { client } = counted(proxy.url);
            const msgs = userMessages(500, name);
            const w = client.openStream(s.id, { window: 64 });
            const results = w.results();
            const got: LineResult[] = [];
            await Promise.all([
              (async () => {
                for (const m of msgs) await w.send(m);
                await w.close();
              })(),
              (async () => {
                for await (const r of results) got.push(r);
              })(),
            ]);
            assert.ok(proxy.connections >= 2, `${proxy.connections} connections: the broken one and a retry`);
            await wantStored(s.id, got, msgs);
          } finally {
            await proxy.close();
          }
        });
      }
    });

    it("never has more messages on their way than its window", async (t) => {
      if (skip) return t.skip(skip);
      const proxy = await new TcpProxy(url).start();
      try {
        const s = await lb.createSession();
        const { client } = counted(proxy.url, { headers: { "Accept-Encoding": "identity" } }); // answers the proxy can count
        const msgs = userMessages(300, "windowed");
        await wantStored(s.id, await client.appendMany(s.id, msgs, { window: 8 }), msgs);
        assert.equal(proxy.sent, 300, "the proxy counted every message");
        assert.ok(proxy.maxInFlight <= 8, `${proxy.maxInFlight} on their way at once`);
      } finally {
        await proxy.close();
      }
    });

    it("starts a new request when one is older than requestAgeMs; results stay in order", async (t) => {
      if (skip) return t.skip(skip);
      const { client, requests } = counted(url);
      const s = await lb.createSession();
      const w = client.openStream(s.id, { requestAgeMs: 0 });
      const results = w.results();
      const msgs = userMessages(5, "slow");
      const got: LineResult[] = [];
      for (const m of msgs) {
        await w.send(m);
        const r = await results.next();
        got.push(r.value as LineResult);
      }
      await w.close();
      assert.equal((await results.next()).done, true);
      assert.equal(requests(), 5, "one request per message");
      await wantStored(s.id, got, msgs);
    });

    it("after a refusal, send and close throw it; send after close throws", async (t) => {
      if (skip) return t.skip(skip);
      const s = await lb.createSession();
      const w = lb.openStream(s.id);
      await w.send({ role: "tool", content: "no call" } as MessageInput);
      const err = await lineError(w.close());
      assert.equal(err.code, "validation_failed");
      assert.equal(await lineError(w.send({ role: "user", content: "late" })), err);

      const empty = lb.openStream(s.id);
      await empty.close();
      await assert.rejects(empty.send({ role: "user", content: "late" }), /closed/);
      assert.throws(() => lb.openStream(s.id, { keyPrefix: "bad\n" }), TypeError);
    });
  });
}
