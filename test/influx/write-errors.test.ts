/**
 * What a failed write to InfluxDB tells: unit tests of src/influx/write-errors.ts on the errors
 * @influxdata/influxdb-client really throws (its HttpError, built as it builds one from an
 * answer), with the answers InfluxDB 1.x, 2.x and 3.x give; the lines an answer names, the points
 * it counts as dropped. Every expected value is written out here by hand. The messages of the
 * errors a write ends with: write-errors-messages.test.ts.
 */
import { HttpError, RequestTimedOutError } from "@influxdata/influxdb-client";
import {
  abortedError,
  droppedCount,
  formatSeconds,
  type InfluxFailure,
  InfluxWriteError,
  type InfluxWriteErrorCode,
  namedRefusals,
  readInfluxFailure,
} from "../../src/influx/write-errors.js";

/** An answer as the client turns it into an error: status, body, content type, headers. */
function answer(
  status: number,
  body: string,
  contentType: string,
  headers: Record<string, string> = {},
): HttpError {
  return new HttpError(status, "Status", body, undefined, contentType, undefined, headers);
}

const json = (status: number, body: object, headers?: Record<string, string>): HttpError =>
  answer(status, JSON.stringify(body), "application/json", headers);

describe("InfluxWriteError", () => {
  it.each<[InfluxWriteErrorCode, boolean]>([
    ["auth_failed", true],
    ["bucket_not_found", true],
    ["bad_data", false],
    ["refused", false],
    ["unavailable", false],
  ])("%s is fatal: %s (only the operator can fix the credentials or the bucket)", (code, fatal) => {
    const error = new InfluxWriteError("m", code, 400);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: "InfluxWriteError", message: "m", code, status: 400 });
    expect(error.fatal).toBe(fatal);
    expect(error.aborted).toBe(false);
  });

  it("an abort (shutdown) ends the write as fatal and aborted, with the reason, no status", () => {
    const error = abortedError("SIGTERM");
    expect(error).toMatchObject({
      name: "InfluxWriteError",
      message: "aborted: SIGTERM",
      code: "unavailable",
      status: undefined,
      fatal: true,
      aborted: true,
    });
  });
});

describe("formatSeconds", () => {
  it.each([
    [300_000, "300"],
    [1500, "1.5"],
    [1, "0.001"],
    [0, "0"],
    [1234.5678, "1.235"],
  ])("%d ms is %s s", (ms, text) => {
    expect(formatSeconds(ms)).toBe(text);
  });
});

