import type { Logger } from "pino";
import { Deadline } from "../retry/deadline.js";
import { computeRetryDelay, type RetryPolicy } from "../retry/retry-policy.js";
import { type Attempted, retrying } from "../retry/retrying.js";
import { implausibleDate } from "./api-clock.js";
import type { ApiAuth, RequestAuth } from "./auth.js";
import {
  ApiError,
  abortedError,
  classifyStatus,
  classifyTransportError,
  deadlineError,
  notSentTwice,
  retryAfterOverCap,
  tokenRefusedAgain,
} from "./errors.js";
import type { Exchange, HttpTransport, Outgoing, ResponseHead } from "./transport.js";

/** Default of API_DEADLINE_MS: 15 minutes, above the Retry-After cap. */
export const DEFAULT_DEADLINE_MS = 900_000;

/**
 * Renewals of the access token one request makes after 401 answers (not retries): a token can
 * expire again while a request waits; an API that refuses every fresh token is not helped by more.
 */
export const MAX_TOKEN_RENEWALS_PER_REQUEST = 3;

/** Most of an error body read (64 KiB); the rest is not read at all. */
const ERROR_BODY_BYTES = 64 * 1024;

/** One request to the API: what is sent (but the headers), how it is paced and retried. */
export interface RequestSpec extends Omit<Outgoing, "headers"> {
  /** Path with placeholders, for metrics and logs (`/data/{device}/{resource}`). */
  readonly route: string;
  readonly auth: RequestAuth;
  /** Served before ordinary requests by the rate gate (POST /create_token). */
  readonly priority?: boolean;
  /** The first attempt uses a rate-gate slot its caller already holds. */
  readonly slotHeld?: boolean;
  /** Must not reach the server twice (POST /set_password): retried only when nothing was sent. */
  readonly sendOnce?: boolean;
}

export interface Answered<T> {
  readonly value: T;
  /** HTTP attempts the request took (retries included). */
  readonly requests: number;
  /** The API's clock at the answer (its `Date` header), epoch ms; undefined without one. */
  readonly serverTimeMs?: number;
  /** The local clock (epoch ms) when the answered attempt was sent. */
  readonly sentAtMs: number;
}

/**
 * Reads a 2xx answer into the request's value. An ApiError it throws fails the attempt (retried
 * when retryable); any other error is the caller's own and ends the request at once.
 */
export type ReadAnswer<T> = (
  exchange: Exchange,
  /** `endpoint`: the request in messages (`GET /data/dev/res`). */
  context: { readonly endpoint: string; readonly head: ResponseHead },
) => Promise<T>;

/** Paces requests: waits for a slot, pauses after a 429. */
export interface RequestGate {
  /** Resolves when a request may be sent; `priority`: before ordinary waiters. */
  take(options?: { readonly signal?: AbortSignal; readonly priority?: boolean }): Promise<void>;
  pause(ms: number): void;
}

/** One HTTP attempt, as {@link ApiTelemetry.attemptEnded} is told it. */
export interface AttemptInfo {
  /** Endpoint with placeholders, e.g. `GET /data/{device}/{resource}` (low cardinality). */
  readonly route: string;
  /** HTTP status, or undefined when no answer came. */
  readonly status?: number;
  /** Error code when the attempt failed (an ApiErrorCode), or `abandoned` (the caller gave up). */
  readonly code?: string;
  readonly durationMs: number;
}

/** Where the API's attempts are counted (the service's metrics), where they happen. */
export interface ApiTelemetry {
  attemptSent(route: string): void;
  /** An attempt ended: exactly once per attempt sent, however it ended. */
  attemptEnded(attempt: AttemptInfo): void;
  /** A failed attempt is retried after `delayMs`. */
  retried(retry: { readonly route: string; readonly code: string; readonly delayMs: number }): void;
}

export interface CallOptions {
  /** Ends the call at once, whatever it waits for: it fails with code `aborted`. */
  readonly signal?: AbortSignal;
}

export interface ApiRequesterOptions {
  readonly transport: HttpTransport;
  readonly auth: ApiAuth;
  readonly retry: RetryPolicy;
  readonly deadlineMs: number;
  /** Paces every HTTP attempt (the pipeline's rate limit); paused after a 429. */
  readonly gate?: RequestGate;
  /** Where attempts and retries are counted (the service's metrics). */
  readonly telemetry?: ApiTelemetry;
  readonly logger: Logger;
  readonly now: () => number;
  /** Random source of the retry jitter (default Math.random). */
  readonly random?: () => number;
  /** Waits between retries (default a timer, ended on abort); tests count delays with it. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * The one level at which API requests are retried. Before each attempt: the rate gate's slot,
 * then the access token (neither counted against the deadline); a 401 renews the token. The pause
 * after a 429 and the attempt's telemetry are taken here, where each result arrives.
 */
export class ApiRequester {
  private readonly shutdown = new AbortController();
  private readonly lastRetryWarnMs = new Map<string, number>();

