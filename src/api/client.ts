import type { IncomingHttpHeaders } from "node:http";
import { StringDecoder } from "node:string_decoder";
import got, { type Got, type Request } from "got";
import type { Logger } from "pino";
import type { z } from "zod";
import { forgetSecret, registerSecret, scrubSecrets } from "../logger.js";
import { computeRetryDelay, formatWait, type RetryPolicy } from "../util/retry-delay.js";
import { excerpt } from "../util/text.js";
import { clampTimerMs, raceAbort, sleep as timerSleep } from "../util/timers.js";
import { ApiError, classifyStatus, classifyTransportError } from "./errors.js";
import { JsonArrayError, JsonArraySplitter } from "./json-array-splitter.js";
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS, VALUES_ID } from "./limits.js";
import { IdleTimer, RequestRun } from "./request-run.js";
import {
  type BadMember,
  badMemberMessage,
  type DataRecord,
  type DevicesResponse,
  dataRecordSchema,
  devicesResponseSchema,
  keepRequested,
  type ResourcesResponse,
  resourcesResponseSchema,
  setPasswordResponseSchema,
  tokenResponseSchema,
  type ValuesResponse,
  valuesResponseSchema,
} from "./schemas.js";
import { formatQueryTime } from "./time-format.js";
import { type AccessToken, renewalMarginMs, TokenProvider } from "./token-provider.js";

/** Default of {@link ApiClientOptions.deadlineMs} (API_DEADLINE_MS): 15 minutes, above the Retry-After cap. */
export const DEFAULT_DEADLINE_MS = 900_000;

/** Default of {@link ApiClientOptions.retryAfterMaxMs} (API_RETRY_AFTER_MAX): 10 minutes, as Telegraf. */
export const DEFAULT_RETRY_AFTER_MAX_MS = 600_000;

/**
 * Renewals of the access token one request makes after 401 answers (one per refused token)
 * before it fails with auth_failed. A token can expire again while a request waits for a retry,
 * so one renewal is not enough; an API that refuses every fresh token is not helped by more.
 * Renewals do not count as retries.
 */
export const MAX_TOKEN_RENEWALS_PER_REQUEST = 3;

