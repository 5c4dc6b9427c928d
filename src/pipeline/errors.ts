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
 * InfluxDB refused a write whole (none of its lines taken): the resource's or job's other chunks
 * would be refused too, so none of them starts (fetched for nothing); the chunk is read again.
 */
export function isRefusal(error: unknown): boolean {
  return error instanceof InfluxWriteError && error.code === "refused";
}

/**
 * A failure of the chunk itself that will not heal by waiting (the API refused that request or
 * answers it in a bad shape, InfluxDB refused the write), not a dependency down or slow.
 */
export function failsOnItsOwn(error: unknown): boolean {
  if (error instanceof ApiError) {
    return (
      error.code === "request_rejected" ||
      error.code === "not_found" ||
      (error.code === "invalid_response" && !error.retryable)
    );
  }
  return error instanceof InfluxWriteError && error.code === "bad_data";
}

/** True when a failure is only our own shutdown cutting work short: nothing to record. */
export function cutByShutdown(error: unknown, stopping: boolean): boolean {
  // our own abort() ended it, not the API or InfluxDB
  const aborted =
    (error instanceof ApiError && error.code === "aborted") ||
    (error instanceof InfluxWriteError && error.aborted);
  return stopping && (aborted || !isFatal(error));
}
