import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { Client, ConnectionError, Problem, type MessageInput } from "../src/index.js";
import { freePort, sharedServer, startServer } from "./harness.js";

let lb: Client;

before(async () => {
  lb = new Client({ baseUrl: (await sharedServer()).url });
});

async function problem(p: Promise<unknown>): Promise<Problem> {
  try {
    await p;
  } catch (err) {
    if (err instanceof Problem) return err;
    throw err;
  }
  assert.fail("expected a Problem, got an answer");
}

describe("a whole agent turn", () => {
  it("stores a turn with a tool call, checkpoints it and hands it over", async () => {
    const s = await lb.createSession({ agent_id: "support-bot", title: "Refund question", metadata: { channel: "web" } });
    assert.match(s.id, /^ses_[0-9a-f]{32}$/);
    assert.equal(s.status, "created");

    const user = await lb.appendMessage(s.id, { role: "user", content: "Can I get a refund for order 1042?", tokens: 12 });
    assert.equal(user.seq, 1);
    const call = await lb.appendMessage(s.id, {
      role: "assistant",
      content: "",
      model: "gpt-4o",
      tokens: 40,
      cost: 0.0004,
      tool_calls: [{ id: "call_1", name: "lookup_order", arguments: '{"order_id": 1042}' }],
    });
    assert.deepEqual(call.tool_calls, [{ id: "call_1", name: "lookup_order", arguments: '{"order_id": 1042}' }]);
    const cp1 = await lb.putCheckpoint(s.id, {
      iteration: 1,
      expected_iteration: 0,
      state: { pending_tool_calls: [{ id: "call_1", tool_name: "lookup_order", tool_input: { order_id: 1042 } }], scratch: { plan: ["look up"] } },
    });
    assert.equal(cp1.last_seq, 2);

    const [tool, reply] = await lb.appendMessages(s.id, [
      { role: "tool", tool_call_id: "call_1", name: "lookup_order", content: '{"refundable": true}' },
      { role: "assistant", content: "Yes: order 1042 is refundable.", tokens: 25, cost: 0.0003 },
    ]);
    assert.equal(tool!.seq, 3);
    assert.equal(reply!.seq, 4);
    const cp2 = await lb.patchCheckpoint(s.id, {
      iteration: 2,
      expected_iteration: 1,
      state_patch: { pending_tool_calls: null, stop_reason: "end_turn" },
    });
    assert.deepEqual(cp2.state, { scratch: { plan: ["look up"] }, stop_reason: "end_turn" });

    // Another worker asks for the hand-over.
    const r = await lb.resume(s.id);
    assert.equal(r.validation.ok, true, JSON.stringify(r.validation));
    assert.equal(r.checkpoint?.iteration, 2);
    assert.equal(r.session.message_count, 4);
    assert.equal(r.session.total_tokens, 77);
    assert.deepEqual(r.messages_since_checkpoint, []);
    assert.deepEqual(r.pending_tool_calls, []);

    const ctx = await lb.getContext(s.id);
    assert.deepEqual(
      ctx.messages.map((m) => m.role),
      ["user", "assistant", "tool", "assistant"],
    );
    assert.equal((await lb.getCheckpoint(s.id, 1)).iteration, 1);
    assert.deepEqual(
      (await lb.listCheckpoints(s.id).toArray()).map((c) => c.iteration),
      [2, 1],
    );
  });

  it("reports an interrupted tool call on resume, and repair answers it", async () => {
    const s = await lb.createSession();
    await lb.appendMessages(s.id, [
      { role: "user", content: "What is the weather in Paris?" },
      { role: "assistant", content: "", tool_calls: [{ id: "call_w", name: "weather", arguments: '{"city":"Paris"}' }] },
    ]);
    const r = await lb.resume(s.id);
    assert.equal(r.validation.ok, false);
    assert.deepEqual(
      r.validation.problems.map((p) => [p.code, p.repair.automatic]),
      [["unanswered_tool_call", true]],
    );
    const fixed = await lb.repair(s.id, { expected_last_seq: 2 });
    assert.equal(fixed.messages.length, 1);
    assert.equal(fixed.messages[0]!.role, "tool");
    assert.equal(fixed.messages[0]!.tool_call_id, "call_w");
    assert.equal(fixed.messages[0]!.is_error, true);
    assert.equal((await lb.resume(s.id)).validation.ok, true);
  });

  it("rewinds, fenced, and searches", async () => {
    const s = await lb.createSession();
    await lb.appendMessages(s.id, [
      { role: "user", content: "zebra crossing near the harbour" },
      { role: "assistant", content: "a wrong answer" },
    ]);
    const stale = await problem(lb.rewind(s.id, { to_seq: 1, expected_last_seq: 5 }));
    assert.equal(stale.code, "stale_seq");
    const rw = await lb.rewind(s.id, { to_seq: 1, expected_last_seq: 2, messages: [{ role: "assistant", content: "the right answer" }] });
    assert.equal(rw.removed_messages, 1);
    assert.deepEqual(
      rw.messages.map((m) => [m.seq, m.content]),
      [[2, "the right answer"]],
    );
    // The indexer runs beside the writer: wait for it.
    for (let i = 0; ; i++) {
      const hits = await lb.searchMessages({ q: "zebra harbour", session_id: s.id });
      if (hits.data.length > 0) {
        assert.equal(hits.data[0]!.seq, 1);
        break;
      }
      if (i > 100) assert.fail("search never found the message");
      await new Promise((r) => setTimeout(r, 20));
    }
  });
});