/** What the client needs to reach and authenticate with the API. */
export interface ApiClientOptions {
  /** Base address of the API (spec: {base_url}). */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly user: string;
  readonly password: string;
  /**
   * Timeout of one HTTP attempt's waits (API_TIMEOUT_MS, default 30 000 ms): connecting, the
   * answer's head, and each next part of its body.
   */
  readonly timeoutMs: number;
  /**
   * After this long without an answer's head (default {@link SLOW_NOTICE_MS}), say what is being
   * waited for, in one info line at most every minute: a slow or unreachable API is not silence.
   */
  readonly slowNoticeMs?: number;
  /**
   * Deadline of one request as a whole (API_DEADLINE_MS, default {@link DEFAULT_DEADLINE_MS}):
   * every attempt (connect, head, body), the backoff sleeps and Retry-After waits. Not counted:
   * the wait for the rate gate's slot, the wait for an access token, and the time the caller
   * spends on a page of {@link ApiClient.data} between pulls. When it passes, the attempt in
   * flight is aborted and the request fails with code `timeout` (not retryable).
   */
  readonly deadlineMs?: number;
  /**
   * Longest Retry-After honoured (API_RETRY_AFTER_MAX, default
   * {@link DEFAULT_RETRY_AFTER_MAX_MS}): a 429 or 5xx asking for a longer wait fails the request
   * at once (not retryable), and the rate gate is not paused for it.
   */
  readonly retryAfterMaxMs?: number;
  readonly retry: RetryPolicy;
  /** Size caps of GET /data answers (defaults {@link DEFAULT_DATA_LIMITS}). */
  readonly dataLimits?: DataLimits;
  readonly logger: Logger;
  /** Called when the API answered 429, with the delay before the retry. */
  readonly onRateLimited?: (delayMs: number) => void;
  /**
   * Paces every HTTP attempt (the pipeline's rate limit); told about 429s and successes. The
   * access token is read after the slot is granted, just before sending.
   */
  readonly gate?: RequestGate;
  /** Called after every HTTP attempt, for metrics: exactly once per attempt, however it ended. */
  readonly onAttempt?: (attempt: AttemptInfo) => void;
  /**
   * Called when an HTTP attempt is sent, with its route (`GET /devices`); each is followed by
   * one {@link onAttempt} (an in-flight gauge pairs the two).
   */
  readonly onSend?: (route: string) => void;
  /** Called before a retry, with the route, the error code and the delay. */
  readonly onRetry?: (retry: { route: string; code: string; delayMs: number }) => void;
  /** Clock in epoch ms (default Date.now). */
  readonly now?: () => number;
  /** Random source of the retry jitter (default Math.random). */
  readonly random?: () => number;
  /**
   * Waits between retries (default a timer, cleared on abort); injected by tests that count
   * delays. An injected sleep that ignores the signal is abandoned on abort.
   */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Caps that keep one hostile answer from using gigabytes. */
export interface DataLimits {
  /** Longest record of a GET /data answer, in characters (API_MAX_RECORD_BYTES). */
  readonly maxRecordBytes: number;
  /** Largest GET /data answer in bytes (API_MAX_ANSWER_BYTES). */
  readonly maxAnswerBytes: number;
}

/** 1 MiB per record (a record of 20 values is under 2 KB), 512 MiB per answer. */
export const DEFAULT_DATA_LIMITS: DataLimits = {
  maxRecordBytes: 1024 * 1024,
  maxAnswerBytes: 512 * 1024 * 1024,
};

/** Options of one call. */
export interface CallOptions {
  /** Told about every HTTP attempt of this call (the run's own counters). */
  readonly onAttempt?: (attempt: AttemptInfo) => void;
  /**
   * Ends this call when it aborts, at once, whatever it waits for (the attempt in flight, the
   * rate gate, a backoff sleep, a token renewal): it fails with code `aborted`.
   */
  readonly signal?: AbortSignal;
}

/** Paces requests: waits for a slot, pauses after a 429, recovers after successes. */
export interface RequestGate {
  /**
   * Resolves when a request may be sent; rejects when `signal` aborts. `priority`: served before
   * ordinary waiters (token renewals).
   */
  take(options?: { readonly signal?: AbortSignal; readonly priority?: boolean }): Promise<void>;
  pause(ms: number): void;
  success(): void;
}

/** One HTTP attempt, as reported to {@link ApiClientOptions.onAttempt}. */
export interface AttemptInfo {
  /** Endpoint with placeholders, e.g. `GET /data/{device}/{resource}` (low cardinality). */
  readonly route: string;
  /** HTTP status, or undefined when no answer came. */
  readonly status?: number;
  /**
   * Error code when the attempt failed (an ApiErrorCode), or `abandoned` when the caller stopped
   * pulling a GET /data answer before its end.
   */
  readonly code?: string;
  readonly durationMs: number;
}

/** A GET /data request (spec 4.4): at most 20 values over at most 7 days (spec 8). */
export interface DataQuery {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly values: readonly string[];
  /** Start of the interval (inclusive, second precision). */
  readonly from: Date;
  /** End of the interval (inclusive, second precision). */
  readonly to: Date;
}

/** An element of a GET /data answer that is not a valid record (a "poison row"). */
export interface InvalidRecord {
  /** The element's JSON text as received. */
  readonly text: string;
  /** What is wrong with it (names the member). */
  readonly error: string;
}

/** A record of a GET /data answer whose requested members were not all valid (see keepRequested). */
export interface RecordWithBadMembers {
  /** The record as yielded in {@link DataPage.records}: its good members only. */
  readonly record: DataRecord;
  /** The element's JSON text as received. */
  readonly text: string;
  /** The members removed from it, in answer order: each names itself and what is wrong. */
  readonly members: readonly { readonly valueId: string; readonly error: string }[];
}

/** A piece of a GET /data answer, as {@link ApiClient.data} yields it. */
export interface DataPage {
  /** Valid records (with their good members), in answer order. */
  readonly records: DataRecord[];
  /** Elements that are not valid records, in answer order. */
  readonly invalid: readonly InvalidRecord[];
  /** The records of `records` that lost members that were not valid, in answer order. */
  readonly badMembers: readonly RecordWithBadMembers[];
  /**
   * 1 for the first attempt. A page with a higher number starts the answer over: the previous
   * attempt failed midway and was retried (what was handed on before is handed on again).
   */
  readonly attempt: number;
  /** The API's clock when it answered (its `Date` header), epoch ms; undefined without one. */
  readonly serverTimeMs?: number;
  /** Members that were not requested, removed from this page's rows (counted, not judged). */
  readonly extraMembers: number;
  /** The first few names of them. */
  readonly extraMemberNames: readonly string[];
}

/** The bad members of a page without any. */
const NO_BAD_MEMBERS: readonly RecordWithBadMembers[] = Object.freeze([]);

/** Names of removed members a page carries at most. */
const EXTRA_NAMES = 5;

/** How one request is sent and retried. */
interface AttemptSpec {
  readonly method: "GET" | "POST";
  /** Path with placeholders for metrics and logs. */
  readonly route: string;
  readonly path: string;
  readonly auth: "bearer" | { readonly authorization: string };
  readonly searchParams?: Record<string, string>;
  readonly json?: unknown;
  /** Served before ordinary requests by the rate gate (POST /create_token). */
  readonly priority?: boolean;
  /** The first attempt uses a rate-gate slot its caller already holds. */
  readonly slotHeld?: boolean;
  /**
   * Must not reach the server twice (POST /set_password uses up the one-time password): only a
   * failure before anything was sent (connection refused, name not resolved) is retried.
   */
  readonly sendOnce?: boolean;
  /** Told the clock (epoch ms) when each attempt is sent. */
  readonly onSentAt?: (atMs: number) => void;
}

interface RequestSpec<S extends z.ZodType> extends AttemptSpec {
  readonly schema: S;
  /**
   * Members of the answer that are secrets (POST /create_token: `token`): registered before the
   * answer is validated, so that no message about a malformed answer can quote them.
   */
  readonly secretMembers?: readonly string[];
}

/** The head of an HTTP answer. */
interface ResponseHead {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
}

/**
 * Path segment for an id: percent-encoded so that `site A+1` or `a/../devices` reach the server as
 * one segment. `.` and `..` cannot be sent at all (URLs normalise them away).
 */
export function encodeSegment(id: string): string {
  if (id === "" || id === "." || id === "..") {
    throw new ApiError(`cannot address the id ${JSON.stringify(id)} in a URL path`, {
      code: "request_rejected",
      endpoint: "(not sent)",
      retryable: false,
    });
  }
  return encodeURIComponent(id);
}

/** The epoch ms of an HTTP `Date` header, or undefined when absent or unreadable. */
export function parseDateHeader(header: unknown): number | undefined {
  if (typeof header !== "string") return undefined;
  const ms = Date.parse(header);
  return Number.isNaN(ms) ? undefined : ms;
}

/** One HTTP attempt on the wire. */
interface Exchange {
  readonly stream: Request;
  readonly idle: IdleTimer;
  /** The answer's head; rejects with the transport error. */
  readonly head: Promise<ResponseHead>;
  /** Destroys the stream and forgets the abort listener. */
  close(): void;
}

/**
 * Client of the Energy Monitoring Data API: every endpoint of spec sections 4 and 5, token
 * handling, limits checked before sending, responses validated, errors classified and retried,
 * every request bounded by a deadline, and {@link abort} for shutdown.
 */
export class ApiClient {
  private readonly http: Got;
  private readonly tokens: TokenProvider;
  private readonly now: () => number;
  private readonly log: Logger;
  private lastSlowNoticeMs = Number.NEGATIVE_INFINITY;
  private readonly lastRetryWarnMs = new Map<string, number>();
  private readonly limits: DataLimits;
  private readonly deadlineMs: number;
  private readonly retryAfterMaxMs: number;
  private readonly basicCredential: string;
  /** The latest access tokens, still registered as secrets (older ones are forgotten). */
  private readonly recentTokens: string[] = [];
  /** Requests under way, ended by {@link abort}. */
  private readonly runs = new Set<RequestRun>();
  private abortReason: string | undefined;
  private serverTimeListener: ((serverMs: number) => void) | undefined;

