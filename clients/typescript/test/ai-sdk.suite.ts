// LogbookChatStore with the AI SDK's own streamText loop (a scripted model
// from ai/test), validateUIMessages and convertToModelMessages on what it
// loads, and byte-for-byte round trips of every part kind the SDK defines,
// 2 MB images included, on both backends.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { convertToModelMessages, stepCountIs, streamText, tool, validateUIMessages, type UIMessage } from "ai";
import { MockLanguageModelV4, simulateReadableStream } from "ai/test";
import { z } from "zod";
import { Client } from "../src/index.js";
import { LogbookChatStore } from "../src/ai-sdk.js";
import { backends } from "./backends.js";
import type { RunningServer } from "./harness.js";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const finish = (reason: "stop" | "tool-calls") => ({ type: "finish" as const, finishReason: { unified: reason, raw: reason }, usage });

/** One model call's stream: text, and tool calls. */
function step(text: string, calls: { id: string; name: string; input: unknown }[] = [], reasoning?: string) {
  const chunks: unknown[] = [{ type: "stream-start", warnings: [] }];
  if (reasoning) chunks.push({ type: "reasoning-start", id: "r" }, { type: "reasoning-delta", id: "r", delta: reasoning }, { type: "reasoning-end", id: "r" });
  if (text) chunks.push({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: text }, { type: "text-end", id: "t" });
  for (const c of calls) chunks.push({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.input) });
  chunks.push(finish(calls.length > 0 ? "tool-calls" : "stop"));
  return { stream: simulateReadableStream({ chunks: chunks as never[] }) };
}

const tools = {
  weather: tool({
    description: "The weather in a city.",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, temperature: 18.5, conditions: ["sunny", "windy"], alerts: null }),
  }),
  askUser: tool({ description: "Asks the user (the browser answers).", inputSchema: z.object({ question: z.string() }) }),
};

let ids = 0;

