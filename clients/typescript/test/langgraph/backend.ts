// A Logbook server for the LangGraph tests, on SQLite or on PostgreSQL (the
// throwaway cluster of setup.ts; skipped with a message where PostgreSQL is
// not installed), and a client of it.

import { inject } from "vitest";
import { Client } from "../../src/client.js";
import { startServer } from "../harness.js";
import { databases } from "./setup.js";

export type Backend = "sqlite" | "postgres";

export interface LogbookUnderTest {
  url: string;
  client: Client;
  stop(): Promise<void>;
}

// Keep every checkpoint: the suite and the graph read old ones back. Body
// limits are the server's defaults: a checkpoint's route admits any legal state.
const flags = ["--checkpoint-retention", "all", "--sync", "normal"];

/**
 * Starts Logbook on backend (on PostgreSQL, in the database the global setup
 * made for file); a string says why it cannot run here (no PostgreSQL), for
 * the caller to skip with.
 */
export async function startLogbook(backend: Backend, file: keyof typeof databases): Promise<LogbookUnderTest | string> {
  process.env.LOGBOOK_SERVER_BIN = inject("serverBin");
  let db: string | undefined;
  if (backend === "postgres") {
    const pg = inject("postgres");
    if (typeof pg === "string") return pg;
    db = pg[databases[file]];
  }
  const server = await startServer({ db, args: flags });
  return { url: server.url, client: new Client({ baseUrl: server.url, maxRetries: 0 }), stop: () => server.stop() };
}

/** Erases every session of the tenant: the suite wants each checkpointer to start empty. */
export async function eraseAll(client: Client): Promise<void> {
  const ids: string[] = [];
  for await (const s of client.listSessions({ limit: 200 })) ids.push(s.id);
  await Promise.all(ids.map((id) => client.purgeSession(id)));
}