  /**
   * Registers the credentials as secrets at once (the password, the API key, and the Basic
   * credential `user:password`, with their Base64 forms), so no log line or message shows them.
   */
  constructor(private readonly options: ApiClientOptions) {
    this.now = options.now ?? Date.now;
    this.log = options.logger.child({ component: "api-client" });
    this.limits = options.dataLimits ?? DEFAULT_DATA_LIMITS;
    this.deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
    this.retryAfterMaxMs = options.retryAfterMaxMs ?? DEFAULT_RETRY_AFTER_MAX_MS;
    registerSecret(options.apiKey);
    if (options.password !== "") {
      registerSecret(options.password);
      registerSecret(`${options.user}:${options.password}`);
    }
    this.basicCredential = Buffer.from(`${options.user}:${options.password}`).toString("base64");
    this.http = got.extend({
      prefixUrl: options.baseUrl,
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      headers: { "user-agent": "energy-etl", accept: "application/json" },
    });
    this.tokens = new TokenProvider((slotHeld) => this.createToken(slotHeld), this.now);
  }

  /**
   * Ends every request of this client at once, with code `aborted` (for shutdown): attempts in
   * flight are cut off, and waits for the rate gate, a backoff sleep or a token renewal end. Every
   * later call fails at once the same way. `reason` goes into the messages (the first one stays).
   */
  abort(reason = "the API client was shut down"): void {
    this.abortReason ??= reason;
    for (const run of [...this.runs]) run.abort(this.abortReason);
  }

  /** True once {@link abort} was called. */
  get aborted(): boolean {
    return this.abortReason !== undefined;
  }

  /** GET /devices (spec 4.1). */
  listDevices(options?: CallOptions): Promise<DevicesResponse> {
    return this.request(
      {
        method: "GET",
        path: "devices",
        route: "/devices",
        auth: "bearer",
        schema: devicesResponseSchema,
      },
      options,
    );
  }

  /** GET /<device_id>/resources (spec 4.2). */
  async listResources(deviceId: string, options?: CallOptions): Promise<ResourcesResponse> {
    return this.request(
      {
        method: "GET",
        path: `${encodeSegment(deviceId)}/resources`,
        route: "/{device}/resources",
        auth: "bearer",
        schema: resourcesResponseSchema,
      },
      options,
    );
  }

  /** GET /<device_id>/<resource_id>/values (spec 4.3). */
  async listValues(
    deviceId: string,
    resourceId: string,
    options?: CallOptions,
  ): Promise<ValuesResponse> {
    return this.request(
      {
        method: "GET",
        path: `${encodeSegment(deviceId)}/${encodeSegment(resourceId)}/values`,
        route: "/{device}/{resource}/values",
        auth: "bearer",
        schema: valuesResponseSchema,
      },
      options,
    );
  }

  /** GET /data/<device_id>/<resource_id> (spec 4.4) as one array of its valid records. */
  async getData(query: DataQuery, options: CallOptions = {}): Promise<DataRecord[]> {
    let attempt = 0;
    let records: DataRecord[] = [];
    for await (const page of this.data(query, options)) {
      if (page.attempt !== attempt) {
        attempt = page.attempt;
        records = [];
      }
      records.push(...page.records);
    }
    return records;
  }

  /**
   * GET /data/<device_id>/<resource_id> (spec 4.4), streamed: the body is split into records as it
   * arrives and each element is validated on its own; pages of up to `pageSize` records are
   * yielded while the download waits, so memory does not grow with the answer. An element that
   * is not a valid record is yielded in `invalid` and the answer goes on; a record whose requested
   * members are not all valid is yielded with its good members, and the others in `badMembers`.
   * Refuses queries over spec 8's limits; an answer with a record over `maxRecordBytes` or more
   * than `maxAnswerBytes` fails (not retried). A retry after a failure midway starts the answer over (its pages carry
   * the attempt number). The deadline does not count the time the caller spends on a page.
   */
  async *data(
    query: DataQuery,
    options: CallOptions = {},
    pageSize = DATA_PAGE_RECORDS,
  ): AsyncGenerator<DataPage, void, undefined> {
    const path = `data/${encodeSegment(query.deviceId)}/${encodeSegment(query.resourceId)}`;
    assertWithinLimits(query, path);
    const spec = {
      method: "GET" as const,
      path,
      route: "/data/{device}/{resource}",
      auth: "bearer" as const,
      searchParams: {
        values: query.values.join(","),
        from: formatQueryTime(query.from),
        to: formatQueryTime(query.to),
      },
    };
    const requested = new Set(query.values);
    yield* this.withRetries(spec, options, (token, run) =>
      this.dataAttempt(spec, requested, token, run, pageSize, options),
    );
  }