describe("readInfluxFailure", () => {
  it("InfluxDB 2.x: the body's message, its Retry-After and version; the code is not prefixed", () => {
    const error = json(
      429,
      { code: "too many requests", message: "org exceeded its write limit" },
      { "retry-after": "30", "x-influxdb-version": "v2.7.4" },
    );
    expect(readInfluxFailure(error)).toStrictEqual({
      status: 429,
      message: "org exceeded its write limit",
      retryAfterMs: 30_000,
      retryAfter: "30",
      lineErrors: undefined,
      version: "v2.7.4",
    });
  });

  it("InfluxDB 1.x: the body's `error`, the version header", () => {
    const error = json(
      400,
      { error: "partial write: points beyond retention policy dropped=2" },
      { "x-influxdb-version": "1.8.10" },
    );
    expect(readInfluxFailure(error)).toStrictEqual({
      status: 400,
      message: "partial write: points beyond retention policy dropped=2",
      retryAfterMs: undefined,
      retryAfter: undefined,
      lineErrors: undefined,
      version: "1.8.10",
    });
  });

  it("InfluxDB 3.x: the lines `data` names with their reasons, `rejected` without one; no version key without the header", () => {
    const error = json(400, {
      error: "partial write of line protocol occurred",
      data: [
        { original_line: "m v=1 1", line_number: 1, error_message: "invalid column type for v" },
        { original_line: "m v=2 2", line_number: 2 },
        { line_number: 3, error_message: "no line given" },
        { original_line: 4, error_message: "a line that is no text" },
      ],
    });
    expect(readInfluxFailure(error)).toStrictEqual({
      status: 400,
      message: "partial write of line protocol occurred",
      retryAfterMs: undefined,
      retryAfter: undefined,
      lineErrors: [
        { line: "m v=1 1", error: "invalid column type for v" },
        { line: "m v=2 2", error: "rejected" },
      ],
    });
  });

  it.each([
    ["an empty list", []],
    ["no line in it", [{ line_number: 1, error_message: "x" }]],
    ["not a list", { original_line: "m v=1 1" }],
  ])("InfluxDB 3.x `data` with %s names no line", (_, data) => {
    const failure = readInfluxFailure(json(400, { error: "bad", data }));
    expect(failure.lineErrors).toBeUndefined();
    expect(failure.message).toBe("bad");
  });

  it("a text answer (a proxy's page): its body on one line, not the client's summary", () => {
    const error = answer(502, "Bad Gateway\n  upstream   closed\n", "text/html");
    expect(readInfluxFailure(error)).toStrictEqual({
      status: 502,
      message: "Bad Gateway upstream closed",
      retryAfterMs: undefined,
      retryAfter: undefined,
      lineErrors: undefined,
    });
  });

  it("a network error: its code before its message, no status", () => {
    const error = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:8086"), {
      code: "ECONNREFUSED",
    });
    expect(readInfluxFailure(error)).toStrictEqual({
      status: undefined,
      message: "ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:8086",
      retryAfterMs: undefined,
      retryAfter: undefined,
      lineErrors: undefined,
    });
  });

  it("the client's timeout: its message alone, not `Error: …`", () => {
    const failure = readInfluxFailure(new RequestTimedOutError());
    expect(failure).toMatchObject({ status: undefined, message: "Request timed out" });
  });

  it.each([
    ["string", "socket hang up", "socket hang up"],
    ["null", null, "null"],
    ["number", 42, "42"],
  ])("a thrown %s (not an Error): its text", (_, thrown, message) => {
    expect(readInfluxFailure(thrown)).toStrictEqual({
      status: undefined,
      message,
      retryAfterMs: undefined,
      retryAfter: undefined,
      lineErrors: undefined,
    });
  });
});

