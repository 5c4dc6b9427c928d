import {
  configSchema,
  describeConfig,
  describeSources,
  loadConfig,
  SETTINGS,
} from "../../src/config.js";

describe("describeConfig", () => {
  it("prints durations and a start instant as ISO text, secrets as [set] only when set", () => {
    const config = loadConfig({
      env: {
        SYNC_START: "2025-06-01T12:00:00+02:00",
        SYNC_LOOKBACK: "pt90m",
        INFLUX_TOKEN: "tok-3e1f",
        ENERGY_API_USER: "ops",
      },
    });
    const shown = describeConfig(config);
    expect(shown.sync).toMatchObject({ start: "2025-06-01T10:00:00.000Z", lookback: "PT90M" });
    expect(shown.influx).toMatchObject({ token: "[set]", retryAfterMax: "PT10M", gzip: false });
    expect(shown.api).toMatchObject({ key: "", password: "", user: "ops", concurrency: 4 });
    expect(JSON.stringify(shown)).not.toContain("tok-3e1f");
  });

  it("is a config file that loads back the same configuration (secrets aside)", () => {
    const config = loadConfig({
      env: { SYNC_START: "-12h", FAILURE_BACKOFF: "PT2M", INFLUX_GZIP: "yes", SHARD_COUNT: "3" },
    });
    expect(configSchema.parse(describeConfig(config))).toEqual(config);
  });

  it("has the config file's sections and keys, in the schema's order", () => {
    const shown = describeConfig(loadConfig());
    const keys = Object.entries(shown).flatMap(([s, v]) => Object.keys(v).map((k) => `${s}.${k}`));
    expect(keys).toEqual(SETTINGS.map((s) => s.name));
  });
});

describe("describeSources", () => {
  it("lists every setting in SETTINGS order with its printed value and origin", () => {
    const origins = new Map([["sync.lookback", "environment SYNC_LOOKBACK"]]);
    const config = loadConfig({ env: { SYNC_LOOKBACK: "PT2H", ENERGY_API_KEY: "k-77" } });
    const rows = describeSources({ config, origins });
    expect(rows.map((r) => r.setting)).toEqual(SETTINGS.map((s) => s.env));
    expect(rows.find((r) => r.path === "sync.lookback")).toEqual({
      setting: "SYNC_LOOKBACK",
      path: "sync.lookback",
      value: "PT2H",
      from: "environment SYNC_LOOKBACK",
    });
    expect(rows.find((r) => r.path === "api.key")).toMatchObject({
      value: "[set]",
      from: "default",
    });
    expect(rows.find((r) => r.path === "http.port")).toMatchObject({ value: "8080" });
  });
});
