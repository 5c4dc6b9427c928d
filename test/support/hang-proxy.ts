/**
 * An HTTP proxy on loopback in front of one target (the simulator, or the test InfluxDB's proxy)
 * whose behaviour a test switches at run time:
 *
 * - `pass`: forwards method, path, headers and body, and streams the answer back (optionally
 *   after a delay: a slow network in front of one client only);
 * - `hang`: reads the request and never answers a byte, keeping the connection open (a dependency
 *   that accepts connections and never answers);
 * - `retry-after`: answers 429 with a given `Retry-After` header;
 * - `status`: answers a given status (default 500) with a short JSON error body;
 * - `empty`: answers 200 with well-formed InfluxQL results holding no series, one per statement
 *   of `q` (an InfluxDB, or a front before it, that answers a query with nothing).
 *
 * `hang`, `retry-after`, `status` and `empty` may apply to the paths matching a pattern only; other paths pass. Every
 * request is recorded with the mode it got. close() destroys every socket, both sides.
 */
import {
  Agent,
  createServer,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  request,
  type ServerResponse,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** What the proxy does with a request. */
export type ProxyMode = "pass" | "hang" | "retry-after" | "status" | "empty";

/** One request the proxy received. */
export interface ProxiedRequest {
  readonly method: string;
  /** Path and query, as received. */
  readonly url: string;
  /** Path without the query. */
  readonly path: string;
  /** The mode it got. */
  readonly mode: ProxyMode;
  readonly atMs: number;
  /** Bytes of its body received so far (final once `complete`). */
  bodyBytes: number;
  /** The whole request body was received. */
  complete: boolean;
  /** Status of the answer (pass: the target's; 0 while none was sent). */
  status: number;
}

/** Settings of a mode. */
export interface ModeOptions {
  /**
   * Only requests whose path and query (as received) match are hung or refused; the others pass.
   * A function is asked once per request, in the order they come.
   */
  readonly only?: RegExp | ((url: string) => boolean);
  /** The Retry-After header of `retry-after` (default "1"). */
  readonly retryAfter?: string;
  /** The status of `status` (default 500). */
  readonly status?: number;
  /** `pass` only: each request is forwarded this many ms after it was received in full. */
  readonly delayMs?: number;
}

export interface HangProxy {
  /** Base URL of the proxy (http://127.0.0.1:port). */
  readonly url: string;
  /** The current mode. */
  readonly mode: ProxyMode;
  /** Every request received, oldest first. */
  readonly requests: readonly ProxiedRequest[];
  /** Switches the mode for the requests that come from now on. */
  setMode(mode: ProxyMode, options?: ModeOptions): void;
  /** Requests received that got `mode` (any mode when omitted) and whose path matches `path`. */
  count(filter?: { mode?: ProxyMode; path?: RegExp; method?: string }): number;
  /** Requests held open without an answer right now. */
  hanging(): number;
  /** Forwards the requests held open to the target now (their answers come as in `pass`). */
  release(): void;
  /** Connections open right now (client side). */
  openConnections(): number;
  /** Destroys every socket (client and target side) and stops listening. */
  close(): Promise<void>;
}

/** Request headers that belong to one hop only. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
]);

/** Starts a proxy in front of `target` (a base URL) on a free loopback port, in `mode`. */
export async function startHangProxy(
  target: string,
  mode: ProxyMode = "pass",
  options: ModeOptions = {},
): Promise<HangProxy> {
  const base = new URL(target);
  const sockets = new Set<Socket>();
  const upstreamSockets = new Set<Socket>();
  const held = new Set<ServerResponse>();
  /** How each held request is forwarded on {@link HangProxy.release}. */
  const releases = new Map<ServerResponse, () => void>();
  const requests: ProxiedRequest[] = [];
  let current: { mode: ProxyMode; options: ModeOptions } = { mode, options };
  const agent = new Agent({ keepAlive: false });

  const applies = (url: string): boolean => {
    const { only } = current.options;
    if (only === undefined) return true;
    return typeof only === "function" ? only(url) : only.test(url);
  };

  const timers = new Set<NodeJS.Timeout>();
  const forward = (
    req: IncomingMessage,
    res: ServerResponse,
    seen: ProxiedRequest,
    body?: Buffer,
  ): void => {
    const headers: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
    }
    headers.host = base.host;
    const upstream = request(
      {
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        method: req.method,
        path: req.url,
        headers,
        agent,
      },
      (answer) => {
        seen.status = answer.statusCode ?? 502;
        const back: OutgoingHttpHeaders = {};
        for (const [name, value] of Object.entries(answer.headers)) {
          if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
        }
        res.writeHead(seen.status, back);
        answer.pipe(res);
        answer.on("error", () => res.destroy());
      },
    );
    upstream.on("socket", (socket) => {
      upstreamSockets.add(socket);
      socket.once("close", () => upstreamSockets.delete(socket));
    });
    upstream.on("error", () => {
      if (!res.headersSent) {
        seen.status = 502;
        res.writeHead(502, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "hang-proxy: the target failed" }));
      } else {
        res.destroy();
      }
    });
    // the client went away before its answer: so does the request to the target
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    if (body === undefined) req.pipe(upstream);
    else upstream.end(body);
  };

  /** Forwards the request `delayMs` after its body was received in full. */
  const forwardLater = (
    req: IncomingMessage,
    res: ServerResponse,
    seen: ProxiedRequest,
    delayMs: number,
  ): void => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.once("end", () => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!res.destroyed) forward(req, res, seen, Buffer.concat(chunks));
      }, delayMs);
      timers.add(timer);
    });
  };

  const server = createServer((req, res) => {
    const url = req.url ?? "/";
    const applied: ProxyMode = current.mode === "pass" || !applies(url) ? "pass" : current.mode;
    const seen: ProxiedRequest = {
      method: req.method ?? "GET",
      url,
      path: url.split("?")[0] ?? url,
      mode: applied,
      atMs: Date.now(),
      bodyBytes: 0,
      complete: false,
      status: 0,
    };
    requests.push(seen);
    req.on("data", (chunk: Buffer) => {
      seen.bodyBytes += chunk.length;
    });
    req.on("end", () => {
      seen.complete = true;
    });
    switch (applied) {
      case "pass": {
        const delayMs = current.mode === "pass" ? (current.options.delayMs ?? 0) : 0;
        if (delayMs > 0) forwardLater(req, res, seen, delayMs);
        else forward(req, res, seen);
        return;
      }
      case "hang":
        // read the request, answer nothing, keep the connection
        {
          const chunks: Buffer[] = [];
          req.on("data", (chunk: Buffer) => chunks.push(chunk));
          releases.set(res, () => forward(req, res, seen, Buffer.concat(chunks)));
        }
        held.add(res);
        res.on("close", () => {
          held.delete(res);
          releases.delete(res);
        });
        return;
      case "retry-after": {
        req.resume();
        const body = JSON.stringify({ error: "rate limit exceeded" });
        seen.status = 429;
        res.writeHead(429, {
          "content-type": "application/json",
          "retry-after": current.options.retryAfter ?? "1",
        });
        res.end(body);
        return;
      }
      case "status": {
        req.resume();
        seen.status = current.options.status ?? 500;
        res.writeHead(seen.status, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "hang-proxy: injected failure" }));
        return;
      }
      case "empty": {
        req.resume();
        const q = new URL(url, "http://proxy").searchParams.get("q") ?? "";
        const statements = q.split(";").filter((x) => x.trim() !== "").length;
        seen.status = 200;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            results: Array.from({ length: statements }, (_, i) => ({ statement_id: i })),
          }),
        );
        return;
      }
    }
  });
  // a hung request must stay hung: no server-side timeout may end it
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.timeout = 0;
  server.keepAliveTimeout = 60_000;
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    get mode() {
      return current.mode;
    },
    requests,
    setMode: (next, nextOptions = {}) => {
      current = { mode: next, options: nextOptions };
    },
    count: (filter = {}) =>
      requests.filter(
        (r) =>
          (filter.mode === undefined || r.mode === filter.mode) &&
          (filter.method === undefined || r.method === filter.method) &&
          (filter.path === undefined || filter.path.test(r.url)),
      ).length,
    hanging: () => held.size,
    release() {
      const pending = [...releases.values()];
      held.clear();
      releases.clear();
      for (const forwardNow of pending) forwardNow();
    },
    openConnections: () => sockets.size,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const socket of sockets) socket.destroy();
      for (const socket of upstreamSockets) socket.destroy();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
