/**
 * The bounds of settings (#33): ISO durations within their range (shown in the docs' table), SYNC_START
 * from 1970 to now and at most ten years back, HTTP_HOST a host name or an IP address, secrets for
 * headers, and what arrives before the schema: control characters, empty flags, a config file's
 * JSON types and prototype keys. One line per refusal, naming the setting.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { prototypeKey } from "../../src/config/raw-values.js";
import { boundedDuration, hostProblem } from "../../src/config/values.js";
import { ConfigError, configJsonSchema, loadConfig, SETTINGS } from "../../src/config.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("energy-etl-bounds-");

/** The one line of a refused configuration. */
function refusal(sources: Parameters<typeof loadConfig>[0]): string {
  try {
    loadConfig(sources);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message.split("\n")).toHaveLength(1);
    return message;
  }
  throw new Error(`expected ${JSON.stringify(sources)} to be refused`);
}

describe("boundedDuration", () => {
  const schema = boundedDuration("PT1M", "P7D");
  it.each(["PT1M", "PT60S", "P7D", "P1W", "PT168H"])("takes %s (the bounds included)", (text) => {
    expect(schema.safeParse(text).success).toBe(true);
  });
  it.each([
    ["PT59S", "must be from PT1M to P7D, not PT59S"],
    ["PT0S", "must be from PT1M to P7D, not PT0S"],
    ["P8D", "must be from PT1M to P7D, not P8D"],
    ["P1000000Y", "must be from PT1M to P7D, not P1000000Y"],
  ])("refuses %s", (text, message) => {
    const parsed = schema.safeParse(text);
    expect(parsed.success ? undefined : parsed.error.issues.map((i) => i.message)).toEqual([
      message,
    ]);
  });
});

describe("the duration settings", () => {
  it("each has bounds, in its meaning in the docs' table", () => {
    const durations = [
      "API_RETRY_AFTER_MAX",
      "INFLUX_RETRY_AFTER_MAX",
      "SYNC_LOOKBACK",
      "SYNC_LOOKBACK_EVERY",
      "LATE_DATA_HORIZON",
      "SILENT_AFTER",
      "SILENT_PROBE_INTERVAL",
      "CATALOG_REFRESH",
      "FAILURE_BACKOFF",
      "FAILURE_BACKOFF_MAX",
      "READY_MAX_LAG",
    ];
    for (const env of durations) {
      const setting = SETTINGS.find((s) => s.env === env);
      expect({ env, describe: setting?.describe }).toEqual({
        env,
        describe: expect.stringMatching(/; `P\w+` to `P\w+`$/),
      });
    }
  });

  it.each([
    ["SYNC_LOOKBACK", "P1000000Y", "sync.lookback", "PT0S to P30D"],
    ["LATE_DATA_HORIZON", "PT0S", "sync.lateDataHorizon", "PT1H to P1Y"],
    ["CATALOG_REFRESH", "PT0S", "sync.catalogRefresh", "PT1M to P7D"],
    ["FAILURE_BACKOFF", "P2D", "failures.backoff", "PT0S to P1D"],
    ["INFLUX_RETRY_AFTER_MAX", "P1000000Y", "influx.retryAfterMax", "PT0S to P1D"],
  ])("%s=%s is refused, naming the bounds", (env, value, name, bounds) => {
    expect(refusal({ env: { [env]: value } })).toBe(
      `invalid configuration: ${env} (${name}, from environment ${env}): must be from ${bounds}, not ${value}`,
    );
  });

  it("the defaults and the values tests use are within the bounds", () => {
    expect(() =>
      loadConfig({
        env: { FAILURE_BACKOFF: "PT0S", SYNC_LOOKBACK_EVERY: "PT0S", LATE_DATA_HORIZON: "P1M" },
      }),
    ).not.toThrow();
  });
});

describe("SYNC_START", () => {
  it.each([
    ["P11Y", "must be at most P10Y before now, not P11Y"],
    ["1969-12-31T23:59:59Z", "must not be before 1970-01-01T00:00:00Z (1969-12-31T23:59:59Z)"],
    ["2999-01-01", "must not be in the future (2999-01-01T00:00:00Z)"],
  ])("refuses %s", (value, problem) => {
    expect(refusal({ env: { SYNC_START: value } })).toBe(
      `invalid configuration: SYNC_START (sync.start, from environment SYNC_START): ${problem}`,
    );
  });
  it("takes 1970-01-01 and P10Y", () => {
    for (const value of ["1970-01-01", "P10Y", "P3650D"]) {
      expect(() => loadConfig({ env: { SYNC_START: value } })).not.toThrow();
    }
  });
});

