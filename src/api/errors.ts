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
  | "request_over_limit"; // refused before sending: over spec 8's limits

export interface ApiErrorDetails {
  readonly code: ApiErrorCode;
  /** `GET /data/{device}/{resource}`-style name of the endpoint. */
  readonly endpoint: string;
  readonly status?: number;
  readonly retryable: boolean;
  /** How long the server asked us to wait (Retry-After), when it did. */
  readonly retryAfterMs?: number;
  /** A short excerpt of the response body, secrets removed. */
  readonly bodyExcerpt?: string;
  /** How many attempts were made before this error was final. */
  readonly attempts?: number;
}

/** Every failure of the API client is an ApiError with a stable `code`. */
export class ApiError extends Error implements ApiErrorDetails {
  readonly code: ApiErrorCode;
  readonly endpoint: string;
  readonly status?: number;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly bodyExcerpt?: string;
  readonly attempts?: number;

  constructor(message: string, details: ApiErrorDetails) {
    super(message);
    this.name = "ApiError";
    this.code = details.code;
    this.endpoint = details.endpoint;
    this.status = details.status;
    this.retryable = details.retryable;
    this.retryAfterMs = details.retryAfterMs;
    this.bodyExcerpt = details.bodyExcerpt;
    this.attempts = details.attempts;
  }

  /** The same error, marked with the number of attempts it took. */
  withAttempts(attempts: number): ApiError {
    const copy = new ApiError(this.message, { ...this.details(), attempts });
    copy.stack = this.stack;
    return copy;
  }

  private details(): ApiErrorDetails {
    return {
      code: this.code,
      endpoint: this.endpoint,
      status: this.status,
      retryable: this.retryable,
      retryAfterMs: this.retryAfterMs,
      bodyExcerpt: this.bodyExcerpt,
    };
  }
}

import { parseRetryAfter } from "../util/retry-delay.js";
import { excerpt } from "../util/text.js";

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

/** Classifies a non-2xx HTTP response into an ApiError. */
export function classifyStatus(
  endpoint: string,
  status: number,
  body: string,
  retryAfterHeader: string | undefined,
  nowMs: number,
): ApiError {
  const detail = body.trim() === "" ? "" : `: ${bodyMessage(body)}`;
  const bodyExcerpt = body.trim() === "" ? undefined : excerpt(body);
  const base = { endpoint, status, bodyExcerpt };
  if (status === 401 || status === 403) {
    return new ApiError(`${endpoint} refused the credentials (HTTP ${status})${detail}`, {
      ...base,
      code: "auth_failed",
      retryable: false,
    });
  }
  if (status === 429) {
    return new ApiError(`${endpoint} is rate limited (HTTP 429)${detail}`, {
      ...base,
      code: "rate_limited",
      retryable: true,
      retryAfterMs: parseRetryAfter(retryAfterHeader, nowMs),
    });
  }
  if (status >= 500) {
    return new ApiError(`${endpoint} failed on the server (HTTP ${status})${detail}`, {
      ...base,
      code: "server_error",
      retryable: true,
      retryAfterMs: parseRetryAfter(retryAfterHeader, nowMs),
    });
  }
  if (status === 404) {
    return new ApiError(`${endpoint} not found (HTTP 404)${detail}`, {
      ...base,
      code: "not_found",
      retryable: false,
    });
  }
  return new ApiError(`${endpoint} rejected the request (HTTP ${status})${detail}`, {
    ...base,
    code: "request_rejected",
    retryable: false,
  });
}

const TIMEOUT_CODES = new Set(["ETIMEDOUT", "ESOCKETTIMEDOUT"]);

/** Classifies a transport failure (no HTTP response) into an ApiError. */
export function classifyTransportError(endpoint: string, error: unknown): ApiError {
  const field = (key: string): string | undefined =>
    error && typeof error === "object" && key in error
      ? String((error as Record<string, unknown>)[key])
      : undefined;
  const code = field("code") ?? "UNKNOWN";
  const timedOut = TIMEOUT_CODES.has(code) || field("name") === "TimeoutError";
  const reason = field("message") ?? String(error);
  return new ApiError(`${endpoint} ${timedOut ? "timed out" : "failed"} (${code}): ${reason}`, {
    endpoint,
    code: timedOut ? "timeout" : "network",
    retryable: true,
  });
}