  /**
   * Starts an attempt for the hooks ({@link ApiClientOptions.onSend}); the function returned
   * tells them how it ended, once (later calls are ignored).
   */
  private reporter(
    spec: { method: string; route: string },
    options: CallOptions,
  ): (status: number | undefined, code: string | undefined) => void {
    const started = this.now();
    this.options.onSend?.(`${spec.method} ${spec.route}`);
    let reported = false;
    return (status, code) => {
      if (reported) return;
      reported = true;
      const info = {
        route: `${spec.method} ${spec.route}`,
        status,
        code,
        durationMs: this.now() - started,
      };
      this.options.onAttempt?.(info);
      options.onAttempt?.(info);
    };
  }

  /**
   * Sends one attempt as a stream. API_TIMEOUT_MS bounds connecting and the wait for the head
   * (got's timeouts) and, through the returned idle timer, each next part of the body; the run's
   * signal (deadline, abort) destroys the stream at once.
   */
  private open(spec: AttemptSpec, headers: Record<string, string>, run: RequestRun): Exchange {
    const t = clampTimerMs(this.options.timeoutMs);
    const body =
      spec.method === "POST" ? (spec.json === undefined ? { body: "" } : { json: spec.json }) : {};
    const stream = this.http.stream(spec.path, {
      method: spec.method,
      headers,
      searchParams: spec.searchParams,
      ...body,
      timeout: { lookup: t, connect: t, secureConnect: t, send: t, response: t },
    });
    const idle = new IdleTimer(stream, t);
    const slow = setTimeout(
      () => this.noteSlow(run.endpoint, t),
      clampTimerMs(this.options.slowNoticeMs ?? SLOW_NOTICE_MS),
    );
    slow.unref();
    const answered = (): void => clearTimeout(slow);
    stream.once("response", answered);
    stream.once("error", answered);
    const onAbort = (): void => {
      stream.destroy(Object.assign(new Error("aborted"), { code: "ERR_ABORTED" }));
    };
    run.signal.addEventListener("abort", onAbort, { once: true });
    const head = new Promise<ResponseHead>((resolve, reject) => {
      stream.once("response", resolve);
      stream.once("error", reject);
    });
    head.catch(() => undefined);
    return {
      stream,
      idle,
      head,
      close: () => {
        answered();
        idle.disarm();
        run.signal.removeEventListener("abort", onAbort);
        stream.destroy();
      },
    };
  }

  /** True when a retry of this kind (code, status) was reported within the last minute. */
  private repeated(code: string, status: number | undefined): boolean {
    const key = `${code}:${status ?? ""}`;
    const now = this.now();
    const last = this.lastRetryWarnMs.get(key);
    if (last !== undefined && now - last < 60_000) return true;
    this.lastRetryWarnMs.set(key, now);
    return false;
  }

  /** One "still waiting" line, at most every minute (a slow API with many requests in flight). */
  private noteSlow(endpoint: string, timeoutMs: number): void {
    const now = this.now();
    if (now - this.lastSlowNoticeMs < 60_000) return;
    this.lastSlowNoticeMs = now;
    this.log.info(
      {
        endpoint,
        api: this.options.baseUrl,
        waitedMs: this.options.slowNoticeMs ?? SLOW_NOTICE_MS,
        timeoutMs,
      },
      "waiting for the API: no answer yet (gives up after API_TIMEOUT_MS)",
    );
  }

  /**
   * Reads a body up to `maxBytes` under the idle timer (and the run's deadline, which destroys
   * the stream); stops reading there (`over`).
   */
  private async readBody(
    exchange: Exchange,
    maxBytes: number,
  ): Promise<{ text: string; over: boolean }> {
    const chunks: Buffer[] = [];
    let bytes = 0;
    exchange.idle.arm();
    try {
      for await (const chunk of exchange.stream) {
        const buffer = chunk as Buffer;
        if (bytes + buffer.length > maxBytes) {
          chunks.push(buffer.subarray(0, maxBytes - bytes));
          return { text: Buffer.concat(chunks).toString("utf8"), over: true };
        }
        chunks.push(buffer);
        bytes += buffer.length;
        exchange.idle.arm();
      }
    } finally {
      exchange.idle.disarm();
    }
    return { text: Buffer.concat(chunks).toString("utf8"), over: false };
  }

  /** A non-2xx answer as an ApiError; its body read under the timeouts and cut at 64 KiB. */
  private async failedAnswer(
    exchange: Exchange,
    head: ResponseHead,
    endpoint: string,
  ): Promise<ApiError> {
    const { text } = await this.readBody(exchange, ERROR_BODY_BYTES);
    const retryAfter = head.headers["retry-after"];
    return classifyStatus(endpoint, head.statusCode, text, retryAfter, this.now());
  }

  /** The headers of an attempt. */
  private headersFor(spec: AttemptSpec, token: string | undefined): Record<string, string> {
    return spec.auth === "bearer"
      ? { authorization: `Bearer ${token ?? ""}` }
      : { authorization: spec.auth.authorization, "x-api-key": this.options.apiKey };
  }

