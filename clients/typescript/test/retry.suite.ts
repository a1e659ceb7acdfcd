import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Client, ConnectionError, Problem } from "../src/index.js";
import { sharedServer } from "./harness.js";
import { FaultProxy } from "./proxy.js";

let proxy: FaultProxy;
let direct: Client; // straight to the server, to check what it stored
let lb: Client; // through the proxy

before(async () => {
  const srv = await sharedServer();
  proxy = await new FaultProxy(srv.url).start();
  direct = new Client({ baseUrl: srv.url });
  lb = new Client({ baseUrl: proxy.url, backoffMs: 10, maxBackoffMs: 50 });
});

after(() => proxy.close());

const post = (suffix: string) => (method: string, url: string) => method === "POST" && url.endsWith(suffix);

describe("idempotent retries", () => {
  it("an append whose answer was lost is resent with its key and stored once", async () => {
    const s = await direct.createSession();
    const path = `/v1/sessions/${s.id}/messages`;
    proxy.inject({ kind: "drop-answer" }, post(path));

    const m = await lb.appendMessage(s.id, { role: "user", content: "stored once" });
    assert.equal(m.seq, 1);

    const sent = proxy.requests("POST", path);
    assert.equal(sent.length, 2, "the first attempt and one resend");
    assert.equal(sent[0]!.fault, "drop-answer");
    const key = sent[0]!.headers["idempotency-key"];
    assert.ok(key, "an Idempotency-Key was sent");
    assert.equal(sent[1]!.headers["idempotency-key"], key, "the resend reuses the key");

    const stored = await direct.listMessages(s.id).toArray();
    assert.deepEqual(
      stored.map((x) => [x.seq, x.content]),
      [[1, "stored once"]],
    );
    assert.equal(stored[0]!.id, m.id, "the resend answers what the first attempt stored");
  });

  it("a batch whose answer was lost is stored once", async () => {
    const s = await direct.createSession();
    const path = `/v1/sessions/${s.id}/messages/batch`;
    proxy.inject({ kind: "drop-answer" }, post(path));
    const got = await lb.appendMessages(s.id, [
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
    ]);
    assert.deepEqual(
      got.map((m) => m.seq),
      [1, 2],
    );
    assert.equal(proxy.requests("POST", path).length, 2);
    assert.equal((await direct.getSession(s.id)).message_count, 2);
  });

  it("each call gets a key of its own", async () => {
    const s = await direct.createSession();
    const path = `/v1/sessions/${s.id}/messages`;
    await lb.appendMessage(s.id, { role: "user", content: "same" });
    await lb.appendMessage(s.id, { role: "user", content: "same" });
    const keys = proxy.requests("POST", path).map((r) => r.headers["idempotency-key"]);
    assert.equal(new Set(keys).size, 2);
    assert.equal((await direct.getSession(s.id)).message_count, 2);
  });

  it("a session whose creation answer was lost is answered, not made twice", async () => {
    proxy.inject({ kind: "drop-answer" }, post("/v1/sessions"));
    const s = await lb.createSession({ title: "made once" });
    assert.equal(s.title, "made once");
    const sent = proxy.requests("POST", "/v1/sessions").filter((r) => r.url === "/v1/sessions");
    assert.equal(sent.at(-1)!.fault, undefined);
    assert.equal((await direct.getSession(s.id)).id, s.id);
  });

  it("a checkpoint whose answer was lost answers the checkpoint it wrote", async () => {
    const s = await direct.createSession();
    proxy.inject({ kind: "drop-answer" }, (m, u) => m === "PUT" && u.endsWith(`/${s.id}/checkpoint`));
    const c = await lb.putCheckpoint(s.id, { iteration: 1, expected_iteration: 0, state: { step: "one" } });
    assert.equal(c.iteration, 1);
    assert.deepEqual(c.state, { step: "one" });
    assert.equal(proxy.requests("PUT", `/v1/sessions/${s.id}/checkpoint`).length, 2);
  });
});

