// LangGraph's own checkpointer validation suite
// (@langchain/langgraph-checkpoint-validation's specTest), run against
// LogbookSaver over a real server on one backend.

import { describe, it } from "vitest";
import { specTest } from "@langchain/langgraph-checkpoint-validation";
import { LogbookSaver } from "../../src/langgraph.js";
import { cleanup } from "../harness.js";
import { eraseAll, startLogbook, type Backend, type LogbookUnderTest } from "./backend.js";

export async function validate(backend: Backend): Promise<void> {
  let lb: LogbookUnderTest | undefined;
  // Started here rather than in beforeAll: a backend that cannot run here
  // (no PostgreSQL) skips the whole suite, saying why.
  const started = await startLogbook(backend, "validation");
  if (typeof started === "string") {
    describe.skip(`LogbookSaver on ${backend}: ${started}`, () => {
      it("is skipped", () => {});
    });
    return;
  }
  lb = started;
  specTest({
    checkpointerName: `LogbookSaver (${backend})`,
    async afterAll() {
      await lb?.stop();
      await cleanup();
    },
    async createCheckpointer() {
      await eraseAll(lb!.client);
      return new LogbookSaver({ client: lb!.client });
    },
    async destroyCheckpointer() {
      await eraseAll(lb!.client);
    },
  });
}
