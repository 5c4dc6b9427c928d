import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The token the compatibility proxy accepts (influxd 1.x itself runs without auth). */
export const TEST_INFLUX_TOKEN = "test-influx-token";
export const TEST_INFLUX_ORG = "test-org";

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Finds influxd, installing Debian's influxdb when running as root with apt-get; else explains. */
export function ensureInfluxd(): string {
  const found = which("influxd");
  if (found) return found;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (isRoot && which("apt-get")) {
    const apt = (args: string[]) =>
      execFileSync("apt-get", args, {
        stdio: "ignore",
        env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      });
    try {
      apt(["install", "-y", "influxdb"]);
    } catch {
      apt(["update"]);
      apt(["install", "-y", "influxdb"]);
    }
    const installed = which("influxd");
    if (installed) return installed;
  }
  throw new Error(
    "influxd not found: the integration tests need InfluxDB 1.6+ (Debian/Ubuntu: sudo apt-get install influxdb), then run npm test again",
  );
}

function which(command: string): string | undefined {
  try {
    return (
      execFileSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).trim() || undefined
    );
  } catch {
    return undefined;
  }
}

/**
 * A throwaway influxd (1.x) on free loopback ports with its data in a temp dir. `rawUrl` is influxd
 * itself: the v1 path (`/write?db=&rp=`), as Debian's 1.6.7 serves it. `url` is a small proxy
 * that serves what InfluxDB 1.8+ serves natively: `POST /api/v2/write` (bucket = db[/rp], token
 * auth), `/ping` and `/health`: the v2 path. Reads go to the real `/query` (InfluxQL). The proxy
 * names no `X-Influxdb-Version`: it is not influxd 1.6.7 (which has no /api/v2/write), so it claims
 * no version at all, and INFLUX_API=auto takes it for v2, as energy-etl takes any server that says
 * none.
 */
export class TestInfluxd {
  /** `authEnabled`: influxd's `[http] auth-enabled` (create an admin user first, see adminUser). */
  constructor(private readonly options: { readonly authEnabled?: boolean } = {}) {}

  private child: ChildProcess | undefined;
  private proxy: Server | undefined;
  private dir = "";
  private influxPort = 0;
  private proxyPort = 0;

  /** URL of the proxy: the v2 path (`/api/v2/write`, token auth), as 1.8+, 2.x and 3 serve it. */
  get url(): string {
    return `http://127.0.0.1:${this.proxyPort}`;
  }

  /** The influxd process, while it runs (the benchmarks read its CPU time). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** URL of influxd itself, no proxy: the v1 path (`/write?db=&rp=`), and InfluxQL queries. */
  get rawUrl(): string {
    return `http://127.0.0.1:${this.influxPort}`;
  }

  async start(): Promise<void> {
    const binary = ensureInfluxd();
    if (!this.dir) {
      this.dir = mkdtempSync(join(tmpdir(), "energy-etl-influxd-"));
      this.influxPort = await freePort();
    }
    const bindPort = await freePort();
    const conf = join(this.dir, "influxd.conf");
    writeFileSync(
      conf,
      [
        "reporting-disabled = true",
        `bind-address = "127.0.0.1:${bindPort}"`,
        `[meta]\n  dir = "${join(this.dir, "meta")}"`,
        // no series limit: the bench's 10,000-device fleet (raw points and rollups) holds more
        // than influxd 1.x's default of a million series in one database, which refused its writes
        `[data]\n  dir = "${join(this.dir, "data")}"\n  wal-dir = "${join(this.dir, "wal")}"\n  query-log-enabled = false\n  max-series-per-database = 0`,
        `[http]\n  bind-address = "127.0.0.1:${this.influxPort}"\n  log-enabled = false\n  max-body-size = 0` +
          `\n  auth-enabled = ${this.options.authEnabled === true}`,
        "[ifql]\n  enabled = false",
        "[monitor]\n  store-enabled = false",
        "[continuous_queries]\n  enabled = false",
        "[subscriber]\n  enabled = false",
        "",
      ].join("\n"),
    );
    this.child = spawn(binary, ["run", "-config", conf], { stdio: "ignore" });
    await this.waitForPing();
    if (!this.proxy) await this.startProxy();
  }

  /**
   * Stops influxd (the data stays; start() brings it back), e.g. to test an outage: SIGTERM, and
   * SIGKILL when it has not exited 10 s later.
   */
  async stopInfluxd(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(killer);
    this.child = undefined;
  }

