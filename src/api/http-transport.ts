import type { IncomingHttpHeaders } from "node:http";
import got, { type Got, type Request } from "got";
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
  readonly stream: Request;
  /** Destroys the stream when no byte comes for API_TIMEOUT_MS; armed while bytes are awaited. */
  readonly idle: IdleTimer;
  /** The answer's head; rejects with the transport error. */
  readonly head: Promise<ResponseHead>;
  /**
   * Reads the body up to `maxBytes` under the idle timer; stops there (`over`). A failure of the
   * stream is thrown classified (an ApiError).
   */
  readBody(maxBytes: number): Promise<{ readonly text: string; readonly over: boolean }>;
  /** Destroys the stream and forgets the abort listener. */
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

/**
 * The API's HTTP transport: one got stream per attempt, bounded by API_TIMEOUT_MS (got's timeouts
 * for connecting and the head, an idle timer for the body) and ended at once by the attempt's
 * signal. Knows nothing of retries, tokens or endpoints.
 */
export class HttpTransport {
  private readonly http: Got;
  private readonly now: () => number;
  private lastSlowNoticeMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: HttpTransportOptions) {
    this.now = options.now ?? Date.now;
    this.http = got.extend({
      prefixUrl: options.baseUrl,
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      headers: { "user-agent": "energy-etl", accept: "application/json" },
    });
  }

  /** Sends one attempt as a stream; `signal` destroys it at once; `endpoint` names it in logs. */
  open(out: Outgoing, signal: AbortSignal, endpoint: string): Exchange {
    const t = clampTimerMs(this.options.timeoutMs);
    const body =
      out.method === "POST" ? (out.json === undefined ? { body: "" } : { json: out.json }) : {};
    const stream = this.http.stream(out.path, {
      method: out.method,
      headers: { ...out.headers },
      searchParams: out.searchParams ? { ...out.searchParams } : undefined,
      ...body,
      timeout: { lookup: t, connect: t, secureConnect: t, send: t, response: t },
    });
    const idle = new IdleTimer(stream, t);
    const slow = setTimeout(
      () => this.noteSlow(endpoint, t),
      clampTimerMs(this.options.slowNoticeMs),
    );
    slow.unref();
    const answered = (): void => clearTimeout(slow);
    stream.once("response", answered);
    stream.once("error", answered);
    const onAbort = (): void => {
      stream.destroy(Object.assign(new Error("aborted"), { code: "ERR_ABORTED" }));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const head = new Promise<ResponseHead>((resolve, reject) => {
      stream.once("response", (response: { statusCode: number; headers: IncomingHttpHeaders }) => {
        const serverTimeMs = parseDateHeader(response.headers.date);
        if (serverTimeMs !== undefined) this.options.clock.observe(serverTimeMs);
        resolve({ statusCode: response.statusCode, headers: response.headers, serverTimeMs });
      });
      stream.once("error", reject);
    });
    head.catch(() => undefined);
    return {
      stream,
      idle,
      head,
      readBody: (maxBytes) =>
        readBody(stream, idle, maxBytes).catch((error: unknown) => {
          throw classifyTransportError(endpoint, error);
        }),
      close: () => {
        answered();
        idle.disarm();
        signal.removeEventListener("abort", onAbort);
        stream.destroy();
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

/** Reads a body up to `maxBytes` under the idle timer; stops reading there (`over`). */
async function readBody(
  stream: Request,
  idle: IdleTimer,
  maxBytes: number,
): Promise<{ text: string; over: boolean }> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  idle.arm();
  try {
    for await (const chunk of stream) {
      const buffer = chunk as Buffer;
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
 * Destroys a stream that sends nothing for `ms` (API_TIMEOUT_MS); armed only while bytes are
 * awaited, so the time a consumer spends on a page does not count.
 */
export class IdleTimer {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: Request,
    private readonly ms: number,
  ) {}

  arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const stalled = Object.assign(new Error(`no data for ${this.ms} ms`), { code: "ETIMEDOUT" });
      this.stream.destroy(stalled);
    }, clampTimerMs(this.ms));
    this.timer.unref();
  }

  disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