  /** One streamed attempt of GET /data: yields its pages, returns the classified error if any. */
  private async *dataAttempt(
    spec: AttemptSpec & { method: "GET"; searchParams: Record<string, string> },
    requested: ReadonlySet<string>,
    token: string | undefined,
    run: RequestRun,
    pageSize: number,
    options: CallOptions,
  ): AsyncGenerator<DataPage, ApiError | undefined, undefined> {
    const { endpoint } = run;
    const attempt = run.attempts;
    const report = this.reporter(spec, options);
    const started = this.now();
    const exchange = this.open(spec, this.headersFor(spec, token), run);
    const { stream, idle } = exchange;
    let status: number | undefined;
    try {
      const response = await exchange.head;
      status = response.statusCode;
      const serverTimeMs = this.noteServerTime(response.headers.date);
      if (status < 200 || status >= 300) {
        const failure = await this.failedAnswer(exchange, response, endpoint);
        report(status, failure.code);
        return failure;
      }
      const fail = (message: string, retryable: boolean): ApiError => {
        stream.destroy();
        const failure = new ApiError(`${endpoint} answered HTTP ${status} with ${message}`, {
          code: "invalid_response",
          endpoint,
          status,
          retryable,
        });
        report(status, failure.code);
        return failure;
      };
      const splitter = new JsonArraySplitter(this.limits.maxRecordBytes);
      const decoder = new StringDecoder("utf8");
      let records: DataRecord[] = [];
      let invalid: InvalidRecord[] = [];
      /** Records with bad members and where each stands in `records`. */
      let withBad: { at: number; row: RecordWithBadMembers }[] = [];
      const bad: BadMember[] = [];
      let extras: string[] = [];
      let extraCount = 0;
      let count = 0;
      let bytes = 0;
      const take = (texts: readonly string[]): void => {
        for (const text of texts) {
          const record = parseRecord(text, requested, extras, bad, endpoint, status ?? 200);
          if (record instanceof ApiError) invalid.push({ text, error: record.message });
          else {
            if (bad.length > 0) {
              const members = bad.map((member) => ({
                valueId: member.valueId,
                error: badMemberError(member, text, endpoint, status ?? 200),
              }));
              withBad.push({ at: records.length, row: { record, text, members } });
              bad.length = 0;
            }
            records.push(record);
            count++;
          }
          if (extras.length > EXTRA_NAMES) {
            extraCount += extras.length - EXTRA_NAMES;
            extras.length = EXTRA_NAMES;
          }
        }
      };
      /** The next page: up to `size` records (all of them by default) and the invalid ones. */
      const page = (size = records.length): DataPage => {
        // a record's bad members go with it
        const next = withBad.findIndex((b) => b.at >= size);
        const cut = next < 0 ? withBad.length : next;
        const out = {
          records: records.slice(0, size),
          invalid,
          badMembers: cut === 0 ? NO_BAD_MEMBERS : withBad.slice(0, cut).map((b) => b.row),
          attempt,
          serverTimeMs,
          extraMembers: extraCount + extras.length,
          extraMemberNames: extras,
        };
        records = size >= records.length ? [] : records.slice(size);
        if (cut > 0) withBad = withBad.slice(cut);
        for (const b of withBad) b.at -= size;
        invalid = [];
        extras = [];
        extraCount = 0;
        return out;
      };
      /** Hands a page to the caller: neither API_TIMEOUT_MS nor the deadline runs meanwhile. */
      const handOn = async function* (out: DataPage) {
        idle.disarm();
        run.suspend();
        yield out;
        run.resume();
      };
      idle.arm();
      try {
        for await (const chunk of stream) {
          const buffer = chunk as Buffer;
          bytes += buffer.length;
          if (bytes > this.limits.maxAnswerBytes) {
            idle.disarm();
            return fail(
              `more than ${this.limits.maxAnswerBytes} bytes (API_MAX_ANSWER_BYTES); ask for shorter windows or raise it`,
              false,
            );
          }
          take(splitter.push(decoder.write(buffer)));
          while (records.length >= pageSize || invalid.length >= pageSize) {
            yield* handOn(page(pageSize));
          }
          idle.arm();
        }
        idle.disarm();
        take(splitter.push(decoder.end()));
        splitter.end();
      } catch (error) {
        idle.disarm();
        if (!(error instanceof JsonArrayError)) throw error;
        const what = error.tooLong
          ? `a record over ${this.limits.maxRecordBytes} characters (API_MAX_RECORD_BYTES)`
          : `a body that is not a JSON array of records (${error.message})`;
        return fail(what, error.truncated);
      }
      report(status, undefined);
      this.options.gate?.success();
      this.log.debug(
        { endpoint, status, records: count, ms: this.now() - started },
        "api response",
      );
      while (records.length > pageSize) yield* handOn(page(pageSize));
      yield* handOn(page());
      return undefined;
    } catch (error) {
      const failure = classifyTransportError(endpoint, error);
      report(status, failure.code);
      return failure;
    } finally {
      // the caller stopped pulling pages before the answer was complete
      report(status, "abandoned");
      exchange.close();
    }
  }

  /**
   * POST /set_password (spec 5.1): sets `password` for `user` with a one-time password. Never
   * sent twice: only a failure before anything reached the server (connection refused, name not
   * resolved) is retried; any other failure is final (the one-time password may be used up).
   */
  async setPassword(
    user: string,
    otp: string,
    password: string,
    options?: CallOptions,
  ): Promise<void> {
    await this.request(
      {
        method: "POST",
        path: "set_password",
        route: "/set_password",
        auth: { authorization: `Bearer ${Buffer.from(otp).toString("base64")}` },
        schema: setPasswordResponseSchema,
        json: { user, pw: password },
        sendOnce: true,
      },
      options,
    );
  }

  /** Calls `listener` with the API's clock (epoch ms) whenever an answer's `Date` header tells it. */
  onServerTime(listener: (serverMs: number) => void): void {
    this.serverTimeListener = listener;
  }

  /** Remembers the API's clock from an answer's `Date` header. */
  private noteServerTime(header: unknown): number | undefined {
    const ms = parseDateHeader(header);
    if (ms !== undefined) this.serverTimeListener?.(ms);
    return ms;
  }

