// The two servers the chat-framework suites run against: the shared SQLite
// one, and one over the shared throwaway PostgreSQL (test/postgres.ts),
// started by the first suite that asks. Where PostgreSQL is not installed,
// the PostgreSQL server is the reason, and the suites skip with it.

import { sharedServer, startServer, type RunningServer } from "./harness.js";
import { sharedPostgres } from "./postgres.js";

export interface Backend {
  name: string;
  /** The server, or why there is none. */
  server(): Promise<RunningServer | string>;
}

let pgServer: Promise<RunningServer | string> | undefined;

export const backends: Backend[] = [
  { name: "SQLite", server: () => sharedServer() },
  {
    name: "PostgreSQL",
    server: () =>
      (pgServer ??= (async () => {
        const pg = await sharedPostgres();
        if (typeof pg === "string") return pg;
        return startServer({ db: await pg.database("chat") });
      })()),
  },
];

/** Stops the PostgreSQL server, if one was started (before the cluster stops). */
export async function stopBackends(): Promise<void> {
  if (!pgServer) return;
  const s = await pgServer;
  pgServer = undefined;
  if (typeof s !== "string") await s.stop();
}
