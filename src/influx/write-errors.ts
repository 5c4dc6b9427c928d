import { databaseAndPolicy } from "../config/values.js";
import { formatWait, parseRetryAfter } from "../retry/retry-policy.js";
import { counted, excerpt } from "../util/text.js";
import {
  apiOfVersion,
  credentialSettings,
  type InfluxApi,
  type InfluxConnection,
} from "./influx-connection.js";
import { quoteIdentifier } from "./influxql.js";

/**
 * Why a write to InfluxDB failed, classified once (as Telegraf's InfluxDB v2 output does);
 * `unavailable` also ends a write past its deadline or Retry-After cap, and every one after abort().
 */
export const WRITE_ERROR_CODES = [
  "auth_failed", // 401, 403: fatal, fix the token (or 1.x user and password)
  "bucket_not_found", // 404: fatal, fix the bucket
  "bad_data", // another 4xx (405, 415…): InfluxDB refused the request itself; that chunk fails
  "refused", // 400/413/422 for every line of a write, none taken (see refusedWhole): it fails
  "unavailable", // 429, 5xx, timeouts, network: retried, then this (see below)
] as const;

export type InfluxWriteErrorCode = (typeof WRITE_ERROR_CODES)[number];

/** A write that did not happen; nothing of the failed batch is reported as written. */
export class InfluxWriteError extends Error {
  constructor(
    message: string,
    readonly code: InfluxWriteErrorCode,
    readonly status?: number,
    /** True when no later attempt can succeed without a change by the operator. */
    readonly fatal = code === "auth_failed" || code === "bucket_not_found",
    /** True when abort() ended it (a shutdown), not InfluxDB. */
    readonly aborted = false,
  ) {
    super(message);
    this.name = "InfluxWriteError";
  }
}

/** A write or check ended by abort() (shutdown): fatal, so the pipeline takes no more work. */
export function abortedError(reason: string): InfluxWriteError {
  return new InfluxWriteError(`aborted: ${reason}`, "unavailable", undefined, true, true);
}

/** Milliseconds as seconds for messages: `300`, `1.5`, `0.001`. */
export function formatSeconds(ms: number): string {
  return String(Number((ms / 1000).toFixed(3)));
}

/** A line the server named in its answer as refused, with its reason. */
export interface NamedLineError {
  readonly line: string;
  readonly error: string;
}

/** What a failed InfluxDB request tells: status, body message, Retry-After, transport code. */
export interface InfluxFailure {
  readonly status?: number;
  /** The body's message in full (`message`, or `error` as InfluxDB 1.x and 3.x put it). */
  readonly message: string;
  readonly retryAfterMs?: number;
  /** The Retry-After header as the server sent it. */
  readonly retryAfter?: string;
  /** Lines the body names one by one (InfluxDB 3.x: `data[].original_line`). */
  readonly lineErrors?: readonly NamedLineError[];
  /** The server's `X-Influxdb-Version` header, when it sent one (InfluxDB 1.x always does). */
  readonly version?: string;
}

