import { ApiError } from "../api/errors.js";
import { InfluxWriteError } from "../influx/write-errors.js";
import { StateError } from "../state/state-error.js";

/**
 * A failure that no retry or other device can get past: InfluxDB's token or bucket, a write
 * aborted by a shutdown, or the state database.
 */
export function isFatal(error: unknown): boolean {
  return (error instanceof InfluxWriteError && error.fatal) || error instanceof StateError;
}

/**
 * A failure that belongs to the chunk itself and will not heal by waiting (the API refused that
 * request, answered it in a shape it will answer again, InfluxDB refused the write as such), as
 * opposed to a dependency that is down or slow (network, timeouts, 5xx, 429, InfluxDB
 * unavailable, a shutdown).
 */
export function failsOnItsOwn(error: unknown): boolean {
  if (error instanceof ApiError) {
    return (
      error.code === "request_rejected" ||
      error.code === "not_found" ||
      error.code === "request_over_limit" ||
      (error.code === "invalid_response" && !error.retryable)
    );
  }
  return error instanceof InfluxWriteError && error.code === "bad_data";
}

/** True when our own abort() ended it (a shutdown), not the API or InfluxDB. */
export function isAbort(error: unknown): boolean {
  return (
    (error instanceof ApiError && error.code === "aborted") ||
    (error instanceof InfluxWriteError && error.aborted)
  );
}

/**
 * True when a failure is only our own shutdown cutting work short: the work is simply not done
 * (fetched again next time), no failure to record, count or report.
 */
export function cutByShutdown(error: unknown, stopping: boolean): boolean {
  return stopping && (isAbort(error) || !isFatal(error));
}
