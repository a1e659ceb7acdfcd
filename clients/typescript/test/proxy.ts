// A loopback proxy in front of the server that injects faults: it can drop
// an answer after the server applied the request, answer 503/429/4xx
// itself, and cut the connections of live feeds.

import { createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import type { Socket } from "node:net";

export type Fault =
  /** Forward, let the server answer in full, then close the connection without answering. */
  | { kind: "drop-answer" }
  /** Close the connection before forwarding anything. */
  | { kind: "reset" }
  /** Answer this instead of forwarding. */
  | { kind: "answer"; status: number; headers?: Record<string, string>; body?: unknown };

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  fault?: Fault["kind"];
}

export class FaultProxy {
  readonly seen: Seen[] = [];
  url = "";
  readonly #upstream: URL;
  readonly #faults: { match: (method: string, url: string) => boolean; fault: Fault }[] = [];
  readonly #streams = new Set<Socket>();
  readonly #server: Server;

  constructor(upstream: string) {
    this.#upstream = new URL(upstream);
    this.#server = createServer((req, res) => {
      const method = req.method ?? "GET";
      const url = req.url ?? "/";
      const i = this.#faults.findIndex((f) => f.match(method, url));
      const fault = i >= 0 ? this.#faults.splice(i, 1)[0]!.fault : undefined;
      this.seen.push({ method, url, headers: req.headers, fault: fault?.kind });
      if (fault?.kind === "reset") {
        req.socket.destroy();
        return;
      }
      if (fault?.kind === "answer") {
        req.resume();
        const body = fault.body === undefined ? "" : JSON.stringify(fault.body);
        res.writeHead(fault.status, { "Content-Type": "application/problem+json", ...fault.headers });
        res.end(body);
        return;
      }
      const up = request(
        { host: this.#upstream.hostname, port: this.#upstream.port, method, path: url, headers: req.headers },
        (upRes) => {
          if (fault?.kind === "drop-answer") {
            upRes.resume();
            upRes.on("end", () => req.socket.destroy()); // applied, and the client never hears of it
            return;
          }
          if (String(upRes.headers["content-type"]).startsWith("text/event-stream")) {
            this.#streams.add(req.socket);
            req.socket.once("close", () => this.#streams.delete(req.socket));
          }
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
        },
      );
      up.on("error", () => req.socket.destroy());
      req.pipe(up);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
    return this;
  }

  /** The next request that matches gets this fault (once). */
  inject(fault: Fault, match: (method: string, url: string) => boolean = () => true): void {
    this.#faults.push({ match, fault });
  }

  /** Cuts every open live-feed connection, as a network failure would. */
  cutStreams(): number {
    const n = this.#streams.size;
    for (const s of this.#streams) s.destroy();
    return n;
  }

  requests(method: string, pathPrefix: string): Seen[] {
    return this.seen.filter((s) => s.method === method && s.url.startsWith(pathPrefix));
  }

  async close(): Promise<void> {
    this.cutStreams();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