/** One turn of the streamText loop over a scripted model; resolves with what onFinish saved. */
async function turn(store: LogbookChatStore, chatId: string, history: UIMessage[], steps: ReturnType<typeof step>[]): Promise<UIMessage[]> {
  const model = new MockLanguageModelV4({ doStream: steps });
  const result = streamText({ model, messages: await convertToModelMessages(history, { tools }), tools, stopWhen: stepCountIs(5) });
  let saved: UIMessage[] | undefined;
  const stream = result.toUIMessageStream({
    originalMessages: history,
    generateMessageId: () => `a${++ids}`,
    onFinish: async ({ messages }) => {
      await store.saveChat({ chatId, messages });
      saved = messages;
    },
  });
  for await (const _ of stream as unknown as AsyncIterable<unknown>) {
    // drain: onFinish runs at the end
  }
  for (let i = 0; i < 100 && !saved; i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(saved, "onFinish saved the chat");
  return saved;
}

const image = (bytes: number) => "data:image/png;base64," + Buffer.alloc(bytes, 0x5a).toString("base64");

/** A chat holding every part kind the SDK defines, in the states it has. */
function everyPart(): UIMessage[] {
  const call = (state: string, extra: Record<string, unknown>) => ({ type: "tool-weather", toolCallId: `call_${state}`, state, ...extra });
  return [
    { id: "sys", role: "system", parts: [{ type: "text", text: "Be brief." }] },
    {
      id: "u1",
      role: "user",
      metadata: { sentAt: 1732, client: { name: "web" } },
      parts: [
        { type: "text", text: "Look at these.", providerMetadata: { openai: { cache: true } } },
        { type: "file", mediaType: "image/png", filename: "photo.png", url: image(2_000_000) },
        { type: "file", mediaType: "application/pdf", filename: "a.pdf", url: "data:application/pdf;base64,JVBERi0xLjQK" },
        { type: "file", mediaType: "image", url: "https://example.com/cat.jpg" },
        { type: "data-context", id: "ctx-1", data: { page: "/orders", items: [1, 2.5, "x", null, true] } },
      ],
    },
    {
      id: "a1",
      role: "assistant",
      metadata: "model-x",
      parts: [
        { type: "step-start" },
        { type: "reasoning", text: "Checking the weather.", state: "done", providerMetadata: { anthropic: { signature: "sig" } } },
        { type: "text", text: "Let me look.", state: "done" },
        call("input-streaming", { input: { city: "Par" } }),
        call("input-available", { input: { city: "Paris" }, callProviderMetadata: { x: { y: 1 } } }),
        call("approval-requested", { input: { city: "Rome" }, approval: { id: "ap1" } }),
        call("approval-responded", { input: { city: "Oslo" }, approval: { id: "ap2", approved: true, reason: "ok" } }),
        call("output-available", { input: { city: "Lima" }, output: { temperature: 21, tags: ["a"], none: null }, providerExecuted: false }),
        call("output-error", { input: { city: "Nowhere" }, errorText: "no such city" }),
        call("output-denied", { input: { city: "Area 51" }, approval: { id: "ap3", approved: false, reason: "no" } }),
        { type: "dynamic-tool", toolName: "lookup", toolCallId: "call_dyn", state: "output-available", input: { q: 1 }, output: "found" },
        { type: "step-start" },
        { type: "source-url", sourceId: "s1", url: "https://example.com/weather", title: "Weather" },
        { type: "source-document", sourceId: "s2", mediaType: "application/pdf", title: "Report", filename: "r.pdf" },
        { type: "file", mediaType: "image/png", url: image(3_000) },
        { type: "reasoning-file", mediaType: "image/png", url: "data:image/png;base64,AAAA" },
        { type: "custom", kind: "openai.widget", providerMetadata: { openai: { w: 1 } } },
        { type: "data-progress", data: 0.75 },
        { type: "data-nothing", data: null },
        { type: "text", text: "Done: sunny in Lima." },
      ],
    },
  ] as unknown as UIMessage[];
}

for (const backend of backends) {
  describe(`AI SDK chat store (${backend.name})`, () => {
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

    it("round-trips every part kind the SDK defines byte for byte, 2 MB images included", async (t) => {
      const s = await server(t);
      if (!s) return;
      const client = new Client({ baseUrl: s.url });
      const chatId = `every-${Date.now()}`;
      const chat = everyPart();
      await new LogbookChatStore({ client }).saveChat({ chatId, messages: chat });
      const loaded = await new LogbookChatStore({ client }).loadChat(chatId);
      assert.equal(JSON.stringify(loaded), JSON.stringify(chat));
      await validateUIMessages({ messages: loaded });
      const model = await convertToModelMessages(loaded, { ignoreIncompleteToolCalls: true });
      assert.ok(model.length >= 3);

      // In Logbook: typed messages other runtimes can read.
      const msgs = await client.listMessages(chatId).toArray();
      assert.deepEqual(
        msgs.map((m) => [m.role, m.client_id]),
        [
          ["system", "sys"],
          ["user", "u1"],
          ["assistant", "a1"],
          ["tool", "a1#1"],
          ["tool", "a1#2"],
          ["tool", "a1#3"],
          ["tool", "a1#4"],
          ["assistant", "a1#5"],
        ],
      );
      const calls = msgs[2]!.tool_calls!;
      assert.equal(calls.length, 8);
      assert.deepEqual(
        calls.map((c) => c.client_side ?? false),
        [true, true, true, true, false, false, false, false],
      );
      assert.deepEqual(msgs[3]!.content, [{ type: "json", value: { temperature: 21, tags: ["a"], none: null } }]);
      assert.deepEqual([msgs[4]!.is_error, msgs[4]!.content], [true, "no such city"]);
      const photo = (msgs[1]!.content as { type: string; url?: string; media_type?: string }[])[1]!;
      assert.deepEqual([photo.type, photo.media_type, photo.url!.length], ["image", "image/png", image(2_000_000).length]);
      assert.equal((await client.resume(chatId)).validation.ok, true, "client-side calls are not unanswered");

      // Saving it again changes nothing.
      const before = (await client.getSession(chatId)).last_seq;
      await new LogbookChatStore({ client }).saveChat({ chatId, messages: loaded });
      assert.equal((await client.getSession(chatId)).last_seq, before);
    });

    it("keeps a streamText chat turn by turn, and replaces from an edited or regenerated message in one request", async (t) => {
      const s = await server(t);
      if (!s) return;
      const writes: string[] = [];
      const client = new Client({
        baseUrl: s.url,
        fetch: (input, init) => {
          if (init?.method === "POST") writes.push(new URL(String(input)).pathname.split("/").pop()!);
          return fetch(input, init);
        },
      });
      const store = new LogbookChatStore({ client });
      const chatId = `chat-${Date.now()}`;
      assert.deepEqual(await store.loadChat(chatId), []);

      // Turn 1: a 2 MB photo and a question; the model calls a tool, then answers.
      const u1: UIMessage = {
        id: "u1",
        role: "user",
        parts: [
          { type: "text", text: "Weather where I took this?" },
          { type: "file", mediaType: "image/png", filename: "p.png", url: image(2_000_000) },
        ],
      };
      let chat = await turn(store, chatId, [u1], [step("", [{ id: "c1", name: "weather", input: { city: "Paris" } }], "thinking"), step("Sunny in Paris.")]);
      assert.equal(JSON.stringify(await new LogbookChatStore({ client }).loadChat(chatId)), JSON.stringify(chat));
      const a1 = chat[1]!;
      assert.ok(a1.parts.some((p) => p.type === "tool-weather" && "output" in p));

      // Turn 2: the model asks the user (a client-side tool); the browser answers later.
      const u2: UIMessage = { id: "u2", role: "user", parts: [{ type: "text", text: "Book it?" }] };
      chat = await turn(store, chatId, [...chat, u2], [step("", [{ id: "c2", name: "askUser", input: { question: "Which date?" } }])]);
      assert.equal((await client.resume(chatId)).validation.ok, true, "the open client-side call is no problem");
      const asked = chat.at(-1)!;
      const answered = JSON.parse(JSON.stringify(asked)) as UIMessage;
      for (const p of answered.parts as Record<string, unknown>[]) {
        if (p.type === "tool-askUser") Object.assign(p, { state: "output-available", output: "May 3" });
      }
      chat = [...chat.slice(0, -1), answered];
      writes.length = 0;
      await store.saveChat({ chatId, messages: chat });
      assert.deepEqual(writes, ["rewind"], "the answered call replaces its message in one request");
      assert.equal(JSON.stringify(await new LogbookChatStore({ client }).loadChat(chatId)), JSON.stringify(chat));

      // The user edits the first message: it and everything after it are replaced.
      const edited: UIMessage = { ...u1, parts: [{ type: "text", text: "Weather in Rome?" }] };
      writes.length = 0;
      chat = await turn(store, chatId, [edited], [step("Rainy in Rome.")]);
      assert.deepEqual(writes, ["rewind"]);
      let loaded = await new LogbookChatStore({ client }).loadChat(chatId);
      assert.equal(JSON.stringify(loaded), JSON.stringify(chat));
      assert.equal(loaded.length, 2);

      // Regenerate: the last answer goes, a new one (a new id) takes its place.
      writes.length = 0;
      chat = await turn(store, chatId, [edited], [step("Rain, 12 degrees, in Rome.")]);
      assert.deepEqual(writes, ["rewind"]);
      loaded = await new LogbookChatStore({ client }).loadChat(chatId);
      assert.equal(JSON.stringify(loaded), JSON.stringify(chat));
      assert.notEqual(loaded[1]!.id, a1.id);
      await validateUIMessages({ messages: loaded });
      await convertToModelMessages(loaded, { tools });
      const msgs = await client.listMessages(chatId).toArray();
      assert.deepEqual(
        msgs.map((m) => m.client_id),
        ["u1", loaded[1]!.id],
      );
    });

    it("picks up another writer's change (fenced) and stores a message the server refuses typed whole", async (t) => {
      const s = await server(t);
      if (!s) return;
      const client = new Client({ baseUrl: s.url });
      const chatId = `two-${Date.now()}`;
      const a = new LogbookChatStore({ client });
      const b = new LogbookChatStore({ client });
      const m1: UIMessage = { id: "m1", role: "user", parts: [{ type: "text", text: "one" }] };
      const m2: UIMessage = { id: "m2", role: "user", parts: [{ type: "text", text: "two" }] };
      await a.saveChat({ chatId, messages: [m1] });
      await b.saveChat({ chatId, messages: [m1, m2] });
      // a's record is stale: its save is refused (stale_seq), re-read, and applied.
      const m3: UIMessage = { id: "m3", role: "user", parts: [{ type: "text", text: "three" }] };
      await a.saveChat({ chatId, messages: [m1, m3] });
      assert.deepEqual(
        (await b.loadChat(chatId)).map((m) => m.id),
        ["m1", "m3"],
      );
      // A tool result whose call id repeats an earlier one's is refused typed: stored whole instead.
      const dup = (id: string): UIMessage =>
        ({
          id,
          role: "assistant",
          parts: [{ type: "tool-weather", toolCallId: "same", state: "output-available", input: { city: "X" }, output: 1 }],
        }) as unknown as UIMessage;
      const chat = [m1, m3, dup("d1"), dup("d2")];
      await a.saveChat({ chatId, messages: chat });
      assert.equal(JSON.stringify(await b.loadChat(chatId)), JSON.stringify(chat));
    });
  });
}
