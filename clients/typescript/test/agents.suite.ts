// The Agents SDK's own run loop over a LogbookSession, with a scripted model
// (the SDK's Model and ModelProvider interfaces; no network but Logbook's).

import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import {
  Agent,
  run,
  setDefaultModelProvider,
  setTracingDisabled,
  tool,
  Usage,
  type AgentInputItem,
  type AgentOutputItem,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type StreamEvent,
} from "@openai/agents";
import { z } from "zod";
import { Client } from "../src/index.js";
import { itemToMessage, LogbookSession, messageToItems } from "../src/openai-agents.js";
import { sharedServer } from "./harness.js";

/** Answers each call with the next scripted output and records what it was given. */
class ScriptedModel implements Model {
  readonly inputs: AgentInputItem[][] = [];
  readonly #script: AgentOutputItem[][];

  constructor(script: AgentOutputItem[][]) {
    this.#script = script;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const input = typeof request.input === "string" ? [{ role: "user", content: request.input } as AgentInputItem] : request.input;
    this.inputs.push(JSON.parse(JSON.stringify(input)));
    const output = this.#script.shift();
    if (!output) throw new Error("the model was called more often than scripted");
    return { usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }), output, responseId: `resp_${this.inputs.length}` };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<StreamEvent> {
    throw new Error("not scripted: the test runs without streaming");
  }
}

class ScriptedProvider implements ModelProvider {
  constructor(readonly model: Model) {}
  getModel(): Model {
    return this.model;
  }
}

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v));

let lb: Client;

before(async () => {
  lb = new Client({ baseUrl: (await sharedServer()).url });
  setTracingDisabled(true);
});