describe("hostProblem", () => {
  it.each(["127.0.0.1", "0.0.0.0", "::", "::1", "localhost", "energy-etl.internal", "host."])(
    "takes %s",
    (host) => expect(hostProblem(host)).toBeUndefined(),
  );
  it.each(["a b", "-host", "host_name", "999.1.1.1", "http://host", "[::1]", "", "a..b"])(
    "refuses %j",
    (host) => expect(hostProblem(host)).toMatch(/host name or an IP address|must not be empty/),
  );
});

describe("what arrives before the schema", () => {
  it("a control character in any setting, from any source, never shown", () => {
    const secret = "tok-5e1\r\nX: 1";
    expect(refusal({ env: { INFLUX_TOKEN: secret } })).toBe(
      "invalid configuration: INFLUX_TOKEN (influx.token, from environment INFLUX_TOKEN): holds a " +
        "control character (a line break, a tab or the like); the value is not shown",
    );
    expect(refusal({ flags: { INFLUX_ORG: "org\tx" } })).toMatch(
      /^invalid configuration: INFLUX_ORG \(influx.org, from flag --influx-org\): holds a control character/,
    );
    const file = join(dir, "token.json");
    writeFileSync(file, JSON.stringify({ api: { key: "key-77\u0000" } }));
    expect(refusal({ file })).toMatch(/^invalid configuration: ENERGY_API_KEY .*control character/);
  });

  it("a header secret beyond Latin-1, and a user with a colon", () => {
    expect(refusal({ env: { ENERGY_API_KEY: "k\u20ac" } })).toMatch(
      /ENERGY_API_KEY .*: holds a character an HTTP header cannot carry/,
    );
    expect(refusal({ env: { ENERGY_API_USER: "a:b" } })).toMatch(
      /ENERGY_API_USER .*must not hold a colon/,
    );
  });

  it("an empty flag is an error; an empty variable is unset", () => {
    expect(refusal({ flags: { STATE_DB: "" } })).toBe(
      "invalid configuration: STATE_DB (state.db, from flag --state-db): must not be empty (leave the flag out for the default)",
    );
    expect(loadConfig({ env: { STATE_DB: "" } }).state.db).toBe("./data/state.db");
  });

  it("a config file's values have JSON types; env text is still text", () => {
    const file = join(dir, "types.json");
    writeFileSync(file, JSON.stringify({ shard: { count: "2" } }));
    expect(refusal({ file })).toBe(
      `invalid configuration: SHARD_COUNT (shard.count, from config file ${file}): must be a JSON ` +
        'number, not a string (write 4, not "4")',
    );
    writeFileSync(file, JSON.stringify({ sync: { cron: 5 } }));
    expect(refusal({ file })).toMatch(/SYNC_CRON .*: must be a JSON string, not a number$/);
    writeFileSync(file, JSON.stringify({ rollups: { enabled: null } }));
    expect(refusal({ file })).toMatch(/ROLLUPS .*: must be a JSON boolean, not null/);
    expect(loadConfig({ env: { SHARD_COUNT: "2", SHARD_INDEX: "1" } }).shard.count).toBe(2);
  });

  it("a key that names an object's prototype, anywhere in the file", () => {
    expect(prototypeKey(JSON.parse('{"api": {"url": "x"}}'))).toBeUndefined();
    expect(prototypeKey(JSON.parse('{"__proto__": {}}'))).toBe("__proto__");
    expect(prototypeKey(JSON.parse('{"api": {"constructor": 1}}'))).toBe("api.constructor");
    expect(prototypeKey(JSON.parse('{"a": [{"prototype": 1}]}'))).toBe("a.0.prototype");
  });

  it("config/schema.json offers numbers and booleans as such, not as text", () => {
    const schema = configJsonSchema() as {
      properties: Record<string, { properties: Record<string, Record<string, unknown>> }>;
    };
    const api = schema.properties.api?.properties;
    expect(api?.concurrency).toMatchObject({ type: "number" });
    expect(api?.concurrency).not.toHaveProperty("anyOf");
    expect(schema.properties.influx?.properties.gzip).toMatchObject({ type: "boolean" });
  });
});