  /** A valid access token, obtained or renewed as needed (proves the credentials work). */
  async accessToken(): Promise<string> {
    if (this.abortReason !== undefined) {
      const run = new RequestRun("POST /create_token", this.deadlineMs, this.now);
      run.abort(this.abortReason);
      throw run.failure();
    }
    return this.tokens.get();
  }

  /**
   * POST /create_token (spec 5.2), ahead of other requests at the rate gate. `slotHeld`: the
   * request that needs the token gave up its slot for it. The token is registered as a secret
   * the moment it arrives; its renewal time counts from when the successful attempt was sent.
   */
  private async createToken(slotHeld: boolean): Promise<AccessToken> {
    let sentAtMs = this.now();
    const body = await this.request({
      method: "POST",
      path: "create_token",
      route: "/create_token",
      auth: { authorization: `Basic ${this.basicCredential}` },
      schema: tokenResponseSchema,
      secretMembers: ["token"],
      priority: true,
      slotHeld,
      onSentAt: (atMs) => {
        sentAtMs = atMs;
      },
    });
    this.rememberToken(body.token);
    this.log.debug({ expiresInS: body.expires_in }, "access token obtained");
    return {
      token: body.token,
      renewAtMs: sentAtMs + body.expires_in * 1000 - renewalMarginMs(body.expires_in),
    };
  }

  /**
   * Registers a new access token as a secret, and forgets the one {@link KEPT_TOKEN_SECRETS}
   * renewals back: long expired or refused by then, and every registered secret costs a little
   * on every log line (a service renews a 12 h token for months).
   */
  private rememberToken(token: string): void {
    registerSecret(token);
    this.recentTokens.push(token);
    if (this.recentTokens.length > KEPT_TOKEN_SECRETS) {
      const old = this.recentTokens.shift();
      if (old !== undefined && old !== token) forgetSecret(old);
    }
  }

  private async request<S extends z.ZodType>(
    spec: RequestSpec<S>,
    options: CallOptions = {},
  ): Promise<z.infer<S>> {
    for await (const body of this.withRetries(spec, options, (token, run) =>
      this.attempt(spec, token, run, options),
    )) {
      return body;
    }
    throw new Error(`${spec.method} /${spec.path}: no answer`);
  }

  /** A run for one request, registered for {@link abort}; already aborted after abort(). */
  private startRun(endpoint: string, signal: AbortSignal | undefined): RequestRun {
    const run = new RequestRun(endpoint, this.deadlineMs, this.now);
    if (this.abortReason !== undefined) {
      run.abort(this.abortReason);
      return run;
    }
    if (signal?.aborted) {
      run.abort(callerReason(signal));
      return run;
    }
    this.runs.add(run);
    run.onFinish(() => this.runs.delete(run));
    if (signal) {
      const onAbort = (): void => run.abort(callerReason(signal));
      signal.addEventListener("abort", onAbort, { once: true });
      run.onFinish(() => signal.removeEventListener("abort", onAbort));
    }
    return run;
  }

  /** `promise`, unless the run is ended first: then the run's final error. */
  private async waitFor<T>(promise: Promise<T>, run: RequestRun): Promise<T> {
    try {
      return await raceAbort(promise, run.signal);
    } catch (error) {
      if (run.signal.aborted) throw run.failure();
      throw error;
    }
  }

  /** Waits for the rate gate's slot (not counted against the deadline). */
  private async takeSlot(run: RequestRun, priority: boolean): Promise<void> {
    const gate = this.options.gate;
    if (gate) await this.waitFor(gate.take({ signal: run.signal, priority }), run);
  }

  /**
   * The access token, read once the request holds its slot, just before sending: the current
   * one if it is valid for a while yet; else a renewal (single flight). A renewal this request
   * starts uses its slot, and the request then takes the next slot (ahead of the queue), so a
   * renewal never adds a burst of requests.
   */
  private async tokenAfterSlot(run: RequestRun): Promise<string> {
    const valid = this.tokens.peek();
    if (valid !== undefined) return valid;
    const renewal = this.tokens.refresh(this.options.gate !== undefined);
    const fresh = await this.waitFor(renewal.token, run);
    if (renewal.started) await this.takeSlot(run, true);
    return this.tokens.peek() ?? fresh;
  }

  /** Backoff before a retry: counted against the deadline, ended at once by an abort. */
  private async backoff(ms: number, run: RequestRun): Promise<void> {
    run.resume();
    try {
      const sleep = this.options.sleep;
      await this.waitFor(
        sleep ? sleep(ms, run.signal) : timerSleep(ms, { signal: run.signal }),
        run,
      );
    } finally {
      run.suspend();
    }
  }

