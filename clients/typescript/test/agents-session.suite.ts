// LogbookSession's optional capabilities of the current Agents SDK, on both
// backends: compaction through the SDK's own run loop and
// OpenAIResponsesCompactionSession (in one write, and killed between its
// calls, nothing lost), history transactions and mutations, inline images
// stored once, reasoning ids and provider file ids.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { run, type AgentInputItem } from "@openai/agents";
import { Client, Problem } from "../src/index.js";
import { LogbookSession, SessionHistoryError } from "../src/openai-agents.js";
import { COMPACTED, compactionSession, echoModel, ScriptedModel, scriptedAgent } from "./agents-fixtures.js";
import { backends } from "./backends.js";
import type { RunningServer } from "./harness.js";

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v));
const user = (text: string) => ({ type: "message", role: "user", content: text }) as AgentInputItem;

/** A client that records each request's method, path and body size. */
function recordingClient(url: string, log: { method: string; path: string; bytes: number }[]): Client {
  return new Client({
    baseUrl: url,
    fetch: (input, init) => {
      const u = new URL(String(input));
      log.push({ method: init?.method ?? "GET", path: u.pathname, bytes: typeof init?.body === "string" ? init.body.length : 0 });
      return fetch(input, init);
    },
  });
}

/** Runs the compaction child until it reports `want`, then kills it with SIGKILL. */
async function killChildAt(url: string, sessionId: string, stopAt: string, want: string): Promise<void> {
  const child = spawn(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), "agents-compaction-child.js"), url, sessionId, stopAt], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the child never said ${want}: ${out} ${err}`)), 30_000);
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
      if (out.includes(want)) {
        clearTimeout(t);
        resolve();
      }
    });
    void exited.then((code) => reject(new Error(`the child exited (${code}) before ${want}: ${out} ${err}`)));
  });
  child.kill("SIGKILL");
  await exited;
}

for (const backend of backends) {
  describe(`LogbookSession's capabilities (${backend.name})`, () => {
    let srv: RunningServer | undefined;
    let skip: string | undefined;
    const server = async (t: { skip(msg: string): void }): Promise<RunningServer | undefined> => {
      if (!srv && !skip) {
        const s = await backend.server();
        if (typeof s === "string") skip = s;
        else srv = s;
      }
      if (skip) t.skip(skip);
      return srv;
    };

    it("compacts through the SDK's run loop and OpenAIResponsesCompactionSession in one write, keeping the originals", async (t) => {
      const s = await server(t);
      if (!s) return;
      const log: { method: string; path: string; bytes: number }[] = [];
      const lb = recordingClient(s.url, log);
      const inner = new LogbookSession({ client: lb });
      const calls: unknown[] = [];
      const session = compactionSession(inner, calls);
      const model = echoModel();
      const agent = scriptedAgent(model);

      await run(agent, "turn 1", { session });
      assert.equal(calls.length, 1, "compacted after the turn");
      assert.deepEqual(await session.getItems(), json(COMPACTED));
      const writes = log.filter((r) => r.method !== "GET").map((r) => r.path.replace(inner.sessionId, "S"));
      assert.ok(writes.includes("/v1/sessions/S/compactions"), `a compaction record: ${writes}`);
      assert.ok(!writes.includes("/v1/sessions/S/rewind"), `no clear on its own: ${writes}`);

      // The originals stay in Logbook, under a compaction record; the next
      // turn's model input starts from the compaction.
      const msgs = await lb.listMessages(inner.sessionId).toArray();
      assert.deepEqual(
        msgs.slice(0, 2).map((m) => m.content),
        ["turn 1", [{ type: "text", text: "answer 1" }]],
      );
      const [cmp] = await lb.listCompactions(inner.sessionId).toArray();
      assert.equal(cmp!.through_seq, 2);
      assert.deepEqual(cmp!.provider_item, COMPACTED[1]);
      await run(agent, "turn 2", { session });
      assert.deepEqual(model.inputs[1]![0], json(COMPACTED[1]), "the model's input starts at the compaction item");
    });

    it("is killed between a compaction's calls and resumed: nothing is lost", async (t) => {
      const s = await server(t);
      if (!s) return;
      const lb = new Client({ baseUrl: s.url });
      for (const [stopAt, want] of [
        ["after-clear", "cleared"],
        ["after-add", "added"],
      ] as const) {
        const id = `ses_kill_${stopAt}_${Date.now()}`;
        const first = new LogbookSession({ client: lb, sessionId: id });
        await first.addItems([user("turn 1"), user("turn 2")]);
        await killChildAt(s.url, id, stopAt, want);

        // What the killed process left: the history before the compaction
        // whole (its turn included), or the compacted one; never less.
        const after = await new LogbookSession({ client: lb, sessionId: id }).getItems();
        const texts = after.map((i) => ("content" in i && typeof i.content === "string" ? i.content : i.type));
        if (stopAt === "after-clear") assert.deepEqual(texts.slice(0, 3), ["turn 1", "turn 2", "turn 3"], `${stopAt}: ${texts}`);
        else assert.deepEqual(after, json(COMPACTED), stopAt);
        const all = await lb.listMessages(id).toArray();
        assert.deepEqual(
          all.slice(0, 3).map((m) => m.content),
          ["turn 1", "turn 2", "turn 3"],
          `${stopAt}: every message written is still in Logbook`,
        );

        // Resumed: a new process (a new session object) runs the next turn
        // and compacts from what is there.
        const calls: unknown[] = [];
        const resumed = compactionSession(new LogbookSession({ client: lb, sessionId: id }), calls);
        const model = echoModel();
        await run(scriptedAgent(model), "turn 4", { session: resumed });
        assert.deepEqual(
          model.inputs[0]!.map((i) => ("content" in i && typeof i.content === "string" ? i.content : i.type)).slice(-1),
          ["turn 4"],
        );
        if (stopAt === "after-clear") assert.ok(model.inputs[0]!.length >= 4, "the model saw the whole history");
        // Compacted again, or (when the SDK finds the stored history wider
        // than what the model saw) the compaction and the new turn after it.
        const final = await resumed.getItems();
        assert.deepEqual(final.slice(0, 2), json(COMPACTED), stopAt);
        if (final.length > 2) assert.deepEqual(final[2], user("turn 4"), stopAt);
        assert.equal((await lb.resume(id)).validation.ok, true);
      }
    });

    it("applies history transactions once, atomically, and refuses a changed one", async (t) => {
      const s = await server(t);
      if (!s) return;
      const lb = new Client({ baseUrl: s.url });
      const session = new LogbookSession({ client: lb });
      const a = [user("a"), user("b")];
      await session.applyHistoryTransaction({ operationId: "op-1", transaction: { type: "append_items", items: a } });
      await session.applyHistoryTransaction({ operationId: "op-1", transaction: { type: "append_items", items: a } });
      assert.deepEqual(await session.getItems(), a, "a repeat appends nothing");
      await assert.rejects(
        session.applyHistoryTransaction({ operationId: "op-1", transaction: { type: "append_items", items: [user("c")] } }),
        SessionHistoryError,
      );

      const replacement = [user("b2"), user("c")];
      const replace = { operationId: "op-2", transaction: { type: "replace_suffix" as const, expectedSuffix: [user("b")], replacement } };
      await session.applyHistoryTransaction(replace);
      assert.deepEqual(await session.getItems(), [user("a"), ...replacement]);
      // Repeated after its answer was lost, by another process: applied already.
      await new LogbookSession({ client: lb, sessionId: session.sessionId }).applyHistoryTransaction(replace);
      assert.deepEqual(await session.getItems(), [user("a"), ...replacement]);
      await assert.rejects(
        session.applyHistoryTransaction({ operationId: "op-3", transaction: { type: "replace_suffix", expectedSuffix: [user("b")], replacement: [] } }),
        /no longer matches/,
      );
      await assert.rejects(session.applyHistoryTransaction({ operationId: " ", transaction: { type: "append_items", items: [] } }), SessionHistoryError);
      assert.deepEqual(await session.getItems(), [user("a"), ...replacement], "refusals change nothing");
    });

    it("applies history mutations (a function call replaced) in one fenced rewind", async (t) => {
      const s = await server(t);
      if (!s) return;
      const lb = new Client({ baseUrl: s.url });
      const session = new LogbookSession({ client: lb });
      const call = { type: "function_call", callId: "c1", name: "f", arguments: '{"x":1}', status: "completed" } as AgentInputItem;
      const result = { type: "function_call_result", callId: "c1", name: "f", status: "completed", output: "ok" } as AgentInputItem;
      await session.addItems([user("go"), call, result]);
      const fixed = { ...call, arguments: '{"x":2}' } as AgentInputItem & { type: "function_call" };
      await session.applyHistoryMutations({ mutations: [{ type: "replace_function_call", callId: "c1", replacement: fixed }] });
      await session.applyHistoryMutations({ mutations: [{ type: "replace_function_call", callId: "c1", replacement: fixed }] });
      assert.deepEqual(await session.getItems(), [user("go"), fixed, result]);
      const msgs = await lb.listMessages(session.sessionId).toArray();
      assert.equal(msgs[1]!.tool_calls![0]!.arguments, '{"x":2}');
      assert.equal((await lb.resume(session.sessionId)).validation.ok, true);
    });

    it("stores a 2 MB image once, keeps reasoning ids and names OpenAI files in typed parts", async (t) => {
      const s = await server(t);
      if (!s) return;
      const log: { method: string; path: string; bytes: number }[] = [];
      const lb = recordingClient(s.url, log);
      const session = new LogbookSession({ client: lb });
      const image = "data:image/png;base64," + Buffer.alloc(2_000_000, 7).toString("base64");
      const items = [
        { type: "message", role: "user", content: [{ type: "input_text", text: "what is this?" }, { type: "input_image", image, detail: "high" }] },
        { type: "message", role: "user", content: [{ type: "input_image", image: { id: "file-abc123" } }, { type: "input_file", file: { id: "file-pdf9" }, filename: "a.pdf" }] },
        { type: "reasoning", id: "rs_keep_me", content: [{ type: "input_text", text: "looked" }], providerData: { encryptedContent: "gAAA" } },
      ] as AgentInputItem[];
      await session.addItems(items);
      const append = log.find((r) => r.method === "POST" && r.path.endsWith("/messages/batch"))!;
      assert.ok(append.bytes < image.length * 1.2, `the image travels once: ${append.bytes} bytes for a ${image.length}-character URL`);
      assert.deepEqual(await session.getItems(), json(items));

      const msgs = await lb.listMessages(session.sessionId).toArray();
      assert.ok(!JSON.stringify(msgs[0]!.provider_item).includes(image.slice(30, 80)), "provider_item holds no base64");
      assert.deepEqual(msgs[1]!.content, [
        { type: "image", provider_data: { file_id: "file-abc123" } },
        { type: "file", filename: "a.pdf", provider_data: { file_id: "file-pdf9" } },
      ]);
      assert.equal((msgs[2]!.provider_item as { id: string }).id, "rs_keep_me");
      assert.equal(session.preserveReasoningItemIdsForPersistence(), true);
    });

    it("keeps the runner's clear-then-add one request, and a lone clear still lands", async (t) => {
      const s = await server(t);
      if (!s) return;
      const log: { method: string; path: string; bytes: number }[] = [];
      const lb = recordingClient(s.url, log);
      const session = new LogbookSession({ client: lb });
      await session.addItems([user("x"), user("y")]);
      log.length = 0;
      await session.clearSession();
      await session.addItems([user("z")]);
      assert.deepEqual(
        log.filter((r) => r.method === "POST").map((r) => r.path.split("/").pop()),
        ["rewind"],
        "one rewind carries the clear and the new items",
      );
      assert.deepEqual(await session.getItems(), [user("z")]);
      await session.clearSession();
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await lb.getSession(session.sessionId)).message_count, 0, "sent at the end of the tick");
      await assert.rejects(lb.getMessageByClientId(session.sessionId, "none"), Problem);
    });

    it("survives the SDK's run loop with a scripted tool call and a reasoning item", async (t) => {
      const s = await server(t);
      if (!s) return;
      const lb = new Client({ baseUrl: s.url });
      const model = new ScriptedModel([
        [
          { type: "reasoning", id: "rs_1", content: [{ type: "input_text", text: "thinking" }], providerData: { encryptedContent: "enc" } },
          { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "hi" }] },
        ],
      ]);
      const session = new LogbookSession({ client: lb });
      await run(scriptedAgent(model), "hello", { session });
      const items = await session.getItems();
      assert.deepEqual(
        items.map((i) => [i.type, "id" in i ? i.id : undefined]),
        [
          ["message", undefined],
          ["reasoning", "rs_1"],
          ["message", "msg_1"],
        ],
      );
    });
  });
}
