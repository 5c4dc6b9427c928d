import { InfluxDB } from "@influxdata/influxdb-client";
import { messageOf } from "../util/errors.js";
import { excerpt } from "../util/text.js";
import { clampTimerMs, linkedSignal } from "../util/timers.js";
import {
  abortedError,
  type BucketTarget,
  bucketMissing,
  formatSeconds,
  InfluxWriteError,
  readInfluxFailure,
  tokenRefused,
  writeNotFound,
} from "./write-errors.js";

/** The connection settings the start-up check needs. */
export interface InfluxTarget extends BucketTarget {
  readonly url: string;
  readonly token: string;
  readonly org: string;
  /** Timeout of one request: the check's as a whole, a write's wait for each part of its answer. */
  readonly timeoutMs: number;
}

/**
 * Start-up and readiness check in ONE request: a write of zero lines to `/api/v2/write`, which
 * InfluxDB 1.8, 2.x and 3.x answer 204 after checking the token and the bucket (1.x before 1.8
 * answers 404 with its version). Bounded by `timeoutMs` as a whole; `signal` ends it at once.
 * Each failure is an InfluxWriteError with a one-line message that says what to fix.
 */
export async function checkInflux(target: InfluxTarget, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw checkAborted(signal);
  const influx = new InfluxDB({ url: target.url, token: target.token, timeout: target.timeoutMs });
  const unreachable = (why: string) =>
    new InfluxWriteError(
      `InfluxDB at ${target.url} is not reachable (${why}): check INFLUX_URL and that InfluxDB is running`,
      "unavailable",
    );
  const timeout = AbortSignal.timeout(clampTimerMs(target.timeoutMs));
  // the caller's signal may be long-lived (the writer's shutdown): linked until the check ends
  const ended = linkedSignal([timeout, signal]);
  const query = new URLSearchParams({ org: target.org, bucket: target.bucket, precision: "s" });
  try {
    await influx.transport.request(`/api/v2/write?${query}`, "", {
      method: "POST",
      headers: { "content-type": "text/plain; charset=utf-8" },
      signal: ended.signal,
    });
  } catch (error) {
    if (signal?.aborted) throw checkAborted(signal);
    if (timeout.aborted) throw unreachable(`no answer within ${formatSeconds(target.timeoutMs)} s`);
    const failure = readInfluxFailure(error);
    const { status } = failure;
    if (status === 401 || status === 403) throw tokenRefused(status, target.bucket);
    if (bucketMissing(failure)) throw writeNotFound(target, failure);
    if (status === undefined) throw unreachable(excerpt(failure.message));
    throw new InfluxWriteError(
      `InfluxDB at ${target.url} failed the write check (HTTP ${status}: ${excerpt(failure.message)})`,
      "unavailable",
      status,
    );
  } finally {
    ended.release();
  }
}

function checkAborted(signal: AbortSignal | undefined): InfluxWriteError {
  const reason: unknown = signal?.reason;
  if (reason instanceof InfluxWriteError) return reason;
  return abortedError(reason === undefined ? "InfluxDB check" : messageOf(reason));
}
