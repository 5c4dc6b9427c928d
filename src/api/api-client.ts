import type { Logger } from "pino";
import { DEFAULT_RETRY_AFTER_MAX_MS, type RetryPolicy } from "../retry/retry-policy.js";
import { ApiClock } from "./api-clock.js";
import {
  type Answered,
  ApiRequester,
  type ApiTelemetry,
  type CallOptions,
  DEFAULT_DEADLINE_MS,
  type RequestGate,
} from "./api-request.js";
import { ApiAuth } from "./auth.js";
import { type DataLimits, type DataQuery, DEFAULT_DATA_LIMITS, fetchData } from "./data-stream.js";
import { ApiEndpoints } from "./endpoints.js";
import type { DevicesResponse, ResourcesResponse, ValuesResponse } from "./schemas.js";
import { renewalMarginMs } from "./token-provider.js";
import { HttpTransport, SLOW_NOTICE_MS } from "./transport.js";

/** What the client needs to reach and authenticate with the API. */
export interface ApiClientOptions {
  /** Base address of the API (spec: {base_url}). */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly user: string;
  readonly password: string;
  /**
   * Timeout of one HTTP attempt's waits (API_TIMEOUT_MS): connecting, the answer's head, and each
   * next part of its body.
   */
  readonly timeoutMs: number;
  /** After this long without an answer's head, say what is waited for (default 2 s). */
  readonly slowNoticeMs?: number;
  /**
   * Deadline of one request as a whole (API_DEADLINE_MS, default 15 min): every attempt, backoff
   * and Retry-After wait; not the rate gate, the token, nor the caller's time on a page. When it
   * passes, the attempt in flight is aborted and the request fails with code `timeout`.
   */
  readonly deadlineMs?: number;
  /** Longest Retry-After honoured (API_RETRY_AFTER_MAX, default 10 min). */
  readonly retryAfterMaxMs?: number;
  readonly retry: Omit<RetryPolicy, "retryAfterMaxMs">;
  /** Size caps of GET /data answers (defaults {@link DEFAULT_DATA_LIMITS}). */
  readonly dataLimits?: DataLimits;
  readonly logger: Logger;
  /** Paces every HTTP attempt (the pipeline's rate limit); told about 429s and successes. */
  readonly gate?: RequestGate;
  /** Where attempts and retries are counted (the service's metrics). */
  readonly telemetry?: ApiTelemetry;
  /** Now as the API sees it, told every answer's `Date` (default: one of its own). */
  readonly clock?: ApiClock;
  /** Clock in epoch ms (default Date.now). */
  readonly now?: () => number;
  /** Random source of the retry jitter (default Math.random). */
  readonly random?: () => number;
  /** Waits between retries (default a timer, ended on abort); tests count delays with it. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * Client of the Energy Monitoring Data API: every endpoint of spec sections 4 and 5. Composes
 * the transport (HTTP), the auth (credentials and the access token), the requester (the one
 * retry level, pacing, deadlines), the JSON endpoints and the data stream. Every result carries
 * how many requests it took and the API's clock; {@link clock} keeps the latest.
 */
export class ApiClient {
  /** Now as the API sees it (every answer's `Date`). */
  readonly clock: ApiClock;
  private readonly requester: ApiRequester;
  private readonly endpoints: ApiEndpoints;
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
    this.endpoints = new ApiEndpoints(this.requester, this.limits.maxAnswerBytes);
  }

  /**
   * Ends every request of this client at once, with code `aborted` (for shutdown); every later
   * call fails at once the same way. `reason` goes into the messages (the first one stays).
   */
  abort(reason = "the API client was shut down"): void {
    this.requester.abort(reason);
  }

  /** True once {@link abort} was called. */
  get aborted(): boolean {
    return this.requester.aborted;
  }

  /** GET /devices (spec 4.1). */
  listDevices(call?: CallOptions): Promise<Answered<DevicesResponse>> {
    return this.endpoints.listDevices(call);
  }

  /** GET /<device_id>/resources (spec 4.2). */
  listResources(deviceId: string, call?: CallOptions): Promise<Answered<ResourcesResponse>> {
    return this.endpoints.listResources(deviceId, call);
  }

  /** GET /<device_id>/<resource_id>/values (spec 4.3). */
  listValues(
    deviceId: string,
    resourceId: string,
    call?: CallOptions,
  ): Promise<Answered<ValuesResponse>> {
    return this.endpoints.listValues(deviceId, resourceId, call);
  }

  /** GET /data (spec 4.4): the whole answer, retried here until it came whole (see {@link fetchData}). */
  data(query: DataQuery, options?: CallOptions) {
    return fetchData(this.requester, this.limits, query, options);
  }

  /** POST /set_password (spec 5.1); never sent twice. */
  setPassword(user: string, otp: string, password: string, call?: CallOptions): Promise<void> {
    return this.endpoints.setPassword(user, otp, password, call);
  }

  /** A valid access token, obtained or renewed as needed (proves the credentials work). */
  accessToken(): Promise<string> {
    if (this.aborted) return Promise.reject(this.requester.abortedError("POST /create_token"));
    return this.auth.token();
  }

  /** POST /create_token; the token's renewal time counts from when its attempt was sent. */
  private async createToken(slotHeld: boolean) {
    const answer = await this.endpoints.createToken(this.auth.basicAuthorization, slotHeld);
    const { token, expires_in: expiresInS } = answer.value;
    this.auth.remember(token);
    return {
      token,
      renewAtMs: answer.sentAtMs + expiresInS * 1000 - renewalMarginMs(expiresInS),
    };
  }
}