function memberOf(value: unknown, key: string): unknown {
  return value !== null && typeof value === "object"
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** Reads what a thrown error of @influxdata/influxdb-client says, without trusting its type. */
export function readInfluxFailure(error: unknown): InfluxFailure {
  const get = (key: string): unknown => memberOf(error, key);
  const statusCode = get("statusCode");
  const status = typeof statusCode === "number" ? statusCode : undefined;
  const json = get("json");
  const jsonMessage = stringOf(memberOf(json, "message")) ?? stringOf(memberOf(json, "error"));
  const body = stringOf(get("body"));
  const code = stringOf(get("code"));
  const text = jsonMessage ?? (body ? excerpt(body) : undefined) ?? String(get("message") ?? error);
  const retryAfter = stringOf(memberOf(get("headers"), "retry-after"));
  const version = stringOf(memberOf(get("headers"), "x-influxdb-version"));
  return {
    status,
    message: code && status === undefined ? `${code}: ${text}` : text,
    retryAfterMs: parseRetryAfter(retryAfter, Date.now()),
    retryAfter,
    lineErrors: lineErrorsOf(memberOf(json, "data")),
    ...(version === undefined ? {} : { version }),
  };
}

/** InfluxDB 3.x's `data: [{original_line, error_message}]`; undefined when absent or odd. */
function lineErrorsOf(data: unknown): NamedLineError[] | undefined {
  if (!Array.isArray(data)) return undefined;
  const errors: NamedLineError[] = [];
  for (const item of data as unknown[]) {
    const line = memberOf(item, "original_line");
    const error = stringOf(memberOf(item, "error_message")) ?? "rejected";
    if (typeof line === "string") errors.push({ line, error });
  }
  return errors.length > 0 ? errors : undefined;
}

const QUOTED = "unable to parse '";
const UNABLE_TO_PARSE = new RegExp(QUOTED, "gi");

/**
 * The lines of a batch that a 400/422 answer names as refused, each with its reason: InfluxDB
 * 1.x/2.x quote each (`unable to parse '<line>': <reason>`), 3.x lists them in `data`. Only exact
 * lines of the batch count; an empty map: the answer names none.
 */
export function namedRefusals(
  failure: InfluxFailure,
  batch: ReadonlySet<string>,
): Map<string, string> {
  const named = new Map<string, string>();
  for (const { line, error } of failure.lineErrors ?? []) {
    if (batch.has(line) && !named.has(line)) named.set(line, error);
  }
  const { message } = failure;
  const quotes = [...message.matchAll(UNABLE_TO_PARSE)].map((quote) => quote.index);
  if (quotes.length === 0) return named;
  // a line may itself hold "': " or "unable to parse '" (in a string field): each "': " up to
  // the batch's longest line is tried until a line of the batch matches
  let longest = 0;
  for (const line of batch) longest = Math.max(longest, line.length);
  // the end of the last line named: a quote inside it (in a string field) is no quote of its own
  let namedEnd = 0;
  for (const at of quotes) {
    if (at < namedEnd) continue;
    const start = at + QUOTED.length;
    for (
      let q = message.indexOf("': ", start);
      q !== -1 && q - start <= longest;
      q = message.indexOf("': ", q + 1)
    ) {
      const line = message.slice(start, q);
      if (!batch.has(line)) continue;
      // InfluxDB puts each quote on a line of its own (a line's own line breaks come before q)
      const eol = message.indexOf("\n", q);
      const reason = message.slice(q + 3, eol === -1 ? message.length : eol);
      const why = reason.replace(/\s*dropped=\d+\s*$/, "").trim();
      if (!named.has(line)) named.set(line, `unable to parse '${line}': ${why}`);
      namedEnd = q;
      break;
    }
  }
  return named;
}

/**
 * How many points a partial write dropped (1.x/2.x `... dropped=N`: beyond the retention policy,
 * a field type conflict), the others stored. Undefined without a count, or with unparsable lines
 * (not counted in `dropped`, and nothing of their batch was stored).
 */
export function droppedCount(failure: InfluxFailure): number | undefined {
  const { message } = failure;
  if (/unable to parse/i.test(message)) return undefined;
  const dropped = /\bdropped=(\d+)/.exec(message);
  return dropped === null ? undefined : Number(dropped[1]);
}

/** 401/403 on `api`: the credentials are wrong or may not write to the bucket (or database). */
export function credentialsRefused(
  api: InfluxApi,
  status: number,
  bucket: string,
  connection?: Pick<InfluxConnection, "token" | "username">,
): InfluxWriteError {
  const settings = credentialSettings(api, connection);
  const what = settings === "INFLUX_TOKEN" ? "the token" : "the user and password";
  const on = api === "v1" ? "database" : "bucket";
  return new InfluxWriteError(
    `InfluxDB refused ${what} (HTTP ${status}): check ${settings} and the write ` +
      `permission on ${on} ${bucket}`,
    "auth_failed",
    status,
  );
}

/** Where a write goes: the bucket and the setting that names it (default INFLUX_BUCKET). */
export interface BucketTarget {
  /** Bucket (InfluxDB 2.x/3.x) or `database[/retention-policy]` (1.x). */
  readonly bucket: string;
  /** For messages: INFLUX_BUCKET, or ROLLUP_BUCKET for the rollups' own. */
  readonly bucketSetting?: string;
}

/** A 404, or InfluxDB 1.x's 500 `retention policy not found`: the bucket is missing. */
export function bucketMissing(failure: InfluxFailure): boolean {
  return (
    failure.status === 404 ||
    (failure.status === 500 && /^retention policy not found/i.test(failure.message))
  );
}

/** 1.x's answer for a missing retention policy, and the policy it names (after the colon). */
const POLICY_NOT_FOUND = /retention policy not found(?::([^\n]*))?/i;

/**
 * The retention policy a 1.x write names: the bucket's, or the database's default as answered
 * (`answered`, what follows POLICY_NOT_FOUND's colon, if anything).
 */
function policyNamed(retentionPolicy: string | undefined, answered = ""): string {
  if (retentionPolicy !== undefined) return `retention policy ${retentionPolicy}`;
  const name = answered.trim();
  return name === "" ? "default retention policy" : `default retention policy ${name}`;
}

/**
 * The bucket (database, retention policy) is missing, or, on `v2` to an InfluxDB 1.x before 1.8
 * (by its version), /api/v2/write is: fatal either way.
 */
export function writeNotFound(
  api: InfluxApi,
  target: BucketTarget,
  failure: InfluxFailure,
): InfluxWriteError {
  const said = `HTTP ${failure.status ?? 404}: ${excerpt(failure.message)}`;
  const setting = target.bucketSetting ?? "INFLUX_BUCKET";
  const { database, retentionPolicy } = databaseAndPolicy(target.bucket);
  const policyMissing = POLICY_NOT_FOUND.exec(failure.message);
  const message =
    api === "v2" && apiOfVersion(failure.version) === "v1"
      ? `InfluxDB ${failure.version} has no /api/v2/write (${said}): set INFLUX_API=auto or v1`
      : api === "v2"
        ? `InfluxDB has no bucket ${target.bucket} (${said}): create it or fix ${setting} and ` +
          "INFLUX_ORG (on InfluxDB 1.8: database[/retention-policy])"
        : policyMissing
          ? `InfluxDB has no ${policyNamed(retentionPolicy, policyMissing[1])} on database ${database} ` +
            `(${said}): create it (CREATE RETENTION POLICY ... ON ${quoteIdentifier(database)}), ` +
            `fix ${setting}, or run \`energy-etl init\``
          : `database not found: create it (CREATE DATABASE ${quoteIdentifier(database)}) or ` +
            `run \`energy-etl init\` (${setting}=${target.bucket}; ${said})`;
  return new InfluxWriteError(message, "bucket_not_found", 404);
}

/** A write InfluxDB refused as a whole with a 4xx that is no other case (bad_data, final). */
export function writeRefused(message: string, status: number, lines: number): InfluxWriteError {
  return new InfluxWriteError(
    `InfluxDB refused a write of ${counted(lines, "line")} (HTTP ${status}: ${excerpt(message)})`,
    "bad_data",
    status,
  );
}

/**
 * InfluxDB took none of a write's lines and refused them for a reason that is not the lines' own
 * (a 413 at one line, every line refused): the write fails as a whole, nothing of it a dead letter.
 */
export function refusedWhole(failure: InfluxFailure, lines: number, why: string): InfluxWriteError {
  const said = `HTTP ${failure.status ?? "?"}: ${excerpt(failure.message)}`;
  return new InfluxWriteError(
    `InfluxDB refused a write of ${counted(lines, "line")} as a whole (${said}; ${why}): nothing of it is ` +
      "stored; check a proxy's body limit, the bucket's schema and retention, and INFLUX_BATCH_SIZE",
    "refused",
    failure.status,
  );
}

/** InfluxDB asked for a longer wait than INFLUX_RETRY_AFTER_MAX: the write fails now. */
export function retryAfterOverCap(
  failure: Pick<InfluxFailure, "status" | "retryAfterMs" | "retryAfter">,
  capMs: number,
  lines: number,
): InfluxWriteError {
  return new InfluxWriteError(
    `InfluxDB asked to wait ${formatWait(failure.retryAfterMs ?? 0)} (Retry-After: ` +
      `${excerpt(failure.retryAfter ?? "")}), more than INFLUX_RETRY_AFTER_MAX ` +
      `(${formatWait(capMs)}): the write of ${counted(lines, "line")} fails now`,
    "unavailable",
    failure.status,
  );
}

/** A write that did not finish within INFLUX_DEADLINE_MS, with the last failure seen. */
export function writeDeadlinePassed(deadlineMs: number, lastFailure?: string): InfluxWriteError {
  return new InfluxWriteError(
    `InfluxDB write did not finish within ${formatSeconds(deadlineMs)} s ` +
      `(INFLUX_DEADLINE_MS=${deadlineMs})` +
      (lastFailure ? `; last failure: ${excerpt(lastFailure)}` : ""),
    "unavailable",
  );
}
