// A process the compaction suite kills with SIGKILL: one turn of the SDK's
// run loop over LogbookSession under OpenAIResponsesCompactionSession, which
// compacts after the turn. argv: the server's URL, the session's id, and
// where to stop for good: "after-clear" (clearSession has returned; addItems
// is next) or "after-add" (addItems has returned). It says where it is on
// stdout, then blocks without returning to the event loop, so nothing else
// it queued can run before the kill.

import { run } from "@openai/agents";
import { Client } from "../src/index.js";
import { LogbookSession } from "../src/openai-agents.js";
import { compactionSession, echoModel, scriptedAgent } from "./agents-fixtures.js";

const [url, sessionId, stopAt] = process.argv.slice(2) as [string, string, string];

function stop(where: string): never {
  process.stdout.write(`${where}\n`); // synchronous on a pipe
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  throw new Error("unreachable");
}

const inner = new LogbookSession({ client: new Client({ baseUrl: url, maxRetries: 0 }), sessionId });
const clear = inner.clearSession.bind(inner);
const add = inner.addItems.bind(inner);
inner.clearSession = async () => {
  await clear();
  if (stopAt === "after-clear") stop("cleared");
};
inner.addItems = async (items) => {
  await add(items);
  // The turn's own items come first; the compaction's hold its item.
  if (stopAt === "after-add" && items.some((i) => i.type === "compaction")) stop("added");
};

await run(scriptedAgent(echoModel()), "turn 3", { session: compactionSession(inner, []) });
process.stdout.write("finished\n");