  constructor(private readonly options: ApiRequesterOptions) {}

  /** Ends every request at once, with code `aborted`; later ones fail at once too. */
  abort(reason: string): void {
    if (!this.shutdown.signal.aborted) this.shutdown.abort(reason);
  }

  get aborted(): boolean {
    return this.shutdown.signal.aborted;
  }

  /** The error a request gets after {@link abort}. */
  abortedError(endpoint: string): ApiError {
    const reason = String(this.shutdown.signal.reason ?? "the API client was shut down");
    return abortedError(endpoint, reason, 0);
  }

  /** Runs a request until an attempt is answered and read, or the failure is final. */
  async run<T>(
    spec: RequestSpec,
    read: ReadAnswer<T>,
    call: CallOptions = {},
  ): Promise<Answered<T>> {
    const endpoint = `${spec.method} /${spec.path}`;
    if (this.aborted) throw this.abortedError(endpoint);
    const { options } = this;
    const deadline = new Deadline(options.deadlineMs, options.now, [
      this.shutdown.signal,
      call.signal,
    ]);
    const route = `${spec.method} ${spec.route}`;
    const slotHeld = spec.slotHeld === true;
    const state: RequestState = { endpoint, route, deadline, attempts: 0, renewals: 0, slotHeld };
    try {
      return await retrying<Answered<T>, ApiError>(
        async () => {
          const outcome = await this.attempt(spec, read, state);
          if (outcome.ok || !("failure" in outcome)) return outcome;
          // a request that must not arrive twice is retried only when it surely never arrived
          state.lastFailure = spec.sendOnce ? notSentTwice(outcome.failure) : outcome.failure;
          return { ok: false, failure: state.lastFailure };
        },
        {
          policy: options.retry,
          deadline,
          random: options.random,
          sleep: options.sleep,
          giveUp: (failure, why) => this.finalError(failure, why, state),
          beforeRetry: (failure, delayMs, retry) =>
            this.beforeRetry(state, failure, delayMs, retry),
        },
      );
    } catch (error) {
      throw deadline.signal.aborted ? this.endedError(state) : error;
    } finally {
      deadline.finish();
    }
  }

  /** One attempt: slot, token, send, read; its failure classified. */
  private async attempt<T>(
    spec: RequestSpec,
    read: ReadAnswer<T>,
    state: RequestState,
  ): Promise<Attempted<Answered<T>, ApiError>> {
    const { options } = this;
    const { endpoint, route, deadline } = state;
    if (deadline.signal.aborted) throw deadline.signal.reason;
    if (!state.slotHeld && options.gate) {
      await deadline.waitFor(
        options.gate.take({ signal: deadline.signal, priority: spec.priority }),
      );
    }
    state.slotHeld = false;
    const token = spec.auth === "bearer" ? await this.tokenAfterSlot(deadline) : undefined;
    state.attempts++;
    const sentAtMs = options.now();
    options.telemetry?.attemptSent(route);
    let status: number | undefined;
    let code: string | undefined = "abandoned";
    deadline.resume();
    const headers = options.auth.headersFor(spec.auth, token);
    const exchange = options.transport.open({ ...spec, headers }, deadline.signal, endpoint);
    try {
      const head = await exchange.head;
      status = head.statusCode;
      if (status < 200 || status >= 300) {
        // the status says what happened, even when its body cannot be read
        const { text } = await exchange.readBody(ERROR_BODY_BYTES).catch(() => ({ text: "" }));
        const retryAfter = head.headers["retry-after"];
        const failure = classifyStatus(endpoint, status, text, retryAfter, options.now());
        code = failure.code;
        return this.failed(failure, token, state);
      }
      const badClock = clockFailure(endpoint, head);
      if (badClock !== undefined) {
        code = badClock.code;
        return { ok: false, failure: badClock };
      }
      const value = await read(exchange, { endpoint, head });
      code = undefined;
      options.logger.debug({ endpoint, status, ms: options.now() - sentAtMs }, "api response");
      const { serverTimeMs } = head;
      return { ok: true, value: { value, requests: state.attempts, sentAtMs, serverTimeMs } };
    } catch (error) {
      if (deadline.signal.aborted) throw deadline.signal.reason;
      if (error instanceof ApiError) {
        code = error.code;
        return { ok: false, failure: error };
      }
      // after the head, what is not an ApiError is the caller's own (its body errors are ApiErrors)
      if (status !== undefined) throw error;
      const failure = classifyTransportError(endpoint, error);
      code = failure.code;
      return { ok: false, failure };
    } finally {
      deadline.suspend();
      exchange.close();
      options.telemetry?.attemptEnded({
        route,
        status,
        code,
        durationMs: options.now() - sentAtMs,
      });
    }
  }

