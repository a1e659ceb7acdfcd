// A Logbook server for the LangGraph tests, on SQLite or on PostgreSQL (a
// throwaway cluster, pgtest's; skipped with a message where PostgreSQL is not
// installed), and a client of it.

import { Client } from "../../src/client.js";
import { startPostgres, startServer, type RunningServer } from "../harness.js";

export type Backend = "sqlite" | "postgres";

export interface LogbookUnderTest {
  url: string;
  client: Client;
  stop(): Promise<void>;
}

// Keep every checkpoint: the suite and the graph read old ones back.
// --max-body-bytes: a large state fits before the per-route limits land.
const flags = ["--checkpoint-retention", "all", "--sync", "normal", "--max-body-bytes", "8388608"];

/**
 * Starts Logbook on backend; a string says why it cannot run here (no
 * PostgreSQL), for the caller to skip with.
 */
export async function startLogbook(backend: Backend): Promise<LogbookUnderTest | string> {
  let pg: Awaited<ReturnType<typeof startPostgres>> | undefined;
  let server: RunningServer;
  if (backend === "postgres") {
    pg = await startPostgres(1);
    if (typeof pg === "string") return pg;
    server = await startServer({ db: pg.urls[0], args: flags });
  } else {
    server = await startServer({ args: flags });
  }
  return {
    url: server.url,
    client: new Client({ baseUrl: server.url, maxRetries: 0 }),
    async stop() {
      await server.stop();
      if (pg && typeof pg !== "string") await pg.stop();
    },
  };
}

/** Erases every session of the tenant: the suite wants each checkpointer to start empty. */
export async function eraseAll(client: Client): Promise<void> {
  const ids: string[] = [];
  for await (const s of client.listSessions({ limit: 200 })) ids.push(s.id);
  await Promise.all(ids.map((id) => client.purgeSession(id)));
}
