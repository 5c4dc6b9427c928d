/**
 * `doctor` checks each site's kWp against the data (#42): the device's peak solar power over the
 * last days (measurement `total_solar_power`, field `value`, tag `unit`) far above the kWp, or a
 * tiny fraction of it (a kWp typed in Wp), is a warning naming the device and the figures.
 * Points written in the test straight to the run's influxd; the expected verdicts are worked out
 * here from the figures written.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { SITES_KWP, siteChecks } from "../../src/cli/doctor/site-checks.js";
import { runCli } from "../../src/cli.js";
import type { Site } from "../../src/config/sites.js";
import { loadConfig } from "../../src/config.js";
import type { Simulator } from "../../src/simulator/server.js";
import { dropTestDb, writeRawLines } from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_S = 3600;
const nowS = NOW_MS / 1000;

/** A solar power point as energy-etl writes it (all five tags, field `value`). */
const solar = (device: string, value: number, atS: number, unit = "kW") =>
  `total_solar_power,device_id=${device},resource_id=all_data,values_id=001,unit=${unit},` +
  `type=continuous value=${value} ${atS}`;

/**
 * Each device: its configured kWp, the solar power written (kW unless said), and the verdict the
 * check must give: the peak of the last 7 days against 1.5 x kWp and 1 % of it.
 */
const CASES = {
  // 9.8 kWp typed in Wp: a peak of 8.1 kW is 0.08 % of 9800
  "roof-wp": { kwp: 9800, points: [solar("roof-wp", 8.1, nowS - 2 * HOUR_S)], verdict: "below" },
  "roof-ok": {
    kwp: 9.8,
    points: [solar("roof-ok", 3, nowS - 30 * HOUR_S), solar("roof-ok", 8.1, nowS - 2 * HOUR_S)],
    verdict: "fits",
  },
  // 8.1 kW from a 2 kWp generator: 4 x
  "roof-small": { kwp: 2, points: [solar("roof-small", 8.1, nowS - HOUR_S)], verdict: "above" },
  // its power in W (8100 W = 8.1 kW): fits 9.8 kWp
  "roof-watts": {
    kwp: 9.8,
    points: [solar("roof-watts", 8100, nowS - HOUR_S, "W")],
    verdict: "fits",
  },
  // the peak that would warn is 8 days old: outside the window, only the small recent one counts
  "roof-old": {
    kwp: 9800,
    points: [
      solar("roof-old", 9000, nowS - 8 * 24 * HOUR_S),
      solar("roof-old", 5000, nowS - HOUR_S),
    ],
    verdict: "fits",
  },
  // no solar power stored: nothing to compare
  "roof-new": { kwp: 5, points: [], verdict: "unchecked" },
} as const;

const SITES: Record<string, Site> = {
  ...Object.fromEntries(Object.entries(CASES).map(([device, c]) => [device, { kwp: c.kwp }])),
  // no kWp: not checked at all
  "roof-named": { name: "Named only" },
};

let db: TestInfluxDb;
const dir = tempDir("energy-etl-site-kwp-");

function configFile(sites: Record<string, Site>): string {
  const file = join(dir, `sites-${Object.keys(sites).length}.json`);
  writeFileSync(file, JSON.stringify({ sites }));
  return file;
}

const influxEnv = () => ({
  INFLUX_URL: db.url,
  INFLUX_TOKEN: db.token,
  INFLUX_ORG: db.org,
  INFLUX_BUCKET: db.bucket,
});

beforeAll(async () => {
  db = await createTestInfluxDb("site_kwp");
  await writeRawLines(
    db,
    Object.values(CASES).flatMap((c) => c.points),
  );
});
afterAll(() => dropTestDb(db));

describe("siteChecks", () => {
  it("warns for each site whose peak solar power is far above its kWp or a tiny fraction", async () => {
    const config = loadConfig({ env: influxEnv(), file: configFile(SITES) });
    const results = await siteChecks(config, true, NOW_MS);
    const warned = (verdict: string) =>
      Object.entries(CASES)
        .filter(([, c]) => c.verdict === verdict)
        .map(([device]) => device);
    expect(results.every((r) => r.status === "warning" && r.check === SITES_KWP)).toBe(true);
    expect(results).toHaveLength(warned("below").length + warned("above").length);
    const detailOf = (device: string) =>
      results.find((r) => r.detail.startsWith(`site "${device}":`))?.detail;
    expect(detailOf("roof-wp")).toBe(
      'site "roof-wp": kwp 9800 but its solar power peaked at 8.1 kW over the last 7 days, ' +
        "less than 1 % of the kWp (kWp, not Wp?)",
    );
    expect(detailOf("roof-small")).toBe(
      'site "roof-small": kwp 2 but its solar power peaked at 8.1 kW over the last 7 days, ' +
        "more than 1.5 x the kWp (kWp, not MWp? the wrong device?)",
    );
    for (const device of [...warned("fits"), ...warned("unchecked")]) {
      expect(detailOf(device)).toBeUndefined();
    }
    expect(results.map((r) => r.fix)).toContain(
      'set sites."roof-wp".kwp in the config file in kWp (9.8, not 9800)',
    );
  });

  it("is one ok line when every site fits, counting those without solar power", async () => {
    const fitting = { "roof-ok": { kwp: 9.8 }, "roof-watts": { kwp: 9.8 }, "roof-new": { kwp: 5 } };
    const config = loadConfig({ env: influxEnv(), file: configFile(fitting) });
    expect(await siteChecks(config, true, NOW_MS)).toEqual([
      {
        check: SITES_KWP,
        status: "ok",
        detail:
          "2 of 3 fit their solar power of the last 7 days; 1 without solar power stored to compare",
      },
    ]);
  });

  it("checks nothing without a site with a kWp, and says why when InfluxDB is not reachable", async () => {
    const named = loadConfig({ env: influxEnv(), file: configFile({ a: { name: "A" } }) });
    expect(await siteChecks(named, true, NOW_MS)).toEqual([]);
    const config = loadConfig({ env: influxEnv(), file: configFile(SITES) });
    expect(await siteChecks(config, false, NOW_MS)).toEqual([
      expect.objectContaining({ check: SITES_KWP, status: "warning" }),
    ]);
  });
});

describe("energy-etl doctor", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startTestSimulator();
  });
  afterAll(() => sim.close());

  it("runs the check with the sites CONFIG_FILE names (a Wp value warned, exit 0)", async () => {
    // doctor reads the last 7 days up to its own clock: a point an hour before it
    const hourAgoS = Math.floor(Date.now() / 1000) - HOUR_S;
    await writeRawLines(db, [solar("live-roof", 7.5, hourAgoS)]);
    const env = pipelineEnv(sim, db, join(dir, "state.db"), {
      LOG_LEVEL: "silent",
      CONFIG_FILE: configFile({ "live-roof": { kwp: 7500 } }),
    });
    const io = bufferIo(env);
    const code = await runCli(["doctor", "--json"], io);
    const results = z
      .array(z.object({ check: z.string(), status: z.string(), detail: z.string() }))
      .parse(JSON.parse(io.out()));
    expect(results.filter((r) => r.check === SITES_KWP)).toEqual([
      {
        check: SITES_KWP,
        status: "warning",
        detail:
          'site "live-roof": kwp 7500 but its solar power peaked at 7.5 kW over the last 7 days, ' +
          "less than 1 % of the kWp (kWp, not Wp?)",
      },
    ]);
    expect(code).toBe(results.some((r) => r.status === "failure") ? 1 : 0);
  });
});
