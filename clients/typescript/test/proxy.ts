// A loopback proxy in front of the server that injects faults: it can drop
// an answer after the server applied the request, answer 503/429/4xx
// itself, and cut the connections of live feeds. TcpProxy relays bytes, for
// message streams, whose request and answer flow at once.

import { createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";

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

/** Breaks one connection: cut once this many bytes went to the server, or came back; or answered with `answer`, forwarding nothing. */
export interface TcpFault {
  cutRequestAfter?: number;
  cutAnswerAfter?: number;
  answer?: string;
}

/**
 * A byte-for-byte TCP relay to the server, so that a stream's request and
 * answer flow at once; each new connection takes the next planned fault.
 * It counts the message lines passing each way (`}\n`: a raw line break
 * never occurs inside a JSON line, and HTTP's own lines end `\r\n`) and the
 * most that were on their way to the server and not answered at once.
 */
export class TcpProxy {
  url = "";
  connections = 0;
  sent = 0;
  answered = 0;
  maxInFlight = 0;
  readonly #upstream: URL;
  readonly #faults: TcpFault[] = [];
  readonly #sockets = new Set<Socket>();
  readonly #server: NetServer;

  constructor(upstream: string) {
    this.#upstream = new URL(upstream);
    this.#server = createNetServer((down) => {
      this.connections++;
      const f = this.#faults.shift() ?? {};
      this.#track(down);
      const answer = f.answer;
      if (answer !== undefined) {
        down.once("data", () => down.end(answer));
        return;
      }
      const up = connect(Number(this.#upstream.port), this.#upstream.hostname);
      this.#track(up);
      const cut = () => {
        down.destroy();
        up.destroy();
      };
      this.#pipe(down, up, f.cutRequestAfter, true, cut);
      this.#pipe(up, down, f.cutAnswerAfter, false, cut);
    });
  }

  #track(s: Socket): void {
    this.#sockets.add(s);
    s.once("close", () => this.#sockets.delete(s));
    s.on("error", () => s.destroy());
  }

  #pipe(src: Socket, dst: Socket, limit: number | undefined, toServer: boolean, cut: () => void): void {
    let passed = 0;
    let last = 0;
    src.on("data", (buf: Buffer) => {
      let chunk = buf;
      if (limit !== undefined && passed + chunk.length > limit) chunk = chunk.subarray(0, limit - passed);
      for (let i = 0; i < chunk.length; i++) {
        const prev = i > 0 ? chunk[i - 1] : last;
        if (chunk[i] === 0x0a && prev === 0x7d) {
          if (toServer) this.sent++;
          else this.answered++;
        }
      }
      if (chunk.length > 0) last = chunk[chunk.length - 1]!;
      if (toServer) this.maxInFlight = Math.max(this.maxInFlight, this.sent - this.answered);
      passed += chunk.length;
      dst.write(chunk);
      if (limit !== undefined && passed >= limit) cut();
    });
    src.once("end", () => dst.end());
    src.once("close", cut);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
    return this;
  }

  /** The next connections fail as listed, one each. */
  plan(...faults: TcpFault[]): void {
    this.#faults.push(...faults);
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
