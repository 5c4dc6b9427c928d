import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { instantOption } from "../src/cli/time-options.js";
import {
  ConfigError,
  configSchema,
  configSecrets,
  loadConfig,
  requireApi,
  resolveSyncStart,
  SETTINGS,
} from "../src/config.js";
import { tempDir } from "./support/temp-dir.js";

const tmp = tempDir("energy-etl-config-");
const writeJson = (name: string, value: unknown): string => {
  const file = join(tmp, name);
  writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value));
  return file;
};

function configError(sources: Parameters<typeof loadConfig>[0]): string {
  try {
    loadConfig(sources);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("has the documented defaults", () => {
    const config = loadConfig();
    expect(config.state.db).toBe("./data/state.db");
    expect(config.sync.cron).toBe("*/5 * * * *");
    expect(config.sync.start).toEqual({
      kind: "ago",
      duration: { years: 0, months: 0, weeks: 0, days: 7, hours: 0, minutes: 0, seconds: 0 },
    });
    expect(config.sync.lookback.hours).toBe(1);
    expect(config.api).toMatchObject({ concurrency: 4, rateLimit: 5, timeoutMs: 30_000 });
    expect(config.http.port).toBe(8080);
    expect(config.log.level).toBe("info");
  });

  it("config/default.json holds every default, and nothing else", () => {
    const shipped = JSON.parse(readFileSync("config/default.json", "utf8")) as Record<
      string,
      unknown
    >;
    const { $schema: _schema, ...settings } = shipped;
    expect(loadConfig({ file: "config/default.json" })).toEqual(loadConfig());
    const defaults = configSchema.safeParse({});
    expect(defaults.success).toBe(true);
    const keys = (o: object) =>
      Object.entries(o).flatMap(([k, v]) => Object.keys(v as object).map((leaf) => `${k}.${leaf}`));
    expect(keys(settings).sort()).toEqual(keys(defaults.data ?? {}).sort());
  });

  it("the configuration table in docs/configuration.md lists every setting", () => {
    const table = readFileSync("docs/configuration.md", "utf8");
    for (const setting of SETTINGS) {
      expect(table).toContain(`| \`${setting.env}\` | \`${setting.path.join(".")}\` |`);
    }
  });

  it("applies flags over environment over file over defaults", () => {
    const file = writeJson("layers.json", {
      api: { concurrency: 2, timeoutMs: 1000, rateLimit: 9 },
      log: { level: "warn" },
    });
    const config = loadConfig({
      file,
      env: { API_CONCURRENCY: "3", API_TIMEOUT_MS: "2000" },
      flags: { API_CONCURRENCY: "8" },
    });
    expect(config.api.concurrency).toBe(8);
    expect(config.api.timeoutMs).toBe(2000);
    expect(config.api.rateLimit).toBe(9);
    expect(config.log.level).toBe("warn");
    expect(config.api.retries).toBe(5);
  });

  it.each([
    ["true", true],
    ["1", true],
    ["YES", true],
    ["false", false],
    ["0", false],
  ])("reads INFLUX_GZIP=%s as %s", (text, value) => {
    expect(loadConfig({ env: { INFLUX_GZIP: text } }).influx.gzip).toBe(value);
  });

  it("treats empty environment variables as unset", () => {
    expect(loadConfig({ env: { INFLUX_BUCKET: "", API_CONCURRENCY: "" } }).influx.bucket).toBe(
      "energy",
    );
  });

  it("reads every documented environment name", () => {
    const config = loadConfig({
      env: {
        ENERGY_API_URL: "https://api.example.test/v1",
        ENERGY_API_KEY: "k",
        ENERGY_API_USER: "u",
        ENERGY_API_PASSWORD: "p",
        INFLUX_URL: "http://influx:8086",
        INFLUX_TOKEN: "t",
        INFLUX_ORG: "o",
        INFLUX_BUCKET: "b",
        STATE_DB: "/data/state.db",
        SYNC_CRON: "0 * * * *",
        SYNC_START: "2025-03-01T00:00:00Z",
        SYNC_LOOKBACK: "PT30M",
        API_CONCURRENCY: "2",
        API_RATE_LIMIT: "2.5",
        API_TIMEOUT_MS: "5000",
        LOG_LEVEL: "debug",
        HTTP_PORT: "9000",
      },
    });
    expect(config).toMatchObject({
      api: {
        url: "https://api.example.test/v1",
        key: "k",
        user: "u",
        password: "p",
        concurrency: 2,
        rateLimit: 2.5,
        timeoutMs: 5000,
      },
      influx: { url: "http://influx:8086", token: "t", org: "o", bucket: "b" },
      state: { db: "/data/state.db" },
      sync: { cron: "0 * * * *", start: { kind: "at", at: new Date("2025-03-01T00:00:00Z") } },
      log: { level: "debug" },
      http: { port: 9000 },
    });
    expect(config.sync.lookback.minutes).toBe(30);
  });

  it.each([
    [
      { API_CONCURRENCY: "many" },
      /API_CONCURRENCY \(api.concurrency, from environment API_CONCURRENCY\): must be a whole number/,
    ],
    [{ API_CONCURRENCY: "0" }, /API_CONCURRENCY .*>=1/],
    [{ API_RATE_LIMIT: "-1" }, /API_RATE_LIMIT .*positive number/],
    [{ SYNC_CRON: "every five minutes" }, /SYNC_CRON .*cron expression/],
    [
      { SYNC_START: "last week" },
      /SYNC_START \(sync.start, from environment SYNC_START\): must be an ISO date or date-time \(UTC\), "now", or a time before now \(P30D, PT6H, -30d, -12h\)/,
    ],
    [{ SYNC_START: "2025-02-30" }, /SYNC_START/],
    [{ SYNC_LOOKBACK: "1h" }, /SYNC_LOOKBACK .*ISO 8601 duration/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL/],
    [{ HTTP_PORT: "70000" }, /HTTP_PORT/],
    [
      { INFLUX_GZIP: "maybe" },
      /INFLUX_GZIP \(influx.gzip, from environment INFLUX_GZIP\): must be true or false/,
    ],
    [
      { SHARD_COUNT: "2", SHARD_INDEX: "2" },
      /SHARD_INDEX \(shard.index, from environment SHARD_INDEX\): must be below SHARD_COUNT \(2\)/,
    ],
    [{ ENERGY_API_URL: "ftp://x" }, /ENERGY_API_URL .*http\(s\) URL/],
    [{ INFLUX_URL: "localhost:8086" }, /INFLUX_URL .*http\(s\) URL/],
  ])("names the setting in %j", (env, message) => {
    expect(configError({ env })).toMatch(message);
  });

  it("names flags and files as the source of a bad value", () => {
    expect(configError({ flags: { HTTP_PORT: "x" } })).toMatch(/from flag --http-port/);
    const file = writeJson("bad.json", { http: { port: "x" } });
    expect(configError({ file })).toContain(`from config file ${file}`);
  });

  it("reports unknown settings, malformed files and missing files", () => {
    expect(configError({ file: writeJson("unknown.json", { api: { colour: "red" } }) })).toMatch(
      /unknown setting api.colour/,
    );
    expect(configError({ file: writeJson("broken.json", "{ nope") })).toMatch(/not valid JSON/);
    expect(configError({ file: join(tmp, "absent.json") })).toMatch(/cannot be read \(ENOENT\)/);
    expect(configError({ file: writeJson("array.json", "[1]") })).toMatch(/must be a JSON object/);
  });

  it("never prints a secret, even when it is the bad value", () => {
    const secret = "sup3r-s3cret-t0ken";
    const message = configError({
      env: { INFLUX_TOKEN: secret, INFLUX_URL: secret, ENERGY_API_URL: secret },
    });
    expect(message).not.toContain(secret);
  });

  it.each([
    ["ENERGY_API_URL", /put them into ENERGY_API_USER and ENERGY_API_PASSWORD/],
    ["INFLUX_URL", /put the token into INFLUX_TOKEN/],
  ])("refuses credentials in %s, without printing them", (name, where) => {
    for (const url of [
      "https://url-user-4c2:url-pass-9d1@api.example.test:8443/v1",
      "http://url-user-4c2@api.example.test:8443/v1",
      "https://:url-pass-9d1@api.example.test:8443",
    ]) {
      const message = configError({ env: { [name]: url } });
      expect(message.split("\n")).toHaveLength(1);
      expect(message).toMatch(new RegExp(`${name} .*must not hold credentials`));
      expect(message).toMatch(where);
      expect(message).toContain(
        "https://***@api.example.test:8443".replace(/^https/, url.slice(0, url.indexOf(":"))),
      );
      for (const part of ["url-user-4c2", "url-pass-9d1", url]) expect(message).not.toContain(part);
    }
  });

  it.each([
    ["127.0.0.1:8099", /http:\/\/ or https:\/\/ is missing in front/],
    ["localhost:8086", /http:\/\/ or https:\/\/ is missing in front/],
    ["ftp://x", /only http and https/],
    ["http://", /http\(s\) URL/],
  ])("a URL %j gets one clear message", (url, hint) => {
    const message = configError({ env: { INFLUX_URL: url } });
    expect(message.split("\n")).toHaveLength(1);
    expect(message).toMatch(
      /^invalid configuration: INFLUX_URL \(influx.url, from environment INFLUX_URL\): must be an http\(s\) URL/,
    );
    expect(message).toMatch(hint);
  });

  it("configSecrets returns every secret of the configuration", () => {
    const config = loadConfig({
      env: {
        ENERGY_API_KEY: "k1",
        ENERGY_API_USER: "u1",
        ENERGY_API_PASSWORD: "p1",
        INFLUX_TOKEN: "t1",
      },
    });
    expect(configSecrets(config).sort()).toEqual(["k1", "p1", "t1", "u1:p1"]);
    expect(configSecrets(loadConfig({ env: { INFLUX_TOKEN: "t" } }))).toEqual(["t"]);
    expect(configSecrets(loadConfig())).toEqual([]);
  });

  it("names every missing API setting", () => {
    expect(() => requireApi(loadConfig({ env: { ENERGY_API_USER: "u" } }))).toThrow(
      /ENERGY_API_URL .*ENERGY_API_KEY .*ENERGY_API_PASSWORD/,
    );
  });

  it("resolves SYNC_START as a duration back from now or an instant", () => {
    const now = new Date("2026-03-31T12:00:00Z");
    expect(resolveSyncStart(loadConfig({ env: { SYNC_START: "P30D" } }).sync.start, now)).toEqual(
      new Date("2026-03-01T12:00:00Z"),
    );
    expect(resolveSyncStart(loadConfig({ env: { SYNC_START: "P1M" } }).sync.start, now)).toEqual(
      new Date("2026-02-28T12:00:00Z"),
    );
    expect(
      resolveSyncStart(loadConfig({ env: { SYNC_START: "2025-06-01" } }).sync.start, now),
    ).toEqual(new Date("2025-06-01T00:00:00Z"));
  });

  it("SYNC_START takes what --from takes: -2d, -12h, -90m, now", () => {
    const now = new Date("2026-03-31T12:00:00Z");
    const start = (text: string) =>
      resolveSyncStart(loadConfig({ env: { SYNC_START: text } }).sync.start, now);
    expect(start("-2d")).toEqual(new Date("2026-03-29T12:00:00Z"));
    expect(start("-12h")).toEqual(new Date("2026-03-31T00:00:00Z"));
    expect(start("-90m")).toEqual(new Date("2026-03-31T10:30:00Z"));
    expect(start("now")).toEqual(now);
  });

  it.each([
    "P30D",
    "pt6h",
    "-30d",
    "-12H",
    "-90m",
    "now",
    "2025-06-01",
    "2025-06-01T12:00",
    "2025-06-01T12:00:00+02:00",
    "last tuesday",
    "-2w",
    "30d",
    "2025-02-30",
    "P",
    "",
  ])("SYNC_START and --from agree on %j (one grammar)", (text) => {
    const fromOption = instantOption("--from").safeParse(text).success;
    const syncStart = configSchema.safeParse({ sync: { start: text } }).success;
    expect({ text, syncStart }).toEqual({ text, syncStart: fromOption });
  });
});

describe("SETTINGS", () => {
  it("names every setting of the schema once, with unique environment names and flags", () => {
    const envs = SETTINGS.map((s) => s.env);
    expect(new Set(envs).size).toBe(envs.length);
    const flags = SETTINGS.flatMap((s) => (s.flag ? [s.flag] : []));
    expect(new Set(flags).size).toBe(flags.length);
    const defaults = configSchema.parse({});
    const leaves = Object.entries(defaults).flatMap(([section, values]) =>
      Object.keys(values).map((key) => `${section}.${key}`),
    );
    expect(SETTINGS.map((s) => s.path.join(".")).sort()).toEqual(leaves.sort());
  });

  it("gives secrets no flag", () => {
    for (const s of SETTINGS.filter((x) => x.secret)) expect(s.flag).toBeUndefined();
  });
});
