/**
 * The value schemas of settings, by what a user types: each form taken, each refused with the
 * message written out here (the oracle), and the hint that says what is wrong. Unit tests, no
 * config loader around them but where a setting's meaning is the point; Stryker runs them.
 */
import type { z } from "zod";
import {
  apiUser,
  bool,
  boundedDuration,
  databaseAndPolicy,
  headerSecret,
  hostName,
  hostProblem,
  int,
  isoDuration,
  optionalUrl,
  positiveNumber,
  printValue,
  requiredName,
  rollupBucket,
  rollupBucketProblem,
  syncStart,
  timeZoneList,
  timeZonesOf,
  urlProblem,
} from "../../src/config/values.js";
import { SETTINGS } from "../../src/config.js";
import { useFakeTime, useRealTime } from "../support/fake-time.js";

/** A setting's meaning, as `energy-etl config` and the docs show it. */
const meaningOf = (env: string) => SETTINGS.find((s) => s.env === env)?.describe;

describe("printValue", () => {
  it.each([
    ["PT1H", "PT1H"],
    ["p7d", "P7D"],
    ["P1Y2M3W4DT5H6M7S", "P1Y2M3W4DT5H6M7S"],
    ["PT0S", "PT0S"],
  ])("prints the duration %s as %s", (text, printed) => {
    expect(printValue(isoDuration.parse(text))).toBe(printed);
  });

  it.each([
    ["P30D", "P30D"],
    ["-12h", "PT12H"],
    ["-90m", "PT90M"],
    ["now", "PT0S"],
    ["2025-06-01", "2025-06-01T00:00:00.000Z"],
    ["2025-06-01T12:00:00+02:00", "2025-06-01T10:00:00.000Z"],
  ])("prints the start %s as %s, which parses back the same", (text, printed) => {
    const start = syncStart.parse(text);
    expect(printValue(start)).toBe(printed);
    expect(syncStart.parse(printed)).toEqual(start);
  });

  it("leaves text, numbers and booleans as they are", () => {
    expect([printValue("x"), printValue(4), printValue(false)]).toEqual(["x", 4, false]);
  });
});

/** The one message of a refused value, or "ok:" and the value taken. */
function outcome(schema: z.ZodType, input: unknown): string {
  const parsed = schema.safeParse(input);
  return parsed.success
    ? `ok: ${String(parsed.data)}`
    : parsed.error.issues.map((i) => i.message).join(" | ");
}

describe("bool (ROLLUPS, INFLUX_GZIP, ... from a variable, a flag or JSON)", () => {
  it.each([
    [true, "ok: true"],
    [false, "ok: false"],
    ["true", "ok: true"],
    ["1", "ok: true"],
    ["yes", "ok: true"],
    [" YES ", "ok: true"],
    ["True", "ok: true"],
    ["false", "ok: false"],
    ["0", "ok: false"],
    ["no", "ok: false"],
    [" No ", "ok: false"],
    ["FALSE", "ok: false"],
    ["maybe", "must be true or false"],
    ["", "must be true or false"],
    ["2", "must be true or false"],
  ])("%j -> %s", (input, expected) => {
    expect(outcome(bool, input)).toBe(expected);
  });
});

describe("urlProblem and optionalUrl (API_URL, INFLUX_URL)", () => {
  const form = "must be an http(s) URL such as http://host:port";
  it.each([
    "http://influxdb:8086",
    "https://api.example.com/v1",
    "HTTPS://API.EXAMPLE.COM",
    "http://[::1]:8086",
  ])("takes %s", (url) => {
    expect(urlProblem(url, "put the token into INFLUX_TOKEN")).toBeUndefined();
    expect(outcome(optionalUrl("x"), ` ${url} `)).toBe(`ok: ${url}`);
  });

  it.each([
    ["influxdb:8086", `${form} (http:// or https:// is missing in front)`],
    ["'http://influxdb:8086'", `${form} (http:// or https:// is missing in front)`],
    ["ftp://influxdb", `${form} (only http and https are supported)`],
    ["s3://bucket", `${form} (only http and https are supported)`],
    ["git+https://influxdb", `${form} (only http and https are supported)`],
    ["http://", `${form} (not a valid URL)`],
    ["http:///influxdb", `${form} (not a valid URL)`],
    ["http:// influxdb", `${form} (not a valid URL)`],
    ["http://influxdb:99999", `${form} (not a valid URL)`],
  ])("refuses %s: %s", (url, problem) => {
    expect(urlProblem(url, "x")).toBe(problem);
  });

  it.each([
    ["http://admin:s3cret@influxdb:8086", "http://***@influxdb:8086"],
    ["https://admin@influxdb", "https://***@influxdb"],
    ["http://:s3cret@influxdb", "http://***@influxdb"],
  ])("refuses credentials in %s, saying where they go, never showing them", (url, shown) => {
    const where = "put the token into INFLUX_TOKEN";
    const problem = urlProblem(url, where);
    expect(problem).toBe(`must not hold credentials (${shown}): ${where}`);
    expect(problem).not.toMatch(/admin|s3cret/);
  });

  it('"" and spaces are unset; anything else is checked', () => {
    expect(outcome(optionalUrl("x"), "")).toBe("ok: ");
    expect(outcome(optionalUrl("x"), "   ")).toBe("ok: ");
    expect(outcome(optionalUrl("x"), "influxdb")).toBe(
      `${form} (http:// or https:// is missing in front)`,
    );
  });
});

