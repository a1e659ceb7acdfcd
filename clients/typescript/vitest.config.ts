// LangGraph's checkpointer validation suite and the StateGraph test run under
// vitest, the suite's own runner (`npm run test:langgraph`); the rest of the
// client's tests run under node --test (`npm test`).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/langgraph/**/*.test.ts"],
    globals: true, // the suite calls describe, it, beforeAll … as globals
    globalSetup: ["test/langgraph/setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ["default"],
  },
});
