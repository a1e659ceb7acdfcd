// A new process that resumes a stopped thread (argv: Logbook's URL, the
// thread): it knows nothing but what Logbook kept. It prints the final state.

import { Client } from "../../src/client.js";
import { LogbookSaver } from "../../src/langgraph.js";
import { buildGraph, runToEnd } from "./graph.js";

const [url, thread] = process.argv.slice(2);
const graph = buildGraph(new LogbookSaver({ client: new Client({ baseUrl: url }) }));
const final = await runToEnd(graph, { configurable: { thread_id: thread } });
process.stdout.write(JSON.stringify(final));
