import {
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
} from "node:http";
import { request as requestTls } from "node:https";
import { pipeline, type Readable, type Transform } from "node:stream";
import { createBrotliDecompress, createUnzip } from "node:zlib";
import type { Logger } from "pino";
import { clampTimerMs } from "../util/timers.js";
import type { ApiClock } from "./api-clock.js";
import { parseDateHeader } from "./api-clock.js";
import { classifyTransportError } from "./errors.js";

/** What one HTTP attempt sends. */
export interface Outgoing {
  readonly method: "GET" | "POST";
  /** Path under the base URL, ids already encoded. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly searchParams?: Readonly<Record<string, string>>;
  /** JSON body of a POST (an empty body without it). */
  readonly json?: unknown;
}

/** The head of an HTTP answer. */
export interface ResponseHead {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  /** The API's clock when it answered (`Date` header), epoch ms; undefined without one. */
  readonly serverTimeMs?: number;
}

/** One HTTP attempt on the wire. */
export interface Exchange {
  /** The answer's head; rejects with the transport error. */
  readonly head: Promise<ResponseHead>;
  /**
   * The body's bytes as they arrive (decompressed), once the head came; a failure of the
   * connection (or of the idle timer) is thrown as it happened.
   */
  body(): AsyncIterable<Buffer>;
  /** Fails the exchange when no byte comes for API_TIMEOUT_MS; armed while bytes are awaited. */
  readonly idle: IdleTimer;
  /**
   * Reads the body up to `maxBytes` under the idle timer; stops there (`over`). A failure of the
   * stream is thrown classified (an ApiError).
   */
  readBody(maxBytes: number): Promise<{ readonly text: string; readonly over: boolean }>;
  /** Ends the exchange (a complete answer leaves its connection to the next request). */
  close(): void;
}

/** Options of {@link HttpTransport}. */
export interface HttpTransportOptions {
  /** Base address of the API (spec: {base_url}). */
  readonly baseUrl: string;
  /** API_TIMEOUT_MS: connecting, the answer's head, and each next part of its body. */
  readonly timeoutMs: number;
  /** After this long without a head, one info line says what is waited for (at most a minute apart). */
  readonly slowNoticeMs: number;
  readonly logger: Logger;
  /** Told every answer's `Date` header. */
  readonly clock: ApiClock;
  /** Clock in epoch ms (default Date.now). */
  readonly now?: () => number;
}

/** Default of {@link HttpTransportOptions.slowNoticeMs}. */
export const SLOW_NOTICE_MS = 2_000;

/** Sent with every request. */
const COMMON_HEADERS = {
  "user-agent": "energy-etl",
  accept: "application/json",
  "accept-encoding": "gzip, deflate, br",
};

/** Where requests go: the base URL taken apart once. */
interface Origin {
  readonly send: typeof request;
  readonly hostname: string;
  readonly port: string;
  /** The base URL's path, ending in `/`. */
  readonly prefix: string;
}

/**
 * The API's HTTP transport: one `node:http` request per attempt (on the platform's keep-alive
 * agent), bounded by API_TIMEOUT_MS (one timer for connecting, one for the head once the request
 * is sent, an idle timer for the body) and ended at once by the attempt's signal. Knows nothing
 * of retries, tokens or endpoints. Plain `node:http` rather than got: got's module graph costs
 * ~17 MB of resident memory on import and its options per request showed in a fleet's profile
 * (docs/design.md, Libraries); none of its features (retries, redirects, hooks) were used here.
 */
