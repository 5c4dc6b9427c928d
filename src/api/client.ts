import { StringDecoder } from "node:string_decoder";
import got, { type Got, type Response } from "got";
import type { Logger } from "pino";
import type { z } from "zod";
import { computeRetryDelay, type RetryPolicy } from "../util/retry-delay.js";
import { sleep as defaultSleep } from "../util/sleep.js";
import { excerpt } from "../util/text.js";
import { ApiError, classifyStatus, classifyTransportError } from "./errors.js";
import { JsonArrayError, JsonArraySplitter } from "./json-array-splitter.js";
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS, VALUES_ID } from "./limits.js";
import {
  type DataRecord,
  type DevicesResponse,
  dataRecordSchema,
  devicesResponseSchema,
  fastDataRecordSchema,
  type ResourcesResponse,
  resourcesResponseSchema,
  setPasswordResponseSchema,
  tokenResponseSchema,
  type ValuesResponse,
  valuesResponseSchema,
} from "./schemas.js";
import { formatQueryTime } from "./time-format.js";
import { type AccessToken, renewalMarginMs, TokenProvider } from "./token-provider.js";

/** What the client needs to reach and authenticate with the API. */
export interface ApiClientOptions {
  /** Base address of the API (spec: {base_url}). */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly user: string;
  readonly password: string;
  /** Timeout of one HTTP attempt (default 30 000 ms). */
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  /** Size caps of GET /data answers (defaults {@link DEFAULT_DATA_LIMITS}). */
  readonly dataLimits?: DataLimits;
  readonly logger: Logger;
  /** Called when the API answered 429, with the delay before the retry. */
  readonly onRateLimited?: (delayMs: number) => void;
  /** Paces every HTTP attempt (the pipeline's rate limit); told about 429s and successes. */
  readonly gate?: RequestGate;
  /** Called after every HTTP attempt, for metrics. */
  readonly onAttempt?: (attempt: AttemptInfo) => void;
  /** Called before a retry, with the route, the error code and the delay. */
  readonly onRetry?: (retry: { route: string; code: string; delayMs: number }) => void;
  /** Clock in epoch ms (default Date.now). */
  readonly now?: () => number;
  /** Random source of the retry jitter (default Math.random). */
  readonly random?: () => number;
  /** Waits (default setTimeout); injected by tests that count delays. */
  readonly sleep?: (ms: number) => Promise<void>;
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
}

/** Paces requests: waits for a slot, pauses after a 429, recovers after successes. */
export interface RequestGate {
  take(): Promise<void>;
  pause(ms: number): void;
  success(): void;
}

/** One HTTP attempt, as reported to {@link ApiClientOptions.onAttempt}. */
export interface AttemptInfo {
  /** Endpoint with placeholders, e.g. `GET /data/{device}/{resource}` (low cardinality). */
  readonly route: string;
  /** HTTP status, or undefined when no answer came. */
  readonly status?: number;
  /** Error code when the attempt failed. */
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

/** A piece of a GET /data answer, as {@link ApiClient.data} yields it. */
export interface DataPage {
  /** Valid records, in answer order. */
  readonly records: DataRecord[];
  /** Elements that are not valid records, in answer order. */
  readonly invalid: readonly InvalidRecord[];
  /**
   * 1 for the first attempt. A page with a higher number starts the answer over: the previous
   * attempt failed midway and was retried (what was handed on before is handed on again).
   */
  readonly attempt: number;
  /** The API's clock when it answered (its `Date` header), epoch ms; undefined without one. */
  readonly serverTimeMs?: number;
}

interface RequestSpec<S extends z.ZodType> {
  readonly method: "GET" | "POST";
  /** Path with placeholders for metrics and logs. */
  readonly route: string;
  readonly path: string;
  readonly auth: "bearer" | { readonly authorization: string };
  readonly schema: S;
  readonly searchParams?: Record<string, string>;
  readonly json?: unknown;
}

type AttemptSpec = Pick<RequestSpec<z.ZodType>, "method" | "path" | "route" | "auth">;

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

/**
 * Client of the Energy Monitoring Data API: every endpoint of spec sections 4 and 5, token
 * handling, limits checked before sending, responses validated, errors classified and retried.
 */
export class ApiClient {
  private readonly http: Got;
  private readonly tokens: TokenProvider;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly log: Logger;
  private readonly limits: DataLimits;
  private lastServerTimeMs: number | undefined;

