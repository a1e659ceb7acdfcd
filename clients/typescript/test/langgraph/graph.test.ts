// A real StateGraph over LogbookSaver, on SQLite and on PostgreSQL: stopped
// before a tool, resumed by a new process, time-travelled to an older
// checkpoint and forked there, in its thread and as a new session.

import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Checkpoint } from "../../src/types.js";
import { LogbookSaver } from "../../src/langgraph.js";
import { cleanup, packageDir } from "../harness.js";
import { startLogbook, type Backend, type LogbookUnderTest } from "./backend.js";
import { buildGraph, runToEnd } from "./graph.js";

const run = promisify(execFile);

afterAll(cleanup); // the SQLite files

for (const backend of ["sqlite", "postgres"] as Backend[]) {
  describe(`StateGraph on ${backend}`, () => {
    let lb: LogbookUnderTest | string;
    beforeAll(async () => {
      lb = await startLogbook(backend, "graph");
    });
    afterAll(async () => {
      if (typeof lb !== "string") await lb.stop();
    });

    it("stops before a tool, resumes in a new process, time-travels and forks", async (ctx) => {
      if (typeof lb === "string") return ctx.skip(lb);
      const { client, url } = lb;
      const graph = buildGraph(new LogbookSaver({ client }));
      const thread = `graph-${backend}`;
      const config = { configurable: { thread_id: thread } };

      await graph.invoke({ question: "where is order 42?" }, config);
      let st = await graph.getState(config);
      expect(st.next).toEqual(["tools"]);
      expect(st.values.log).toEqual(["call:lookup:1"]);

      // A new process picks the thread up from Logbook alone (the compiled
      // test, which npm run test:langgraph builds first).
      const child = await run(process.execPath, [join(packageDir(), "build", "test", "langgraph", "graph-child.js"), url, thread]);
      const final = JSON.parse(child.stdout);
      expect(final.log).toEqual(["call:lookup:1", "result:1:18", "call:lookup:2", "result:2:18", "done", "drafted"]);
      expect(final.answer).toBe("where is order 42? -> result:1:18,result:2:18");

      // Every checkpoint is kept and forms a tree; the subgraph wrote under
      // a namespace of its own.
      const all: Checkpoint[] = [];
      for await (const c of client.listCheckpoints(thread, { values: false })) all.push(c);
      const root = all.filter((c) => c.namespace === "");
      const sub = all.filter((c) => c.namespace.startsWith("summarize:"));
      expect(sub.length).toBeGreaterThan(0);
      for (const c of root.slice(0, -1)) expect(root.some((p) => p.client_id === c.parent_id)).toBe(true);

      // Time travel: back to the stop before the first tool, with the
      // question edited: a fork in the thread, its parent that checkpoint.
      let before1: Awaited<ReturnType<typeof graph.getState>> | undefined;
      for await (const s of graph.getStateHistory(config)) {
        if (s.next.includes("tools") && s.values.log.length === 1) before1 = s;
      }
      expect(before1).toBeDefined();
      const forked = await graph.updateState(before1!.config, { question: "and order 7?" });
      const forkedId = forked.configurable!.checkpoint_id as string;
      const again = await runToEnd(graph, { configurable: { thread_id: thread, checkpoint_id: forkedId } });
      expect(again.answer).toBe("and order 7? -> result:1:12,result:2:12");
      const fork = await client.findCheckpoint(thread, { client_id: forkedId });
      expect(fork.parent_id).toBe(before1!.config.configurable!.checkpoint_id);
      const children = [];
      for await (const c of client.listCheckpoints(thread, { namespace: "", values: false })) {
        if (c.parent_id === before1!.config.configurable!.checkpoint_id) children.push(c.client_id);
      }
      expect(children.length).toBe(2); // the first run's and the fork's
      // The old run is still there, whole.
      const old = await graph.getState({ configurable: { thread_id: thread, checkpoint_id: st.config.configurable!.checkpoint_id } });
      expect(old.values.log).toEqual(["call:lookup:1"]);

      // The same stop as a session of its own: Logbook forks the thread at
      // that checkpoint, and the graph runs on in the new thread.
      const copy = await client.forkSession(thread, {
        id: `${thread}-fork`,
        at_checkpoint: { client_id: before1!.config.configurable!.checkpoint_id as string },
      });
      const inCopy = await runToEnd(graph, { configurable: { thread_id: copy.id } });
      expect(inCopy.answer).toBe("where is order 42? -> result:1:18,result:2:18");
      st = await graph.getState({ configurable: { thread_id: thread } });
      expect(st.values.answer).toBe("and order 7? -> result:1:12,result:2:12"); // the thread's latest is the fork's end
    });
  });
}
