// The graph of the StateGraph test: an agent that asks for a tool twice
// (stopped before each tool runs), then a subgraph that writes the answer,
// under its own checkpoint namespace. Deterministic: a stand-in model.

import { Annotation, END, START, StateGraph, type BaseCheckpointSaver, type LangGraphRunnableConfig } from "@langchain/langgraph";

const State = Annotation.Root({
  question: Annotation<string>(),
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  answer: Annotation<string>(),
});

type S = typeof State.State;

const results = (s: S) => s.log.filter((l) => l.startsWith("result:")).length;

/** The stand-in model: a tool call until it has two results, then done. */
function agent(s: S): Partial<S> {
  const n = results(s);
  return { log: [n < 2 ? `call:lookup:${n + 1}` : "done"] };
}

/** The tool: what it finds depends on the question, so an edit shows. */
function tools(s: S): Partial<S> {
  const call = s.log[s.log.length - 1]!;
  return { log: [`result:${call.split(":")[2]}:${s.question.length}`] };
}

// The subgraph has a state of its own, and runs inside the summarize node:
// LangGraph checkpoints it under the namespace "summarize:<task id>".
const Draft = Annotation.Root({
  question: Annotation<string>(),
  results: Annotation<string[]>(),
  answer: Annotation<string>(),
});

const drafter = new StateGraph(Draft)
  .addNode("draft", (d: typeof Draft.State) => ({ answer: `${d.question} -> ${d.results.join(",")}` }))
  .addEdge(START, "draft")
  .addEdge("draft", END)
  .compile();

async function summarize(s: S, config: LangGraphRunnableConfig): Promise<Partial<S>> {
  const d = await drafter.invoke({ question: s.question, results: s.log.filter((l) => l.startsWith("result:")) }, config);
  return { log: ["drafted"], answer: d.answer };
}

export function buildGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode("agent", agent)
    .addNode("tools", tools)
    .addNode("summarize", summarize)
    .addEdge(START, "agent")
    .addConditionalEdges("agent", (s: S) => (results(s) < 2 ? "tools" : "summarize"), ["tools", "summarize"])
    .addEdge("tools", "agent")
    .addEdge("summarize", END)
    .compile({ checkpointer, interruptBefore: ["tools"] });
}

/**
 * Runs a stopped thread on until it ends: past each stop before a tool. A
 * config naming a checkpoint starts from it; the runs after go on from the
 * thread's latest, the one before wrote.
 */
export async function runToEnd(graph: ReturnType<typeof buildGraph>, config: { configurable: Record<string, unknown> }): Promise<S> {
  const latest = { configurable: { thread_id: config.configurable.thread_id } };
  for (let i = 0; i < 10; i++) {
    await graph.invoke(null, i === 0 ? config : latest);
    const st = await graph.getState(latest);
    if (st.next.length === 0) return st.values as S;
  }
  throw new Error("the graph did not end");
}
