// The methods beyond a turn's, each called once against the server and its
// answer checked: memory, files, export and import, embeddings, the admin
// routes.

import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { Client, type Job, Problem, type PurgeResult } from "../src/index.js";
import { sharedServer, startServer } from "./harness.js";

let lb: Client;

before(async () => {
  lb = new Client({ baseUrl: (await sharedServer()).url });
});

async function problem(p: Promise<unknown>): Promise<Problem> {
  try {
    await p;
  } catch (err) {
    if (err instanceof Problem) return err;
    throw err;
  }
  assert.fail("expected a Problem, got an answer");
}

describe("memory", () => {
  it("shares, edits and deletes blocks, keeping their history", async () => {
    const a = await lb.createAgent({ name: "parity-ts" });
    const owner = await lb.createAgent({ name: "parity-ts-owner" });
    await lb.putBlock(owner.id, "policy", { value: "Refunds within 30 days." });
    const shared = await lb.attachBlock(a.id, { agent_id: owner.id, label: "policy", as: "rules" });
    assert.equal(shared.owner_agent_id, owner.id);
    await lb.appendBlock(a.id, "rules", { content: "Ask for the order number." });
    const b = await lb.replaceBlock(a.id, "rules", { old: "30", new: "60" });
    assert.equal(b.value, "Refunds within 60 days.\nAsk for the order number.");
    assert.equal((await lb.getBlock(owner.id, "policy")).value, b.value);
    const history = await lb.getBlockHistory(owner.id, "policy").toArray();
    assert.deepEqual(history.map((v) => v.version), [3, 2, 1]);
    assert.equal((await lb.listBlocks(a.id)).length, 1);
    await lb.detachBlock(a.id, "rules");
    assert.equal((await lb.listBlocks(a.id)).length, 0);
    await lb.deleteBlock(owner.id, "policy");
    assert.equal((await problem(lb.getBlock(owner.id, "policy"))).code, "not_found");
  });

  it("stores passages with embeddings and searches them by words and by meaning", async () => {
    const a = await lb.createAgent({ name: "parity-ts-archive" });
    const walrus = await lb.insertPassage(a.id, { content: "walruses eat clams", embedding: [1, 0, 0], embedding_model: "parity-embed", tags: ["zoo"] });
    await lb.insertPassage(a.id, { content: "penguins eat fish", embedding: [0, 1, 0], embedding_model: "parity-embed" });
    assert.equal((await lb.getPassage(a.id, walrus.id)).embedding_state, "ready");
    assert.equal((await lb.listPassages(a.id).toArray()).length, 2);
    const byMeaning = await lb.searchArchival(a.id, { mode: "vector", query_embedding: [0.9, 0.1, 0] });
    assert.equal(byMeaning.data[0]!.id, walrus.id);
    const byWords = await lb.searchArchival(a.id, { q: "clams", tags: ["zoo"] });
    assert.deepEqual(byWords.data.map((p) => p.id), [walrus.id]);
    await lb.deletePassage(a.id, walrus.id);
    assert.equal((await problem(lb.getPassage(a.id, walrus.id))).code, "not_found");
  });

  it("runs the memory tools a model calls", async () => {
    const a = await lb.createAgent({ name: "parity-ts-tools" });
    const tools = await lb.listTools();
    assert.ok(tools.some((t) => t.name === "core_memory_append"));
    const r = await lb.runTool(a.id, "core_memory_append", '{"label": "human", "content": "Name: Ada."}');
    assert.deepEqual(r, { result: "None", is_error: false });
    const bad = await lb.runTool(a.id, "core_memory_replace", { label: "human", old_content: "Bob", new_content: "Eve" });
    assert.equal(bad.is_error, true);
    assert.equal((await lb.getBlock(a.id, "human")).value, "Name: Ada.");
  });
});

describe("messages' embeddings", () => {
  it("stores the client's embedding of a message", async () => {
    const a = await lb.createAgent({ name: "parity-ts-embed" });
    const s = await lb.createSession({ agent_id: a.id });
    const m = await lb.appendMessage(s.id, { role: "user", content: "walrus?" });
    await lb.putMessageEmbedding(s.id, m.id, { embedding: [1, 0, 0], embedding_model: "parity-embed" });
    const e = await lb.getMessageEmbedding(s.id, m.id);
    assert.equal(e.embedding_state, "ready");
    assert.equal(e.dimensions, 3);
  });
});

describe("files", () => {
  it("uploads bytes and downloads them with their media type", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10, 1, 2, 3]);
    const f = await lb.uploadFile(png, "image/png");
    assert.equal(f.size, png.length);
    assert.equal((await lb.uploadFile(new Blob([png], { type: "image/png" }))).id, f.id); // the same bytes, the same file
    const s = await lb.createSession();
    const m = await lb.appendMessage(s.id, { role: "user", content: [{ type: "image", file_id: f.id }] });
    assert.equal((m.content as { file_id: string }[])[0]!.file_id, f.id);
    const blob = await lb.downloadFile(f.id);
    assert.equal(blob.type, "image/png");
    assert.deepEqual(new Uint8Array(await blob.arrayBuffer()), png);
  });
});

