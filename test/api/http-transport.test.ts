/**
 * The API's HTTP transport on its own, against a node:http server on loopback: compressed answers
 * read as the API sent them, keep-alive connections reused only after a whole answer, the base
 * URL's path kept, the head's timer naming what it waited for, and the body's idle timer counting
 * from the last piece that came, not from the first.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import pino from "pino";
import { ApiClock } from "../../src/api/api-clock.js";
import { HttpTransport } from "../../src/api/http-transport.js";
import { closeHostileServers, hostileServer } from "./hostile-server.js";

const BODY = JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ timestamp: i, v: i * 1.5 })));

const ENCODERS: Record<string, (b: Buffer) => Buffer> = {
  gzip: gzipSync,
  deflate: deflateSync,
  br: brotliCompressSync,
};

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

describe("HttpTransport", () => {
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

  it("an abort ends the attempt at once with ERR_ABORTED", async () => {
    hangHead = true;
    const controller = new AbortController();
    const exchange = open(transport(), {}, controller.signal);
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    await expect(exchange.head).rejects.toMatchObject({ code: "ERR_ABORTED" });
    exchange.close();
  });
});