  /** A refused answer: renew a refused token (not a retry) or hand the failure to the policy. */
  private failed<T>(
    failure: ApiError,
    token: string | undefined,
    state: RequestState,
  ): Attempted<Answered<T>, ApiError> {
    const { endpoint } = state;
    if (token === undefined || failure.status !== 401) return { ok: false, failure };
    this.options.auth.refused(token);
    if (state.renewals >= MAX_TOKEN_RENEWALS_PER_REQUEST) {
      return { ok: false, failure: tokenRefusedAgain(endpoint, failure, state.renewals) };
    }
    state.renewals++;
    this.options.logger.info(
      { endpoint, renewals: state.renewals },
      "access token refused, renewing it",
    );
    return { ok: false, again: true };
  }

  /**
   * The access token, read once the request holds its slot: the current one, else a renewal. A
   * renewal this request starts uses its slot, and the request then takes the next slot (ahead of
   * the queue), so a renewal never adds a burst of requests.
   */
  private async tokenAfterSlot(deadline: Deadline): Promise<string> {
    const { auth, gate } = this.options;
    const valid = auth.currentToken();
    if (valid !== undefined) return valid;
    const renewal = auth.refresh(gate !== undefined);
    const fresh = await deadline.waitFor(renewal.token);
    if (renewal.started && gate) {
      await deadline.waitFor(gate.take({ signal: deadline.signal, priority: true }));
    }
    return auth.currentToken() ?? fresh;
  }

  /** Before a backoff: the gate paused after a 429, one warning per kind a minute, telemetry. */
  private beforeRetry(state: RequestState, failure: ApiError, delayMs: number, retry: number) {
    const { code, status } = failure;
    if (code === "rate_limited") this.options.gate?.pause(delayMs);
    const level = this.repeated(code, status) ? "debug" : "warn";
    this.options.logger[level](
      { endpoint: state.endpoint, code, status, attempt: retry, delayMs },
      "request failed, retrying",
    );
    this.options.telemetry?.retried({ route: state.route, code, delayMs });
  }

  /** The error of a request the policy gave up on. */
  private finalError(
    failure: ApiError,
    why: { readonly reason: string; readonly delayMs?: number },
    state: RequestState,
  ): ApiError {
    const { endpoint, attempts } = state;
    if (why.reason === "past-deadline") {
      const waitMs = why.delayMs ?? 0;
      return deadlineError(endpoint, state.deadline.budgetMs, attempts, failure, { waitMs });
    }
    if (why.reason === "retry-after-over-cap") {
      const { retry, gate, random } = this.options;
      // a 429 still says "too fast": pause, but only for an ordinary backoff
      if (failure.code === "rate_limited") {
        gate?.pause(computeRetryDelay(attempts, retry, undefined, random));
      }
      return retryAfterOverCap(endpoint, failure, retry.retryAfterMaxMs, attempts);
    }
    return failure.withMessage(failure.message, { attempts });
  }

  /** The error of a request ended from outside: the deadline passed, or it was aborted. */
  private endedError({ endpoint, deadline, attempts, lastFailure }: RequestState): ApiError {
    const cause = deadline.endCause;
    if (cause?.kind === "aborted") return abortedError(endpoint, cause.reason, attempts);
    return deadlineError(endpoint, deadline.budgetMs, attempts, lastFailure);
  }

  /** True when a retry of this kind (code, status) was reported within the last minute. */
  private repeated(code: string, status: number | undefined): boolean {
    const key = `${code}:${status ?? ""}`;
    const now = this.options.now();
    const last = this.lastRetryWarnMs.get(key);
    if (last !== undefined && now - last < 60_000) return true;
    this.lastRetryWarnMs.set(key, now);
    return false;
  }
}

/** A request's bookkeeping across its attempts (`endpoint` in messages, `route` in metrics). */
interface RequestState {
  readonly endpoint: string;
  readonly route: string;
  readonly deadline: Deadline;
  attempts: number;
  renewals: number;
  slotHeld: boolean;
  lastFailure?: ApiError;
}

/** A 2xx answer whose `Date` is before 2000 (api-clock.ts): no window is planned by it. */
function clockFailure(endpoint: string, head: ResponseHead): ApiError | undefined {
  const why = implausibleDate(head.headers.date);
  if (why === undefined) return undefined;
  const status = head.statusCode;
  return new ApiError(`${endpoint}: ${why}`, {
    code: "invalid_response",
    endpoint,
    status,
    retryable: false,
  });
}
