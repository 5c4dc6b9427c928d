import got, { type Got, type Request, type Response } from "got";
import type { Logger } from "pino";
import { clampTimerMs } from "../util/timers.js";
import type { ApiClock } from "./api-clock.js";
import { EARLIEST_API_TIME_MS, parseDateHeader } from "./api-clock.js";
import { classifyTransportError } from "./errors.js";

export interface Outgoing {
  readonly method: "GET" | "POST";
  /** Path under the base URL, ids already encoded. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly searchParams?: Readonly<Record<string, string>>;
  /** JSON body of a POST (an empty body without it). */
  readonly json?: unknown;
}

export interface ResponseHead {
  readonly statusCode: number;
  readonly headers: Response["headers"];
  /** The API's clock when it answered (`Date` header), epoch ms; undefined without one. */
  readonly serverTimeMs?: number;
}

/** One HTTP attempt on the wire. */
export interface Exchange {
  /** The answer's head; rejects with the transport error. */
  readonly head: Promise<ResponseHead>;
  /** The body's bytes as they arrive (decompressed), once; each wait bounded by API_TIMEOUT_MS. */
  body(): AsyncIterable<Buffer>;
  /** Reads the body up to `maxBytes` (`over` when there was more); failures thrown as ApiErrors. */
  readBody(maxBytes: number): Promise<{ readonly text: string; readonly over: boolean }>;
  /** Ends the exchange (a complete answer leaves its connection to the next request). */
  close(): void;
}

export interface HttpTransportOptions {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly slowNoticeMs: number;
  readonly logger: Logger;
  /** Told every answer's `Date` header. */
  readonly clock: ApiClock;
  readonly now?: () => number;
}

/** Default of {@link HttpTransportOptions.slowNoticeMs}. */
export const SLOW_NOTICE_MS = 2_000;

const COMMON_HEADERS = {
  "user-agent": "energy-etl",
  accept: "application/json",
  "accept-encoding": "gzip, deflate, br",
};

/**
 * The API's HTTP transport: one got stream per attempt, each phase until the head timed by got,
 * its retries and redirects off (the one retry loop is api-request.ts; a 3xx is an answer like any
 * other). Each wait for a piece of the body is timed here (got's `read` timeout would bound the
 * whole body), and got's errors are made plain.
 */
export class HttpTransport {
  private readonly client: Got;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly lastSlowNoticeMs: { debug?: number; info?: number } = {};

  constructor(private readonly options: HttpTransportOptions) {
    this.now = options.now ?? Date.now;
    this.prefix = prefixOf(options.baseUrl);
    const t = clampTimerMs(options.timeoutMs);
    this.timeoutMs = t;
    this.client = got.extend({
      timeout: { lookup: t, connect: t, secureConnect: t, send: t, response: t },
      retry: { limit: 0 },
      followRedirect: false,
      throwHttpErrors: false,
      decompress: true,
      headers: COMMON_HEADERS,
    });
  }

  /** Sends one attempt; `signal` ends it at once; `endpoint` names it in logs. */
  open(out: Outgoing, signal: AbortSignal, endpoint: string): Exchange {
    const query = out.searchParams ? queryString(out.searchParams) : "";
    const post = out.method === "POST";
    const headers =
      post && out.json !== undefined
        ? { ...out.headers, "content-type": "application/json" }
        : out.headers;
    const url = `${this.prefix}${out.path}${query}`;
    let stream: Request;
    try {
      stream = post
        ? this.client.stream.post(url, { headers, body: JSON.stringify(out.json) ?? "", signal })
        : this.client.stream(url, { headers, signal });
    } catch (error) {
      return refusedExchange(plainError(error));
    }
    // a slow first answer is no outage: said at debug, and at info once half of API_TIMEOUT_MS
    // is gone (the attempt fails at the whole of it)
    const { slowNoticeMs } = this.options;
    const nearMs = Math.max(slowNoticeMs, this.timeoutMs / 2);
    const timers = [
      setTimeout(() => this.noteSlow(endpoint, slowNoticeMs, "debug"), clampTimerMs(slowNoticeMs)),
      setTimeout(() => this.noteSlow(endpoint, nearMs, "info"), clampTimerMs(nearMs)),
    ];
    for (const timer of timers) timer.unref();
    const exchange = new GotExchange(stream, this.timeoutMs, endpoint, () => {
      for (const timer of timers) clearTimeout(timer);
    });
    exchange.head.then(
      (head) => {
        // an implausible clock is never planned by (ApiRequest fails the answer)
        if (head.serverTimeMs !== undefined && head.serverTimeMs >= EARLIEST_API_TIME_MS)
          this.options.clock.observe(head.serverTimeMs);
      },
      () => undefined,
    );
    return exchange;
  }

  /** One "still waiting" line per level, at most every minute (many requests may be in flight). */
  private noteSlow(endpoint: string, waitedMs: number, level: "debug" | "info"): void {
    const now = this.now();
    if (now - (this.lastSlowNoticeMs[level] ?? Number.NEGATIVE_INFINITY) < 60_000) return;
    this.lastSlowNoticeMs[level] = now;
    this.options.logger[level](
      { endpoint, api: this.options.baseUrl, waitedMs, timeoutMs: this.timeoutMs },
      "waiting for the API: no answer yet (gives up after API_TIMEOUT_MS)",
    );
  }
}