  /**
   * Runs attempts until one succeeds. Before each: the rate gate's slot, then the access token.
   * A 401 with an access token invalidates it and renews it (at most
   * {@link MAX_TOKEN_RENEWALS_PER_REQUEST} times per request; renewals are not retries). What is
   * retryable is retried with backoff, never sooner than Retry-After, unless Retry-After exceeds
   * `retryAfterMaxMs` or the wait would pass the deadline. Throws the final ApiError; `timeout`
   * when the deadline passed, `aborted` after {@link abort} or the caller's signal. An attempt
   * yields what it produces and returns its error, if any.
   */
  private async *withRetries<T>(
    spec: AttemptSpec,
    options: CallOptions,
    attempt: (
      token: string | undefined,
      run: RequestRun,
    ) => AsyncGenerator<T, ApiError | undefined, undefined>,
  ): AsyncGenerator<T, void, undefined> {
    const endpoint = `${spec.method} /${spec.path}`;
    const run = this.startRun(endpoint, options.signal);
    try {
      let retries = 0;
      let renewals = 0;
      let slotHeld = spec.slotHeld === true;
      for (;;) {
        if (run.signal.aborted) throw run.failure();
        if (!slotHeld) await this.takeSlot(run, spec.priority === true);
        slotHeld = false;
        const token = spec.auth === "bearer" ? await this.tokenAfterSlot(run) : undefined;
        run.attempts++;
        spec.onSentAt?.(this.now());
        run.resume();
        const outcome = yield* attempt(token, run);
        run.suspend();
        if (run.signal.aborted) throw run.failure();
        if (outcome === undefined) return;
        run.lastFailure = outcome;
        if (token !== undefined && outcome.status === 401) {
          this.tokens.invalidate(token);
          if (renewals >= MAX_TOKEN_RENEWALS_PER_REQUEST) {
            throw outcome.withMessage(
              `${endpoint} refused the access token (HTTP 401) even after renewing it ` +
                `${renewals} times (POST /create_token gave new tokens, each was refused): ` +
                `${outcome.message}`,
              { attempts: run.attempts },
            );
          }
          renewals++;
          this.log.info({ endpoint, renewals }, "access token refused, renewing it");
          continue;
        }
        const final = this.finalError(spec, outcome, retries, run);
        if (final) throw final;
        retries++;
        const delayMs = computeRetryDelay(
          retries,
          this.options.retry,
          outcome.retryAfterMs,
          this.options.random,
        );
        // a wait past the deadline fails now, and pauses nobody else's requests for it
        if (delayMs >= run.remainingMs()) {
          const asked =
            outcome.retryAfterHeader === undefined
              ? ""
              : ` (Retry-After: ${outcome.retryAfterHeader})`;
          throw run.deadlineError(
            `the next retry would wait ${formatWait(delayMs)}${asked}, past the deadline`,
          );
        }
        if (outcome.code === "rate_limited") {
          this.options.gate?.pause(delayMs);
          this.options.onRateLimited?.(delayMs);
        }
        // one warning per kind of failure a minute; the same failure again is debug
        this.log[this.repeated(outcome.code, outcome.status) ? "debug" : "warn"](
          { endpoint, code: outcome.code, status: outcome.status, attempt: retries, delayMs },
          "request failed, retrying",
        );
        this.options.onRetry?.({
          route: `${spec.method} ${spec.route}`,
          code: outcome.code,
          delayMs,
        });
        await this.backoff(delayMs, run);
      }
    } finally {
      run.finish();
    }
  }

  /**
   * The final error when `outcome` is not to be retried: not retryable, a request that must not
   * arrive twice and may have arrived, a Retry-After beyond API_RETRY_AFTER_MAX, or retries
   * spent. Undefined when it is to be retried.
   */
  private finalError(
    spec: AttemptSpec,
    outcome: ApiError,
    retries: number,
    run: RequestRun,
  ): ApiError | undefined {
    const attempts = run.attempts;
    if (!outcome.retryable) return outcome.withAttempts(attempts);
    if (spec.sendOnce && !outcome.neverSent) {
      return outcome.withMessage(
        `${outcome.message} (not retried: the request may have reached the server, and it must not arrive twice)`,
        { retryable: false, attempts },
      );
    }
    const asked = outcome.retryAfterMs;
    if (asked !== undefined && asked > this.retryAfterMaxMs) {
      // a 429 still says "too fast": halve the rate, but pause only for an ordinary backoff
      if (outcome.code === "rate_limited") {
        this.options.gate?.pause(
          computeRetryDelay(retries + 1, this.options.retry, undefined, this.options.random),
        );
      }
      return outcome.withMessage(
        `${run.endpoint} answered HTTP ${outcome.status} asking to wait ${formatWait(asked)} ` +
          `(Retry-After: ${outcome.retryAfterHeader}), longer than API_RETRY_AFTER_MAX ` +
          `(${formatWait(this.retryAfterMaxMs)}): not retried. ${outcome.message}`,
        { retryable: false, attempts },
      );
    }
    if (retries >= this.options.retry.retries) return outcome.withAttempts(attempts);
    return undefined;
  }

  /** One HTTP attempt: yields the parsed body, or returns the classified error. */
  private async *attempt<S extends z.ZodType>(
    spec: RequestSpec<S>,
    token: string | undefined,
    run: RequestRun,
    options: CallOptions,
  ): AsyncGenerator<z.infer<S>, ApiError | undefined, undefined> {
    const { endpoint } = run;
    const report = this.reporter(spec, options);
    const started = this.now();
    const exchange = this.open(spec, this.headersFor(spec, token), run);
    let parsed: z.infer<S>;
    try {
      let head: ResponseHead;
      let body: { text: string; over: boolean };
      try {
        head = await exchange.head;
        this.noteServerTime(head.headers.date);
        if (head.statusCode < 200 || head.statusCode >= 300) {
          const failure = await this.failedAnswer(exchange, head, endpoint);
          report(head.statusCode, failure.code);
          return failure;
        }
        body = await this.readBody(exchange, this.limits.maxAnswerBytes);
      } catch (error) {
        const failure = classifyTransportError(endpoint, error);
        report(undefined, failure.code);
        return failure;
      }
      const { statusCode } = head;
      this.log.debug({ endpoint, status: statusCode, ms: this.now() - started }, "api response");
      if (body.over) {
        const failure = new ApiError(
          `${endpoint} answered HTTP ${statusCode} with more than ${this.limits.maxAnswerBytes} bytes (API_MAX_ANSWER_BYTES)`,
          { code: "invalid_response", endpoint, status: statusCode, retryable: false },
        );
        report(statusCode, failure.code);
        return failure;
      }
      if (spec.secretMembers) registerSecretMembers(body.text, spec.secretMembers);
      const result = parseJson(body.text, [spec.schema], "body", endpoint, statusCode);
      const failed = result instanceof ApiError;
      report(statusCode, failed ? result.code : undefined);
      if (failed) return result;
      this.options.gate?.success();
      parsed = result;
    } finally {
      exchange.close();
    }
    run.suspend();
    yield parsed;
    return undefined;
  }
}

/** The reason of an aborted caller's signal, in words. */
function callerReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (typeof reason === "string" && reason !== "") return reason;
  if (reason instanceof Error && reason.name !== "AbortError" && reason.message !== "") {
    return reason.message;
  }
  return "the caller cancelled it";
}

