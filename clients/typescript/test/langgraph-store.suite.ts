// A real LangGraph graph whose nodes read and write memories through
// `config.store`, run once over LangGraph's own InMemoryStore and once over
// LogbookStore on a real server, SQLite then PostgreSQL: the same scripted
// run must give the same results. Both stores embed with the project's
// stand-in endpoint, so that search by meaning ranks the same vectors.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  Annotation,
  END,
  InMemoryStore,
  START,
  StateGraph,
  type BaseStore,
  type LangGraphRunnableConfig,
} from "@langchain/langgraph";
import { Client } from "../src/index.js";
import { LogbookStore } from "../src/langgraph.js";
import { sharedStandin, StandinEmbeddings, STANDIN_DIMS, type Standin } from "./embedding.js";
import { startServer, type RunningServer } from "./harness.js";
import { sharedPostgres } from "./postgres.js";

type Json = Record<string, unknown>;

const MEMORIES: { key: string; value: Json }[] = [
  { key: "car", value: { text: "I drive a sedan to the office", stars: 4 } },
  { key: "cat", value: { text: "my kitten sleeps all day long", stars: 5 } },
  { key: "coffee", value: { text: "a latte every single morning", stars: 3 } },
  { key: "note", value: { note: "nothing here is embedded", stars: 1 } },
];

const State = Annotation.Root({
  mode: Annotation<"remember" | "recall">,
  user: Annotation<string>,
  found: Annotation<Json>,
});

/** Rounds scores, and sorts what a store may order its own way, so that two stores' answers compare. */
function norm(items: { namespace: string[]; key: string; value: Json; score?: number }[] | null, sortByKey = false): unknown {
  if (items === null) return null;
  const out = items.map((i) => ({ at: `${i.namespace.join("/")}/${i.key}`, value: i.value, score: i.score === undefined ? null : Math.round(i.score * 1e5) / 1e5 }));
  return sortByKey ? out.sort((a, b) => a.at.localeCompare(b.at)) : out;
}

function graph(store: BaseStore) {
  return new StateGraph(State)
    .addNode("remember", async (state: typeof State.State, config: LangGraphRunnableConfig) => {
      const store = config.store!;
      const ns = ["memories", state.user];
      for (const m of MEMORIES) await store.put(ns, m.key, m.value);
      await store.put(ns, "scratch", { text: "to be forgotten" });
      await store.put(ns, "car", { text: "I drive a sedan to the office", stars: 4, updated: true });
      await store.delete(ns, "scratch");
      // Concurrent operations reach the store as one batch: its reads see
      // the items as they were before its writes.
      const [, before] = await Promise.all([
        store.put(["memories", "bob"], "car", { text: "my automobile is red", stars: 2 }),
        store.get(["memories", "bob"], "car"),
        store.put(["prefs", state.user], "theme", { theme: "dark" }),
      ]);
      return { found: { before_put: before === null ? null : before.value } };
    })
    .addNode("recall", async (state: typeof State.State, config: LangGraphRunnableConfig) => {
      const store = config.store!;
      const ns = ["memories", state.user];
      const [byMeaning, filtered, both, plain, cat, scratch] = await Promise.all([
        store.search(["memories"], { query: "which vehicle do I use", limit: 10 }),
        store.search(ns, { filter: { stars: { $gte: 4 } } }),
        store.search(ns, { query: "a cat", filter: { stars: { $gt: 2 } }, limit: 2 }),
        store.search(ns),
        store.get(ns, "cat"),
        store.get(ns, "scratch"),
      ]);
      return {
        found: {
          byMeaning: norm(byMeaning),
          filtered: norm(filtered, true),
          both: norm(both),
          plain: norm(plain, true),
          cat: cat && { key: cat.key, namespace: cat.namespace, value: cat.value },
          scratch,
        },
      };
    })
    .addConditionalEdges(START, (s: typeof State.State) => s.mode, ["remember", "recall"])
    .addEdge("remember", END)
    .addEdge("recall", END)
    .compile({ store });
}

