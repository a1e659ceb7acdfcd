// Vitest's global setup: the Logbook server is built once and one throwaway
// PostgreSQL cluster is started for every test file (each file's server gets
// a database of its own), rather than one per file.

import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { TestProject } from "vitest/node";
import { cleanup, repoRoot, startPostgres } from "../harness.js";

declare module "vitest" {
  interface ProvidedContext {
    serverBin: string;
    /** Database URLs, one per file that asks; or why there is no PostgreSQL here. */
    postgres: string[] | string;
  }
}

/** The databases handed out: one per test file on PostgreSQL. */
export const databases = { validation: 0, graph: 1 } as const;

export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "logbook-lg-"));
  const bin = join(dir, "server");
  await promisify(execFile)("go", ["build", "-o", bin, "./cmd/server"], { cwd: repoRoot(), maxBuffer: 16 << 20 });
  const pg = await startPostgres(Object.keys(databases).length);
  project.provide("serverBin", bin);
  project.provide("postgres", typeof pg === "string" ? pg : pg.urls);
  return async () => {
    if (typeof pg !== "string") await pg.stop();
    rmSync(dir, { recursive: true, force: true });
    await cleanup(); // the harness's own temporary directory
  };
}
