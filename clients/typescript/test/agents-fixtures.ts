// What the Agents SDK suites script: a model (the SDK's Model and
// ModelProvider interfaces), and an OpenAI client whose responses.compact
// answers a fixed compaction. No network but Logbook's.

import {
  Agent,
  OpenAIResponsesCompactionSession,
  setTracingDisabled,
  Usage,
  type AgentInputItem,
  type AgentOutputItem,
  type Model,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type Session,
  type StreamEvent,
} from "@openai/agents";
import type OpenAI from "openai";

/** Answers each call with the next scripted output (or `reply(n)` when the script runs out) and records its input. */
export class ScriptedModel implements Model {
  readonly inputs: AgentInputItem[][] = [];
  readonly #script: AgentOutputItem[][];
  readonly #reply: ((n: number) => AgentOutputItem[]) | undefined;

  constructor(script: AgentOutputItem[][], reply?: (n: number) => AgentOutputItem[]) {
    this.#script = script;
    this.#reply = reply;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const input = typeof request.input === "string" ? [{ role: "user", content: request.input } as AgentInputItem] : request.input;
    this.inputs.push(JSON.parse(JSON.stringify(input)));
    const output = this.#script.shift() ?? this.#reply?.(this.inputs.length);
    if (!output) throw new Error("the model was called more often than scripted");
    return { usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }), output, responseId: `resp_${this.inputs.length}` };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<StreamEvent> {
    throw new Error("not scripted: the test runs without streaming");
  }
}

export class ScriptedProvider implements ModelProvider {
  constructor(readonly model: Model) {}
  getModel(): Model {
    return this.model;
  }
}

/** A model that answers every turn with one assistant message naming the turn. */
export function echoModel(): ScriptedModel {
  return new ScriptedModel([], (n) => [
    { type: "message", id: `msg_a${n}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: `answer ${n}` }] },
  ]);
}

/** The items responses.compact answers: the user's messages restated, and the opaque compaction item. */
export const COMPACTED: unknown[] = [
  { type: "message", id: "msg_kept", role: "user", content: [{ type: "input_text", text: "the turns so far, restated" }] },
  { type: "compaction", id: "cmp_sdk_1", encrypted_content: "ENCRYPTED-SUMMARY" },
];

/** An OpenAI client whose responses.compact answers COMPACTED and counts its calls. */
export function compactingOpenAI(calls: unknown[]): OpenAI {
  return {
    responses: {
      compact: async (req: unknown) => {
        calls.push(req);
        return { id: "cmpresp_1", output: JSON.parse(JSON.stringify(COMPACTED)), usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 } };
      },
    },
  } as unknown as OpenAI;
}

/** The SDK's compaction session over a session, compacting after every turn. */
export function compactionSession(underlyingSession: Session, calls: unknown[]): OpenAIResponsesCompactionSession {
  return new OpenAIResponsesCompactionSession({
    client: compactingOpenAI(calls),
    underlyingSession,
    model: "gpt-4.1",
    compactionMode: "input",
    shouldTriggerCompaction: () => true,
  });
}

/** An agent whose model is `model` (given to the agent: the SDK's default runner keeps the first default provider it saw). */
export function scriptedAgent(model: Model): Agent {
  setTracingDisabled(true);
  return new Agent({ name: "support", instructions: "Answer.", model });
}