describe("durations", () => {
  it("isoDuration refuses what is no ISO 8601 duration, naming the form", () => {
    for (const text of ["1h", "7 days", "", "P"]) {
      expect(outcome(isoDuration, text)).toBe("must be an ISO 8601 duration such as PT1H or P7D");
    }
  });

  it("boundedDuration refuses bounds that are no durations, naming the bound", () => {
    expect(() => boundedDuration("PT1M", "7 days")).toThrow(
      "boundedDuration: 7 days is no ISO 8601 duration",
    );
    expect(() => boundedDuration("1m", "P7D")).toThrow(
      "boundedDuration: 1m is no ISO 8601 duration",
    );
  });
});

describe("syncStart (SYNC_START), against a clock set to 2026-03-01T12:00:00Z", () => {
  const now = "2026-03-01T12:00:00Z";
  beforeEach(() => useFakeTime(Date.parse(now)));
  afterEach(() => useRealTime());

  it("takes now itself, not a second later", () => {
    expect(printValue(syncStart.parse(now))).toBe("2026-03-01T12:00:00.000Z");
    expect(outcome(syncStart, "2026-03-01T12:00:01Z")).toBe(
      "must not be in the future (2026-03-01T12:00:01Z)",
    );
  });

  it("refuses what is no time, naming the forms it takes", () => {
    for (const text of ["yesterday", "", "2026-13-01"]) {
      expect(outcome(syncStart, text)).toBe(
        'must be an ISO date or date-time (UTC), "now", or a time before now (P30D, PT6H, ' +
          "-30d, -12h)",
      );
    }
  });

  it("SYNC_CRON shows its form in the setting's meaning", () => {
    expect(meaningOf("SYNC_CRON")).toMatch(
      /; five fields \(minute hour day-of-month month day-of-week, no seconds\): at most once a minute, such as `\*\/5 \* \* \* \*`, or `@hourly`$/,
    );
  });

  it("shows its bounds in the setting's meaning", () => {
    expect(meaningOf("SYNC_START")).toMatch(
      /; an instant from `1970-01-01` to now, or at most `P10Y` before now$/,
    );
  });
});

describe("timeZoneList (ROLLUP_TIME_ZONES) and timeZonesOf", () => {
  it.each([
    ["Europe/Berlin", "ok: Europe/Berlin"],
    ["europe/berlin, UTC", "ok: Europe/Berlin,UTC"],
    ["UTC,Europe/Berlin", "ok: UTC,Europe/Berlin"],
    ["Asia/Calcutta,Asia/Kolkata,asia/kolkata", "ok: Asia/Kolkata"],
    [" , Europe/Berlin ,,", "ok: Europe/Berlin"],
    ["", "must name a time zone"],
    [" , ,", "must name a time zone"],
    ["Mars/Olympus", "Mars/Olympus is not a time zone (such as Europe/Berlin)"],
    [
      "Mars/A, Europe/Berlin, Mars/B",
      "Mars/A is not a time zone (such as Europe/Berlin) | " +
        "Mars/B is not a time zone (such as Europe/Berlin)",
    ],
  ])("%j -> %s", (input, expected) => {
    expect(outcome(timeZoneList, input)).toBe(expected);
  });

  it("timeZonesOf splits at commas, trimmed, without empty names", () => {
    expect(timeZonesOf(" Europe/Berlin, ,UTC ,")).toEqual(["Europe/Berlin", "UTC"]);
    expect(timeZonesOf("")).toEqual([]);
  });
});

describe("rollupBucketProblem and rollupBucket (ROLLUP_BUCKET)", () => {
  const form = "must be <database>/<retention policy> such as energy/rollups";
  it.each([
    ["energy", `${form} (the / is missing)`],
    ["energy/rollups/daily", `${form} (energy/rollups/daily has more than one /)`],
    ["/rollups", `${form} (the database is empty)`],
    ["/", `${form} (the database is empty)`],
    ["energy/", `${form} (the retention policy is empty)`],
  ])("refuses %j", (bucket, problem) => {
    expect(rollupBucketProblem(bucket)).toBe(problem);
    expect(outcome(rollupBucket, bucket)).toBe(problem);
  });

  it('takes database/policy, and "" (beside the raw points)', () => {
    expect(rollupBucketProblem("energy/rollups")).toBeUndefined();
    expect(outcome(rollupBucket, " energy/rollups ")).toBe("ok: energy/rollups");
    expect(outcome(rollupBucket, "")).toBe("ok: ");
    expect(outcome(rollupBucket, "  ")).toBe("ok: ");
  });

  it("databaseAndPolicy: a policy only when the bucket names one", () => {
    expect(databaseAndPolicy("energy/rollups")).toStrictEqual({
      database: "energy",
      retentionPolicy: "rollups",
    });
    expect(databaseAndPolicy("energy")).toStrictEqual({ database: "energy" });
    expect(databaseAndPolicy("")).toStrictEqual({ database: "" });
  });
});

