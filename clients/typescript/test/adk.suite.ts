// Google ADK's own Runner and LlmAgent, with a scripted model and a function
// tool, over LogbookSessionService and LogbookMemoryService on a real server
// (SQLite, then PostgreSQL): a run, the session resumed by a new process,
// state across sessions of one user, memory. The same scripted run over
// ADK's InMemorySessionService and InMemoryMemoryService must give the same
// results.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { InMemoryMemoryService, InMemorySessionService, type BaseMemoryService, type BaseSessionService } from "@google/adk";
import { Client } from "../src/index.js";
import { LogbookMemoryService, LogbookSessionService } from "../src/adk.js";
import { APP, call, normEvent, say, turn, type Turn } from "./adk-scenario.js";
import { startServer, type RunningServer } from "./harness.js";
import { sharedPostgres } from "./postgres.js";

type Json = Record<string, unknown>;

const here = dirname(fileURLToPath(import.meta.url));

/** What the scripted run made and read, with what differs run to run left out. */
interface Outcome {
  first: Turn;
  resumed: Turn;
  afterResume: { state: unknown; events: unknown[] };
  second: Turn;
  secondStart: unknown;
  s1: unknown;
  recent: unknown[];
  listed: string[];
  memories: string[];
  afterDelete: { s2: boolean; listed: string[]; s3State: unknown };
}

/**
 * The run: ada's first session (a tool call, then a reply), the same session
 * resumed by `resume` (a new process for Logbook), a second session of ada's
 * that starts with her user: and app: state, memory, and a delete.
 */
async function scriptedRun(
  sessions: BaseSessionService,
  memory: BaseMemoryService,
  resume: () => Promise<{ resumed: Turn; state: unknown; events: unknown[] }>,
): Promise<Outcome> {
  await sessions.createSession({ appName: APP, userId: "ada", sessionId: "s1", state: { topic: "food", "temp:draft": "gone" } });
  const first = await turn(sessions, memory, "ada", "s1", "I love ramen", [call("c1", "ramen"), say("Noted: ramen.")]);
  const { resumed, state, events } = await resume();
  const created = await sessions.createSession({ appName: APP, userId: "ada", sessionId: "s2" });
  const second = await turn(sessions, memory, "ada", "s2", "I also love udon", [call("c2", "udon"), say("Noted: udon.")]);
  const s1 = await sessions.getSession({ appName: APP, userId: "ada", sessionId: "s1" });
  const recent = await sessions.getSession({ appName: APP, userId: "ada", sessionId: "s1", config: { numRecentEvents: 2 } });
  const listed = (await sessions.listSessions({ appName: APP, userId: "ada" })).sessions.map((s) => s.id).sort();
  await memory.addSessionToMemory(s1!);
  await memory.addSessionToMemory(s1!); // again: nothing twice
  await memory.addSessionToMemory((await sessions.getSession({ appName: APP, userId: "ada", sessionId: "s2" }))!);
  const found = await memory.searchMemory({ appName: APP, userId: "ada", query: "ramen" });
  const nobody = await memory.searchMemory({ appName: APP, userId: "bob", query: "ramen" });
  assert.equal(nobody.memories.length, 0, "bob finds none of ada's memories");
  await sessions.deleteSession({ appName: APP, userId: "ada", sessionId: "s2" });
  const s3 = await sessions.createSession({ appName: APP, userId: "ada", sessionId: "s3" });
  // As JSON: the services build their state maps with or without prototypes.
  return json({
    first,
    resumed,
    afterResume: { state, events },
    second,
    secondStart: created.state,
    s1: { state: s1!.state, events: s1!.events.map(normEvent) },
    recent: recent!.events.map(normEvent),
    listed,
    memories: found.memories.map((m) => `${m.author}: ${(m.content.parts ?? []).map((p) => p.text).join(" ")}`).sort(),
    afterDelete: {
      s2: (await sessions.getSession({ appName: APP, userId: "ada", sessionId: "s2" })) === undefined,
      listed: (await sessions.listSessions({ appName: APP, userId: "ada" })).sessions.map((s) => s.id).sort(),
      s3State: s3.state,
    },
  });
}

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

let expected: Outcome;