export class HttpTransport {
  private readonly origin: Origin;
  private readonly now: () => number;
  private lastSlowNoticeMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: HttpTransportOptions) {
    this.now = options.now ?? Date.now;
    this.origin = originOf(options.baseUrl);
  }

  /** Sends one attempt; `signal` ends it at once; `endpoint` names it in logs. */
  open(out: Outgoing, signal: AbortSignal, endpoint: string): Exchange {
    const t = clampTimerMs(this.options.timeoutMs);
    const { origin } = this;
    const query = out.searchParams ? queryString(out.searchParams) : "";
    const payload = out.method === "POST" && out.json !== undefined ? JSON.stringify(out.json) : "";
    const headers: Record<string, string> = { ...COMMON_HEADERS, ...out.headers };
    if (out.method === "POST") {
      if (out.json !== undefined) headers["content-type"] = "application/json";
      headers["content-length"] = String(Buffer.byteLength(payload));
    }
    let req: ClientRequest;
    try {
      req = origin.send({
        method: out.method,
        hostname: origin.hostname,
        port: origin.port,
        path: `${origin.prefix}${out.path}${query}`,
        headers,
      });
    } catch (error) {
      // a header node:http refuses (a control character in a token): the attempt fails as sent
      return refusedExchange(error, t);
    }
    const wire = new Wire(req, t);
    const slow = setTimeout(
      () => this.noteSlow(endpoint, t),
      clampTimerMs(this.options.slowNoticeMs),
    );
    slow.unref();
    const onAbort = (): void => {
      wire.fail(Object.assign(new Error("aborted"), { code: "ERR_ABORTED" }));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    const head = wire.head.then((response) => {
      clearTimeout(slow);
      const serverTimeMs = parseDateHeader(response.headers.date);
      if (serverTimeMs !== undefined) this.options.clock.observe(serverTimeMs);
      return { statusCode: response.statusCode ?? 0, headers: response.headers, serverTimeMs };
    });
    head.catch(() => clearTimeout(slow));
    req.end(payload);
    const idle = new IdleTimer((error) => wire.fail(error), t);
    return {
      head,
      body: () => wire.body(),
      idle,
      readBody: (maxBytes) =>
        readBody(wire.body(), idle, maxBytes).catch((error: unknown) => {
          throw classifyTransportError(endpoint, error);
        }),
      close: () => {
        clearTimeout(slow);
        idle.disarm();
        signal.removeEventListener("abort", onAbort);
        wire.close();
      },
    };
  }

  /** One "still waiting" line, at most every minute (a slow API with many requests in flight). */
  private noteSlow(endpoint: string, timeoutMs: number): void {
    const now = this.now();
    if (now - this.lastSlowNoticeMs < 60_000) return;
    this.lastSlowNoticeMs = now;
    this.options.logger.info(
      { endpoint, api: this.options.baseUrl, waitedMs: this.options.slowNoticeMs, timeoutMs },
      "waiting for the API: no answer yet (gives up after API_TIMEOUT_MS)",
    );
  }
}

/** `?key=value&…`, each percent-encoded (no URLSearchParams object per request). */
function queryString(params: Readonly<Record<string, string>>): string {
  let text = "";
  for (const [key, value] of Object.entries(params)) {
    text += `${text === "" ? "?" : "&"}${encodeURIComponent(key)}=${encodeURIComponent(value)}`;
  }
  return text;
}

/** `node:https`'s request for an https URL, `node:http`'s otherwise. */
export function requestFor(url: URL): typeof request {
  return url.protocol === "https:" ? requestTls : request;
}

/** The base URL taken apart: the module that sends, host, port and path prefix. */
function originOf(baseUrl: string): Origin {
  const url = new URL(baseUrl);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`the API's base URL must be http:// or https:// (got ${url.protocol})`);
  }
  return {
    send: requestFor(url),
    // an IPv6 literal comes bracketed in a URL, bare in a request's options
    hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port,
    prefix: url.pathname.endsWith("/") ? url.pathname : `${url.pathname}/`,
  };
}

/**
 * A request on the wire and its answer: the head as a promise, the body (decompressed when the
 * answer is) as a stream, one way to end both with an error, and the timers until the head.
 */
