/**
 * The messages of the errors a write to InfluxDB ends with (credentials, a missing bucket, a
 * refusal, a Retry-After over the cap, the deadline): unit tests of src/influx/write-errors.ts,
 * each expected message written out here by hand. Reading the failures: write-errors.test.ts.
 */
import type { InfluxConnection } from "../../src/influx/influx-connection.js";
import {
  type BucketTarget,
  bucketMissing,
  credentialsRefused,
  type InfluxFailure,
  refusedWhole,
  retryAfterOverCap,
  writeDeadlinePassed,
  writeNotFound,
  writeRefused,
} from "../../src/influx/write-errors.js";

describe("credentialsRefused", () => {
  const SECRET = "s3cr3t-token-value";
  it.each<
    [string, "v1" | "v2", number, string, Pick<InfluxConnection, "token" | "username">, string]
  >([
    [
      "a token on a bucket",
      "v2",
      401,
      "energy",
      { token: SECRET },
      "InfluxDB refused the token (HTTP 401): check INFLUX_TOKEN and the write permission on bucket energy",
    ],
    [
      "a user on a database",
      "v1",
      403,
      "energy/autogen",
      { token: "", username: "operator" },
      "InfluxDB refused the user and password (HTTP 403): check INFLUX_USERNAME and " +
        "INFLUX_PASSWORD and the write permission on database energy/autogen",
    ],
    [
      "a token on a database",
      "v1",
      401,
      "energy",
      { token: SECRET },
      "InfluxDB refused the token (HTTP 401): check INFLUX_TOKEN and the write permission on database energy",
    ],
  ])("%s", (_, api, status, bucket, connection, message) => {
    const error = credentialsRefused(api, status, bucket, connection);
    expect(error).toMatchObject({ message, code: "auth_failed", status, fatal: true });
    expect(error.message).not.toContain(SECRET);
  });
});

describe("bucketMissing", () => {
  it.each<[number | undefined, string, boolean]>([
    [404, 'bucket "energy" not found', true],
    [404, "404 page not found", true],
    [500, "retention policy not found: rp1", true],
    [500, "Retention Policy Not Found: rp1", true],
    [500, "engine: write failed: retention policy not found: rp1", false],
    [500, "internal error", false],
    [400, "retention policy not found: rp1", false],
    [undefined, "retention policy not found: rp1", false],
  ])("HTTP %s %s: %s", (status, message, missing) => {
    expect(bucketMissing({ status, message })).toBe(missing);
  });
});

describe("writeNotFound", () => {
  it.each<[string, "v1" | "v2", BucketTarget, InfluxFailure, string]>([
    [
      "v2 to InfluxDB 1.7: no /api/v2/write",
      "v2",
      { bucket: "energy" },
      { status: 404, message: "404 page not found", version: "1.7.10" },
      "InfluxDB 1.7.10 has no /api/v2/write (HTTP 404: 404 page not found): set INFLUX_API=auto or v1",
    ],
    [
      "v2 to InfluxDB 1.8: the bucket (database/rp) is missing",
      "v2",
      { bucket: "energy" },
      { status: 404, message: 'database not found: "energy"', version: "1.8.10" },
      'InfluxDB has no bucket energy (HTTP 404: database not found: "energy"): create it or fix ' +
        "INFLUX_BUCKET and INFLUX_ORG (on InfluxDB 1.8: database[/retention-policy])",
    ],
    [
      "v2 without a version header, the rollups' bucket",
      "v2",
      { bucket: "energy", bucketSetting: "ROLLUP_BUCKET" },
      { status: 404, message: 'bucket "energy" not found' },
      'InfluxDB has no bucket energy (HTTP 404: bucket "energy" not found): create it or fix ' +
        "ROLLUP_BUCKET and INFLUX_ORG (on InfluxDB 1.8: database[/retention-policy])",
    ],
    [
      "v1: the retention policy is missing",
      "v1",
      { bucket: "energy/rp1" },
      { status: 500, message: "retention policy not found: rp1", version: "1.7.10" },
      "InfluxDB has no retention policy rp1 on database energy (HTTP 500: retention policy not " +
        'found: rp1): create it (CREATE RETENTION POLICY ... ON "energy"), fix INFLUX_BUCKET, or ' +
        "run `energy-etl init`",
    ],
    [
      "v1: the database is missing",
      "v1",
      { bucket: "energy/rp1", bucketSetting: "ROLLUP_BUCKET" },
      { status: 404, message: 'database not found: "energy"', version: "1.7.10" },
      'database not found: create it (CREATE DATABASE "energy") or run `energy-etl init` ' +
        '(ROLLUP_BUCKET=energy/rp1; HTTP 404: database not found: "energy")',
    ],
  ])("%s", (_, api, target, failure, message) => {
    const error = writeNotFound(api, target, failure);
    expect(error).toMatchObject({ message, code: "bucket_not_found", status: 404, fatal: true });
  });

  it.each([
    ["retention policy not found: autogen", "default retention policy autogen"],
    ["retention policy not found: my policy", "default retention policy my policy"],
    ["retention policy not found", "default retention policy"],
    ["retention policy not found:", "default retention policy"],
  ])(
    "v1 to a database whose default retention policy is missing (%s): the policy and database named",
    (answer, policy) => {
      const error = writeNotFound("v1", { bucket: "energy" }, { status: 500, message: answer });
      expect(error.message).toBe(
        `InfluxDB has no ${policy} on database energy (HTTP 500: ${answer}): create it ` +
          '(CREATE RETENTION POLICY ... ON "energy"), fix INFLUX_BUCKET, or run `energy-etl init`',
      );
    },
  );

  it("without a status: said as the 404 it stands for", () => {
    const error = writeNotFound("v1", { bucket: "energy" }, { message: "database not found" });
    expect(error.message).toBe(
      'database not found: create it (CREATE DATABASE "energy") or run `energy-etl init` ' +
        "(INFLUX_BUCKET=energy; HTTP 404: database not found)",
    );
  });
});