describe("OpenAI Agents SDK session", () => {
  it("runs two turns with a tool call; the second turn's input holds the first from Logbook", async () => {
    const model = new ScriptedModel([
      [{ type: "function_call", id: "fc_1", callId: "call_1", name: "lookup_order", arguments: '{"order_id":1042}', status: "completed" }],
      [{ type: "message", id: "msg_a1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Yes: order 1042 is refundable." }] }],
      [{ type: "message", id: "msg_a2", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Order 1043 is too." }] }],
    ]);
    setDefaultModelProvider(new ScriptedProvider(model));
    const lookups: number[] = [];
    const agent = new Agent({
      name: "support",
      instructions: "Answer refund questions.",
      tools: [
        tool({
          name: "lookup_order",
          description: "Looks an order up.",
          parameters: z.object({ order_id: z.number() }),
          execute: async ({ order_id }) => {
            lookups.push(order_id);
            return JSON.stringify({ order_id, refundable: true });
          },
        }),
      ],
    });
    const session = new LogbookSession({ client: lb, agentId: "support", title: "SDK run" });

    const first = await run(agent, "Can I get a refund for order 1042?", { session });
    assert.equal(first.finalOutput, "Yes: order 1042 is refundable.");
    assert.deepEqual(lookups, [1042]);
    const afterFirst = await session.getItems();
    assert.deepEqual(
      afterFirst.map((i) => ("role" in i && i.role) || i.type),
      ["user", "function_call", "function_call_result", "assistant"],
    );

    const second = await run(agent, "Thanks! And order 1043?", { session });
    assert.equal(second.finalOutput, "Order 1043 is too.");

    // The second turn's model input: the first turn's items, read back from Logbook, then the new message.
    assert.equal(model.inputs.length, 3);
    const input = model.inputs[2]!;
    assert.equal(input.length, 5);
    assert.deepEqual(input.slice(0, 4), json(afterFirst));
    assert.deepEqual(input[4], { type: "message", role: "user", content: "Thanks! And order 1043?" });
    const call = input[1] as { type: string; callId: string; name: string };
    assert.deepEqual([call.type, call.callId, call.name], ["function_call", "call_1", "lookup_order"]);
    const result = input[2] as { type: string; callId: string };
    assert.deepEqual([result.type, result.callId], ["function_call_result", "call_1"]);

    // In Logbook: one message per item, typed per README's table, each with its whole item.
    const sid = await session.getSessionId();
    const s = await lb.getSession(sid);
    assert.equal(s.agent_id, "support");
    assert.equal(s.title, "SDK run");
    const msgs = await lb.listMessages(sid).toArray();
    assert.deepEqual(
      msgs.map((m) => m.role),
      ["user", "assistant", "tool", "assistant", "user", "assistant"],
    );
    assert.equal(msgs[0]!.content, "Can I get a refund for order 1042?");
    assert.deepEqual(msgs[1]!.tool_calls, [{ id: "call_1", name: "lookup_order", arguments: '{"order_id":1042}' }]);
    assert.equal(msgs[2]!.tool_call_id, "call_1");
    assert.equal(msgs[2]!.name, "lookup_order");
    assert.equal(msgs[2]!.content, JSON.stringify({ order_id: 1042, refundable: true }));
    assert.deepEqual(msgs[3]!.content, [{ type: "text", text: "Yes: order 1042 is refundable." }]);
    const all = await session.getItems();
    assert.deepEqual(
      msgs.map((m) => m.provider_item),
      json(all),
    );
    assert.equal((await lb.resume(sid)).validation.ok, true, "the tool call has its result");

    // getItems(limit), popItem, clearSession.
    assert.deepEqual(await session.getItems(2), all.slice(-2));
    assert.deepEqual(await session.getItems(0), []);
    const popped = await session.popItem();
    assert.deepEqual(popped, all.at(-1));
    assert.equal((await lb.getSession(sid)).last_seq, 5);
    assert.deepEqual(await session.getItems(), all.slice(0, -1));
    await session.clearSession();
    assert.deepEqual(await session.getItems(), []);
    assert.equal(await session.popItem(), undefined);
    assert.equal((await lb.getSession(sid)).message_count, 0);
  });

  it("stores items the table has no place for, and foreign tool results, whole", async () => {
    const session = new LogbookSession({ client: lb });
    assert.deepEqual(await session.getItems(), [], "no session yet");
    const items = [
      { type: "message", role: "user", content: [{ type: "input_text", text: "look" }, { type: "input_image", image: "https://example.com/a.png", detail: "high" }] },
      { type: "reasoning", id: "rs_1", content: [{ type: "input_text", text: "thinking about it" }], providerData: { encryptedContent: "gAAA" } },
      { type: "hosted_tool_call", id: "ws_1", name: "web_search_call", status: "completed", providerData: { query: "refunds" } },
      { type: "function_call_result", callId: "call_never_made", name: "x", status: "completed", output: { type: "text", text: "orphan" } },
      { type: "message", role: "assistant", status: "completed", content: [{ type: "refusal", refusal: "I cannot." }] },
    ] as AgentInputItem[];
    await session.addItems(items);
    assert.deepEqual(await session.getItems(), items);

    const msgs = await lb.listMessages(session.sessionId).toArray();
    assert.deepEqual(msgs[0]!.content, [
      { type: "text", text: "look" },
      { type: "image", url: "https://example.com/a.png", detail: "high" },
    ]);
    assert.deepEqual(msgs[1]!.content, [{ type: "reasoning", summary: ["thinking about it"], encrypted_content: "gAAA" }]);
    assert.deepEqual([msgs[2]!.role, msgs[2]!.content], ["assistant", ""], "a hosted call is kept whole only");
    assert.deepEqual([msgs[3]!.role, msgs[3]!.tool_call_id], ["assistant", null], "a result whose call is unknown is stored untyped");
    assert.deepEqual(msgs[4]!.content, [{ type: "refusal", text: "I cannot." }]);
  });

  it("concurrent pops each pop a different item (the rewind is fenced)", async () => {
    const session = new LogbookSession({ client: lb });
    const items = Array.from({ length: 6 }, (_, i) => ({ type: "message", role: "user", content: `item ${i}` }) as AgentInputItem);
    await session.addItems(items);
    const other = new LogbookSession({ client: new Client({ baseUrl: lb.baseUrl }), sessionId: session.sessionId });
    const popped = await Promise.all([session.popItem(), other.popItem(), session.popItem(), other.popItem()]);
    const got = popped.map((i) => (i as { content: string }).content).sort();
    assert.deepEqual(got, ["item 2", "item 3", "item 4", "item 5"]);
    assert.deepEqual(await session.getItems(), items.slice(0, 2));
  });

  it("reads messages other runtimes wrote by the table's rules", async () => {
    const s = await lb.createSession();
    const stored = await lb.appendMessages(s.id, [
      { role: "user", content: "hi" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "f", arguments: "{}" }] },
      { role: "tool", tool_call_id: "c1", name: "f", content: "42" },
      { role: "assistant", content: "It is 42." },
    ]);
    const session = new LogbookSession({ client: lb, sessionId: s.id });
    assert.deepEqual(await session.getItems(), [
      { type: "message", role: "user", content: "hi" },
      { type: "function_call", callId: "c1", name: "f", arguments: "{}", status: "completed" },
      { type: "function_call_result", callId: "c1", name: "f", status: "completed", output: "42" },
      { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "It is 42." }] },
    ]);
    // And those items, stored again, make the same typed messages.
    for (const [i, m] of stored.entries()) {
      const again = itemToMessage(messageToItems(m)[0]!);
      assert.equal(again.role, m.role, `message ${i}`);
      assert.deepEqual(again.tool_calls ?? null, m.tool_calls, `message ${i}`);
      assert.equal(again.tool_call_id ?? null, m.tool_call_id, `message ${i}`);
    }
  });
});