describe("what is retried", () => {
  it("503 and 429 are retried, honouring Retry-After", async () => {
    const s = await direct.createSession();
    const path = `/v1/sessions/${s.id}/messages`;
    const unavailable = { type: "urn:logbook:problem:storage_unavailable", title: "Service Unavailable", status: 503, detail: "x", code: "storage_unavailable" };
    const limited = { type: "urn:logbook:problem:rate_limited", title: "Too Many Requests", status: 429, detail: "x", code: "rate_limited" };
    proxy.inject({ kind: "answer", status: 503, body: unavailable }, post(path));
    proxy.inject({ kind: "answer", status: 429, headers: { "Retry-After": "1" }, body: limited }, post(path));
    const t0 = Date.now();
    const m = await lb.appendMessage(s.id, { role: "user", content: "after two refusals" });
    const waited = Date.now() - t0;
    assert.equal(m.seq, 1);
    assert.equal(proxy.requests("POST", path).length, 3);
    assert.ok(waited >= 950, `waited ${waited} ms, Retry-After asked 1 s`);
    assert.equal((await direct.getSession(s.id)).message_count, 1);
  });

  it("other 4xx answers are not retried", async () => {
    const s = await direct.createSession();
    const path = `/v1/sessions/${s.id}/messages`;
    const conflict = { type: "urn:logbook:problem:conflict", title: "Conflict", status: 409, detail: "injected", code: "conflict" };
    proxy.inject({ kind: "answer", status: 409, body: conflict }, post(path));
    await assert.rejects(lb.appendMessage(s.id, { role: "user", content: "x" }), (err: unknown) => {
      assert.ok(err instanceof Problem);
      assert.equal(err.code, "conflict");
      return true;
    });
    assert.equal(proxy.requests("POST", path).length, 1);

    await assert.rejects(lb.appendMessage(s.id, { role: "tool", content: "x" }), Problem); // a real 422
    assert.equal(proxy.requests("POST", path).length, 2);
  });

  it("retries give up after maxRetries with the last problem", async () => {
    const s = await direct.createSession();
    const path = `/v1/sessions/${s.id}/messages`;
    const few = new Client({ baseUrl: proxy.url, maxRetries: 2, backoffMs: 1 });
    const unavailable = { status: 503, code: "storage_unavailable", title: "Service Unavailable", detail: "x", type: "t" };
    for (let i = 0; i < 3; i++) proxy.inject({ kind: "answer", status: 503, body: unavailable }, post(path));
    await assert.rejects(few.appendMessage(s.id, { role: "user", content: "x" }), (err: unknown) => err instanceof Problem && err.status === 503);
    assert.equal(proxy.requests("POST", path).length, 3);
  });

  it("a fenced rewind whose answer was lost is resent under its key and answered as the first was", async () => {
    const s = await direct.createSession();
    await direct.appendMessages(s.id, [
      { role: "user", content: "1" },
      { role: "assistant", content: "2" },
    ]);
    const path = `/v1/sessions/${s.id}/rewind`;
    proxy.inject({ kind: "drop-answer" }, post(path));
    const r = await lb.rewind(s.id, { to_seq: 1, expected_last_seq: 2, messages: [{ role: "user", content: "3" }] });
    assert.equal(r.session.last_seq, 2);
    const sent = proxy.requests("POST", path);
    assert.equal(sent.length, 2);
    const keys = sent.map((x) => x.headers["idempotency-key"]);
    assert.ok(keys[0], "the client keyed the rewind");
    assert.equal(keys[0], keys[1]);
    assert.equal((await direct.getSession(s.id)).last_seq, 2, "it applied once");
  });

  it("a key still in flight is waited for", async () => {
    const s = await direct.createSession();
    const path = `/v1/sessions/${s.id}/compactions`;
    await direct.appendMessage(s.id, { role: "user", content: "1" });
    const busy = { type: "urn:logbook:problem:idempotency_in_progress", title: "Conflict", status: 409, detail: "x", code: "idempotency_in_progress" };
    proxy.inject({ kind: "answer", status: 409, body: busy }, post(path));
    const c = await lb.createCompaction(s.id, { through_seq: 1, summary: "one" });
    assert.equal(c.through_seq, 1);
    assert.equal(proxy.requests("POST", path).length, 2);
  });
});
