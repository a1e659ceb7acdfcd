// The scripted ADK run the ADK suite compares across session services: an
// LlmAgent with a scripted model (a BaseLlm that answers from a script and
// records what it was asked) and a function tool that writes app:, user:,
// session and temp: state. adk-child.ts runs its resumed turn in a process
// of its own.

import { BaseLlm, FunctionTool, LlmAgent, Runner, type BaseMemoryService, type BaseSessionService, type Event } from "@google/adk";
import { z } from "zod";

export const APP = "food_app";

type LlmResponse = Awaited<ReturnType<BaseLlm["generateContentAsync"]> extends AsyncGenerator<infer R> ? R : never>;

/** Answers each call with the next scripted response, and records the contents it was given. */
export class ScriptedLlm extends BaseLlm {
  readonly asked: unknown[] = [];
  readonly #script: LlmResponse[];

  constructor(script: LlmResponse[]) {
    super({ model: "scripted" });
    this.#script = [...script];
  }

  override async *generateContentAsync(request: { contents: unknown[] }): AsyncGenerator<LlmResponse, void> {
    this.asked.push(JSON.parse(JSON.stringify(request.contents)));
    const next = this.#script.shift();
    if (!next) throw new Error("the model was called more often than scripted");
    yield next;
  }

  override async connect(): Promise<never> {
    throw new Error("not scripted: no live connection");
  }
}

export const call = (id: string, food: string): LlmResponse => ({
  content: { role: "model", parts: [{ functionCall: { id, name: "remember_food", args: { food } } }] },
});
export const say = (text: string): LlmResponse => ({ content: { role: "model", parts: [{ text }] } });

/** The tool: the user's food (user:), a visit count of the app (app:), the session's own count, and scratch that must never be stored (temp:). */
export function rememberFood(): FunctionTool<z.ZodObject<{ food: z.ZodString }>> {
  return new FunctionTool({
    name: "remember_food",
    description: "Remembers the user's favourite food.",
    parameters: z.object({ food: z.string() }),
    execute: async ({ food }, ctx) => {
      ctx!.state.set("user:food", food);
      ctx!.state.set("app:visits", ((ctx!.state.get("app:visits") as number | undefined) ?? 0) + 1);
      ctx!.state.set("turns", ((ctx!.state.get("turns") as number | undefined) ?? 0) + 1);
      ctx!.state.set("temp:scratch", "never stored");
      return { remembered: food };
    },
  });
}

export interface Turn {
  events: unknown[];
  asked: unknown[];
}

/** One turn of the agent over the services: the events it made (normalised) and what the model was asked. */
export async function turn(
  sessions: BaseSessionService,
  memory: BaseMemoryService | undefined,
  userId: string,
  sessionId: string,
  text: string,
  script: LlmResponse[],
): Promise<Turn> {
  const llm = new ScriptedLlm(script);
  const agent = new LlmAgent({ name: "helper", model: llm, instruction: "Remember what the user likes to eat.", tools: [rememberFood()], outputKey: "last_reply" });
  const runner = new Runner({ appName: APP, agent, sessionService: sessions, memoryService: memory });
  const events: unknown[] = [];
  for await (const e of runner.runAsync({ userId, sessionId, newMessage: { role: "user", parts: [{ text }] } })) events.push(normEvent(e));
  return { events, asked: llm.asked };
}

/** An event without what differs run to run (ids, times). */
export function normEvent(e: Event): unknown {
  return { author: e.author ?? null, content: e.content ?? null, stateDelta: e.actions?.stateDelta ?? {} };
}
