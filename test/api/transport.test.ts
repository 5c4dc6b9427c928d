/**
 * The API's HTTP transport (got) on its own, against a node:http server on loopback: compressed
 * answers read as the API sent them, a decompression bomb read up to the cap only, keep-alive
 * connections reused only after a whole answer, the base URL's path kept, no redirect followed and
 * no retry of got's own, the head's timer naming what it waited for, the wait for each piece of
 * the body timed from the last piece that came, not from the first, and errors that carry nothing
 * of the request (its token) but their code, name and message.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { jest } from "@jest/globals";
import pino from "pino";
import { ApiClock } from "../../src/api/api-clock.js";
import { HttpTransport, SLOW_NOTICE_MS } from "../../src/api/transport.js";
import { useFakeTime, useRealTime } from "../support/fake-time.js";
import { captureLogger } from "../support/log-capture.js";
import { closeHostileServers, hostileServer } from "./hostile-server.js";

const BODY = JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ timestamp: i, v: i * 1.5 })));

const ENCODERS: Record<string, (b: Buffer) => Buffer> = {
  gzip: gzipSync,
  deflate: deflateSync,
  br: brotliCompressSync,
};

/** 64 MiB of spaces, gzipped to ~64 KiB: what a reader without a cap would hold whole. */
const BOMB_BYTES = 64 * 1024 * 1024;
const BOMB = gzipSync(Buffer.alloc(BOMB_BYTES, 0x20), { level: 9 });

/** The pieces of a trickled body, in order: read whole, the body is this JSON. */
const PIECES = [
  '[{"t":0},',
  '{"t":1},',
  '{"t":2},',
  '{"t":3},',
  '{"t":4},',
  '{"t":5},',
  '{"t":6},',
  '{"t":7},',
  '{"t":8},',
  '{"t":9},',
];
const PIECES_END = '{"t":10}]';

/**
 * Answers at once with a chunked head and the first piece, then one more piece after each gap
 * (ms, `_`-separated in the query), the last one ending the answer; stops when the client goes.
 */
function trickle(res: ServerResponse, gaps: readonly number[]): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.write(PIECES[0]);
  let timer: NodeJS.Timeout | undefined;
  res.once("close", () => clearTimeout(timer));
  const next = (i: number): void => {
    timer = setTimeout(
      () => {
        if (res.destroyed) return;
        if (i === gaps.length) {
          res.end(PIECES_END);
          return;
        }
        res.write(PIECES[i] ?? "");
        next(i + 1);
      },
      gaps[i - 1],
    );
  };
  next(1);
}