  /** Stops everything and removes the data, also when stopping failed. */
  async stop(): Promise<void> {
    try {
      await this.stopInfluxd();
      const proxy = this.proxy;
      if (proxy) {
        proxy.closeAllConnections();
        await new Promise<void>((r) => proxy.close(() => r()));
      }
      this.proxy = undefined;
    } finally {
      if (this.dir) rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
    }
  }

  private async waitForPing(): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (this.child?.exitCode !== null && this.child?.exitCode !== undefined) {
        throw new Error(`influxd exited with code ${this.child.exitCode}`);
      }
      try {
        // a ping that hangs must not outlast the deadline
        const res = await fetch(`${this.rawUrl}/ping`, { signal: AbortSignal.timeout(2_000) });
        if (res.status === 204) return;
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("influxd did not answer /ping within 20 s");
  }

  private async startProxy(): Promise<void> {
    const proxy = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://proxy");
      const send = (status: number, body?: unknown) => {
        res.writeHead(status, body === undefined ? {} : { "content-type": "application/json" });
        res.end(body === undefined ? undefined : JSON.stringify(body));
      };
      if (url.pathname === "/ping") {
        return forward(req, res, this.rawUrl, "/ping", (s) => send(s));
      }
      if (url.pathname === "/health") {
        return forward(req, res, this.rawUrl, "/ping", (s) =>
          s === 204 ? send(200, { status: "pass" }) : send(503, { status: "fail" }),
        );
      }
      if (url.pathname === "/query") {
        // InfluxQL, as 1.8 serves it natively and 2.x/3.x through their v1 compatibility API
        if (req.headers.authorization !== `Token ${TEST_INFLUX_TOKEN}`) {
          req.resume();
          return send(401, { error: "authorization failed" });
        }
        return forwardQuery(req, res, `${this.rawUrl}/query${url.search}`);
      }
      if (url.pathname !== "/api/v2/write" || req.method !== "POST") {
        return send(404, { code: "not found", message: "path not found" });
      }
      if (req.headers.authorization !== `Token ${TEST_INFLUX_TOKEN}`) {
        req.resume();
        return send(401, { code: "unauthorized", message: "unauthorized access" });
      }
      const [db = "", rp] = (url.searchParams.get("bucket") ?? "").split("/");
      const precision =
        { ns: "n", us: "u", ms: "ms", s: "s" }[url.searchParams.get("precision") ?? "ns"] ?? "n";
      const target = new URLSearchParams({ db, precision });
      if (rp) target.set("rp", rp);
      forwardWrite(req, res, `${this.rawUrl}/write?${target}`);
    });
    // port 0: the system's free port, taken at once (a port picked earlier and listened on
    // later can be taken by another test in between)
    await new Promise<void>((resolve, reject) => {
      proxy.once("error", reject);
      proxy.listen(this.proxyPort, "127.0.0.1", () => resolve());
    });
    const address = proxy.address();
    if (address !== null && typeof address === "object") this.proxyPort = address.port;
    this.proxy = proxy;
  }
}

function forward(
  req: IncomingMessage,
  res: import("node:http").ServerResponse,
  base: string,
  path: string,
  answer: (status: number) => void,
): void {
  req.resume();
  fetch(`${base}${path}`).then(
    (r) => answer(r.status),
    () => {
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: "unavailable", message: "influxd is down" }));
    },
  );
}

/** Passes an InfluxQL query through as it is (status and body). */
function forwardQuery(
  req: IncomingMessage,
  res: import("node:http").ServerResponse,
  target: string,
): void {
  const upstream = request(target, { method: req.method ?? "GET" }, (up) => {
    res.writeHead(up.statusCode ?? 502, { "content-type": "application/json" });
    up.pipe(res);
  });
  upstream.on("error", () => {
    res.writeHead(503, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: "influxd is down" }));
  });
  req.pipe(upstream);
}

