// The project's stand-in embedding endpoint (cmd/embedserver, internal/embed/
// standin) as a process on a free loopback port, for servers that embed
// (`serverArgs`) and for the frameworks' own in-memory stores, which must get
// the very same vectors (`StandinEmbeddings`).

import { spawn, type ChildProcess } from "node:child_process";
import { Embeddings } from "@langchain/core/embeddings";
import { freePort, goBinary } from "./harness.js";

export const STANDIN_MODEL = "logbook-standin";
export const STANDIN_DIMS = 64;

export interface Standin {
  /** Its POST /v1/embeddings. */
  url: string;
  /** The flags that make a Logbook server embed with it. */
  serverArgs: string[];
  stop(): Promise<void>;
}

async function start(): Promise<Standin> {
  const bin = await goBinary("./cmd/embedserver");
  const port = await freePort();
  const proc: ChildProcess = spawn(bin, ["-addr", `127.0.0.1:${port}`, "-dims", String(STANDIN_DIMS)], { stdio: ["ignore", "ignore", "pipe"] });
  proc.stderr!.resume();
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}/v1/embeddings`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const res = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ input: "ping", model: STANDIN_MODEL }) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`the stand-in embedding server did not start on ${url}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    serverArgs: ["--embedding-url", url, "--embedding-model", STANDIN_MODEL, "--embedding-dims", String(STANDIN_DIMS)],
    async stop() {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      await exited;
    },
  };
}

let shared: Promise<Standin> | undefined;

export function sharedStandin(): Promise<Standin> {
  shared ??= start();
  return shared;
}

export async function stopStandin(): Promise<void> {
  if (shared) await (await shared).stop();
}

/** LangChain Embeddings that call the stand-in, as the Logbook server does. */
export class StandinEmbeddings extends Embeddings {
  constructor(readonly url: string) {
    super({});
  }

  async embedDocuments(texts: string[]): Promise<number[][]> {
    const res = await fetch(this.url, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ input: texts, model: STANDIN_MODEL, dimensions: STANDIN_DIMS }) });
    if (!res.ok) throw new Error(`stand-in embeddings: ${res.status}`);
    const body = (await res.json()) as { data: { index: number; embedding: number[] }[] };
    return body.data.sort((a, b) => a.index - b.index).map((d) => d.embedding);
  }

  async embedQuery(text: string): Promise<number[]> {
    return (await this.embedDocuments([text]))[0]!;
  }
}
