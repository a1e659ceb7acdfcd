// README.md's `ts` blocks are programs: each is compiled (types stripped),
// written into build/readme/ (inside the package, so that "@logbook/client"
// resolves to the package itself, as in a user's project, and the
// frameworks to its dev dependencies) and run with node against the shared
// server; when the README shows what a block prints, its output must be
// exactly that. The framework examples call a model: a scripted one stands
// in for the provider's (STAND_INS), and nothing else is changed.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { sharedStandin } from "./embedding.js";
import { packageDir, sharedServer, startServer, type RunningServer } from "./harness.js";

const run = promisify(execFile);
const fixture = (name: string) => JSON.stringify(pathToFileURL(join(packageDir(), "build", "test", name)).href);

/**
 * What a section's blocks get before (and after) them, the provider's model
 * they swap for a scripted one, and whether their server embeds (with the
 * tests' stand-in embedding endpoint, test/embedding.ts).
 */
const STAND_INS: Record<string, { before?: string; after?: string; swap?: [string, string]; embeds?: boolean }> = {
  LangGraph: { embeds: true },
  "OpenAI Agents SDK": {
    before: `import { setDefaultModelProvider, setTracingDisabled } from "@openai/agents";
import { ScriptedProvider, echoModel } from ${fixture("agents-fixtures.js")};
setTracingDisabled(true);
setDefaultModelProvider(new ScriptedProvider(echoModel()));`,
  },
  "Google ADK": {
    before: `import { ScriptedLlm, say } from ${fixture("adk-scenario.js")};
const scriptedGemini = new ScriptedLlm([say("Hello, Ann.")]);`,
    swap: ['"gemini-2.5-flash"', "scriptedGemini"],
  },
  "Vercel AI SDK": {
    before: `import { MockLanguageModelV4, simulateReadableStream } from "ai/test";
const model = new MockLanguageModelV4({ doStream: async () => ({ stream: simulateReadableStream({ chunks: [
  { type: "stream-start", warnings: [] },
  { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "Refunded." }, { type: "text-end", id: "t" },
  { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: { inputTokens: { total: 1 }, outputTokens: { total: 1 } } },
] }) }) });`,
    // The route, called as the browser would, and the chat it saved.
    after: `const chatId = "chat-" + Date.now();
const res = await POST(new Request("http://app/api/chat", { method: "POST", body: JSON.stringify({ id: chatId,
  message: { id: "u1", role: "user", parts: [{ type: "text", text: "Where is my refund?" }] } }) }));
await res.text();
let saved = [];
for (let i = 0; i < 100 && saved.length < 2; i++) { await new Promise((r) => setTimeout(r, 20)); saved = await store.loadChat(chatId); }
if (saved.length !== 2) throw new Error("the chat was not saved: " + JSON.stringify(saved));`,
  },
};

interface Block {
  section: string;
  line: number;
  code: string;
  prints?: string;
}

/** The README's ts blocks, each with its section (## heading) and what the README says it prints. */
function blocks(readme: string): Block[] {
  const out: Block[] = [];
  let section = "";
  const lines = readme.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.startsWith("## ")) section = lines[i]!.slice(3);
    if (lines[i] !== "```ts") continue;
    const end = lines.indexOf("```", i + 1);
    const b: Block = { section, line: i + 1, code: lines.slice(i + 1, end).join("\n") + "\n" };
    // "prints", a blank line and a plain block right after it.
    if (lines[end + 2] === "prints" && lines[end + 4] === "```") {
      const pe = lines.indexOf("```", end + 5);
      b.prints = lines.slice(end + 5, pe).join("\n") + "\n";
    }
    out.push(b);
    i = end;
  }
  return out;
}

let embedding: Promise<RunningServer> | undefined;

/** A server that embeds, started when a block first needs it and stopped at the end. */
async function embeddingServer(): Promise<string> {
  embedding ??= sharedStandin().then((standin) => startServer({ args: standin.serverArgs }));
  return (await embedding).url;
}

describe("README.md", () => {
  let url = "";
  before(async () => {
    url = (await sharedServer()).url;
  });
  after(async () => {
    if (embedding) await (await embedding).stop();
  });

  const readme = readFileSync(join(packageDir(), "README.md"), "utf8");
  const dir = join(packageDir(), "build", "readme");
  for (const b of blocks(readme)) {
    it(`runs the block at line ${b.line} (${b.section})`, async () => {
      const stand = STAND_INS[b.section] ?? {};
      let code = b.code;
      if (stand.swap) {
        assert.ok(code.includes(stand.swap[0]), `the block has no ${stand.swap[0]} to stand in for`);
        code = code.replaceAll(stand.swap[0], stand.swap[1]);
      }
      const js = ts.transpileModule(code, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
      }).outputText;
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `line-${b.line}.mjs`);
      writeFileSync(file, [stand.before ?? "", js, stand.after ?? ""].join("\n"));
      const base = stand.embeds ? await embeddingServer() : url;
      const { stdout } = await run(process.execPath, [file], { env: { ...process.env, LOGBOOK_URL: base, LOGBOOK_API_KEY: "" } });
      if (b.prints !== undefined) assert.equal(stdout, b.prints);
    });
  }
});
