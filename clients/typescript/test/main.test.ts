// The whole suite, in one process so that the server is built and started
// once: `npm test` compiles this and runs it with node --test.

import { after } from "node:test";
import { stopStandin } from "./embedding.js";
import { stopBackends } from "./backends.js";
import { cleanup } from "./harness.js";
import { stopPostgres } from "./postgres.js";

import "./schema.suite.js";
import "./package.suite.js";
import "./readme.suite.js";
import "./client.suite.js";
import "./operations.suite.js";
import "./retry.suite.js";
import "./events.suite.js";
import "./stream.suite.js";
import "./agents.suite.js";
import "./langgraph-store.suite.js";
import "./adk.suite.js";
import "./agents-session.suite.js";
import "./ai-sdk.suite.js";

after(async () => {
  await stopStandin();
  await stopBackends();
  await stopPostgres();
  await cleanup();
});
