// The PostgreSQL the node suites share: one throwaway cluster started through
// harness.ts's startPostgres (internal/repo/postgres/pgtest/pgserve, the same
// set-up the Go tests use), with a database for each Logbook server that asks.
// Where PostgreSQL is not installed, `sharedPostgres()` answers why, and a
// suite skips its PostgreSQL half with that message.
//
//   const pg = await sharedPostgres();
//   if (typeof pg === "string") t.skip(pg);
//   else server = await startServer({ db: await pg.database("mine") });

import { startPostgres } from "./harness.js";

/** How many databases the shared cluster has: one per suite that asks. */
const DATABASES = 8;

export interface Postgres {
  /** The URL of database `name` for `--db` (the same name, the same database). */
  database(name: string): Promise<string>;
  stop(): Promise<void>;
}

async function start(): Promise<Postgres | string> {
  const pg = await startPostgres(DATABASES);
  if (typeof pg === "string") return `${pg}: the PostgreSQL half is skipped`;
  const byName = new Map<string, string>();
  return {
    async database(name: string): Promise<string> {
      let url = byName.get(name);
      if (url === undefined) {
        url = pg.urls[byName.size];
        if (url === undefined) throw new Error(`the shared PostgreSQL has ${DATABASES} databases, all taken`);
        byName.set(name, url);
      }
      return url;
    },
    stop: () => pg.stop(),
  };
}

let shared: Promise<Postgres | string> | undefined;

/** The cluster the suites share, started by the first that asks. */
export function sharedPostgres(): Promise<Postgres | string> {
  shared ??= start();
  return shared;
}

/** Stops the shared cluster, if one was started. */
export async function stopPostgres(): Promise<void> {
  if (!shared) return;
  const pg = await shared;
  shared = undefined;
  if (typeof pg !== "string") await pg.stop();
}