describe("HttpTransport (got)", () => {
  let base: string;
  const seen: { url: string; headers: IncomingMessage["headers"]; socket: number }[] = [];
  const sockets = new WeakMap<object, number>();
  let connections = 0;
  let hangHead = false;

  beforeAll(async () => {
    const server = await hostileServer((req, res) => {
      let id = sockets.get(req.socket);
      if (id === undefined) {
        id = ++connections;
        sockets.set(req.socket, id);
      }
      seen.push({ url: req.url ?? "", headers: req.headers, socket: id });
      if (hangHead) return; // no head: the transport's timer ends it
      const gaps = /gaps=([\d_]+)/.exec(req.url ?? "")?.[1];
      if (gaps !== undefined) {
        trickle(res, gaps.split("_").map(Number));
        return;
      }
      if (req.url?.includes("redirect")) {
        res.writeHead(302, { location: "/api/v1/elsewhere", "content-length": 0 });
        res.end();
        return;
      }
      if (req.url?.includes("bomb")) {
        res.writeHead(200, { "content-encoding": "gzip", "content-length": BOMB.length });
        res.end(BOMB);
        return;
      }
      if (req.url?.includes("reset")) {
        req.socket.destroy(); // no answer at all: got would retry this GET if its retries were on
        return;
      }
      if (req.url?.includes("echo")) {
        const chunks: Buffer[] = [];
        req.on("data", (chunk: Buffer) => chunks.push(chunk));
        req.on("end", () => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ body: Buffer.concat(chunks).toString("utf8") }));
        });
        return;
      }
      if (req.url?.includes("empty-gzip")) {
        // an error answer that claims gzip and has no body (got read it as empty too)
        res.writeHead(401, { "content-encoding": "gzip", "content-length": 0 });
        res.end();
        return;
      }
      const encoding = /encoding=(\w+)/.exec(req.url ?? "")?.[1];
      const encode = encoding === undefined ? undefined : ENCODERS[encoding];
      const body = encode ? encode(Buffer.from(BODY)) : Buffer.from(BODY);
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": body.length,
        date: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)).toUTCString(),
        ...(encoding ? { "content-encoding": encoding } : {}),
      });
      res.end(body);
    });
    base = `${server.url}/api/v1`;
  });
  afterAll(closeHostileServers);
  beforeEach(() => {
    seen.length = 0;
    hangHead = false;
  });

  const transport = (timeoutMs = 5_000) =>
    new HttpTransport({
      baseUrl: base,
      timeoutMs,
      slowNoticeMs: 60_000,
      logger: pino({ level: "silent" }),
      clock: new ApiClock(),
    });

  /** GET `path` (default `data`) through `t`. */
  const open = (
    t: HttpTransport,
    out: {
      path?: string;
      headers?: Record<string, string>;
      searchParams?: Record<string, string>;
    } = {},
    signal = new AbortController().signal,
  ) => t.open({ method: "GET", path: "data", headers: {}, ...out }, signal, "GET /data");

  async function get(t: HttpTransport, searchParams: Record<string, string>) {
    const exchange = open(t, { path: "data/dev%201/all", searchParams });
    try {
      const head = await exchange.head;
      const { text } = await exchange.readBody(1 << 20);
      return { head, text };
    } finally {
      exchange.close();
    }
  }

  it.each(["gzip", "deflate", "br"])(
    "reads an answer sent with Content-Encoding %s as its JSON",
    async (encoding) => {
      const { head, text } = await get(transport(), { encoding });
      expect(head.statusCode).toBe(200);
      expect(text).toBe(BODY);
      expect(seen[0]?.headers["accept-encoding"]).toBe("gzip, deflate, br");
    },
  );

  it("an answer without a body is read as empty whatever its Content-Encoding says", async () => {
    const { head, text } = await get(transport(), { case: "empty-gzip" });
    expect({ status: head.statusCode, text }).toEqual({ status: 401, text: "" });
  });

  it("a header node:http refuses (a control character in a token) fails the attempt, not open()", async () => {
    const exchange = open(transport(), { headers: { authorization: "Bearer a\r\nb" } });
    await expect(exchange.head).rejects.toMatchObject({ code: "ERR_INVALID_CHAR" });
    exchange.close();
    expect(seen).toEqual([]);
  });

  it("keeps the base URL's path, encodes the query, and tells the answer's Date", async () => {
    const { head } = await get(transport(), { values: "a,b", from: "2026-01-01T00:00:00Z" });
    expect(seen[0]?.url).toBe(
      "/api/v1/data/dev%201/all?values=a%2Cb&from=2026-01-01T00%3A00%3A00Z",
    );
    expect(seen[0]?.headers["user-agent"]).toBe("energy-etl");
    expect(head.serverTimeMs).toBe(Date.UTC(2026, 0, 2, 3, 4, 5));
  });

  it("a whole answer leaves its connection to the next request; one not read to its end does not", async () => {
    const t = transport();
    await get(t, {});
    await get(t, {});
    expect(seen.map((s) => s.socket)).toEqual([seen[0]?.socket, seen[0]?.socket]);
    // an answer given up after 10 bytes: its connection is closed, the next request opens one
    const partial = open(t);
    await partial.head;
    expect((await partial.readBody(10)).over).toBe(true);
    partial.close();
    await get(t, {});
    const [, , third, fourth] = seen.map((s) => s.socket);
    expect(third).toBe(seen[0]?.socket);
    expect(fourth).not.toBe(third);
  });

  it("no head within API_TIMEOUT_MS: the head rejects with a timeout naming the phase", async () => {
    hangHead = true;
    const exchange = open(transport(200));
    await expect(exchange.head).rejects.toMatchObject({
      code: "ETIMEDOUT",
      name: "TimeoutError",
      message: "Timeout awaiting 'response' for 200ms",
    });
    exchange.close();
  });

  // API_TIMEOUT_MS 300 ms; the body's pieces 100 ms apart, ~1 s in all: more than three timeouts
  it("a body that keeps coming within API_TIMEOUT_MS per piece is read whole, however long it takes", async () => {
    const exchange = open(transport(300), {
      searchParams: { gaps: "100_100_100_100_100_100_100_100_100_100" },
    });
    try {
      const started = Date.now();
      expect((await exchange.head).statusCode).toBe(200);
      const read = await exchange.readBody(1 << 20);
      const tookMs = Date.now() - started;
      expect(read).toEqual({
        text: '[{"t":0},{"t":1},{"t":2},{"t":3},{"t":4},{"t":5},{"t":6},{"t":7},{"t":8},{"t":9},{"t":10}]',
        over: false,
      });
      // the pieces did come apart: the whole read lasted more than three API_TIMEOUT_MS
      expect(tookMs).toBeGreaterThanOrEqual(950);
    } finally {
      exchange.close();
    }
  });

  it("one gap in the body longer than API_TIMEOUT_MS: the read fails as the body's idle timeout", async () => {
    const exchange = open(transport(300), { searchParams: { gaps: "100_100_700_100" } });
    try {
      expect((await exchange.head).statusCode).toBe(200);
      const started = Date.now();
      await expect(exchange.readBody(1 << 20)).rejects.toMatchObject({
        name: "ApiError",
        code: "timeout",
        message: "GET /data timed out (ETIMEDOUT): no data for 300 ms",
      });
      // cut off in the long gap (after ~200 ms of pieces and 300 ms of silence), not before
      expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    } finally {
      exchange.close();
    }
  });

  it("no answer yet: debug after slowNoticeMs, info only at half of API_TIMEOUT_MS (defaults: 2 s, 15 s of 30 s), on a fake clock", async () => {
    hangHead = true;
    const { logger, lines } = captureLogger("debug");
    const notices = () =>
      lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter(
          (e) => e.msg === "waiting for the API: no answer yet (gives up after API_TIMEOUT_MS)",
        )
        .map((e) => [e.level, e.waitedMs]);
    useFakeTime(Date.UTC(2026, 0, 2));
    const controller = new AbortController();
    try {
      // the defaults: API_TIMEOUT_MS 30 s (the config schema's), SLOW_NOTICE_MS
      const t = new HttpTransport({
        baseUrl: base,
        timeoutMs: 30_000,
        slowNoticeMs: SLOW_NOTICE_MS,
        logger,
        clock: new ApiClock(),
      });
      const exchange = open(t, {}, controller.signal);
      exchange.head.catch(() => undefined);
      const seenAt = (ms: number) => {
        jest.advanceTimersByTime(ms);
        return notices();
      };
      expect(SLOW_NOTICE_MS).toBe(2_000);
      expect(seenAt(1_999)).toEqual([]);
      expect(seenAt(1)).toEqual([["debug", 2_000]]);
      // a slow first answer is no outage: nothing at info until the deadline is near
      expect(seenAt(12_999)).toEqual([["debug", 2_000]]);
      expect(seenAt(1)).toEqual([
        ["debug", 2_000],
        ["info", 15_000],
      ]);
      controller.abort();
      await expect(exchange.head).rejects.toMatchObject({ code: "ERR_ABORTED" });
      exchange.close();
    } finally {
      controller.abort();
      useRealTime();
    }
  });

  it("an abort ends the attempt at once with ERR_ABORTED", async () => {
    hangHead = true;
    const controller = new AbortController();
    const exchange = open(transport(), {}, controller.signal);
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    await expect(exchange.head).rejects.toMatchObject({ code: "ERR_ABORTED" });
    exchange.close();
  });
  it("a decompression bomb is read up to the cap only; the next request is answered whole", async () => {
    const t = transport();
    const exchange = open(t, { searchParams: { case: "bomb" } });
    try {
      expect((await exchange.head).statusCode).toBe(200);
      const read = await exchange.readBody(100_000);
      expect(read.over).toBe(true);
      expect(read.text).toBe(" ".repeat(100_000));
    } finally {
      exchange.close();
    }
    expect(await get(t, {})).toMatchObject({ head: { statusCode: 200 }, text: BODY });
  });

  it("a redirect is an answer like any other: not followed", async () => {
    const { head, text } = await get(transport(), { case: "redirect" });
    expect(head.statusCode).toBe(302);
    expect(head.headers.location).toBe("/api/v1/elsewhere");
    expect(text).toBe("");
    expect(seen.map((s) => s.url)).toEqual(["/api/v1/data/dev%201/all?case=redirect"]);
  });

  it("got retries nothing itself: a dropped connection is one request and one error", async () => {
    const exchange = open(transport(), { searchParams: { case: "reset" } });
    await expect(exchange.head).rejects.toMatchObject({ code: "ECONNRESET" });
    exchange.close();
    expect(seen).toHaveLength(1);
  });

  it("a POST sends its JSON with its type and length", async () => {
    const exchange = transport().open(
      { method: "POST", path: "echo", headers: {}, json: { user: "u", pw: "p" } },
      new AbortController().signal,
      "POST /echo",
    );
    try {
      expect((await exchange.head).statusCode).toBe(200);
      expect(JSON.parse((await exchange.readBody(1 << 20)).text)).toEqual({
        body: '{"user":"u","pw":"p"}',
      });
      expect(seen[0]?.headers).toMatchObject({
        "content-type": "application/json",
        "content-length": "21",
      });
    } finally {
      exchange.close();
    }
  });

  it("a failure carries its code, name and message only: never the request's headers", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const t = new HttpTransport({
      baseUrl: `http://127.0.0.1:${port}/api/v1`,
      timeoutMs: 5_000,
      slowNoticeMs: 60_000,
      logger: pino({ level: "silent" }),
      clock: new ApiClock(),
    });
    const token = "tok-7d0c1b9e-never-in-an-error";
    const exchange = t.open(
      { method: "GET", path: "data", headers: { authorization: `Bearer ${token}` } },
      new AbortController().signal,
      "GET /data",
    );
    const error: unknown = await exchange.head.then(
      () => undefined,
      (e: unknown) => e,
    );
    exchange.close();
    expect(error).toMatchObject({ code: "ECONNREFUSED" });
    expect(Object.keys(error as object).sort()).toEqual(["code", "name"]);
    expect((error as Error).cause).toBeUndefined();
    expect(inspect(error, { depth: 10, showHidden: true })).not.toContain(token);
    expect(JSON.stringify(error)).not.toContain(token);
  });
});