describe("export and import", () => {
  it("round-trips a session, an agent and items byte for byte", async () => {
    const s = await lb.createSession({ title: "to copy" });
    await lb.appendMessage(s.id, { role: "user", content: "Hello" });
    const data = await lb.exportSession(s.id);
    const copy = await lb.importSession(data, { asNew: true });
    assert.notEqual(copy.id, s.id);
    assert.equal(copy.title, "to copy");
    assert.equal(copy.message_count, 1);

    const a = await lb.createAgent({ name: "parity-ts-export" });
    await lb.putBlock(a.id, "persona", { value: "Helpful." });
    const agentCopy = await lb.importAgent(await lb.exportAgent(a.id), { asNew: true });
    assert.notEqual(agentCopy.id, a.id);
    assert.equal((await lb.getBlock(agentCopy.id, "persona")).value, "Helpful.");

    await lb.putItem(["parity-ts-transfer"], "k", { value: { n: 1 } });
    const items = await lb.exportItems({ namespace_prefix: "parity-ts-transfer" });
    assert.equal((await problem(lb.importItems(items))).code, "conflict");
    assert.deepEqual(await lb.importItems(new TextDecoder().decode(items), { replace: true }), { items: 1 });
  });
});

describe("administration", () => {
  it("answers health, usage, purges, integrity, the tenant's embedding, backups and keys", async () => {
    const srv = await startServer(); // its own: a key ends open mode for good
    try {
      const open = new Client({ baseUrl: srv.url });
      assert.equal((await open.getHealth()).status, "ok");
      assert.equal((await open.getReadiness()).status, "ok");
      const me = await open.getWhoAmI();
      assert.deepEqual([me.tenant, me.scope, me.open_mode], ["default", "admin", true]);
      const s = await open.createSession();
      await open.appendMessage(s.id, { role: "user", content: "hi", tokens: 3 });
      const usage = await open.getUsage({ group_by: "session" });
      assert.equal(usage.data.length, 1);
      assert.equal((await open.purgeSessions({ expired: true, dry_run: true })).sessions, 0);
      assert.equal((await open.checkIntegrity()).ok, true);
      assert.equal((await open.getTenantEmbedding()).embedding, null);
      const p = await problem(open.putTenantEmbedding({ url: "http://127.0.0.1:1/v1/embeddings", model: "m" }));
      assert.equal(p.code, "validation_failed");
      await open.deleteTenantEmbedding();
      assert.match((await open.backupDatabase({ name: "parity.db" })).path, /parity\.db$/);

      const k = await open.createAPIKey({ scope: "admin", name: "parity" });
      const admin = new Client({ baseUrl: srv.url, apiKey: k.key });
      assert.deepEqual((await admin.listAPIKeys().toArray()).map((x) => x.id), [k.id]);
      await admin.revokeAPIKey(k.id);
      assert.equal((await problem(admin.getSession(s.id))).status, 401);
    } finally {
      await srv.stop();
    }
  });
});

describe("jobs", () => {
  // `Prefer: respond-async` on every request makes the long operations answer
  // 202 with a job, as they do when they outlast the server's wait.
  function asyncClient(url: string): { client: Client; accepted: () => number } {
    let accepted = 0;
    const client = new Client({
      baseUrl: url,
      headers: { Prefer: "respond-async" },
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if (res.status === 202) accepted++;
        return res;
      },
    });
    return { client, accepted: () => accepted };
  }

  it("answer purges, integrity checks and backups as the routes do, and their failures as Problems", async () => {
    const srv = await startServer(); // its own: a backup is the default tenant's
    try {
      const now = new Client({ baseUrl: srv.url });
      const { client: later, accepted } = asyncClient(srv.url);
      await now.createSession();
      const purge = { status: "created", older_than: new Date(Date.now() + 3_600_000).toISOString(), dry_run: true } as const;
      const name = `jobs-ts-${Date.now()}`;
      const cases: [string, (c: Client, i: number) => Promise<unknown>, (a: any, b: any) => void][] = [
        ["purge", (c) => c.purgeSessions(purge), (a, b) => assert.deepEqual([b, a.sessions], [a, 1])],
        ["integrity", (c) => c.checkIntegrity(), (a, b) => assert.deepEqual([b.ok, b.integrity_check], [a.ok, a.integrity_check])],
        ["backup", (c, i) => c.backupDatabase({ name: `${name}-${i}.db` }), (a, b) => {
          assert.equal(b.path, a.path.replace(/-0\.db$/, "-1.db"));
          assert.ok(b.bytes > 0);
        }],
      ];
      for (const [what, run, same] of cases) {
        const want = await run(now, 0);
        const before = accepted();
        const got = await run(later, 1);
        assert.equal(accepted(), before + 1, `${what}: the server answered no 202`);
        same(want, got);
      }
      const p = await problem(later.backupDatabase({ name: `${name}-1.db` }));
      assert.deepEqual([p.status, p.code], [409, "conflict"]);
    } finally {
      await srv.stop();
    }
  });

  it("reads a job", async () => {
    const a = await lb.request<Job>("POST", "/v1/admin/purge", {
      body: { expired: true, dry_run: true },
      headers: { Prefer: "respond-async" },
    });
    assert.equal(a.status, 202);
    assert.equal(a.headers.get("location"), `/v1/admin/jobs/${a.body.id}`);
    let job = a.body;
    for (const deadline = Date.now() + 30_000; job.state === "running"; ) {
      assert.ok(Date.now() < deadline, `job ${job.id} still runs`);
      await new Promise((r) => setTimeout(r, 50));
      job = await lb.getJob(job.id);
    }
    assert.equal(job.state, "succeeded");
    assert.equal(job.kind, "purge");
    assert.equal((job.result as PurgeResult).dry_run, true);
    assert.equal(job.error, null);
    assert.equal((await problem(lb.getJob("job_nonesuch"))).status, 404);
  });
});
