import { messageOf } from "../util/errors.js";
import { excerpt } from "../util/text.js";
import { clampTimerMs, linkedSignal } from "../util/timers.js";
import {
  type InfluxApi,
  type InfluxConnection,
  InfluxPingError,
  influxClient,
  writePath,
} from "./influx-connection.js";
import {
  abortedError,
  type BucketTarget,
  bucketMissing,
  credentialsRefused,
  formatSeconds,
  InfluxWriteError,
  readInfluxFailure,
  writeNotFound,
} from "./write-errors.js";

/**
 * The connection settings the start-up check needs; `timeoutMs` bounds the check as a whole and a
 * write's wait for each part of its answer.
 */
export interface InfluxTarget extends BucketTarget, InfluxConnection {
  readonly org: string;
  /** The write API, resolved (see resolveInfluxApi). */
  readonly api: InfluxApi;
}

/**
 * Start-up and readiness check in ONE request: a write of zero lines on `api`'s path, which
 * InfluxDB answers 204 after checking the credentials and the bucket (1.x on `/write`: 401, 404
 * `database not found`, 500 `retention policy not found`; 1.x before 1.8 answers 404 with its
 * version on `/api/v2/write`). Bounded by `timeoutMs` as a whole; `signal` ends it at once.
 * Each failure is an InfluxWriteError with a one-line message that says what to fix.
 */
export async function checkInflux(target: InfluxTarget, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw checkAborted(signal);
  const influx = influxClient(target);
  const unreachable = (why: string) => influxUnreachable(target, why);
  const timeout = AbortSignal.timeout(clampTimerMs(target.timeoutMs));
  // the caller's signal may be long-lived (the writer's shutdown): linked until the check ends
  const ended = linkedSignal([timeout, signal]);
  try {
    await influx.transport.request(writePath(target.api, target), "", {
      method: "POST",
      headers: { "content-type": "text/plain; charset=utf-8" },
      signal: ended.signal,
    });
  } catch (error) {
    if (signal?.aborted) throw checkAborted(signal);
    if (timeout.aborted) throw unreachable(`no answer within ${formatSeconds(target.timeoutMs)} s`);
    const failure = readInfluxFailure(error);
    const { status } = failure;
    if (status === 401 || status === 403) {
      throw credentialsRefused(target.api, status, target.bucket, target);
    }
    if (bucketMissing(failure)) throw writeNotFound(target.api, target, failure);
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

/**
 * No answer from InfluxDB at `target.url`: `why` a text, or the error (fetch's cause named); an
 * answer `/ping` gives that is not InfluxDB's (InfluxPingError) says so in its own words.
 */
export function influxUnreachable(
  target: { readonly url: string },
  why: unknown,
): InfluxWriteError {
  if (why instanceof InfluxPingError) return new InfluxWriteError(why.message, "unavailable");
  const cause: unknown = typeof why === "string" ? undefined : memberOf(why, "cause");
  const text = typeof why === "string" ? why : excerpt(messageOf(cause ?? why));
  return new InfluxWriteError(
    `InfluxDB at ${target.url} is not reachable (${text}): check INFLUX_URL and that InfluxDB is running`,
    "unavailable",
  );
}

function memberOf(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null && key in value
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

function checkAborted(signal: AbortSignal | undefined): InfluxWriteError {
  const reason: unknown = signal?.reason;
  if (reason instanceof InfluxWriteError) return reason;
  return abortedError(reason === undefined ? "InfluxDB check" : messageOf(reason));
}
