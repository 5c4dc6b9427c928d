import type { z } from "zod";
import { DEFAULT_RETRY_AFTER_MAX_MS, type RetryPolicy } from "../retry/retry-policy.js";
import { ApiClock } from "./api-clock.js";
import {
  type Answered,
  ApiRequester,
  type ApiRequesterOptions,
  type CallOptions,
  DEFAULT_DEADLINE_MS,
  type RequestSpec,
} from "./api-request.js";
import { type AccessToken, ApiAuth, type ApiCredentials, renewalMarginMs } from "./auth.js";
import {
  type DataCallOptions,
  type DataLimits,
  type DataQuery,
  DEFAULT_DATA_LIMITS,
  fetchData,
} from "./data-stream.js";
import { ApiError } from "./errors.js";
import { invalidResponse, parseJson, registerSecretMembers } from "./parse-answer.js";
import { encodeSegment } from "./path-segment.js";
import {
  type DevicesResponse,
  devicesResponseSchema,
  type ResourcesResponse,
  resourcesResponseSchema,
  setPasswordResponseSchema,
  tokenResponseSchema,
  type ValuesResponse,
  valuesResponseSchema,
} from "./schemas.js";
import { HttpTransport, SLOW_NOTICE_MS } from "./transport.js";

/** What the client needs to reach and authenticate with the API, and how it paces and retries. */
export interface ApiClientOptions
  extends ApiCredentials,
    Pick<ApiRequesterOptions, "logger" | "gate" | "telemetry" | "random" | "sleep"> {
  /** Base address of the API (spec: {base_url}). */
  readonly baseUrl: string;
  /** API_TIMEOUT_MS: each wait of an attempt (connecting, the head, each part of the body). */
  readonly timeoutMs: number;
  /** After this long without an answer's head, say what is waited for (default 2 s). */
  readonly slowNoticeMs?: number;
  /**
   * API_DEADLINE_MS (default 15 min): one request as a whole, every attempt, backoff and
   * Retry-After wait (not the rate gate, the token, nor the caller's time on a page).
   */
  readonly deadlineMs?: number;
  /** Longest Retry-After honoured (API_RETRY_AFTER_MAX, default 10 min). */
  readonly retryAfterMaxMs?: number;
  readonly retry: Omit<RetryPolicy, "retryAfterMaxMs">;
  /** Size caps of GET /data answers (defaults {@link DEFAULT_DATA_LIMITS}). */
  readonly dataLimits?: DataLimits;
  /** Now as the API sees it, told every answer's `Date` (default: one of its own). */
  readonly clock?: ApiClock;
  /** Clock in epoch ms (default Date.now). */
  readonly now?: () => number;
}

/** Client of the API (specs 4, 5): one request per endpoint via the requester, body validated. */
export class ApiClient {
  /** Now as the API sees it (every answer's `Date`). */
  readonly clock: ApiClock;
  private readonly requester: ApiRequester;
  private readonly auth: ApiAuth;
  private readonly limits: DataLimits;

  /** Registers the credentials as secrets at once. */
  constructor(options: ApiClientOptions) {
    const now = options.now ?? Date.now;
    const logger = options.logger.child({ component: "api-client" });
    this.clock = options.clock ?? new ApiClock();
    this.limits = options.dataLimits ?? DEFAULT_DATA_LIMITS;
    this.auth = new ApiAuth(options, (slotHeld) => this.createToken(slotHeld), now);
    this.requester = new ApiRequester({
      transport: new HttpTransport({
        baseUrl: options.baseUrl,
        timeoutMs: options.timeoutMs,
        slowNoticeMs: options.slowNoticeMs ?? SLOW_NOTICE_MS,
        logger,
        clock: this.clock,
        now,
      }),
      auth: this.auth,
      retry: {
        ...options.retry,
        retryAfterMaxMs: options.retryAfterMaxMs ?? DEFAULT_RETRY_AFTER_MAX_MS,
      },
      deadlineMs: options.deadlineMs ?? DEFAULT_DEADLINE_MS,
      gate: options.gate,
      telemetry: options.telemetry,
      logger,
      now,
      random: options.random,
      sleep: options.sleep,
    });
  }

