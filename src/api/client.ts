import { StringDecoder } from "node:string_decoder";
import got, { type Got, type Response } from "got";
import type { Logger } from "pino";
import type { z } from "zod";
import { computeRetryDelay, type RetryPolicy } from "../util/retry-delay.js";
import { ApiError, classifyStatus, classifyTransportError, excerpt } from "./errors.js";
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
  readonly logger: Logger;
  /** Called when the API answered 429, with the delay before the retry. */
  readonly onRateLimited?: (delayMs: number) => void;
  /** Paces every HTTP attempt (the pipeline's rate limit); told about 429s and successes. */
  readonly gate?: RequestGate;
  /** Called after every HTTP attempt, for counters and metrics. */
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

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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

  constructor(private readonly options: ApiClientOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
    this.log = options.logger.child({ component: "api-client" });
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
  listDevices(): Promise<DevicesResponse> {
    return this.request({
      method: "GET",
      path: "devices",
      route: "/devices",
      auth: "bearer",
      schema: devicesResponseSchema,
    });
  }

  /** GET /<device_id>/resources (spec 4.2). */
  async listResources(deviceId: string): Promise<ResourcesResponse> {
    return this.request({
      method: "GET",
      path: `${encodeSegment(deviceId)}/resources`,
      route: "/{device}/resources",
      auth: "bearer",
      schema: resourcesResponseSchema,
    });
  }

  /** GET /<device_id>/<resource_id>/values (spec 4.3). */
  async listValues(deviceId: string, resourceId: string): Promise<ValuesResponse> {
    return this.request({
      method: "GET",
      path: `${encodeSegment(deviceId)}/${encodeSegment(resourceId)}/values`,
      route: "/{device}/{resource}/values",
      auth: "bearer",
      schema: valuesResponseSchema,
    });
  }

  /** GET /data/<device_id>/<resource_id> (spec 4.4) as one array; see {@link streamData}. */
  async getData(query: DataQuery): Promise<DataRecord[]> {
    const records: DataRecord[] = [];
    await this.streamData(query, async (batch) => {
      records.push(...batch);
    });
    return records;
  }

  /**
   * GET /data/<device_id>/<resource_id> (spec 4.4), streamed: the body is split into records as it
   * arrives, each validated with zod, and handed to `onBatch` in batches (the download waits while
   * `onBatch` works), so memory does not grow with the size of the answer. Refuses queries over
   * spec 8's limits. When an attempt fails midway and is retried, `onBatch` sees the first records
   * again (writes are idempotent). Resolves with the number of records of the successful attempt.
   */
  async streamData(
    query: DataQuery,
    onBatch: (records: DataRecord[]) => Promise<void>,
    batchSize = DATA_BATCH_RECORDS,
  ): Promise<number> {
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
    return this.withRetries(spec, (token) =>
      this.streamAttempt(spec, `GET /${path}`, token, onBatch, batchSize),
    );
  }

  /**
   * Waits for the rate gate's slot, then starts the clock of one HTTP attempt; `report` tells
   * {@link ApiClientOptions.onAttempt} how it ended.
   */
  private async beginAttempt(spec: { method: string; route: string }) {
    await this.options.gate?.take();
    const started = this.now();
    const report = (status: number | undefined, code: string | undefined): void =>
      this.options.onAttempt?.({
        route: `${spec.method} ${spec.route}`,
        status,
        code,
        durationMs: this.now() - started,
      });
    return { started, report };
  }

  /** One streamed attempt of GET /data: the number of records, or the classified error. */
  private async streamAttempt(
    spec: { method: "GET"; path: string; route: string; searchParams: Record<string, string> },
    endpoint: string,
    token: string | undefined,
    onBatch: (records: DataRecord[]) => Promise<void>,
    batchSize: number,
  ): Promise<number | ApiError> {
    const { started, report } = await this.beginAttempt(spec);
    const stream = this.http.stream(spec.path, {
      method: spec.method,
      headers: { authorization: `Bearer ${token ?? ""}` },
      searchParams: spec.searchParams,
      timeout: { response: this.options.timeoutMs },
    });
    let status: number | undefined;
    try {
      const response = await new Promise<{ statusCode: number; headers: Record<string, unknown> }>(
        (resolve, reject) => {
          stream.once("response", resolve);
          stream.once("error", reject);
        },
      );
      status = response.statusCode;
      if (status < 200 || status >= 300) {
        let body = "";
        for await (const chunk of stream) body += String(chunk);
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
      // API_TIMEOUT_MS bounds the wait for the API's next bytes, not the time our writes take
      // while the download waits for them
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
      const splitter = new JsonArraySplitter();
      const decoder = new StringDecoder("utf8");
      let batch: DataRecord[] = [];
      let count = 0;
      const deliver = async (records: DataRecord[]): Promise<void> => {
        disarm();
        try {
          await onBatch(records);
        } catch (error) {
          throw new CallerError(error);
        }
        arm();
      };
      const take = async (texts: string[]): Promise<ApiError | undefined> => {
        for (const text of texts) {
          const record = parseJson(text, RECORD_SCHEMAS, "record", endpoint, status ?? 200);
          if (record instanceof ApiError) return record;
          batch.push(record);
          count++;
          if (batch.length >= batchSize) {
            const full = batch;
            batch = [];
            await deliver(full);
          }
        }
        return undefined;
      };
      arm();
      try {
        for await (const chunk of stream) {
          arm();
          const bad = await take(splitter.push(decoder.write(chunk as Buffer)));
          if (bad) {
            disarm();
            stream.destroy();
            report(status, bad.code);
            return bad;
          }
        }
        const bad = await take(splitter.push(decoder.end()));
        if (bad) {
          disarm();
          report(status, bad.code);
          return bad;
        }
        splitter.end();
      } catch (error) {
        disarm();
        if (!(error instanceof JsonArrayError)) throw error;
        stream.destroy();
        const failure = new ApiError(
          `${endpoint} answered HTTP ${status} with a body that is not a JSON array of records (${error.message})`,
          { code: "invalid_response", endpoint, status, retryable: error.truncated },
        );
        report(status, failure.code);
        return failure;
      }
      disarm();
      if (batch.length > 0) await deliver(batch);
      disarm();
      report(status, undefined);
      this.options.gate?.success();
      this.log.debug(
        { endpoint, status, records: count, ms: this.now() - started },
        "api response",
      );
      return count;
    } catch (error) {
      if (isCallerError(error)) {
        stream.destroy();
        throw error.original;
      }
      const failure = classifyTransportError(endpoint, error);
      report(status, failure.code);
      return failure;
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

  private request<S extends z.ZodType>(spec: RequestSpec<S>): Promise<z.infer<S>> {
    const endpoint = `${spec.method} /${spec.path}`;
    return this.withRetries(spec, (token) => this.attempt(spec, endpoint, token));
  }

  /**
   * Runs attempts until one succeeds: renews the token once after a 401, retries what is
   * retryable with backoff (never sooner than Retry-After), and throws the final ApiError.
   */
  private async withRetries<T>(
    spec: Pick<RequestSpec<z.ZodType>, "method" | "path" | "route" | "auth">,
    run: (token: string | undefined) => Promise<T | ApiError>,
  ): Promise<T> {
    const endpoint = `${spec.method} /${spec.path}`;
    const { retry } = this.options;
    let renewedAfter401 = false;
    for (let attempt = 1; ; attempt++) {
      const token = spec.auth === "bearer" ? await this.tokens.get() : undefined;
      const outcome = await run(token);
      if (!(outcome instanceof ApiError)) return outcome;
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

  /** One HTTP attempt: the parsed body, or the classified error. */
  private async attempt<S extends z.ZodType>(
    spec: RequestSpec<S>,
    endpoint: string,
    token: string | undefined,
  ): Promise<z.infer<S> | ApiError> {
    const authorization = token === undefined ? undefined : `Bearer ${token}`;
    const headers: Record<string, string> =
      spec.auth === "bearer"
        ? { authorization: authorization ?? "" }
        : { authorization: spec.auth.authorization, "x-api-key": this.options.apiKey };
    const { started, report } = await this.beginAttempt(spec);
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
    if (!failed) this.options.gate?.success();
    return parsed;
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

/** Records handed to `onBatch` at a time by {@link ApiClient.streamData}. */
export const DATA_BATCH_RECORDS = 2000;

/** A GET /data record: the fast type test, then the detailed schema (for the message). */
const RECORD_SCHEMAS = [fastDataRecordSchema, dataRecordSchema] as const;

/** Errors thrown by the caller's onBatch (e.g. a failed write) are theirs, not the API's. */
class CallerError extends Error {
  constructor(readonly original: unknown) {
    super("onBatch failed");
  }
}
const isCallerError = (error: unknown): error is CallerError => error instanceof CallerError;

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