/** An attempt on a got stream: its head as a promise, its body as timed pieces. */
class GotExchange implements Exchange {
  readonly head: Promise<ResponseHead>;
  /** The first failure: thrown as it is, not as got wrapped it when it destroyed the stream. */
  private failure: Error | undefined;
  private headSettled = false;

  constructor(
    private readonly stream: Request,
    private readonly timeoutMs: number,
    private readonly endpoint: string,
    private readonly settled: () => void,
  ) {
    /** True for the first of the head's outcomes. */
    const settle = (): boolean => {
      if (this.headSettled) return false;
      this.headSettled = true;
      settled();
      return true;
    };
    this.head = new Promise<ResponseHead>((resolve, reject) => {
      stream.once("response", (response: Response) => {
        if (!settle()) return;
        const { statusCode, headers } = response;
        resolve({ statusCode, headers, serverTimeMs: parseDateHeader(headers.date) });
      });
      // `on`: an error after the head must not go unheard (the body's reader throws it)
      stream.on("error", (error: unknown) => {
        this.failure ??= plainError(error);
        if (settle()) reject(this.failure);
      });
      stream.once("close", () => {
        if (settle()) reject(this.failure ?? closedError());
      });
    });
    this.head.catch(() => undefined);
  }

  async *body(): AsyncGenerator<Buffer, void, undefined> {
    const pieces: AsyncIterator<Buffer> = this.stream[Symbol.asyncIterator]();
    let done = false;
    try {
      for (;;) {
        // API_TIMEOUT_MS for each wait: a body that keeps coming is read however long it takes
        const timer = setTimeout(() => this.fail(idleError(this.timeoutMs)), this.timeoutMs);
        timer.unref();
        let next: IteratorResult<Buffer>;
        try {
          next = await pieces.next();
        } catch (error) {
          done = true;
          throw this.failure ?? plainError(error);
        } finally {
          clearTimeout(timer);
        }
        if (next.done) {
          done = true;
          return;
        }
        yield next.value;
      }
    } finally {
      // a reader that stops early ends the answer (its connection cannot serve another request)
      if (!done) await pieces.return?.();
    }
  }

  async readBody(maxBytes: number): Promise<{ text: string; over: boolean }> {
    const chunks: Buffer[] = [];
    let bytes = 0;
    try {
      for await (const buffer of this.body()) {
        if (bytes + buffer.length > maxBytes) {
          // what is past the cap is never read (a decompression bomb stops here)
          chunks.push(buffer.subarray(0, maxBytes - bytes));
          return { text: Buffer.concat(chunks).toString("utf8"), over: true };
        }
        chunks.push(buffer);
        bytes += buffer.length;
      }
    } catch (error) {
      throw classifyTransportError(this.endpoint, error);
    }
    return { text: Buffer.concat(chunks).toString("utf8"), over: false };
  }

  close(): void {
    this.settled();
    // a whole answer's connection went back to the agent's pool; any other is closed
    if (!this.stream.readableEnded) this.stream.destroy();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.stream.destroy(error);
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

/** The base URL as the prefix of every request's URL, ending in `/`; http(s) only. */
function prefixOf(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`the API's base URL must be http:// or https:// (got ${url.protocol})`);
  }
  url.search = "";
  url.hash = "";
  const text = url.toString();
  return text.endsWith("/") ? text : `${text}/`;
}

/** An error of the transport: what classifyTransportError reads, nothing else. */
class TransportError extends Error {
  constructor(
    message: string,
    readonly code: string,
    name = "TransportError",
  ) {
    super(message);
    this.name = name;
  }
}

/**
 * A failure as a plain error (its code, its name when it is a timeout, its message): got's errors
 * carry the request's options, headers with the token among them, which go no further.
 */
function plainError(error: unknown): Error {
  if (error instanceof TransportError) return error;
  const field = (key: string): unknown =>
    error !== null && typeof error === "object" ? Reflect.get(error, key) : undefined;
  const code = typeof field("code") === "string" ? String(field("code")) : "UNKNOWN";
  const message = typeof field("message") === "string" ? String(field("message")) : String(error);
  if (code === "ERR_ABORTED" || message === "The server aborted pending request") {
    return new TransportError("aborted", code);
  }
  const timedOut = field("name") === "TimeoutError";
  return new TransportError(message, code, timedOut ? "TimeoutError" : "TransportError");
}

/** The wait for a piece of the body took longer than API_TIMEOUT_MS. */
function idleError(ms: number): TransportError {
  return new TransportError(`no data for ${ms} ms`, "ETIMEDOUT", "TimeoutError");
}

/** The exchange was closed before its head came. */
function closedError(): TransportError {
  return new TransportError("closed before the answer came", "ERR_ABORTED");
}

/** An attempt that failed before anything was sent: its head rejects with `error`. */
function refusedExchange(error: Error): Exchange {
  const head = Promise.reject(error);
  head.catch(() => undefined);
  return {
    head,
    body: () => {
      throw error;
    },
    readBody: () => head,
    close: () => undefined,
  };
}