  constructor(private readonly options: ApiClientOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
    this.log = options.logger.child({ component: "api-client" });
    this.limits = options.dataLimits ?? DEFAULT_DATA_LIMITS;
    this.http = got.extend({
      prefixUrl: options.baseUrl,
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      responseType: "text",
      headers: { "user-agent": "energy-etl", accept: "application/json" },
    });
    this.tokens = new TokenProvider(() => this.createToken(), this.now);
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
  async getData(query: DataQuery): Promise<DataRecord[]> {
    let attempt = 0;
    let records: DataRecord[] = [];
    for await (const page of this.data(query)) {
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
   * is not a valid record is yielded in `invalid` and the answer goes on. Refuses queries over
   * spec 8's limits; an answer with a record over `maxRecordBytes` or more than `maxAnswerBytes`
   * fails (not retried). A retry after a failure midway starts the answer over (its pages carry
   * the attempt number).
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
    yield* this.withRetries(spec, (token, attempt) =>
      this.dataAttempt(spec, `GET /${path}`, token, attempt, pageSize, options),
    );
  }

  /**
   * Waits for the rate gate's slot, then starts the clock of one HTTP attempt; `report` tells
   * the attempt hooks how it ended.
   */
  private async beginAttempt(spec: { method: string; route: string }, options: CallOptions) {
    await this.options.gate?.take();
    const started = this.now();
    const report = (status: number | undefined, code: string | undefined): void => {
      const info = {
        route: `${spec.method} ${spec.route}`,
        status,
        code,
        durationMs: this.now() - started,
      };
      this.options.onAttempt?.(info);
      options.onAttempt?.(info);
    };
    return { started, report };
  }

  /** One streamed attempt of GET /data: yields its pages, returns the classified error if any. */
  private async *dataAttempt(
    spec: { method: "GET"; path: string; route: string; searchParams: Record<string, string> },
    endpoint: string,
    token: string | undefined,
    attempt: number,
    pageSize: number,
    options: CallOptions,
  ): AsyncGenerator<DataPage, ApiError | undefined, undefined> {
    const { started, report } = await this.beginAttempt(spec, options);
    const stream = this.http.stream(spec.path, {
      method: spec.method,
      headers: { authorization: `Bearer ${token ?? ""}` },
      searchParams: spec.searchParams,
      timeout: { response: this.options.timeoutMs },
    });
    // API_TIMEOUT_MS bounds the wait for the API's next bytes, not the time the consumer takes
    // with a page while the download waits for it
    let idle: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        const stalled = Object.assign(new Error(`no data for ${this.options.timeoutMs} ms`), {
          code: "ETIMEDOUT",
        });
        stream.destroy(stalled);
      }, this.options.timeoutMs).unref();
    };
    const disarm = (): void => clearTimeout(idle);
    let status: number | undefined;
    try {
      const response = await new Promise<{ statusCode: number; headers: Record<string, unknown> }>(
        (resolve, reject) => {
          stream.once("response", resolve);
          stream.once("error", reject);
        },
      );
      status = response.statusCode;
      const serverTimeMs = this.noteServerTime(response.headers.date);
      if (status < 200 || status >= 300) {
        let body = "";
        for await (const chunk of stream) {
          if (body.length < ERROR_BODY_CHARS) body += String(chunk);
        }
        const retryAfter = response.headers["retry-after"];
        const failure = classifyStatus(
          endpoint,
          status,
          body,
          typeof retryAfter === "string" ? retryAfter : undefined,
          this.now(),
        );
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
      let count = 0;
      let bytes = 0;
      const take = (texts: readonly string[]): void => {
        for (const text of texts) {
          const record = parseJson(text, RECORD_SCHEMAS, "record", endpoint, status ?? 200);
          if (record instanceof ApiError) invalid.push({ text, error: record.message });
          else {
            records.push(record);
            count++;
          }
        }
      };
      /** The next page: up to `size` records (all of them by default) and the invalid ones. */
      const page = (size = records.length): DataPage => {
        const out = { records: records.slice(0, size), invalid, attempt, serverTimeMs };
        records = size >= records.length ? [] : records.slice(size);
        invalid = [];
        return out;
      };
      arm();
      try {
        for await (const chunk of stream) {
          const buffer = chunk as Buffer;
          bytes += buffer.length;
          if (bytes > this.limits.maxAnswerBytes) {
            disarm();
            return fail(
              `more than ${this.limits.maxAnswerBytes} bytes (API_MAX_ANSWER_BYTES); ask for shorter windows or raise it`,
              false,
            );
          }
          take(splitter.push(decoder.write(buffer)));
          if (records.length >= pageSize || invalid.length >= pageSize) disarm();
          while (records.length >= pageSize || invalid.length >= pageSize) yield page(pageSize);
          arm();
        }
        disarm();
        take(splitter.push(decoder.end()));
        splitter.end();
      } catch (error) {
        disarm();
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
      while (records.length > pageSize) yield page(pageSize);
      yield page();
      return undefined;
    } catch (error) {
      disarm();
      const failure = classifyTransportError(endpoint, error);
      report(status, failure.code);
      return failure;
    } finally {
      disarm();
      stream.destroy();
    }
  }

  /** POST /set_password (spec 5.1): sets `password` for `user` with a one-time password. */
  async setPassword(user: string, otp: string, password: string): Promise<void> {
    await this.request({
      method: "POST",
      path: "set_password",
      route: "/set_password",
      auth: { authorization: `Bearer ${Buffer.from(otp).toString("base64")}` },
      schema: setPasswordResponseSchema,
      json: { user, pw: password },
    });
  }

  /** The API's clock as its latest answer said (its `Date` header), epoch ms; undefined before. */
  get serverTimeMs(): number | undefined {
    return this.lastServerTimeMs;
  }

  /** Remembers the API's clock from an answer's `Date` header. */
  private noteServerTime(header: unknown): number | undefined {
    const ms = parseDateHeader(header);
    if (ms !== undefined) this.lastServerTimeMs = ms;
    return ms;
  }

  /** A valid access token, obtained or renewed as needed (proves the credentials work). */
  accessToken(): Promise<string> {
    return this.tokens.get();
  }

  /** POST /create_token (spec 5.2). */
  private async createToken(): Promise<AccessToken> {
    const basic = Buffer.from(`${this.options.user}:${this.options.password}`).toString("base64");
    const obtainedAt = this.now();
    const body = await this.request({
      method: "POST",
      path: "create_token",
      route: "/create_token",
      auth: { authorization: `Basic ${basic}` },
      schema: tokenResponseSchema,
    });
    this.log.debug({ expiresInS: body.expires_in }, "access token obtained");
    return {
      token: body.token,
      renewAtMs: obtainedAt + body.expires_in * 1000 - renewalMarginMs(body.expires_in),
    };
  }

  private async request<S extends z.ZodType>(
    spec: RequestSpec<S>,
    options: CallOptions = {},
  ): Promise<z.infer<S>> {
    const endpoint = `${spec.method} /${spec.path}`;
    for await (const body of this.withRetries(spec, (token) =>
      this.attempt(spec, endpoint, token, options),
    )) {
      return body;
    }
    throw new Error(`${endpoint}: no answer`);
  }

  /**
   * Runs attempts until one succeeds: renews the token once after a 401, retries what is
   * retryable with backoff (never sooner than Retry-After), and throws the final ApiError. An
   * attempt yields what it produces and returns its error, if any.
   */
  private async *withRetries<T>(
    spec: AttemptSpec,
    run: (
      token: string | undefined,
      attempt: number,
    ) => AsyncGenerator<T, ApiError | undefined, undefined>,
  ): AsyncGenerator<T, void, undefined> {
    const endpoint = `${spec.method} /${spec.path}`;
    const { retry } = this.options;
    let renewedAfter401 = false;
    let sent = 0;
    for (let attempt = 1; ; attempt++) {
      const token = spec.auth === "bearer" ? await this.tokens.get() : undefined;
      sent++;
      const outcome = yield* run(token, sent);
      if (outcome === undefined) return;
      if (token !== undefined && outcome.status === 401 && !renewedAfter401) {
        renewedAfter401 = true;
        this.tokens.invalidate(token);
        this.log.info({ endpoint }, "access token refused, renewing it once");
        attempt--;
        continue;
      }
      if (!outcome.retryable || attempt > retry.retries) throw outcome.withAttempts(attempt);
      const delayMs = computeRetryDelay(attempt, retry, outcome.retryAfterMs, this.options.random);
      if (outcome.code === "rate_limited") {
        this.options.gate?.pause(delayMs);
        this.options.onRateLimited?.(delayMs);
      }
      this.log.warn(
        { endpoint, code: outcome.code, status: outcome.status, attempt, delayMs },
        "request failed, retrying",
      );
      this.options.onRetry?.({
        route: `${spec.method} ${spec.route}`,
        code: outcome.code,
        delayMs,
      });
      await this.sleep(delayMs);
    }
  }

  /** One HTTP attempt: yields the parsed body, or returns the classified error. */
  private async *attempt<S extends z.ZodType>(
    spec: RequestSpec<S>,
    endpoint: string,
    token: string | undefined,
    options: CallOptions,
  ): AsyncGenerator<z.infer<S>, ApiError | undefined, undefined> {
    const authorization = token === undefined ? undefined : `Bearer ${token}`;
    const headers: Record<string, string> =
      spec.auth === "bearer"
        ? { authorization: authorization ?? "" }
        : { authorization: spec.auth.authorization, "x-api-key": this.options.apiKey };
    const { started, report } = await this.beginAttempt(spec, options);
    let response: Response<string>;
    try {
      response = await this.http(spec.path, {
        method: spec.method,
        headers,
        searchParams: spec.searchParams,
        json: spec.json,
        timeout: { request: this.options.timeoutMs },
      });
    } catch (error) {
      const failure = classifyTransportError(endpoint, error);
      report(undefined, failure.code);
      return failure;
    }
    const { statusCode, body } = response;
    this.noteServerTime(response.headers.date);
    this.log.debug({ endpoint, status: statusCode, ms: this.now() - started }, "api response");
    if (statusCode < 200 || statusCode >= 300) {
      const retryAfter = response.headers["retry-after"];
      const failure = classifyStatus(endpoint, statusCode, body, retryAfter, this.now());
      report(statusCode, failure.code);
      return failure;
    }
    const parsed = parseJson(body, [spec.schema], "body", endpoint, statusCode);
    const failed = parsed instanceof ApiError;
    report(statusCode, failed ? parsed.code : undefined);
    if (failed) return parsed;
    this.options.gate?.success();
    yield parsed;
    return undefined;
  }
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
  const fail = (message: string, retryable: boolean): ApiError =>
    new ApiError(`${endpoint} answered HTTP ${status} with ${message}`, {
      code: "invalid_response",
      endpoint,
      status,
      retryable,
      bodyExcerpt: excerpt(text),
    });
  let json: unknown;
  try {
    json = text.trim() === "" ? undefined : JSON.parse(text);
  } catch {
    return fail(`a ${what} that is not JSON: ${excerpt(text)}`, true);
  }
  let issue: z.core.$ZodIssue | undefined;
  for (const schema of schemas) {
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    issue = parsed.error.issues[0];
  }
  const where = issue ? `${issue.path.join(".") || `(${what})`}: ${issue.message}` : "invalid";
  return fail(`an unexpected ${what} (${where}); ${what} starts: ${excerpt(text)}`, false);
}

/** Records yielded at a time by {@link ApiClient.data}. */
export const DATA_PAGE_RECORDS = 2000;

/** Most of an error body kept for the message. */
const ERROR_BODY_CHARS = 64 * 1024;

/** A GET /data record: the fast type test, then the detailed schema (for the message). */
const RECORD_SCHEMAS = [fastDataRecordSchema, dataRecordSchema] as const;

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