/**
 * Parses and validates one JSON text of a 2xx answer (a whole body, or one record of GET /data)
 * with `schemas` in turn (a fast check first, the detailed one for the message). Text that is not
 * JSON may be a cut-off transfer, so that error is retryable; JSON of another shape is final.
 */
function parseJson<S extends z.ZodType>(
  text: string,
  schemas: readonly S[],
  what: "body" | "record",
  endpoint: string,
  status: number,
): z.infer<S> | ApiError {
  const json = parseText(text, what, endpoint, status);
  if (json instanceof ApiError) return json;
  let issue: z.core.$ZodIssue | undefined;
  for (const schema of schemas) {
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    issue = parsed.error.issues[0];
  }
  return unexpected(issue, what, text, endpoint, status);
}

/**
 * One element of a GET /data answer, cut to what was requested (see {@link keepRequested}): the
 * record (its bad members appended to `bad`), or why it is not one.
 */
function parseRecord(
  text: string,
  requested: ReadonlySet<string>,
  extras: string[],
  bad: BadMember[],
  endpoint: string,
  status: number,
): DataRecord | ApiError {
  const json = parseText(text, "record", endpoint, status);
  if (json instanceof ApiError) return json;
  if (keepRequested(json, requested, extras, bad)) return json;
  return unexpected(
    dataRecordSchema.safeParse(json).error?.issues[0],
    "record",
    text,
    endpoint,
    status,
  );
}

/** Why a member of a record was set aside, in the words of an invalid record's error. */
function badMemberError(member: BadMember, text: string, endpoint: string, status: number): string {
  const message = `an invalid member (${badMemberMessage(member)}); record starts: ${excerpt(text)}`;
  return scrubSecrets(`${endpoint} answered HTTP ${status} with ${message}`);
}

/** JSON.parse of a 2xx body or element; text that is not JSON may be cut off: retryable. */
function parseText(
  text: string,
  what: "body" | "record",
  endpoint: string,
  status: number,
): unknown {
  try {
    return text.trim() === "" ? undefined : JSON.parse(text);
  } catch {
    return invalidResponse(
      `a ${what} that is not JSON: ${excerpt(text)}`,
      true,
      text,
      endpoint,
      status,
    );
  }
}

/** JSON of another shape: final, naming the first issue and the start of the text. */
function unexpected(
  issue: z.core.$ZodIssue | undefined,
  what: "body" | "record",
  text: string,
  endpoint: string,
  status: number,
): ApiError {
  const where = issue ? `${issue.path.join(".") || `(${what})`}: ${issue.message}` : "invalid";
  return invalidResponse(
    `an unexpected ${what} (${where}); ${what} starts: ${excerpt(text)}`,
    false,
    text,
    endpoint,
    status,
  );
}

function invalidResponse(
  message: string,
  retryable: boolean,
  text: string,
  endpoint: string,
  status: number,
): ApiError {
  return new ApiError(scrubSecrets(`${endpoint} answered HTTP ${status} with ${message}`), {
    code: "invalid_response",
    endpoint,
    status,
    retryable,
    bodyExcerpt: scrubSecrets(excerpt(text)),
  });
}

/** Registers the string members `names` of a JSON object text as secrets (whatever else it is). */
function registerSecretMembers(text: string, names: readonly string[]): void {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return;
  }
  if (typeof json !== "object" || json === null) return;
  for (const name of names) {
    const value: unknown = (json as Record<string, unknown>)[name];
    if (typeof value === "string" && value !== "") registerSecret(value);
  }
}

/** Access tokens kept registered as secrets per client (the newest ones). */
const KEPT_TOKEN_SECRETS = 8;

/** Default of {@link ApiClientOptions.slowNoticeMs}. */
export const SLOW_NOTICE_MS = 2_000;

/** Records yielded at a time by {@link ApiClient.data}. */
export const DATA_PAGE_RECORDS = 2000;

/** Most of an error body read (64 KiB); the rest is not read at all. */
const ERROR_BODY_BYTES = 64 * 1024;

/** Refuses a data query that the API would reject (spec 8): a programming error upstream. */
function assertWithinLimits(query: DataQuery, path: string): void {
  const endpoint = `GET /${path}`;
  const refuse = (why: string): never => {
    throw new ApiError(`refusing to send ${endpoint}: ${why}`, {
      code: "request_over_limit",
      endpoint,
      retryable: false,
    });
  };
  if (query.values.length === 0) refuse("no values requested");
  if (query.values.length > MAX_VALUES_PER_REQUEST) {
    refuse(`${query.values.length} values requested, the API allows ${MAX_VALUES_PER_REQUEST}`);
  }
  if (query.values.includes(VALUES_ID)) refuse(`${VALUES_ID} must not be requested (spec 4.4)`);
  const fromS = Math.floor(query.from.getTime() / 1000);
  const toS = Math.floor(query.to.getTime() / 1000);
  if (Number.isNaN(fromS) || Number.isNaN(toS)) refuse("from/to is not a valid date");
  if (toS < fromS) refuse("to is before from");
  if ((toS - fromS) * 1000 > MAX_WINDOW_MS) {
    refuse(`the window is ${((toS - fromS) / 86400).toFixed(2)} days, the API allows 7`);
  }
}