class Wire {
  readonly head: Promise<IncomingMessage>;
  private response: IncomingMessage | undefined;
  private stream: Readable | undefined;
  private failure: Error | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly req: ClientRequest,
    private readonly timeoutMs: number,
  ) {
    // connecting (a fresh socket) or the head (once the request is sent) within API_TIMEOUT_MS
    this.arm("connect");
    req.once("socket", (socket) => {
      if (!socket.connecting) return;
      socket.once("connect", () => this.arm("send"));
    });
    req.once("finish", () => this.arm("response"));
    this.head = new Promise<IncomingMessage>((resolve, reject) => {
      req.once("response", (response: IncomingMessage) => {
        clearTimeout(this.timer);
        this.response = response;
        resolve(response);
      });
      // `on`, not `once`: a second error (the socket's, after the answer's) must not go unheard
      req.on("error", (error) => {
        clearTimeout(this.timer);
        reject(this.failure ?? error);
      });
    });
    this.head.catch(() => undefined);
  }

  /** The body as it arrives, decompressed; made once, after the head. */
  body(): Readable {
    if (this.stream) return this.stream;
    const { response } = this;
    if (!response) throw new Error("the body was read before the answer's head came");
    const decoder = hasBody(response)
      ? decoderFor(response.headers["content-encoding"])
      : undefined;
    this.stream = decoder ? pipeline(response, decoder, () => undefined) : response;
    if (this.failure) this.stream.destroy(this.failure);
    return this.stream;
  }

  /** Ends the request or its answer with `error`. */
  fail(error: Error): void {
    this.failure ??= error;
    clearTimeout(this.timer);
    if (this.response) this.body().destroy(error);
    else this.req.destroy(error);
  }

  /** Ends the exchange; a complete answer's connection stays in the agent's pool. */
  close(): void {
    clearTimeout(this.timer);
    const { response } = this;
    if (!response) {
      this.req.destroy();
      return;
    }
    const stream = this.stream ?? response;
    if (stream.readableEnded) return;
    // an answer not read to its end: its connection cannot serve the next request
    stream.destroy();
    if (stream !== response) response.destroy();
  }

  private arm(phase: "connect" | "send" | "response"): void {
    clearTimeout(this.timer);
    if (this.response) return;
    this.timer = setTimeout(() => {
      const error = Object.assign(
        new Error(`Timeout awaiting '${phase}' for ${this.timeoutMs}ms`),
        { code: "ETIMEDOUT", name: "TimeoutError" },
      );
      this.fail(error);
    }, this.timeoutMs);
    this.timer.unref();
  }
}

/** Whether an answer can carry a body at all (an empty one has nothing to decompress). */
function hasBody(response: IncomingMessage): boolean {
  const status = response.statusCode ?? 0;
  if (status < 200 || status === 204 || status === 205 || status === 304) return false;
  return response.headers["content-length"] !== "0";
}

/** A decompressing stream for an answer's Content-Encoding; undefined for none. */
function decoderFor(encoding: string | undefined): Transform | undefined {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
    case "deflate":
      // gzip or zlib-wrapped deflate, told apart by their header
      return createUnzip();
    case "br":
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

/** An attempt that failed before anything was sent: its head rejects with `error`. */
function refusedExchange(error: unknown, timeoutMs: number): Exchange {
  const head = Promise.reject(error);
  head.catch(() => undefined);
  return {
    head,
    body: () => {
      throw error;
    },
    idle: new IdleTimer(() => undefined, timeoutMs),
    readBody: () => head,
    close: () => undefined,
  };
}

/** Reads a body up to `maxBytes` under the idle timer; stops reading there (`over`). */
async function readBody(
  stream: AsyncIterable<Buffer>,
  idle: IdleTimer,
  maxBytes: number,
): Promise<{ text: string; over: boolean }> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  idle.arm();
  try {
    for await (const buffer of stream) {
      if (bytes + buffer.length > maxBytes) {
        chunks.push(buffer.subarray(0, maxBytes - bytes));
        return { text: Buffer.concat(chunks).toString("utf8"), over: true };
      }
      chunks.push(buffer);
      bytes += buffer.length;
      idle.arm();
    }
  } finally {
    idle.disarm();
  }
  return { text: Buffer.concat(chunks).toString("utf8"), over: false };
}

/**
 * Ends an exchange that sends nothing for `ms` (API_TIMEOUT_MS); armed only while bytes are
 * awaited, so the time a consumer spends on a page does not count.
 */
export class IdleTimer {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly fail: (error: Error) => void,
    private readonly ms: number,
  ) {}

  arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.fail(Object.assign(new Error(`no data for ${this.ms} ms`), { code: "ETIMEDOUT" }));
    }, clampTimerMs(this.ms));
    this.timer.unref();
  }

  disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