describe("problems", () => {
  it("an unknown session is not_found, with the request id", async () => {
    const p = await problem(lb.getSession("no-such-session"));
    assert.equal(p.status, 404);
    assert.equal(p.code, "not_found");
    assert.equal(p.title, "Not Found");
    assert.match(p.detail, /no-such-session/);
    assert.equal(p.instance, "/v1/sessions/no-such-session");
    assert.ok(p.requestId, "X-Request-Id is carried");
    assert.ok(p instanceof Error);
  });

  it("a bad field is named", async () => {
    const s = await lb.createSession();
    const one = await problem(lb.appendMessage(s.id, { role: "tool", content: "orphan" }));
    assert.equal(one.status, 422);
    assert.equal(one.code, "validation_failed");
    assert.deepEqual(Object.keys(one.fields), ["tool_call_id"]);

    const batch = await problem(
      lb.appendMessages(s.id, [
        { role: "user", content: "hi" },
        { role: "tool", tool_call_id: "call_x", content: "?" },
      ]),
    );
    assert.equal(batch.code, "unknown_tool_call");
    assert.deepEqual(
      batch.errors.map((e) => e.field),
      ["messages[1].tool_call_id"],
    );
    assert.equal((await lb.getSession(s.id)).message_count, 0, "nothing of the batch was written");

    const bad = await problem(lb.appendMessage(s.id, { role: "user", content: "x", bogus: 1 } as MessageInput));
    assert.equal(bad.code, "validation_failed");
    assert.ok("bogus" in bad.fields, JSON.stringify(bad.errors));
  });

  it("a stale checkpoint says the latest iteration", async () => {
    const s = await lb.createSession();
    await lb.putCheckpoint(s.id, { iteration: 3, state: {} });
    const p = await problem(lb.putCheckpoint(s.id, { iteration: 4, expected_iteration: 2, state: {} }));
    assert.equal(p.status, 409);
    assert.equal(p.code, "stale_iteration");
    assert.equal(p.latestIteration, 3);
  });
});

describe("pages", () => {
  it("walks every page of a session's messages", async () => {
    const s = await lb.createSession();
    const msgs = Array.from({ length: 25 }, (_, i): MessageInput => ({ role: i % 2 ? "assistant" : "user", content: `m${i + 1}` }));
    await lb.appendMessages(s.id, msgs);

    const pages = [];
    for await (const page of lb.listMessages(s.id, { limit: 10 }).pages()) pages.push(page);
    assert.deepEqual(
      pages.map((p) => [p.data.length, p.has_more]),
      [
        [10, true],
        [10, true],
        [5, false],
      ],
    );

    const seqs: number[] = [];
    for await (const m of lb.listMessages(s.id, { limit: 7 })) seqs.push(m.seq);
    assert.deepEqual(seqs, Array.from({ length: 25 }, (_, i) => i + 1));

    const newest = await lb.listMessages(s.id, { order: "desc", limit: 4 }).toArray(6);
    assert.deepEqual(
      newest.map((m) => m.seq),
      [25, 24, 23, 22, 21, 20],
    );
    const users = await lb.listMessages(s.id, { role: "user", limit: 5 }).toArray();
    assert.equal(users.length, 13);

    // Go on later from a page's cursor.
    const first = await lb.listMessages(s.id, { limit: 20 }).firstPage();
    const rest = await lb.listMessages(s.id, { limit: 20, cursor: first.next_cursor! }).toArray();
    assert.deepEqual(
      rest.map((m) => m.seq),
      [21, 22, 23, 24, 25],
    );
  });

  it("filters sessions on metadata across pages", async () => {
    const tag = `run-${Date.now()}`;
    for (let i = 0; i < 5; i++) await lb.createSession({ metadata: { batch: tag, i } });
    const found = await lb.listSessions({ metadata: { batch: tag }, limit: 2 }).toArray();
    assert.equal(found.length, 5);
    assert.deepEqual(
      found.map((s) => s.metadata.i),
      [4, 3, 2, 1, 0],
    );
  });
});

describe("bearer auth", () => {
  it("sends the key; a keyless client is refused once a key exists", async () => {
    const srv = await startServer(); // its own: a key ends open mode for good
    try {
      const open = new Client({ baseUrl: srv.url });
      const key = await open.request<{ key: string }>("POST", "/v1/admin/keys", { body: { scope: "write", name: "ts" } });
      assert.equal(key.status, 201);
      const p = await problem(open.listSessions().firstPage());
      assert.equal(p.status, 401);
      assert.equal(p.code, "unauthorized");
      const keyed = new Client({ baseUrl: srv.url, apiKey: key.body.key });
      const s = await keyed.createSession({ title: "with a key" });
      assert.equal((await keyed.getSession(s.id)).title, "with a key");
    } finally {
      await srv.stop();
    }
  });

  it("an unreachable server is a ConnectionError that applied nothing", async () => {
    const dead = new Client({ baseUrl: `http://127.0.0.1:${await freePort()}`, maxRetries: 1, backoffMs: 1 });
    await assert.rejects(dead.createSession(), (err: unknown) => {
      assert.ok(err instanceof ConnectionError, String(err));
      assert.equal(err.maybeApplied, false);
      assert.equal(err.attempts, 2);
      return true;
    });
  });
});