/** Passes body and Content-Encoding through; maps 1.x errors to 2.x-style JSON bodies. */
function forwardWrite(
  req: IncomingMessage,
  res: import("node:http").ServerResponse,
  target: string,
): void {
  const headers: Record<string, string> = { "content-type": "text/plain; charset=utf-8" };
  const encoding = req.headers["content-encoding"];
  if (typeof encoding === "string") headers["content-encoding"] = encoding;
  const upstream = request(target, { method: "POST", headers }, (up) => {
    const chunks: Buffer[] = [];
    up.on("data", (c: Buffer) => chunks.push(c));
    up.on("end", () => {
      const status = up.statusCode ?? 502;
      if (status === 204) {
        res.writeHead(204);
        res.end();
        return;
      }
      const text = Buffer.concat(chunks).toString("utf8");
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: string }).error ?? text;
      } catch {
        // plain text
      }
      const code = status === 404 ? "not found" : status === 400 ? "invalid" : "internal error";
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ code, message }));
    });
  });
  upstream.on("error", () => {
    // read the rest of the request before answering: a keep-alive socket must be left clean for
    // the client's next request
    req.unpipe(upstream);
    const answer = () => {
      if (res.headersSent) return;
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: "unavailable", message: "influxd is down" }));
    };
    if (req.readableEnded) answer();
    else {
      req.on("end", answer);
      req.resume();
    }
  });
  req.pipe(upstream);
}

/**
 * InfluxDB 1.8 (by default) before the tests' influxd: `/ping` and `/health` name `version`;
 * `/api/v2/write` goes to the v2 proxy `url` (1.8 serves it natively; auth off, so any
 * credentials do: the proxy's token is put in), `/write` and `/query` to influxd itself (`rawUrl`).
 * Served under `prefix` (`/influx`, as a reverse proxy does); other paths answer 404. Its `url`
 * has the prefix.
 */
export async function startInfluxFront(options: {
  readonly url: string;
  readonly rawUrl: string;
  readonly version?: string;
  readonly prefix?: string;
}): Promise<{ readonly url: string; close(): Promise<void> }> {
  const { version = "1.8.10", prefix = "" } = options;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://front");
    const path = url.pathname.startsWith(`${prefix}/`) ? url.pathname.slice(prefix.length) : "";
    const named = { "x-influxdb-version": version };
    const v2 = path === "/api/v2/write";
    if (!v2 && path !== "/write" && path !== "/query") {
      req.resume();
      const health = path === "/health" && JSON.stringify({ status: "pass", version });
      if (path === "/ping") res.writeHead(204, named).end();
      else if (health)
        res.writeHead(200, { ...named, "content-type": "application/json" }).end(health);
      else res.writeHead(404).end("404 page not found");
      return;
    }
    const headers = { ...req.headers, ...(v2 && { authorization: `Token ${TEST_INFLUX_TOKEN}` }) };
    delete headers.host;
    const target = `${v2 ? options.url : options.rawUrl}${path}${url.search}`;
    const upstream = request(target, { method: req.method ?? "GET", headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, { ...up.headers, ...named });
      up.pipe(res);
    });
    upstream.on("error", () => res.writeHead(503, named).end("upstream down"));
    req.pipe(upstream);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Runs InfluxQL against a test influxd (as `basic` user:password when given); the parsed JSON. */
export async function influxql(
  rawUrl: string,
  db: string,
  q: string,
  basic?: { readonly username: string; readonly password: string },
): Promise<InfluxqlResult> {
  const credentials =
    basic && Buffer.from(`${basic.username}:${basic.password}`).toString("base64");
  const res = await fetch(`${rawUrl}/query?${new URLSearchParams({ db, q, epoch: "s" })}`, {
    method: "POST",
    headers: credentials ? { authorization: `Basic ${credentials}` } : {},
  });
  if (!res.ok) throw new Error(`InfluxQL ${q} failed: HTTP ${res.status} ${await res.text()}`);
  const body = (await res.json()) as InfluxqlResult;
  const error = body.results?.find((r) => r.error)?.error;
  if (error) throw new Error(`InfluxQL ${q} failed: ${error}`);
  return body;
}

export interface InfluxqlSeries {
  name: string;
  tags?: Record<string, string>;
  columns: string[];
  values: unknown[][];
}
export interface InfluxqlResult {
  results?: { statement_id: number; series?: InfluxqlSeries[]; error?: string }[];
}

/**
 * Jest globalSetup (this file has no local imports, so Node can load it as it is): one influxd
 * and proxy for the whole run; test files create a database each (test/support/influx-db.ts).
 */
export default async function globalSetup(): Promise<void> {
  const influxd = new TestInfluxd();
  try {
    await influxd.start();
  } catch (error) {
    process.stderr.write(`\n${error instanceof Error ? error.message : String(error)}\n`);
    await influxd.stop().catch(() => undefined);
    process.exit(1);
  }
  process.env.TEST_INFLUX_URL = influxd.url;
  process.env.TEST_INFLUX_RAW_URL = influxd.rawUrl;
  (globalThis as { __influxd?: TestInfluxd }).__influxd = influxd;
}
