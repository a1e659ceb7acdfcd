// The package as a user gets it: a project that installs the folder (as the
// README says) gets dist/ built by `prepare` from src/ as it is now, and one
// that installs `npm pack`'s tarball, with no build step of its own, imports
// each entry point.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { promisify } from "node:util";
import { packageDir } from "./harness.js";

const run = promisify(execFile);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

// What each entry point exports, and the peer packages it needs.
const entries: { path: string; names: string[]; peers: string[] }[] = [
  { path: "@logbook/client", names: ["Client", "Problem", "Pager", "StreamWriter", "parseEventStream"], peers: [] },
  { path: "@logbook/client/schema", names: [], peers: [] },
  { path: "@logbook/client/openai-agents", names: ["LogbookSession", "itemToMessage", "messageToItems"], peers: ["@openai/agents"] },
  {
    path: "@logbook/client/langgraph",
    names: ["LogbookSaver", "LogbookStore"],
    peers: ["@langchain/langgraph", "@langchain/langgraph-checkpoint", "@langchain/core"],
  },
  { path: "@logbook/client/adk", names: ["LogbookSessionService", "LogbookMemoryService"], peers: ["@google/adk"] },
  { path: "@logbook/client/ai-sdk", names: ["LogbookChatStore", "uiToMessages"], peers: ["ai"] },
];

/** A new npm project in a temporary directory. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), "logbook-ts-user-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "user", version: "1.0.0", private: true, type: "module" }));
  return dir;
}

async function install(dir: string, what: string): Promise<void> {
  // Offline: the package has no dependencies, and its peers are optional.
  // Scripts run: installing the folder builds dist/ (prepare).
  await run(npm, ["install", what, "--offline", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir });
}

/** Imports entry in the project at dir and answers the names it exports. */
async function exportsOf(dir: string, entry: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", `console.log(JSON.stringify(Object.keys(await import(${JSON.stringify(entry)}))))`], {
    cwd: dir,
  });
  return JSON.parse(stdout) as string[];
}

describe("the package", () => {
  const dirs: string[] = [];

  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("installs from the folder, as the README says, building dist/ on the way", async () => {
    // dist/ is build output (not committed): without it, the install must make it.
    rmSync(join(packageDir(), "dist"), { recursive: true, force: true });
    const dir = project();
    dirs.push(dir);
    await install(dir, packageDir());
    assert.ok(existsSync(join(packageDir(), "dist", "index.js")), "prepare built no dist/");
    assert.ok((await exportsOf(dir, "@logbook/client")).includes("Client"));
  });

  it("installs from npm pack's tarball, and each entry point imports with its framework installed", async () => {
    const out = mkdtempSync(join(tmpdir(), "logbook-ts-pack-"));
    dirs.push(out);
    // The test before built dist/ just now: pack it without building again.
    await run(npm, ["pack", "--ignore-scripts", "--pack-destination", out, "--loglevel=error"], { cwd: packageDir() });
    const tarball = join(out, readdirSync(out).find((f) => f.endsWith(".tgz"))!);
    const dir = project();
    dirs.push(dir);
    await install(dir, tarball);
    for (const e of entries.filter((e) => e.peers.length === 0)) {
      const names = await exportsOf(dir, e.path);
      for (const n of e.names) assert.ok(names.includes(n), `${e.path} exports no ${n}: ${names.join(", ")}`);
    }
    // The frameworks are the user's (optional peers): link the ones this
    // package is tested with into the project, as if it had installed them.
    for (const peer of new Set(entries.flatMap((e) => e.peers))) {
      const at = join(dir, "node_modules", peer);
      mkdirSync(join(at, ".."), { recursive: true });
      symlinkSync(join(packageDir(), "node_modules", peer), at, "dir");
    }
    for (const e of entries.filter((e) => e.peers.length > 0)) {
      const names = await exportsOf(dir, e.path);
      for (const n of e.names) assert.ok(names.includes(n), `${e.path} exports no ${n}: ${names.join(", ")}`);
    }
  });
});