describe("the errors that end a write", () => {
  it("a 4xx refusing the request itself: bad_data, not fatal, the lines counted", () => {
    expect(writeRefused("method not allowed", 405, 3)).toMatchObject({
      message: "InfluxDB refused a write of 3 lines (HTTP 405: method not allowed)",
      code: "bad_data",
      status: 405,
      fatal: false,
    });
    expect(writeRefused("unsupported media type", 415, 1).message).toBe(
      "InfluxDB refused a write of 1 line (HTTP 415: unsupported media type)",
    );
  });

  it("refused as a whole: the status (or ?), the reason and what to check", () => {
    const failure = { status: 413, message: "request entity too large" };
    expect(refusedWhole(failure, 1, "a single line is too large")).toMatchObject({
      message:
        "InfluxDB refused a write of 1 line as a whole (HTTP 413: request entity too large; a " +
        "single line is too large): nothing of it is stored; check a proxy's body limit, the " +
        "bucket's schema and retention, and INFLUX_BATCH_SIZE",
      code: "refused",
      status: 413,
      fatal: false,
    });
    const unknown = refusedWhole({ message: "x" }, 5000, "every line refused");
    expect(unknown.message).toBe(
      "InfluxDB refused a write of 5000 lines as a whole (HTTP ?: x; every line refused): nothing " +
        "of it is stored; check a proxy's body limit, the bucket's schema and retention, and " +
        "INFLUX_BATCH_SIZE",
    );
  });

  it("a Retry-After over the cap: the wait asked, the header, the cap, the lines", () => {
    const failure = { status: 429, retryAfterMs: 3_600_000, retryAfter: "3600" };
    expect(retryAfterOverCap(failure, 60_000, 5000)).toMatchObject({
      message:
        "InfluxDB asked to wait 60 min (Retry-After: 3600), more than INFLUX_RETRY_AFTER_MAX " +
        "(60 s): the write of 5000 lines fails now",
      code: "unavailable",
      status: 429,
      fatal: false,
    });
    expect(retryAfterOverCap({ ...failure, status: 503 }, 1000, 1).message).toBe(
      "InfluxDB asked to wait 60 min (Retry-After: 3600), more than INFLUX_RETRY_AFTER_MAX " +
        "(1 s): the write of 1 line fails now",
    );
  });

  it("past the deadline: the deadline in seconds and as set, the last failure when there was one", () => {
    expect(writeDeadlinePassed(90_000, "HTTP 503:\n  overloaded")).toMatchObject({
      message:
        "InfluxDB write did not finish within 90 s (INFLUX_DEADLINE_MS=90000); last failure: " +
        "HTTP 503: overloaded",
      code: "unavailable",
      status: undefined,
      fatal: false,
    });
    expect(writeDeadlinePassed(1500).message).toBe(
      "InfluxDB write did not finish within 1.5 s (INFLUX_DEADLINE_MS=1500)",
    );
  });
});
