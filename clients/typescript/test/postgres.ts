// A throwaway PostgreSQL cluster for the tests, as internal/repo/postgres/pgtest
// starts them for Go's: initdb in a temporary directory (as the postgres user
// when the tests run as root, which initdb refuses), a server on a free
// loopback port with fsync off, a new database for each Logbook server. Where
// PostgreSQL is not installed, `sharedPostgres()` answers why, and a suite
// skips its PostgreSQL half with that message.
//
//   const pg = await sharedPostgres();
//   if (typeof pg === "string") t.skip(pg);
//   else server = await startServer({ db: await pg.database("mine") });

import { execFile } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./harness.js";

const run = promisify(execFile);

/** Where PostgreSQL's programs are looked for after LOGBOOK_PG_BIN and PATH: Debian's packages install them here. */
const BIN_DIRS = ["/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"];
const PROGRAMS = ["initdb", "pg_ctl", "psql"];

function hasAll(dir: string): boolean {
  return PROGRAMS.every((p) => existsSync(join(dir, p)));
}

/** The directory with initdb, pg_ctl and psql, or why there is none. */
async function binDir(): Promise<string | { missing: string }> {
  const given = process.env.LOGBOOK_PG_BIN;
  if (given) return hasAll(given) ? given : { missing: `no ${PROGRAMS.join(", ")} in LOGBOOK_PG_BIN=${given}` };
  const dirs: string[] = [];
  try {
    const { stdout } = await run("sh", ["-c", "command -v initdb"]);
    if (stdout.trim()) dirs.push(stdout.trim().replace(/\/initdb$/, ""));
  } catch {
    // not on PATH
  }
  dirs.push(...BIN_DIRS);
  return dirs.find(hasAll) ?? { missing: `no ${PROGRAMS.join(", ")} in LOGBOOK_PG_BIN, PATH or ${BIN_DIRS.join(", ")}` };
}

export interface Postgres {
  port: number;
  /** Creates database `name` and answers its URL for `--db`. */
  database(name: string): Promise<string>;
  stop(): Promise<void>;
}

async function start(): Promise<Postgres | string> {
  const bin = await binDir();
  if (typeof bin !== "string") return `PostgreSQL is not installed here (${bin.missing}): the PostgreSQL half is skipped`;
  // Not under a test's own temporary directory: as root, the postgres user must reach it.
  const root = mkdtempSync(join(tmpdir(), "logbook-ts-pg-"));
  const data = join(root, "data");
  const asPostgres = process.getuid?.() === 0;
  if (asPostgres) {
    const { stdout } = await run("id", ["-u", "postgres"]).catch(() => ({ stdout: "" }));
    const { stdout: gid } = await run("id", ["-g", "postgres"]).catch(() => ({ stdout: "" }));
    if (!stdout.trim()) return "running as root, PostgreSQL needs the postgres user, and there is none: the PostgreSQL half is skipped";
    chmodSync(root, 0o755);
    chownSync(root, Number(stdout.trim()), Number(gid.trim()));
  }
  const pgRun = (prog: string, args: string[]) =>
    asPostgres ? run("runuser", ["-u", "postgres", "--", join(bin, prog), ...args]) : run(join(bin, prog), args);
  await pgRun("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C"]);
  let port = 0;
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    const settings = `-c listen_addresses=127.0.0.1 -p ${port} -k ${root} -c fsync=off -c full_page_writes=off -c max_connections=200`;
    try {
      await pgRun("pg_ctl", ["-D", data, "-w", "-t", "60", "-l", join(root, "log"), "-o", settings, "start"]);
      break;
    } catch (err) {
      if (attempt === 2) throw err; // another process took the port meanwhile, three times
    }
  }
  return {
    port,
    async database(name: string): Promise<string> {
      await run(join(bin, "psql"), ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", "postgres", "-q", "-c", `CREATE DATABASE "${name}"`]);
      return `postgres://postgres@127.0.0.1:${port}/${name}?sslmode=disable`;
    },
    async stop(): Promise<void> {
      await pgRun("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

let shared: Promise<Postgres | string> | undefined;

/** The cluster the suites share (each server gets a database of its own), or why there is none. */
export function sharedPostgres(): Promise<Postgres | string> {
  shared ??= start();
  return shared;
}

/** Stops the shared cluster, if one was started. */
export async function stopPostgres(): Promise<void> {
  if (!shared) return;
  const pg = await shared.catch(() => undefined);
  if (pg && typeof pg !== "string") await pg.stop();
}
