import { scrubSecrets } from "../logger.js";
import { formatWait, parseRetryAfter } from "../retry/retry-policy.js";
import { counted, excerpt } from "../util/text.js";

/**
 * Errors of the API client, classified once at the HTTP boundary (spec section 7 leaves the error
 * statuses and bodies undocumented, so classification rests on the status alone).
 */

/** Stable error codes; callers branch on these, never on messages. */
export type ApiErrorCode =
  | "auth_failed" // 401, 403
  | "rate_limited" // 429
  | "server_error" // 5xx
  | "timeout"
  | "network" // connection refused, reset, dropped
  | "not_found" // 404: unknown device, resource or value
  | "request_rejected" // any other 4xx
  | "invalid_response" // 2xx whose body is not the documented shape
  | "aborted"; // ended by ApiClient.abort() (shutdown) or the caller's AbortSignal

/** What an {@link ApiError} carries besides its message: its own fields. */
export type ApiErrorDetails = Omit<ApiError, keyof Error | "withMessage">;

/** Every failure of the API client is an ApiError with a stable `code`. */
export class ApiError extends Error {
  declare readonly code: ApiErrorCode;
  /** `GET /data/{device}/{resource}`-style name of the endpoint. */
  declare readonly endpoint: string;
  declare readonly status?: number;
  declare readonly retryable: boolean;
  /** How long the server asked us to wait (Retry-After), when it did. */
  declare readonly retryAfterMs?: number;
  /** The Retry-After header as received, when there was one (for messages). */
  declare readonly retryAfterHeader?: string;
  /** A short excerpt of the response body, secrets removed. */
  declare readonly bodyExcerpt?: string;
  /** How many attempts were made before this error was final. */
  declare readonly attempts?: number;
  /** The request surely never reached the server: safe to retry even a send-once request. */
  declare readonly neverSent?: boolean;

  constructor(message: string, details: ApiErrorDetails) {
    super(message);
    this.name = "ApiError";
    Object.assign(this, details);
  }

  /** The same error with another message and details (a retryable error made final, saying why). */
  withMessage(message: string, details: Partial<ApiErrorDetails> = {}): ApiError {
    const copy = new ApiError(message, { ...this, ...details });
    copy.stack = this.stack;
    return copy;
  }
}

/** The message a JSON or text error body carries, if it carries one. */
function bodyMessage(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === "object") {
      for (const key of ["error", "message", "detail", "msg"]) {
        const value = (parsed as Record<string, unknown>)[key];
        if (typeof value === "string" && value !== "") return value;
      }
    }
  } catch {
    // not JSON: fall through to the text
  }
  return excerpt(body);
}

/**
 * Classifies a non-2xx HTTP response into an ApiError. Registered secrets are removed from the
 * body first (an API that echoes the request's headers must not put a token into a message).
 */
export function classifyStatus(
  endpoint: string,
  status: number,
  rawBody: string,
  retryAfterHeader: string | undefined,
  nowMs: number,
): ApiError {
  const body = scrubSecrets(rawBody);
  const detail = body.trim() === "" ? "" : `: ${bodyMessage(body)}`;
  const bodyExcerpt = body.trim() === "" ? undefined : excerpt(body);
  const [code, what, retryable] = statusKind(status);
  const retryAfter = retryable && {
    retryAfterMs: parseRetryAfter(retryAfterHeader, nowMs),
    retryAfterHeader: retryAfterHeader?.trim() || undefined,
  };
  return new ApiError(`${endpoint} ${what} (HTTP ${status})${detail}`, {
    code,
    endpoint,
    status,
    retryable,
    bodyExcerpt,
    ...retryAfter,
  });
}

/** A status's code, what it says of the endpoint, and whether it is worth a retry (429, 5xx). */
function statusKind(status: number): [ApiErrorCode, string, boolean] {
  if (status === 401 || status === 403) return ["auth_failed", "refused the credentials", false];
  if (status === 429) return ["rate_limited", "is rate limited", true];
  if (status >= 500) return ["server_error", "failed on the server", true];
  if (status === 404) return ["not_found", "not found", false];
  return ["request_rejected", "rejected the request", false];
}

const TIMEOUT_CODES = new Set(["ETIMEDOUT", "ESOCKETTIMEDOUT"]);