/** The scripted run: remember, (let the store index), recall, then list namespaces. */
async function scriptedRun(store: BaseStore, indexed: () => Promise<void>): Promise<Json> {
  const g = graph(store);
  const remembered = await g.invoke({ mode: "remember", user: "ada" });
  await indexed();
  const recalled = await g.invoke({ mode: "recall", user: "ada" });
  // LangGraph's batching wrapper (config.store in a node) has no listNamespaces: the store is asked directly.
  const [all, top, suffix] = await Promise.all([
    store.listNamespaces(),
    store.listNamespaces({ maxDepth: 1 }),
    store.listNamespaces({ suffix: ["ada"] }),
  ]);
  return { remembered: remembered.found, recalled: recalled.found, namespaces: { all, top, suffix } };
}

/** Waits until the server has embedded every indexed text of the store's items. */
async function waitIndexed(client: Client): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const page = await client.searchItems({ limit: 200 });
    const waiting = page.data.filter((i) => i.embedding_state === "pending");
    assert.equal(page.data.filter((i) => i.embedding_state === "failed").length, 0, "an item failed to embed");
    if (waiting.length === 0) return;
    if (Date.now() > deadline) assert.fail(`items still pending after 20 s: ${waiting.map((i) => i.key).join(", ")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let standin: Standin;
let expected: Json;

before(async () => {
  standin = await sharedStandin();
  const memory = new InMemoryStore({ index: { dims: STANDIN_DIMS, embeddings: new StandinEmbeddings(standin.url), fields: ["text"] } });
  expected = await scriptedRun(memory, async () => undefined);
});

for (const backend of ["SQLite", "PostgreSQL"] as const) {
  describe(`LangGraph store on Logbook (${backend})`, () => {
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
        db = await pg.database("langgraph_store");
      }
      server = await startServer({ db, args: standin.serverArgs });
    });
    after(async () => server?.stop());

    it("runs a graph that remembers and recalls through config.store, as over InMemoryStore", async (t) => {
      if (skip) return t.skip(skip);
      let requests = 0;
      const counting: typeof fetch = (input, init) => {
        requests++;
        return fetch(input, init);
      };
      const client = new Client({ baseUrl: server!.url, fetch: counting });
      const store = new LogbookStore({ client, index: { fields: ["text"] } });
      const got = await scriptedRun(store, () => waitIndexed(new Client({ baseUrl: server!.url })));
      assert.deepEqual(got, expected);
      const recalled = got.recalled as Json;
      assert.equal((recalled.byMeaning as { at: string }[])[0]!.at, "memories/bob/car", "the automobile is the best match for a vehicle");
      assert.equal((recalled.both as unknown[]).length, 2);
      // One request per operation the graph awaited alone (six puts and a
      // delete, three listings), one per group it awaited together (the
      // remember node's three, the recall node's six).
      assert.equal(requests, 7 + 3 + 1 + 1);

      // What the graph stored is Logbook's: versions, the index, the namespaces.
      const car = await client.getItem(["memories", "ada"], "car");
      assert.equal(car.version, 2);
      assert.deepEqual(car.index, ["text"]);
      assert.equal(car.embedding_state, "ready");
      const prefs = await client.getItem(["prefs", "ada"], "theme");
      assert.equal(prefs.embedding_state, null, "a value without the indexed field has nothing to embed");
    });

    it("sends a batch in one request, and one larger than the API takes in several", async (t) => {
      if (skip) return t.skip(skip);
      let requests = 0;
      const client = new Client({ baseUrl: server!.url, fetch: (i, init) => (requests++, fetch(i, init)) });
      const store = new LogbookStore({ client, userId: "batcher" });
      const puts = Array.from({ length: 150 }, (_, i) => ({ namespace: ["bulk"], key: `k${String(i).padStart(3, "0")}`, value: { i } }));
      await store.batch(puts);
      assert.equal(requests, 2);
      requests = 0;
      const [a, b, names] = await store.batch([
        { namespace: ["bulk"], key: "k007" },
        { namespacePrefix: ["bulk"], filter: { i: { $gte: 148 } }, limit: 10, offset: 0 },
        { matchConditions: [{ matchType: "prefix", path: ["bulk"] }], limit: 10, offset: 0 },
      ] as const);
      assert.equal(requests, 1);
      assert.deepEqual(a?.value, { i: 7 });
      assert.deepEqual(b.map((x) => x.key), ["k148", "k149"]);
      assert.deepEqual(names, [["bulk"]]);
      assert.equal((await client.searchItems({ namespace_prefix: ["bulk"] })).data.length, 0, "the user's items are not the shared ones");
    });
  });
}