  /** Shutdown: ends every request now and later with code `aborted` (the first `reason` stays). */
  abort(reason = "the API client was shut down"): void {
    this.requester.abort(reason);
  }

  get aborted(): boolean {
    return this.requester.aborted;
  }

  /** GET /devices (spec 4.1). */
  async listDevices(call?: CallOptions): Promise<Answered<DevicesResponse>> {
    return this.get("devices", "/devices", devicesResponseSchema, call);
  }

  /** GET /<device_id>/resources (spec 4.2). */
  async listResources(deviceId: string, call?: CallOptions): Promise<Answered<ResourcesResponse>> {
    const path = `${encodeSegment(deviceId)}/resources`;
    return this.get(path, "/{device}/resources", resourcesResponseSchema, call);
  }

  /** GET /<device_id>/<resource_id>/values (spec 4.3). */
  async listValues(
    deviceId: string,
    resourceId: string,
    call?: CallOptions,
  ): Promise<Answered<ValuesResponse>> {
    const path = `${encodeSegment(deviceId)}/${encodeSegment(resourceId)}/values`;
    return this.get(path, "/{device}/{resource}/values", valuesResponseSchema, call);
  }

  /** GET /data (spec 4.4): the whole answer, retried until it came whole ({@link fetchData}). */
  data(query: DataQuery, options?: DataCallOptions) {
    return fetchData(this.requester, this.limits, query, options);
  }

  /** POST /set_password (spec 5.1): retried only when nothing reached the server. */
  async setPassword(user: string, otp: string, password: string, call?: CallOptions) {
    const authorization = `Bearer ${Buffer.from(otp).toString("base64")}`;
    await this.json(
      {
        method: "POST",
        path: "set_password",
        route: "/set_password",
        auth: { authorization },
        json: { user, pw: password },
        sendOnce: true,
      },
      setPasswordResponseSchema,
      call,
    );
  }

  /** A valid access token, obtained or renewed as needed (proves the credentials work). */
  accessToken(): Promise<string> {
    if (this.aborted) return Promise.reject(this.requester.abortedError("POST /create_token"));
    return this.auth.token();
  }

  /**
   * POST /create_token (spec 5.2), ahead of other requests at the rate gate (`slotHeld`: on the
   * slot of the request that needs it); the renewal time counts from when its attempt was sent.
   */
  private async createToken(slotHeld: boolean): Promise<AccessToken> {
    const answer = await this.json(
      {
        method: "POST",
        path: "create_token",
        route: "/create_token",
        auth: { authorization: this.auth.basicAuthorization },
        priority: true,
        slotHeld,
      },
      tokenResponseSchema,
      {},
      ["token"],
    );
    const { token, expires_in: expiresInS } = answer.value;
    this.auth.remember(token);
    return {
      token,
      renewAtMs: answer.sentAtMs + expiresInS * 1000 - renewalMarginMs(expiresInS),
    };
  }

  /** A GET with the access token, its answer validated with `schema`. */
  private get<S extends z.ZodType>(path: string, route: string, schema: S, call?: CallOptions) {
    return this.json({ method: "GET", path, route, auth: "bearer" }, schema, call);
  }

  /**
   * One JSON request, validated; `secretMembers` become secrets first, so no message quotes them.
   */
  private json<S extends z.ZodType>(
    spec: RequestSpec,
    schema: S,
    call: CallOptions = {},
    secretMembers?: readonly string[],
  ): Promise<Answered<z.infer<S>>> {
    const { maxAnswerBytes } = this.limits;
    return this.requester.run(
      spec,
      async (exchange, { endpoint, head }) => {
        const source = { endpoint, status: head.statusCode };
        const body = await exchange.readBody(maxAnswerBytes);
        if (body.over) {
          const why = `more than ${maxAnswerBytes} bytes (API_MAX_ANSWER_BYTES)`;
          throw invalidResponse(why, false, "", source);
        }
        if (secretMembers) registerSecretMembers(body.text, secretMembers);
        const parsed = parseJson(body.text, schema, source);
        if (parsed instanceof ApiError) throw parsed;
        return parsed;
      },
      call,
    );
  }
}