/** OpenSSL's messages when https:// meets a plain-HTTP server. */
const TLS_MISMATCH = /wrong version number|packet length too long|unknown protocol/i;

/** Failures that happen before a single byte of the request left: nothing reached the server. */
const NEVER_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN"]);

/** Classifies a transport failure (no HTTP response); `neverSent` when it surely did not arrive. */
export function classifyTransportError(endpoint: string, error: unknown): ApiError {
  const field = (key: string): string | undefined =>
    error && typeof error === "object" && key in error
      ? String((error as Record<string, unknown>)[key])
      : undefined;
  const code = field("code") ?? "UNKNOWN";
  const timedOut = TIMEOUT_CODES.has(code) || field("name") === "TimeoutError";
  const reason = scrubSecrets(field("message") ?? String(error));
  if (code === "EPROTO" || TLS_MISMATCH.test(reason)) {
    // OpenSSL's own words ("wrong version number") say nothing to an operator
    return new ApiError(
      `${endpoint} failed: the TLS handshake failed, so the server at that address does not ` +
        "speak https: use http:// in the URL (or check the port)",
      { endpoint, code: "network", retryable: false },
    );
  }
  return new ApiError(`${endpoint} ${timedOut ? "timed out" : "failed"} (${code}): ${reason}`, {
    endpoint,
    code: timedOut ? "timeout" : "network",
    retryable: true,
    neverSent: NEVER_SENT_CODES.has(code) || undefined,
  });
}

/** A request ended by a shutdown or its caller's signal. */
export function abortedError(endpoint: string, reason: string, attempts: number): ApiError {
  return new ApiError(`${endpoint} aborted: ${reason}`, {
    code: "aborted",
    endpoint,
    retryable: false,
    attempts,
  });
}

/** A request without a complete answer within API_DEADLINE_MS; `retry`: the wait it gave up on. */
export function deadlineError(
  endpoint: string,
  budgetMs: number,
  attempts: number,
  lastFailure: ApiError | undefined,
  retry?: { readonly waitMs: number },
): ApiError {
  const tried = `${attempts} attempt${attempts === 1 ? "" : "s"}`;
  const asked =
    lastFailure?.retryAfterHeader === undefined
      ? ""
      : ` (Retry-After: ${lastFailure.retryAfterHeader})`;
  const why =
    retry === undefined
      ? ""
      : `: the next retry would wait ${formatWait(retry.waitMs)}${asked}, past the deadline`;
  const last = lastFailure ? `; the last failure: ${lastFailure.message}` : "";
  const budget = Math.round(budgetMs / 100) / 10;
  return new ApiError(
    `${endpoint} got no complete answer within API_DEADLINE_MS (${budget} s) after ${tried}${why}${last}`,
    { code: "timeout", endpoint, retryable: false, attempts, status: lastFailure?.status },
  );
}

/** A 429 or 5xx asking for a longer wait than API_RETRY_AFTER_MAX: final. */
export function retryAfterOverCap(
  endpoint: string,
  failure: ApiError,
  capMs: number,
  attempts: number,
): ApiError {
  return failure.withMessage(
    `${endpoint} answered HTTP ${failure.status} asking to wait ` +
      `${formatWait(failure.retryAfterMs ?? 0)} (Retry-After: ${failure.retryAfterHeader}), ` +
      `longer than API_RETRY_AFTER_MAX (${formatWait(capMs)}): not retried. ${failure.message}`,
    { retryable: false, attempts },
  );
}

/** A request that must not arrive twice, failed after it may have arrived: final. */
export function notSentTwice(failure: ApiError): ApiError {
  if (failure.neverSent || !failure.retryable) return failure;
  return failure.withMessage(
    `${failure.message} (not retried: the request may have reached the server, and it must not arrive twice)`,
    { retryable: false },
  );
}

/** A 401 for every fresh token: the renewals are spent. */
export function tokenRefusedAgain(endpoint: string, failure: ApiError, renewals: number): ApiError {
  return failure.withMessage(
    `${endpoint} refused the access token (HTTP 401) even after renewing it ${counted(renewals, "time")} ` +
      `(POST /create_token gave new tokens, each was refused): ${failure.message}`,
    { retryable: false },
  );
}