before(async () => {
  const sessions = new InMemorySessionService();
  const memory = new InMemoryMemoryService();
  expected = await scriptedRun(sessions, memory, async () => {
    // In memory there is no other process: a new runner over the same service.
    const resumed = await turn(sessions, undefined, "ada", "s1", "What do I like to eat?", [say("You like ramen.")]);
    const s = await sessions.getSession({ appName: APP, userId: "ada", sessionId: "s1" });
    return { resumed, state: s!.state, events: s!.events.map(normEvent) };
  });
});

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`Google ADK on Logbook (${backend})`, () => {
    let server: RunningServer | undefined;
    let skip: string | undefined;
    before(async () => {
      let db: string | undefined;
      if (backend === "PostgreSQL") {
        const pg = await sharedPostgres();
        if (typeof pg === "string") {
          skip = pg;
          return;
        }
        db = await pg.database("adk");
      }
      server = await startServer({ db });
    });
    after(async () => server?.stop());

    it("runs, resumes in a new process, and keeps user and app state across sessions, as in memory", async (t) => {
      if (skip) return t.skip(skip);
      const client = new Client({ baseUrl: server!.url });
      const got = await scriptedRun(new LogbookSessionService({ client }), new LogbookMemoryService({ client }), async () => {
        const { stdout } = await promisify(execFile)(process.execPath, [join(here, "adk-child.js"), server!.url, "ada", "s1"], { maxBuffer: 16 << 20 });
        return JSON.parse(stdout) as { resumed: Turn; state: unknown; events: unknown[] };
      });
      assert.deepEqual(got, expected);

      // The resumed turn's model saw the first turn, from Logbook alone.
      const asked = JSON.stringify(got.resumed.asked);
      assert.ok(asked.includes("I love ramen") && asked.includes('"remember_food"') && asked.includes("Noted: ramen."), asked);
      assert.deepEqual(got.secondStart, { "app:visits": 1, "user:food": "ramen" });
      assert.deepEqual(got.afterDelete.s3State, { "app:visits": 2, "user:food": "udon" });
      assert.deepEqual(got.memories, ["helper: Noted: ramen.", "helper: You like ramen.", "user: I love ramen"]);

      // In Logbook: the events are messages with their parts, a tool call
      // and its result paired; the state is items, temp: never among them.
      const msgs = await client.listMessages("s1").toArray();
      assert.deepEqual(msgs.map((m) => m.role), ["user", "assistant", "tool", "assistant", "user", "assistant"]);
      assert.deepEqual(msgs[0]!.content, [{ type: "text", text: "I love ramen" }]);
      assert.deepEqual(msgs[1]!.tool_calls?.map((c) => [c.id, c.name, JSON.parse(c.arguments)]), [["c1", "remember_food", { food: "ramen" }]]);
      assert.equal(msgs[2]!.tool_call_id, "c1");
      assert.deepEqual(JSON.parse(msgs[2]!.content as string), { remembered: "ramen" });
      assert.equal(msgs[3]!.name, "helper");
      const session = await client.getSession("s1");
      assert.deepEqual([session.user_id, session.metadata.adk_app], ["ada", APP]);
      const own = await client.searchItems({ namespace_prefix: ["adk"], limit: 200 }, { userId: "ada" });
      const shared = await client.searchItems({ namespace_prefix: ["adk"], limit: 200 });
      const all = [...own.data, ...shared.data];
      const marks = all.filter((i) => i.namespace[2] === "memory");
      assert.deepEqual(marks.map((i) => i.namespace[3]).sort(), ["s1", "s1", "s1", "s1", "s2", "s2"], "one mark per event added to memory");
      const keys = all.filter((i) => i.namespace[2] !== "memory").map((i) => `${i.user_id ?? "shared"} ${i.namespace.join("/")} ${i.key}`).sort();
      assert.deepEqual(keys, [
        "ada adk/food_app/session_state/s1 last_reply",
        "ada adk/food_app/session_state/s1 topic",
        "ada adk/food_app/session_state/s1 turns",
        "ada adk/food_app/user_state food",
        "shared adk/food_app/app_state visits",
      ]);
      assert.ok(!JSON.stringify(msgs.map((m) => m.provider_item)).includes("temp:"), "a temp: key reached a stored event");
    });

    it("reads the newest events and those since a time, as ADK's in-memory service does", async (t) => {
      if (skip) return t.skip(skip);
      const sessions = new LogbookSessionService({ client: new Client({ baseUrl: server!.url }) });
      const all = (await sessions.getSession({ appName: APP, userId: "ada", sessionId: "s1" }))!.events;
      const at = all[3]!.timestamp;
      const since = await sessions.getSession({ appName: APP, userId: "ada", sessionId: "s1", config: { afterTimestamp: at } });
      const first = all.findIndex((e) => e.timestamp >= at);
      assert.deepEqual(since!.events.map((e) => e.id), all.slice(first).map((e) => e.id));
      assert.equal(await sessions.getSession({ appName: "other_app", userId: "ada", sessionId: "s1" }), undefined);
      assert.equal(await sessions.getSession({ appName: APP, userId: "bob", sessionId: "s1" }), undefined);
      await assert.rejects(sessions.createSession({ appName: APP, userId: "ada", sessionId: "s1" }), /already exists/);
    });
  });
}
