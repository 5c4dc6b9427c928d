/** The errors of a request that ended without an answer, in words that say what happened. */
import { formatWait } from "../retry/retry-policy.js";
import { ApiError } from "./errors.js";

/** A request ended by a shutdown or its caller's signal. */
export function abortedError(endpoint: string, reason: string, attempts: number): ApiError {
  return new ApiError(`${endpoint} aborted: ${reason}`, {
    code: "aborted",
    endpoint,
    retryable: false,
    attempts,
  });
}

/**
 * A request without a complete answer within API_DEADLINE_MS; `retry.waitMs`: the retry it gave
 * up on would have waited that long (with the failure's Retry-After, if it had one).
 */
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
    `${endpoint} refused the access token (HTTP 401) even after renewing it ${renewals} times ` +
      `(POST /create_token gave new tokens, each was refused): ${failure.message}`,
    { retryable: false },
  );
}
