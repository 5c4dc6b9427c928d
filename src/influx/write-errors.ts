import { parseRetryAfter } from "../util/retry-delay.js";

/** Why a write to InfluxDB failed, classified once (as Telegraf's InfluxDB v2 output does). */
export type InfluxWriteErrorCode =
  | "auth_failed" // 401, 403: fatal, fix the token
  | "bucket_not_found" // 404: fatal, fix the bucket
  | "bad_data" // 400, 422, or one line over the size limit: that chunk fails, the rest goes on
  | "unavailable"; // 429, 5xx, timeouts, network: retried, then this

/** A write that did not happen; nothing of the failed batch is reported as written. */
export class InfluxWriteError extends Error {
  constructor(
    message: string,
    readonly code: InfluxWriteErrorCode,
    readonly status?: number,
    /** True when no later attempt can succeed without a change by the operator. */
    readonly fatal = code === "auth_failed" || code === "bucket_not_found",
  ) {
    super(message);
    this.name = "InfluxWriteError";
  }
}

const EXCERPT_CHARS = 200;

/** The first characters of a text on one line. */
export function excerptOf(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > EXCERPT_CHARS ? `${oneLine.slice(0, EXCERPT_CHARS)}…` : oneLine;
}

/** What a failed InfluxDB request tells: status, body message, Retry-After, transport code. */
export interface InfluxFailure {
  readonly status?: number;
  readonly message: string;
  readonly retryAfterMs?: number;
}

/** Reads what a thrown error of @influxdata/influxdb-client says, without trusting its type. */
export function readInfluxFailure(error: unknown): InfluxFailure {
  const get = (key: string): unknown =>
    error && typeof error === "object" ? (error as Record<string, unknown>)[key] : undefined;
  const status = typeof get("statusCode") === "number" ? (get("statusCode") as number) : undefined;
  const json = get("json");
  const jsonMessage =
    json && typeof json === "object" && typeof (json as { message?: unknown }).message === "string"
      ? (json as { message: string }).message
      : undefined;
  const body = typeof get("body") === "string" ? (get("body") as string) : undefined;
  const code = typeof get("code") === "string" ? (get("code") as string) : undefined;
  const text =
    jsonMessage ?? (body ? excerptOf(body) : undefined) ?? String(get("message") ?? error);
  const headers = get("headers");
  const header =
    headers && typeof headers === "object"
      ? (headers as Record<string, unknown>)["retry-after"]
      : undefined;
  const retryAfterMs = parseRetryAfter(typeof header === "string" ? header : undefined, Date.now());
  return {
    status,
    message: code && status === undefined ? `${code}: ${text}` : text,
    retryAfterMs,
  };
}

/** 401/403: the token is wrong or may not write to the bucket. */
export function tokenRefused(status: number, bucket: string): InfluxWriteError {
  return new InfluxWriteError(
    `InfluxDB refused the token (HTTP ${status}): check INFLUX_TOKEN and its write permission on bucket ${bucket}`,
    "auth_failed",
    status,
  );
}

/** 404 on write: the bucket (or 1.8 database) does not exist. */
export function bucketMissing(bucket: string, message: string): InfluxWriteError {
  return new InfluxWriteError(
    `InfluxDB has no bucket ${bucket} (HTTP 404: ${excerptOf(message)}): create it or fix ` +
      "INFLUX_BUCKET and INFLUX_ORG (on InfluxDB 1.8: database[/retention-policy])",
    "bucket_not_found",
    404,
  );
}
