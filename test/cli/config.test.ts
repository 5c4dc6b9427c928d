import { readFileSync } from "node:fs";
import { runCli } from "../../src/cli.js";
import { bufferIo } from "../support/cli-io.js";

describe("energy-etl config", () => {
  it("prints the effective configuration with secrets masked", async () => {
    const io = bufferIo({
      ENERGY_API_KEY: "key-value-123",
      INFLUX_TOKEN: "tok-value-456",
      SYNC_START: "P30D",
    });
    expect(await runCli(["config", "--api-concurrency", "7"], io)).toBe(0);
    const shown = JSON.parse(io.out());
    expect(shown.api).toMatchObject({ key: "[set]", password: "", concurrency: 7 });
    expect(shown.influx.token).toBe("[set]");
    expect(shown.sync).toEqual({
      cron: "*/5 * * * *",
      start: "P30D",
      lookback: "PT1H",
      lookbackEvery: "PT1H",
      lateDataHorizon: "P30D",
      silentAfter: "PT6H",
      probeInterval: "PT1H",
      catalogRefresh: "PT1H",
    });
    expect(io.out()).not.toContain("key-value-123");
    expect(io.out()).not.toContain("tok-value-456");
  });

  it("config/schema.json is the current schema (regenerate: energy-etl config --schema)", async () => {
    const io = bufferIo();
    expect(await runCli(["config", "--schema"], io)).toBe(0);
    expect(JSON.parse(io.out())).toEqual(JSON.parse(readFileSync("config/schema.json", "utf8")));
  });

  it("an invalid setting stops with a message naming it, exit 2", async () => {
    const io = bufferIo({ SYNC_CRON: "whenever" });
    expect(await runCli(["config"], io)).toBe(2);
    expect(io.err()).toMatch(
      /SYNC_CRON \(sync.cron, from environment SYNC_CRON\): must be a cron expression/,
    );
  });
});
