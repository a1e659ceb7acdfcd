// A real Logbook server for the tests: built once from this repository
// (`go build ./cmd/server`, or $LOGBOOK_SERVER_BIN), started on a free
// loopback port over a temporary database, stopped at the end.

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The repository root: the nearest directory above this file with go.mod and cmd/server. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "go.mod")) && existsSync(join(dir, "cmd", "server"))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error("no go.mod with cmd/server above " + fileURLToPath(import.meta.url));
    dir = up;
  }
}

/** The directory of the package (clients/typescript). */
export function packageDir(): string {
  return join(repoRoot(), "clients", "typescript");
}

const workDir = mkdtempSync(join(tmpdir(), "logbook-ts-"));
const binaries = new Map<string, Promise<string>>();

/** Builds a command of this repository (`./cmd/server`, `./cmd/embedserver`) once, and answers its path. */
export function goBinary(pkg: string): Promise<string> {
  let b = binaries.get(pkg);
  if (!b) {
    b = (async () => {
      const out = join(workDir, pkg.split("/").pop()!);
      await run("go", ["build", "-o", out, pkg], { cwd: repoRoot(), maxBuffer: 16 << 20 });
      return out;
    })();
    binaries.set(pkg, b);
  }
  return b;
}

function buildServer(): Promise<string> {
  const given = process.env.LOGBOOK_SERVER_BIN;
  return given ? Promise.resolve(given) : goBinary("./cmd/server");
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface RunningServer {
  url: string;
  stop(): Promise<void>;
}

let started = 0;

export interface ServerOptions {
  /** `--db`: a `postgres://` URL (test/postgres.ts makes one), or, left out, a new SQLite file. */
  db?: string;
  /** More flags (`--embedding-url …`). */
  args?: string[];
}

/** Starts a server over a new database; it is ready when this resolves. */
export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const bin = await buildServer();
  const port = await freePort();
  const db = opts.db ?? join(workDir, `x${++started}.db`);
  const args = ["--db", db, "--addr", `127.0.0.1:${port}`, "--log-level", "warn", ...(opts.args ?? [])];
  const proc: ChildProcess = spawn(bin, args, {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  proc.stderr!.on("data", (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}: ${stderr}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`server not ready on ${url} after 20 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

export interface RunningPostgres {
  /** One database URL for each one asked for. */
  urls: string[];
  stop(): Promise<void>;
}

/**
 * Starts a throwaway PostgreSQL cluster with n databases
 * (internal/repo/postgres/pgtest/pgserve), or answers why not when
 * PostgreSQL is not installed here: the caller skips with that message.
 */
export async function startPostgres(n: number): Promise<RunningPostgres | string> {
  const bin = join(workDir, "pgserve");
  if (!existsSync(bin)) {
    await run("go", ["build", "-o", bin, "./internal/repo/postgres/pgtest/pgserve"], { cwd: repoRoot(), maxBuffer: 16 << 20 });
  }
  const proc = spawn(bin, ["-dbs", String(n)], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let stderr = "";
  proc.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const ready = new Promise<void>((resolve) =>
    proc.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      if (/^ready$/m.test(out)) resolve();
    }),
  );
  const code = await Promise.race([ready.then(() => undefined), exited]);
  if (code === 3) return `PostgreSQL is not installed here: ${stderr.trim()}`;
  if (code !== undefined) throw new Error(`pgserve exited with ${code}: ${stderr}`);
  return {
    urls: out.split("\n").filter((l) => l.startsWith("postgres://")),
    async stop() {
      proc.stdin!.end();
      const t = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(t);
    },
  };
}

let shared: Promise<RunningServer> | undefined;

/** The server most tests share (each test uses sessions of its own). */
export function sharedServer(): Promise<RunningServer> {
  shared ??= startServer();
  return shared;
}

/** Stops the shared server and removes the temporary directory. */
export async function cleanup(): Promise<void> {
  if (shared) await (await shared).stop();
  rmSync(workDir, { recursive: true, force: true });
}