describe("namedRefusals", () => {
  const failure = (message: string, lineErrors?: InfluxFailure["lineErrors"]): InfluxFailure => ({
    status: 400,
    message,
    ...(lineErrors && { lineErrors }),
  });

  it("InfluxDB 1.x: each line it quotes, with its reason, without the trailing dropped count", () => {
    const bad1 = "m,device_id=d v= 1700000000";
    const bad2 = "m,device_id=d v=1 17000x";
    const good = "m,device_id=d v=2 1700000060";
    const message =
      `partial write: unable to parse '${bad1}': missing field value\n` +
      `unable to parse '${bad2}': bad timestamp dropped=0`;
    expect(namedRefusals(failure(message), new Set([bad1, bad2, good]))).toEqual(
      new Map([
        [bad1, `unable to parse '${bad1}': missing field value`],
        [bad2, `unable to parse '${bad2}': bad timestamp`],
      ]),
    );
  });

  it("a dropped count of several digits is cut off too", () => {
    const bad = "m v=1 17000x";
    const message = `partial write: unable to parse '${bad}': bad timestamp dropped=12`;
    expect(namedRefusals(failure(message), new Set([bad]))).toEqual(
      new Map([[bad, `unable to parse '${bad}': bad timestamp`]]),
    );
  });

  it("spaces around a reason, and after its count, are not part of it", () => {
    const bad1 = "m v= 1";
    const bad2 = "m v=1 17000x";
    const message =
      `unable to parse '${bad1}':   missing field value  \n` +
      `unable to parse '${bad2}': bad timestamp dropped=2 `;
    expect(namedRefusals(failure(message), new Set([bad1, bad2]))).toEqual(
      new Map([
        [bad1, `unable to parse '${bad1}': missing field value`],
        [bad2, `unable to parse '${bad2}': bad timestamp`],
      ]),
    );
  });

  it("the line quoted, not another line of the batch that begins like it", () => {
    const short = "m v=1 1";
    const long = "m v=1 10";
    const message = `unable to parse '${long}': bad timestamp`;
    expect(namedRefusals(failure(message), new Set([short, long]))).toEqual(
      new Map([[long, `unable to parse '${long}': bad timestamp`]]),
    );
  });

  it("a line that itself holds `': ` (in a string field) is named whole", () => {
    const short = `m s="x': y" 1`;
    const long = `m s="x': y" 10`;
    const message = `unable to parse '${long}': bad timestamp`;
    expect(namedRefusals(failure(message), new Set([short, long]))).toEqual(
      new Map([[long, `unable to parse '${long}': bad timestamp`]]),
    );
  });

  it("a line that itself holds `unable to parse '` (in a string field) is named whole", () => {
    const odd = `m s="unable to parse 'x': y" 1`;
    const bad = "m v=1 1x";
    const message =
      `partial write: unable to parse '${odd}': bad timestamp\n` +
      `unable to parse '${bad}': bad timestamp dropped=0`;
    expect(namedRefusals(failure(message), new Set([odd, bad, "m v=2 2"]))).toEqual(
      new Map([
        [odd, `unable to parse '${odd}': bad timestamp`],
        [bad, `unable to parse '${bad}': bad timestamp`],
      ]),
    );
  });

  it("a line of the batch quoted inside a refused line's string field is not named", () => {
    const inner = "m v=1 1";
    const odd = `m s="unable to parse '${inner}': x" 1`;
    const message = `Unable to parse '${odd}': bad timestamp`;
    expect(namedRefusals(failure(message), new Set([inner, odd]))).toEqual(
      new Map([[odd, `unable to parse '${odd}': bad timestamp`]]),
    );
  });

  it("a quoted line that is not one of the batch's is not named", () => {
    const message = "unable to parse 'm v=9 9': bad timestamp";
    expect(namedRefusals(failure(message), new Set(["m v=1 1"]))).toEqual(new Map());
  });

  it("InfluxDB 3.x: the lines of `data` that are the batch's, with their reasons", () => {
    const lineErrors = [
      { line: "m v=1 1", error: "invalid column type for v" },
      { line: "m v=9 9", error: "a line of another batch" },
    ];
    const named = namedRefusals(
      failure("partial write of line protocol occurred", lineErrors),
      new Set(["m v=1 1", "m v=2 2"]),
    );
    expect(named).toEqual(new Map([["m v=1 1", "invalid column type for v"]]));
  });

  it("a line named twice keeps the first reason given", () => {
    const line = "m v=1 1";
    const lineErrors = [
      { line, error: "first" },
      { line, error: "second" },
    ];
    expect(namedRefusals(failure("x", lineErrors), new Set([line]))).toEqual(
      new Map([[line, "first"]]),
    );
    const message = `unable to parse '${line}': first\nunable to parse '${line}': second`;
    expect(namedRefusals(failure(message), new Set([line]))).toEqual(
      new Map([[line, `unable to parse '${line}': first`]]),
    );
  });

  it("an answer that names no line: an empty map", () => {
    const message = "partial write: points beyond retention policy dropped=3";
    expect(namedRefusals(failure(message), new Set(["m v=1 1"]))).toEqual(new Map());
  });
});

describe("droppedCount", () => {
  it.each<[string, number | undefined]>([
    ["partial write: points beyond retention policy dropped=3", 3],
    [
      'partial write: field type conflict: input field "v" on measurement "m" is type float, already exists as type string dropped=12',
      12,
    ],
    ["partial write: unable to parse 'm v= 1': missing field value dropped=0", undefined],
    ["Unable to parse 'm v= 1': missing field value", undefined],
    ["engine: cache-max-memory-size exceeded", undefined],
  ])("%s: %s", (message, count) => {
    expect(droppedCount({ status: 400, message })).toBe(count);
  });
});