describe("requiredName (STATE_DB, a path or an id)", () => {
  it.each([
    ["./data/state.db", "ok: ./data/state.db"],
    [" x ", "ok:  x "],
    ["   ", "must not be empty"],
    ["\t", "must not be empty"],
  ])("%j -> %s", (input, expected) => {
    expect(outcome(requiredName, input)).toBe(expected);
  });

  it('"" is refused as empty, once (a JSON file can hold "")', () => {
    const parsed = requiredName.safeParse("");
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.message)).toEqual(["must not be empty"]);
  });
});

describe("int and positiveNumber (the numeric settings: JSON numbers, or the text of a variable)", () => {
  const whole = "must be a whole number";
  const positive = "must be a positive number";
  it.each<[unknown, string]>([
    [12, "ok: 12"],
    ["12", "ok: 12"],
    [" 345 ", "ok: 345"],
    ["-20", "ok: -20"],
    [-21, "Too small: expected number to be >=-20"],
    ["1001", "Too big: expected number to be <=1000"],
    [1.5, whole],
    ["1.5", whole],
    ["12a", whole],
    ["a12", whole],
    ["", whole],
  ])("int(-20, 1000): %j -> %s", (input, expected) => {
    expect(outcome(int(-20, 1000), input)).toBe(expected);
  });

  it.each<[unknown, string]>([
    [2.5, "ok: 2.5"],
    ["2.5", "ok: 2.5"],
    ["12.25", "ok: 12.25"],
    ["7", "ok: 7"],
    ["100", "ok: 100"],
    ["100.5", "Too big: expected number to be <=100"],
    [0, "Too small: expected number to be >0"],
    ["0", "Too small: expected number to be >0"],
    ["-1", positive],
    ["1.", positive],
    [".5", positive],
    ["5x", positive],
    ["x5", positive],
    ["1.5.5", positive],
  ])("positiveNumber(100): %j -> %s", (input, expected) => {
    expect(outcome(positiveNumber(100), input)).toBe(expected);
  });
});

describe("hostProblem (HTTP_HOST): which hint", () => {
  const form = "must be a host name or an IP address such as 127.0.0.1, 0.0.0.0 or ::1";
  /** A name of `length` characters, in labels of at most 63. */
  const nameOf = (length: number): string =>
    ["a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(length - 3 * 64)].join(".");

  it.each([
    ["", "must not be empty"],
    ["   ", "must not be empty"],
    ["[::1]", `${form} (an IPv6 address without brackets)`],
    ["[fe80::1]", `${form} (an IPv6 address without brackets)`],
    ["[::1]:8080", form],
    ["host[::1]", form],
    ["999.1.1.1", form],
    [nameOf(254), form],
  ])("%j -> %s", (host, problem) => {
    expect(hostProblem(host)).toBe(problem);
  });

  it("takes a name of 253 characters and a name starting with digits", () => {
    expect(nameOf(253)).toHaveLength(253);
    expect(hostProblem(nameOf(253))).toBeUndefined();
    expect(hostProblem("3com.example")).toBeUndefined();
    expect(hostProblem("10-0-0-1.nip.io")).toBeUndefined();
  });

  it("takes one-character labels", () => {
    expect(hostProblem("a")).toBeUndefined();
    expect(hostProblem("x.y.example")).toBeUndefined();
  });

  it("hostName takes the address without the spaces around it, and names its form", () => {
    expect(hostName.parse(" 0.0.0.0 ")).toBe("0.0.0.0");
    expect(hostName.parse("\tenergy.example\n")).toBe("energy.example");
    expect(meaningOf("HTTP_HOST")).toMatch(/; a host name or an IP address$/);
  });
});

describe("headerSecret and apiUser (ENERGY_API_KEY, ENERGY_API_USER, ...)", () => {
  const beyond =
    "holds a character an HTTP header cannot carry (a line break, a control character or one " +
    "beyond Latin-1); the value is not shown";
  it.each([
    ["key-5e1f", "ok: key-5e1f"],
    ["caf\u00e9 \u00ff~", "ok: caf\u00e9 \u00ff~"],
    ["", "ok: "],
    ["key\r\nX: 1", beyond],
    ["key\u0000", beyond],
    ["\u001fkey", beyond],
    ["key\u007f", beyond],
    ["k\u20ac", beyond],
    ["k\u0100", beyond],
  ])("headerSecret %j -> %s", (input, expected) => {
    expect(outcome(headerSecret, input)).toBe(expected);
  });

  it("apiUser takes a user without a colon, refuses one with", () => {
    expect(outcome(apiUser, "alice")).toBe("ok: alice");
    expect(outcome(apiUser, "")).toBe("ok: ");
    expect(outcome(apiUser, "alice:pw")).toBe(
      "must not hold a colon: Basic authentication separates the user from the password with it",
    );
  });
});
